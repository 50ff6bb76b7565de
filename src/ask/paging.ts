// Paging (and grouping) of a merged location list: locate over several candidates
// merges the definition answers of each, so the page is cut here rather than by
// the projection. Same terms and cursors as every locations answer
// (src/lsp/answer/cursor.ts, src/lsp/answer/projection.ts): `total`, `truncated`, `next_cursor`,
// `groups: [{path, count, locations}]`; the list is sorted the projection's way
// (tree first, then module, version, path, position), which is what makes an
// offset cursor exact on an immutable root.
import { decodeCursor, encodeCursor } from '../lsp/answer/cursor.js';
import type { Loc } from './types.js';

export interface PageOptions {
  limit: number;
  cursor?: string | undefined;
  grouped?: boolean;
  /** Identity of the question (root, symbol, path, op), so a cursor cannot be replayed against another. */
  scope: string;
}

const cmp = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
const fileKey = (l: Loc) => (l.external ? `x\u0000${String(l.module)}\u0000${String(l.version)}\u0000${l.path}` : `t\u0000${l.path}`);

export function sortLocations(locs: Loc[]): Loc[] {
  return [...locs].sort((a, b) => cmp(fileKey(a), fileKey(b)) || a.range.start.line - b.range.start.line || a.range.start.character - b.range.start.character);
}

export function pageLocations(all: Loc[], o: PageOptions): Record<string, unknown> {
  const sorted = sortLocations(all);
  const total = sorted.length;
  const offset = o.cursor === undefined ? 0 : decodeCursor(o.cursor, total, o.scope);
  const page = sorted.slice(offset, offset + Math.max(1, o.limit));
  const more = offset + page.length < total;
  const base = { total, truncated: more, ...(more ? { next_cursor: encodeCursor(offset + page.length, o.scope) } : {}) };
  if (!o.grouped) return { locations: page, ...base };
  const counts = new Map<string, number>();
  for (const l of sorted) counts.set(fileKey(l), (counts.get(fileKey(l)) ?? 0) + 1);
  const groups: Record<string, unknown>[] = [];
  let prev: string | undefined;
  for (const l of page) {
    const k = fileKey(l);
    if (k !== prev) {
      const head = l.external ? { external: true, module: l.module, version: l.version } : {};
      groups.push({ ...head, path: l.path, count: counts.get(k) ?? 0, locations: [] });
      prev = k;
    }
    (groups[groups.length - 1]!.locations as Loc[]).push(l);
  }
  return { groups, ...base };
}
