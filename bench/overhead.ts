// bench/overhead: what lspd adds to a language server's answer.
// One run, side by side, the native TypeScript 7 server on the ts-basic fixture:
//   warm   the same definition / references / hover query, asked N times through
//          lspd over HTTP (result cache off, so the server answers every time) and
//          of the same server binary driven directly over stdio by a bare client;
//          interleaved one by one so machine load hits both alike; p50/p95 of
//          each, lspd minus raw, and own cost: lspd − raw − the HTTP floor (GET
//          /livez on the same connection, interleaved).
//   cold   time to the first answer for a fresh root (upload done; spawn in the
//          jail, initialize, didOpen, project load, answer) vs the raw server's
//          spawn + initialize + didOpen + answer.
//   cache  the same query answered from lspd's result cache.
// lspd runs as its own process (src/main.ts, as operators run it), asked over a
// lean keep-alive HTTP connection (warm-compare.ts WarmClient), so the bench's client
// and the daemon do not share an event loop.
// `--project DIR`: the daemon of another checkout (a git worktree of a commit to
// compare); the clients and the raw server stay this checkout's.
// Run: node --import tsx bench/overhead.ts [iterations] [--project DIR]
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { WarmClient, f, pct, time } from './warm-compare.js';
import { FrameReader } from '../src/lsp/wire/frame-reader.js';
import { TS7_INITIALIZATION_OPTIONS } from '../src/lsp/servers/rows/typescript.js';
import { projectArg, spawnDaemon, type Daemon } from '../test/helpers/daemon.js';
import { cannotJail, fixturesDir, position, shaOf, uploadFixture } from '../test/helpers/lsp-harness.js';
import { jailUidEnv } from '../test/helpers/uids.js';

const args = process.argv.slice(2);
const PROJECT = projectArg(args);
const N = Number(args.find((a, i) => /^\d+$/.test(a) && args[i - 1] !== '--project') ?? 300);
const FX = 'ts-basic';
const TREE = join(fixturesDir, FX);
const TSC = join(import.meta.dirname, '..', 'node_modules', '@typescript', 'typescript-linux-x64', 'lib', 'tsc');

const OPS = {
  definition: { op: 'definition', path: 'src/app.ts', ...position(FX, 'src/app.ts', "greet('world')") },
  references: { op: 'references', path: 'src/greet.ts', ...position(FX, 'src/greet.ts', 'function greet', 9) },
  hover: { op: 'hover', path: 'src/app.ts', ...position(FX, 'src/app.ts', "greet('again')") },
} as const;
const METHOD = { definition: 'textDocument/definition', references: 'textDocument/references', hover: 'textDocument/hover' } as const;

/** A bare LSP client over a child's stdio: no bounds, no projection, nothing but framing. */
class RawClient {
  private id = 0;
  private readonly waiting = new Map<number, (v: unknown) => void>();
  private readonly cp = spawn(TSC, ['--lsp', '--stdio'], { stdio: ['pipe', 'pipe', 'ignore'] });
  constructor() {
    const frames = new FrameReader({
      maxFrameBytes: 64 * 1024 * 1024,
      onMessage: (raw) => {
        const msg = raw as { id?: number; method?: string; result?: unknown; params?: { items?: unknown[] } };
        if (msg.method !== undefined && msg.id !== undefined) {
          const result = msg.method === 'workspace/configuration' ? (msg.params?.items ?? []).map(() => null) : null;
          this.send({ id: msg.id, result });
        } else if (msg.id !== undefined) this.waiting.get(msg.id)?.(msg.result);
      },
      onError: () => this.cp.kill(),
    });
    this.cp.stdout.on('data', (d: Buffer) => frames.push(d));
  }
  send(msg: object): void {
    const body = Buffer.from(JSON.stringify({ jsonrpc: '2.0', ...msg }));
    this.cp.stdin.write(Buffer.concat([Buffer.from(`Content-Length: ${body.length}\r\n\r\n`), body]));
  }
  request(method: string, params?: unknown): Promise<unknown> {
    const id = ++this.id;
    return new Promise((r) => {
      this.waiting.set(id, r);
      this.send(params === undefined ? { id, method } : { id, method, params });
    });
  }
  async start(): Promise<void> {
    const root = 'file://' + TREE;
    await this.request('initialize', {
      processId: null,
      rootUri: root,
      workspaceFolders: [{ uri: root, name: FX }],
      capabilities: {},
      initializationOptions: TS7_INITIALIZATION_OPTIONS,
    });
    this.send({ method: 'initialized', params: {} });
    for (const p of ['src/app.ts', 'src/greet.ts']) {
      this.send({
        method: 'textDocument/didOpen',
        params: { textDocument: { uri: `${root}/${p}`, languageId: 'typescript', version: 1, text: readFileSync(join(TREE, p), 'utf8') } },
      });
    }
  }
  ask(op: keyof typeof OPS): Promise<unknown> {
    const q = OPS[op];
    const params: Record<string, unknown> = { textDocument: { uri: `file://${TREE}/${q.path}` }, position: { line: q.line, character: q.character } };
    if (op === 'references') params.context = { includeDeclaration: true };
    return this.request(METHOD[op], params);
  }
  stop(): void {
    this.cp.kill('SIGKILL');
  }
}

