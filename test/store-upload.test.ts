// Uploads that succeed, over real HTTP: plain and gzip'd tars (by Content-Type and
// by Content-Encoding), `git archive` output as is, what lands on disk (modes,
// symlinks, hard links), immutability (created:false) and one store for eight
// concurrent uploads of one root.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { lstatSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, readlinkSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { gzipSync } from 'node:zlib';
import { SHA, assertNothingStored, packTar, put, walk, type PackEntry } from './store-helpers.js';
import { startStoreServer, type StoreServer } from './helpers/daemon.js';

const tree: PackEntry[] = [
  { name: './', type: 'directory' },
  { name: './src/', type: 'directory', mode: 0o700 },
  { name: './src/app.ts', data: 'export const a = 1;\n', mode: 0o600 },
  { name: './bin/run.sh', data: '#!/bin/sh\necho hi\n', mode: 0o700 },
  { name: 'lib/util.PY', data: 'x = 1\n' },
  { name: 'main.go', data: 'package main\n' },
  { name: 'docs/readme.md', data: '# hi\n' },
  { name: 'link-to-app', type: 'symlink', linkname: 'src/app.ts' },
  { name: 'src/docs', type: 'symlink', linkname: '../docs' },
  { name: 'hard-app.ts', type: 'link', linkname: 'src/app.ts' },
  { name: `deep/${'x'.repeat(120)}.rs`, data: 'fn main() {}\n' },
  { name: 'ünï/名前.ts', data: 'export {};\n' },
  { name: 'empty.txt', data: '' },
];
const treeBytes = tree.reduce((n, e) => n + (e.type === undefined || e.type === 'file' ? Buffer.byteLength(e.data ?? '') : 0), 0);

