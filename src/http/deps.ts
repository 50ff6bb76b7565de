// What buildServer needs, passed in by main.ts (and by tests). Nothing in http/
// reaches for a singleton.
import type { Config } from '../config.js';
import type { Logger } from '../log.js';
import type { Metrics } from '../metrics.js';
import type { Health } from '../health.js';
import type { RootStore } from '../store/store.js';
import type { TokenSet } from '../tokens.js';
import type { Jail } from '../jail/types.js';
import type { QueryService } from '../lsp/query-service.js';
import type { SessionPool } from '../lsp/session/pool.js';
import type { ServerTable } from '../lsp/servers/server-table.js';
import type { FetchManager } from '../fetch/fetch-manager.js';

export interface Deps {
  config: Config;
  log: Logger;
  metrics: Metrics;
  health: Health;
  store: RootStore;
  /** Bearer tokens (LSPD_TOKENS); absent means auth is off (main then allows loopback only). */
  tokens?: TokenSet;
  /** Runs every third-party process; refuses (not_ready) any phase the boot canary has not proved. */
  jail?: Jail;
  /** Answers /v1/code/lsp (src/lsp/query-service.ts); absent: queries answer 503 server_unavailable. */
  lsp?: QueryService;
  /** The language-server sessions, for GET /v1/roots/{...} `sessions`. */
  pool?: SessionPool;
  /** The server table, so /v1/tools and /mcp can name the languages that are not served. */
  table?: ServerTable;
  /** The FETCH phase: PUT queues a root's fetch, GET shows its state. Absent: every fetch is "none". */
  fetcher?: FetchManager;
}
