// A bare LSP client for the benches: one server row's command run directly on the
// host (no jail, no pool, no bounds, no projection), driven over stdio. It answers
// the few requests servers make (workspace/configuration from the row's settings,
// everything else null) and keeps a timeline of what the server pushed ($/progress,
// publishDiagnostics, window/logMessage), so bench/calibrate can see each server's
// readiness signals and bench/cold can time the same server without lspd.
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import { PROJECT_DIR } from '../src/jail/policy.js';
import { languageOf } from '../src/languages.js';
import { FrameReader } from '../src/lsp/wire/frame-reader.js';

import { defaultServerPaths, readsServerStatus, settingFor, type ServerRow } from '../src/lsp/servers/server-row.js';
import { defaultServerRows } from '../src/lsp/servers/server-table.js';
import { JAIL_HOME, JAIL_NODE_MODULES, TREE_AT, jailEnv } from '../src/jail/layout.js';

export interface TimelineEvent {
  /** ms since the process was spawned */
  at: number;
  /** quiescent: rust-analyzer's experimental/serverStatus said it has nothing left to load (offered to rows that read it, as lspd does). */
  kind: 'progress-begin' | 'progress-end' | 'diagnostics' | 'log' | 'quiescent';
  detail: string;
}

/** The host equivalent of an in-jail path or string: node_modules, HOME and the row's binds moved to where they are here. */
function hostify(s: string, home: string, tree: string, binds: ServerRow['binds'] = []): string {
  let out = s.replaceAll(JAIL_NODE_MODULES, join(PROJECT_DIR, 'node_modules')).replaceAll(JAIL_HOME, home).replaceAll(`${TREE_AT}/`, `${tree}/`);
  for (const b of binds ?? []) out = out.replaceAll(b.at, b.host);
  // A node_modules of a row's own (package-binds.ts) named by its top, as a probe location: the package's own node_modules' parent here.
  for (const b of binds ?? []) {
    const m = /^(.*)\/node_modules\/(.+)$/.exec(b.at);
    if (m && b.host.endsWith(`/node_modules/${m[2]}`)) out = out.replaceAll(m[1]!, b.host.slice(0, -`/node_modules/${m[2]}`.length));
  }
  return out;
}

/**
 * argv as run bare. A row with a system root of its own (the Rust row's Debian 13
 * root) runs its binary over that root's /usr, as its jail does, in a bwrap that is
 * a chroot and nothing else: the host's whole tree bound as it is (merged-/usr here,
 * so /bin and /lib follow /usr), the root's /usr and linker cache over the host's,
 * a private /tmp (the jail's is a tmpfs) with the bare HOME bound back into it. No
 * user, PID or network namespace, no seccomp, no cgroup, no uid drop: lspd's jail
 * policy is none of it. The same binary, libraries and std sources as the row's.
 */
function bareArgv(row: ServerRow, argv: string[], home: string): string[] {
  if (row.systemRoot === undefined) return argv;
  const root = row.systemRoot;
  return [
    'bwrap',
    ...['--dev-bind', '/', '/'],
    ...['--ro-bind', join(root, 'usr'), '/usr'],
    ...['--ro-bind', join(root, 'etc', 'ld.so.cache'), '/etc/ld.so.cache'],
    ...['--tmpfs', '/tmp', '--bind', home, home],
    '--die-with-parent',
    '--',
    ...argv,
  ];
}

export class BareServer {
  readonly t0 = performance.now();
  readonly timeline: TimelineEvent[] = [];
  private readonly cp: ChildProcessWithoutNullStreams;
  private nextId = 0;
  private readonly waiting = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  private readonly home = mkdtempSync(join(tmpdir(), 'lspd-bare-home-'));
  private readonly listeners = new Set<() => void>();
  private stderr = '';
  private readonly versions = new Map<string, number>();

