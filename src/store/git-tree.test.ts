import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { describe, it } from 'node:test';
import { blobId, EMPTY_TREE_ID, treeId, type GitBlob } from './git-tree.js';
import { decodeTreeIndex, encodeTreeIndex, gitBlobs, withParents, type TreeEntry } from './tree-index.js';

const git = (cwd: string, ...args: string[]) =>
  execFileSync('git', args, {
    cwd,
    encoding: 'utf8',
    env: { ...process.env, GIT_AUTHOR_NAME: 't', GIT_AUTHOR_EMAIL: 't@x.invalid', GIT_COMMITTER_NAME: 't', GIT_COMMITTER_EMAIL: 't@x.invalid' },
  }).trim();

describe('git object ids', () => {
  it("a blob id is git hash-object's", () => {
    const dir = mkdtempSync(join(tmpdir(), 'git-blob-'));
    try {
      for (const content of ['', 'hello\n', 'ünïcode\u0000binary']) {
        writeFileSync(join(dir, 'f'), content);
        assert.equal(blobId(content), git(dir, 'hash-object', 'f'));
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a tree id is git\'s: names sorted as git sorts them (a directory as if it ended in "/"), modes, symlinks, no empty dirs', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'git-tree-'));
    try {
      git(dir, 'init', '-q');
      const files: Record<string, string> = {
        'a.b': '1',
        'a/x': '2',
        'a-b': '3',
        a0: '4',
        'ab/c/d/e.ts': '5',
        'Z/upper': '6',
        'ünï/名前.ts': '7',
        'sp ace/f': '8',
        'run.sh': '#!/bin/sh\n',
      };
      const blobs: GitBlob[] = [];
      for (const [p, c] of Object.entries(files)) {
        mkdirSync(dirname(join(dir, p)), { recursive: true });
        writeFileSync(join(dir, p), c);
        blobs.push({ path: p, mode: p === 'run.sh' ? '100755' : '100644', id: blobId(c) });
      }
      chmodSync(join(dir, 'run.sh'), 0o755);
      symlinkSync('a/x', join(dir, 'link'));
      blobs.push({ path: 'link', mode: '120000', id: blobId('a/x') });
      mkdirSync(join(dir, 'empty/deeper'), { recursive: true });
      git(dir, 'add', '-A');
      git(dir, 'commit', '-q', '-m', 'x');
      assert.equal(await treeId(blobs), git(dir, 'rev-parse', 'HEAD^{tree}'));
      assert.equal(await treeId([]), EMPTY_TREE_ID);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('tree index', () => {
  it('round-trips every kind of entry, and implies parents', async () => {
    const entries: TreeEntry[] = [
      { path: 'empty', kind: 'dir' },
      { path: 'src/a.ts', kind: 'file', size: 12, id: blobId('export {};\n\n') },
      { path: 'bin/run', kind: 'exec', size: 2 ** 40, id: 'f'.repeat(40) },
      { path: 'ünï/l', kind: 'symlink', target: '../src/a.ts', id: blobId('../src/a.ts') },
    ];
    assert.deepEqual(decodeTreeIndex(await encodeTreeIndex(entries)), entries);
    assert.deepEqual((await withParents(entries)).map((e) => e.path).sort(), ['bin', 'bin/run', 'empty', 'src', 'src/a.ts', 'ünï', 'ünï/l']);
    assert.deepEqual(
      [...gitBlobs(entries)].map((b) => b.mode),
      ['100644', '100755', '120000'],
    );
    const bytes = await encodeTreeIndex(entries);
    assert.throws(() => decodeTreeIndex(bytes.subarray(0, 30)), /truncated/);
    assert.throws(() => decodeTreeIndex(Buffer.from('not an index')), /not a tree index/);
  });
});
