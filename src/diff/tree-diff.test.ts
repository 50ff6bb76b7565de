import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { encodeTreeIndex, TREE_INDEX, type TreeEntry } from '../store/tree-index.js';
import { diffTrees } from './tree-diff.js';

/** A root dir as the store lays it out: <root>/tree/… and, when given, <root>/tree.idx. */
async function root(top: string, name: string, files: Record<string, string>, index?: TreeEntry[]): Promise<string> {
  const tree = join(top, name, 'tree');
  mkdirSync(tree, { recursive: true });
  for (const [p, text] of Object.entries(files)) {
    mkdirSync(dirname(join(tree, p)), { recursive: true });
    if (text.startsWith('->')) symlinkSync(text.slice(2), join(tree, p));
    else writeFileSync(join(tree, p), text);
  }
  if (index) writeFileSync(join(top, name, TREE_INDEX), await encodeTreeIndex(index));
  return tree;
}

const blob = (n: number) => n.toString(16).padStart(40, '0');
const file = (path: string, id: number): TreeEntry => ({ path, kind: 'file', size: 1, id: blob(id) });

test('with tree indexes: blob ids decide, no file is read (the trees on disk may say anything)', async () => {
  const top = mkdtempSync(join(tmpdir(), 'tree-diff-'));
  try {
    const a = await root(top, 'a', {}, [{ path: 'src', kind: 'dir' }, file('src/same.ts', 1), file('src/mod.ts', 2), file('src/gone.ts', 3)]);
    const b = await root(top, 'b', {}, [{ path: 'src', kind: 'dir' }, file('src/same.ts', 1), file('src/mod.ts', 9), file('src/new.ts', 4)]);
    const d = await diffTrees(a, b);
    assert.deepEqual(d.files, [
      { path: 'src/gone.ts', change: 'removed' },
      { path: 'src/mod.ts', change: 'modified' },
      { path: 'src/new.ts', change: 'added' },
    ]);
    assert.deepEqual(d.notes, []);
  } finally {
    rmSync(top, { recursive: true, force: true });
  }
});

test('without indexes (roots of an older lspd): sizes, then contents, and link targets', async () => {
  const top = mkdtempSync(join(tmpdir(), 'tree-diff-'));
  try {
    const a = await root(top, 'a', { 'same.ts': 'x', 'samesize.ts': 'abc', 'grown.ts': 'a', 'gone.ts': 'g', link: '->same.ts', 'd/deep.ts': 'q' });
    const b = await root(top, 'b', { 'same.ts': 'x', 'samesize.ts': 'abd', 'grown.ts': 'ab', 'new.ts': 'n', link: '->grown.ts', 'd/deep.ts': 'q' });
    const d = await diffTrees(a, b);
    assert.deepEqual(d.files, [
      { path: 'gone.ts', change: 'removed' },
      { path: 'grown.ts', change: 'modified' },
      { path: 'link', change: 'modified' },
      { path: 'new.ts', change: 'added' },
      { path: 'samesize.ts', change: 'modified' },
    ]);
  } finally {
    rmSync(top, { recursive: true, force: true });
  }
});
