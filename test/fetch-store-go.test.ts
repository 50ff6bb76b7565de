// Go modules in the per-org package store (src/fetch/go-modules.ts) with the real
// store, the real FETCH jail and real `go mod download all`, hermetic: a module proxy
// on disk (GOPROXY=file://…) of 22 generated modules, deflated as real proxies serve
// them. What a fetch asks of the proxy is proved by what the proxy holds: before each
// later root it holds only the modules the store should not give, so any other
// request of go (a zip, a .mod, an .info) is a 404 and fails the fetch.
//
// Two roots of one org whose go.sum files share 20 modules: the second downloads
// only its one other module, and holds the 20 zips by the same inodes; a third with
// the first's go.sum asks the (empty) proxy for nothing; another org
// with the first go.sum downloads its own; a tampered zip and a tampered .mod in the
// store are dropped and downloaded again, and the fetch is done; the store is charged
// to its org and freed with the org's roots.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { chmodSync, cpSync, existsSync, mkdirSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { goModH1 } from '../src/fetch/go-modules.js';
import { PackageStore } from '../src/fetch/package-store.js';
import { createLogger } from '../src/log.js';
import { createMetrics } from '../src/metrics.js';
import type { RootKey } from '../src/store/types.js';
import { tempDir } from './helpers/daemon.js';
import { writeGoProxy, type GoModule } from './helpers/go-proxy.js';
import { metricValue as value, storeEnv, tamper, type StoreEnv } from './helpers/store-env.js';
import { SHA } from './store-helpers.js';

const N = 22;
/** Module i's path; one has upper-case letters, which Go's cache escapes ("!zed07"). */
const path = (i: number) => (i === 7 ? 'example.com/Zed07' : `example.com/m${String(i).padStart(2, '0')}`);
const escaped = (i: number) => path(i).replace(/[A-Z]/g, (c) => `!${c.toLowerCase()}`);

function goModule(i: number): GoModule {
  const filler = Array.from({ length: 300 }, (_, l) => `// ${createHash('sha256').update(`${i}/${l}`).digest('hex')}`).join('\n');
  return {
    path: path(i),
    version: 'v1.0.0',
    files: {
      'go.mod': `module ${path(i)}\n\ngo 1.19\n`,
      'lib.go': `package m${i}\n\n// F${i} is module ${i}'s.\nfunc F${i}() int { return ${i} }\n\n${filler}\n`,
    },
  };
}

