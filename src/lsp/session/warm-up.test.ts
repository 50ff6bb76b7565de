// warmTargets: which files a warm-up opens, from a root's tree index.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { TreeEntry } from '../../store/tree-index.js';
import { firstSymbolAt, warmTargets } from './warm-up.js';

const file = (path: string, size = 10): TreeEntry => ({ path, kind: 'file', size, id: '' });
const py = (p: string) => p.endsWith('.py');

test('the workspaces with the most files first, one file each, the largest', () => {
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
  assert.deepEqual(warmTargets(entries, py, markers, 1000, 2), ['a/pkg/app.py', 'b/m.py']);
  assert.deepEqual(warmTargets(entries, py, markers, 1000, 10), ['a/pkg/app.py', 'b/m.py', 'top.py', 'c/x.py']);
});

test('dependency and dot directories are not looked in; files past the size bound are not opened', () => {
  const entries: TreeEntry[] = [file('node_modules/x/big.py', 900), file('.venv/lib/y.py', 900), file('src/huge.py', 5000), file('src/small.py', 10)];
  assert.deepEqual(warmTargets(entries, py, [], 1000, 5), ['src/small.py']);
});

test('a marker at the top makes the top one workspace', () => {
  const entries: TreeEntry[] = [file('pyproject.toml'), file('pkg/a.py', 5), file('pkg/sub/b.py', 5)];
  assert.deepEqual(warmTargets(entries, py, ['pyproject.toml'], 1000, 5), ['pkg/a.py']);
});

test('the hover nudge goes to the first symbol named, in either documentSymbol shape', () => {
  const range = (line: number, character: number) => ({ start: { line, character }, end: { line, character: character + 3 } });
  assert.deepEqual(firstSymbolAt([{ name: 'a', kind: 12, range: range(0, 0), selectionRange: range(2, 9) }]), { line: 2, character: 9 });
  assert.deepEqual(firstSymbolAt([{ name: 'a', kind: 12, location: { uri: 'file:///src/a.py', range: range(4, 1) } }]), { line: 4, character: 1 });
  for (const raw of [null, [], [null], ['x'], [{ name: 'a' }], [{ selectionRange: { start: 1 } }], { selectionRange: range(0, 0) }]) {
    assert.equal(firstSymbolAt(raw), undefined, JSON.stringify(raw));
  }
});
