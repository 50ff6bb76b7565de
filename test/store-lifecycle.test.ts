// A root's life after upload: GET, DELETE (and who is told), list paging, restart
// persistence and cleanup at open, the disk quota, and the failures that happen
// mid-upload (a client that hangs up, a disk that fills).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { RootKey } from '../src/store/types.js';
import { SHA, assertNothingStored, call, packTar, put, until, walk } from './store-helpers.js';
import { skipOrFail } from './helpers/host.js';
import { startStoreServer, type StoreServer } from './helpers/daemon.js';

const key = (sha: string, org = 'acme', repo = 'api'): RootKey => ({ org, repo, sha });
const small = () => packTar([{ name: 'a.ts', data: 'export const a = 1;\n' }]);
/** A tree of exactly `bytes` bytes of file content. */
const sized = (bytes: number) => packTar([{ name: 'blob.bin', data: Buffer.alloc(bytes, 7) }]);
/** Disk blocks; a root of one file at its top takes 5 beside its data: the tree's top, tree.idx, meta.json, the root and deps dirs. */
const BLOCK = 4096;
const ROOT_BLOCKS = 5;
/** A root of one file of `blocks` blocks is charged this (store/disk-charge.ts). */
const charged = (blocks: number) => (ROOT_BLOCKS + blocks) * BLOCK;

describe('GET, DELETE and list', () => {
  let s: StoreServer;
  before(async () => {
    s = await startStoreServer();
  });
  after(() => s.destroy());

  it('GET answers 404 need:tree for an unknown root, 200 with the root once stored', async () => {
    const missing = await call(s.url, 'GET', `/v1/roots/acme/api/${SHA(1)}`);
    assert.equal(missing.status, 404);
    assert.equal(missing.body.error, 'not_found');
    assert.equal(missing.body.need, 'tree');
    assert.equal((await put(s.url, `acme/api/${SHA(1)}`, await small())).status, 201);
    const got = await call(s.url, 'GET', `/v1/roots/acme/api/${SHA(1)}`);
    assert.equal(got.status, 200);
    assert.deepEqual(got.body, {
      root: key(SHA(1)),
      files: 1,
      bytes: 20,
      stored_bytes: 20,
      git_tree: got.body.git_tree,
      languages: ['typescript'],
      createdAt: got.body.createdAt,
      fetch: { state: 'none' },
      sessions: [],
      org_disk: { bytes: charged(1), quota_bytes: 50 * 1024 ** 3 },
    });
    assert.match(String(got.body.git_tree), /^[0-9a-f]{40}$/);
    assert.ok(!Number.isNaN(Date.parse(String(got.body.createdAt))));
  });

  it('GET and DELETE check the key like PUT does', async () => {
    assert.equal((await call(s.url, 'GET', '/v1/roots/acme/api/main')).body.error, 'bad_sha');
    assert.equal((await call(s.url, 'DELETE', `/v1/roots/_x/api/${SHA(1)}`)).body.error, 'bad_name');
  });

  it('DELETE answers 204, tells onRemove listeners first, removes tree and deps; then 404', async () => {
    const k = key(SHA(2));
    assert.equal((await put(s.url, `acme/api/${k.sha}`, await small())).status, 201);
    writeFileSync(join(s.store.depsDir(k), 'cached.tgz'), 'deps');
    const told: { key: RootKey; reason: string; treeStillThere: boolean; visible: boolean }[] = [];
    const off = s.store.onRemove((rk, reason) => {
      told.push({ key: rk, reason, treeStillThere: existsSync(s.store.treeDir(rk)), visible: s.store.get(rk) !== undefined });
    });
    try {
      const del = await call(s.url, 'DELETE', `/v1/roots/acme/api/${k.sha}`);
      assert.equal(del.status, 204);
      assert.deepEqual(told, [{ key: k, reason: 'deleted', treeStillThere: true, visible: false }]);
      assert.ok(!existsSync(join(s.dataDir, 'roots/acme/api', k.sha)));
      assert.deepEqual(readdirSync(join(s.dataDir, 'trash')), []);
      assert.equal((await call(s.url, 'GET', `/v1/roots/acme/api/${k.sha}`)).status, 404);
      const again = await call(s.url, 'DELETE', `/v1/roots/acme/api/${k.sha}`);
      assert.equal(again.status, 404);
      assert.equal(again.body.error, 'not_found');
    } finally {
      off();
    }
  });

  it('a deleted root can be uploaded again', async () => {
    assert.equal((await put(s.url, `acme/api/${SHA(2)}`, await small())).status, 201);
  });

  it('lists roots in id order, a page at a time, with a cursor', async () => {
    for (const [org, repo, i] of [
      ['beta', 'x', 3],
      ['acme', 'web', 4],
      ['acme', 'api', 5],
      ['zeta', 'z', 6],
    ] as const) {
      assert.equal((await put(s.url, `${org}/${repo}/${SHA(i)}`, await small())).status, 201);
    }
    const all: string[] = [];
    let after: string | undefined;
    let pages = 0;
    do {
      const r = await call(s.url, 'GET', `/v1/roots?limit=2${after ? `&after=${encodeURIComponent(after)}` : ''}`);
      assert.equal(r.status, 200);
      const roots = r.body.roots as { root: RootKey; files: number; fetch: unknown }[];
      assert.ok(roots.length <= 2);
      for (const x of roots) {
        assert.equal(x.files, 1);
        assert.deepEqual(x.fetch, { state: 'none' });
        all.push(`${x.root.org}/${x.root.repo}/${x.root.sha}`);
      }
      after = r.body.next as string | undefined;
      pages++;
    } while (after);
    assert.equal(pages, 3);
    const expected = [`acme/api/${SHA(1)}`, `acme/api/${SHA(2)}`, `acme/api/${SHA(5)}`, `acme/web/${SHA(4)}`, `beta/x/${SHA(3)}`, `zeta/z/${SHA(6)}`];
    assert.deepEqual(all, expected);
    const one = await call(s.url, 'GET', '/v1/roots');
    assert.equal((one.body.roots as unknown[]).length, 6);
    assert.equal(one.body.next, undefined);
  });

  it('refuses a bad page size', async () => {
    for (const q of ['limit=0', 'limit=x', 'limit=100000']) {
      const r = await call(s.url, 'GET', `/v1/roots?${q}`);
      assert.equal(r.status, 400, q);
      assert.equal(r.body.error, 'bad_request');
    }
  });
});

