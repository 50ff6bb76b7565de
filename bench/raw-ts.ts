// The raw row of the warm benches: the TS 7 binary lspd runs, on a copy of ts-basic,
// configured as lspd configures it, asked bench/ts-load's questions over a pipe (no
// jail, no HTTP) by an in-process client. bench/load asks it one phase per client
// count; bench/ab --raw asks it in turn with lspd. Kept up between phases, as lspd's
// servers are.
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Budget, LspConnection } from '../src/lsp/wire/transport.js';
import { TS7_INITIALIZATION_OPTIONS } from '../src/lsp/servers/rows/typescript.js';
import { fixturesDir, tsCall } from '../test/chaos/daemons.js';
import { MiB } from '../test/chaos/procs.js';
import { projectDir } from '../test/helpers/daemon.js';
import { TS_OPS } from './ts-load.js';

/** One phase: answers' latencies (ms), requests sent, failures, wall seconds. */
export interface RawPhase {
  lat: number[];
  sent: number;
  failed: number;
  elapsed: number;
}

export class RawTs {
  private n = 0;

  private constructor(
    readonly child: ChildProcessWithoutNullStreams,
    private readonly conn: LspConnection,
    private readonly dir: string,
    private readonly root: string,
  ) {}

  /** Spawned, initialised, the fixture's files opened and each question asked once (warm, as lspd's roots are). */
  static async start(): Promise<RawTs> {
    const dir = mkdtempSync(join(tmpdir(), 'lspd-bench-raw-'));
    cpSync(join(fixturesDir, 'ts-basic'), dir, { recursive: true });
    const bin = join(projectDir, 'node_modules/@typescript/typescript-linux-x64/lib/tsc');
    const child = spawn(bin, ['--lsp', '--stdio'], { cwd: dir, stdio: ['pipe', 'pipe', 'pipe'] });
    child.stderr.resume();
    const conn = new LspConnection({
      input: child.stdout,
      output: child.stdin,
      maxFrameBytes: 16 * MiB,
      onRequest: (m, p) => (m === 'workspace/configuration' ? ((p as { items?: unknown[] }).items ?? []).map(() => null) : null),
    });
    const root = pathToFileURL(dir).href;
    const raw = new RawTs(child, conn, dir, root);
    try {
      await conn.request('initialize', {
        processId: null,
        rootUri: root,
        workspaceFolders: [{ uri: root, name: 'ts-basic' }],
        capabilities: { general: { positionEncodings: ['utf-16'] } },
        initializationOptions: TS7_INITIALIZATION_OPTIONS, // configured as lspd configures it
      });
      conn.notify('initialized', {});
      for (const rel of ['src/app.ts', 'src/greet.ts']) {
        conn.notify('textDocument/didOpen', {
          textDocument: { uri: `${root}/${rel}`, languageId: 'typescript', version: 1, text: readFileSync(join(dir, rel), 'utf8') },
        });
      }
      for (let i = 0; i < TS_OPS; i++) await conn.request(...raw.requestOf(i));
      return raw;
    } catch (err) {
      raw.stop();
      throw err;
    }
  }

  /** The i-th of bench/ts-load's questions as the LSP request lspd would send. */
  private requestOf(i: number): [string, unknown] {
    const body = tsCall({ org: 'x', repo: 'x', sha: 'x' }, i % TS_OPS).json as { op: string; path: string; line?: number; character?: number };
    const textDocument = { uri: `${this.root}/${body.path}` };
    const position = { line: body.line, character: body.character };
    if (body.op === 'documentSymbols') return ['textDocument/documentSymbol', { textDocument }];
    if (body.op === 'references') return ['textDocument/references', { textDocument, position, context: { includeDeclaration: true } }];
    return [`textDocument/${body.op}`, { textDocument, position }];
  }

  /** `clients` loops asking in turn for `seconds`. */
  phase(clients: number, seconds: number): Promise<RawPhase> {
    return RawTs.phaseOver([this], clients, seconds);
  }

  /**
   * `clients` loops asking `servers` for `seconds`, each question of the next server in
   * turn: bench/ts-load spreads lspd's questions over its roots the same way (question
   * i to root i mod N), so N servers here are asked as lspd's N are.
   */
  static async phaseOver(servers: readonly RawTs[], clients: number, seconds: number): Promise<RawPhase> {
    const lat: number[] = [];
    let n = 0;
    let failed = 0;
    const until = performance.now() + seconds * 1000;
    const t0 = performance.now();
    await Promise.all(
      Array.from({ length: clients }, async () => {
        while (performance.now() < until) {
          const i = n++;
          const raw = servers[i % servers.length]!;
          const [method, params] = raw.requestOf(raw.n++);
          const s = performance.now();
          try {
            await raw.conn.request(method, params, { budget: new Budget(10_000, 1 << 30) });
            lat.push(performance.now() - s);
          } catch {
            failed++;
          }
        }
      }),
    );
    return { lat, sent: n, failed, elapsed: (performance.now() - t0) / 1000 };
  }

  stop(): void {
    this.conn.close();
    this.child.kill('SIGKILL');
    rmSync(this.dir, { recursive: true, force: true });
  }
}
