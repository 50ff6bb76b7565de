// Line texts for one projection: previews, context lines, and the line texts that
// position-encoding conversion needs. The caller owns the I/O (`ReadLines`: it
// maps a coordinate to a host file via paths.hostPathOf and reads it); this module
// only decides which lines to ask for, asks once per span, caches, and bounds what
// it keeps. Only tree and external coordinates can reach ReadLines: an `other`
// location has no FileCoordinate, so its file can never be read.
import type { FileCoordinate, MaybePromise } from './coordinates.js';
import { coordinateKey } from './coordinates.js';
import type { Range } from '../wire/lsp-types.js';
import { convertRange, type Encoding } from '../wire/encoding.js';

/**
 * Read lines [startLine, startLine + count) of a file: texts without terminators
 * (split as encoding.splitLines does), fewer at the end of the file, undefined when
 * the file cannot be read.
 */
export type ReadLines = (coord: FileCoordinate, startLine: number, count: number) => MaybePromise<readonly string[] | undefined>;

/** Lines closer than this are read in one span rather than two calls. */
const SPAN_GAP = 16;
/** Files read at once. */
const READ_CONCURRENCY = 8;
/** Longest preview or context line; longer lines (minified code) are windowed. */
export const PREVIEW_MAX_CHARS = 400;

/** A span's read that did not answer at once. */
type Pending = { start: number; got: Promise<readonly string[] | undefined> };

export class LineReader {
  readonly #read: ReadLines;
  readonly #files = new Map<string, Map<number, string>>();
  readonly #wanted = new Map<string, { coord: FileCoordinate; lines: Set<number> }>();
  /** The last coordinate keyed and its key: a location asks about one file five or six times in a row. */
  #lastCoord: FileCoordinate | undefined;
  #lastKey = '';

  constructor(read: ReadLines) {
    this.#read = read;
  }

  /** Note lines to be loaded by the next `load()`. */
  want(coord: FileCoordinate, ...lines: number[]): void {
    const key = this.#keyOf(coord);
    let w = this.#wanted.get(key);
    if (!w) this.#wanted.set(key, (w = { coord, lines: new Set() }));
    for (const l of lines) if (Number.isSafeInteger(l) && l >= 0) w.lines.add(l);
  }

  /** Want the lines a range's conversion needs. */
  wantRange(coord: FileCoordinate, r: Range): void {
    this.want(coord, r.start.line, r.end.line);
  }

  /** Read every wanted line not yet cached, a few files at a time; lines the reader holds are taken in this turn. */
  async load(): Promise<void> {
    // Files under way first: the workers take them before starting any other read, so
    // no more than READ_CONCURRENCY reads are ever under way at once.
    const asked: [string, { coord: FileCoordinate; lines: Set<number> }, Pending | undefined][] = [];
    const rest: typeof asked = [];
    for (const [key, w] of this.#wanted) {
      if (asked.length >= READ_CONCURRENCY) rest.push([key, w, undefined]);
      else {
        const pending = this.#takeHeld(key, w.coord, w.lines);
        if (pending) asked.push([key, w, pending]);
      }
    }
    this.#wanted.clear();
    const jobs = [...asked, ...rest];
    if (jobs.length === 0) return;
    let next = 0;
    // An argument, not a named arrow: no name defined per load (util/deadline.ts).
    await Promise.all(
      Array.from({ length: Math.min(READ_CONCURRENCY, jobs.length) }, async () => {
        while (next < jobs.length) {
          const [key, { coord, lines }, pending] = jobs[next++]!;
          await this.#loadFile(key, coord, lines, pending);
        }
      }),
    );
  }

  /** The spans of a file still to read, in order, each [start, count]. */
  #spans(key: string, lines: Set<number>): [number, number][] {
    let cache = this.#files.get(key);
    if (!cache) this.#files.set(key, (cache = new Map()));
    const todo = [...lines].filter((l) => !cache.has(l)).sort((a, b) => a - b);
    const spans: [number, number][] = [];
    for (let i = 0; i < todo.length;) {
      let j = i;
      while (j + 1 < todo.length && todo[j + 1]! - todo[j]! <= SPAN_GAP) j++;
      spans.push([todo[i]!, todo[j]! - todo[i]! + 1]);
      i = j + 1;
    }
    return spans;
  }

  /** Take what the reader gives at once (lines it holds); the first read it could not answer at once, if any. */
  #takeHeld(key: string, coord: FileCoordinate, lines: Set<number>): Pending | undefined {
    for (const [start, count] of this.#spans(key, lines)) {
      let got: ReturnType<ReadLines>;
      try {
        got = this.#read(coord, start, count);
      } catch {
        continue; // unreadable: previews are omitted, positions pass through
      }
      if (got instanceof Promise) return { start, got: got.catch(() => undefined) }; // unreadable, as below
      this.#keep(key, start, count, got);
    }
    return undefined;
  }

  /** Read the file's spans still wanted; `asked`: the read of one of them, already under way. */
  async #loadFile(key: string, coord: FileCoordinate, lines: Set<number>, asked?: Pending): Promise<void> {
    for (const [start, count] of this.#spans(key, lines)) {
      let got: readonly string[] | undefined;
      try {
        got = await (asked?.start === start ? asked.got : this.#read(coord, start, count));
      } catch {
        got = undefined; // unreadable: previews are omitted, positions pass through
      }
      this.#keep(key, start, count, got);
    }
  }

  #keep(key: string, start: number, count: number, got: readonly string[] | undefined): void {
    const cache = this.#files.get(key)!;
    if (!Array.isArray(got)) return;
    for (let k = 0; k < Math.min(count, got.length); k++) {
      const t: unknown = got[k];
      // a trailing \r cannot be line content: LSP counts it as a terminator
      if (typeof t === 'string') cache.set(start + k, t.endsWith('\r') ? t.slice(0, -1) : t);
    }
  }

  /** A loaded line's text, or undefined (not loaded, past the end, unreadable). */
  line(coord: FileCoordinate, n: number): string | undefined {
    return this.#files.get(this.#keyOf(coord))?.get(n);
  }

  #keyOf(coord: FileCoordinate): string {
    if (coord !== this.#lastCoord) {
      this.#lastKey = coordinateKey(coord);
      this.#lastCoord = coord;
    }
    return this.#lastKey;
  }

  /** Convert a range of a loaded file between encodings (see encoding.convertRange). */
  convert(coord: FileCoordinate, r: Range, from: Encoding, to: Encoding): Range {
    return convertRange(r, (n) => this.line(coord, n), from, to);
  }
}

const isLow = (s: string, i: number) => {
  const c = s.charCodeAt(i);
  return c >= 0xdc00 && c <= 0xdfff;
};

/**
 * A line as shown to callers: whole when short; a window around `at` (a UTF-16
 * index) with `…` marks when longer than PREVIEW_MAX_CHARS, never splitting a
 * surrogate pair.
 */
export function previewLine(line: string, at = 0): string {
  if (line.length <= PREVIEW_MAX_CHARS) return line;
  let start = Math.max(0, Math.min(at - 80, line.length - PREVIEW_MAX_CHARS));
  if (start > 0 && isLow(line, start)) start++;
  let end = Math.min(line.length, start + PREVIEW_MAX_CHARS);
  if (end < line.length && isLow(line, end)) end--;
  return (start > 0 ? '…' : '') + line.slice(start, end) + (end < line.length ? '…' : '');
}
