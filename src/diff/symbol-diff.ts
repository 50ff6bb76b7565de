// The pure half of POST /v1/diff: which lines of a file a change touched, which of
// its document symbols were added, removed or changed, which references at base
// lie outside the change, and which diagnostics at head are new. No I/O here: the
// service (diff-service.ts) feeds it the two files' texts and the servers' answers.
//
// Symbols are matched by qualified name (container chain + name) and kind, the
// n-th of a repeated name (overloads) with the n-th. A symbol is "changed" when
// its own text changed, whitespace aside: the text of its range with its children's
// ranges cut out, so a class is not changed because one of its methods was (the
// method is), and a symbol that only moved (lines shifted above it) is unchanged.

import type { Position, Range } from '../lsp/wire/lsp-types.js';

/** A document symbol as /v1/code/lsp documentSymbols renders it (ranges in UTF-16 units). */
export interface DocSymbol {
  name: string;
  kind: string | number;
  container?: string;
  range?: Range;
  selectionRange?: Range;
}

export type SymbolChangeKind = 'added' | 'removed' | 'changed';

export interface SymbolChange {
  /** container.name, as /ask matches qualified names. */
  qualified: string;
  name: string;
  kind: string | number;
  path: string;
  change: SymbolChangeKind;
  /** changed: the declaration's head (up to its body) differs, not only its body. */
  signature_changed?: boolean;
  /** Where it is at base (removed, changed) and at head (added, changed). */
  base?: { range: Range; selectionRange?: Range; signature: string };
  head?: { range: Range; selectionRange?: Range; signature: string };
}

/** Past this many cells the middle of a line diff is not aligned: all of it counts as changed (a bound on work a tree controls). */
export const MAX_LCS_CELLS = 4_000_000;
/** Longest signature kept in an answer. */
const MAX_SIGNATURE_CHARS = 300;

/**
 * The zero-based lines of `base` that `head` does not keep (a line diff: common
 * prefix and suffix, then a longest common subsequence of the rest). Lines only
 * inserted at head change no base line.
 */
export function changedBaseLines(base: string, head: string): Set<number> {
  return baseLineEdits(base, head).changed;
}

/**
 * changedBaseLines, and the lines head inserts, by the base line they come before
 * (base's line count: at its end). Past MAX_LCS_CELLS every middle line is changed
 * and head's middle inserted before the first of them.
 */
export function baseLineEdits(base: string, head: string): { changed: Set<number>; inserted: Map<number, string[]> } {
  const a = base.split('\n');
  const b = head.split('\n');
  let pre = 0;
  while (pre < a.length && pre < b.length && a[pre] === b[pre]) pre++;
  let suf = 0;
  while (suf < a.length - pre && suf < b.length - pre && a[a.length - 1 - suf] === b[b.length - 1 - suf]) suf++;
  const am = a.slice(pre, a.length - suf);
  const bm = b.slice(pre, b.length - suf);
  const changed = new Set<number>();
  const inserted = new Map<number, string[]>();
  const insert = (before: number, line: string) => (inserted.get(before) ?? inserted.set(before, []).get(before)!).push(line);
  if (am.length === 0 || bm.length === 0 || am.length * bm.length > MAX_LCS_CELLS) {
    for (let i = 0; i < am.length; i++) changed.add(pre + i);
    for (const line of bm) insert(pre, line);
    return { changed, inserted };
  }
  // Suffix LCS lengths, one row per base line (row-major in one typed array).
  const w = bm.length + 1;
  const L = new Uint32Array((am.length + 1) * w);
  for (let i = am.length - 1; i >= 0; i--) {
    for (let j = bm.length - 1; j >= 0; j--) {
      L[i * w + j] = am[i] === bm[j] ? L[(i + 1) * w + j + 1]! + 1 : Math.max(L[(i + 1) * w + j]!, L[i * w + j + 1]!);
    }
  }
  let i = 0;
  let j = 0;
  while (i < am.length || j < bm.length) {
    if (i < am.length && j < bm.length && am[i] === bm[j]) {
      i++;
      j++;
    } else if (j < bm.length && (i >= am.length || L[i * w + j + 1]! >= L[(i + 1) * w + j]!)) insert(pre + i, bm[j++]!);
    else changed.add(pre + i++);
  }
  return { changed, inserted };
}

export function qualifiedName(s: { name: string; container?: string }): string {
  return s.container ? `${s.container}.${s.name}` : s.name;
}

/** Offsets of each line's start, to turn (line, character) into a string index. */
function lineStarts(text: string): number[] {
  const starts = [0];
  for (let i = text.indexOf('\n'); i >= 0; i = text.indexOf('\n', i + 1)) starts.push(i + 1);
  return starts;
}

function offsetOf(starts: number[], text: string, p: Position): number {
  if (p.line >= starts.length) return text.length;
  return Math.min(starts[p.line]! + p.character, p.line + 1 < starts.length ? starts[p.line + 1]! : text.length);
}

const inside = (inner: Range, outer: Range): boolean =>
  (inner.start.line > outer.start.line || (inner.start.line === outer.start.line && inner.start.character >= outer.start.character)) &&
  (inner.end.line < outer.end.line || (inner.end.line === outer.end.line && inner.end.character <= outer.end.character));

