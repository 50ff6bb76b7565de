// POST /v1/diff's engine: what a change between two stored roots of one repo does.
//   files        the tree indexes compared (tree-diff.ts): no file read
//   symbols      documentSymbols at base and head of each modified (or removed)
//                source file, diffed by qualified name (symbol-diff.ts)
//   impact       references at BASE to each removed or changed symbol, outside the
//                lines the change rewrote: the callers that may break
//   diagnostics  at HEAD in the changed files and impact's files, less those base
//                already had (file + message + code, never line)
// Every LSP question goes through the query service (`lsp(q, signal)`), so a diff
// inherits the jail, the per-org fair share of the wait queue, the result cache,
// per-request deadlines and the `untrusted` label; the whole diff is bounded by
// one query deadline, like a /ask name query.
// Answers are paged in bytes like every other answer (diff-page.ts: files, symbols,
// diagnostics, impact as one sequence under one cursor). Two immutable roots give
// one exact answer, so a complete page is cached, serialized and charged its bytes,
// keyed by both roots' ids and generations, the offset and the limit, and dropped
// when either root goes. Only the page answered is kept, never the whole diff: a
// diff of 20,000 changed paths once kept every path per cached answer (issue 30).
// A page not cached is computed again; its LSP questions are the result cache's.
import { AppError, errors, isAppError } from '../errors.js';
import { deadline, type Abortable } from '../util/deadline.js';
import { languageOf } from '../languages.js';
import type { Logger } from '../log.js';
import type { Metrics } from '../metrics.js';
import { lspQuery, type DiffQuery, type LspQuery, type RootKey } from '../api/schemas.js';
import type { DiffAnswer } from '../api/responses.js';
import { RootCache, rootScope, type RootRef } from '../store/root-cache.js';
import { rootId, type RootInfo } from '../store/types.js';
import { decodeCursor, encodeCursor } from '../lsp/answer/cursor.js';
import { mapLimit } from '../ask/ask-service.js';
import { changedBaseLines, diffSymbols, newDiagnostics, outsideChange, type Diag, type DocSymbol, type Loc, type SymbolChange } from './symbol-diff.js';
import { diffTrees, type TreeDiff } from './tree-diff.js';
import { cutPage, fitNotes, LEFT_OUT_NOTE_BYTES, totalOf, type DiffLists } from './diff-page.js';
import { utf8Length } from '../lsp/wire/encoding.js';

/** An answer of the query service, as the diff reads it. */
type LspAnswer = Record<string, unknown> & { incomplete?: boolean; truncated?: boolean; next_cursor?: string };
export type LspCall = (q: LspQuery, signal: Abortable) => Promise<LspAnswer>;

export interface DiffLimits {
  /** Changed paths listed in one page. */
  maxFiles: number;
  /** Modified or removed source files whose symbols are diffed. */
  maxSymbolFiles: number;
  /** Symbol changes listed in one page. */
  maxSymbols: number;
  /** Removed or changed symbols whose references are looked up. */
  maxImpactSymbols: number;
  /** Impact locations gathered in all (then paged). */
  maxImpact: number;
  /** Files whose diagnostics are compared. */
  maxDiagnosticFiles: number;
  /** New diagnostics listed in one page. */
  maxDiagnostics: number;
  /** LSP questions in flight for one diff. */
  concurrency: number;
}

export const defaultDiffLimits: DiffLimits = {
  maxFiles: 2000,
  maxSymbolFiles: 50,
  maxSymbols: 500,
  maxImpactSymbols: 50,
  maxImpact: 2000,
  maxDiagnosticFiles: 50,
  maxDiagnostics: 500,
  concurrency: 4,
};

export interface DiffServiceOptions {
  lsp: LspCall;
  /** The one admission (src/tenancy/admission.ts) of both roots, base first: not_ready, busy, need_tree naming the missing one. */
  admit(keys: readonly [RootKey, RootKey]): RootInfo[];
  store: { get(k: RootKey): RootInfo | undefined; treeDir(k: RootKey): string };
  /** UTF-8 text of a root's file (bounded and confined: ask/tree-files.ts); undefined when it cannot be read. */
  readText(root: RootKey, path: string, maxBytes: number): Promise<string | undefined>;
  metrics: Metrics;
  log: Logger;
  /** The whole-diff deadline: queryTimeoutMs less the cleanup reserve, as /ask counts it. */
  deadlineMs: number;
  /** Page size of impact, and the most a page may hold (config.maxLocations). */
  maxLocations: number;
  /** Largest file read to diff its symbols (config.maxTargetFileBytes). */
  maxFileBytes: number;
  /** Diff pages kept (0: none). */
  cacheEntries: number;
  /** Bytes of serialized pages kept (0: none). */
  cacheBytes: number;
  /** The bound of one answer (config.maxAnswerBytes): a page never passes it. */
  maxAnswerBytes: number;
  limits?: Partial<DiffLimits>;
}

