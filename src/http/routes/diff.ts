// POST /v1/diff: what a change between two stored roots does. The body is validated
// with the shared schema and answered by the diff service (src/diff/), which admits
// both roots first (a missing one is 409 need_tree naming it: `root`, `missing`).
// The `diff` tool calls the same service.
import type { FastifyInstance } from 'fastify';
import { diffQuery } from '../../api/schemas.js';
import type { Deps } from '../deps.js';
import { err, postQuery, type RouteDoc } from '../route-options.js';

const doc: RouteDoc = {
  tags: ['queries'],
  summary: 'What a change between two stored roots of a repo does: files, symbols, the references it may break, the diagnostics it brings.',
  description:
    "files from the two trees' indexes; symbols (added, removed, changed) of modified and removed source files by qualified name; impact: references at base to removed or changed symbols outside the lines the change rewrote, paged (limit, cursor); diagnostics at head in changed and impacted files less those base had (file, message and code). Complete answers are cached; everything a server produced is labelled untrusted.",
  requestBody: ['DiffQuery'],
  answers: {
    '200': { description: 'The diff.', schema: 'DiffAnswer' },
    '400': err('bad_sha or bad_name, else bad_request (a bad cursor).'),
    '409': err('need_tree: base or head is not stored (`root` and `missing` name it); upload it, then retry.'),
    '503': err('not_ready, server_unavailable or busy (Retry-After).'),
    '504': err('timeout: the diff did not finish within the query deadline.'),
  },
};

export async function diffRoutes(app: FastifyInstance, deps: Deps): Promise<void> {
  const { diff } = deps.services;
  postQuery(app, '/v1/diff', doc, diffQuery, 'diff', (q, signal) => diff.diff(q, signal));
}
