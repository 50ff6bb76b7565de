// Wheels and composer dists in the per-org package store (src/fetch/python-wheels.ts,
// composer-dists.ts) with the real store, the real FETCH jail, real pip and composer,
// and hermetic index/repository fixtures that count requests: a second root of the
// org with the same lock makes no request for a wheel or dist (pip asks the index
// nothing at all) and links the same store inodes; a lock that adds one package
// downloads that one; another org downloads its own; a tampered store entry is never
// given out, is fetched again and replaced, and the fetch still succeeds.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Metrics } from '../src/metrics.js';
import { RootStore } from '../src/store/store.js';
import type { RootKey } from '../src/store/types.js';
import { startComposerRepo, type ComposerPackage, type ComposerRepo } from './helpers/composer-repo.js';
import { startPypiIndex, type PyIndex, type PyProject } from './helpers/pypi-index.js';
import { metricValue as value, storeEnv, tamper, type StoreEnv } from './helpers/store-env.js';
import { SHA } from './store-helpers.js';

const wheels: PyProject[] = Array.from({ length: 6 }, (_, i) => ({
  name: `wp-${i}`,
  version: '1.0.0',
  // A namespace dir two wheels share: installed in one pip run, both halves land.
  wheel: { [`wp_${i}/__init__.py`]: `N = ${i}\n`, [`nsp/part${i}.py`]: `P = ${i}\n` },
}));
const NO_WHEEL = 'no wheel of this version for this platform on the index (an sdist is never built)';
const windowsOnly: PyProject = { name: 'win-only', version: '2.0', tag: 'cp311-cp311-win_amd64', wheel: { 'win_only/__init__.py': 'W = 1\n' } };
const dists: ComposerPackage[] = Array.from({ length: 6 }, (_, i) => ({
  name: `acme/cp${i}`,
  version: '1.0.0',
  files: { [`src/Cp${i}.php`]: `<?php\nnamespace Acme;\nclass Cp${i} { public function n(): int { return ${i}; } }\n` },
}));

