// POST /v1/check's engine: a patch applied to a stored root in memory only, and what
// it changes in diagnostics, in the changed files and the files that depend on them.
//   parse + apply   src/edit/apply-patch.ts on the stored texts (the query checks:
//                   inside the root, ≤ maxTargetFileBytes, UTF-8); 400/413/422
//   dependents      references at the top-level declarations (documentSymbols) a
//                   patch changes in each modified or deleted file (touched.ts; all
//                   of them when it changes anything outside them), asked through
//                   the query service on the plain sessions (the stored program,
//                   cached); at most maxCheckDependents files, of the file's language
//   before          the diagnostics op on every file checked, through the query
//                   service (cached: the stored root never changes)
//   after           on the root's scratch session (QueryService.scratch, pool key
//                   purpose 'check'): the changed files didOpen'd at their stored text,
//                   then didChange'd to the patched one (added: didOpen, deleted:
//                   emptied), diagnostics pulled or awaited, then every change undone
//                   (didChange back, didClose) before the session's next check runs;
//                   a pulling server's by that next check, where its patch differs
//   compare         counted by file, message and code, never by line (lines move),
//                   as /v1/diff does (diff/symbol-diff.ts newDiagnostics)
// Isolation: no plain query ever leases a scratch session, checks on one are
// serialized (a per-session chain), and the undo runs as notifications, which are
// written at once whatever the deadline, in `finally` of a check that failed, else
// before the next check's pull; a session that fails mid-check is never reused (the
// pool's rule). Nothing is written to the stored tree.
import { errors, isAppError } from '../errors.js';
import { raceAbort, deadline, type Abortable } from '../util/deadline.js';
import { languageOf } from '../languages.js';
import type { Logger } from '../log.js';
import type { CheckQuery, LspQuery, RootKey } from '../api/schemas.js';
import type { CheckAnswer } from '../api/responses.js';
import { applyFilePatch, parsePatch, PatchApplyError, PatchSyntaxError, PatchTooLargeError, type FilePatch } from '../edit/apply-patch.js';
import { linesOf } from '../edit/unified-diff.js';
import { newDiagnostics, type Diag } from '../diff/symbol-diff.js';
import { mapLimit } from '../ask/ask-service.js';
import type { ScratchContext } from '../lsp/query-service.js';
import type { Session } from '../lsp/session/session.js';
import { treeFileUri } from '../lsp/answer/paths.js';
import type { Position, Range } from '../lsp/wire/lsp-types.js';
import { declarationHolding, touchedDeclarations } from './touched.js';

type Answer = Record<string, unknown> & { incomplete?: boolean };

/** What the check asks of the query service (QueryService satisfies it). */
export interface CheckPort {
  lsp(q: LspQuery, signal: Abortable): Promise<Answer>;
  /** The one admission (src/tenancy/admission.ts): not_ready, busy (the heap budget), need_tree. */
  admit(key: RootKey): void;
  readStored(key: RootKey, path: string): Promise<string | undefined>;
  scratch<T>(key: RootKey, path: string, deadlineAt: number, signal: Abortable, fn: (c: ScratchContext) => Promise<T>): Promise<T>;
}

export interface CheckLimits {
  maxPatchBytes: number;
  maxPatchFiles: number;
  maxPatchHunks: number;
  maxCheckDependents: number;
  /** Top-level declarations of one changed file whose references are asked. */
  maxDeclarations: number;
  /** LSP questions in flight for one check's look-ups. */
  concurrency: number;
  /** The whole check's deadline, as one query's. */
  deadlineMs: number;
  /** LSPD_MAX_ANSWER_BYTES. */
  maxAnswerBytes: number;
}

/** A diagnostic as the answer gives it: the diagnostics op's projection with its path. */
type CheckDiag = Diag & { range: unknown; severity: string; source?: string };

/** One language's part of a patch: checked on its server's scratch session. */
interface Group {
  files: { patch: FilePatch; old: string | undefined; text: string }[];
  dependents: string[];
}

export class CheckService {
  private readonly port: CheckPort;
  private readonly limits: CheckLimits;
  private readonly log: Logger;
  /** The tail of each scratch session's chain of checks: one check at a time changes its documents. */
  private readonly turns = new WeakMap<Session, Promise<void>>();
  /** A pulling scratch session's documents left changed by its last check (see `patched`). */
  private readonly kept = new WeakMap<Session, Map<string, Kept>>();

