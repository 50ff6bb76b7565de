// POST /ask's engine: resolve a name (resolve-name.ts), then answer locate /
// references / hover the way /v1/code/lsp answers, plus `matches`. A batch runs
// its queries with bounded concurrency and answers in order, shares one memo of
// server answers and file reads (a batch about one root asks the same questions
// often: the workspace symbols of a leaf, a file's document symbols), and turns
// each query's failure into its own `{error, message}` entry.
//
// Deadlines: DESIGN.md bounds "one query" at queryTimeoutMs in all. A name query
// is several LSP requests, so the bound is applied here to the whole resolution
// and answer (each LSP request also keeps the service's own deadline). In a batch
// each query has its own deadline from when it starts: a batch is many queries.
import type { Logger } from '../log.js';
import { AppError, errors, isAppError } from '../errors.js';
import { deadline, raceAbort, type Abortable } from '../util/deadline.js';
import { askBatchItem, lspQuery, type AskQuery, type LspQuery, type RootKey } from '../api/schemas.js';
import { invalid } from '../api/validation.js';
import { resolveName, type Candidate, type Resolution } from './resolve-name.js';
import type { AskContext, AskLimits, Loc, LspRequest } from './types.js';
import type { LspAnswer } from '../api/responses.js';
import { pageLocations } from './paging.js';
import { filesMentioning, type Mentions } from './use-scan.js';
import { RootCache } from '../store/root-cache.js';
import { rootId } from '../store/types.js';
import type { Language } from '../languages.js';

/** The query service's one entry point (src/lsp/query-service.ts), as /ask uses it. */
export type LspCall = (q: LspQuery, signal: Abortable) => Promise<LspAnswer>;

/** Read access to a stored root's files. */
export interface TreeFiles {
  /** UTF-8 text of a root-relative file; undefined when absent, not a regular file, too large or not UTF-8. */
  readText(root: RootKey, path: string, maxBytes: number): Promise<string | undefined>;
  /** Root-relative paths of the root's regular files. */
  listFiles(root: RootKey): Promise<readonly string[]>;
}

export interface AskServiceOptions {
  lsp: LspCall;
  files: TreeFiles;
  /** Which upload of the key the stored root is (RootInfo.generation); undefined when none is stored. */
  generationOf: (root: RootKey) => string | undefined;
  /** The languages of the stored root (RootInfo.languages); empty when none is stored. */
  languagesOf: (root: RootKey) => readonly Language[];
  log: Logger;
  /** The whole-query deadline: config.queryTimeoutMs less the cleanup reserve, as the query service counts it. */
  deadlineMs: number;
  /** Default page size of locate (config.maxLocations). */
  maxLocations: number;
  limits?: Partial<AskLimits>;
  /** Before anything else: the one admission (src/tenancy/admission.ts: not_ready, busy, need_tree). */
  admit: (root: RootKey) => void;
  /** Before a scan of the tree's files starts (not for one already cached): throws 503 busy while the daemon's heap is past its budget. */
  admitWalk: (root: RootKey) => void;
}

export const defaultAskLimits: AskLimits = {
  maxCandidates: 20,
  maxProbes: 6,
  maxOutlineFiles: 16,
  maxScanFiles: 5000,
  maxScanBytes: 32 * 1024 * 1024,
  maxScanFileBytes: 2 * 1024 * 1024,
  perQueryConcurrency: 4,
  batchConcurrency: 4,
};

export type AskAnswer = Record<string, unknown>;

export interface AskBatchBody extends RootKey {
  queries: unknown[];
}

/** Per-request memo: a batch asks the same questions of the same root many times. */
class Memo {
  readonly #answers = new Map<string, Promise<LspAnswer>>();
  readonly #texts = new Map<string, Promise<string | undefined>>();

