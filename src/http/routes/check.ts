// POST /v1/check: a patch checked against a stored root in memory only. The body is
// validated with the shared schema and answered by the check service (src/check/),
// which admits it first (the jail, the memory budget, the root). The `check_patch`
// tool calls the same service.
import type { FastifyInstance } from 'fastify';
import { checkQuery } from '../../api/schemas.js';
import type { Deps } from '../deps.js';
import { err, postQuery, type RouteDoc } from '../route-options.js';

const doc: RouteDoc = {
  tags: ['queries'],
  summary: 'A patch checked against a stored root in memory only: the diagnostics it adds and removes.',
  description:
    "patch (a unified diff of modified, added and deleted files) is applied to the root's files in memory; the changed files and the files referencing the top-level declarations it changes are checked on a scratch language-server session no other query uses, and every change is undone after. new and fixed are matched by file, message and code (never line). Nothing is written anywhere.",
  requestBody: ['CheckQuery'],
  answers: {
    '200': { description: 'What the patch changes in diagnostics.', schema: 'CheckAnswer' },
    '400': err('bad_sha or bad_name, else bad_request: the patch cannot be read (`line` names where), or a path in it leaves the root.'),
    '409': err('need_tree: the root is not stored; upload it, then retry.'),
    '413': err(
      'too_large: the patch is past LSPD_MAX_PATCH_BYTES, LSPD_MAX_PATCH_FILES or LSPD_MAX_PATCH_HUNKS; or a changed file past the target-file bound.',
    ),
    '422': err("patch_does_not_apply: a hunk's old lines are not in the file (`path`, `hunk`), or a file it modifies is missing, or one it adds exists."),
    '503': err('not_ready, server_unavailable or busy (Retry-After).'),
    '504': err('timeout: the check did not finish within the query deadline.'),
  },
};

export async function checkRoutes(app: FastifyInstance, deps: Deps): Promise<void> {
  const { checks } = deps.services;
  postQuery(app, '/v1/check', doc, checkQuery, 'check', (q, signal) => checks.check(q, signal));
}