describe('the package store: wheels and composer dists, per org', () => {
  let index: PyIndex;
  let repo: ComposerRepo;
  let env: StoreEnv;
  let store: RootStore;
  let metrics: Metrics;
  let dataDir: string;
  let skip: string | undefined;
  let roots = 0;

  /** A tree with a hashed requirements.txt naming wheels `ids` (and `more` lines) and a composer.lock naming dists `ids`. */
  const tree = (ids: number[], more: string) => {
    const req = ids.map((i) => `wp-${i}==1.0.0 --hash=sha256:${index.sha256(index.wheelName(wheels[i]!))}\n`).join('') + more;
    const lock = repo.lock(ids.map((i) => `acme/cp${i}`));
    const require = Object.fromEntries(ids.map((i) => [`acme/cp${i}`, '1.0.0']));
    return [
      { name: 'requirements.txt', data: req },
      { name: 'composer.json', data: JSON.stringify({ name: 'acme/app', require }) },
      { name: 'composer.lock', data: JSON.stringify(lock, null, 2) },
      { name: 'app.py', data: 'import wp_0\n' },
    ];
  };
  const fetchRoot = async (org: string, ids: number[], more = '', pySkipped = ''): Promise<RootKey> => {
    const k: RootKey = { org, repo: `r${++roots}`, sha: SHA(roots) };
    const v = await env.fetchRoot(k, tree(ids, more));
    assert.deepEqual(v.ecosystems!.map((s) => `${s.ecosystem} ${s.state} ${(s.skipped ?? []).join()}`).sort(), ['composer done ', `python done ${pySkipped}`]);
    return k;
  };
  const site = (k: RootKey) => join(store.depsDir(k), 'python', 'top', 'site-packages');
  const vendor = (k: RootKey) => join(store.depsDir(k), 'composer', 'top', 'vendor');
  const storeDir = (org: string, kind: string) => join(dataDir, 'fetch-store', org, kind);
  const wheelHits = (from: number) => index.hits.slice(from);
  const distHits = (from: number) => repo.hits.slice(from).filter((h) => h.endsWith('.zip'));
  const wheelEntry = (org: string, i: number) => join(storeDir(org, 'python'), `${index.sha256(index.wheelName(wheels[i]!))}-${index.wheelName(wheels[i]!)}`);
  const shasum = (i: number) => (repo.lock([`acme/cp${i}`]).packages as { dist: { shasum: string } }[])[0]!.dist.shasum;
  const blocks = (dir: string) => readdirSync(dir).reduce((n, f) => n + statSync(join(dir, f)).blocks * 512, 0);

  before(async () => {
    index = await startPypiIndex([...wheels, windowsOnly]);
    repo = await startComposerRepo(dists);
    env = await storeEnv(
      'lspd-fetch-store-py-',
      { LSPD_PIP_INDEX_URL: index.url, LSPD_COMPOSER_REPO: repo.url, LSPD_FETCH_REGISTRIES: `${index.authority},${repo.authority}` },
      (t) => (!t.python || !t.pip || !t.composer || !t.php ? 'python3-pip and composer are not installed (images/pins.env)' : undefined),
    );
    ({ store, metrics, dataDir, skip } = env);
  });
  after(async () => {
    await env?.close();
    await index?.close();
    await repo?.close();
  });

  let A: RootKey;
  let A2: RootKey;
  let D: RootKey;
  it('a second root with the same locks downloads nothing and links the same inodes', async (t) => {
    if (skip) return t.skip(skip);
    let w = index.hits.length;
    let d = repo.hits.length;
    A = await fetchRoot('acme', [0, 1, 2, 3, 4]);
    assert.equal(wheelHits(w).filter((h) => h.endsWith('.whl')).length, 5, 'the first root downloads every wheel');
    assert.equal(distHits(d).length, 5, 'and every dist');
    for (let i = 0; i < 5; i++) {
      assert.equal(readFileSync(join(site(A), 'nsp', `part${i}.py`), 'utf8'), `P = ${i}\n`, 'every half of the namespace dir');
    }

    w = index.hits.length;
    d = repo.hits.length;
    A2 = await fetchRoot('acme', [0, 1, 2, 3, 4]);
    assert.deepEqual(wheelHits(w), [], 'pip asked the index nothing');
    assert.deepEqual(distHits(d), [], 'composer downloaded no dist');
    for (let i = 0; i < 5; i++) {
      const whl = statSync(wheelEntry('acme', i));
      assert.equal(whl.nlink, 3, `wp-${i}'s wheel: the store's name and each root's reference`);
      assert.equal(whl.uid, 0);
      assert.equal(whl.mode & 0o777, 0o644);
      const zip = statSync(join(storeDir('acme', 'composer'), shasum(i)));
      assert.equal(zip.nlink, 3, `cp${i}'s dist: the store's name and each root's reference`);
      assert.equal(
        createHash('sha1')
          .update(readFileSync(join(storeDir('acme', 'composer'), shasum(i))))
          .digest('hex'),
        shasum(i),
      );
      const a = statSync(join(site(A), `wp_${i}`, '__init__.py'));
      assert.equal(a.ino, statSync(join(site(A2), `wp_${i}`, '__init__.py')).ino, `wp_${i}: one inode`);
      const php = `cp${i}/src/Cp${i}.php`;
      assert.equal(statSync(join(vendor(A), 'acme', php)).ino, statSync(join(vendor(A2), 'acme', php)).ino, `${php}: one inode`);
      assert.match(readFileSync(join(vendor(A2), 'acme', php), 'utf8'), new RegExp(`class Cp${i}`));
    }
    assert.equal(readdirSync(storeDir('acme', 'python')).length, 5);
    assert.equal(readdirSync(storeDir('acme', 'composer')).length, 5);
    for (const ecosystem of ['python', 'composer']) {
      assert.equal(await value(metrics.fetchStoreHits, { org: 'acme', ecosystem }), 5, ecosystem);
      assert.equal(await value(metrics.fetchStoreMisses, { org: 'acme', ecosystem }), 5, ecosystem);
      assert.equal(await value(metrics.fetchStoreBytes, { org: 'acme', ecosystem }), blocks(storeDir('acme', ecosystem)) + 4096, ecosystem);
    }
    for (const k of [A, A2]) {
      assert.equal(existsSync(join(store.depsDir(k), 'python-store')), false, 'the laid-out wheels are gone after the job');
      assert.equal(existsSync(join(store.depsDir(k), 'python-tmp')), false);
    }
  });

  it('a lock that adds one package downloads that one', async (t) => {
    if (skip) return t.skip(skip);
    const w = index.hits.length;
    const d = repo.hits.length;
    const B = await fetchRoot('acme', [0, 1, 2, 3, 5]);
    // The driver's probe of the index, then pip's own page and the one wheel.
    assert.deepEqual(wheelHits(w), ['/simple/wp-5/', '/simple/wp-5/', `/files/${index.wheelName(wheels[5]!)}`]);
    assert.deepEqual(distHits(d), [`/dists/acme/cp5/${(repo.lock(['acme/cp5']).packages as { dist: { reference: string } }[])[0]!.dist.reference}.zip`]);
    assert.equal(readFileSync(join(site(B), 'wp_5', '__init__.py'), 'utf8'), 'N = 5\n');
    assert.equal(statSync(wheelEntry('acme', 0)).nlink, 4);
    assert.equal(statSync(wheelEntry('acme', 4)).nlink, 3, 'not named by the new lock');
    assert.equal(readdirSync(storeDir('acme', 'python')).length, 6);
  });

  it('another org with the same locks downloads its own; no inode shared', async (t) => {
    if (skip) return t.skip(skip);
    const w = index.hits.length;
    const d = repo.hits.length;
    const C = await fetchRoot('other', [0, 1, 2, 3, 4]);
    assert.equal(wheelHits(w).filter((h) => h.endsWith('.whl')).length, 5);
    assert.equal(distHits(d).length, 5);
    for (let i = 0; i < 5; i++) {
      assert.notEqual(statSync(wheelEntry('other', i)).ino, statSync(wheelEntry('acme', i)).ino);
      assert.notEqual(statSync(join(site(C), `wp_${i}`, '__init__.py')).ino, statSync(join(site(A), `wp_${i}`, '__init__.py')).ino);
    }
    assert.equal(await value(metrics.fetchStoreHits, { org: 'other', ecosystem: 'python' }), 0);
    assert.equal(await value(metrics.fetchStoreHits, { org: 'other', ecosystem: 'composer' }), 0);
  });

  it('never gives out a tampered entry: fetched again, the store keeps the verified one, the fetch succeeds', async (t) => {
    if (skip) return t.skip(skip);
    const whl = wheelEntry('acme', 2);
    const zip = join(storeDir('acme', 'composer'), shasum(2));
    const bad = [whl, zip].map((p) => tamper(p, 'tampered', 40));
    const w = index.hits.length;
    const d = repo.hits.length;
    D = await fetchRoot('acme', [0, 1, 2, 3, 4]);
    assert.deepEqual(
      wheelHits(w).filter((h) => h.endsWith('.whl')),
      [`/files/${index.wheelName(wheels[2]!)}`],
    );
    assert.equal(distHits(d).length, 1, repo.hits.slice(d).join(' '));
    assert.notEqual(statSync(whl).ino, bad[0]);
    assert.notEqual(statSync(zip).ino, bad[1]);
    assert.equal(createHash('sha256').update(readFileSync(whl)).digest('hex'), index.sha256(index.wheelName(wheels[2]!)));
    assert.equal(createHash('sha1').update(readFileSync(zip)).digest('hex'), shasum(2));
    assert.equal(readFileSync(join(site(D), 'wp_2', '__init__.py'), 'utf8'), 'N = 2\n');
    assert.match(readFileSync(join(vendor(D), 'acme', 'cp2', 'src', 'Cp2.php'), 'utf8'), /class Cp2/);
  });

  it('is freed as the roots that name an entry go', async (t) => {
    if (skip) return t.skip(skip);
    for (const k of [A, A2, D]) assert.ok(await store.delete(k));
    assert.ok(!existsSync(wheelEntry('acme', 4)), 'wp-4 left with the last root that named it');
    assert.ok(!existsSync(join(storeDir('acme', 'composer'), shasum(4))), 'and cp4');
    assert.equal(statSync(wheelEntry('acme', 0)).nlink, 2, 'wp-0 is still named by the root that added wp-5');
    assert.equal(statSync(join(storeDir('acme', 'composer'), shasum(0))).nlink, 2);
    for (const ecosystem of ['python', 'composer']) {
      assert.equal(await value(metrics.fetchStoreBytes, { org: 'acme', ecosystem }), blocks(storeDir('acme', ecosystem)) + 4096, ecosystem);
    }
  });

  it('a stored wheel pip cannot install here is asked of the index again, and the fetch still succeeds', async (t) => {
    if (skip) return t.skip(skip);
    // Planted as if an earlier fetch had stored it: the daemon stores only what pip here
    // downloaded, so only another interpreter (an upgrade) could leave one like it.
    const name = index.wheelName(windowsOnly);
    const hex = index.sha256(name);
    const bytes = Buffer.from(await (await fetch(`http://${index.authority}/files/${name}`)).arrayBuffer());
    writeFileSync(join(storeDir('acme', 'python'), `${hex}-${name}`), bytes, { mode: 0o644 });
    const w = index.hits.length;
    const k = await fetchRoot('acme', [0], `win-only==2.0 --hash=sha256:${hex}\n`, `win-only==2.0: ${NO_WHEEL}`);
    assert.ok(!wheelHits(w).includes(`/files/${index.wheelName(wheels[0]!)}`), 'wp-0 still came from the store');
    assert.ok(wheelHits(w).includes('/simple/win-only/'), wheelHits(w).join(' '));
    assert.equal(readFileSync(join(site(k), 'wp_0', '__init__.py'), 'utf8'), 'N = 0\n');
  });
});
