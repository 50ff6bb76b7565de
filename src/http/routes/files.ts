// GET /v1/roots/{org}/{repo}/{sha}/files/{path}: lines of a stored file, so a
// caller can read any location lspd answered with (issue 14). `?from=deps` reads
// the root's fetched dependencies at the path an `external` location's `read`
// gives. The service is src/files/file-service.ts (the read_file tool calls it too);
// what a read may touch is src/lsp/answer/file-read.ts.
import type { FastifyInstance } from 'fastify';
import { readFileArgs, readFileQuery, relPath, rootParams } from '../../api/schemas.js';
import { checkRootKey } from '../../store/root-key.js';
import type { Deps } from '../deps.js';
import { parse } from '../error-handler.js';
import { err, type RouteDoc } from '../route-options.js';

type Params = { Params: { org: string; repo: string; sha: string; '*': string } };

const doc: RouteDoc = {
  tags: ['trees'],
  summary: "Read lines of a stored file: the tree's, or (from=deps) a fetched dependency's at an external location's `read` path.",
  description:
    'Lines are zero-based, `end` exclusive, counted as LSP counts them (\\n, \\r\\n and \\r each end a line); `text` keeps the terminators. The answer is bounded by LSPD_MAX_ANSWER_BYTES: `truncated` when it was cut (at a line boundary; a single line larger than the bound is cut inside and marked `partial`). A link may point elsewhere inside the tree (or inside a dependency), never out. `{path}` may hold `/`.',
  pathParams: rootParams.extend({ path: relPath }),
  queryParams: readFileQuery,
  answers: {
    '200': { description: 'The lines.', schema: 'FileAnswer' },
    '400': err('bad_sha or bad_name (the root key), else bad_request: an absolute path, a `..` segment, a control character, end before start.'),
    '404': err('not_found (need: tree): no such root; no_such_file: no such file (or it leads outside the root).'),
    '413': err('file_too_large: past LSPD_MAX_FILE_BYTES.'),
    '415': err('not_utf8.'),
    '503': err('busy (with retry_after): LSPD_MAX_FILE_READS reads are running, or this org already holds its fair share of them.'),
  },
};

export async function fileRoutes(app: FastifyInstance, deps: Deps): Promise<void> {
  // Reading a root's files is reading the root: GET's rule.
  app.get<Params>('/v1/roots/:org/:repo/:sha/files/*', { config: { access: { permission: 'read', org: 'param' } }, schema: doc }, async (req) => {
    // The key first (bad_name / bad_sha, as on every root route), then the path, then the query.
    const key = checkRootKey(req.params);
    const path = parse(relPath, req.params['*'] ?? '');
    const q = parse(readFileQuery, req.query ?? {});
    const args = { ...key, path, from: q.from, ...(q.start !== undefined ? { start: q.start } : {}), ...(q.end !== undefined ? { end: q.end } : {}) };
    return deps.services.files.read(parse(readFileArgs, args));
  });
}