describe('the package store: Go modules by their go.sum hash', () => {
  let env: StoreEnv;
  let fullProxy: string;
  let proxyDir: string;
  const sums: string[] = [];

  /** The proxy the jail reads holds only modules `ids` (all of them when absent). */
  const serve = (ids: number[] = [...Array(N).keys()]) => {
    rmSync(proxyDir, { recursive: true, force: true });
    mkdirSync(join(proxyDir, 'example.com'), { recursive: true, mode: 0o755 });
    for (const i of ids) cpSync(join(fullProxy, escaped(i)), join(proxyDir, escaped(i)), { recursive: true });
  };
  /** A tree whose go.mod requires and imports modules 0..19 and `extra`. */
  const tree = (extra: number) => {
    const ids = [...Array.from({ length: 20 }, (_, i) => i), extra];
    const goMod = `module example.com/app\n\ngo 1.19\n\nrequire (\n${ids.map((i) => `\t${path(i)} v1.0.0\n`).join('')})\n`;
    const main = `package main\n\nimport (\n${ids.map((i) => `\t_ "${path(i)}"\n`).join('')})\n\nfunc main() {}\n`;
    return [
      { name: 'go.mod', data: goMod },
      { name: 'go.sum', data: ids.map((i) => sums[i]).join('') },
      { name: 'main.go', data: main },
    ];
  };
  const fetchRoot = (k: RootKey, extra: number) => env.fetchRoot(k, tree(extra));
  const goStore = (org: string) => join(env.dataDir, 'fetch-store', org, 'go');
  const cache = (k: RootKey, i: number, ext: string) => join(env.store.depsDir(k), 'go', 'pkg', 'mod', 'cache', 'download', escaped(i), '@v', `v1.0.0.${ext}`);
  const extracted = (k: RootKey, i: number) => join(env.store.depsDir(k), 'go', 'pkg', 'mod', `${escaped(i)}@v1.0.0`, 'lib.go');
  const entries = (org: string, ext: string) => (existsSync(goStore(org)) ? readdirSync(goStore(org)).filter((n) => n.endsWith(`.${ext}`)) : []);
  const blocks = (dir: string) =>
    existsSync(dir) ? readdirSync(dir).reduce((n, f) => n + statSync(join(dir, f)).blocks * 512, statSync(dir).blocks * 512) : 0;
  const h1hex = (line: string) => Buffer.from(/h1:(\S+)/.exec(line)![1]!, 'base64').toString('hex');

  const A: RootKey = { org: 'acme', repo: 'one', sha: SHA(1) };
  // Another repo: fetch reuse (same org AND repo, same go.sum) must not be what shares here.
  const B: RootKey = { org: 'acme', repo: 'two', sha: SHA(2) };
  const C: RootKey = { org: 'other', repo: 'one', sha: SHA(3) };
  const D: RootKey = { org: 'acme', repo: 'three', sha: SHA(4) };
  const E: RootKey = { org: 'acme', repo: 'four', sha: SHA(5) };

  before(async () => {
    fullProxy = tempDir('lspd-fetch-store-go-full-');
    for (let i = 0; i < N; i++) sums.push(writeGoProxy(fullProxy, [goModule(i)], 8));
    proxyDir = tempDir('lspd-fetch-store-goproxy-');
    chmodSync(proxyDir, 0o755);
    // Nothing is allowed out: the file:// proxy needs no network, and go.sum is complete.
    env = await storeEnv('lspd-fetch-store-go-', { LSPD_GO_PROXY: `file://${proxyDir}`, LSPD_FETCH_REGISTRIES: '127.0.0.1:9' }, (t) =>
      !t.go ? 'go is not installed under /usr' : undefined,
    );
  });
  after(async () => {
    await env?.close();
  });

  it('stores each module once, verified; a second root downloads only the one its go.sum changed', async (t) => {
    if (env.skip) return t.skip(env.skip);
    serve();
    await fetchRoot(A, 20);
    assert.equal(entries('acme', 'zip').length, 21, 'every zip the first root downloaded');
    assert.equal(entries('acme', 'mod').length, 21);
    assert.equal(entries('acme', 'info').length, 21);
    for (let i = 0; i <= 20; i++) {
      const [zipLine, modLine] = sums[i]!.split('\n') as [string, string];
      const zip = entries('acme', 'zip').find((n) => n.startsWith(`${h1hex(zipLine)}.`));
      assert.ok(zip, `module ${i}'s zip is stored under its go.sum hash`);
      const stored = statSync(join(goStore('acme'), zip));
      const bytes = readFileSync(join(goStore('acme'), zip));
      assert.equal(zip, `${h1hex(zipLine)}.${createHash('sha256').update(bytes).digest('hex')}.zip`);
      assert.equal(stored.ino, statSync(cache(A, i, 'zip')).ino, "the root's own download became the entry");
      assert.equal(stored.uid, 0);
      assert.equal(stored.mode & 0o777, 0o644);
      assert.equal(goModH1(readFileSync(join(goStore('acme'), `${h1hex(modLine)}.mod`))), h1hex(modLine));
    }
    assert.equal(await value(env.metrics.fetchStoreMisses, { org: 'acme', ecosystem: 'go' }), 63);

    // The proxy now holds only module 21: every other request would be a 404.
    serve([21]);
    await fetchRoot(B, 21);
    for (let i = 0; i < 20; i++) {
      const a = statSync(cache(A, i, 'zip'));
      const b = statSync(cache(B, i, 'zip'));
      assert.equal(a.ino, b.ino, `module ${i}: one zip inode`);
      assert.equal(b.nlink, 3, `module ${i}: the store's name and one per root`);
      assert.equal(statSync(cache(B, i, 'mod')).ino, statSync(cache(A, i, 'mod')).ino);
      assert.match(readFileSync(extracted(B, i), 'utf8'), new RegExp(`func F${i}\\(\\) int`));
    }
    assert.equal(statSync(cache(B, 21, 'zip')).nlink, 2, "module 21 is B's alone (and the store's)");
    assert.equal(entries('acme', 'zip').length, 22, 'one zip more');
    assert.equal(await value(env.metrics.fetchStoreHits, { org: 'acme', ecosystem: 'go' }), 60, '20 modules × zip, .mod, .info');
    assert.equal(await value(env.metrics.fetchStoreMisses, { org: 'acme', ecosystem: 'go' }), 66);
    assert.equal(await value(env.metrics.fetchStoreBytes, { org: 'acme', ecosystem: 'go' }), blocks(goStore('acme')));

    // The same go.sum as A's, and an empty proxy: not one request, every module from the store.
    serve([]);
    await fetchRoot(E, 20);
    for (let i = 0; i <= 20; i++) assert.equal(statSync(cache(E, i, 'zip')).ino, statSync(cache(A, i, 'zip')).ino, `module ${i}: one zip inode`);
    assert.equal(await value(env.metrics.fetchStoreHits, { org: 'acme', ecosystem: 'go' }), 60 + 63);
    assert.equal(await value(env.metrics.fetchStoreMisses, { org: 'acme', ecosystem: 'go' }), 66, 'nothing new');
  });

  it('gives another org nothing: the same go.sum downloads its own, no inode shared', async (t) => {
    if (env.skip) return t.skip(env.skip);
    serve();
    await fetchRoot(C, 20);
    for (let i = 0; i <= 20; i++) assert.notEqual(statSync(cache(C, i, 'zip')).ino, statSync(cache(A, i, 'zip')).ino, `module ${i}: its own inode`);
    assert.equal(await value(env.metrics.fetchStoreHits, { org: 'other', ecosystem: 'go' }), 0);
    assert.equal(await value(env.metrics.fetchStoreMisses, { org: 'other', ecosystem: 'go' }), 63);
    assert.equal(entries('other', 'zip').length, 21);
    assert.equal(entries('acme', 'zip').length, 22, "acme's store unchanged");
  });

  it('drops a tampered zip and a tampered go.mod: downloaded again, and the fetch is done', async (t) => {
    if (env.skip) return t.skip(env.skip);
    const zipH1 = h1hex(sums[5]!.split('\n')[0]!);
    const badZip = entries('acme', 'zip').find((n) => n.startsWith(`${zipH1}.`))!;
    const badZipIno = tamper(join(goStore('acme'), badZip), 'tampered', 200);
    const badMod = join(goStore('acme'), `${h1hex(sums[6]!.split('\n')[1]!)}.mod`);
    const badModIno = tamper(badMod, 'X', 0);
    const hits = await value(env.metrics.fetchStoreHits, { org: 'acme', ecosystem: 'go' });
    const misses = await value(env.metrics.fetchStoreMisses, { org: 'acme', ecosystem: 'go' });

    serve([5, 6]); // the two dropped entries are downloaded again; nothing else may be asked
    await fetchRoot(D, 20);
    const now = entries('acme', 'zip').find((n) => n.startsWith(`${zipH1}.`))!;
    assert.notEqual(statSync(join(goStore('acme'), now)).ino, badZipIno, 'the bad zip left the store');
    assert.equal(statSync(join(goStore('acme'), now)).ino, statSync(cache(D, 5, 'zip')).ino, "and D's verified download took its place");
    assert.equal(
      now.split('.')[1],
      createHash('sha256')
        .update(readFileSync(join(goStore('acme'), now)))
        .digest('hex'),
    );
    assert.notEqual(statSync(badMod).ino, badModIno, 'the bad go.mod too');
    assert.equal(goModH1(readFileSync(badMod)), h1hex(sums[6]!.split('\n')[1]!));
    assert.match(readFileSync(extracted(D, 5), 'utf8'), /func F5\(\) int/);
    assert.equal(await value(env.metrics.fetchStoreHits, { org: 'acme', ecosystem: 'go' }), hits + 61);
    assert.equal(await value(env.metrics.fetchStoreMisses, { org: 'acme', ecosystem: 'go' }), misses + 2);
    assert.equal(await value(env.metrics.fetchStoreBytes, { org: 'acme', ecosystem: 'go' }), blocks(goStore('acme')));
  });

  it("is charged to its org and freed as the org's roots that link it go", async (t) => {
    if (env.skip) return t.skip(env.skip);
    const only = entries('acme', 'zip').find((n) => n.startsWith(`${h1hex(sums[21]!.split('\n')[0]!)}.`))!;
    assert.ok(await env.store.delete(B));
    assert.ok(!existsSync(join(goStore('acme'), only)), "the zip only B named left with B's last link");
    assert.equal(entries('acme', 'zip').length, 21);
    assert.equal(await value(env.metrics.fetchStoreBytes, { org: 'acme', ecosystem: 'go' }), blocks(goStore('acme')));
    assert.ok(await env.store.delete(A));
    assert.ok(await env.store.delete(D));
    assert.ok(await env.store.delete(E));
    assert.ok(!existsSync(join(env.dataDir, 'fetch-store', 'acme')), 'nothing of acme is left');
    assert.equal(await value(env.metrics.fetchStoreBytes, { org: 'acme', ecosystem: 'go' }), 0);
    assert.equal(await value(env.metrics.orgDiskBytes, { org: 'acme' }), 0);
    // A restart measures the same store, Go's entries under their kind.
    const again = await PackageStore.open({ dir: join(env.dataDir, 'fetch-store'), log: createLogger('silent'), metrics: createMetrics() });
    assert.equal(again.bytes('other'), env.packages.bytes('other'));
    assert.ok(env.packages.bytes('other') >= blocks(goStore('other')));
  });
});
