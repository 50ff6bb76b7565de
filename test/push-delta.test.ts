// The layer `lspd push` builds from git (src/cli/git-delta.ts), against real git
// and a real in-process daemon: every kind of change a commit makes (type changes
// both ways, a vanished directory tree, a retargeted symlink, a mode change, names
// git pathspecs would read as patterns) composes into exactly the head commit's
// tree (the daemon checks its git tree id); export-ignore still gives the full
// archive's tree (file by file, no tree id sent); export-subst, a changed
// .gitattributes or a whiteout-like name mean a full upload; submodules mean no
// tree id; base candidates come merge-base first.
import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { buffer } from 'node:stream/consumers';
import { after, before, describe, it } from 'node:test';
import { baseCandidates, deltaArchive, deltaOf, scanAttributes, treeFacts, type Delta } from '../src/cli/git-delta.js';
import { archiveOf, commitAll, git, snapshot, treeOf } from './helpers/git-trees.js';
import { put } from './store-helpers.js';
import { startStoreServer, type StoreServer } from './helpers/daemon.js';

const TAR = { 'content-type': 'application/x-tar' };

function write(dir: string, files: Record<string, string>): void {
  for (const [name, content] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, name)), { recursive: true });
    writeFileSync(join(dir, name), content);
  }
}