describe('successful uploads', () => {
  let s: StoreServer;
  let tarBuf: Buffer;
  let n = 0;
  before(async () => {
    s = await startStoreServer();
    tarBuf = await packTar(tree);
  });
  after(() => s.destroy());

  it('201 for a plain tar, with files, bytes and sorted languages', async () => {
    const sha = SHA(++n);
    const r = await put(s.url, `acme/api/${sha}`, tarBuf);
    assert.equal(r.status, 201, JSON.stringify(r.body));
    assert.deepEqual(r.body, {
      root: { org: 'acme', repo: 'api', sha },
      created: true,
      files: 11,
      bytes: treeBytes,
      stored_bytes: treeBytes,
      git_tree: r.body.git_tree,
      languages: ['go', 'python', 'rust', 'shell', 'typescript'],
      createdAt: r.body.createdAt,
      fetch: { state: 'none' },
    });
    assert.match(String(r.body.git_tree), /^[0-9a-f]{40}$/);
  });

  it('stores the tree as sent: contents, 0755/0644 modes, symlinks kept, hard links inside', async () => {
    const key = { org: 'acme', repo: 'api', sha: SHA(n) };
    const t = s.store.treeDir(key);
    const mode = (p: string) => statSync(join(t, p)).mode & 0o777;
    assert.equal(readFileSync(join(t, 'src/app.ts'), 'utf8'), 'export const a = 1;\n');
    assert.equal(mode('src/app.ts'), 0o644, 'group/other can read a 0600 file');
    assert.equal(mode('bin/run.sh'), 0o755, 'the executable bit is kept');
    assert.equal(mode('src'), 0o755, 'a 0700 directory is opened up for the jails');
    assert.equal(mode('bin'), 0o755, 'implied directories too');
    assert.equal(mode('.'), 0o755);
    assert.equal(statSync(join(s.dataDir, 'roots/acme/api', key.sha)).mode & 0o777, 0o755, 'the root dir is readable by the jail uids');
    assert.ok(lstatSync(join(t, 'link-to-app')).isSymbolicLink());
    assert.equal(readlinkSync(join(t, 'link-to-app')), 'src/app.ts');
    assert.equal(readlinkSync(join(t, 'src/docs')), '../docs');
    assert.equal(readFileSync(join(t, 'src/docs/readme.md'), 'utf8'), '# hi\n');
    assert.equal(statSync(join(t, 'hard-app.ts')).ino, statSync(join(t, 'src/app.ts')).ino);
    assert.equal(readFileSync(join(t, `deep/${'x'.repeat(120)}.rs`), 'utf8'), 'fn main() {}\n');
    assert.equal(readFileSync(join(t, 'ünï/名前.ts'), 'utf8'), 'export {};\n');
    assert.equal(statSync(join(t, 'empty.txt')).size, 0);
    assert.deepEqual(readdirSync(s.store.depsDir(key)), [], 'the dependency dir exists, empty');
    assert.deepEqual(
      walk(s.dataDir).filter((p) => p.startsWith('staging') || p.startsWith('trash')),
      [],
    );
  });

  it("201 for a gzip'd tar by Content-Type, and by Content-Encoding", async () => {
    const variants: Record<string, string>[] = [
      { 'content-type': 'application/gzip' },
      { 'content-type': 'application/x-gzip' },
      { 'content-type': 'application/x-tar', 'content-encoding': 'gzip' },
      { 'content-type': 'application/octet-stream', 'content-encoding': 'gzip' },
    ];
    for (const headers of variants) {
      const r = await put(s.url, `acme/api/${SHA(++n)}`, gzipSync(tarBuf), headers);
      assert.equal(r.status, 201, JSON.stringify({ headers, body: r.body }));
      assert.equal(r.body.files, 11);
      assert.equal(r.body.bytes, treeBytes);
    }
  });

  it('takes the body in any chunking', async () => {
    const chunks = function* () {
      for (let i = 0; i < tarBuf.length; i += 333) yield tarBuf.subarray(i, i + 333);
    };
    const r = await put(s.url, `acme/api/${SHA(++n)}`, Readable.from(chunks()));
    assert.equal(r.status, 201, JSON.stringify(r.body));
    assert.equal(r.body.files, 11);
  });

  it("takes `git archive` output as is (pax_global_header), plain and gzip'd, under a 64-hex sha", async (t) => {
    const repo = mkdtempSync(join(tmpdir(), 'lspd-git-'));
    t.after(() => rmSync(repo, { recursive: true, force: true }));
    const git = (...args: string[]) => execFileSync('git', ['-C', repo, '-c', 'user.name=t', '-c', 'user.email=t@t', ...args]);
    git('init', '-q');
    mkdirSync(join(repo, 'pkg'));
    writeFileSync(join(repo, 'pkg/mod.go'), 'package pkg\n');
    writeFileSync(join(repo, 'index.ts'), 'export {};\n');
    writeFileSync(join(repo, 'run.sh'), '#!/bin/sh\n', { mode: 0o755 });
    symlinkSync('pkg/mod.go', join(repo, 'alias.go'));
    git('add', '.');
    git('commit', '-qm', 'x');
    for (const [format, headers] of [
      ['tar', { 'content-type': 'application/x-tar' }],
      ['tar.gz', { 'content-type': 'application/gzip' }],
    ] as const) {
      const body = git('archive', `--format=${format}`, 'HEAD');
      assert.ok(format !== 'tar' || body.includes('pax_global_header'), 'git archive writes a global header');
      const sha = ((++n).toString(16) + 'f'.repeat(64)).slice(0, 64);
      const r = await put(s.url, `acme/git/${sha}`, body, headers);
      assert.equal(r.status, 201, JSON.stringify(r.body));
      assert.equal(r.body.files, 4);
      assert.deepEqual(r.body.languages, ['go', 'shell', 'typescript']);
      const treeDir = s.store.treeDir({ org: 'acme', repo: 'git', sha });
      assert.deepEqual(readdirSync(treeDir).sort(), ['alias.go', 'index.ts', 'pkg', 'run.sh']);
      assert.equal(readlinkSync(join(treeDir, 'alias.go')), 'pkg/mod.go');
    }
  });

  it('an existing root answers 200 created:false and changes nothing', async () => {
    const sha = SHA(++n);
    const first = await put(s.url, `acme/api/${sha}`, tarBuf);
    assert.equal(first.status, 201);
    const metaPath = join(s.dataDir, 'roots/acme/api', sha, 'meta.json');
    const before = { meta: readFileSync(metaPath, 'utf8'), mtime: statSync(metaPath).mtimeMs };
    const other = await packTar([{ name: 'other.rb', data: 'puts 1\n' }]);
    const again = await put(s.url, `acme/api/${sha}`, other);
    assert.equal(again.status, 200, JSON.stringify(again.body));
    assert.equal(again.body.created, false);
    assert.equal(again.body.files, 11, 'the answer describes the stored tree, not the new body');
    assert.deepEqual(again.body.languages, first.body.languages);
    assert.equal(readFileSync(metaPath, 'utf8'), before.meta);
    assert.equal(statSync(metaPath).mtimeMs, before.mtime);
    assert.throws(() => statSync(join(s.store.treeDir({ org: 'acme', repo: 'api', sha }), 'other.rb')));
    assertNothingStored(
      s.dataDir,
      walk(s.dataDir).filter((p) => p.startsWith('roots/')),
    );
  });

  it('eight concurrent uploads of one root store it once', async () => {
    const sha = SHA(++n);
    const answers = await Promise.all(Array.from({ length: 8 }, () => put(s.url, `acme/race/${sha}`, tarBuf)));
    const statuses = answers.map((a) => a.status).sort();
    assert.deepEqual(statuses, [200, 200, 200, 200, 200, 200, 200, 201]);
    assert.equal(answers.filter((a) => a.body.created === true).length, 1);
    for (const a of answers) assert.equal(a.body.files, 11);
    assert.deepEqual(readdirSync(join(s.dataDir, 'roots/acme/race')), [sha]);
    assert.deepEqual(readdirSync(join(s.dataDir, 'staging')), []);
  });
});