  constructor(
    readonly row: ServerRow,
    /** Host directory of the workspace (the tree, or a directory in it). */
    readonly workspace: string,
    /** Session files (row.sessionFiles, generated for the host paths), by in-jail path. */
    files: Readonly<Record<string, string>> = {},
  ) {
    for (const [at, text] of Object.entries(files)) {
      const p = hostify(at, this.home, workspace);
      mkdirSync(dirname(p), { recursive: true });
      writeFileSync(p, text);
    }
    const argv = bareArgv(
      row,
      row.argv.map((a) => hostify(a, this.home, workspace, row.binds)),
      this.home,
    );
    const env: Record<string, string> = {};
    for (const [k, v] of Object.entries({ ...jailEnv('serve'), ...row.env })) env[k] = hostify(v, this.home, workspace, row.binds);
    env.TMPDIR = this.home;
    this.cp = spawn(argv[0]!, argv.slice(1), { cwd: workspace, env, stdio: ['pipe', 'pipe', 'pipe'] });
    this.cp.stderr.on('data', (d: Buffer) => (this.stderr = (this.stderr + d.toString()).slice(-4096)));
    this.cp.stdin.on('error', () => {});
    const frames = new FrameReader({ maxFrameBytes: 64 * 1024 * 1024, onMessage: (m) => this.onMessage(m), onError: () => this.cp.kill() });
    this.cp.stdout.on('data', (d: Buffer) => frames.push(d));
    this.cp.on('exit', (code, sig) => {
      for (const w of this.waiting.values()) w.reject(new Error(`${row.name} exited (${sig ?? code}): ${this.stderr.slice(-800)}`));
      this.waiting.clear();
    });
  }

  /** ms since spawn. */
  now(): number {
    return performance.now() - this.t0;
  }

  private onMessage(raw: unknown): void {
    const msg = raw as {
      id?: number;
      method?: string;
      params?: Record<string, unknown>;
      result?: unknown;
      error?: { message: string };
    };
    if (msg.method !== undefined && msg.id !== undefined) {
      const result =
        msg.method === 'workspace/configuration'
          ? ((msg.params?.items as { section?: string }[] | undefined) ?? []).map((i) => settingFor(this.row, i.section))
          : msg.method === 'workspace/workspaceFolders'
            ? [{ uri: pathToFileURL(this.workspace).href, name: 'ws' }]
            : null;
      this.send({ id: msg.id, result });
    } else if (msg.id !== undefined) {
      const w = this.waiting.get(msg.id);
      this.waiting.delete(msg.id);
      if (msg.error) w?.reject(new Error(msg.error.message));
      else w?.resolve(msg.result ?? null);
    } else if (msg.method !== undefined) {
      this.onNotification(msg.method, msg.params ?? {});
    }
  }

  private onNotification(method: string, p: Record<string, unknown>): void {
    const at = this.now();
    if (method === '$/progress') {
      const v = p.value as { kind?: string; title?: string } | undefined;
      if (v?.kind === 'begin') this.timeline.push({ at, kind: 'progress-begin', detail: `${String(p.token)} ${v.title ?? ''}` });
      if (v?.kind === 'end') this.timeline.push({ at, kind: 'progress-end', detail: String(p.token) });
    } else if (method === 'textDocument/publishDiagnostics') {
      const n = Array.isArray(p.diagnostics) ? p.diagnostics.length : 0;
      this.timeline.push({ at, kind: 'diagnostics', detail: `${String(p.uri).split('/').pop()} ${n} v${String(p.version)}` });
    } else if (method === 'window/logMessage') {
      this.timeline.push({ at, kind: 'log', detail: String(p.message).slice(0, 160) });
    } else if (method === 'experimental/serverStatus' && p.quiescent === true) {
      this.timeline.push({ at, kind: 'quiescent', detail: String(p.health) });
    }
    for (const l of [...this.listeners]) l();
  }

  send(msg: object): void {
    const body = Buffer.from(JSON.stringify({ jsonrpc: '2.0', ...msg }));
    this.cp.stdin.write(Buffer.concat([Buffer.from(`Content-Length: ${body.length}\r\n\r\n`), body]));
  }

  request(method: string, params?: unknown): Promise<unknown> {
    const id = ++this.nextId;
    return new Promise((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      this.send(params === undefined ? { id, method } : { id, method, params });
    });
  }

