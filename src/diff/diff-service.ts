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
// one query deadline, like a /ask name query. Two immutable roots give one exact
// answer, so a complete one is cached, keyed by both roots' ids and generations,
// and dropped when either goes; pages of impact are cut from it.
import { AppError, errors, isAppError } from '../errors.js';
import { deadline } from '../deadline.js';
import { languageOf } from '../languages.js';
import type { Logger } from '../log.js';
import type { Metrics } from '../metrics.js';
import { lspQuery, type DiffQuery, type LspQuery, type RootKey } from '../schemas.js';
import type { DiffAnswer } from '../responses.js';
import { RootCache, rootScope, type RootRef } from '../store/root-cache.js';
import type { RootInfo } from '../store/types.js';
import { decodeCursor, encodeCursor } from '../lsp/answer/cursor.js';
import { mapLimit } from '../ask/ask-service.js';
import { changedBaseLines, diffSymbols, newDiagnostics, outsideChange, type Diag, type DocSymbol, type Loc, type SymbolChange } from './symbol-diff.js';
import { diffTrees, type TreeDiff } from './tree-diff.js';

/** An answer of the query service, as the diff reads it. */
type LspAnswer = Record<string, unknown> & { incomplete?: boolean; truncated?: boolean; next_cursor?: string };
export type LspCall = (q: LspQuery, signal: AbortSignal) => Promise<LspAnswer>;

export interface DiffLimits {
  /** Paths listed in `files`. */
  maxFiles: number;
  /** Modified or removed source files whose symbols are diffed. */
  maxSymbolFiles: number;
  /** Symbol changes listed. */
  maxSymbols: number;
  /** Removed or changed symbols whose references are looked up. */
  maxImpactSymbols: number;
  /** Impact locations gathered in all (then paged). */
  maxImpact: number;
  /** Files whose diagnostics are compared. */
  maxDiagnosticFiles: number;
  /** New diagnostics listed. */
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
  /** Diff answers kept (0: none). */
  cacheEntries: number;
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

/** Errors that mean "this file has no answer" (no server, unreadable): the diff goes on without it, saying so. */
const SKIPPED = new Set(['no_server', 'no_such_file', 'file_too_large', 'not_utf8']);

/** Both roots' infos, or 409 need_tree naming the first one missing (`root`, `missing`: base or head). */
export function storedRoots(store: DiffServiceOptions['store'], q: DiffQuery): [RootInfo, RootInfo] {
  const out: RootInfo[] = [];
  for (const which of ['base', 'head'] as const) {
    const k: RootKey = { org: q.org, repo: q.repo, sha: q[which] };
    const info = store.get(k);
    if (!info) throw errors.needTree(`The ${which} root ${k.sha} has not been uploaded; upload it and retry.`, { root: k, missing: which });
    out.push(info);
  }
  return [out[0]!, out[1]!];
}

export class DiffService {
  readonly #o: DiffServiceOptions;
  readonly #limits: DiffLimits;
  /** Under the base root; the key names the head's id and generation. */
  readonly #cache: RootCache<Full> | undefined;
  /** head id → the (base, key) entries about it, so a head's removal drops them too. */
  readonly #byHead = new Map<string, Set<string>>();

  constructor(o: DiffServiceOptions) {
    this.#o = o;
    this.#limits = { ...defaultDiffLimits, ...o.limits };
    this.#cache = o.cacheEntries > 0 ? new RootCache<Full>({ max: o.cacheEntries }) : undefined;
  }

  /** A root went away: every diff with it at either end goes. */
  dropRoot(rootId: string): void {
    this.#cache?.dropRoot(rootId);
    const entries = this.#byHead.get(rootId);
    if (!entries) return;
    this.#byHead.delete(rootId);
    for (const e of entries) {
      const [id, generation, key] = JSON.parse(e) as [string, string, string];
      this.#cache?.delete({ id, generation }, key);
    }
  }

