// Wiring of the LSP side, in one place for main.ts and for tests: the server
// table (the real rows unless others are given: tests register their fault fakes
// this way, with no test-only code here), availability probed into health, the
// pool, the query service, and the store hooks (eviction never takes a root a
// query holds; a removed root's sessions and cached answers go with it), and the
// FETCH phase's hooks: sessions of a root whose fetch finished are restarted so
// they see what it brought, and eviction never takes a root while it fetches.
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import type { Config } from '../config.js';
import type { Health } from '../health.js';
import type { Logger } from '../log.js';
import type { Metrics } from '../metrics.js';
import type { Jail } from '../jail/types.js';
import type { Admission } from '../tenancy/admission.js';
import { rootId, type HoldCheck, type RemoveListener } from '../store/types.js';
import { fetchedEcosystems, type DependencySource } from './session/dependencies.js';
import { SessionPool } from './session/pool.js';
import { QueryService, type RootAccess } from './query-service.js';
import { defaultServerPaths, type ServerRow } from './servers/server-row.js';
import { ServerTable, defaultServerRows } from './servers/server-table.js';

export interface LspDeps {
  config: Config;
  log: Logger;
  metrics: Metrics;
  health: Health;
  jail: Jail;
  store: RootAccess & {
    setHoldCheck(check: HoldCheck): void;
    onRemove(listener: RemoveListener): () => void;
  };
  /** Server rows; the real table by default. */
  rows?: readonly ServerRow[];
  /** The FETCH phase (FetchManager): sessions bind what it fetched, answers say how it went. */
  fetcher: DependencySource;
  /** The one way in (src/tenancy/admission.ts), which the query service admits every query through. */
  admission: Admission;
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
  const table = new ServerTable(deps.rows ?? defaultServerRows(defaultServerPaths(config.debian13Root)), config);
  health.servers = await table.probeAll();
  // What each row's server answers of the hierarchy ops, for /readyz before any session (sessions then say).
  for (const r of table.rows)
    if (r.hierarchyOps && health.servers[r.name]) Object.assign(health.servers[r.name]!, { hierarchy_ops: [...r.hierarchyOps], hierarchy_ops_from: 'row' });
  for (const r of table.rows)
    if (r.editOps && health.servers[r.name]) Object.assign(health.servers[r.name]!, { edit_ops: [...r.editOps], edit_ops_from: 'row' });
  for (const [name, av] of Object.entries(health.servers)) {
    if (av.available) log.info({ server: name, version: av.version }, 'language server available');
    else log.warn({ server: name, reason: av.reason }, 'language server unavailable');
  }
  // Per-session generated files (clangd's compile database): what a crash left is wiped.
  const sessionFilesDir = join(config.dataDir, 'sessions');
  rmSync(sessionFilesDir, { recursive: true, force: true });
  const pool = new SessionPool({ config, log, metrics, jail, sessionFilesDir });
  const { fetcher } = deps;
  const service = new QueryService({
    config,
    log: log.child({ mod: 'query' }),
    metrics,
    health,
    store,
    pool,
    table,
    admission: deps.admission,
    dependencies: fetcher,
  });
  store.setHoldCheck((k) => pool.holds(rootId(k)) || (fetcher.busy?.(k) ?? false));
  // A finished fetch: sessions of the servers that read what it fetched (or failed
  // to) were started without it; they are replaced on their next query.
  const offDone = fetcher.onDone((k, view) => {
    const ecosystems = fetchedEcosystems(view);
    service.dropAnswers(rootId(k));
    // Only sessions spawned before the fetch finished lack its mounts: a query that
    // waited for the fetch may already have spawned one that has them.
    const finished = view.finishedAt === undefined ? Infinity : Date.parse(view.finishedAt);
    const stale = (s: { createdAt: number }) => !(s.createdAt >= finished);
    const servers = new Set<string>();
    const n = pool.restartRoot(rootId(k), (s) => {
      const restart = s.row.ecosystem !== undefined && ecosystems.has(s.row.ecosystem) && stale(s);
      if (restart) servers.add(s.row.name);
      return restart;
    });
    if (n > 0) {
      log.info({ root: rootId(k), sessions: n }, 'sessions restarted after the fetch');
      // They were running (warmed, or asked while the fetch ran): their successors are
      // what the next query needs, so they are warmed now rather than by that query.
      // Those servers only: a root uploaded ?warm=false whose /ask woke pyright alone
      // must not get TS, clangd and bash too (bench/monorepo on playwright did).
      service.warm(k, servers);
    }
  });
  const off = store.onRemove(async (k) => {
    service.dropRoot(rootId(k));
    await pool.stopRoot(rootId(k));
  });
  return {
    table,
    pool,
    service,
    close: async () => {
      off();
      offDone();
      service.close();
      await pool.close();
    },
  };
}