/** What one diff computed, before paging. */
interface Full {
  files: TreeDiff['files'];
  symbols: SymbolChange[];
  impact: (Loc & { symbol: string; symbol_path: string })[];
  impactTruncated: boolean;
  diagnostics: Diag[];
  incomplete: boolean;
  servers: string[];
  notes: string[];
}

/** Prefix of a diff's cache key: the head root's id follows, so the head's removal finds its entries. */
const HEAD_TAG = 'diff\u0000';
const elapsedSince = (t0: number) => Math.round((performance.now() - t0) * 10) / 10;

/** Errors that mean "this file has no answer" (no server, unreadable): the diff goes on without it, saying so. */
const SKIPPED = new Set(['no_server', 'no_such_file', 'file_too_large', 'not_utf8']);

/** Notes take at most this share of an answer; the rest is for the lists. */
const NOTES_SHARE = 8;

export class DiffService {
  readonly #o: DiffServiceOptions;
  readonly #limits: DiffLimits;
  /** Pages, serialized, under the base root; the key names the head's id and generation, the offset and the limit. */
  readonly #cache: RootCache<Buffer> | undefined;

  constructor(o: DiffServiceOptions) {
    this.#o = o;
    this.#limits = { ...defaultDiffLimits, ...o.limits };
    this.#cache =
      o.cacheEntries > 0 && o.cacheBytes > 0 ? new RootCache<Buffer>({ max: o.cacheEntries, maxBytes: o.cacheBytes, sizeOf: (b) => b.length }) : undefined;
  }

  /** Bytes charged for the pages held. */
  get cacheBytes(): number {
    return this.#cache?.bytes ?? 0;
  }

  /** A root went away: every diff with it at either end goes. */
  dropRoot(rootId: string): void {
    this.#cache?.dropRoot(rootId);
    // Entries about it as the head sit under their bases: their keys name it.
    const head = `${HEAD_TAG}${rootId}\u0000`;
    this.#cache?.dropWhere((key) => key.startsWith(head));
  }