  constructor(o: { port: CheckPort; limits: CheckLimits; log: Logger }) {
    this.port = o.port;
    this.limits = o.limits;
    this.log = o.log;
  }

  async check(q: CheckQuery, signal: Abortable): Promise<CheckAnswer> {
    const t0 = performance.now();
    const laps = new Laps(t0);
    const key: RootKey = { org: q.org, repo: q.repo, sha: q.sha };
    this.port.admit(key);
    const L = this.limits;
    const bytes = Buffer.byteLength(q.patch);
    if (bytes > L.maxPatchBytes) throw errors.tooLarge(`The patch is ${bytes} bytes, past LSPD_MAX_PATCH_BYTES (${L.maxPatchBytes}).`, 'patch');
    let patches: FilePatch[];
    try {
      patches = parsePatch(q.patch, { maxFiles: L.maxPatchFiles, maxHunks: L.maxPatchHunks });
    } catch (err) {
      if (err instanceof PatchSyntaxError) throw errors.badRequest(`patch: ${err.message}.`, { field: 'patch', line: err.line });
      if (err instanceof PatchTooLargeError) throw errors.tooLarge(`${err.message} (LSPD_MAX_PATCH_FILES, LSPD_MAX_PATCH_HUNKS)`, 'patch');
      throw err;
    }
    const dl = deadline(signal, L.deadlineMs);
    const deadlineAt = Date.now() + L.deadlineMs;
    const notes: string[] = [];
    try {
      // Every file is read and patched before any server is asked: a patch that does not apply costs no LSP work.
      const groups = new Map<string, Group>();
      for (const p of patches) {
        const old = await this.port.readStored(key, p.path);
        let text: string;
        try {
          text = applyFilePatch(p, old);
        } catch (err) {
          if (err instanceof PatchApplyError) throw errors.patchDoesNotApply(`The patch does not apply: ${err.message}.`, err.path, err.hunk);
          throw err;
        }
        const lang = languageOf(p.path);
        if (!lang) {
          notes.push(`${p.path}: no language server serves it; not checked.`);
          continue;
        }
        const g = groups.get(lang.language) ?? { files: [], dependents: [] };
        g.files.push({ patch: p, old, text });
        groups.set(lang.language, g);
      }
      laps.lap('parse');
      let incomplete = false;
      const all = { new: [] as CheckDiag[], fixed: [] as CheckDiag[], unchanged: 0, files: [] as string[] };
      for (const [language, g] of groups) {
        const dep = await this.dependents(key, language, g, dl.signal, notes);
        g.dependents = dep.paths;
        incomplete ||= dep.incomplete;
        laps.lap('dependents');
        const r = await this.checkGroup(key, g, deadlineAt, dl.signal, laps);
        incomplete ||= r.incomplete;
        all.new.push(...r.new);
        all.fixed.push(...r.fixed);
        all.unchanged += r.unchanged;
        all.files.push(...r.files);
      }
      const answer = {
        new: all.new,
        fixed: all.fixed,
        unchanged: all.unchanged,
        files: all.files,
        incomplete,
        untrusted: true as const,
        ...(notes.length ? { notes } : {}),
        elapsed_ms: 0,
      };
      // Bounded as every answer is: the longer list loses its last half until it fits (said by truncated).
      while (Buffer.byteLength(JSON.stringify(answer)) > L.maxAnswerBytes && answer.new.length + answer.fixed.length > 0) {
        const longer = answer.new.length >= answer.fixed.length ? answer.new : answer.fixed;
        longer.length = Math.floor(longer.length / 2);
        (answer as { truncated?: boolean }).truncated = true;
      }
      answer.elapsed_ms = Math.round((performance.now() - t0) * 10) / 10;
      // One line per check: where its time went (bench/edits reads it).
      this.log.info({ root: `${q.org}/${q.repo}/${q.sha}`, ms: answer.elapsed_ms, files: all.files.length, stages: laps.ms, ...laps.counts }, 'check');
      return answer as CheckAnswer;
    } catch (err) {
      if (dl.signal.aborted && !isAppError(err)) throw errors.timeout(`The check did not finish within ${L.deadlineMs} ms; it was cancelled.`);
      throw err;
    } finally {
      dl.clear();
    }
  }