describe('restart', () => {
  it('roots survive a restart; staging, trash and unreadable roots left behind are removed at open', async () => {
    const s1 = await startStoreServer();
    const dataDir = s1.dataDir;
    const r = await put(
      s1.url,
      `acme/api/${SHA(1)}`,
      await packTar([
        { name: 'm.py', data: 'x = 1\n' },
        { name: 'dir/n.go', data: 'package dir\n' },
      ]),
    );
    assert.equal(r.status, 201);
    const before = await call(s1.url, 'GET', `/v1/roots/acme/api/${SHA(1)}`);
    await s1.close();

    // What a crash could leave: a half-written upload, a half-deleted root, and
    // (by hand) a root directory without metadata.
    mkdirSync(join(dataDir, 'staging/0123abcd/tree/src'), { recursive: true });
    writeFileSync(join(dataDir, 'staging/0123abcd/tree/src/half.ts'), 'export');
    mkdirSync(join(dataDir, 'trash/feed/tree'), { recursive: true });
    mkdirSync(join(dataDir, 'roots/acme/api', SHA(9), 'tree'), { recursive: true });

    const s2 = await startStoreServer({ dataDir });
    try {
      const got = await call(s2.url, 'GET', `/v1/roots/acme/api/${SHA(1)}`);
      assert.equal(got.status, 200);
      assert.deepEqual(got.body, before.body);
      assert.deepEqual(readdirSync(join(dataDir, 'staging')), []);
      assert.deepEqual(readdirSync(join(dataDir, 'trash')), []);
      assert.equal((await call(s2.url, 'GET', `/v1/roots/acme/api/${SHA(9)}`)).status, 404);
      assert.deepEqual(readdirSync(join(dataDir, 'roots/acme/api')), [SHA(1)]);
      const list = await call(s2.url, 'GET', '/v1/roots');
      assert.equal((list.body.roots as unknown[]).length, 1);
      assert.equal((await s2.metrics.roots.get()).values[0]?.value, 1);
    } finally {
      await s2.destroy();
    }
  });
});