interface Content {
  sym: DocSymbol & { range: Range };
  key: string;
  /** Its own text, children cut out, whitespace collapsed. */
  text: string;
  signature: string;
}

/** Each symbol's own text in `text`, keyed by qualified name, kind and occurrence. */
export function symbolContents(text: string, symbols: readonly DocSymbol[]): Map<string, Content> {
  const starts = lineStarts(text);
  const withRange = symbols.filter((s): s is DocSymbol & { range: Range } => s.range !== undefined);
  const seen = new Map<string, number>();
  const out = new Map<string, Content>();
  for (const sym of withRange) {
    const q = qualifiedName(sym);
    const base = `${q}\u0000${String(sym.kind)}`;
    const n = (seen.get(base) ?? 0) + 1;
    seen.set(base, n);
    const key = n === 1 ? base : `${base}\u0000${n}`;
    const from = offsetOf(starts, text, sym.range.start);
    const to = Math.max(from, offsetOf(starts, text, sym.range.end));
    // Direct children: the symbols whose container is this one and whose range lies inside it.
    const cuts = withRange
      .filter((c) => c !== sym && c.container === q && inside(c.range, sym.range))
      .map((c) => [offsetOf(starts, text, c.range.start), offsetOf(starts, text, c.range.end)] as const)
      .sort((x, y) => x[0] - y[0]);
    let own = '';
    let at = from;
    for (const [s, e] of cuts) {
      if (s < at) continue;
      own += text.slice(at, s) + '\u0000';
      at = Math.max(at, e);
    }
    own += text.slice(at, to);
    const raw = text.slice(from, to);
    const brace = raw.indexOf('{');
    const head = brace >= 0 ? raw.slice(0, brace) : raw.split('\n')[0]!;
    out.set(key, { sym, key, text: collapse(own), signature: collapse(head).slice(0, MAX_SIGNATURE_CHARS) });
  }
  return out;
}

const collapse = (s: string): string => s.replace(/\s+/g, ' ').trim();

const where = (c: Content) => ({
  range: c.sym.range,
  ...(c.sym.selectionRange ? { selectionRange: c.sym.selectionRange } : {}),
  signature: c.signature,
});

/**
 * The symbols of one file added, removed and changed between base and head, in
 * the order they appear (base's, then head's additions). A file absent at one side
 * is given as undefined there (every symbol of the other side is added or removed).
 */
export function diffSymbols(
  path: string,
  base: { text: string; symbols: readonly DocSymbol[] } | undefined,
  head: { text: string; symbols: readonly DocSymbol[] } | undefined,
): SymbolChange[] {
  const a = base ? symbolContents(base.text, base.symbols) : new Map<string, Content>();
  const b = head ? symbolContents(head.text, head.symbols) : new Map<string, Content>();
  const out: SymbolChange[] = [];
  const row = (c: Content, change: SymbolChangeKind): SymbolChange => ({
    qualified: qualifiedName(c.sym),
    name: c.sym.name,
    kind: c.sym.kind,
    path,
    change,
  });
  for (const [key, was] of a) {
    const now = b.get(key);
    if (!now) out.push({ ...row(was, 'removed'), base: where(was) });
    else if (now.text !== was.text)
      out.push({ ...row(was, 'changed'), signature_changed: now.signature !== was.signature, base: where(was), head: where(now) });
  }
  for (const [key, now] of b) if (!a.has(key)) out.push({ ...row(now, 'added'), head: where(now) });
  return out;
}

/** A location an LSP answer gave (path + range; preview and more ride along). */
export interface Loc {
  path: string;
  range: Range;
  external?: boolean;
  [k: string]: unknown;
}

/**
 * References at base that may break: in the tree (not a dependency), in a file head
 * still has, and not on a line the change itself rewrote (those are the change).
 */
export function outsideChange(locs: readonly Loc[], changed: ReadonlyMap<string, ReadonlySet<number>>, removed: ReadonlySet<string>): Loc[] {
  return locs.filter((l) => {
    if (l.external || removed.has(l.path)) return false;
    const lines = changed.get(l.path);
    if (!lines) return true;
    for (let line = l.range.start.line; line <= l.range.end.line; line++) if (lines.has(line)) return false;
    return true;
  });
}

export interface Diag {
  path: string;
  message: string;
  code?: string | number;
  [k: string]: unknown;
}

const diagKey = (d: Diag) => `${d.path}\u0000${d.message}\u0000${d.code === undefined ? '' : String(d.code)}`;

/**
 * Diagnostics at head that base did not have, matched by file, message and code
 * (never by line: lines move). Counted: two identical errors at head where base had
 * one leaves one new.
 */
export function newDiagnostics(head: readonly Diag[], base: readonly Diag[]): Diag[] {
  const left = new Map<string, number>();
  for (const d of base) left.set(diagKey(d), (left.get(diagKey(d)) ?? 0) + 1);
  return head.filter((d) => {
    const k = diagKey(d);
    const n = left.get(k) ?? 0;
    if (n === 0) return true;
    left.set(k, n - 1);
    return false;
  });
}
