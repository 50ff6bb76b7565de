// What buildServer needs, passed in by daemon.ts (and by tests, whose store-only
// server passes stubs: test/store-helpers.ts). Nothing in http/ reaches for a
// singleton. Each part is typed as the routes use it, so a stub is small and honest.
import type { Config } from '../config.js';
import type { Logger } from '../log.js';
import type { Metrics } from '../metrics.js';
import type { Health } from '../health.js';
import type { RootStore } from '../store/store.js';
import type { TokenSet } from '../tokens.js';
import type { QueryService } from '../lsp/query-service.js';
import type { SessionPool } from '../lsp/session/pool.js';
import type { ServerTable } from '../lsp/servers/server-table.js';
import type { FetchManager } from '../fetch/fetch-manager.js';
import type { HeapBudget } from '../heap-budget.js';

export interface Deps {
  config: Config;
  log: Logger;
  metrics: Metrics;
  health: Health;
  store: RootStore;
  /** Bearer tokens (LSPD_TOKENS); absent means auth is off (main then allows loopback only). */
  tokens?: TokenSet;
  /** Answers /v1/code/lsp, /ask, /v1/diff, /v1/check and the tools; owns their preconditions (not_ready, busy, need_tree). */
  lsp: QueryPort;
  /** The language-server sessions, for GET /v1/roots/{...} `sessions`. */
  pool: Pick<SessionPool, 'sessionsOf'>;
  /** The server table, so /v1/tools and /mcp can name the languages that are not served. */
  table: Pick<ServerTable, 'choose'>;
  /** The FETCH phase: PUT queues a root's fetch, GET shows its state, file reads see its binds. */
  fetcher: Pick<FetchManager, 'enqueue' | 'state' | 'serveBinds'>;
  /** The daemon's memory budget: uploads, diffs and tree walks are admitted through it (503 busy past it). */
  heap: Pick<HeapBudget, 'admit'>;
}

/** What the routes ask of the query service (src/lsp/query-service.ts). */
export type QueryPort = Pick<QueryService, 'lsp' | 'assertServing' | 'checkRoot' | 'warm' | 'scratch' | 'readStored'>;

/** One `T` per server (per Deps), made on first use: what lives as long as the server, never a module singleton. */
export function perServer<T>(make: (deps: Deps) => T): (deps: Deps) => T {
  const made = new WeakMap<Deps, T>();
  return (deps) => {
    if (!made.has(deps)) made.set(deps, make(deps));
    return made.get(deps)!;
  };
}
