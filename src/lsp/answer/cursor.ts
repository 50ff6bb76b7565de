// Paging cursors for long location lists (issue 5: `limit` and a `cursor` page
// through long lists instead of truncating).
//
// A cursor is opaque to callers: base64url of `{"v":1,"o":<offset>,"s":<scope>}`.
// Offsets are enough because a root is immutable: the same query on the same root
// yields the same sorted list, so offset N names the same location every time
// (DESIGN.md "Roots"). The scope is a short hash of what the caller says identifies
// the query (root, op, path, position, options), so a cursor cannot be replayed
// against a different query and silently skip or repeat results. Anything that does
// not decode to exactly this shape is a 400 bad_request, never a guess.
import { createHash } from 'node:crypto';
import { errors } from '../../errors.js';

const MAX_CURSOR_CHARS = 200;

/** A short, stable hash of a query's identity (11 base64url characters). */
export function scopeHash(scope: string): string {
  return createHash('sha256').update(scope).digest('base64url').slice(0, 11);
}

export function encodeCursor(offset: number, scope?: string): string {
  const body: Record<string, unknown> = { v: 1, o: offset };
  if (scope !== undefined) body.s = scopeHash(scope);
  return Buffer.from(JSON.stringify(body)).toString('base64url');
}

/**
 * Decode and check a cursor against the query's scope and result count. Throws
 * errors.badRequest for anything malformed, foreign, or past the end.
 */
export function decodeCursor(cursor: string, total: number, scope?: string): number {
  const bad = (why: string) => errors.badRequest(`Bad cursor: ${why}.`);
  if (typeof cursor !== 'string' || cursor.length === 0 || cursor.length > MAX_CURSOR_CHARS || !/^[A-Za-z0-9_-]+$/.test(cursor)) {
    throw bad('not a cursor from this service');
  }
  let body: unknown;
  try {
    body = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    throw bad('not a cursor from this service');
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw bad('not a cursor from this service');
  const { v, o, s, ...rest } = body as Record<string, unknown>;
  if (v !== 1 || Object.keys(rest).length > 0) throw bad('not a cursor from this service');
  if (typeof o !== 'number' || !Number.isSafeInteger(o) || o < 0) throw bad('bad offset');
  if (s !== undefined && typeof s !== 'string') throw bad('not a cursor from this service');
  if ((scope === undefined) !== (s === undefined) || (scope !== undefined && s !== scopeHash(scope))) {
    throw bad('it belongs to a different query');
  }
  if (o > total) throw bad('it is past the end of the results');
  return o;
}
