// Wiring of the LSP side, in one place for main.ts and for tests: the server
// table (the real rows unless others are given: tests register their fault fakes
// this way, with no test-only code here), availability probed into health, the
// pool, the query service, and the store hooks (eviction never takes a root a
// query holds; a removed root's sessions and cached answers go with it).
import type { Config } from '../config.js';
import type { Health } from '../health.js';
import type { Logger } from '../log.js';
import type { Metrics } from '../metrics.js';
import type { Jail } from '../jail/types.js';
import { rootId, type HoldCheck, type RemoveListener } from '../store/types.js';
import { SessionPool } from './pool.js';
import { QueryService, type RootAccess } from './query-service.js';
import { ServerTable, defaultServerPaths, defaultServerRows, type ServerRow } from './server-table.js';

export interface LspDeps {
  config: Config;
  log: Logger;
  metrics: Metrics;
  health: Health;
  jail: Jail;
  store: RootAccess & {
    setHoldCheck?(check: HoldCheck): void;
    onRemove?(listener: RemoveListener): () => void;
  };
  /** Server rows; the real table by default. */
  rows?: readonly ServerRow[];
}

export interface Lsp {
  table: ServerTable;
  pool: SessionPool;
  service: QueryService;
  /** Stop every session (bounded); once, concurrent callers wait. */
  close(): Promise<void>;
}

export async function createLsp(deps: LspDeps): Promise<Lsp> {
  const { config, log, metrics, health, jail, store } = deps;
  const table = new ServerTable(deps.rows ?? defaultServerRows(defaultServerPaths()), config);
  health.servers = await table.probeAll();
  for (const [name, av] of Object.entries(health.servers)) {
    if (av.available) log.info({ server: name, version: av.version }, 'language server available');
    else log.warn({ server: name, reason: av.reason }, 'language server unavailable');
  }
  const pool = new SessionPool({ config, log, metrics, jail });
  const service = new QueryService({ config, log: log.child({ mod: 'query' }), metrics, health, store, pool, table });
  store.setHoldCheck?.((k) => pool.holds(rootId(k)));
  const off = store.onRemove?.(async (k) => {
    service.dropRoot(rootId(k), store.treeDir(k));
    await pool.stopRoot(rootId(k));
  });
  return {
    table,
    pool,
    service,
    close: async () => {
      off?.();
      await pool.close();
    },
  };
}
