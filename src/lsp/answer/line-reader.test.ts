import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { TreeCoordinate } from './coordinates.js';
import { LineReader, PREVIEW_MAX_CHARS, previewLine } from './line-reader.js';

const a: TreeCoordinate = { kind: 'tree', path: 'a.ts', jailPath: '/src/a.ts' };
const b: TreeCoordinate = { kind: 'tree', path: 'b.ts', jailPath: '/src/b.ts' };
const lines = Array.from({ length: 1000 }, (_, i) => `line ${i}`);

test('wanted lines are read in merged spans, once', async () => {
  const calls: string[] = [];
  const reader = new LineReader((c, start, count) => {
    calls.push(`${c.path}:${start}+${count}`);
    return lines.slice(start, start + count);
  });
  reader.want(a, 10, 12, 11, 500, 28, 45, -1, 1.5, NaN); // gaps of 16 merge, 17 do not
  reader.want(b, 3);
  await reader.load();
  assert.deepEqual(calls.sort(), ['a.ts:10+19', 'a.ts:45+1', 'a.ts:500+1', 'b.ts:3+1']);
  assert.equal(reader.line(a, 12), 'line 12');
  assert.equal(reader.line(a, 13), 'line 13'); // read as part of the span
  assert.equal(reader.line(a, 600), undefined);
  reader.want(a, 10, 500);
  await reader.load();
  assert.equal(calls.length, 4, 'cached lines are not read again');
});

test('what a ReadLines returns is not trusted', async () => {
  const reader = new LineReader((_c, start) => (start === 0 ? ['ok\r', 5 as unknown as string, 'third', 'beyond the ask'] : ('nope' as unknown as string[])));
  reader.want(a, 0, 1, 2);
  reader.want(b, 40);
  await reader.load();
  assert.equal(reader.line(a, 0), 'ok'); // a trailing \r is a terminator, not text
  assert.equal(reader.line(a, 1), undefined);
  assert.equal(reader.line(a, 2), 'third');
  assert.equal(reader.line(a, 3), undefined);
  assert.equal(reader.line(b, 40), undefined);
});

test('a failing ReadLines leaves the lines unknown and conversion passes through', async () => {
  const reader = new LineReader(async () => Promise.reject(new Error('EIO')));
  reader.want(a, 0);
  await reader.load();
  const r = { start: { line: 0, character: 4 }, end: { line: 0, character: 9 } };
  assert.deepEqual(reader.convert(a, r, 'utf-16', 'utf-8'), r);
});

test('many files are read with bounded concurrency', async () => {
  let live = 0;
  let peak = 0;
  const reader = new LineReader(async () => {
    peak = Math.max(peak, ++live);
    await new Promise((res) => setTimeout(res, 2));
    live--;
    return ['x'];
  });
  for (let i = 0; i < 50; i++) reader.want({ kind: 'tree', path: `f${i}`, jailPath: `/src/f${i}` }, 0);
  await reader.load();
  assert.ok(peak <= 8 && peak > 1, String(peak));
  assert.equal(reader.line({ kind: 'tree', path: 'f49', jailPath: '/src/f49' }, 0), 'x');
});

test('previewLine windows long lines without splitting surrogate pairs', () => {
  assert.equal(previewLine('short'), 'short');
  const long = '😀'.repeat(1000);
  for (const at of [0, 1, 2, 501, 1999, 5000]) {
    const p = previewLine(long, at);
    assert.ok(!/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/.test(p), `lone surrogate at ${at}`);
    assert.ok(p.length <= PREVIEW_MAX_CHARS + 2);
  }
  assert.ok(previewLine('a'.repeat(1000), 0).startsWith('aaa') && previewLine('a'.repeat(1000), 0).endsWith('…'));
  assert.ok(previewLine('a'.repeat(1000), 999).startsWith('…') && !previewLine('a'.repeat(1000), 999).endsWith('…'));
});

test('lines the reader gives at once are taken in the same turn; a read under way is asked once', async () => {
  const asked: string[] = [];
  const reader = new LineReader((coord, start, count) => {
    asked.push(`${coord.path}:${start}+${count}`);
    const lines = Array.from({ length: count }, (_, k) => `${coord.path} ${start + k}`);
    return coord.path === 'held' ? lines : new Promise((res) => setTimeout(() => res(lines), 2));
  });
  const held = { kind: 'tree', path: 'held', jailPath: '/src/held' } as const;
  const read = { kind: 'tree', path: 'read', jailPath: '/src/read' } as const;
  reader.want(held, 3);
  reader.want(read, 1, 40);
  const loading = reader.load();
  assert.equal(reader.line(held, 3), 'held 3', 'taken before the first await');
  await loading;
  assert.equal(reader.line(read, 1), 'read 1');
  assert.equal(reader.line(read, 40), 'read 40');
  assert.deepEqual(asked, ['held:3+1', 'read:1+1', 'read:40+1']);
});
