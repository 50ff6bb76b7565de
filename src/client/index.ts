// lspd/client: a typed client for the lspd HTTP API, on undici. Request types are
// the zod *input* types of src/api/schemas.ts (so defaults stay optional) and answers
// the types of src/api/responses.ts: the same definitions the daemon validates with
// and publishes in /docs/json. Every failure is an LspdError with the daemon's
// code and message; a connection failure has status 0 and code `unreachable`.
//
// Scale-out: every request about a root carries `x-lspd-route-key: <org>/<repo>`
// so an ingress hashing on it keeps a repo's roots and warm sessions on one
// replica. A replica that lacks the root answers 409 need_tree; given a `tree`
// source, lsp/ask/askBatch upload it and retry once. A hot repo can be given
// several route keys (`spread`), so the hash spreads it over several replicas.
import type { Readable } from 'node:stream';
import { Agent, request, type Dispatcher } from 'undici';
import type { z } from 'zod';
import {
  GIT_TREE_HEADER,
  type askBatchItem,
  type askQuery,
  type checkQuery,
  type diffQuery,
  type lspQuery,
  type readFileArgs,
  type RootKey,
} from '../api/schemas.js';
import type {
  AskBatchAnswer,
  CheckAnswer,
  DiffAnswer,
  FileAnswer,
  LspAnswer,
  PutRootAnswer,
  ReadyAnswer,
  RootAnswer,
  RootList,
  ToolsAnswer,
} from '../api/responses.js';

export type { RootKey };
export type { AskBatchAnswer, CheckAnswer, DiffAnswer, FileAnswer, LspAnswer, PutRootAnswer, ReadyAnswer, RootAnswer, RootList, ToolsAnswer };
export type LspQuery = z.input<typeof lspQuery>;
export type AskQuery = z.input<typeof askQuery>;
export type AskBatchItem = z.input<typeof askBatchItem>;
/** A file to read: a tree path, or (from: 'deps') an external location's `read`. */
export type ReadFileQuery = z.input<typeof readFileArgs>;
export type DiffQuery = z.input<typeof diffQuery>;
export type CheckQuery = z.input<typeof checkQuery>;

export const ROUTE_KEY_HEADER = 'x-lspd-route-key';
export { GIT_TREE_HEADER } from '../api/schemas.js';

/** An error answer from lspd (or status 0: the daemon could not be reached). */
export class LspdError extends Error {
  override name = 'LspdError';
  readonly status: number;
  readonly code: string;
  /** Seconds the daemon asked to wait (Retry-After / retry_after), when it did. */
  readonly retryAfter: number | undefined;
  /** The whole error body, for codes that carry more (need, entry, limit, ...). */
  readonly body: Record<string, unknown>;
  constructor(status: number, code: string, message: string, retryAfter?: number, body: Record<string, unknown> = {}, cause?: unknown) {
    super(message, cause === undefined ? undefined : { cause });
    this.status = status;
    this.code = code;
    this.retryAfter = retryAfter;
    this.body = body;
  }
  /** Worth retrying as is: the daemon was unreachable, overloaded or failed (5xx). */
  get retryable(): boolean {
    return this.status === 0 || this.status >= 500;
  }
}

/** A tree to upload: a stream (used once) or a function making a fresh one per attempt. */
export type TreeSource = Readable | Buffer | (() => Readable | Buffer | Promise<Readable | Buffer>);

export interface UploadOptions {
  /** The body is gzip'd tar (sent as application/gzip); default plain tar. */
  gzip?: boolean;
  signal?: AbortSignal;
  /** For a spread repo: which of its route keys to upload under (0 = `<org>/<repo>`, the default). */
  shard?: number;
  /**
   * Incremental upload: the tree is a layer over this stored root (same org and
   * repo): files added or modified since it, deletions as OCI whiteouts. A replica
   * without it answers 409 need_tree naming it; upload the whole tree then.
   */
  base?: string;
  /** The commit's git tree id (`git rev-parse <sha>^{tree}`): the daemon refuses (422 tree_mismatch) a tree that is not it. */
  gitTree?: string;
  /** false: the daemon does not start the root's sessions on upload (`?warm=false`); it does by default. */
  warm?: boolean;
}

