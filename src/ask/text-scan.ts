// Pure text helpers for /ask: find where an identifier occurs in a file (to put a
// position under it before asking the server), and convert a column between
// UTF-16 code units (JS string indices) and the caller's `encoding`. The text only
// picks positions; what a name *is* is always decided by the language server.

export type Encoding = 'utf-16' | 'utf-8' | 'codepoint';

export interface Pos {
  line: number;
  character: number;
}

export interface Occurrence extends Pos {
  /** Why this occurrence is a good probe; lower sorts first. */
  rank: number;
  /** The qualifier text right before it matched (`dep.Greet`, `Server::close`). */
  qualified: boolean;
}

// Identifier characters across the languages lspd serves ($ for JS/PHP).
const WORD = /[\p{L}\p{N}_$]/u;

function isWordAt(line: string, i: number): boolean {
  if (i < 0 || i >= line.length) return false;
  // A surrogate pair is one letter; test the whole code point.
  const cp = line.codePointAt(i);
  if (cp === undefined) return false;
  return WORD.test(String.fromCodePoint(cp));
}

/** Split into lines the way LSP counts them (\n, \r\n, \r). */
export function splitLines(text: string): string[] {
  return text.split(/\r\n|\r|\n/);
}

/** Whole-word occurrences of `name` on one line, as UTF-16 columns. */
export function wordColumns(line: string, name: string): number[] {
  const out: number[] = [];
  if (name === '') return out;
  for (let i = line.indexOf(name); i >= 0; i = line.indexOf(name, i + 1)) {
    const before = i - 1;
    // Step back over a low surrogate so the test sees the whole code point.
    const b = before > 0 && /[\uDC00-\uDFFF]/.test(line[before]!) ? before - 1 : before;
    if (!isWordAt(line, b) && !isWordAt(line, i + name.length)) out.push(i);
  }
  return out;
}

const IMPORT_LINE = /^\s*(import\b|from\s+\S+\s+import\b|export\s+.*\bfrom\b|use\b|require\b|#include\b|using\b)|\brequire\s*\(/;
const COMMENT_LINE = /^\s*(\/\/|#(?!include)|\*|\/\*|--|;)/;

/**
 * Probe positions for `leaf` in a file, best first: a use qualified as asked
 * (`dep.Greet`, `Server.close`), then import lines (they name where a name comes
 * from), then calls/uses, and comment lines last. At most `max`.
 *
 * Linear in the text whatever it holds: each line is classified once, each
 * occurrence looks only at the blanks and separator right before and after it,
 * and only the first `max` of each rank are kept (the best `max` are among them),
 * so a 2 MiB line holding the name a million times costs one pass, not a million
 * passes over the line (which is what matching a pattern against everything
 * before each occurrence cost).
 */
export function findOccurrences(text: string, leaf: string, qualifiers: readonly string[], max = 8): Occurrence[] {
  const lines = splitLines(text);
  const inner = qualifiers[qualifiers.length - 1];
  const byRank: Occurrence[][] = [];
  for (let n = 0; n < lines.length; n++) {
    const line = lines[n]!;
    if (!line.includes(leaf)) continue;
    const comment = COMMENT_LINE.test(line);
    let importLine: boolean | undefined;
    for (const col of wordColumns(line, leaf)) {
      const qualified = inner !== undefined && qualifiedAt(line, col, inner);
      let rank = 3;
      if (comment) rank = 6;
      else if (qualified) rank = 0;
      else if ((importLine ??= IMPORT_LINE.test(line))) rank = 1;
      else if (isCallAt(line, col + leaf.length)) rank = 2;
      const kept = (byRank[rank] ??= []);
      if (kept.length < max) kept.push({ line: n, character: col, rank, qualified });
    }
    // Nothing can rank above `max` qualified uses already found.
    if ((byRank[0]?.length ?? 0) >= max) break;
  }
  // Within a rank, file order (earlier uses tend to be imports/declarations).
  return byRank.flatMap((r) => r ?? []).slice(0, max);
}

const BLANK = /\s/u;

/** `inner`, blanks, a separator (. :: -> # \\), blanks, then column `col`: `dep.greet`, `Server::close`. */
function qualifiedAt(line: string, col: number, inner: string): boolean {
  let i = col;
  while (i > 0 && BLANK.test(line[i - 1]!)) i--;
  if (line.endsWith('::', i) || line.endsWith('->', i)) i -= 2;
  else if (i > 0 && '.#\\'.includes(line[i - 1]!)) i -= 1;
  else return false;
  while (i > 0 && BLANK.test(line[i - 1]!)) i--;
  if (!line.endsWith(inner, i)) return false;
  // The qualifier is a whole word: no identifier character runs into it.
  const before = i - inner.length - 1;
  const b = before > 0 && /[\uDC00-\uDFFF]/.test(line[before]!) ? before - 1 : before;
  return !isWordAt(line, b);
}

/** Blanks then `(` from column `at`. */
function isCallAt(line: string, at: number): boolean {
  let i = at;
  while (i < line.length && BLANK.test(line[i]!)) i++;
  return line[i] === '(';
}

/**
 * The first whole-word `leaf` at or after `from` (a UTF-16 position), within
 * `maxLines` lines: where the declaration's name is, given the start of its range
 * (which may be `export async function` or a decorator).
 */
export function findNameFrom(text: string, leaf: string, from: Pos, maxLines = 50): Pos | undefined {
  const lines = splitLines(text);
  for (let n = from.line; n < lines.length && n < from.line + maxLines; n++) {
    const cols = wordColumns(lines[n]!, leaf).filter((c) => n > from.line || c >= from.character);
    if (cols.length > 0) return { line: n, character: cols[0]! };
  }
  return undefined;
}

/** A UTF-16 column → the caller's unit, counted over the line's prefix. */
export function fromUtf16(line: string, col: number, enc: Encoding): number {
  if (enc === 'utf-16') return col;
  const prefix = line.slice(0, col);
  if (enc === 'utf-8') return Buffer.byteLength(prefix, 'utf8');
  let n = 0;
  for (const _ of prefix) n++;
  return n;
}

/** The caller's unit → a UTF-16 column (clamped to the line). */
export function toUtf16(line: string, col: number, enc: Encoding): number {
  if (enc === 'utf-16') return Math.min(col, line.length);
  let units = 0;
  let seen = 0;
  for (const ch of line) {
    if (seen >= col) break;
    seen += enc === 'utf-8' ? Buffer.byteLength(ch, 'utf8') : 1;
    units += ch.length;
  }
  return units;
}
