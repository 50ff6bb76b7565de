import { test } from 'node:test';
import assert from 'node:assert/strict';
import { RootCache } from './root-cache.js';

const a = { id: 'o/r/a', generation: 'g1' };
const b = { id: 'o/r/b', generation: 'g1' };

test('bounded in bytes: entries charged their size and key, least recently used evicted, an entry over the budget not kept', () => {
  const c = new RootCache<string>({ max: 1000, maxBytes: 10_000, sizeOf: (s) => s.length });
  for (let i = 0; i < 50; i++) c.set(a, `k${i}`, 'x'.repeat(1000));
  assert.ok(c.bytes <= 10_000, `${c.bytes} bytes held`);
  assert.ok(c.size < 10, `${c.size} entries of ~1 KiB in 10 KB`);
  assert.equal(c.get(a, 'k0'), undefined, 'the oldest went');
  assert.equal(c.get(a, 'k49')?.length, 1000);
  c.set(a, 'big', 'y'.repeat(20_000));
  assert.equal(c.get(a, 'big'), undefined);
  // The key is charged too: a long key with an empty value still costs its length.
  const k = new RootCache<string>({ max: 1000, maxBytes: 10_000, sizeOf: () => 0 });
  k.set(a, 'p'.repeat(3000), '');
  assert.ok(k.bytes >= 6000, `${k.bytes}`);
  k.set(a, 'q'.repeat(3000), '');
  assert.equal(k.size, 1, 'two 3000-character keys do not fit in 10 KB');
});

test('load: askers share one load, the settled value is kept and charged, a rejection is not kept, a dropped root is not kept', async () => {
  const c = new RootCache<string[]>({ max: 10, maxBytes: 100_000, sizeOf: (v) => v.join('').length * 2 });
  let runs = 0;
  const make = async () => {
    runs++;
    return ['aaaa', 'bbbb'];
  };
  const [x, y] = await Promise.all([c.load(a, 'k', make), c.load(a, 'k', make)]);
  assert.equal(x, y);
  assert.equal(runs, 1);
  assert.deepEqual(c.get(a, 'k'), ['aaaa', 'bbbb']);
  assert.ok(c.bytes >= 16);
  await assert.rejects(
    c.load(a, 'bad', () => Promise.reject(new Error('no'))),
    /no/,
  );
  assert.equal(c.get(a, 'bad'), undefined);
  let release!: (v: string[]) => void;
  const p = c.load(b, 'slow', () => new Promise<string[]>((r) => (release = r)));
  c.dropRoot(b.id);
  release(['late']);
  assert.deepEqual(await p, ['late']);
  assert.equal(c.get(b, 'slow'), undefined, 'a load about a root dropped meanwhile is answered, not kept');
});

test('dropWhere forgets entries by the second root their key names; dropRoot every generation', () => {
  const c = new RootCache<string>({ max: 100, maxBytes: 100_000, sizeOf: (s) => s.length });
  c.set(a, 'diff\u0000o/r/b\u0000g1\u00000', 'p1');
  c.set(a, 'diff\u0000o/r/c\u0000g1\u00000', 'p2');
  c.set({ id: a.id, generation: 'g2' }, 'x', 'p3');
  c.dropWhere((key) => key.startsWith('diff\u0000o/r/b\u0000'));
  assert.equal(c.get(a, 'diff\u0000o/r/b\u0000g1\u00000'), undefined);
  assert.equal(c.get(a, 'diff\u0000o/r/c\u0000g1\u00000'), 'p2');
  c.dropRoot(a.id);
  assert.equal(c.size, 0);
  assert.equal(c.bytes, 0);
});
