import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { DiffAnswer } from '../client/index.js';
import { formatDiff } from './diff-print.js';

const page = (over: Partial<DiffAnswer>): DiffAnswer =>
  ({
    base: 'a'.repeat(40),
    head: 'b'.repeat(40),
    files: [],
    files_total: 0,
    symbols: [],
    symbols_total: 0,
    impact: [],
    total: 0,
    diagnostics: [],
    diagnostics_total: 0,
    new_errors: 0,
    truncated: false,
    incomplete: false,
    untrusted: true,
    ...over,
  }) as DiffAnswer;

test('a page of a long diff says what it lists and how to get the next; the verdict counts every page', () => {
  const out = formatDiff(
    page({
      files: [
        { path: 'a.txt', change: 'added' },
        { path: 'b.txt', change: 'modified' },
      ],
      files_total: 9000,
      new_errors: 3,
      truncated: true,
      next_cursor: 'eyJ2IjoxLCJvIjoyfQ',
    }),
    'acme/x aaaa..bbbb',
  );
  assert.match(out, /^acme\/x aaaa\.\.bbbb: 9000 files changed \(2 listed here: 1 added, 1 modified, 0 removed\)$/m);
  assert.match(out, /^-- more: this is one page of the diff; the next with --cursor eyJ2IjoxLCJvIjoyfQ$/m);
  assert.match(out, /FAIL: 3 new errors at head$/);
  const whole = formatDiff(page({ files: [{ path: 'a.txt', change: 'added' }], files_total: 1 }), 'x');
  assert.match(whole, /^x: 1 files changed \(1 added, 0 modified, 0 removed\)$/m);
  assert.doesNotMatch(whole, /--cursor/);
});
