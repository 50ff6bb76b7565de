// POST /v1/code/lsp (POST /ask lives in ask.ts). Bodies are validated with the shared schemas;
// a root that was never uploaded answers 409 need_tree so the caller can upload
// and retry; nothing that would start a server runs until the jail is proved.
import type { FastifyInstance } from 'fastify';
import { lspQuery } from '../../schemas.js';
import { errors } from '../../errors.js';
import { parse } from '../error-handler.js';
import type { Deps } from '../deps.js';

export async function queryRoutes(app: FastifyInstance, deps: Deps): Promise<void> {
  app.post('/v1/code/lsp', async (req, reply) => {
    const q = parse(lspQuery, req.body);
    (req as { lspdOp?: string }).lspdOp = q.op;
    if (!deps.store.get(q)) throw errors.needTree();
    if (!deps.health.jailReady) throw errors.notReady(`Nothing is served: ${deps.health.reason}.`);
    if (!deps.lsp) throw errors.serverUnavailable('No language server session manager is configured.', 5);
    // A caller that disconnects cancels its query the same way a deadline does
    // (DESIGN.md "Bounds"): the response closing before it was written is the sign.
    const ac = new AbortController();
    const onClose = () => {
      if (!reply.raw.writableEnded) ac.abort(new Error('client disconnected'));
    };
    reply.raw.once('close', onClose);
    try {
      const answer = await deps.lsp.lsp(q, ac.signal);
      (req as { lspdServer?: string }).lspdServer = String(answer.server ?? '');
      return answer;
    } finally {
      reply.raw.off('close', onClose); // the query is over; nothing left to cancel
    }
  });
}
