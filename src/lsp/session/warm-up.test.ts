// warmTargets: which files a warm-up opens, from a root's tree index.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { TreeEntry } from '../../store/tree-index.js';
import { firstSymbolAt, warmTargets } from './warm-up.js';

const file = (path: string, size = 10): TreeEntry => ({ path, kind: 'file', size, id: '' });
const py = (p: string) => p.endsWith('.py');
const rels = async (ts: Promise<{ rel: string }[]>) => (await ts).map((t) => t.rel);

test('the workspaces with the most files first, one file each, the largest', async () => {
  const entries: TreeEntry[] = [
    file('a/pyproject.toml'),
    file('a/pkg/__init__.py', 0),
    file('a/pkg/app.py', 300),
    file('a/pkg/util.py', 200),
    file('b/setup.py', 50),
    file('b/m.py', 60),
    file('c/pyproject.toml'),
    file('c/x.py'),
    file('top.py'),
  ];
  const markers = ['pyproject.toml', 'setup.py'];
  assert.deepEqual(await rels(warmTargets(entries, py, markers, 1000, 2)), ['a/pkg/app.py', 'b/m.py']);
  assert.deepEqual(await rels(warmTargets(entries, py, markers, 1000, 10)), ['a/pkg/app.py', 'b/m.py', 'top.py', 'c/x.py']);
});

test('dependency and dot directories are not looked in; files past the size bound are not opened', async () => {
  const entries: TreeEntry[] = [file('node_modules/x/big.py', 900), file('.venv/lib/y.py', 900), file('src/huge.py', 5000), file('src/small.py', 10)];
  assert.deepEqual(await rels(warmTargets(entries, py, [], 1000, 5)), ['src/small.py']);
});

test('a marker at the top makes the top one workspace', async () => {
  const entries: TreeEntry[] = [file('pyproject.toml'), file('pkg/a.py', 5), file('pkg/sub/b.py', 5)];
  assert.deepEqual(await rels(warmTargets(entries, py, ['pyproject.toml'], 1000, 5)), ['pkg/a.py']);
});

test('more files of each workspace: the changed ones first, then the largest, as many as asked, never outside it', async () => {
  const entries: TreeEntry[] = [
    file('a/pyproject.toml'),
    ...Array.from({ length: 20 }, (_, i) => file(`a/pkg/m${String(i).padStart(2, '0')}.py`, 100 + i)),
    file('a/pkg/tiny.py', 1),
    file('b/pyproject.toml'),
    file('b/only.py', 5),
  ];
  const changed = new Set(['a/pkg/tiny.py', 'a/pkg/m19.py', 'b/only.py']);
  const isChanged = (e: { path: string }) => changed.has(e.path);
  const [a, b] = await warmTargets(entries, py, ['pyproject.toml'], 1000, 2, { open: 4, isChanged });
  assert.equal(a!.rel, 'a/pkg/m19.py', 'the largest is the representative, changed or not');
  assert.deepEqual(a!.more, ['a/pkg/tiny.py', 'a/pkg/m18.py', 'a/pkg/m17.py'], 'the other changed file, then the next largest: 4 files in all');
  assert.deepEqual(b, { rel: 'b/only.py', more: [] });
  const none = await warmTargets(entries, py, ['pyproject.toml'], 1000, 1, { open: 3, isChanged: () => false });
  assert.deepEqual(none, [{ rel: 'a/pkg/m19.py', more: ['a/pkg/m18.py', 'a/pkg/m17.py'] }], 'no predecessor: the largest');
  assert.deepEqual(await warmTargets(entries, py, ['pyproject.toml'], 1000, 1), [{ rel: 'a/pkg/m19.py', more: [] }], 'one file by default');
});

test('the hover nudge goes to the first symbol named, in either documentSymbol shape', () => {
  const range = (line: number, character: number) => ({ start: { line, character }, end: { line, character: character + 3 } });
  assert.deepEqual(firstSymbolAt([{ name: 'a', kind: 12, range: range(0, 0), selectionRange: range(2, 9) }]), { line: 2, character: 9 });
  assert.deepEqual(firstSymbolAt([{ name: 'a', kind: 12, location: { uri: 'file:///src/a.py', range: range(4, 1) } }]), { line: 4, character: 1 });
  for (const raw of [null, [], [null], ['x'], [{ name: 'a' }], [{ selectionRange: { start: 1 } }], { selectionRange: range(0, 0) }]) {
    assert.equal(firstSymbolAt(raw), undefined, JSON.stringify(raw));
  }
});