describe('disk quota', () => {
  const QUOTA = charged(10) * 2.5;
  let s: StoreServer;
  const removed: string[] = [];
  before(async () => {
    // Two roots of 10 blocks of data and a half.
    s = await startStoreServer({ env: { LSPD_DISK_QUOTA_BYTES: String(QUOTA) } });
    s.store.onRemove((k, reason) => void removed.push(`${reason}:${k.sha}`));
  });
  after(() => s.destroy());

  const evictions = async () => (await s.metrics.evictions.get()).values[0]?.value ?? 0;

  it('evicts the least recently used unheld root past the quota, and says so', async () => {
    assert.equal((await put(s.url, `acme/q/${SHA(1)}`, await sized(10 * BLOCK))).status, 201);
    assert.equal((await put(s.url, `acme/q/${SHA(2)}`, await sized(10 * BLOCK))).status, 201);
    await new Promise((r) => setTimeout(r, 5));
    s.store.touch(key(SHA(1), 'acme', 'q')); // 1 is now more recent than 2
    assert.equal((await put(s.url, `acme/q/${SHA(3)}`, await sized(10 * BLOCK))).status, 201);
    assert.equal(s.store.get(key(SHA(2), 'acme', 'q')), undefined);
    assert.ok(s.store.get(key(SHA(1), 'acme', 'q')));
    assert.ok(s.store.get(key(SHA(3), 'acme', 'q')));
    assert.deepEqual(removed, [`evicted:${SHA(2)}`]);
    assert.equal(await evictions(), 1);
    assert.equal((await s.metrics.roots.get()).values[0]?.value, 2);
    assert.equal((await s.metrics.rootsBytes.get()).values[0]?.value, 2 * charged(10));
    await until(
      () => !existsSync(join(s.dataDir, 'roots/acme/q', SHA(2))) && readdirSync(join(s.dataDir, 'trash')).length === 0,
      5000,
      'evicted files removed',
    );
  });

  it('never evicts a held root', async () => {
    s.store.setHoldCheck((k) => k.sha === SHA(3)); // 3 is the oldest now, but held
    await new Promise((r) => setTimeout(r, 5));
    s.store.touch(key(SHA(1), 'acme', 'q'));
    assert.equal((await put(s.url, `acme/q/${SHA(4)}`, await sized(10 * BLOCK))).status, 201);
    assert.ok(s.store.get(key(SHA(3), 'acme', 'q')), 'held root kept');
    assert.equal(s.store.get(key(SHA(1), 'acme', 'q')), undefined, 'the oldest unheld root went');
    assert.equal(await evictions(), 2);
  });

  it('refuses (507) a tree its org has no room for, leaving nothing; one that fits evicts the older roots, never itself', async () => {
    // The org quota defaults to the global one, one root of it held: a root of 20 blocks does not fit what is left.
    const refused = await put(s.url, `acme/q/${SHA(5)}`, await sized(20 * BLOCK));
    assert.equal(refused.status, 507);
    assert.equal(refused.body.error, 'insufficient_storage');
    assert.equal(refused.body.limit, 'org_disk_quota');
    assert.match(String(refused.body.message), new RegExp(`org "acme".*quota is ${QUOTA} bytes, ${charged(10)} of which are held`));
    assert.deepEqual(readdirSync(join(s.dataDir, 'staging')), []);
    assert.ok(!existsSync(join(s.dataDir, 'roots/acme/q', SHA(5))));
    s.store.setHoldCheck(() => false);
    assert.equal((await put(s.url, `acme/q/${SHA(5)}`, await sized(35 * BLOCK))).status, 507, 'bigger than the whole quota');
    assert.equal((await put(s.url, `acme/q/${SHA(5)}`, await sized(32 * BLOCK))).status, 201);
    assert.ok(s.store.get(key(SHA(5), 'acme', 'q')));
    assert.equal(s.store.get(key(SHA(3), 'acme', 'q')), undefined);
    assert.equal(s.store.get(key(SHA(4), 'acme', 'q')), undefined);
    assert.equal(await evictions(), 4);
  });

  it('counts the dependency cache once it is measured', async () => {
    s.store.setHoldCheck(() => false);
    assert.equal((await put(s.url, `acme/q/${SHA(6)}`, await sized(100))).status, 201);
    // 5 (32 blocks) was evicted to fit 6 in; 6 is alone at one block of data.
    assert.equal(s.store.get(key(SHA(5), 'acme', 'q')), undefined);
    writeFileSync(join(s.store.depsDir(key(SHA(6), 'acme', 'q')), 'dep.tgz'), Buffer.alloc(1500));
    await s.store.refreshUsage(key(SHA(6), 'acme', 'q'));
    // Its deps are charged their blocks too.
    assert.equal((await s.metrics.rootsBytes.get()).values[0]?.value, charged(1) + BLOCK);
  });
});

