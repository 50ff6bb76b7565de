// Position encodings: converting LSP `character` offsets between UTF-16 code units
// (the LSP default), UTF-8 bytes and Unicode code points, given the text of the line.
//
// Why this exists: servers negotiate their unit at initialize (TS 7 takes utf-8 when
// offered, clangd has its own `offsetEncoding`, the rest only speak utf-16) and the
// caller picks its own with `encoding` (API.md "Conventions"). We convert at the edge.
// https://microsoft.github.io/language-server-protocol/specifications/lsp/3.17/specification/#positionEncodingKind
//
// Rules, all from the spec or forced by untrusted input:
// - A character past the end of the line "defaults back to the line length"; a
//   negative, fractional or non-numeric one becomes 0 / is floored.
// - An offset that lands inside a character (between the halves of a surrogate pair,
//   or inside a multi-byte UTF-8 sequence) snaps to a character boundary: down for a
//   start, up for a range end, so a range never loses the character it touched.
// - Line text is the line without its terminator (\n, \r\n or \r; see `splitLines`).
// - A lone surrogate (a JS string can hold one; a file decoded from UTF-8 cannot) is
//   counted as the U+FFFD it would become in UTF-8: 1 UTF-16 unit, 3 bytes, 1 code point.
// - With no line text (file unreadable), a character passes through unchanged: exact
//   for ASCII lines, which is the best that can be done without the text.
import type { Position, Range } from './lsp-types.js';

/** The caller's units (schemas.ts `encoding`); utf-32 in LSP terms is `codepoint`. */
export type Encoding = 'utf-16' | 'utf-8' | 'codepoint';
export type Snap = 'floor' | 'ceil';

/** Map an LSP PositionEncodingKind (or clangd offsetEncoding) to ours; anything unknown is the utf-16 default. */
export function encodingFromLsp(kind: unknown): Encoding {
  if (kind === 'utf-8') return 'utf-8';
  if (kind === 'utf-32') return 'codepoint';
  return 'utf-16';
}

export function encodingToLsp(e: Encoding): 'utf-8' | 'utf-16' | 'utf-32' {
  return e === 'codepoint' ? 'utf-32' : e;
}

// eslint-disable-next-line no-control-regex
const ASCII = /^[\x00-\x7f]*$/;

function sanitize(character: unknown): number {
  if (typeof character !== 'number' || !(character > 0)) return 0; // NaN, negative, non-number
  return character === Infinity ? Number.MAX_SAFE_INTEGER : Math.floor(character);
}

const isHigh = (c: number) => c >= 0xd800 && c <= 0xdbff;
const isLow = (c: number) => c >= 0xdc00 && c <= 0xdfff;

/** Width of the character starting at JS index i: [utf-16 units, utf-8 bytes]. */
function widthAt(line: string, i: number): [number, number] {
  const c = line.charCodeAt(i);
  if (c < 0x80) return [1, 1];
  if (c < 0x800) return [1, 2];
  if (isHigh(c) && i + 1 < line.length && isLow(line.charCodeAt(i + 1))) return [2, 4];
  return [1, 3]; // BMP, or a lone surrogate counted as U+FFFD
}

/**
 * The JS string index (UTF-16 code units) of `character` given in `from` units,
 * clamped to [0, line.length] and snapped to a character boundary.
 */
export function toUtf16Index(line: string, character: number, from: Encoding, snap: Snap = 'floor'): number {
  const want = sanitize(character);
  // Code points and UTF-16 units never outnumber the line's length; bytes can.
  if (from !== 'utf-8' && want >= line.length) return line.length;
  // UTF-16 units are string indices: only the middle of a surrogate pair moves (most
  // answers: the server's units are the caller's, no line needs scanning).
  if (from === 'utf-16') return want > 0 && isLow(line.charCodeAt(want)) && isHigh(line.charCodeAt(want - 1)) ? (snap === 'floor' ? want - 1 : want + 1) : want;
  if (ASCII.test(line)) return Math.min(want, line.length);
  let units = 0; // position in `from` units of index i
  for (let i = 0; i < line.length;) {
    if (units === want) return i;
    const [u16, u8] = widthAt(line, i);
    const step = from === 'utf-8' ? u8 : 1; // utf-16 returned above
    if (units + step > want) return snap === 'floor' ? i : i + u16; // inside this character
    units += step;
    i += u16;
  }
  return line.length;
}

/** `index` (a JS string index, clamped and snapped down to a boundary) expressed in `to` units. */
export function fromUtf16Index(line: string, index: number, to: Encoding): number {
  let end = Math.min(sanitize(index), line.length);
  if (end > 0 && end < line.length && isLow(line.charCodeAt(end)) && isHigh(line.charCodeAt(end - 1))) end--;
  if (to === 'utf-16' || ASCII.test(line)) return end;
  let n = 0;
  for (let i = 0; i < end;) {
    const [u16, u8] = widthAt(line, i);
    n += to === 'utf-8' ? u8 : 1;
    i += u16;
  }
  return n;
}

/** Convert one `character` of a line between encodings (clamped, snapped). */
export function convertCharacter(line: string, character: number, from: Encoding, to: Encoding, snap: Snap = 'floor'): number {
  return fromUtf16Index(line, toUtf16Index(line, character, from, snap), to);
}

/** Convert a position; `line` is that line's text, or undefined when unknown (passes through). */
export function convertPosition(pos: Position, line: string | undefined, from: Encoding, to: Encoding, snap: Snap = 'floor'): Position {
  const l = sanitize(pos.line);
  if (line === undefined) return { line: l, character: sanitize(pos.character) };
  return { line: l, character: convertCharacter(line, pos.character, from, to, snap) };
}

/**
 * Convert a range; `lineAt(n)` gives line n's text (undefined when unknown). The
 * start snaps down and the end up. An end before its start (a confused server) is
 * set to the start, so every range we answer is well-formed.
 */
export function convertRange(range: Range, lineAt: (line: number) => string | undefined, from: Encoding, to: Encoding): Range {
  const start = convertPosition(range.start, lineAt(sanitize(range.start.line)), from, to, 'floor');
  let end = convertPosition(range.end, lineAt(sanitize(range.end.line)), from, to, 'ceil');
  if (end.line < start.line || (end.line === start.line && end.character < start.character)) end = { ...start };
  return { start, end };
}

/** Split text into lines the way LSP counts them: \n, \r\n and \r each end a line. */
export function splitLines(text: string): string[] {
  return text.split(/\r\n|\r|\n/);
}

/** Bytes of `s` in UTF-8 (lone surrogates count as the 3-byte U+FFFD). */
export function utf8Length(s: string): number {
  return Buffer.byteLength(s, 'utf8');
}

/**
 * The longest prefix of `s` whose UTF-8 encoding fits in `maxBytes`, cut on a
 * character boundary (never between the halves of a surrogate pair).
 */
export function truncateUtf8(s: string, maxBytes: number): string {
  const max = Math.max(0, Math.floor(maxBytes));
  if (s.length <= max / 3 || utf8Length(s) <= max) return s;
  let bytes = 0;
  let i = 0;
  while (i < s.length) {
    const [u16, u8] = widthAt(s, i);
    if (bytes + u8 > max) break;
    bytes += u8;
    i += u16;
  }
  return s.slice(0, i);
}
