// POST /v1/code/lsp (POST /ask lives in ask.ts): the body validated with the shared
// schema, then the query service, which owns every check (jail proved, org's share,
// root stored) and their order.
import type { FastifyInstance } from 'fastify';
import { lspQuery } from '../../schemas.js';
import { parse } from '../error-handler.js';
import type { Deps } from '../deps.js';
import { clientSignal } from '../client-signal.js';
import { answerLsp } from './ask.js';

export async function queryRoutes(app: FastifyInstance, deps: Deps): Promise<void> {
  app.post('/v1/code/lsp', async (req, reply) => {
    const q = parse(lspQuery, req.body);
    (req as { lspdOp?: string }).lspdOp = q.op;
    const answer = await answerLsp(deps, q, clientSignal(reply));
    (req as { lspdServer?: string }).lspdServer = String(answer.server ?? '');
    return answer;
  });
}
