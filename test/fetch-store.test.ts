// The per-org package store (src/fetch/package-store.ts) with the real store, the
// real FETCH jail, real `npm ci` and a hermetic npm registry of 102 generated
// packages: two roots of one org whose lockfiles share 100 packages hold each of
// them once (one inode for the tarball, one per file) and the second asks the
// registry for the one it does not share; another org with the same lockfile
// downloads its own; a tampered store tarball is refused, fetched again and
// replaced; the store is charged to its org once and freed with the org's roots.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readFileSync, readdirSync, statSync, existsSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { gzipSync } from 'node:zlib';
import { PackageStore } from '../src/fetch/package-store.js';
import { createLogger } from '../src/log.js';
import { createMetrics } from '../src/metrics.js';
import { dirBytes } from '../src/store/disk.js';
import type { RootKey } from '../src/store/types.js';
import { tempDir } from './helpers/daemon.js';
import { duBytes as du } from './helpers/du.js';
import { startNpmRegistry, type NpmRegistry } from './helpers/npm-registry.js';
import { metricValue as value, storeEnv, tamper, type StoreEnv } from './helpers/store-env.js';
import { packTar, SHA } from './store-helpers.js';

const name = (i: number) => `sp-${String(i).padStart(3, '0')}`;
/** The files of each generated package, under node_modules/<name>/. */
const PKG_FILES = ['package.json', 'index.js', 'lib/data.js'];

/** Write package `i` as <dir>/<name>-1.0.0.tgz; its sha512 (hex) and lockfile entry. */
async function writePackage(dir: string, i: number): Promise<{ hex: string; entry: Record<string, string> }> {
  const filler = Array.from({ length: 400 }, (_, l) => `  // ${createHash('sha256').update(`${i}/${l}`).digest('hex')}`).join('\n');
  const tar = await packTar([
    { name: 'package/package.json', data: JSON.stringify({ name: name(i), version: '1.0.0', main: 'index.js' }, null, 2) + '\n' },
    { name: 'package/index.js', data: `exports.fn${i} = (x) => x + ${i};\n` },
    { name: 'package/lib/data.js', data: `module.exports = function data() {\n${filler}\n};\n` },
  ]);
  const tgz = gzipSync(tar);
  await writeFile(join(dir, `${name(i)}-1.0.0.tgz`), tgz);
  const digest = createHash('sha512').update(tgz).digest();
  return {
    hex: digest.toString('hex'),
    entry: { version: '1.0.0', resolved: `https://registry.npmjs.org/${name(i)}/-/${name(i)}-1.0.0.tgz`, integrity: `sha512-${digest.toString('base64')}` },
  };
}

