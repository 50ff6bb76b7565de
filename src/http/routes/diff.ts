// POST /v1/diff: what a change between two stored roots does (src/diff/). The
// body is validated with the shared schema; a root that is not stored answers 409
// need_tree naming it (`root`, `missing`: base or head); nothing that would start
// a server runs until the jail is proved. The `diff` tool (/v1/tools, /mcp) calls
// answerDiff, so both answer alike.
import type { FastifyInstance } from 'fastify';
import { DiffService, storedRoots } from '../../diff/diff-service.js';
import { treeFiles } from '../../ask/tree-files.js';
import { diffQuery } from '../../schemas.js';
import { rootId } from '../../store/types.js';
import { perServer, type Deps } from '../deps.js';
import { parse } from '../error-handler.js';
import { clientSignal } from '../client-signal.js';

/** One DiffService per server (per Deps), over the query service and the store. */
export const diffServiceOf = perServer((deps): DiffService => {
  const files = treeFiles({ treeDir: (k) => deps.store.treeDir(k) });
  const svc = new DiffService({
    lsp: async (q, signal) => (await deps.lsp.lsp(q, signal)) as Record<string, unknown>,
    store: deps.store,
    readText: (k, path, max) => files.readText(k, path, max),
    metrics: deps.metrics,
    log: deps.log.child({ mod: 'diff' }),
    deadlineMs: deps.config.queryTimeoutMs - deps.config.cleanupReserveMs,
    maxLocations: deps.config.maxLocations,
    maxFileBytes: deps.config.maxTargetFileBytes,
    cacheEntries: Math.min(deps.config.resultCacheEntries, 1000),
    cacheBytes: deps.config.diffCacheBytes,
    maxAnswerBytes: deps.config.maxAnswerBytes,
  });
  deps.metrics.watchCache('diff', () => svc.cacheBytes);
  // A diff is about two roots: when either goes, so does what was learned of it.
  deps.store.onRemove((k) => svc.dropRoot(rootId(k)));
  return svc;
});

/** The body of POST /v1/diff, answered. Throws AppError like the route. */
export async function answerDiff(deps: Deps, body: unknown, signal: AbortSignal): Promise<unknown> {
  const q = parse(diffQuery, body);
  deps.lsp.assertServing();
  // As the query service orders its checks: busy before need_tree.
  deps.heap.admit('diff', q.org);
  storedRoots(deps.store, q);
  return diffServiceOf(deps).diff(q, signal);
}

export async function diffRoutes(app: FastifyInstance, deps: Deps): Promise<void> {
  app.post('/v1/diff', async (req, reply) => {
    (req as { lspdOp?: string }).lspdOp = 'diff';
    return answerDiff(deps, req.body, clientSignal(reply));
  });
}
