// The one place tests and benches start lspd, each on 127.0.0.1:0 with a data dir
// of its own and jail uids of its own (uids.ts):
// - spawnDaemon: a child process (`node --import tsx src/main.ts`), for tests that
//   SIGKILL, signal or restart it; spawnServing: the same, and whether it serves;
// - startLspd: in-process through src/daemon.ts startDaemon (the wiring main.ts
//   runs), for tests that hand the server table their own rows (the fault fakes) or
//   look at the pool, with no test-only code in src/;
// - startStoreServer: in-process, the store and the real HTTP routes with no jail
//   and no language server (what it does not run answers 503), for store tests.
// Warm-up is off unless a test asks (LSPD_WARM_MAX_SESSIONS): tests count spawns and
// jailed pids after uploads, and sessions nobody asked for would be in those counts
// (and load the shared CI host); test/lsp-warm.test.ts turns it on.
import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import type { FastifyInstance } from 'fastify';
import { loadConfig, type Config } from '../../src/config.js';
import { createLogger } from '../../src/log.js';
import { createMetrics, type Metrics } from '../../src/metrics.js';
import { startDaemon } from '../../src/daemon.js';
import { Admission } from '../../src/tenancy/admission.js';
import { errors } from '../../src/errors.js';
import { FileService } from '../../src/files/file-service.js';
import { Health } from '../../src/health.js';
import { HeapBudget } from '../../src/tenancy/heap-budget.js';
import { buildServer } from '../../src/http/server.js';
import type { RouteServices } from '../../src/http/deps.js';
import type { FetchManager } from '../../src/fetch/fetch-manager.js';
import type { JailRuntime } from '../../src/jail/jail.js';
import type { Lsp } from '../../src/lsp/create-lsp.js';
import { defaultServerPaths, type ServerRow } from '../../src/lsp/servers/server-row.js';
import { defaultServerRows } from '../../src/lsp/servers/server-table.js';
import type { Services } from '../../src/services.js';
import { RootStore } from '../../src/store/store.js';
import { TokenSet } from '../../src/tokens.js';
import { cannotJail } from './host.js';
import { jailUids, type UidRange } from './uids.js';

export const projectDir = resolve(import.meta.dirname, '..', '..');
export const fixturesDir = join(projectDir, 'test', 'fixtures');

/** A fresh directory under the system tmp: mkdtemp's 0700, or `mode` (0o755: one a jail uid must reach). */
export function tempDir(prefix = 'lspd-test-', mode = 0o700): string {
  const d = mkdtempSync(join(tmpdir(), prefix));
  if (mode !== 0o700) chmodSync(d, mode);
  return d;
}

const uidEnv = (r: UidRange) => ({ LSPD_JAIL_UID_BASE: String(r.base), LSPD_JAIL_UID_COUNT: String(r.count) });

// --- a child process --------------------------------------------------------

export interface Daemon {
  url: string;
  dataDir: string;
  child: ChildProcess;
  /** Every JSON log line so far. */
  logs: Record<string, unknown>[];
  /** SIGTERM and wait; resolves with the exit code. */
  stop(): Promise<number | null>;
  /** SIGKILL and wait. */
  kill(): Promise<void>;
  /** Remove the data dir (after stop/kill). */
  cleanup(): void;
}

export interface SpawnOptions {
  /** A data dir to reuse (a restart); else a fresh one. cleanup() removes it either way. */
  dataDir?: string;
  /** LSPD_<NAME> overrides, as an operator would set them. */
  env?: Record<string, string>;
  /** Jail uids (a restart keeps its range); else none are set and `env` may name them. */
  uids?: UidRange;
  timeoutMs?: number;
  /** Node flags before the script (bench/hot-profile: `--cpu-prof`, which NODE_OPTIONS refuses). */
  nodeArgs?: readonly string[];
  /** Another checkout of lspd to run (bench/ab: two builds side by side); else this one. */
  project?: string;
}

/** A bench's `--project DIR` as SpawnOptions (`{}` without it): that checkout's daemon under this checkout's bench. */
export function projectArg(args: readonly string[]): Pick<SpawnOptions, 'project'> {
  const i = args.indexOf('--project');
  return i >= 0 ? { project: resolve(args[i + 1] ?? '') } : {};
}

