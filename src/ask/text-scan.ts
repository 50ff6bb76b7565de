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
 */
export function findOccurrences(text: string, leaf: string, qualifiers: readonly string[], max = 8): Occurrence[] {
  const lines = splitLines(text);
  const inner = qualifiers[qualifiers.length - 1];
  const found: Occurrence[] = [];
  for (let n = 0; n < lines.length; n++) {
    const line = lines[n]!;
    if (!line.includes(leaf)) continue;
    for (const col of wordColumns(line, leaf)) {
      const head = line.slice(0, col);
      const qualified = inner !== undefined && new RegExp(`(?:^|[^\\p{L}\\p{N}_$])${escapeRe(inner)}\\s*(?:\\.|::|->|#|\\\\)\\s*$`, 'u').test(head);
      let rank = 3;
      if (COMMENT_LINE.test(line)) rank = 6;
      else if (qualified) rank = 0;
      else if (IMPORT_LINE.test(line)) rank = 1;
      else if (/^\s*\(/.test(line.slice(col + leaf.length))) rank = 2;
      found.push({ line: n, character: col, rank, qualified });
    }
  }
  // Stable by rank: within a rank, file order (earlier uses tend to be imports/declarations).
  return found.sort((a, b) => a.rank - b.rank || a.line - b.line || a.character - b.character).slice(0, max);
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

function escapeRe(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
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
