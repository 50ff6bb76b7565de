// Incremental roots over real HTTP, checked against real git: a layer (files added
// or modified, OCI whiteouts for deletions, an opaque directory) on a stored base
// gives exactly the tree a full upload of the head commit gives, file by file and
// by git tree id; unchanged files are links to the base's, and survive its
// deletion; hostile layers are refused like any unsafe entry; a wrong
// x-lspd-git-tree is refused with nothing stored.
import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, symlinkSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { PassThrough } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { archiveOf, commitAll, git, snapshot, treeOf } from './helpers/git-trees.js';
import { SHA, assertNothingStored, call, packTar, put, rawFile, rawHeader, tarOf, until, type PackEntry } from './store-helpers.js';
import { startStoreServer, type StoreServer } from './helpers/daemon.js';

const TAR = { 'content-type': 'application/x-tar' };
const withTree = (tree: string) => ({ ...TAR, 'x-lspd-git-tree': tree });

function write(dir: string, files: Record<string, string>): void {
  for (const [name, content] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, name)), { recursive: true });
    writeFileSync(join(dir, name), content);
  }
}

/** Base commit A, and head commit B changing it in every way a commit can. */
function makeRepo(dir: string): { a: string; b: string } {
  git(dir, 'init', '-q', '-b', 'main');
  write(dir, {
    'src/a.ts': 'export const a = 1;\n',
    'src/b.ts': 'export const b = 2;\n',
    'src/sub/c.ts': 'export const c = 3;\n',
    'bin/run.sh': '#!/bin/sh\necho run\n',
    'tool.sh': '#!/bin/sh\necho tool\n',
    'gone/only.txt': 'only\n',
    'opq/old.txt': 'old\n',
    'opq/keep.txt': 'keep\n',
    'flip/inner.txt': 'inner\n',
    turn: 'a file for now\n',
    'docs/readme.md': '# docs\n',
    'ünï code/名前.ts': 'export {};\n',
    'sort/a.b': 'git sorts me before the directory a\n',
    'sort/a/x': 'x\n',
  });
  chmodSync(join(dir, 'bin/run.sh'), 0o755);
  symlinkSync('src/a.ts', join(dir, 'link'));
  const a = commitAll(dir, 'A');
  unlinkSync(join(dir, 'turn'));
  write(dir, { 'src/a.ts': 'export const a = 10;\n', 'src/new.ts': 'export const n = 4;\n', 'opq/new.txt': 'new\n', 'turn/inner.ts': 'export {};\n' });
  unlinkSync(join(dir, 'src/b.ts'));
  chmodSync(join(dir, 'tool.sh'), 0o755);
  unlinkSync(join(dir, 'link'));
  symlinkSync('src/sub/c.ts', join(dir, 'link'));
  rmSync(join(dir, 'gone'), { recursive: true });
  unlinkSync(join(dir, 'opq/old.txt'));
  rmSync(join(dir, 'flip'), { recursive: true });
  writeFileSync(join(dir, 'flip'), 'a file now\n');
  const b = commitAll(dir, 'B');
  return { a, b };
}

/** The layer from A to B, by hand: whiteouts, an opaque directory (so keep.txt is sent again), changed files. */
const layer: PackEntry[] = [
  { name: 'src/.wh.b.ts', data: '' },
  { name: '.wh.gone', data: '' },
  { name: '.wh.flip', data: '' },
  { name: '.wh.turn', data: '' },
  { name: 'opq/.wh..wh..opq', data: '' },
  { name: 'src/a.ts', data: 'export const a = 10;\n' },
  { name: 'src/new.ts', data: 'export const n = 4;\n' },
  { name: 'tool.sh', data: '#!/bin/sh\necho tool\n', mode: 0o755 },
  { name: 'link', type: 'symlink', linkname: 'src/sub/c.ts' },
  { name: 'opq/keep.txt', data: 'keep\n' },
  { name: 'opq/new.txt', data: 'new\n' },
  { name: 'flip', data: 'a file now\n' },
  { name: 'turn/inner.ts', data: 'export {};\n' },
];
const layerBytes = layer.reduce((n, e) => n + (e.type === undefined ? Buffer.byteLength(e.data ?? '') : 0), 0);