  /**
   * Files of `language` that reference a top-level declaration the patch changes
   * (touched.ts) in a modified or deleted file, by the plain sessions (the stored
   * program): a use of one in a changed file changes the declaration holding it too,
   * so its references are asked in turn. Bounded by maxDeclarations per file and
   * maxCheckDependents in all; a cut is said in `notes`.
   */
  private async dependents(key: RootKey, language: string, g: Group, signal: Abortable, notes: string[]): Promise<{ paths: string[]; incomplete: boolean }> {
    const L = this.limits;
    const changed = new Set(g.files.map((f) => f.patch.path));
    const base = { ...key, encoding: 'utf-16' as const, includeDeclaration: false, context: 0 };
    let incomplete = false;
    type Top = { range?: Range; selectionRange: { start: Position } };
    const decls = new Map<string, Top[]>();
    const stored = g.files.filter((f) => f.patch.change !== 'add');
    await mapLimit(stored, L.concurrency, async (f) => {
      const a = await this.port.lsp({ ...base, op: 'documentSymbols', path: f.patch.path }, signal);
      incomplete ||= a.incomplete === true;
      const symbols = (a.symbols ?? []) as (Partial<Top> & { container?: string })[];
      decls.set(
        f.patch.path,
        symbols.filter((s): s is Top & { container?: string } => s.container === undefined && s.selectionRange !== undefined),
      );
    });
    // Declarations whose references are asked, once each, at most maxDeclarations per file.
    const asked = new Map<string, Set<number>>();
    let next: { path: string; i: number }[] = [];
    const take = (path: string, i: number) => {
      const seen = asked.get(path) ?? asked.set(path, new Set()).get(path)!;
      if (seen.has(i)) return;
      if (seen.size >= L.maxDeclarations) {
        const note = `${path}: references asked at ${L.maxDeclarations} of its ${decls.get(path)!.length} top-level declarations.`;
        if (!notes.includes(note)) notes.push(note);
        return;
      }
      seen.add(i);
      next.push({ path, i });
    };
    const takeAll = (path: string) => decls.get(path)!.forEach((_, i) => take(path, i));
    for (const f of stored) {
      const touched = f.patch.change === 'delete' ? 'all' : touchedDeclarations(f.old ?? '', f.text, decls.get(f.patch.path)!);
      if (touched === 'all') takeAll(f.patch.path);
      else for (const i of touched) take(f.patch.path, i);
    }
    const found = new Set<string>();
    while (next.length > 0) {
      const batch = next;
      next = [];
      await mapLimit(batch, L.concurrency, async (at) => {
        const { start } = decls.get(at.path)![at.i]!.selectionRange;
        const a = await this.port.lsp({ ...base, op: 'references', path: at.path, ...start, limit: 1000 }, signal);
        incomplete ||= a.incomplete === true;
        for (const l of (a.locations ?? []) as { path: string; range: Range; external?: boolean }[]) {
          if (l.external) continue;
          const inChanged = decls.get(l.path);
          if (inChanged) {
            const k = declarationHolding(inChanged, l.range.start);
            if (k === undefined) takeAll(l.path);
            else take(l.path, k);
          } else if (!changed.has(l.path) && languageOf(l.path)?.language === language) found.add(l.path);
        }
      });
    }
    const paths = [...found].sort();
    if (paths.length > L.maxCheckDependents) {
      notes.push(`${paths.length} files depend on the changed ones; the first ${L.maxCheckDependents} (LSPD_MAX_CHECK_DEPENDENTS) were checked.`);
      incomplete = true;
    }
    return { paths: paths.slice(0, L.maxCheckDependents), incomplete };
  }

