// Paging of a merged location list (locate over several candidates), in the same
// terms as the query service's answers: `total`, `truncated`, and a `cursor` to
// pass back for the next page. The cursor is an opaque offset: a root is
// immutable, so the same question always yields the same list and an offset
// into it stays valid for as long as the root exists.
import { errors } from '../errors.js';
import type { Loc } from './types.js';

const PREFIX = 'ask1.';

export function encodeCursor(offset: number): string {
  return PREFIX + Buffer.from(String(offset)).toString('base64url');
}

export function decodeCursor(cursor: string | undefined): number {
  if (cursor === undefined) return 0;
  const n = cursor.startsWith(PREFIX) ? Number(Buffer.from(cursor.slice(PREFIX.length), 'base64url').toString()) : NaN;
  if (!Number.isSafeInteger(n) || n < 0) throw errors.badRequest('cursor is not one this daemon gave out for this question.');
  return n;
}

export function pageLocations(all: Loc[], o: { limit: number; cursor?: string | undefined }): { locations: Loc[]; total: number; truncated: boolean; cursor?: string } {
  const from = decodeCursor(o.cursor);
  const locations = all.slice(from, from + o.limit);
  const end = from + locations.length;
  return { locations, total: all.length, truncated: end < all.length, ...(end < all.length ? { cursor: encodeCursor(end) } : {}) };
}