describe('incremental roots', () => {
  let s: StoreServer;
  let repo: string;
  let a: string;
  let b: string;
  const base = () => ({ org: 'acme', repo: 'api', sha: a });
  const head = () => ({ org: 'acme', repo: 'api', sha: b });
  const gauge = async () => (await s.metrics.rootsBytes.get()).values[0]!.value;

  before(async () => {
    s = await startStoreServer();
    repo = mkdtempSync(join(tmpdir(), 'lspd-incr-repo-'));
    ({ a, b } = makeRepo(repo));
  });
  after(async () => {
    await s.destroy();
    rmSync(repo, { recursive: true, force: true });
  });

  it('stores a full upload with its git tree id, checked against the header', async () => {
    const r = await put(s.url, `acme/api/${a}`, archiveOf(repo, a), withTree(treeOf(repo, a)));
    assert.equal(r.status, 201, JSON.stringify(r.body));
    assert.equal(r.body.git_tree, treeOf(repo, a));
    assert.equal(r.body.stored_bytes, r.body.bytes);
    assert.equal(r.body.base, undefined);
  });

  it('composes a layer on the base: the tree a full upload of the head gives, file by file and by git tree id', async () => {
    const before = await gauge();
    const r = await put(s.url, `acme/api/${b}?base=${a}`, await packTar(layer), withTree(treeOf(repo, b)));
    assert.equal(r.status, 201, JSON.stringify(r.body));
    assert.equal(r.body.git_tree, treeOf(repo, b));
    assert.equal(r.body.base, a);
    assert.equal(r.body.stored_bytes, layerBytes, "only the layer's bytes were written");
    // Charged its own disk (its directories, names and tree.idx, its layer's data), never the base's files it links.
    const info = s.store.get({ org: 'acme', repo: 'api', sha: b })!;
    assert.equal(await gauge(), before + info.ownDiskBytes!, 'the quota is charged what the root added');
    assert.ok(info.ownDiskBytes! >= layerBytes && info.ownDiskBytes! < info.diskBytes!, `own ${info.ownDiskBytes}, whole ${info.diskBytes}`);

    const full = await put(s.url, `acme/full/${b}`, archiveOf(repo, b), withTree(treeOf(repo, b)));
    assert.equal(full.status, 201, JSON.stringify(full.body));
    for (const k of ['files', 'bytes', 'languages', 'git_tree'] as const) assert.deepEqual(r.body[k], full.body[k], k);
    const composed = snapshot(s.store.treeDir(head()));
    assert.deepEqual(composed, snapshot(s.store.treeDir({ org: 'acme', repo: 'full', sha: b })));
    assert.ok(!('gone' in composed) && !('src/b.ts' in composed) && !('opq/old.txt' in composed), 'whiteouts and the opaque dir removed');
    assert.match(composed['tool.sh']!, /^file 755 /);

    const ino = (key: { org: string; repo: string; sha: string }, p: string) => statSync(join(s.store.treeDir(key), p)).ino;
    assert.equal(ino(head(), 'src/sub/c.ts'), ino(base(), 'src/sub/c.ts'), "an unchanged file is a link to the base's");
    assert.notEqual(ino(head(), 'src/a.ts'), ino(base(), 'src/a.ts'), "a changed file is the layer's own");
    assert.notEqual(ino(head(), 'opq/keep.txt'), ino(base(), 'opq/keep.txt'), "an opaque dir's files are the layer's");

    const got = await call(s.url, 'GET', `/v1/roots/acme/api/${b}`);
    assert.equal(got.body.stored_bytes, layerBytes);
    assert.equal(got.body.base, a);
  });

  it('answers 409 need_tree naming a base it does not hold, before reading the body', async () => {
    const missing = SHA(0xbad);
    const r = await put(s.url, `acme/api/${SHA(77)}?base=${missing}`, await packTar(layer));
    assert.equal(r.status, 409);
    assert.equal(r.body.error, 'need_tree');
    assert.deepEqual(r.body.root, { org: 'acme', repo: 'api', sha: missing });
    // A base of another repository is not this one's.
    const other = await put(s.url, `acme/other/${SHA(77)}?base=${a}`, await packTar(layer));
    assert.equal(other.status, 409);
    assert.equal((await put(s.url, `acme/api/${SHA(77)}?base=main`, await packTar(layer))).body.error, 'bad_sha');
    assert.equal((await put(s.url, `acme/api/${SHA(77)}`, await packTar(layer), { ...TAR, 'x-lspd-git-tree': 'HEAD' })).body.error, 'bad_request');
  });

  it('refuses a wrong x-lspd-git-tree, full or incremental, and stores nothing', async () => {
    const kept = ['roots/acme/api', 'roots/acme/full'];
    const full = await put(s.url, `acme/api/${SHA(78)}`, archiveOf(repo, a), withTree(treeOf(repo, b)));
    assert.equal(full.status, 422);
    assert.equal(full.body.error, 'tree_mismatch');
    assert.equal(full.body.expected, treeOf(repo, b));
    assert.equal(full.body.computed, treeOf(repo, a));
    assertNothingStored(s.dataDir, kept);
    assert.equal(s.store.get({ org: 'acme', repo: 'api', sha: SHA(78) }), undefined);

    const wrongLayer = layer.filter((e) => e.name !== 'src/new.ts');
    const incr = await put(s.url, `acme/api/${SHA(79)}?base=${a}`, await packTar(wrongLayer), withTree(treeOf(repo, b)));
    assert.equal(incr.status, 422);
    assert.equal(incr.body.error, 'tree_mismatch');
    assertNothingStored(s.dataDir, kept);
    assert.equal(s.store.get({ org: 'acme', repo: 'api', sha: SHA(79) }), undefined);

    // An existing root asked for as another tree: refused, and left as it is.
    const again = await put(s.url, `acme/api/${a}`, archiveOf(repo, a), withTree(treeOf(repo, b)));
    assert.equal(again.status, 422);
    assert.equal(again.body.error, 'tree_mismatch');
    assert.ok(s.store.get(base()));
  });

  describe('hostile layers are refused like any unsafe entry, with nothing stored', () => {
    const whiteout = (name: string) => rawFile(name, '');
    const cases: { title: string; tar: () => Promise<Buffer> | Buffer; entry: string; reason?: RegExp }[] = [
      { title: 'a whiteout escaping the root', tar: () => tarOf(whiteout('../.wh.x')), entry: '../.wh.x', reason: /"\.\."/ },
      { title: 'a whiteout escaping the root from a subdirectory', tar: () => tarOf(whiteout('src/../../.wh.a.ts')), entry: 'src/../../.wh.a.ts' },
      { title: 'a whiteout named ".."', tar: () => tarOf(whiteout('src/.wh...')), entry: 'src/.wh...', reason: /whiteout must name/ },
      { title: 'a whiteout named "."', tar: () => tarOf(whiteout('src/.wh..')), entry: 'src/.wh..', reason: /whiteout must name/ },
      { title: 'a reserved .wh..wh. name', tar: () => tarOf(whiteout('src/.wh..wh.plnk')), entry: 'src/.wh..wh.plnk', reason: /reserved/ },
      {
        title: 'a whiteout that is a directory',
        tar: () => tarOf(rawHeader({ name: 'src/.wh.a.ts/', type: '5', mode: 0o755 })),
        entry: 'src/.wh.a.ts/',
        reason: /empty regular file/,
      },
      { title: 'a whiteout with data', tar: () => tarOf(rawFile('src/.wh.a.ts', 'data')), entry: 'src/.wh.a.ts', reason: /empty regular file/ },
      {
        title: 'a directory replaced by a file without its whiteout',
        tar: () => tarOf(rawFile('src', 'x')),
        entry: 'src',
        reason: /replaces a directory with a file/,
      },
      {
        title: 'a file replaced by a directory without its whiteout',
        tar: () => tarOf(rawFile('tool.sh/x', 'x')),
        entry: 'tool.sh',
        reason: /replaces a file with a directory/,
      },
      {
        title: 'a whiteout inside a directory the layer replaced by a file',
        tar: () => tarOf(whiteout('.wh.docs'), rawFile('docs', 'x'), whiteout('docs/.wh.readme.md')),
        entry: 'docs/.wh.readme.md',
        reason: /replaces a file with a directory/,
      },
      {
        title: 'a whiteout inside a base file',
        tar: () => tarOf(whiteout('tool.sh/.wh.x')),
        entry: 'tool.sh/.wh.x',
        reason: /replaces a file with a directory/,
      },
      { title: 'a whiteout through a base symlink', tar: () => tarOf(whiteout('link/.wh.x')), entry: 'link/.wh.x', reason: /through a symlink/ },
      {
        title: "a hard link into the base's files",
        tar: () => tarOf(rawHeader({ name: 'stolen.ts', type: '1', linkname: 'src/sub/c.ts' })),
        entry: 'stolen.ts',
        reason: /hard link target/,
      },
      {
        title: "a symlink into the base's directory",
        tar: () => tarOf(rawHeader({ name: 'peek', type: '2', linkname: `../../${SHA(1)}/tree/src` })),
        entry: 'peek',
        reason: /leaves the root/,
      },
    ];
    for (const c of cases) {
      it(c.title, async () => {
        const r = await put(s.url, `acme/api/${SHA(90)}?base=${a}`, await c.tar());
        assert.equal(r.status, 422, JSON.stringify(r.body));
        assert.equal(r.body.error, 'unsafe_entry');
        assert.equal(r.body.entry, c.entry);
        if (c.reason) assert.match(String(r.body.reason), c.reason);
        assertNothingStored(s.dataDir, ['roots/acme/api', 'roots/acme/full']);
        assert.equal(s.store.get({ org: 'acme', repo: 'api', sha: SHA(90) }), undefined);
      });
    }

    it('a layer that makes an unchanged base symlink lead out of the root', async () => {
      // x/l -> ../b/.. stays inside while b is a directory; the layer makes b a link to ".".
      const r0 = await put(
        s.url,
        `acme/links/${SHA(1)}`,
        await packTar([
          { name: 'b/f', data: 'f' },
          { name: 'x/l', type: 'symlink', linkname: '../b/..' },
        ]),
      );
      assert.equal(r0.status, 201, JSON.stringify(r0.body));
      const r = await put(s.url, `acme/links/${SHA(2)}?base=${SHA(1)}`, tarOf(rawFile('.wh.b', ''), rawHeader({ name: 'b', type: '2', linkname: '.' })));
      assert.equal(r.status, 422, JSON.stringify(r.body));
      assert.equal(r.body.entry, 'x/l');
      assert.match(String(r.body.reason), /leaves the root/);
      assert.equal(s.store.get({ org: 'acme', repo: 'links', sha: SHA(2) }), undefined);
    });
  });

  it('links a large base (links batched densely) into the same tree a full upload gives', async () => {
    const files: PackEntry[] = [];
    for (let i = 0; i < 6000; i++) files.push({ name: `p${i % 50}/f${i}.ts`, data: `export const v${i} = ${i};\n` });
    files.push({ name: 'p7/link', type: 'symlink', linkname: 'f7.ts' });
    assert.equal((await put(s.url, `acme/big/${SHA(1)}`, await packTar(files))).status, 201);
    const head = files.filter((f) => !f.name.startsWith('p3/') && f.name !== 'p4/f4.ts').map((f) => (f.name === 'p5/f5.ts' ? { ...f, data: 'changed\n' } : f));
    const full = await put(s.url, `acme/big/${SHA(2)}`, await packTar(head));
    assert.equal(full.status, 201);
    const layer = await packTar([
      { name: '.wh.p3', data: '' },
      { name: 'p4/.wh.f4.ts', data: '' },
      { name: 'p5/f5.ts', data: 'changed\n' },
    ]);
    const r = await put(s.url, `acme/big/${SHA(3)}?base=${SHA(1)}`, layer, withTree(String(full.body.git_tree)));
    assert.equal(r.status, 201, JSON.stringify(r.body));
    assert.equal(r.body.files, full.body.files);
    const tree = (n: number) => snapshot(s.store.treeDir({ org: 'acme', repo: 'big', sha: SHA(n) }));
    assert.deepEqual(tree(3), tree(2));
    const ino = (n: number, p: string) => statSync(join(s.store.treeDir({ org: 'acme', repo: 'big', sha: SHA(n) }), p)).ino;
    assert.equal(ino(3, 'p0/f0.ts'), ino(1, 'p0/f0.ts'), 'linked');
    assert.equal(ino(3, 'p49/f5999.ts'), ino(1, 'p49/f5999.ts'), 'linked');
  });

  it('answers 409 need_tree when the base is deleted while the layer streams in, storing nothing', async () => {
    assert.equal(
      (
        await put(
          s.url,
          `acme/gone/${SHA(1)}`,
          await packTar([
            { name: 'a.ts', data: 'a' },
            { name: 'b.ts', data: 'b' },
          ]),
        )
      ).status,
      201,
    );
    const layer = await packTar([{ name: 'a.ts', data: 'changed' }]);
    const body = new PassThrough();
    const answer = put(s.url, `acme/gone/${SHA(2)}?base=${SHA(1)}`, body);
    body.write(layer.subarray(0, layer.length - 1024)); // all but the end-of-archive blocks
    await until(() => readdirSync(join(s.dataDir, 'staging')).length > 0, 10_000, 'the upload to start');
    assert.equal((await call(s.url, 'DELETE', `/v1/roots/acme/gone/${SHA(1)}`)).status, 204);
    body.end(layer.subarray(layer.length - 1024));
    const r = await answer;
    assert.equal(r.status, 409, JSON.stringify(r.body));
    assert.equal(r.body.error, 'need_tree');
    assert.match(String(r.body.message), /removed during the upload/);
    assert.equal(s.store.get({ org: 'acme', repo: 'gone', sha: SHA(2) }), undefined);
    assert.deepEqual(readdirSync(join(s.dataDir, 'staging')), []);
  });

  it('keeps the head whole when the base is deleted, and then charges it in full', async () => {
    const want = snapshot(s.store.treeDir(head()));
    const { diskBytes: headBytes, ownDiskBytes: headOwn } = s.store.get(head())!;
    const before = await gauge();
    const baseBytes = s.store.get(base())!.diskBytes!;
    assert.equal((await call(s.url, 'DELETE', `/v1/roots/acme/api/${a}`)).status, 204);
    assert.equal(s.store.get(base()), undefined);
    assert.deepEqual(snapshot(s.store.treeDir(head())), want);
    assert.equal(statSync(join(s.store.treeDir(head()), 'src/sub/c.ts')).nlink, 1, "the linked file is the head's alone now");
    assert.equal(await gauge(), before - baseBytes - headOwn! + headBytes!);
    // And the head can be a base in turn.
    const r = await put(s.url, `acme/api/${SHA(5)}?base=${b}`, await packTar([{ name: 'src/more.ts', data: 'export {};\n' }]));
    assert.equal(r.status, 201, JSON.stringify(r.body));
    assert.equal(r.body.files, s.store.get(head())!.files + 1);
  });
});