  /** Before (plain, cached) and after (scratch, patched) diagnostics of one group's files, compared. */
  private async checkGroup(key: RootKey, g: Group, deadlineAt: number, signal: Abortable, laps: Laps) {
    const L = this.limits;
    const dependents = new Map<string, string>();
    for (const path of g.dependents) {
      const text = await this.port.readStored(key, path);
      if (text !== undefined) dependents.set(path, text);
    }
    const checked = [...g.files.filter((f) => f.patch.change !== 'delete').map((f) => f.patch.path), ...dependents.keys()];
    const stored = [...g.files.filter((f) => f.patch.change !== 'add').map((f) => f.patch.path), ...dependents.keys()];
    laps.lap('read');
    let incomplete = false;
    const before: CheckDiag[] = [];
    await mapLimit(stored, L.concurrency, async (path) => {
      const a = await this.port.lsp({ ...key, op: 'diagnostics', path, encoding: 'utf-16', includeDeclaration: true, context: 0 }, signal);
      incomplete ||= a.incomplete === true;
      for (const d of (a.diagnostics ?? []) as Record<string, unknown>[]) before.push({ ...d, path } as CheckDiag);
    });
    laps.lap('before');
    const anchor = g.files.find((f) => f.patch.change !== 'add')?.patch.path ?? g.files[0]!.patch.path;
    const after = await this.port.scratch(key, anchor, deadlineAt, signal, (c) => {
      laps.lap('lease');
      return this.inTurn(c.session, signal, () => (laps.lap('turn'), this.patched(c, g, dependents, checked, laps)));
    });
    incomplete ||= after.incomplete;
    const fresh = newDiagnostics(after.diags, before) as CheckDiag[];
    const fixed = newDiagnostics(before, after.diags) as CheckDiag[];
    laps.lap('compare');
    return { new: fresh, fixed, unchanged: after.diags.length - fresh.length, files: checked, incomplete };
  }

  /** Run `fn` once every earlier check on `s` has finished (undone included). */
  private async inTurn<T>(s: Session, signal: Abortable, fn: () => Promise<T>): Promise<T> {
    const prev = this.turns.get(s) ?? Promise.resolve();
    let done!: () => void;
    const mine = prev.then(() => new Promise<void>((r) => (done = r)));
    this.turns.set(s, mine);
    try {
      await raceAbort(prev, signal);
      return await fn();
    } finally {
      // Also when the wait was abandoned: `mine` still follows `prev`, so the order holds.
      void prev.then(() => done());
      if (this.turns.get(s) === mine) void mine.then(() => this.turns.get(s) === mine && this.turns.delete(s));
    }
  }

