// POST /ask: name-based questions, one or a batch. The body is validated with the
// shared schemas; a root that was never uploaded answers 409 need_tree (a batch
// as a whole: none of its queries could be answered); nothing that would start a
// server runs until the jail is proved. The same entry point serves the
// lsp_locate / lsp_ask_batch tools over MCP (routes/mcp.ts), so both answer alike.
import type { FastifyInstance } from 'fastify';
import { AskService, type LspCall, type TreeFiles } from '../../ask/ask-service.js';
import { treeFiles } from '../../ask/tree-files.js';
import { askBatch, askOps, askQuery, type LspQuery } from '../../schemas.js';
import type { LspAnswer } from '../../responses.js';
import { clientSignal } from '../client-signal.js';
import { perServer, type Deps } from '../deps.js';
import { parse } from '../error-handler.js';
import { rootId } from '../../store/types.js';

/** One AskService per server (per Deps), built on the query service and the store. */
export const askServiceOf = perServer((deps): AskService => {
  const svc = new AskService({
    lsp: lspCallOf(deps),
    files: treeFilesOf(deps),
    generationOf: (k) => deps.store.get(k)?.generation,
    languagesOf: (k) => deps.store.get(k)?.languages ?? [],
    log: deps.log.child({ mod: 'ask' }),
    deadlineMs: deps.config.queryTimeoutMs - deps.config.cleanupReserveMs,
    maxLocations: deps.config.maxLocations,
    admitWalk: (root) => deps.heap.admit('walk', root.org),
  });
  // What /ask learned about a root goes with it (the service lives as long as the server).
  deps.store.onRemove((k) => svc.dropRoot(rootId(k)));
  deps.metrics.watchCache('ask_scans', () => svc.cacheBytes);
  return svc;
});

/** The query service (src/lsp/query-service.ts) as /ask calls it. */
function lspCallOf(deps: Deps): LspCall {
  return async (q, signal) => {
    // The service's answers are the shared answer shape (src/responses.ts lspAnswer), typed loosely there.
    return (await deps.lsp.lsp(q, signal)) as Awaited<ReturnType<LspCall>>;
  };
}

function treeFilesOf(deps: Deps): TreeFiles {
  return treeFiles({ treeDir: (k) => deps.store.treeDir(k) });
}

/** POST /v1/code/lsp's answer to a validated query (the route and the position tools): the query service checks what it needs. */
export async function answerLsp(deps: Deps, q: LspQuery, signal: AbortSignal): Promise<LspAnswer> {
  return deps.lsp.lsp(q, signal);
}

/** The body of POST /ask, answered: a single query or a batch. Throws AppError like the route. */
export async function answerAsk(deps: Deps, body: unknown, signal: AbortSignal): Promise<unknown> {
  const isBatch = typeof body === 'object' && body !== null && 'queries' in body;
  const q = isBatch ? parse(askBatch, body) : parse(askQuery, body);
  deps.lsp.checkRoot(q);
  const svc = askServiceOf(deps);
  return 'queries' in q ? svc.batch(q, signal) : svc.ask(q, signal);
}

export async function askRoutes(app: FastifyInstance, deps: Deps): Promise<void> {
  app.post('/ask', async (req, reply) => {
    // Any JSON value can arrive here (`"x"`, `7`, `true`): `in` on a non-object throws,
    // so look inside only an object; the schema refuses the rest with a 400.
    const body = typeof req.body === 'object' && req.body !== null ? (req.body as Record<string, unknown>) : undefined;
    // Only known ops become metric labels: a label per caller-chosen string would grow without bound.
    const op = body && 'queries' in body ? 'batch' : (askOps as readonly unknown[]).includes(body?.op) ? String(body?.op) : 'locate';
    (req as { lspdOp?: string }).lspdOp = op;
    return answerAsk(deps, req.body, clientSignal(reply));
  });
}