  answer(key: string, make: () => Promise<LspAnswer>): Promise<LspAnswer> {
    let p = this.#answers.get(key);
    if (!p) {
      p = make();
      this.#answers.set(key, p);
      // A failure (a deadline, a crashed session) is not an answer: the next asker tries again.
      p.catch(() => this.#answers.delete(key));
    }
    return p;
  }

  text(path: string, make: () => Promise<string | undefined>): Promise<string | undefined> {
    let p = this.#texts.get(path);
    if (!p) this.#texts.set(path, (p = make()));
    return p;
  }
}

/** What one query's LSP answers said about themselves, folded into its answer. */
interface Seen {
  incomplete: boolean;
  servers: Set<string>;
  freshness?: string;
  /** What the answering server could see of the root's dependencies (the first answer that said). */
  dependencies?: unknown;
}

export async function mapLimit<T, R>(items: readonly T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}

export class AskService {
  readonly #o: AskServiceOptions;
  readonly #limits: AskLimits;
  /**
   * Files mentioning a name, per root: a root is immutable, so a scan stays true
   * for as long as it exists; keyed by its generation too and dropped with it.
   */
  readonly #mentions = new RootCache<Mentions>({
    max: 2000,
    maxBytes: 16 * 1024 * 1024,
    sizeOf: (m) => m.files.reduce((n, p) => n + 2 * p.length + 40, 48),
  });

  constructor(o: AskServiceOptions) {
    this.#o = o;
    this.#limits = { ...defaultAskLimits, ...o.limits };
  }

  /** The root went away (DELETE or eviction): forget what was learned about it. */
  dropRoot(rootId: string): void {
    this.#mentions.dropRoot(rootId);
  }

  /** Bytes charged for the scans held. */
  get cacheBytes(): number {
    return this.#mentions.bytes;
  }

  #filesMentioning(root: RootKey, leaf: string, qualifier: string | undefined): Promise<Mentions> {
    const generation = this.#o.generationOf(root);
    const ref = { id: rootId(root), generation: generation ?? '' };
    const key = JSON.stringify([leaf, qualifier ?? null]);
    const { files } = this.#o;
    // Read for the scan only: the texts are not kept (a scan may read tens of MiB).
    const src = {
      listFiles: (r: RootKey) => files.listFiles(r),
      readText: (r: RootKey, path: string) => files.readText(r, path, this.#limits.maxScanFileBytes),
    };
    // A walk not cached is new memory and I/O a caller asked for: admitted by the heap budget first.
    const scan = () => {
      this.#o.admitWalk(root);
      return filesMentioning(src, root, leaf, qualifier, this.#limits);
    };
    // A root no longer stored is not remembered: the next upload of its key is another tree.
    if (generation === undefined) return scan();
    return this.#mentions.load(ref, key, scan);
  }

  /** POST /ask's body, validated: one query or a batch. */
  async answer(q: AskQuery | AskBatchBody, signal: Abortable): Promise<AskAnswer | { answers: AskAnswer[] }> {
    return 'queries' in q ? this.batch(q, signal) : this.ask(q, signal);
  }

  /** One query. Throws AppError (404 symbol_not_found, 504 timeout, whatever the query service throws). */
  async ask(q: AskQuery, signal: Abortable): Promise<AskAnswer> {
    this.#o.admit(q);
    return this.#one(q, signal, new Memo());
  }

  /** Many queries about one root; answers in order; one failing query fails only its own entry. */
  async batch(b: AskBatchBody, signal: Abortable): Promise<{ answers: AskAnswer[] }> {
    // As a whole: a root not stored answers none of its queries.
    this.#o.admit(b);
    const memo = new Memo();
    const root: RootKey = { org: b.org, repo: b.repo, sha: b.sha };
    const answers = await mapLimit(b.queries, this.#limits.batchConcurrency, async (raw) => {
      if (signal.aborted) return errorEntry(errors.timeout('The batch was cancelled before this query ran.'));
      const item = askBatchItem.safeParse(raw);
      if (!item.success) return errorEntry(invalid(item.error));
      try {
        return await this.#one({ ...root, ...item.data }, signal, memo);
      } catch (err) {
        return errorEntry(this.#appError(err));
      }
    });
    return { answers };
  }

  async #one(q: AskQuery, outer: Abortable, memo: Memo): Promise<AskAnswer> {
    const started = performance.now();
    const dl = deadline(outer, this.#o.deadlineMs);
    const signal = dl.signal;
    const seen: Seen = { incomplete: false, servers: new Set() };
    const ctx = this.#context(q, signal, memo, seen);
    try {
      // Checked before any server is asked (the schema cannot: a batch item omits the root).
      if ((q.op === 'rename') !== (q.newName !== undefined))
        throw errors.badRequest(q.op === 'rename' ? 'rename needs newName.' : `op ${q.op} takes no newName.`, { field: 'newName' });
      const res = await resolveName(ctx, { root: q, symbol: q.symbol, path: q.path, encoding: q.encoding, context: q.context });
      const body = await this.#answer(ctx, q, res);
      return {
        op: q.op,
        symbol: q.symbol,
        ...(seen.servers.size > 0 ? { server: [...seen.servers].join(',') } : {}),
        elapsed_ms: Math.round(performance.now() - started),
        matches: res.matches,
        ...(res.partial ? { matches_partial: true } : {}),
        ...(res.exact ? {} : { exact: false }),
        ...body,
        ...notesOf(res, body),
        incomplete: seen.incomplete || body.incomplete === true,
        untrusted: true,
        ...(seen.freshness ? { dependency_freshness: seen.freshness } : {}),
        ...(seen.dependencies !== undefined ? { dependencies: seen.dependencies } : {}),
      };
    } catch (err) {
      // The service reads any abort of its signal as the client leaving; when it was this
      // query's own deadline, say so.
      if (signal.aborted && !outer.aborted) throw errors.timeout(`Resolving ${JSON.stringify(q.symbol)} did not finish within ${this.#o.deadlineMs} ms.`);
      throw err;
    } finally {
      dl.clear();
    }
  }

  #context(q: AskQuery, signal: Abortable, memo: Memo, seen: Seen): AskContext {
    const { lsp, files } = this.#o;
    const limits = this.#limits;
    return {
      limits,
      lsp: async (req: LspRequest) => {
        const parsed = lspQuery.safeParse(req);
        // Resolution builds these queries itself; one that does not validate is a bug here, not the caller's.
        if (!parsed.success) throw errors.internal('A name query built an invalid position query.');
        const a = await memo.answer(JSON.stringify(parsed.data), () => lsp(parsed.data, signal));
        if (a.incomplete) seen.incomplete = true;
        if (typeof a.server === 'string') seen.servers.add(a.server);
        if (typeof a.dependency_freshness === 'string') seen.freshness ??= a.dependency_freshness;
        if (a.dependencies !== undefined) seen.dependencies ??= a.dependencies;
        return a;
      },
      readText: (root, path) => memo.text(path, () => files.readText(root, path, limits.maxScanFileBytes)),
      // The scan is shared (cached) and runs to its bound; this query stops waiting at its deadline.
      filesMentioning: (root, leaf, qualifier) => raceAbort(this.#filesMentioning(root, leaf, qualifier), signal),
      languagesOf: (root) => this.#o.languagesOf(root),
      map: (items, fn) => mapLimit(items, limits.perQueryConcurrency, fn),
    };
  }

  async #answer(ctx: AskContext, q: AskQuery, res: Resolution): Promise<AskAnswer> {
    const cands = res.candidates.map(renderCandidate);
    const listed = res.matches > 1 ? { candidates: cands, ...(res.matches > cands.length ? { candidates_truncated: true } : {}) } : {};
    if (q.op === 'locate') {
      const all = dedupe(res.candidates.flatMap((c) => c.definitions));
      const scope = JSON.stringify(['ask', q.org, q.repo, q.sha, q.symbol, q.path ?? null, q.op]);
      const limit = Math.min(q.limit ?? this.#o.maxLocations, this.#o.maxLocations);
      const other = res.candidates.reduce((n, c) => n + c.other, 0);
      return { ...pageLocations(all, { limit, cursor: q.cursor, grouped: q.grouped, scope }), other, ...listed };
    }
    if (res.matches > 1) {
      // References or hover of "one of these" would be a guess: say which names to ask instead.
      return {
        ambiguous: true,
        message: `${JSON.stringify(q.symbol)} matches ${res.matches} symbols; ask again with one of the candidates' qualified names, or give path.`,
        ...listed,
      };
    }
    const c = res.candidates[0]!;
    const at = { org: q.org, repo: q.repo, sha: q.sha, path: c.probe.path, line: c.probe.line, character: c.probe.character, encoding: q.encoding };
    const refs = { ...at, op: 'references' as const, includeDeclaration: true, context: q.context };
    let body: Record<string, unknown>;
    if (q.op === 'callers' || q.op === 'callees')
      body = await ctx.lsp({ ...graphAt(c, at), op: q.op === 'callers' ? 'incomingCalls' : 'outgoingCalls', depth: q.depth });
    else if (q.op === 'hover') body = await ctx.lsp({ ...at, op: 'hover' });
    else if (q.op === 'rename') body = await ctx.lsp({ ...at, op: 'rename', newName: q.newName });
    else if (!q.grouped) body = await ctx.lsp({ ...refs, limit: q.limit, cursor: q.cursor });
    else body = await this.#groupedReferences(ctx, q, refs);
    const { op: _op, server: _server, elapsed_ms: _ms, untrusted: _u, ...rest } = body;
    return { ...rest, resolved: renderCandidate(c) };
  }

  /**
   * References grouped by file with counts. /v1/code/lsp has no `grouped` field, so
   * the service's pages are gathered (up to GROUPED_MAX_PAGES of maxLocations each)
   * and grouped and paged here, with this question's own cursors; counts are exact
   * unless the gathering stopped short, which the answer then says (`counts_partial`).
   */
  async #groupedReferences(ctx: AskContext, q: AskQuery, refs: LspRequest): Promise<Record<string, unknown>> {
    const all: Loc[] = [];
    let first: LspAnswer | undefined;
    let cursor: string | undefined;
    for (let page = 0; page < GROUPED_MAX_PAGES; page++) {
      const a = await ctx.lsp({ ...refs, limit: this.#o.maxLocations, ...(cursor !== undefined ? { cursor } : {}) });
      first ??= a;
      all.push(...((a.locations ?? []) as Loc[]));
      cursor = typeof a.next_cursor === 'string' ? a.next_cursor : undefined;
      if (cursor === undefined) break;
    }
    const scope = JSON.stringify(['ask-grouped', q.org, q.repo, q.sha, q.symbol, q.path ?? null]);
    const limit = Math.min(q.limit ?? this.#o.maxLocations, this.#o.maxLocations);
    const { locations: _l, total: _t, truncated: _tr, ...meta } = (first ?? {}) as Record<string, unknown>;
    delete meta.next_cursor;
    return {
      ...meta,
      ...pageLocations(all, { limit, cursor: q.cursor, grouped: true, scope }),
      // Stopped short: the service's total is the honest one, and more pages exist than were gathered.
      ...(cursor !== undefined ? { counts_partial: true, total: Math.max(Number(_t ?? 0), all.length), truncated: true } : {}),
    };
  }

  #appError(err: unknown): AppError {
    if (isAppError(err)) return err;
    this.#o.log.error({ err }, 'ask query failed');
    return errors.internal('Internal error.');
  }
}

/** Pages of the query service gathered for one grouped references answer (× maxLocations each). */
const GROUPED_MAX_PAGES = 5;

/**
 * Where to ask for a name's callers or callees: its definition's name when that is
 * in the tree (definitions land on the name, in the caller's encoding), else the use
 * site that resolved it (a server prepares the hierarchy of what a call names).
 */
function graphAt<T extends { path: string; line: number; character: number }>(c: Candidate, probe: T): T {
  const d = c.definitions.find((l) => l.external !== true);
  return d ? { ...probe, path: d.path, line: d.range.start.line, character: d.range.start.character } : probe;
}

function renderCandidate(c: Candidate): Record<string, unknown> {
  // The location without its context lines: a candidate list is for choosing, and locate already shows them.
  const { context: _c, ...d } = c.definitions[0] ?? ({} as Loc);
  return {
    name: c.name,
    ...(c.kind !== undefined ? { kind: c.kind } : {}),
    ...(c.container !== undefined ? { container: c.container } : {}),
    qualified: c.qualified,
    ...d,
  };
}

function dedupe(locs: Loc[]): Loc[] {
  const seen = new Set<string>();
  return locs.filter((l) => {
    const k = `${l.external ? `${String(l.module)}@${String(l.version)}` : ''}|${l.path}|${l.range.start.line}:${l.range.start.character}`;
    if (seen.has(k)) return false;
    seen.add(k);
    return true;
  });
}

/** What bounded the resolution, before what bounded the answer. */
function notesOf(res: Resolution, body: AskAnswer): { notes?: string[] } {
  const notes = [...(res.notes ?? []), ...(Array.isArray(body.notes) ? (body.notes as string[]) : [])];
  return notes.length > 0 ? { notes } : {};
}

function errorEntry(e: AppError): Record<string, unknown> {
  return { ...e.toJSON(), status: e.status };
}
