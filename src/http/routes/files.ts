// GET /v1/roots/{org}/{repo}/{sha}/files/{path}: lines of a stored file, so a
// caller can read any location lspd answered with (issue 14). `?from=deps` reads
// the root's fetched dependencies at the path an `external` location's `read`
// gives. The reading itself, and what it may touch, is src/lsp/answer/file-read.ts.
// The read_file tool (src/tools.ts, /mcp) answers through answerReadFile, like the route.
import type { FastifyInstance } from 'fastify';
import { errors } from '../../errors.js';
import { readFileArgs, readFileQuery, relPath, type ReadFileArgs } from '../../schemas.js';
import { checkRootKey } from '../../store/root-key.js';
import { readFileRange } from '../../lsp/answer/file-read.js';
import type { FileAnswer } from '../../responses.js';
import { TREE_AT } from '../../jail/layout.js';
import { FairShare, shareLimits } from '../../fair-share.js';
import { perServer, type Deps } from '../deps.js';
import { parse } from '../error-handler.js';

type Params = { Params: { org: string; repo: string; sha: string; '*': string } };

/**
 * The reads running at once (LSPD_MAX_FILE_READS), fair-shared per org: a read may
 * scan a whole 256 MiB file (to count its lines), so one org's flood of them must
 * not take the disk and the event loop's turns from every other org.
 */
const readSlots = perServer(({ config: c }) => new FairShare(shareLimits(c.maxFileReads, { orgCap: 0, reservePercent: c.orgReservePercent, floor: 1 })));

/** The route's answer for checked arguments: 404 for a root not stored here, as GET on the root answers. */
export async function answerReadFile(deps: Deps, input: unknown): Promise<FileAnswer> {
  const a: ReadFileArgs = parse(readFileArgs, input);
  if (!deps.store.get(a)) throw errors.notFound();
  if (a.end !== undefined && a.start !== undefined && a.end < a.start) throw errors.badRequest('end must not be less than start.');
  const share = readSlots(deps);
  const refused = share.take(a.org);
  if (refused) {
    deps.metrics.orgRefusals.inc({ org: deps.metrics.orgLabels.of(a.org), reason: 'file_reads' });
    const why = refused === 'full' ? `${deps.config.maxFileReads} file reads are running` : `org ${a.org} already has ${share.held(a.org)} file reads running`;
    throw errors.busy(`${why}; retry shortly.`, 1);
  }
  try {
    return await readRange(deps, a);
  } finally {
    share.give(a.org);
  }
}

async function readRange(deps: Deps, a: ReadFileArgs): Promise<FileAnswer> {
  deps.store.touch(a);
  const dirs = {
    treeHostDir: deps.store.treeDir(a),
    depsHostDir: deps.store.depsDir(a),
    // What SERVE binds for this root: a deps read lands only in these.
    mounts: deps.fetcher.serveBinds(a, TREE_AT),
  };
  return readFileRange(dirs, {
    path: a.path,
    from: a.from,
    start: a.start ?? 0,
    ...(a.end !== undefined ? { end: a.end } : {}),
    maxAnswerBytes: deps.config.maxAnswerBytes,
    maxFileBytes: deps.config.maxFileBytes,
  });
}

export async function fileRoutes(app: FastifyInstance, deps: Deps): Promise<void> {
  app.get<Params>('/v1/roots/:org/:repo/:sha/files/*', async (req) => {
    // The key first (bad_name / bad_sha, as on every root route), then the path, then the query.
    const key = checkRootKey(req.params);
    const path = parse(relPath, req.params['*'] ?? '');
    const q = parse(readFileQuery, req.query ?? {});
    return answerReadFile(deps, {
      ...key,
      path,
      from: q.from,
      ...(q.start !== undefined ? { start: q.start } : {}),
      ...(q.end !== undefined ? { end: q.end } : {}),
    });
  });
}