/** An upload's query string: `?base=` for a layer, `warm=false` to skip the warm-up. */
function uploadQuery(opts: UploadOptions): string {
  const q = new URLSearchParams();
  if (opts.base !== undefined) q.set('base', opts.base);
  if (opts.warm === false) q.set('warm', 'false');
  const s = q.toString();
  return s ? `?${s}` : '';
}

export interface QueryOptions {
  /** Upload this tree and retry once when the replica answers 409 need_tree. */
  tree?: TreeSource;
  gzip?: boolean;
  signal?: AbortSignal;
}

export interface LspdClientOptions {
  /** Base URL, e.g. http://127.0.0.1:7420 */
  url: string;
  /** Bearer token, when the daemon has tokens configured. */
  token?: string;
  /** An undici dispatcher (pool, proxy, mock); by default the client owns an Agent. */
  dispatcher?: Dispatcher;
  /**
   * Hot repos served by several replicas: `{ "<org>/<repo>": n }` sends each query
   * of that repo under one of n route keys, picked at random (`<org>/<repo>`, then
   * `<org>/<repo>#1` … `#n-1`), so a consistent-hash ingress spreads its load over
   * the replicas those keys land on; a query's 409 need_tree upload goes under the
   * same key. Upload to every key ahead (`lspd push --spread n`) and no query meets
   * a 409. Keys land where the hash puts them: n keys reach n distinct replicas
   * only by chance (README "Scale-out", hot repos).
   */
  spread?: Record<string, number>;
}

/** The route key of shard `k` of a repo: k = 0 is the plain `<org>/<repo>`. */
export function routeKey(key: { org: string; repo: string }, shard = 0): string {
  return shard === 0 ? `${key.org}/${key.repo}` : `${key.org}/${key.repo}#${shard}`;
}

type Method = 'GET' | 'PUT' | 'POST' | 'DELETE';

interface Call {
  method: Method;
  path: string;
  /** The x-lspd-route-key value (routeKey()). */
  routeKey?: string;
  json?: unknown;
  body?: Readable | Buffer;
  contentType?: string;
  headers?: Record<string, string>;
  signal?: AbortSignal | undefined;
  /** Statuses answered with a body rather than thrown (e.g. /readyz's 503). */
  accept?: number[];
}

export class LspdClient {
  readonly url: URL;
  readonly #token: string | undefined;
  readonly #dispatcher: Dispatcher;
  readonly #owned: Agent | undefined;
  readonly #spread: ReadonlyMap<string, number>;

  constructor(opts: LspdClientOptions) {
    this.url = new URL(opts.url);
    this.#token = opts.token;
    this.#spread = new Map(Object.entries(opts.spread ?? {}).map(([k, n]) => [k, Math.max(1, Math.floor(n))]));
    // Queries may take the daemon's whole deadline (70 s by default); uploads as
    // long as the tree takes. undici's default 300 s header/body timeouts cover both.
    this.#owned = opts.dispatcher ? undefined : new Agent({ connections: 16 });
    this.#dispatcher = opts.dispatcher ?? this.#owned!;
  }

