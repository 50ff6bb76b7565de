// A caller that hangs up cancels its work the same way a deadline does (DESIGN.md
// "Bounds"). The one test for a hang-up, for every route that answers a query.
import type { FastifyReply } from 'fastify';
import { errors } from '../errors.js';
import type { QueryService } from '../lsp/query-service.js';
import type { Deps } from './deps.js';

/** Aborts when the caller hangs up before the answer was sent. */
export function clientSignal(reply: FastifyReply): AbortSignal {
  const ac = new AbortController();
  // `close` on the response fires on both completion and hang-up; only an unfinished response is a hang-up.
  reply.raw.once('close', () => {
    if (!reply.raw.writableFinished) ac.abort(new Error('client disconnected'));
  });
  return ac.signal;
}

/** The query service, or the 503 every query route answers without one (a store-only server). */
export function queryServiceOf(deps: Deps): QueryService {
  if (!deps.lsp) throw errors.serverUnavailable('No language server session manager is configured.', 5);
  return deps.lsp;
}