  async diff(q: DiffQuery, outer: AbortSignal): Promise<DiffAnswer> {
    const t0 = performance.now();
    const baseKey: RootKey = { org: q.org, repo: q.repo, sha: q.base };
    const headKey: RootKey = { org: q.org, repo: q.repo, sha: q.head };
    const [bi, hi] = storedRoots(this.#o.store, q);
    const baseRef: RootRef = { id: `${q.org}/${q.repo}/${q.base}`, generation: bi.generation };
    const headRef: RootRef = { id: `${q.org}/${q.repo}/${q.head}`, generation: hi.generation };
    const key = `diff\u0000${headRef.id}\u0000${headRef.generation}`;
    const scope = rootScope(baseRef) + key;
    const limit = Math.min(q.limit ?? this.#o.maxLocations, this.#o.maxLocations);

    let full = this.#cache?.get(baseRef, key);
    const cached = full !== undefined;
    this.#o.metrics.diffs.inc({ result: cached ? 'cached' : 'computed' });
    if (!full) {
      const dl = deadline(outer, this.#o.deadlineMs);
      try {
        full = await this.#compute(baseKey, headKey, dl.signal);
      } catch (err) {
        // The query service reads any abort of its signal as the client leaving; when it was this diff's own deadline, say so.
        if (dl.signal.aborted && !outer.aborted) throw this.#timeout();
        throw err;
      } finally {
        dl.clear();
      }
      if (!full.incomplete && this.#cache) {
        this.#cache.set(baseRef, key, full);
        let set = this.#byHead.get(headRef.id);
        if (!set) this.#byHead.set(headRef.id, (set = new Set()));
        set.add(JSON.stringify([baseRef.id, baseRef.generation, key]));
      }
    }

    const offset = q.cursor === undefined ? 0 : decodeCursor(q.cursor, full.impact.length, scope);
    const page = full.impact.slice(offset, offset + limit);
    const end = offset + page.length;
    const diagnostics = full.diagnostics.slice(0, this.#limits.maxDiagnostics);
    const notes = [...full.notes];
    const filesCut = full.files.length > this.#limits.maxFiles;
    const symbolsCut = full.symbols.length > this.#limits.maxSymbols;
    const diagnosticsCut = full.diagnostics.length > diagnostics.length;
    if (filesCut) notes.push(`files lists the first ${this.#limits.maxFiles} of ${full.files.length} changed paths.`);
    if (symbolsCut) notes.push(`symbols lists the first ${this.#limits.maxSymbols} of ${full.symbols.length} symbol changes.`);
    if (diagnosticsCut) notes.push(`diagnostics lists the first ${diagnostics.length} of ${full.diagnostics.length} new diagnostics.`);
    return {
      base: q.base,
      head: q.head,
      ...(full.servers.length ? { server: full.servers.join(',') } : {}),
      elapsed_ms: Math.round((performance.now() - t0) * 10) / 10,
      files: full.files.slice(0, this.#limits.maxFiles),
      files_total: full.files.length,
      symbols: full.symbols.slice(0, this.#limits.maxSymbols),
      symbols_total: full.symbols.length,
      impact: page,
      total: full.impact.length,
      diagnostics,
      diagnostics_total: full.diagnostics.length,
      new_errors: full.diagnostics.filter((d) => d.severity === 'error' || d.severity === 1).length,
      truncated: end < full.impact.length || full.impactTruncated || filesCut || symbolsCut || diagnosticsCut,
      ...(end < full.impact.length ? { next_cursor: encodeCursor(end, scope) } : {}),
      incomplete: full.incomplete,
      ...(cached ? { cached: true } : {}),
      untrusted: true,
      dependency_freshness: 'server_observed_not_attested',
      ...(notes.length ? { notes } : {}),
    } as unknown as DiffAnswer;
  }

  #timeout(): AppError {
    return errors.timeout(`The diff did not finish within ${this.#o.deadlineMs} ms.`);
  }

  async #compute(base: RootKey, head: RootKey, signal: AbortSignal): Promise<Full> {
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
