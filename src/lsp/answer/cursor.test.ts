import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AppError } from '../../errors.js';
import { decodeCursor, encodeCursor, scopeHash } from './cursor.js';

test('cursors round-trip and stay short', () => {
  for (const o of [0, 1, 199, 123_456_789]) {
    assert.equal(decodeCursor(encodeCursor(o), o + 1), o);
    const c = encodeCursor(o, 'acme/api/sha:references:src/a.ts:3:4:utf-16');
    assert.ok(c.length < 60 && /^[A-Za-z0-9_-]+$/.test(c));
    assert.equal(decodeCursor(c, o, 'acme/api/sha:references:src/a.ts:3:4:utf-16'), o);
  }
  assert.equal(scopeHash('x'), scopeHash('x'));
  assert.notEqual(scopeHash('x'), scopeHash('y'));
});

test('a cursor at the end is an empty page; past it is refused', () => {
  assert.equal(decodeCursor(encodeCursor(5), 5), 5);
  assert.throws(
    () => decodeCursor(encodeCursor(6), 5),
    (e: unknown) => e instanceof AppError && e.code === 'bad_request',
  );
});

test('foreign, malformed and tampered cursors are refused', () => {
  const enc = (v: unknown) => Buffer.from(typeof v === 'string' ? v : JSON.stringify(v)).toString('base64url');
  for (const bad of [
    enc({ v: 2, o: 1 }),
    enc({ v: 1, o: 1.5 }),
    enc({ v: 1, o: '1' }),
    enc({ v: 1, o: 2 ** 60 }),
    enc({ v: 1, o: 1, s: 5 }),
    enc({ v: 1 }),
    enc('{"v":1,"o":1'),
    enc('\u0000'),
    'a=b',
    'a b',
    'x'.repeat(201),
  ]) {
    assert.throws(
      () => decodeCursor(bad, 100),
      (e: unknown) => e instanceof AppError && e.status === 400,
      bad,
    );
  }
});