/** Spawn `node --import tsx src/main.ts` on 127.0.0.1:0 and resolve once it logs "listening". */
export async function spawnDaemon(opts: SpawnOptions = {}): Promise<Daemon> {
  const dataDir = opts.dataDir ?? tempDir();
  const child = spawn(process.execPath, [...(opts.nodeArgs ?? []), '--import', 'tsx', 'src/main.ts'], {
    cwd: opts.project ?? projectDir,
    env: {
      ...process.env,
      LSPD_LISTEN: '127.0.0.1:0',
      LSPD_DATA: dataDir,
      LOG_LEVEL: 'info',
      LSPD_WARM_MAX_SESSIONS: '0',
      ...(opts.uids ? uidEnv(opts.uids) : {}),
      ...opts.env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const logs: Record<string, unknown>[] = [];
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<number | null>((res) => child.once('exit', (code) => res(code)));
  const url = await new Promise<string>((res, rej) => {
    const timer = setTimeout(() => rej(new Error(`daemon did not start: ${stderr}`)), opts.timeoutMs ?? 30_000);
    createInterface({ input: child.stdout! }).on('line', (line) => {
      try {
        const rec = JSON.parse(line) as Record<string, unknown>;
        logs.push(rec);
        if (rec.msg === 'listening') {
          clearTimeout(timer);
          res(String(rec.address));
        }
      } catch {
        /* not a log line */
      }
    });
    void exited.then((code) => {
      clearTimeout(timer);
      rej(new Error(`daemon exited ${code} before listening: ${stderr}`));
    });
  });
  return {
    url,
    dataDir,
    child,
    logs,
    async stop() {
      child.kill('SIGTERM');
      return exited;
    },
    async kill() {
      child.kill('SIGKILL');
      await exited;
    },
    cleanup() {
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

export interface Serving {
  daemon: Daemon;
  url: string;
  uids: UidRange;
  /** Why queries cannot be served on this host (it cannot run jails at all), or undefined. */
  notReady?: string;
  /** Stop it (SIGTERM) and remove its data dir. */
  close(): Promise<void>;
}

/**
 * spawnDaemon, then /readyz: on a host that cannot run jails at all (no bubblewrap,
 * no user namespaces) `notReady` says why and the test skips through host.ts; on a
 * host that can, a daemon that is not ready is a failure, never a skip, unless the
 * test breaks the jail on purpose (`expectReady: false`: `notReady` is its reason).
 * 64 jail uids of its own unless `uids` names them (a restart keeps its range).
 */
export async function spawnServing(opts: SpawnOptions & { expectReady?: boolean } = {}): Promise<Serving> {
  const uids = opts.uids ?? jailUids(64);
  const daemon = await spawnDaemon({ ...opts, uids, timeoutMs: opts.timeoutMs ?? 60_000 });
  const close = async () => {
    if (daemon.child.exitCode === null && daemon.child.signalCode === null) await daemon.stop();
    daemon.cleanup();
  };
  try {
    const body = (await (await fetch(daemon.url + '/readyz')).json()) as { ready: boolean; reason?: string };
    if (body.ready) return { daemon, url: daemon.url, uids, close };
    const hostCannot = cannotJail();
    if (hostCannot === undefined && opts.expectReady !== false)
      throw new Error(`lspd is not ready on a host that can run jails: ${body.reason ?? 'no reason given'}`);
    return { daemon, url: daemon.url, uids, notReady: hostCannot ?? body.reason ?? 'not ready', close };
  } catch (err) {
    await daemon.kill(); // never leave a daemon behind a failed start
    throw err;
  }
}

// --- in-process -------------------------------------------------------------

export interface Lspd {
  url: string;
  config: Config;
  metrics: Metrics;
  lsp: Lsp;
  services: Services;
  jail: JailRuntime;
  store: RootStore;
  /** The FETCH phase, wired as main.ts wires it. */
  fetcher: FetchManager;
  app: FastifyInstance;
  /** First host uid of this daemon's jail pool (config.jailUidCount uids): every jailed process runs as one. */
  uidBase: number;
  uids: UidRange;
  close(): Promise<void>;
}

/**
 * The real store, jail (canary and all), pool and services behind the real HTTP
 * server. `env` overrides config (LSPD_<NAME> variables, as an operator would);
 * `rows` replaces the server table (default: the real one); `dataDir` reuses a data
 * dir (kept on close), else a fresh one is made and removed; `uids`: a range kept
 * across restarts, else 64 of its own.
 */
export async function startLspd(opts: { env?: Record<string, string>; rows?: ServerRow[]; dataDir?: string; uids?: UidRange } = {}): Promise<Lspd> {
  const dataDir = opts.dataDir ?? tempDir('lspd-lsp-');
  chmodSync(dataDir, 0o755);
  const uids = opts.uids ?? jailUids(64);
  const config = loadConfig({ LSPD_DATA: dataDir, LSPD_LISTEN: '127.0.0.1:0', ...uidEnv(uids), LSPD_WARM_MAX_SESSIONS: '0', ...opts.env });
  const d = await startDaemon(config, createLogger(process.env.LSPD_TEST_LOG ?? 'silent'), opts.rows ? { rows: opts.rows } : {});
  if (!d.health.jailReady) {
    await d.close();
    if (!opts.dataDir) rmSync(dataDir, { recursive: true, force: true });
    throw new Error(`jail canary failed: ${d.health.reason}`);
  }
  return {
    url: d.address,
    config,
    metrics: d.metrics,
    lsp: d.lsp,
    services: d.services,
    jail: d.jail,
    store: d.store,
    fetcher: d.fetcher,
    app: d.app,
    uidBase: config.jailUidBase,
    uids,
    close: async () => {
      await d.close();
      if (!opts.dataDir) rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** The real rows. */
export function realRows(): ServerRow[] {
  return defaultServerRows(defaultServerPaths());
}

export interface StoreServer {
  url: string;
  dataDir: string;
  store: RootStore;
  metrics: Metrics;
  app: FastifyInstance;
  /** Stop the server and the store, keep the data dir. */
  close(): Promise<void>;
  /** close() and remove the data dir. */
  destroy(): Promise<void>;
}

/**
 * The store and the real routes, admission and file reads, with no jail: what needs
 * a language server answers 503 (as a daemon whose jail is not proved answers), no
 * fetch is queued, no session exists. LSPD_TOKENS in `env` turns auth on, as in the daemon.
 */
export async function startStoreServer(opts: { dataDir?: string; env?: Record<string, string> } = {}): Promise<StoreServer> {
  const dataDir = opts.dataDir ?? tempDir('lspd-store-');
  const config = loadConfig({ LSPD_DATA: dataDir, ...opts.env });
  const log = createLogger('silent');
  const metrics = createMetrics();
  const store = await RootStore.open({ config, log, metrics });
  const health = new Health();
  health.store = await store.checkWritable();
  const tokens = config.tokensFile ? TokenSet.load(config.tokensFile) : undefined;
  const admission = new Admission({ config, health, store, metrics, heap: new HeapBudget({ config, metrics }) });
  const unserved = (): never => {
    throw errors.serverUnavailable('This test server stores roots only; it runs no language server.', 5);
  };
  const services: RouteServices = {
    admission,
    query: { lsp: async () => unserved(), lspBody: async () => unserved(), warm: () => {} },
    ask: { answer: async () => unserved() },
    diff: { diff: async () => unserved() },
    checks: { check: async () => unserved() },
    files: new FileService({ config, admission, store, fetcher: { serveBinds: () => [] } }),
  };
  const app = await buildServer({
    config,
    log,
    metrics,
    health,
    store,
    services,
    pool: { sessionsOf: () => [] },
    table: { choose: () => undefined },
    fetcher: { enqueue: async () => ({ state: 'none' }), state: () => ({ state: 'none' }), stateWritten: async () => {} },
    ...(tokens ? { tokens } : {}),
  });
  const url = await app.listen({ host: '127.0.0.1', port: 0 });
  const close = async () => {
    await app.close();
    await store.close();
  };
  return {
    url,
    dataDir,
    store,
    metrics,
    app,
    close,
    async destroy() {
      await close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