  async diff(q: DiffQuery, outer: Abortable): Promise<DiffAnswer> {
    const t0 = performance.now();
    const baseKey: RootKey = { org: q.org, repo: q.repo, sha: q.base };
    const headKey: RootKey = { org: q.org, repo: q.repo, sha: q.head };
    const [bi, hi] = this.#o.admit([baseKey, headKey]) as [RootInfo, RootInfo];
    const baseRef: RootRef = { id: rootId(baseKey), generation: bi.generation };
    const headRef: RootRef = { id: rootId(headKey), generation: hi.generation };
    const diffKey = `${HEAD_TAG}${headRef.id}\u0000${headRef.generation}`;
    const scope = rootScope(baseRef) + diffKey;
    const limit = Math.min(q.limit ?? this.#o.maxLocations, this.#o.maxLocations);
    // The cursor's offset is checked against the diff's length once it is known; as a key it is only looked up.
    const pageKey = `${diffKey}\u0000${q.cursor ?? ''}\u0000${limit}`;

    const hit = this.#cache?.get(baseRef, pageKey);
    this.#o.metrics.diffs.inc({ result: hit ? 'cached' : 'computed' });
    if (hit) return { ...(JSON.parse(hit.toString('utf8')) as DiffAnswer), elapsed_ms: elapsedSince(t0), cached: true };

    const dl = deadline(outer, this.#o.deadlineMs);
    let full: Full;
    try {
      full = await this.#compute(baseKey, headKey, dl.signal);
    } catch (err) {
      // The query service reads any abort of its signal as the client leaving; when it was this diff's own deadline, say so.
      if (dl.signal.aborted && !outer.aborted) throw this.#timeout();
      throw err;
    } finally {
      dl.clear();
    }
    const answer = this.#page(q, full, scope, limit);
    if (!full.incomplete && this.#cache) {
      const json = JSON.stringify(answer);
      // Not Buffer.from: a small one is a slice of a shared 8 KiB pool slab, which it would keep alive uncharged.
      const b = Buffer.allocUnsafeSlow(Buffer.byteLength(json));
      b.write(json, 'utf8');
      this.#cache.set(baseRef, pageKey, b);
    }
    return { ...answer, elapsed_ms: elapsedSince(t0) };
  }

  /** The page of `full` the query's cursor names, within maxAnswerBytes. */
  #page(q: DiffQuery, full: Full, scope: string, limit: number): DiffAnswer {
    const L = this.#limits;
    const max = this.#o.maxAnswerBytes;
    const lists: DiffLists = { files: full.files, symbols: full.symbols, diagnostics: full.diagnostics, impact: full.impact };
    const total = totalOf(lists);
    const offset = q.cursor === undefined ? 0 : decodeCursor(q.cursor, total, scope);
    const notes = fitNotes(full.notes, Math.floor(max / NOTES_SHARE));
    const head = (over: Record<string, unknown>): Record<string, unknown> => ({
      base: q.base,
      head: q.head,
      ...(full.servers.length ? { server: full.servers.join(',') } : {}),
      elapsed_ms: 0,
      files: [],
      files_total: full.files.length,
      symbols: [],
      symbols_total: full.symbols.length,
      impact: [],
      total: full.impact.length,
      diagnostics: [],
      diagnostics_total: full.diagnostics.length,
      new_errors: full.diagnostics.filter((d) => d.severity === 'error' || d.severity === 1).length,
      truncated: false,
      incomplete: full.incomplete,
      untrusted: true,
      dependency_freshness: 'server_observed_not_attested',
      ...over,
    });
    // Every fixed field at its largest: a cursor past any offset, the cached flag a hit adds, the elapsed time, the room for a left-out note.
    const fixedBytes =
      utf8Length(
        JSON.stringify(
          head({
            elapsed_ms: 1e12,
            next_cursor: encodeCursor(Number.MAX_SAFE_INTEGER, scope),
            cached: true,
            notes: [...notes, 'x'.repeat(LEFT_OUT_NOTE_BYTES)],
          }),
        ),
      ) + 1;
    const page = cutPage(lists, offset, {
      maxAnswerBytes: max,
      fixedBytes,
      perPage: { files: L.maxFiles, symbols: L.maxSymbols, diagnostics: L.maxDiagnostics, impact: limit },
    });
    const more = page.end < total;
    const pageNotes = page.leftOut === undefined ? notes : [...notes, page.leftOut];
    return head({
      ...page.lists,
      truncated: more || full.impactTruncated || page.leftOut !== undefined,
      ...(more ? { next_cursor: encodeCursor(page.end, scope) } : {}),
      ...(pageNotes.length ? { notes: pageNotes } : {}),
    }) as unknown as DiffAnswer;
  }

  #timeout(): AppError {
    return errors.timeout(`The diff did not finish within ${this.#o.deadlineMs} ms.`);
  }

  async #compute(base: RootKey, head: RootKey, signal: Abortable): Promise<Full> {
    const L = this.#limits;
    const notes: string[] = [];
    const servers = new Set<string>();
    let incomplete = false;
    const ask = async (q: Record<string, unknown>): Promise<LspAnswer | undefined> => {
      try {
        const a = await this.#o.lsp(lspQuery.parse(q), signal);
        if (a.incomplete === true) incomplete = true;
        if (typeof a.server === 'string') servers.add(a.server);
        return a;
      } catch (err) {
        if (isAppError(err) && SKIPPED.has(err.code)) {
          notes.push(`${String(q.path)} at ${String(q.sha).slice(0, 12)}: ${err.message}`);
          return undefined;
        }
        throw err;
      }
    };
    const sourceFile = (p: string) => languageOf(p) !== undefined;

