import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cutPage, fitNotes, SECTIONS, totalOf, type DiffLists, type Section } from './diff-page.js';

const bytes = (v: unknown) => Buffer.byteLength(JSON.stringify(v));
const perPage = (n: number, impact = n): Record<Section, number> => ({ files: n, symbols: n, diagnostics: n, impact });

/** Every page from offset 0 on, each as the answer would hold its lists. */
function walk(lists: DiffLists, maxAnswerBytes: number, fixedBytes: number, per: Record<Section, number>) {
  const pages = [];
  for (let offset = 0, guard = 0; offset < totalOf(lists); guard++) {
    assert.ok(guard < 100_000, 'paging moves on');
    const p = cutPage(lists, offset, { maxAnswerBytes, fixedBytes, perPage: per });
    assert.ok(p.end > offset, 'every page moves the offset');
    pages.push(p);
    offset = p.end;
  }
  return pages;
}

test('pages walk files, symbols, diagnostics, impact in order, each item once, each page within the bound', () => {
  const lists: DiffLists = {
    files: Array.from({ length: 5000 }, (_, i) => ({ path: `dir/${'x'.repeat(i % 300)}/f${i}.txt`, change: 'modified' })),
    symbols: Array.from({ length: 300 }, (_, i) => ({ qualified: `s${i}`, signature: 'y'.repeat(i) })),
    diagnostics: Array.from({ length: 40 }, (_, i) => ({ path: 'a.ts', message: `m${i}` })),
    impact: Array.from({ length: 700 }, (_, i) => ({ path: 'b.ts', line: i })),
  };
  const fixed = 600;
  const max = 64 * 1024;
  const pages = walk(lists, max, fixed, perPage(2000, 100));
  for (const s of SECTIONS)
    assert.deepEqual(
      pages.flatMap((p) => p.lists[s]),
      lists[s],
      `${s}: every item exactly once, in order`,
    );
  for (const p of pages) {
    // The lists as they sit in the answer: the fixed part already holds them empty.
    const listed = SECTIONS.reduce((n, s) => n + bytes(p.lists[s]) - 2, 0);
    assert.ok(fixed + listed <= max, `a page of ${fixed + listed} bytes`);
    assert.ok(p.lists.impact.length <= 100, 'limit bounds impact per page');
    assert.equal(p.leftOut, undefined);
  }
  assert.ok(pages.length > (5000 * 150) / max, 'the bytes, not only the counts, made the pages');
});

test('a per-page count stops a page inside its list, and a small diff is one page', () => {
  const lists: DiffLists = { files: [1, 2, 3, 4, 5].map((i) => ({ path: `f${i}` })), symbols: [], diagnostics: [], impact: [{ l: 1 }, { l: 2 }] };
  const pages = walk(lists, 1 << 20, 100, perPage(2, 1));
  assert.deepEqual(
    pages.map((p) => [p.lists.files.length, p.lists.impact.length]),
    [
      [2, 0],
      [2, 0],
      [1, 1],
      [0, 1],
    ],
  );
  assert.equal(walk(lists, 1 << 20, 100, perPage(10)).length, 1);
});

test('an item larger than any page is left out and said so; the walk goes on', () => {
  const big = { path: 'huge', signature: 'z'.repeat(5000) };
  const lists: DiffLists = { files: [{ path: 'a' }], symbols: [big, { path: 'b' }, big, big], diagnostics: [], impact: [] };
  const pages = walk(lists, 2048, 200, perPage(100));
  assert.deepEqual(
    pages.flatMap((p) => p.lists.symbols),
    [{ path: 'b' }],
  );
  const said = pages.map((p) => p.leftOut).filter((n) => n !== undefined);
  assert.equal(said.length, 3);
  assert.match(said[0]!, /^symbols item 1 of 4 is \d+ bytes, more than an answer of 2048 bytes holds/);
});

test('notes are kept within their share, the rest counted', () => {
  const notes = Array.from({ length: 100 }, (_, i) => `note ${i} ${'n'.repeat(100)}`);
  const kept = fitNotes(notes, 2000);
  assert.ok(bytes(kept) <= 2000, `${bytes(kept)} bytes`);
  assert.match(kept.at(-1)!, new RegExp(`^${100 - (kept.length - 1)} more notes were left out`));
  assert.deepEqual(fitNotes(notes.slice(0, 3), 2000), notes.slice(0, 3));
});