  /** initialize (capabilities like lspd's session offers) and initialized. */
  async initialize(): Promise<Record<string, unknown>> {
    const uri = pathToFileURL(this.workspace).href;
    const raw =
      typeof this.row.initializationOptions === 'function'
        ? (this.row.initializationOptions as (at: string) => unknown)(this.workspace)
        : this.row.initializationOptions;
    const opts = raw === undefined ? undefined : (JSON.parse(hostify(JSON.stringify(raw), this.home, this.workspace, this.row.binds)) as unknown);
    const r = (await this.request('initialize', {
      processId: null,
      rootUri: uri,
      rootPath: this.workspace,
      workspaceFolders: [{ uri, name: 'ws' }],
      initializationOptions: opts,
      capabilities: {
        general: { positionEncodings: ['utf-16'] },
        window: { workDoneProgress: true },
        workspace: { configuration: true, workspaceFolders: true },
        textDocument: {
          definition: { linkSupport: true },
          hover: { contentFormat: ['markdown', 'plaintext'] },
          documentSymbol: { hierarchicalDocumentSymbolSupport: true },
          publishDiagnostics: {},
          diagnostic: { dynamicRegistration: false },
        },
        ...(readsServerStatus(this.row.readiness) ? { experimental: { serverStatusNotification: true } } : {}),
      },
    })) as { capabilities: Record<string, unknown> };
    this.send({ method: 'initialized', params: {} });
    return r.capabilities;
  }

  uri(rel: string): string {
    return pathToFileURL(join(this.workspace, rel)).href;
  }

  open(rel: string): string {
    const uri = this.uri(rel);
    const lang = languageOf(rel)!;
    this.send({
      method: 'textDocument/didOpen',
      params: { textDocument: { uri, languageId: lang.languageId, version: 1, text: readFileSync(join(this.workspace, rel), 'utf8') } },
    });
    return uri;
  }

  /** didChange of an opened file to `text`, whole. */
  change(rel: string, text: string): void {
    const version = (this.versions.get(rel) ?? 1) + 1;
    this.versions.set(rel, version);
    this.send({ method: 'textDocument/didChange', params: { textDocument: { uri: this.uri(rel), version }, contentChanges: [{ text }] } });
  }

  /** The server's process id (its CPU, for benches). */
  get pid(): number {
    return this.cp.pid!;
  }

  /** Resolve on the next notification, or after ms. */
  changed(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(t);
        this.listeners.delete(done);
        resolve();
      };
      const t = setTimeout(done, ms);
      this.listeners.add(done);
    });
  }

  async stop(): Promise<void> {
    const exited = new Promise<void>((r) => (this.cp.exitCode !== null || this.cp.signalCode !== null ? r() : this.cp.once('exit', () => r())));
    try {
      await Promise.race([this.request('shutdown'), new Promise((r) => setTimeout(r, 2000))]);
      this.send({ method: 'exit' });
    } catch {
      /* gone already */
    }
    const t = setTimeout(() => this.cp.kill('SIGKILL'), 2000);
    await exited;
    clearTimeout(t);
    rmSync(this.home, { recursive: true, force: true });
  }
}

/**
 * The bare server lspd would start for `rel` (a path in the unpacked tree `treeDir`):
 * the first row of its language (the default's), on the workspace lspd gives it (the
 * nearest directory above the file holding one of the row's root markers, else the
 * tree's top). `file` is rel as a path in that workspace.
 */
export function bareServerFor(treeDir: string, rel: string): { row: ServerRow; workspace: string; file: string } {
  const language = languageOf(rel)?.language;
  const row = defaultServerRows(defaultServerPaths()).find((r) => language !== undefined && r.languages.includes(language));
  if (!row) throw new Error(`no server row for ${rel}`);
  let ws = dirname(rel);
  while (ws !== '.' && !row.rootMarkers.some((m) => existsSync(join(treeDir, ws, m)))) ws = dirname(ws);
  const workspace = join(treeDir, ws === '.' ? '' : ws);
  return { row, workspace, file: relative(workspace, join(treeDir, rel)) };
}
