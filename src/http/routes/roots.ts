// The tree routes of API.md "Trees": PUT, GET and DELETE /v1/roots/:org/:repo/:sha
// and GET /v1/roots. The upload body is never parsed by fastify: the store reads
// `request.raw` as a stream. The key and the media type are checked in onRequest,
// before the body parser runs, so a refused upload has not had a byte read; so are
// an incremental upload's `?base=` (a base this replica lacks is 409 need_tree at
// once, and the client sends the whole tree instead) and `x-lspd-git-tree`.
import type { FastifyInstance } from 'fastify';
import { errors } from '../../errors.js';
import { GIT_TREE_HEADER, listQuery, putRootHeaders, putRootQuery, rootParams } from '../../api/schemas.js';
import { ops } from '../../tenancy/admission.js';
import { baseMissing } from '../../store/incremental.js';
import { checkRootKey } from '../../store/root-key.js';
import { rootId, type RootInfo, type RootKey } from '../../store/types.js';
import type { Deps } from '../deps.js';
import { parse } from '../error-handler.js';
import { principalOf } from '../auth.js';
import { err, type RouteDoc } from '../route-options.js';
import { mayTouchOrg } from '../../tokens.js';
import { GZIP_MEDIA, TAR_MEDIA } from '../media-types.js';
import { dropRest } from '../drop-body.js';

// After a refusal the client is usually still sending. Reading (and dropping) a
// little more lets it finish and read the answer; past these, the socket is cut.
const LINGER_BYTES = 64 * 1024 * 1024;
const LINGER_MS = 30_000;

type KeyParams = { Params: { org: string; repo: string; sha: string } };
type PutParams = KeyParams & { Querystring: { base?: unknown; warm?: unknown } };

export async function rootRoutes(app: FastifyInstance, deps: Deps): Promise<void> {
  const { store } = deps;

  app.put<PutParams>(
    '/v1/roots/:org/:repo/:sha',
    {
      config: { access: { permission: 'upload', org: 'param' } },
      schema: putDoc,
      onRequest: async (req) => {
        const key = checkRootKey(req.params);
        uploadIsGzip(req.headers['content-type'], req.headers['content-encoding']);
        warmWanted(req.query.warm);
        const { base } = uploadOptions(key, req.query, req.headers[GIT_TREE_HEADER]);
        // Before a byte of the body is read; a root already stored takes nothing new.
        if (!store.get(key)) deps.services.admission.heap(key.org, ops.upload);
        if (base !== undefined && !store.get(key) && !store.get({ ...key, sha: base })) throw baseMissing(key, base);
      },
    },
    async (req, reply) => {
      const key = checkRootKey(req.params);
      const gzip = uploadIsGzip(req.headers['content-type'], req.headers['content-encoding']);
      const { base, gitTree } = uploadOptions(key, req.query, req.headers[GIT_TREE_HEADER]);
      try {
        const { created, info, changed } = await store.put(key, req.raw, { gzip, ...(base ? { base } : {}), ...(gitTree ? { gitTree } : {}) });
        // A new root's fetch is queued now (it runs in the background); an existing
        // one answers where its fetch stands. A composed root may reuse its base's.
        const reuse = base !== undefined && changed ? { base: { ...key, sha: base }, changed } : undefined;
        const fetch = created ? await deps.fetcher.enqueue(key, reuse) : deps.fetcher.state(key);
        // The job's state file is in the root's deps dir now. A job with nothing to fetch
        // (or refused) never finishes a run that would measure it: charge it here, while
        // the dir holds that file alone (a queued job is measured when it ends).
        if (created && (fetch.state === 'none' || fetch.state === 'refused')) {
          await deps.fetcher
            .stateWritten(key)
            .then(() => store.refreshUsage(key))
            .catch((err: unknown) => req.log.warn({ err }, 'cannot measure a root after its upload'));
        }
        // Its sessions start in the background (after the fetch), so the first query finds them warm.
        if (warmWanted(req.query.warm)) deps.services.query.warm(key);
        return reply.code(created ? 201 : 200).send({ ...view(info), created, fetch });
      } catch (err) {
        // Past the bound the socket is cut: the client has had its answer's chance.
        void dropRest(req.raw, LINGER_BYTES, LINGER_MS).then((how) => how === 'bound' && req.raw.destroy());
        throw err;
      }
    },
  );

  app.get<KeyParams>('/v1/roots/:org/:repo/:sha', { config: { access: { permission: 'read', org: 'param' } }, schema: getDoc }, async (req) => {
    const key = checkRootKey(req.params);
    const info = store.get(key);
    if (!info) throw errors.notFound();
    const sessions = deps.pool.sessionsOf(rootId(key)).map((s) => ({ server: s.server, state: s.state, workspace: s.workspace, documents: s.documents }));
    const org_disk = { bytes: store.orgUsage().get(key.org) ?? 0, quota_bytes: store.orgQuotaBytes };
    return { ...view(info), fetch: deps.fetcher.state(key), sessions, org_disk };
  });

  app.delete<KeyParams>('/v1/roots/:org/:repo/:sha', { config: { access: { permission: 'delete', org: 'param' } }, schema: deleteDoc }, async (req, reply) => {
    const key = checkRootKey(req.params);
    if (!(await store.delete(key))) throw errors.notFound();
    return reply.code(204).send();
  });

  app.get('/v1/roots', { config: { access: { permission: 'read', org: 'filter' } }, schema: listDoc }, async (req) => {
    const q = parse(listQuery, req.query);
    // Filtered before paging: a page, and its `next`, hold only roots the token may see.
    const p = principalOf(req);
    const page = store.list({ limit: q.limit, after: q.after, ...(p && p.orgs !== '*' ? { orgs: (org: string) => mayTouchOrg(p, org) } : {}) });
    // The list says only where each fetch stands; its steps and log are on the root's own GET.
    const fetchOf = (k: RootKey) => {
      const f = deps.fetcher.state(k);
      return f.error !== undefined ? { state: f.state, error: f.error } : { state: f.state };
    };
    return { roots: page.roots.map((info) => ({ ...view(info), fetch: fetchOf(info.root) })), ...(page.next ? { next: page.next } : {}) };
  });
}

