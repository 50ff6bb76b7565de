// What buildServer needs, passed in by daemon.ts (and by tests, whose store-only
// server passes stubs for what it does not run: test/helpers/lspd.ts). Nothing in
// http/ reaches for a singleton. Each part is typed as the routes use it, so a stub
// is small and honest.
import type { Config } from '../config.js';
import type { Logger } from '../log.js';
import type { Metrics } from '../metrics.js';
import type { Health } from '../health.js';
import type { RootStore } from '../store/store.js';
import type { TokenSet } from '../tokens.js';
import type { SessionPool } from '../lsp/session/pool.js';
import type { ServerTable } from '../lsp/servers/server-table.js';
import type { FetchManager } from '../fetch/fetch-manager.js';
import type { Services } from '../services.js';

export interface Deps {
  config: Config;
  log: Logger;
  metrics: Metrics;
  health: Health;
  store: RootStore;
  /** Bearer tokens (LSPD_TOKENS); absent means auth is off (main then allows loopback only). */
  tokens?: TokenSet;
  /** What the routes and the tools call (src/services.ts), built once by startDaemon; each owns its admission. */
  services: RouteServices;
  /** The language-server sessions, for GET /v1/roots/{...} `sessions`. */
  pool: Pick<SessionPool, 'sessionsOf'>;
  /** The server table, so /v1/tools and /mcp can name the languages that are not served. */
  table: Pick<ServerTable, 'choose'>;
  /** The FETCH phase: PUT queues a root's fetch, GET shows its state. */
  fetcher: Pick<FetchManager, 'enqueue' | 'state' | 'stateWritten'>;
}

/** The services as the routes and tools call them. */
export interface RouteServices {
  /** Uploads are admitted through it (the heap budget), as every service's work is. */
  admission: Pick<Services['admission'], 'heap'>;
  query: Pick<Services['query'], 'lsp' | 'lspBody' | 'warm'>;
  ask: Pick<Services['ask'], 'answer'>;
  diff: Pick<Services['diff'], 'diff'>;
  files: Pick<Services['files'], 'read'>;
  checks: Pick<Services['checks'], 'check'>;
}
