// POST /ask: name-based questions, one or a batch, validated with the shared
// schemas and answered by the ask service (src/ask/), which admits them first
// (a root never uploaded is 409 need_tree, a batch as a whole). The lsp_locate and
// lsp_ask_batch tools call the same service.
import type { FastifyInstance } from 'fastify';
import { askBatch, askOps, askQuery } from '../../api/schemas.js';
import { clientSignal } from '../client-signal.js';
import type { Deps } from '../deps.js';
import { parse } from '../error-handler.js';
import { err, QUERY_ACCESS, type RouteDoc } from '../route-options.js';

const doc: RouteDoc = {
  tags: ['queries'],
  summary: 'A name-based question (locate, references, hover, callers, callees) about a symbol, or a batch of them.',
  requestBody: ['AskQuery', 'AskBatch'],
  answers: {
    '200': { description: 'The answer, like /v1/code/lsp plus matches; a batch answers {answers: [...]}.', schema: 'LspAnswer' },
    '400': err('bad_sha or bad_name (the root key), else bad_request.'),
    '404': err('symbol_not_found.'),
    '409': err('need_tree: upload the root, then retry.'),
    '503': err('not_ready, server_unavailable or busy.'),
    '504': err('timeout.'),
  },
};

export async function askRoutes(app: FastifyInstance, deps: Deps): Promise<void> {
  const { ask } = deps.services;
  app.post('/ask', { config: { access: QUERY_ACCESS }, schema: doc }, async (req, reply) => {
    // Any JSON value can arrive here (`"x"`, `7`, `true`): `in` on a non-object throws,
    // so look inside only an object; the schema refuses the rest with a 400.
    const body = typeof req.body === 'object' && req.body !== null ? (req.body as Record<string, unknown>) : undefined;
    const isBatch = body !== undefined && 'queries' in body;
    // Only known ops become metric labels: a label per caller-chosen string would grow without bound.
    req.lspdOp = isBatch ? 'batch' : (askOps as readonly unknown[]).includes(body?.op) ? String(body?.op) : 'locate';
    return ask.answer(isBatch ? parse(askBatch, req.body) : parse(askQuery, req.body), clientSignal(reply));
  });
}