describe('lspd push layers from git', () => {
  let s: StoreServer;
  const dirs: string[] = [];
  const repoDir = () => {
    const d = mkdtempSync(join(tmpdir(), 'lspd-delta-'));
    dirs.push(d);
    git(d, 'init', '-q', '-b', 'main');
    return d;
  };
  before(async () => {
    s = await startStoreServer();
  });
  after(async () => {
    await s.destroy();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  /** Store `base` whole, then `head` as the layer push builds; answers the layer and the PUT's answer. */
  async function pushPair(dir: string, repo: string, base: string, head: string, gitTree?: string) {
    assert.equal((await put(s.url, `acme/${repo}/${base}`, archiveOf(dir, base))).status, 201);
    const delta = await deltaOf(dir, base, head);
    assert.ok(!('fullBecause' in delta), JSON.stringify(delta));
    const body = await buffer(deltaArchive(dir, head, delta as Delta, false, (await treeFacts(dir, head)).rawBlobs));
    const headers = gitTree ? { ...TAR, 'x-lspd-git-tree': gitTree } : TAR;
    return { delta: delta as Delta, answer: await put(s.url, `acme/${repo}/${head}?base=${base}`, body, headers) };
  }

  it("composes every kind of change into the head commit's exact tree", async () => {
    const dir = repoDir();
    write(dir, {
      'a/b/c/deep.ts': 'deep\n',
      'a/b/keep.ts': 'keep\n',
      'vanish/x/y/z.ts': 'z\n',
      'vanish/w.ts': 'w\n',
      'dir2file/inner.ts': 'inner\n',
      file2dir: 'plain\n',
      'glob*name?.ts': 'glob\n',
      ':colon.ts': 'colon\n',
      'sp ace/ünï.ts': 'ünï\n',
      'run.sh': '#!/bin/sh\n',
      'same.ts': 'same\n',
    });
    symlinkSync('a/b/keep.ts', join(dir, 'link'));
    const base = commitAll(dir, 'base');
    rmSync(join(dir, 'vanish'), { recursive: true });
    rmSync(join(dir, 'a/b/c'), { recursive: true });
    rmSync(join(dir, 'dir2file'), { recursive: true });
    writeFileSync(join(dir, 'dir2file'), 'now a file\n');
    unlinkSync(join(dir, 'file2dir'));
    write(dir, { 'file2dir/now.ts': 'now a dir\n', 'glob*name?.ts': 'glob 2\n', ':colon.ts': 'colon 2\n', 'sp ace/ünï.ts': 'ünï 2\n', 'new/dir/n.ts': 'n\n' });
    chmodSync(join(dir, 'run.sh'), 0o755);
    unlinkSync(join(dir, 'link'));
    symlinkSync('same.ts', join(dir, 'link'));
    const head = commitAll(dir, 'head');

    const { delta, answer } = await pushPair(dir, 'kinds', base, head, treeOf(dir, head));
    assert.equal(answer.status, 201, JSON.stringify(answer.body));
    assert.equal(answer.body.git_tree, treeOf(dir, head));
    assert.deepEqual(delta.whiteouts.sort(), ['a/b/c', 'dir2file', 'file2dir', 'vanish'], 'a vanished directory goes as one whiteout');
    assert.ok(!delta.files.some((f) => f.path === 'same.ts'));
  });

  it("with export-ignore: no tree id, and still the full archive's tree", async () => {
    const dir = repoDir();
    write(dir, { '.gitattributes': 'secret/** export-ignore\n', 'secret/s.ts': 's\n', 'pub.ts': 'p\n' });
    const base = commitAll(dir, 'base');
    write(dir, { 'secret/s.ts': 's 2\n', 'secret/t.ts': 't\n', 'pub.ts': 'p 2\n' });
    const head = commitAll(dir, 'head');
    const facts = await treeFacts(dir, head);
    assert.equal(facts.gitTree, undefined);
    assert.match(facts.noTreeReason!, /export-ignore/);
    const { answer } = await pushPair(dir, 'ignore', base, head);
    assert.equal(answer.status, 201, JSON.stringify(answer.body));
    assert.equal((await put(s.url, `acme/ignore-full/${head}`, archiveOf(dir, head))).status, 201);
    const tree = (repo: string) => snapshot(s.store.treeDir({ org: 'acme', repo, sha: head }));
    assert.deepEqual(tree('ignore'), tree('ignore-full'));
    assert.ok(!Object.keys(tree('ignore')).some((p) => p.startsWith('secret/')), 'the ignored files are left out (git archive keeps the directory)');
  });

  it('with eol=crlf: no tree id, and the layer converted as the full archive is', async () => {
    const dir = repoDir();
    write(dir, { '.gitattributes': '*.bat text eol=crlf\n', 'run.bat': 'echo one\n', 'keep.bat': 'echo keep\n' });
    const base = commitAll(dir, 'base');
    write(dir, { 'run.bat': 'echo two\n' });
    const head = commitAll(dir, 'head');
    const facts = await treeFacts(dir, head);
    assert.equal(facts.gitTree, undefined);
    assert.equal(facts.rawBlobs, false);
    assert.match(facts.noTreeReason!, /convert/);
    const { answer } = await pushPair(dir, 'crlf', base, head);
    assert.equal(answer.status, 201, JSON.stringify(answer.body));
    assert.equal((await put(s.url, `acme/crlf-full/${head}`, archiveOf(dir, head))).status, 201);
    const tree = (repo: string) => snapshot(s.store.treeDir({ org: 'acme', repo, sha: head }));
    assert.deepEqual(tree('crlf'), tree('crlf-full'));
    assert.equal(tree('crlf')['run.bat'], `file 644 ${Buffer.from('echo two\r\n').toString('base64')}`);
  });

  it('sends the whole tree when a layer cannot be exact, and no tree id with submodules', async () => {
    const dir = repoDir();
    write(dir, { 'a.ts': 'a\n' });
    const base = commitAll(dir, 'base');
    write(dir, { '.gitattributes': '*.ts text\n' });
    const attrs = commitAll(dir, 'attrs');
    assert.match(JSON.stringify(await deltaOf(dir, base, attrs)), /\.gitattributes changed/);
    write(dir, { 'x/.wh.y': '' });
    const wh = commitAll(dir, 'whiteout-like');
    assert.match(JSON.stringify(await deltaOf(dir, attrs, wh)), /named like a whiteout/);
    write(dir, { '.gitattributes': 'v.ts export-subst\n', 'v.ts': '$Format:%H$\n' });
    assert.equal((await treeFacts(dir, commitAll(dir, 'subst'))).exportSubst, true);
    git(dir, 'update-index', '--add', '--cacheinfo', `160000,${base},sub`);
    git(dir, '-c', 'commit.gpgsign=false', 'commit', '-q', '-m', 'submodule');
    const facts = await treeFacts(dir, git(dir, 'rev-parse', 'HEAD'));
    assert.equal(facts.gitTree, undefined);
    assert.match(facts.noTreeReason!, /submodules/);
  });

  it('looks for bases at the merge-base with the default branch first, then HEAD~1..~10', async () => {
    const dir = repoDir();
    const shas: string[] = [];
    for (let i = 0; i < 3; i++) {
      write(dir, { 'm.ts': `main ${i}\n` });
      shas.push(commitAll(dir, `main ${i}`));
    }
    git(dir, 'checkout', '-q', '-b', 'feature', shas[1]!);
    const feature: string[] = [];
    for (let i = 0; i < 12; i++) {
      write(dir, { 'f.ts': `feature ${i}\n` });
      feature.push(commitAll(dir, `feature ${i}`));
    }
    const got = await baseCandidates(dir, feature.at(-1)!);
    assert.equal(got[0], shas[1], 'the merge-base with main comes first');
    assert.deepEqual(got.slice(1), feature.slice(0, -1).reverse().slice(0, 10));
  });

  it('reads attributes as git archive applies them (comments aside, negated too)', () => {
    assert.deepEqual(scanAttributes(['# docs/ export-ignore\n\n']), { any: false, exportIgnore: false, exportSubst: false, converts: false });
    assert.deepEqual(scanAttributes(['*.ts text\n']), { any: true, exportIgnore: false, exportSubst: false, converts: false });
    assert.deepEqual(scanAttributes(['docs/ export-ignore\n']), { any: true, exportIgnore: true, exportSubst: false, converts: false });
    assert.deepEqual(scanAttributes(['v.go export-subst\n', '']), { any: true, exportIgnore: false, exportSubst: true, converts: false });
    for (const line of ['*.bin filter=lfs diff=lfs merge=lfs -text', '*.bat text eol=crlf', '*.c ident', '*.txt working-tree-encoding=UTF-16']) {
      assert.equal(scanAttributes([line]).converts, true, line);
    }
  });
});
