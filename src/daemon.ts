// The one wiring of a running lspd: store → jail (canary) → fetch (resumed) → lsp →
// services (src/services.ts, built once: the routes and the tools call the same
// ones) → http, listening, with one close() that undoes it in the reverse order. main.ts
// adds only what a process has (configuration errors, signals, exit); the tests
// and benches start their daemons here, so the wiring they test is the one that
// runs.
import type { FastifyInstance } from 'fastify';
import type { Config } from './config.js';
import type { Logger } from './log.js';
import { createMetrics, type Metrics } from './metrics.js';
import { Health } from './health.js';
import { RootStore } from './store/store.js';
import type { RootKey } from './store/types.js';
import { buildServer } from './http/server.js';
import { createJail, type JailRuntime } from './jail/jail.js';
import type { TokenSet } from './tokens.js';
import { createLsp, type Lsp } from './lsp/create-lsp.js';
import type { ServerRow } from './lsp/servers/server-row.js';
import { FetchManager } from './fetch/fetch-manager.js';
import { detectToolchains } from './fetch/toolchains.js';
import { HeapBudget } from './tenancy/heap-budget.js';
import { Admission } from './tenancy/admission.js';
import { createServices, type Services } from './services.js';
import { PackageStore } from './fetch/package-store.js';
import { join } from 'node:path';

export interface DaemonOptions {
  /** Bearer tokens (LSPD_TOKENS, loaded by the caller, which owns reloading it). */
  tokens?: TokenSet;
  /** The server table's rows in place of the real ones: tests give their fault fakes this way. */
  rows?: ServerRow[];
}

export interface Daemon {
  /** http://host:port, as listened on. */
  address: string;
  config: Config;
  log: Logger;
  metrics: Metrics;
  health: Health;
  store: RootStore;
  jail: JailRuntime;
  fetcher: FetchManager;
  lsp: Lsp;
  /** What the routes and the tools call. */
  services: Services;
  app: FastifyInstance;
  /** Stop accepting, stop fetches (written back as queued), servers, the jail, the store. Idempotent. */
  close(): Promise<void>;
}

export async function startDaemon(config: Config, log: Logger, o: DaemonOptions = {}): Promise<Daemon> {
  const metrics = createMetrics(config);
  const health = new Health();
  // The per-org package store (src/fetch/package-store.ts), measured before roots are
  // charged. Root only: its safety is that jails (other uids) cannot write a root-owned
  // inode; a non-root daemon's jails run as its own uid and could.
  const packages =
    process.getuid?.() === 0
      ? await PackageStore.open({ dir: join(config.dataDir, 'fetch-store'), log: log.child({ mod: 'package-store' }), metrics })
      : undefined;
  const store = await RootStore.open({ config, log: log.child({ mod: 'store' }), metrics, ...(packages ? { packages } : {}) });
  health.store = await store.checkWritable();

  // The jail: both seccomp filters, cgroups, the FETCH egress proxy, then the boot
  // canary in each phase. Until a phase is proved, /readyz is 503 and jail.spawn
  // itself refuses that phase (not_ready); nothing turns this off.
  const jail = await createJail({ config, log: log.child({ mod: 'jail' }), metrics });
  health.jail = await jail.canary();

  // The FETCH phase: one background job per root, in the FETCH jail; jobs wait
  // (queued) until that phase is proved. Roots stored before this start whose fetch
  // was interrupted (or never queued) are resumed.
  const fetcher = new FetchManager({
    config,
    log: log.child({ mod: 'fetch' }),
    metrics,
    jail,
    store,
    tools: await detectToolchains(config.debian13Root),
    ready: () => health.jail.fetch.ok,
    ...(packages ? { packages } : {}),
  });
  fetcher.onDone(
    (key) =>
      void fetcher
        .stateWritten(key)
        .then(() => store.refreshUsage(key))
        .catch((err: unknown) => log.warn({ err }, 'cannot measure a root after its fetch')),
  );
  void fetcher.resume(allRootKeys(store)).catch((err: unknown) => log.error({ err }, 'fetch resume failed'));

  // The one way in for every service (not_ready, busy, need_tree), over the memory budget.
  const admission = new Admission({ config, health, store, metrics, heap: new HeapBudget({ config, metrics }) });

  // Language servers: the closed table (availability into /readyz), the session
  // pool and the query service; sessions spawn lazily, only in the proved SERVE jail.
  const lsp = await createLsp({ config, log, metrics, health, jail, store, fetcher, admission, ...(o.rows ? { rows: o.rows } : {}) });
  const services = createServices({ config, log, metrics, store, fetcher, admission, query: lsp.service });
  // A restart (a rollout, an evicted pod) should not leave the commits agents are
  // asking about cold: the most recently used roots are warmed as on upload.
  for (const key of store.recentlyUsed(config.warmOnStartRoots)) lsp.service.warm(key);

  const app = await buildServer({
    config,
    log,
    metrics,
    health,
    store,
    services,
    pool: lsp.pool,
    table: lsp.table,
    fetcher,
    ...(o.tokens ? { tokens: o.tokens } : {}),
  });
  const [host, port] = splitListen(config.listen);
  const address = await app.listen({ host, port });

  let closing: Promise<void> | undefined;
  const close = () =>
    (closing ??= (async () => {
      await app.close();
      await fetcher.close(); // running fetches are killed and written back as queued: the next start resumes them
      await lsp.close(); // shutdown/exit each server (bounded) before the jail kills what is left
      await jail.close();
      await store.close();
    })());
  return { address, config, log, metrics, health, store, jail, fetcher, lsp, services, app, close };
}

/** Every stored root's key, page by page. */
function* allRootKeys(store: RootStore): Generator<RootKey> {
  let after: string | undefined;
  do {
    const page = store.list({ limit: 1000, ...(after ? { after } : {}) });
    for (const info of page.roots) yield info.root;
    after = page.next;
  } while (after);
}

function splitListen(listen: string): [string, number] {
  const i = listen.lastIndexOf(':');
  return [listen.slice(0, i).replace(/^\[|\]$/g, ''), Number(listen.slice(i + 1))];
}