const putDoc: RouteDoc = {
  tags: ['trees'],
  summary: "Upload the tree of a root as a tar (or gzip'd tar) stream.",
  description:
    "All or nothing: the root becomes visible only once the whole tar is stored. Immutable: uploading an existing root answers 200 with created=false and changes nothing. `git archive --format=tar <sha>` output works as is. With `?base=`, the tar is a layer over that stored root (files added or modified; deletions as OCI whiteouts): the new root is composed from the base's files (hard links) and the layer, checked whole like a full upload. With `x-lspd-git-tree`, the stored tree must be that git tree.",
  pathParams: rootParams,
  queryParams: putRootQuery,
  headerParams: putRootHeaders,
  requestBody: 'tar',
  answers: {
    '201': { description: 'Stored.', schema: 'PutRootAnswer' },
    '200': { description: 'Already stored; nothing changed.', schema: 'PutRootAnswer' },
    '400': err('bad_sha, bad_name, bad_archive, or bad_request (x-lspd-git-tree is not a SHA-1 tree id).'),
    '409': err('need_tree: the `base` root is not stored here (`root` names it); upload the whole tree.'),
    '413': err('too_large: past the bytes, files or single-file limit.'),
    '415': err('unsupported_media_type.'),
    '422': err(
      'unsafe_entry: the tar holds an entry that could escape the root (or a layer that conflicts with its base); tree_mismatch: the tree is not the git tree x-lspd-git-tree names (`expected`, `computed`); nothing stored.',
    ),
    '507': err('insufficient_storage.'),
  },
};

const getDoc: RouteDoc = {
  tags: ['trees'],
  summary: 'Describe a stored root: size, languages, dependency fetch state, sessions.',
  pathParams: rootParams,
  answers: { '200': { description: 'The root.', schema: 'RootAnswer' }, '400': err('bad_sha or bad_name.'), '404': err('not_found (need: tree).') },
};

const deleteDoc: RouteDoc = {
  tags: ['trees'],
  summary: 'Delete a root: stop its sessions, remove its files and dependency cache.',
  pathParams: rootParams,
  answers: { '204': { description: 'Deleted.' }, '400': err('bad_sha or bad_name.'), '404': err('not_found.') },
};

const listDoc: RouteDoc = {
  tags: ['trees'],
  summary: 'List stored roots, paged (a token limited to some orgs sees only theirs).',
  queryParams: listQuery,
  answers: { '200': { description: 'A page of roots.', schema: 'RootList' } },
};

function view(info: RootInfo) {
  return {
    root: info.root,
    files: info.files,
    bytes: info.bytes,
    stored_bytes: info.storedBytes,
    ...(info.base !== undefined ? { base: info.base } : {}),
    ...(info.gitTree !== undefined ? { git_tree: info.gitTree } : {}),
    languages: info.languages,
    createdAt: info.createdAt,
  };
}

/** `?base=` (checked like any sha) and `x-lspd-git-tree` of an upload. */
function uploadOptions(key: RootKey, query: { base?: unknown }, treeHeader: string | string[] | undefined): { base?: string; gitTree?: string } {
  const out: { base?: string; gitTree?: string } = {};
  if (query.base !== undefined) out.base = checkRootKey({ ...key, sha: query.base }).sha;
  if (treeHeader !== undefined) {
    if (typeof treeHeader === 'string' && /^[0-9a-f]{64}$/.test(treeHeader)) {
      throw errors.badRequest(`${GIT_TREE_HEADER}: only SHA-1 repositories' tree ids (40 hex digits) can be checked.`);
    }
    out.gitTree = parse(putRootHeaders, { [GIT_TREE_HEADER]: treeHeader })[GIT_TREE_HEADER];
  }
  return out;
}

/** `?warm=`: absent, true or 1 warms the root's sessions; false or 0 skips it. */
function warmWanted(v: unknown): boolean {
  if (v === undefined || v === 'true' || v === '1' || v === '') return true;
  if (v === 'false' || v === '0') return false;
  throw errors.badRequest('?warm= takes true or false.');
}

/**
 * Whether the body is gzip'd, from Content-Type (application/gzip) or
 * Content-Encoding (gzip). Both at once is taken as one layer of gzip, which is what
 * clients that set both mean. Anything else is 415.
 */
export function uploadIsGzip(contentType: string | undefined, contentEncoding: string | undefined): boolean {
  const media = (contentType ?? '').split(';')[0]!.trim().toLowerCase();
  const encoding = (contentEncoding ?? 'identity').trim().toLowerCase();
  if (!TAR_MEDIA.has(media) && !GZIP_MEDIA.has(media)) {
    throw errors.unsupportedMediaType("Upload a tar as application/x-tar, or a gzip'd tar as application/gzip.");
  }
  if (encoding !== 'identity' && encoding !== 'gzip' && encoding !== 'x-gzip') {
    throw errors.unsupportedMediaType('Content-Encoding must be gzip or absent.');
  }
  return GZIP_MEDIA.has(media) || encoding !== 'identity';
}
