// POST /v1/code/lsp: the body validated (the precompiled check of its common shape,
// else the shared zod schema), then the query service, which admits it
// (src/tenancy/admission.ts: jail proved, org's share, root stored) and answers with
// the bytes to send: serialised once, a cache hit sent as kept.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { SentAnswer } from '../../lsp/query-service.js';
import { lspQuery } from '../../api/schemas.js';
import { fastLspQuery } from '../../api/lsp-query-check.js';
import { parse } from '../error-handler.js';
import type { Deps } from '../deps.js';
import { onHangUp } from '../client-signal.js';
import { err, type RouteDoc } from '../route-options.js';

const doc: RouteDoc = {
  tags: ['queries'],
  summary: 'A position-based LSP operation on a root.',
  description:
    'op is one of definition, typeDefinition, implementation, references, hover, documentSymbols, workspaceSymbols, diagnostics, or a call or type hierarchy: incomingCalls, outgoingCalls, supertypes, subtypes (with depth 1-3; answered as `nodes`). Positional ops need path, line and character; workspaceSymbols needs query and no path. Everything a server produced is labelled untrusted.',
  requestBody: ['LspQuery'],
  answers: {
    '200': { description: 'The answer (fields by op).', schema: 'LspAnswer' },
    '400': err('bad_sha or bad_name (the root key), else bad_request: schema, path or position.'),
    '404': err('no_such_file.'),
    '409': err('need_tree: upload the root, then retry.'),
    '413': err('file_too_large.'),
    '415': err('not_utf8.'),
    '422': err('no_server for that file, or its server does not answer that op (e.g. a hierarchy it lacks).'),
    '503': err('not_ready (jail not proved), server_unavailable or busy (Retry-After).'),
    '504': err('timeout.'),
  },
};

/** What fastify sends a JSON answer as. */
const JSON_TYPE = 'application/json; charset=utf-8';

export async function queryRoutes(app: FastifyInstance, deps: Deps): Promise<void> {
  const { query } = deps.services;
  // Not an async handler: a cache hit is sent in this turn (no promise for fastify to
  // wait on); a query that goes to a server is sent when its promise settles.
  app.post('/v1/code/lsp', { config: { access: { permission: 'query', org: 'body' } }, schema: doc }, (req, reply) => {
    const q = fastLspQuery(req.body) ?? parse(lspQuery, req.body);
    req.lspdOp = q.op;
    const sent = query.lspBody(q, (gone) => onHangUp(reply, gone));
    if (sent instanceof Promise) return sent.then((s) => send(req, reply, s));
    return send(req, reply, sent);
  });
}

function send(req: FastifyRequest, reply: FastifyReply, { server, body }: SentAnswer): FastifyReply {
  req.lspdServer = server;
  return reply.type(JSON_TYPE).send(body);
}