  /** Upload a root's tree (tar or gzip'd tar). 201 created, or 200 when it was already stored. */
  async putRoot(key: RootKey, tree: TreeSource, opts: UploadOptions = {}): Promise<PutRootAnswer> {
    const body = typeof tree === 'function' ? await tree() : tree;
    return this.#call<PutRootAnswer>({
      method: 'PUT',
      path: rootPath(key) + uploadQuery(opts),
      routeKey: routeKey(key, opts.shard),
      body,
      contentType: opts.gzip ? 'application/gzip' : 'application/x-tar',
      ...(opts.gitTree !== undefined ? { headers: { [GIT_TREE_HEADER]: opts.gitTree } } : {}),
      signal: opts.signal,
    });
  }

  getRoot(key: RootKey, opts: { signal?: AbortSignal; shard?: number } = {}): Promise<RootAnswer> {
    return this.#call<RootAnswer>({ method: 'GET', path: rootPath(key), routeKey: routeKey(key, opts.shard), signal: opts.signal });
  }

  /** Delete the root under every route key of its repo (one, unless spread); 404 only when none had it. */
  async deleteRoot(key: RootKey, opts: { signal?: AbortSignal } = {}): Promise<void> {
    let deleted = 0;
    let notFound: LspdError | undefined;
    for (let k = 0; k < this.spreadOf(key); k++) {
      try {
        await this.#call<unknown>({ method: 'DELETE', path: rootPath(key), routeKey: routeKey(key, k), signal: opts.signal });
        deleted++;
      } catch (err) {
        if (!(err instanceof LspdError) || err.status !== 404) throw err;
        notFound = err;
      }
    }
    if (deleted === 0 && notFound) throw notFound;
  }

  /** How many route keys a repo is spread over (1 unless `spread` names it). */
  spreadOf(key: { org: string; repo: string }): number {
    return this.#spread.get(`${key.org}/${key.repo}`) ?? 1;
  }

  listRoots(page: { limit?: number; after?: string } = {}, opts: { signal?: AbortSignal } = {}): Promise<RootList> {
    const q = new URLSearchParams();
    if (page.limit !== undefined) q.set('limit', String(page.limit));
    if (page.after !== undefined) q.set('after', page.after);
    const qs = q.toString();
    return this.#call<RootList>({ method: 'GET', path: '/v1/roots' + (qs ? '?' + qs : ''), signal: opts.signal });
  }

  lsp(query: LspQuery, opts: QueryOptions = {}): Promise<LspAnswer> {
    return this.#query<LspAnswer>('/v1/code/lsp', query, query, opts);
  }

  ask(query: AskQuery, opts: QueryOptions = {}): Promise<LspAnswer> {
    return this.#query<LspAnswer>('/ask', query, query, opts);
  }

  /**
   * POST /v1/check: `patch` (a unified diff) applied to the root in memory only; what it
   * changes in diagnostics. 422 patch_does_not_apply names `path` and `hunk`.
   */
  check(query: CheckQuery, opts: QueryOptions = {}): Promise<CheckAnswer> {
    return this.#query<CheckAnswer>('/v1/check', query, query, opts);
  }

  askBatch(key: RootKey, queries: AskBatchItem[], opts: QueryOptions = {}): Promise<AskBatchAnswer> {
    return this.#query<AskBatchAnswer>('/ask', key, { ...key, queries }, opts);
  }

  /** Lines [start, end) of a stored file (GET .../files/{path}); a missing root is 404 not_found, as GET on the root. */
  readFile(q: ReadFileQuery, opts: { signal?: AbortSignal } = {}): Promise<FileAnswer> {
    const qs = new URLSearchParams();
    if (q.from !== undefined && q.from !== 'tree') qs.set('from', q.from);
    if (q.start !== undefined) qs.set('start', String(q.start));
    if (q.end !== undefined) qs.set('end', String(q.end));
    const path = `${rootPath(q)}/files/${q.path.split('/').map(encodeURIComponent).join('/')}${qs.size ? '?' + qs.toString() : ''}`;
    const shard = Math.floor(Math.random() * this.spreadOf(q));
    return this.#call<FileAnswer>({ method: 'GET', path, routeKey: routeKey(q, shard), signal: opts.signal });
  }

  /**
   * POST /v1/diff. Both roots must be on the replica the repo's route key reaches;
   * a 409 need_tree names the missing one (`body.root`, `body.missing`) for the caller to upload.
   * An answer is one page (at most the daemon's LSPD_MAX_ANSWER_BYTES): pass `next_cursor`
   * back as `cursor` for the next, as for every paged answer; `new_errors` counts every page.
   */
  diff(query: DiffQuery, opts: { signal?: AbortSignal } = {}): Promise<DiffAnswer> {
    const shard = Math.floor(Math.random() * this.spreadOf(query));
    return this.#call<DiffAnswer>({ method: 'POST', path: '/v1/diff', routeKey: routeKey(query, shard), json: query, signal: opts.signal });
  }

  /** /readyz: answers the body whether ready (200) or not (503). */
  ready(opts: { signal?: AbortSignal } = {}): Promise<ReadyAnswer> {
    return this.#call<ReadyAnswer>({ method: 'GET', path: '/readyz', accept: [503], signal: opts.signal });
  }

  tools(opts: { signal?: AbortSignal } = {}): Promise<ToolsAnswer> {
    return this.#call<ToolsAnswer>({ method: 'GET', path: '/v1/tools', signal: opts.signal });
  }

  /** Finish what is in flight, then close the client's own connections. */
  async close(): Promise<void> {
    await this.#owned?.close();
  }

  /** Fail everything in flight now. */
  async destroy(err?: Error): Promise<void> {
    await this.#owned?.destroy(err ?? null);
  }

  async #query<T>(path: string, key: RootKey, json: unknown, opts: QueryOptions): Promise<T> {
    const shard = Math.floor(Math.random() * this.spreadOf(key));
    const call: Call = { method: 'POST', path, routeKey: routeKey(key, shard), json, signal: opts.signal };
    try {
      return await this.#call<T>(call);
    } catch (err) {
      if (!(err instanceof LspdError) || err.status !== 409 || err.body.need !== 'tree' || !opts.tree) throw err;
      // This replica lacks the root (another replica had it, or it was evicted): upload and ask again, once.
      await this.putRoot({ org: key.org, repo: key.repo, sha: key.sha }, opts.tree, {
        shard,
        ...(opts.gzip !== undefined ? { gzip: opts.gzip } : {}),
        ...(opts.signal ? { signal: opts.signal } : {}),
      });
      return this.#call<T>(call);
    }
  }

  async #call<T>(c: Call): Promise<T> {
    const headers: Record<string, string> = { ...c.headers, accept: 'application/json' };
    if (this.#token) headers.authorization = `Bearer ${this.#token}`;
    if (c.routeKey) headers[ROUTE_KEY_HEADER] = c.routeKey;
    let body: string | Readable | Buffer | undefined;
    if (c.json !== undefined) {
      headers['content-type'] = 'application/json';
      body = JSON.stringify(c.json);
    } else if (c.body !== undefined) {
      headers['content-type'] = c.contentType ?? 'application/octet-stream';
      body = c.body;
    }
    let res: Dispatcher.ResponseData;
    try {
      res = await request(new URL(c.path, this.url), {
        method: c.method,
        headers,
        body: body ?? null,
        dispatcher: this.#dispatcher,
        signal: c.signal ?? null,
      });
    } catch (err) {
      if ((err as Error).name === 'AbortError') throw err;
      const code = (err as NodeJS.ErrnoException).code;
      // The body's own source failed (e.g. `git archive` died): that error, not
      // "unreachable". (A failed connection also destroys the body, but with a
      // socket error, which carries a code.)
      const sourceErr = body && typeof body === 'object' && 'errored' in body ? (body as Readable).errored : null;
      if (sourceErr && code === undefined) throw sourceErr;
      throw new LspdError(0, 'unreachable', `lspd at ${this.url.origin} could not be reached: ${code ?? (err as Error).message}.`, undefined, {}, err);
    }
    const text = await res.body.text();
    let parsed: unknown;
    try {
      parsed = text === '' ? undefined : JSON.parse(text);
    } catch {
      parsed = undefined;
    }
    if (res.statusCode < 400 || c.accept?.includes(res.statusCode)) return parsed as T;
    const b = (parsed && typeof parsed === 'object' ? parsed : {}) as Record<string, unknown>;
    const header = res.headers['retry-after'];
    const retryAfter = typeof b.retry_after === 'number' ? b.retry_after : typeof header === 'string' && /^\d+$/.test(header) ? Number(header) : undefined;
    throw new LspdError(
      res.statusCode,
      typeof b.error === 'string' ? b.error : `http_${res.statusCode}`,
      typeof b.message === 'string' ? b.message : `lspd answered ${res.statusCode}.`,
      retryAfter,
      b,
    );
  }
}

function rootPath(k: RootKey): string {
  return `/v1/roots/${encodeURIComponent(k.org)}/${encodeURIComponent(k.repo)}/${encodeURIComponent(k.sha)}`;
}