describe('the package store, per org and content-addressed', () => {
  let registry: NpmRegistry;
  let env: StoreEnv;
  const pkgs: { hex: string; entry: Record<string, string> }[] = [];
  /** A tree whose lockfile names packages 0..99 and `extra`. */
  const tree = (extra: number) => {
    const ids = [...Array.from({ length: 100 }, (_, i) => i), extra];
    const dependencies = Object.fromEntries(ids.map((i) => [name(i), '1.0.0']));
    const manifest = { name: 'app', version: '1.0.0', dependencies };
    const lock = {
      name: 'app',
      version: '1.0.0',
      lockfileVersion: 3,
      requires: true,
      packages: { '': manifest, ...Object.fromEntries(ids.map((i) => [`node_modules/${name(i)}`, pkgs[i]!.entry])) },
    };
    return [
      { name: 'package.json', data: JSON.stringify(manifest, null, 2) + '\n' },
      { name: 'package-lock.json', data: JSON.stringify(lock, null, 2) + '\n' },
      { name: 'index.js', data: `require('${name(0)}');\n` },
    ];
  };
  const fetchRoot = (k: RootKey, extra: number) => env.fetchRoot(k, tree(extra));
  const modules = (k: RootKey) => join(env.store.depsDir(k), 'npm', 'top', 'node_modules');
  const storeDir = (org: string, kind: 'npm' | 'files') => join(env.dataDir, 'fetch-store', org, kind);
  const tarballHits = (from: number) => registry.hits.slice(from).filter((h) => h.endsWith('.tgz'));
  /** Blocks of dir and everything under it (each inode once), as the store charges itself. */
  const fileBlocks = (dir: string) => {
    if (!existsSync(dir)) return 0;
    const seen = new Set<number>();
    let n = statSync(dir).blocks * 512;
    for (const f of readdirSync(dir, { recursive: true, encoding: 'utf8' })) {
      const st = statSync(join(dir, f));
      if (seen.has(st.ino)) continue;
      seen.add(st.ino);
      n += st.blocks * 512;
    }
    return n;
  };

  const A: RootKey = { org: 'acme', repo: 'one', sha: SHA(1) };
  // Another repo: fetch reuse (same org AND repo, same lockfile) must not be what shares here.
  const B: RootKey = { org: 'acme', repo: 'two', sha: SHA(2) };
  const C: RootKey = { org: 'other', repo: 'one', sha: SHA(3) };
  const D: RootKey = { org: 'acme', repo: 'three', sha: SHA(4) };

  before(async () => {
    const pkgDir = tempDir('lspd-fetch-store-registry-');
    for (let i = 0; i < 102; i++) pkgs.push(await writePackage(pkgDir, i));
    registry = await startNpmRegistry(pkgDir);
    env = await storeEnv('lspd-fetch-store-', { LSPD_NPM_REGISTRY: registry.url, LSPD_FETCH_REGISTRIES: registry.authority }, (t) =>
      !t.npm || !t.node ? 'npm/node are not installed under /usr' : undefined,
    );
  });
  after(async () => {
    await env?.close();
    await registry?.close();
  });

  it('stores each package two lockfiles share once, and the second root downloads only the one it changed', async (t) => {
    if (env.skip) return t.skip(env.skip);
    const h0 = registry.hits.length;
    await fetchRoot(A, 100);
    assert.equal(tarballHits(h0).length, 101, 'the first root downloads every package');

    const h1 = registry.hits.length;
    await fetchRoot(B, 101);
    assert.deepEqual(registry.hits.slice(h1), [`/${name(101)}/-/${name(101)}-1.0.0.tgz`], 'one request: the changed package');

    for (let i = 0; i < 100; i++) {
      for (const f of PKG_FILES) {
        const a = statSync(join(modules(A), name(i), f));
        const b = statSync(join(modules(B), name(i), f));
        assert.equal(a.ino, b.ino, `${name(i)}/${f}: one inode`);
        assert.equal(a.nlink, 3, `${name(i)}/${f}: the store's name and one per root`);
        assert.equal(a.uid, 0);
        assert.equal(a.mode & 0o777, 0o644);
      }
      const tgz = statSync(join(storeDir('acme', 'npm'), pkgs[i]!.hex));
      assert.equal(tgz.nlink, 3, `${name(i)}'s tarball: the store's name and each root's reference`);
      assert.equal(tgz.mode & 0o777, 0o644);
    }
    for (const [k, i] of [
      [A, 100],
      [B, 101],
    ] as const) {
      assert.equal(statSync(join(modules(k), name(i), 'lib/data.js')).nlink, 2, `${name(i)} is one root's`);
      assert.equal(JSON.parse(readFileSync(join(modules(k), name(i), 'package.json'), 'utf8')).name, name(i));
    }
    assert.equal(readdirSync(storeDir('acme', 'npm')).length, 102, 'every tarball once');

    const org = { org: 'acme', ecosystem: 'npm' };
    assert.equal(await value(env.metrics.fetchStoreHits, org), 100);
    assert.equal(await value(env.metrics.fetchStoreMisses, org), 102);
    assert.equal(await value(env.metrics.fetchStoreHits, { org: 'acme', ecosystem: 'files' }), 300, "the second root's 300 shared files linked");
    assert.equal(await value(env.metrics.fetchStoreBytes, org), fileBlocks(storeDir('acme', 'npm')));
    // files/ also holds the org's dir itself, charged under `files`.
    assert.equal(await value(env.metrics.fetchStoreBytes, { org: 'acme', ecosystem: 'files' }), fileBlocks(storeDir('acme', 'files')) + 4096);

    // Charged once: the org's disk is what du counts over its roots and its store together,
    // well under what the two roots would be charged each holding their own copy.
    const charged = await value(env.metrics.orgDiskBytes, { org: 'acme' });
    const roots = join(env.dataDir, 'roots', 'acme');
    const together = du(roots, join(env.dataDir, 'fetch-store', 'acme'));
    assert.ok(Math.abs(charged - together) <= together * 0.1, `charged ${charged} B, du ${together} B`);
    const apart = du(join(roots, 'one')) + du(join(roots, 'two'));
    assert.ok(charged < apart * 0.75, `charged ${charged} B, ${apart} B as two copies`);
    const holds = env.packages.holds('acme')!;
    assert.ok(
      (await dirBytes(env.store.depsDir(B), false, holds)) < (await dirBytes(env.store.depsDir(B))) / 3,
      "B's deps are charged little beside the store",
    );
  });

  it('gives another org nothing: the same lockfile downloads its own, no inode shared', async (t) => {
    if (env.skip) return t.skip(env.skip);
    const h = registry.hits.length;
    await fetchRoot(C, 100);
    assert.equal(tarballHits(h).length, 101, 'every package requested again');
    for (let i = 0; i <= 100; i++) {
      for (const f of PKG_FILES) {
        const a = statSync(join(modules(A), name(i), f));
        const c = statSync(join(modules(C), name(i), f));
        assert.notEqual(a.ino, c.ino, `${name(i)}/${f}: its own inode`);
      }
    }
    assert.equal(await value(env.metrics.fetchStoreHits, { org: 'other', ecosystem: 'npm' }), 0);
    assert.equal(await value(env.metrics.fetchStoreMisses, { org: 'other', ecosystem: 'npm' }), 101);
    assert.equal(readdirSync(storeDir('acme', 'npm')).length, 102, "acme's store unchanged");
    assert.equal(readdirSync(storeDir('other', 'npm')).length, 101);
  });

  it('refuses a tampered tarball: fetched again, and the store keeps the verified one', async (t) => {
    if (env.skip) return t.skip(env.skip);
    const victim = pkgs[50]!.hex;
    const path = join(storeDir('acme', 'npm'), victim);
    const bad = tamper(path, 'tampered', 40);
    const hits = await value(env.metrics.fetchStoreHits, { org: 'acme', ecosystem: 'npm' });
    const misses = await value(env.metrics.fetchStoreMisses, { org: 'acme', ecosystem: 'npm' });

    const h = registry.hits.length;
    await fetchRoot(D, 100);
    assert.deepEqual(tarballHits(h), [`/${name(50)}/-/${name(50)}-1.0.0.tgz`], `only the tampered one again: ${registry.hits.slice(h).join(' ')}`);
    const now = statSync(path);
    assert.notEqual(now.ino, bad, 'the bad entry left the store');
    assert.equal(createHash('sha512').update(readFileSync(path)).digest('hex'), victim, 'and the verified download took its place');
    assert.equal(readFileSync(join(modules(D), name(50), 'index.js'), 'utf8'), 'exports.fn50 = (x) => x + 50;\n');
    assert.equal(await value(env.metrics.fetchStoreHits, { org: 'acme', ecosystem: 'npm' }), hits + 100);
    assert.equal(await value(env.metrics.fetchStoreMisses, { org: 'acme', ecosystem: 'npm' }), misses + 1);
    assert.equal(await value(env.metrics.fetchStoreBytes, { org: 'acme', ecosystem: 'npm' }), fileBlocks(storeDir('acme', 'npm')));
  });

  it("is charged to its org and freed as the org's roots that link it go", async (t) => {
    if (env.skip) return t.skip(env.skip);
    const only = pkgs[101]!.hex; // B's alone
    const shared = join(storeDir('acme', 'npm'), pkgs[0]!.hex);
    const before = statSync(shared).nlink;
    assert.ok(await env.store.delete(B));
    assert.ok(!existsSync(join(storeDir('acme', 'npm'), only)), "the tarball only B named left with B's last link");
    assert.equal(statSync(shared).nlink, before - 1, 'a shared one stays');
    assert.equal(await value(env.metrics.fetchStoreBytes, { org: 'acme', ecosystem: 'npm' }), fileBlocks(storeDir('acme', 'npm')));
    assert.equal(await value(env.metrics.fetchStoreBytes, { org: 'acme', ecosystem: 'files' }), fileBlocks(storeDir('acme', 'files')) + 4096);

    assert.ok(await env.store.delete(A));
    assert.ok(await env.store.delete(D));
    assert.ok(!existsSync(join(env.dataDir, 'fetch-store', 'acme')), 'nothing of acme is left');
    assert.equal(await value(env.metrics.fetchStoreBytes, { org: 'acme', ecosystem: 'npm' }), 0);
    assert.equal(await value(env.metrics.fetchStoreBytes, { org: 'acme', ecosystem: 'files' }), 0);
    assert.equal(await value(env.metrics.orgDiskBytes, { org: 'acme' }), 0);
    assert.equal(readdirSync(storeDir('other', 'npm')).length, 101, "the other org's store is its own");
    assert.ok((await value(env.metrics.orgDiskBytes, { org: 'other' })) >= env.packages.bytes('other'));
    // A restart measures the same store.
    const again = await PackageStore.open({ dir: join(env.dataDir, 'fetch-store'), log: createLogger('silent'), metrics: createMetrics() });
    assert.equal(again.bytes('other'), env.packages.bytes('other'));
    assert.equal(again.bytes('acme'), 0);
  });
});