  /**
   * On the scratch session, in this check's turn: open, change, read diagnostics, undo.
   * A pulling server's changes are kept after a check that succeeded (`kept`): the next
   * check on the session first reverts what its own patch does not change and sends no
   * didChange for a text the document already has, so the same patch checked again
   * costs the server no new program (TS 7 builds one per change and type-checks every
   * pulled file again in it: 55-75 ms of a 1-file check of lspd's src/, bench/edits).
   * A pushing server's are always undone: its only answer to a change is a push for the
   * new version, so each check changes them anyway.
   */
  private async patched(
    c: ScratchContext,
    g: Group,
    dependents: ReadonlyMap<string, string>,
    checked: readonly string[],
    laps: Laps,
  ): Promise<{ diags: CheckDiag[]; incomplete: boolean }> {
    const s = c.session;
    const idOf = (path: string) => languageOf(path)!.languageId;
    const stored = new Map(dependents);
    // What the session holds beyond the stored tree, taken out: a check that fails undoes it all.
    const held = this.kept.get(s) ?? new Map<string, Kept>();
    this.kept.delete(s);
    let keep = false;
    try {
      // The stored text first, as a query would open it, so the server's view before the change is the root's.
      for (const f of g.files) if (f.old !== undefined) stored.set(f.patch.path, f.old);
      let ready = true;
      const fresh: string[] = [];
      for (const [path, text] of stored) {
        if (!s.isOpen(path)) fresh.push(path);
        const uri = s.open(path, idOf(path), text);
        ready &&= await c.waitReady(uri);
      }
      // A pushing server's first push for a document just opened describes the stored
      // text; taken here, it cannot be mistaken for the patched text's (not every
      // server says which version a push is for). Once per document per session.
      if (!s.pullsDiagnostics) {
        const windowMs = Math.max(0, Math.min(c.diagnosticsWindowMs, c.deadlineAt - Date.now()));
        await Promise.all(fresh.map((path) => s.pushedDiagnostics(treeFileUri(path), windowMs, c.deadline)));
      }
      laps.lap('open');
      laps.count('opened', fresh.length);
      const since = Date.now();
      const versions = new Map<string, number>();
      const mine = new Set(g.files.map((f) => f.patch.path));
      // An earlier check's change this patch does not make: back to the stored tree.
      for (const [path, k] of held) {
        if (mine.has(path)) continue;
        held.delete(path);
        revert(s, path, k);
        laps.count('reverted');
      }
      for (const f of g.files) {
        const path = f.patch.path;
        const was = held.get(path);
        held.set(path, { text: f.text, stored: f.old });
        if (was?.text === f.text && s.pullsDiagnostics) continue;
        if (f.patch.change === 'add' && !was) {
          s.open(path, idOf(path), f.text, { transient: true });
          versions.set(path, 1);
        } else versions.set(path, s.change(path, f.text));
      }
      laps.count('changed', versions.size);
      laps.lap('change');
      const texts = new Map(g.files.map((f) => [f.patch.path, f.text]));
      let incomplete = !ready;
      const diags: CheckDiag[] = [];
      const pushed = async (path: string): Promise<unknown> => {
        // The changed files' own push for their new version; a dependent's next push, else its last.
        const uri = treeFileUri(path);
        const changed = versions.get(path);
        const windowMs = Math.max(0, Math.min(c.diagnosticsWindowMs, c.deadlineAt - Date.now()));
        const pub =
          changed !== undefined
            ? await s.pushedSince(uri, since, changed, windowMs, c.deadline)
            : ((await s.pushedSince(uri, since, s.versionOf(path), Math.min(windowMs, DEPENDENT_PUSH_MS), c.deadline)) ??
              (await s.pushedDiagnostics(uri, windowMs, c.deadline)));
        if (!pub) incomplete = true;
        return pub?.items ?? [];
      };
      const project = async (path: string, raw: unknown) => {
        if (c.deadline.aborted) throw c.deadline.reason as Error;
        const text = texts.get(path);
        const a = await c.diagnostics(raw, path, text === undefined ? undefined : linesOf(text).map((l) => l.replace(/\r?\n$|\r$/, '')));
        for (const d of a.diagnostics) diags.push({ path, ...d });
      };
      if (s.pullsDiagnostics) {
        // All at once: the server checks them together, and what it sends meanwhile
        // (progress, refresh requests) is shared among the requests waiting (the
        // transport's per-request budget), not charged to one. (One at a time, TS 7
        // shares one type checker among them, but its CPU per check was no less and the
        // round trips under load made it slower: measured by the jail's CPU, bench/edits.)
        const raws = await Promise.all(checked.map((path) => s.request('textDocument/diagnostic', { textDocument: { uri: treeFileUri(path) } }, c.deadline)));
        laps.lap('pull');
        for (const [i, path] of checked.entries()) await project(path, raws[i]);
        laps.lap('project');
        keep = true;
      } else {
        // Changed files first: a pushing server analyses them before their dependents.
        for (const path of checked) await project(path, await pushed(path));
        laps.lap('pushed');
      }
      return { diags, incomplete };
    } finally {
      if (keep) this.kept.set(s, held);
      else {
        for (const [path, k] of held) {
          try {
            revert(s, path, k);
          } catch (err) {
            // The session ended: nothing to undo on it, and the pool never reuses it.
            this.log.debug({ err: (err as Error).message }, 'check undo on an ended session');
          }
        }
        if (s.state.kind === 'ready') s.forgetUnopenedDiagnostics();
      }
    }
  }
}

/** Where one check's time went, stage by stage (ms, summed over its languages), and what it sent: its log line. */
class Laps {
  readonly ms: Record<string, number> = {};
  readonly counts: Record<string, number> = {};
  constructor(private at: number) {}
  lap(stage: string): void {
    const now = performance.now();
    this.ms[stage] = Math.round(((this.ms[stage] ?? 0) + now - this.at) * 10) / 10;
    this.at = now;
  }
  count(what: string, n = 1): void {
    this.counts[what] = (this.counts[what] ?? 0) + n;
  }
}

/** A document a check changed, as the scratch session holds it: its text there and in the tree (undefined: added by the patch). */
interface Kept {
  text: string;
  stored: string | undefined;
}

/** Back to the stored tree: an added file closed, any other changed back (notifications: written at once whatever the deadline). */
function revert(s: Session, path: string, k: Kept): void {
  if (k.stored === undefined) s.closeDocument(path);
  else s.change(path, k.stored);
}

/** How long a pushing server is given to push a dependent again after a change before its last push is taken. */
const DEPENDENT_PUSH_MS = 1000;
