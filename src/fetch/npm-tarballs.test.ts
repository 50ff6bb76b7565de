// The daemon's side of the npm tarball store on the filesystem alone: what a jail
// may leave in its npm cache (links in place of cacache's dirs, bytes under a name
// they do not hash to, digests its lockfile never named) is never followed, stored
// or served; and a lockfile's integrities are read as npm writes them.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { tempDir } from '../../test/helpers/daemon.js';
import { createLogger } from '../log.js';
import { createMetrics } from '../metrics.js';
import { cacheContentPath, lockIntegrities, seedTarballs, takeTarballs, type NpmJobState } from './npm-tarballs.js';
import { PackageStore } from './package-store.js';

const sha512 = (b: Buffer | string) => createHash('sha512').update(b).digest();
const job = (): NpmJobState => ({ wanted: new Set(), seeded: new Map() });

describe('npm tarballs in the package store', () => {
  it('reads sha512 integrities from v3 packages and v1 nested dependencies, nothing else', async () => {
    const d = tempDir('lspd-npm-tarballs-');
    const [a, b, c] = ['a', 'b', 'c'].map((x) => sha512(x));
    writeFileSync(
      join(d, 'package-lock.json'),
      JSON.stringify({
        packages: { '': {}, 'node_modules/a': { integrity: `sha512-${a!.toString('base64')} sha1-AAAA` }, 'node_modules/old': { integrity: 'sha1-AAAA' } },
        dependencies: { b: { integrity: `sha512-${b!.toString('base64')}`, dependencies: { c: { integrity: `sha512-${c!.toString('base64')}` } } } },
      }),
    );
    assert.deepEqual([...(await lockIntegrities(join(d, 'package-lock.json')))].sort(), [a, b, c].map((x) => x!.toString('hex')).sort());
  });

  it('follows no link a jail left in the cache, and stores only named bytes that hash to their name', async () => {
    const d = tempDir('lspd-npm-tarballs-');
    const metrics = createMetrics();
    const store = await PackageStore.open({ dir: join(d, 'store'), log: createLogger('silent'), metrics });
    const good = Buffer.from('a good tarball');
    const goodHex = sha512(good).toString('hex');
    const liar = sha512('what the lockfile named').toString('hex');
    const unnamed = Buffer.from('bytes no lockfile named');
    const unnamedHex = sha512(unnamed).toString('hex');
    const deps = join(d, 'deps');
    mkdirSync(deps);

    // A cache whose cacache dir is a link elsewhere: nothing is read through it.
    const elsewhere = join(d, 'elsewhere');
    mkdirSync(join(elsewhere, 'content-v2', 'sha512', goodHex.slice(0, 2), goodHex.slice(2, 4)), { recursive: true });
    writeFileSync(join(elsewhere, 'content-v2', 'sha512', goodHex.slice(0, 2), goodHex.slice(2, 4), goodHex.slice(4)), good);
    const linked = join(d, 'cache-linked');
    mkdirSync(linked);
    symlinkSync(elsewhere, join(linked, '_cacache'));
    const j1 = job();
    j1.wanted.add(goodHex);
    await takeTarballs(store, 'acme', linked, deps, j1);
    assert.equal(store.bytes('acme') > 0 && existsSync(join(d, 'store', 'acme', 'npm', goodHex)), false, 'not taken through a link');

    // A plain cache: the good one is stored; a name its bytes do not hash to, and bytes no lockfile named, are not.
    const cache = join(d, 'cache');
    for (const [hex, bytes] of [
      [goodHex, good],
      [liar, Buffer.from('something else')],
      [unnamedHex, unnamed],
    ] as const) {
      const p = cacheContentPath(cache, hex);
      mkdirSync(join(p, '..'), { recursive: true });
      writeFileSync(p, bytes);
    }
    const j2 = job();
    for (const h of [goodHex, liar]) j2.wanted.add(h);
    await takeTarballs(store, 'acme', cache, deps, j2);
    assert.deepEqual(readdirSync(join(d, 'store', 'acme', 'npm')), [goodHex]);
    assert.deepEqual(readdirSync(join(deps, 'package-refs', 'npm')), [goodHex], 'the root holds what it named and the store has');
    assert.equal((await metrics.fetchStoreMisses.get()).values.find((v) => v.labels.ecosystem === 'npm')?.value, 1);

    // Seeding into a cache whose fan-out dir is a link: no link is made through it.
    const target = join(d, 'target');
    mkdirSync(target);
    const seedCache = join(d, 'seed-cache');
    mkdirSync(join(seedCache, '_cacache', 'content-v2', 'sha512'), { recursive: true });
    symlinkSync(target, join(seedCache, '_cacache', 'content-v2', 'sha512', goodHex.slice(0, 2)));
    const j3 = job();
    await seedTarballs(store, 'acme', [goodHex], seedCache, j3);
    assert.deepEqual(readdirSync(target), [], 'nothing created where the link points');
    assert.equal(j3.seeded.size, 0);
    // And into a clean one it links the store's inode.
    const clean = join(d, 'clean-cache');
    mkdirSync(clean);
    const j4 = job();
    await seedTarballs(store, 'acme', [goodHex, unnamedHex], clean, j4);
    assert.deepEqual([...j4.seeded.keys()], [goodHex]);
    assert.ok(existsSync(cacheContentPath(clean, goodHex)));
    assert.ok(!existsSync(cacheContentPath(clean, unnamedHex)));
    // Never another org's.
    const j5 = job();
    await seedTarballs(store, 'other', [goodHex], join(d, 'other-cache'), j5);
    assert.equal(j5.seeded.size, 0);
  });
});