async function daemon(env: Record<string, string>): Promise<Daemon> {
  // a jail uid range of its own, apart from test daemons that may be running
  return spawnDaemon({ env: { LOG_LEVEL: 'info', ...jailUidEnv(64), ...env }, ...PROJECT });
}

async function main(): Promise<void> {
  const why = cannotJail();
  if (why) {
    console.log(`bench/overhead skipped: ${why}`);
    return;
  }
  const warm = await daemon({ LSPD_RESULT_CACHE_ENTRIES: '0' });
  const cached = await daemon({});
  const raw = new RawClient();
  // Every request to lspd, timed or not, over one lean connection per daemon (warm-compare.ts).
  const conn = new WarmClient(warm.url);
  const hitConn = new WarmClient(cached.url);
  const ask = async (request: Buffer) => {
    const r = await conn.ask(request);
    if (r.status !== 200) throw new Error(JSON.stringify(r.body));
  };
  try {
    const root = { org: 'bench', repo: 'ts-basic', sha: shaOf('bench-warm') };
    await uploadFixture(warm.url, root, FX);

    // cold: first answer for a fresh root (uploaded, no session yet) vs a fresh raw server
    const coldLspd = await time(() => ask(conn.query({ ...root, ...OPS.definition })));
    const coldRaw = await time(async () => {
      await raw.start();
      await raw.ask('definition');
    });

    // warm-up, then interleaved measurement
    for (let i = 0; i < 30; i++)
      for (const op of Object.keys(OPS) as (keyof typeof OPS)[]) {
        await ask(conn.query({ ...root, ...OPS[op] }));
        await raw.ask(op);
      }
    console.log(
      `\nbench/overhead: native TypeScript 7 on test/fixtures/${FX}, ${N} warm iterations per op (interleaved)${PROJECT.project ? `, the daemon of ${PROJECT.project}` : ''}`,
    );
    console.log('lspd = HTTP POST /v1/code/lsp (jail, pool, projection; cache off)   raw = same binary over stdio, bare client\n');
    console.log('op           lspd p50  lspd p95   raw p50   raw p95   diff p50  diff p95   ratio p50   http floor p50   own p50');
    for (const op of Object.keys(OPS) as (keyof typeof OPS)[]) {
      const a: number[] = [];
      const b: number[] = [];
      const h: number[] = [];
      const q = conn.query({ ...root, ...OPS[op] });
      for (let i = 0; i < N; i++) {
        a.push(await time(() => ask(q)));
        b.push(await time(() => raw.ask(op)));
        h.push(await time(() => conn.floor()));
      }
      const [a50, a95, b50, b95] = [pct(a, 50), pct(a, 95), pct(b, 50), pct(b, 95)];
      console.log(
        `${op.padEnd(12)}${f(a50)}  ${f(a95)}  ${f(b50)}  ${f(b95)}  ${f(a50 - b50)}  ${f(a95 - b95)}   ${(a50 / b50).toFixed(1).padStart(6)}x   ${f(pct(h, 50))}   ${f(a50 - b50 - pct(h, 50))}`,
      );
    }

    // cache hits on a daemon with the cache on
    const croot = { org: 'bench', repo: 'ts-basic', sha: shaOf('bench-cache') };
    await uploadFixture(cached.url, croot, FX);
    const hit = hitConn.query({ ...croot, ...OPS.hover });
    await hitConn.ask(hit);
    const hits: number[] = [];
    const hitFloor: number[] = [];
    for (let i = 0; i < N; i++) {
      hits.push(await time(() => hitConn.ask(hit)));
      hitFloor.push(await time(() => hitConn.floor()));
    }
    const metrics = await (await fetch(`${cached.url}/metrics`)).text();
    const hitCount = Number(/lspd_cache_requests_total\{result="hit"\} (\d+)/.exec(metrics)?.[1] ?? 0);

    console.log('(http floor: GET /livez on the same lean connection, interleaved: the cost of HTTP alone under the same load)');
    console.log(
      `\ncold, time to first definition (ms): lspd ${coldLspd.toFixed(0)} (fresh root: jail spawn, initialize, didOpen, load)   raw ${coldRaw.toFixed(0)} (spawn, initialize, didOpen)`,
    );
    console.log(
      `cache hit, hover over HTTP (ms): p50 ${pct(hits, 50).toFixed(2)}  p95 ${pct(hits, 95).toFixed(2)}  (${hitCount} hits; http floor p50 ${pct(hitFloor, 50).toFixed(2)})`,
    );
    console.log(`(1-minute load average at the end of the run: ${loadavg()[0]!.toFixed(1)} on ${cpus().length} CPUs)\n`);
  } finally {
    raw.stop();
    conn.close();
    hitConn.close();
    for (const d of [warm, cached]) {
      await d.stop();
      d.cleanup();
    }
  }
}

await main();
