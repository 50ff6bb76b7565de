// POST /v1/check: a patch checked against a stored root in memory only (src/check/).
// The body is validated with the shared schema; the jail, the memory budget and
// the root come first, as for /v1/diff. The `check_patch` tool (/v1/tools, /mcp)
// calls answerCheck, so both answer alike.
import type { FastifyInstance } from 'fastify';
import { CheckService } from '../../check/check-service.js';
import { checkQuery } from '../../schemas.js';
import { perServer, type Deps } from '../deps.js';
import { parse } from '../error-handler.js';
import { clientSignal } from '../client-signal.js';

/** One CheckService per server (per Deps), over the query service. */
export const checkServiceOf = perServer(
  (deps): CheckService =>
    new CheckService({
      port: {
        lsp: async (q, signal) => (await deps.lsp.lsp(q, signal)) as Record<string, unknown>,
        checkRoot: (k) => deps.lsp.checkRoot(k),
        readStored: (k, path) => deps.lsp.readStored(k, path),
        scratch: (k, path, at, signal, fn) => deps.lsp.scratch(k, path, at, signal, fn),
      },
      limits: {
        maxPatchBytes: deps.config.maxPatchBytes,
        maxPatchFiles: deps.config.maxPatchFiles,
        maxPatchHunks: deps.config.maxPatchHunks,
        maxCheckDependents: deps.config.maxCheckDependents,
        maxDeclarations: 50,
        concurrency: 4,
        deadlineMs: deps.config.queryTimeoutMs - deps.config.cleanupReserveMs,
        maxAnswerBytes: deps.config.maxAnswerBytes,
      },
      log: deps.log.child({ mod: 'check' }),
    }),
);

/** The body of POST /v1/check, answered. Throws AppError like the route. */
export async function answerCheck(deps: Deps, body: unknown, signal: AbortSignal): Promise<unknown> {
  const q = parse(checkQuery, body);
  deps.lsp.assertServing();
  // The patch and the patched texts are held while the check runs: admitted as a diff is.
  deps.heap.admit('check', q.org);
  deps.lsp.checkRoot(q);
  return checkServiceOf(deps).check(q, signal);
}

export async function checkRoutes(app: FastifyInstance, deps: Deps): Promise<void> {
  app.post('/v1/check', async (req, reply) => {
    (req as { lspdOp?: string }).lspdOp = 'check';
    return answerCheck(deps, req.body, clientSignal(reply));
  });
}
