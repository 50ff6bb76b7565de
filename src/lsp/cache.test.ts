// The result cache's key holds every field that changes an answer: a rename to another
// name is another patch (bench/edits found the second name answered with the first's).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ResultCache } from './cache.js';
import { lspQuery } from '../api/schemas.js';

test('rename: another newName is another key; the same query is the same key', () => {
  const q = (newName: string) =>
    lspQuery.parse({ org: 'acme', repo: 'r', sha: 'a'.repeat(40), op: 'rename', path: 'src/a.ts', line: 1, character: 2, newName });
  assert.notEqual(ResultCache.keyOf('typescript', q('one')), ResultCache.keyOf('typescript', q('two')));
  assert.equal(ResultCache.keyOf('typescript', q('one')), ResultCache.keyOf('typescript', q('one')));
});

test('a cursor is bound to the key less its own paging: the same as the key of the query without cursor and limit', () => {
  const paged = lspQuery.parse({
    org: 'acme',
    repo: 'r',
    sha: 'a'.repeat(40),
    op: 'references',
    path: 'src/a.ts',
    line: 1,
    character: 2,
    cursor: 'abc',
    limit: 5,
  });
  assert.equal(ResultCache.keyOf('typescript', paged, false), ResultCache.keyOf('typescript', { ...paged, cursor: undefined, limit: undefined }));
  assert.notEqual(ResultCache.keyOf('typescript', paged), ResultCache.keyOf('typescript', paged, false));
});
