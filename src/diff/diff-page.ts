// One page of a /v1/diff answer. A diff's lists (changed files, symbol changes, new
// diagnostics, impact) are paged as one sequence in that order, so one offset names
// where a page starts and a cursor walks every item of every list exactly once:
// page 1 of a small diff holds everything but the impact past `limit`; a diff of
// 20,000 changed files is as many pages as its bytes need. A page stops at
// LSPD_MAX_ANSWER_BYTES (the answer's other fields counted first), at a list's
// per-page count, or at the end. An item larger than a page can ever hold is left out
// and said so, so paging always moves on. Pure: the service gives the lists and the
// bytes the rest of its answer takes.
import { utf8Length } from '../lsp/wire/encoding.js';

export const SECTIONS = ['files', 'symbols', 'diagnostics', 'impact'] as const;
export type Section = (typeof SECTIONS)[number];

export type DiffLists = Record<Section, readonly unknown[]>;

export interface PageBounds {
  /** The whole answer's bound (LSPD_MAX_ANSWER_BYTES). */
  maxAnswerBytes: number;
  /** What the answer takes with every list empty: its fixed fields at their largest (cursor, flags, notes). */
  fixedBytes: number;
  /** Most items of each list in one page. */
  perPage: Record<Section, number>;
}

export interface DiffPage {
  lists: Record<Section, unknown[]>;
  /** Offset of the first item not in this page (the total when none is left). */
  end: number;
  /** What was left out for being larger than any page, for the answer's notes. */
  leftOut?: string;
}

/** Room a page keeps for its `leftOut` note. */
export const LEFT_OUT_NOTE_BYTES = 160;

/** Items of all lists together. */
export function totalOf(lists: DiffLists): number {
  return SECTIONS.reduce((n, s) => n + lists[s].length, 0);
}

/** The page of `lists` starting at `offset` (0 ≤ offset ≤ totalOf(lists)). */
export function cutPage(lists: DiffLists, offset: number, b: PageBounds): DiffPage {
  const out: Record<Section, unknown[]> = { files: [], symbols: [], diagnostics: [], impact: [] };
  const room = b.maxAnswerBytes - b.fixedBytes;
  let left = room;
  let leftOut: string | undefined;
  let sectionStart = 0;
  let i = offset;
  page: for (const s of SECTIONS) {
    const list = lists[s];
    const sectionEnd = sectionStart + list.length;
    while (i < sectionEnd) {
      if (out[s].length >= b.perPage[s]) break page;
      const item = list[i - sectionStart];
      // One more item in a JSON array: its own bytes and a comma.
      const cost = utf8Length(JSON.stringify(item)) + 1;
      if (cost > room) {
        if (leftOut !== undefined) break page;
        leftOut = `${s} item ${i - sectionStart + 1} of ${list.length} is ${cost - 1} bytes, more than an answer of ${b.maxAnswerBytes} bytes holds; it was left out.`;
        i++;
        continue;
      }
      if (cost > left) break page;
      out[s].push(item);
      left -= cost;
      i++;
    }
    sectionStart = sectionEnd;
  }
  return { lists: out, end: i, ...(leftOut !== undefined ? { leftOut } : {}) };
}

/** The first notes that fit in `maxBytes` (serialized), and one saying how many more there were. */
export function fitNotes(notes: readonly string[], maxBytes: number): string[] {
  const out: string[] = [];
  // Room for the closing note itself.
  let used = 2 + 96;
  for (const n of notes) {
    const cost = utf8Length(JSON.stringify(n)) + 1;
    if (used + cost > maxBytes) {
      out.push(`${notes.length - out.length} more notes were left out to keep the answer under its bound.`);
      break;
    }
    out.push(n);
    used += cost;
  }
  return out;
}