describe('failures mid-upload', () => {
  it('a client that disconnects mid-upload leaves nothing', async () => {
    const s = await startStoreServer();
    try {
      const tarBuf = await packTar(Array.from({ length: 2000 }, (_, i) => ({ name: `d${i % 20}/f${i}.ts`, data: 'x'.repeat(2000) })));
      const { hostname, port } = new URL(s.url);
      const req = http.request({ hostname, port, method: 'PUT', path: `/v1/roots/acme/api/${SHA(1)}`, headers: { 'content-type': 'application/x-tar' } });
      req.on('error', () => {});
      req.write(tarBuf.subarray(0, tarBuf.length >> 1));
      await until(() => walk(s.dataDir).some((p) => p.startsWith('staging/') && p.endsWith('.ts')), 10_000, 'the upload to reach the disk');
      req.destroy();
      // The store records the outcome once the staging dir is gone.
      const aborted = async () =>
        /lspd_upload_seconds_count\{result="aborted"\} 1/.test(await s.metrics.registry.getSingleMetricAsString('lspd_upload_seconds'));
      for (const t0 = Date.now(); !(await aborted());) {
        assert.ok(Date.now() - t0 < 10_000, 'the upload was never recorded as aborted');
        await new Promise((r) => setTimeout(r, 20));
      }
      assertNothingStored(s.dataDir);
      assert.equal(s.store.get(key(SHA(1))), undefined);
    } finally {
      await s.destroy();
    }
  });

  it('507 when the disk fills during an upload, and nothing is left', async (t) => {
    const mnt = mkdtempSync(join(tmpdir(), 'lspd-full-'));
    try {
      execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=4m', 'tmpfs', mnt], { stdio: 'pipe' });
    } catch (err) {
      rmSync(mnt, { recursive: true, force: true });
      t.skip(skipOrFail(`filling a disk needs a small tmpfs, and mounting one failed (needs root): ${(err as Error).message.split('\n')[0]}`));
      return;
    }
    try {
      const s = await startStoreServer({ dataDir: mnt });
      try {
        const big = await packTar([
          ...Array.from({ length: 50 }, (_, i) => ({ name: `small/f${i}.ts`, data: 'y'.repeat(1000) })),
          { name: 'big.bin', data: Buffer.alloc(6 * 1024 * 1024, 1) },
        ]);
        const r = await put(s.url, `acme/api/${SHA(1)}`, big);
        assert.equal(r.status, 507, JSON.stringify(r.body));
        assert.equal(r.body.error, 'insufficient_storage');
        assert.ok(!String(r.body.message).includes(mnt));
        assertNothingStored(mnt);
        // Small files are written in the background: a disk that fills there is a 507 too.
        const many = await packTar(Array.from({ length: 400 }, (_, i) => ({ name: `m/f${i}.ts`, data: 'z'.repeat(12_000) })));
        const r2 = await put(s.url, `acme/api/${SHA(2)}`, many);
        assert.equal(r2.status, 507, JSON.stringify(r2.body));
        assertNothingStored(mnt);
        // And the store still works once there is room.
        assert.equal((await put(s.url, `acme/api/${SHA(3)}`, await small())).status, 201);
      } finally {
        await s.close();
      }
    } finally {
      execFileSync('umount', [mnt]);
      rmSync(mnt, { recursive: true, force: true });
    }
  });
});