    const tree = await diffTrees(this.#o.store.treeDir(base), this.#o.store.treeDir(head));
    notes.push(...tree.notes);
    const removed = new Set(tree.files.filter((f) => f.change === 'removed').map((f) => f.path));
    const symbolFiles = tree.files.filter((f) => f.change !== 'added' && sourceFile(f.path));
    if (symbolFiles.length > L.maxSymbolFiles)
      notes.push(`Symbols were compared in the first ${L.maxSymbolFiles} of ${symbolFiles.length} modified or removed source files.`);

    // Symbols, and the base lines each modified file's change rewrote.
    const changedLines = new Map<string, Set<number>>();
    const perFile = await mapLimit(symbolFiles.slice(0, L.maxSymbolFiles), L.concurrency, async (f) => {
      const side = async (root: RootKey) => {
        const text = await this.#o.readText(root, f.path, this.#o.maxFileBytes);
        if (text === undefined) {
          notes.push(
            `${f.path} at ${root.sha.slice(0, 12)}: not read (over ${this.#o.maxFileBytes} bytes, not UTF-8, or not a regular file in the tree); its symbols were not compared.`,
          );
          return undefined;
        }
        const a = await ask({ ...root, op: 'documentSymbols', path: f.path });
        if (!a) return undefined;
        if (a.truncated === true) notes.push(`${f.path} at ${root.sha.slice(0, 12)}: more symbols than one answer holds; the rest were not compared.`);
        return { text, symbols: (a.symbols ?? []) as DocSymbol[] };
      };
      const [a, b] = await Promise.all([side(base), f.change === 'removed' ? Promise.resolve(undefined) : side(head)]);
      if (!a || (f.change === 'modified' && !b)) return [];
      if (b) changedLines.set(f.path, changedBaseLines(a.text, b.text));
      return diffSymbols(f.path, a, b);
    });
    const symbols = perFile.flat();

    // Impact: references at base to what was removed or changed.
    const targets = symbols.filter((s) => s.change !== 'added' && s.base);
    if (targets.length > L.maxImpactSymbols)
      notes.push(`References were looked up for the first ${L.maxImpactSymbols} of ${targets.length} removed or changed symbols.`);
    let impactTruncated = targets.length > L.maxImpactSymbols;
    const refLists = await mapLimit(targets.slice(0, L.maxImpactSymbols), L.concurrency, async (s) => {
      const at = s.base!.selectionRange?.start ?? s.base!.range.start;
      const out: Loc[] = [];
      let cursor: string | undefined;
      do {
        const a = await ask({
          ...base,
          op: 'references',
          path: s.path,
          line: at.line,
          character: at.character,
          includeDeclaration: false,
          limit: this.#o.maxLocations,
          ...(cursor !== undefined ? { cursor } : {}),
        });
        if (!a) break;
        out.push(...((a.locations ?? []) as Loc[]));
        cursor = a.next_cursor;
      } while (cursor !== undefined && out.length < L.maxImpact);
      if (cursor !== undefined) impactTruncated = true;
      return outsideChange(out, changedLines, removed).map((l) => ({ symbol: s.qualified, symbol_path: s.path, ...l }));
    });
    let impact = refLists.flat();
    if (impact.length > L.maxImpact) {
      impact = impact.slice(0, L.maxImpact);
      impactTruncated = true;
    }
    if (impactTruncated) notes.push(`impact holds at most ${L.maxImpact} locations and the references of ${L.maxImpactSymbols} symbols; more exist.`);

    // Diagnostics at head in changed and impacted files, less base's.
    const headFiles = new Set(tree.files.filter((f) => f.change !== 'removed' && sourceFile(f.path)).map((f) => f.path));
    const changed = new Set(tree.files.map((f) => f.path));
    for (const l of impact) if (sourceFile(l.path)) headFiles.add(l.path);
    const diagFiles = [...headFiles];
    if (diagFiles.length > L.maxDiagnosticFiles)
      notes.push(`Diagnostics were compared in the first ${L.maxDiagnosticFiles} of ${diagFiles.length} changed or impacted files.`);
    const diagsOf = async (root: RootKey, path: string): Promise<Diag[]> => {
      const a = await ask({ ...root, op: 'diagnostics', path });
      if (a?.truncated === true) notes.push(`${path} at ${root.sha.slice(0, 12)}: more diagnostics than one answer holds.`);
      return ((a?.diagnostics ?? []) as Record<string, unknown>[]).map((d) => ({ path, ...d }) as Diag);
    };
    const pairs = await mapLimit(diagFiles.slice(0, L.maxDiagnosticFiles), L.concurrency, async (path) => {
      // A file added at head has nothing at base to subtract; an unchanged (impacted) one is the same file at both.
      const atBase = !changed.has(path) || tree.files.some((f) => f.path === path && f.change === 'modified');
      const [h, b] = await Promise.all([diagsOf(head, path), atBase ? diagsOf(base, path) : Promise.resolve([])]);
      return newDiagnostics(h, b);
    });

    return {
      files: tree.files,
      symbols,
      impact,
      impactTruncated,
      diagnostics: pairs.flat(),
      incomplete,
      servers: [...servers].sort(),
      notes,
    };
  }
}
