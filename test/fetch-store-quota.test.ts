// The package store under its org's disk quota, with the real RootStore and the real
// PackageStore on disk (no fetch: the roots' dependency dirs are written here as a
// finished fetch leaves them, sealed and root-owned, then linked by content as a
// job's end does): two roots holding the same 1 MiB file are charged it once; a third
// root's upload past the quota evicts the older roots, and the stored file goes with
// the last root that linked it, so the org ends within its quota.
import assert from 'node:assert/strict';
import { chmodSync, existsSync, mkdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { loadConfig } from '../src/config.js';
import { dedupeFiles } from '../src/fetch/file-dedupe.js';
import { PackageStore } from '../src/fetch/package-store.js';
import { createLogger } from '../src/log.js';
import { createMetrics, type Metrics } from '../src/metrics.js';
import { RootStore } from '../src/store/store.js';
import type { RootKey } from '../src/store/types.js';
import { projectDir, tempDir } from './helpers/daemon.js';
import { skipOrFail } from './helpers/host.js';
import { packTar, SHA } from './store-helpers.js';

const MiB = 1024 * 1024;
const QUOTA = 3 * MiB;

describe('the package store under the org disk quota', () => {
  let store: RootStore;
  let packages: PackageStore;
  let metrics: Metrics;
  let dataDir: string;
  let skip: string | undefined;
  const key = (n: number): RootKey => ({ org: 'acme', repo: 'quota', sha: SHA(n) });
  const orgDisk = async () => (await metrics.orgDiskBytes.get()).values.find((v) => v.labels.org === 'acme')?.value ?? 0;
  /** A finished fetch's output: one sealed 1 MiB file, the same bytes in every root. */
  const fetched = async (k: RootKey) => {
    const dir = join(store.depsDir(k), 'npm', 'top', 'node_modules', 'big');
    mkdirSync(dir, { recursive: true });
    const data = Buffer.alloc(MiB);
    for (let i = 0; i < data.length; i++) data[i] = (i * 7919) % 251;
    writeFileSync(join(dir, 'big.js'), data, { mode: 0o644 });
    await dedupeFiles(packages, k.org, [join(store.depsDir(k), 'npm')]);
    await store.refreshUsage(k);
    return join(dir, 'big.js');
  };

  before(async () => {
    if (process.getuid?.() !== 0) {
      skip = skipOrFail('the package store runs only when lspd runs as root');
      return;
    }
    dataDir = tempDir('lspd-fetch-store-quota-');
    chmodSync(dataDir, 0o755);
    const config = loadConfig({ LSPD_DATA: dataDir, LOG_LEVEL: 'silent', LSPD_ORG_DISK_QUOTA_BYTES: String(QUOTA) }, projectDir);
    const log = createLogger('silent');
    metrics = createMetrics();
    packages = await PackageStore.open({ dir: join(dataDir, 'fetch-store'), log, metrics });
    store = await RootStore.open({ config, log, metrics, packages });
  });
  after(async () => {
    await store?.close();
  });

  it('charges a file two roots link once, and frees it with the last root the quota evicts', async (t) => {
    if (skip) return t.skip(skip);
    const small = [{ name: 'a.js', data: 'module.exports = 1;\n' }];
    await store.put(key(1), Readable.from([await packTar(small)]), { gzip: false });
    const first = await fetched(key(1));
    await store.put(key(2), Readable.from([await packTar(small)]), { gzip: false });
    const second = await fetched(key(2));
    assert.equal(statSync(first).ino, statSync(second).ino, 'one inode');
    assert.equal(statSync(first).nlink, 3, "the store's and each root's name");
    const held = packages.bytes('acme');
    assert.ok(held >= MiB, `the store holds ${held} B`);
    const twoRoots = await orgDisk();
    assert.ok(twoRoots < held + MiB / 4, `charged ${twoRoots} B: the file once, not twice`);

    // 2.5 MiB more: past the 3 MiB quota, so the older roots go, and the stored file with them.
    const big = Buffer.alloc(2.5 * MiB, 'x');
    await store.put(key(3), Readable.from([await packTar([{ name: 'big.bin', data: big }])]), { gzip: false });
    await store.close(); // waits for the evictions' removals and the sweeps they start
    assert.equal(store.get(key(1)), undefined, 'evicted');
    assert.equal(store.get(key(2)), undefined, 'evicted: the stored file is freed only when no root links it');
    assert.ok(store.get(key(3)));
    assert.ok(!existsSync(join(dataDir, 'fetch-store', 'acme')), 'the stored file left with its last root');
    assert.equal(packages.bytes('acme'), 0);
    const now = await orgDisk();
    assert.ok(now <= QUOTA, `the org uses ${now} B of its ${QUOTA}`);
    assert.equal((await metrics.evictions.get()).values[0]?.value, 2);
  });
});
