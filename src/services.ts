// The services the routes and the tools call, built once per daemon by startDaemon:
// the query service (made with the LSP side), /ask, /v1/diff, /v1/check and file
// reads over it and the store. Each starts with the one admission (src/tenancy/admission.ts);
// an HTTP route parses and calls one, an MCP tool validates with the same schema and
// calls the same one, so both answer alike, refusals included.
import { ops, type Admission } from './tenancy/admission.js';
import type { Config } from './config.js';
import type { Logger } from './log.js';
import type { Metrics } from './metrics.js';
import { AskService } from './ask/ask-service.js';
import { treeFiles } from './ask/tree-files.js';
import { CheckService } from './check/check-service.js';
import { DiffService } from './diff/diff-service.js';
import type { FetchManager } from './fetch/fetch-manager.js';
import { FileService } from './files/file-service.js';
import type { LspAnswer } from './api/responses.js';
import type { QueryService } from './lsp/query-service.js';
import type { RootStore } from './store/store.js';
import { rootId } from './store/types.js';
import type { Abortable } from './util/deadline.js';

export interface Services {
  admission: Admission;
  /** POST /v1/code/lsp and the position tools. */
  query: QueryService;
  /** POST /ask, lsp_locate, lsp_ask_batch. */
  ask: AskService;
  /** POST /v1/diff and the diff tool. */
  diff: DiffService;
  /** GET a root's files and read_file. */
  files: FileService;
  /** POST /v1/check and check_patch. */
  checks: CheckService;
}

export interface ServiceDeps {
  config: Config;
  log: Logger;
  metrics: Metrics;
  store: RootStore;
  fetcher: Pick<FetchManager, 'serveBinds'>;
  admission: Admission;
  query: QueryService;
}

export function createServices(d: ServiceDeps): Services {
  const { config: c, log, metrics, store, admission, query } = d;
  const deadlineMs = c.queryTimeoutMs - c.cleanupReserveMs;
  const files = treeFiles({ treeDir: (k) => store.treeDir(k) });
  // The answers are the shared answer shape (src/api/responses.ts lspAnswer), typed loosely by each service.
  const lspFor = (route: string) => async (q: Parameters<QueryService['lsp']>[0], signal: Abortable) => (await query.lsp(q, signal, route)) as LspAnswer;

  const ask = new AskService({
    lsp: lspFor(ops.ask.route),
    files,
    generationOf: (k) => store.get(k)?.generation,
    languagesOf: (k) => store.get(k)?.languages ?? [],
    log: log.child({ mod: 'ask' }),
    deadlineMs,
    maxLocations: c.maxLocations,
    admit: (k) => void admission.admit(k, ops.ask),
    admitWalk: (k) => admission.heap(k.org, ops.askWalk),
  });
  metrics.watchCache('ask_scans', () => ask.cacheBytes);

  const diff = new DiffService({
    lsp: lspFor(ops.diff.route),
    admit: (keys) => admission.admit(keys, ops.diff),
    store,
    readText: (k, path, max) => files.readText(k, path, max),
    metrics,
    log: log.child({ mod: 'diff' }),
    deadlineMs,
    maxLocations: c.maxLocations,
    maxFileBytes: c.maxTargetFileBytes,
    cacheEntries: Math.min(c.resultCacheEntries, 1000),
    cacheBytes: c.diffCacheBytes,
    maxAnswerBytes: c.maxAnswerBytes,
  });
  metrics.watchCache('diff', () => diff.cacheBytes);

  const lspCheck = lspFor(ops.check.route);
  const checks = new CheckService({
    port: {
      lsp: async (q, signal) => (await lspCheck(q, signal)) as Record<string, unknown>,
      admit: (k) => void admission.admit(k, ops.check),
      readStored: (k, path) => query.readStored(k, path),
      scratch: (k, path, at, signal, fn) => query.scratch(k, path, at, signal, fn),
    },
    limits: {
      maxPatchBytes: c.maxPatchBytes,
      maxPatchFiles: c.maxPatchFiles,
      maxPatchHunks: c.maxPatchHunks,
      maxCheckDependents: c.maxCheckDependents,
      maxDeclarations: 50,
      concurrency: 4,
      deadlineMs,
      maxAnswerBytes: c.maxAnswerBytes,
    },
    log: log.child({ mod: 'check' }),
  });

  // What /ask and /v1/diff learned about a root goes with it (a diff: when either of its roots goes).
  store.onRemove((k) => {
    ask.dropRoot(rootId(k));
    diff.dropRoot(rootId(k));
  });
  return { admission, query, ask, diff, files: new FileService({ config: c, admission, store, fetcher: d.fetcher }), checks };
}
