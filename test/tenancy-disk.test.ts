// Issue 13's reproductions 4 and 5, through real HTTP and real tar streams, with
// quotas small enough to run in seconds:
// 4. one org's gzip'd uploads of zeros fill the store: its own least recently used
//    roots are evicted, never the older root of an org within its share (the global
//    LRU used to evict it, and its GET answered 404); an upload bigger than its org
//    has room for is refused 507 while it streams and leaves nothing on disk.
// 5. GET /v1/roots with a token limited to some orgs pages over those orgs only:
//    every page is full and no `next` names a root the token may not see.
import assert from 'node:assert/strict';
import { existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { gzipSync } from 'node:zlib';
import { request } from 'undici';
import { hashToken } from '../src/tokens.js';
import { tempDir, startStoreServer, type StoreServer } from './helpers/daemon.js';
import { SHA, assertNothingStored, call, packTar, put } from './store-helpers.js';

const MiB = 1024 * 1024;
const GZIP = { 'content-type': 'application/gzip' };

/**
 * What a root of zeros() is charged beside its files' data (store/disk-charge.ts): a block
 * each for the tree's top, zeros/, tree.idx, meta.json, the root dir and its deps dir.
 */
const ROOT = 6 * 4096;

/** A gzip'd tar of `files` files of zeros, `bytes` each: a few KiB on the wire. */
async function zeros(bytes: number, files = 1): Promise<Buffer> {
  return gzipSync(await packTar(Array.from({ length: files }, (_, i) => ({ name: `zeros/${i}.bin`, data: Buffer.alloc(bytes) }))));
}

describe('disk per org (reproduction 4)', () => {
  describe('one org floods a store shared by two', () => {
    let s: StoreServer;
    before(async () => {
      // The org quota defaults to the global one: only the share rule protects org B.
      s = await startStoreServer({ env: { LSPD_DISK_QUOTA_BYTES: String(4 * MiB) } });
    });
    after(() => s.destroy());

    it("evicts the flooding org's own least recently used roots, never the other org's older root", async () => {
      assert.equal((await put(s.url, `orgb/app/${SHA(1)}`, await zeros(MiB / 2), GZIP)).status, 201);
      for (let i = 1; i <= 4; i++) {
        const r = await put(s.url, `orga/flood/${SHA(i)}`, await zeros(MiB), GZIP);
        assert.equal(r.status, 201, JSON.stringify(r.body));
        // B's root is the least recently used of all, and stays.
        assert.equal((await call(s.url, 'GET', `/v1/roots/orgb/app/${SHA(1)}`)).status, 200, `org B's root after A's upload ${i}`);
      }
      // 4.5 MiB past a 4 MiB quota: A (4 MiB, above its 2 MiB share) lost its oldest root.
      assert.equal((await call(s.url, 'GET', `/v1/roots/orga/flood/${SHA(1)}`)).status, 404);
      for (const i of [2, 3, 4]) assert.equal((await call(s.url, 'GET', `/v1/roots/orga/flood/${SHA(i)}`)).status, 200);
      assert.equal((await s.metrics.evictions.get()).values[0]?.value, 1);
      assert.deepEqual(Object.fromEntries(s.store.orgUsage()), { orga: 3 * (MiB + ROOT), orgb: MiB / 2 + ROOT });

      // A keeps flooding: always its own roots go.
      for (let i = 5; i <= 8; i++) assert.equal((await put(s.url, `orga/flood/${SHA(i)}`, await zeros(MiB), GZIP)).status, 201);
      assert.equal((await call(s.url, 'GET', `/v1/roots/orgb/app/${SHA(1)}`)).status, 200);
      assert.deepEqual(readdirSync(join(s.dataDir, 'roots/orga/flood')).sort(), [SHA(6), SHA(7), SHA(8)]);

      // Where an operator looks: the org's usage and quota on its root.
      const got = await call(s.url, 'GET', `/v1/roots/orgb/app/${SHA(1)}`);
      assert.deepEqual(got.body.org_disk, { bytes: MiB / 2 + ROOT, quota_bytes: 4 * MiB });
      const perOrg = Object.fromEntries((await s.metrics.orgDiskBytes.get()).values.map((v) => [v.labels.org, v.value]));
      assert.deepEqual(perOrg, { orga: 3 * (MiB + ROOT), orgb: MiB / 2 + ROOT }, 'lspd_org_disk_bytes');
    });
  });

  describe('an upload bigger than its org has room for', () => {
    let s: StoreServer;
    before(async () => {
      s = await startStoreServer({ env: { LSPD_DISK_QUOTA_BYTES: String(4 * MiB), LSPD_ORG_DISK_QUOTA_BYTES: String(2 * MiB) } });
    });
    after(() => s.destroy());

    it('is refused 507 while it streams, and leaves nothing behind', async () => {
      assert.equal((await put(s.url, `orgb/app/${SHA(1)}`, await zeros(MiB), GZIP)).status, 201);
      assert.equal((await put(s.url, `orga/big/${SHA(1)}`, await zeros(MiB), GZIP)).status, 201);
      const kept = [`roots/orga/big/${SHA(1)}`, `roots/orgb/app/${SHA(1)}`];

      // One 64 MiB file of zeros (64 KiB gzip'd): refused at its header.
      const one = await put(s.url, `orga/big/${SHA(2)}`, await zeros(64 * MiB), GZIP);
      assert.equal(one.status, 507, JSON.stringify(one.body));
      assert.equal(one.body.error, 'insufficient_storage');
      assert.equal(one.body.limit, 'org_disk_quota');
      assert.match(String(one.body.message), /org "orga".*quota is 2097152 bytes/);
      assertNothingStored(s.dataDir, kept);

      // Many files, each fine alone: refused once their sum passes the room, mid-stream.
      s.store.setHoldCheck((k) => k.org === 'orga'); // A's root is in use: its bytes cannot make room
      const many = await put(s.url, `orga/big/${SHA(3)}`, await zeros(256 * 1024, 7), GZIP);
      assert.equal(many.status, 507, JSON.stringify(many.body));
      assert.match(String(many.body.message), new RegExp(`${MiB + ROOT} of which are held by roots in use, leaving ${MiB - ROOT}`));
      assertNothingStored(s.dataDir, kept);
      assert.ok(!existsSync(join(s.dataDir, 'roots/orga/big', SHA(3))));

      // Released, A's root can make room: the same upload is stored and A's old root goes.
      s.store.setHoldCheck(() => false);
      assert.equal((await put(s.url, `orga/big/${SHA(3)}`, await zeros(256 * 1024, 7), GZIP)).status, 201);
      assert.equal((await call(s.url, 'GET', `/v1/roots/orga/big/${SHA(1)}`)).status, 404);
      assert.equal((await call(s.url, 'GET', `/v1/roots/orgb/app/${SHA(1)}`)).status, 200, 'org B is untouched');
      assert.deepEqual(Object.fromEntries(s.store.orgUsage()), { orga: (7 * MiB) / 4 + ROOT, orgb: MiB + ROOT });
    });
  });
});

describe('listing filters before paging (reproduction 5)', () => {
  let s: StoreServer;
  const admin = 'lspd_admin-0123456789abcdefghijklmnop';
  const limited = 'lspd_ac-0123456789abcdefghijklmnopqrs';
  // Ids sort as alpha/*, bravo/*, charlie/*: the limited token's orgs are on both sides of one it may not see.
  const roots = [...[1, 2, 3].map((i) => `alpha/app/${SHA(i)}`), ...[1, 2, 3].map((i) => `bravo/app/${SHA(i)}`), ...[1, 2].map((i) => `charlie/app/${SHA(i)}`)];
  before(async () => {
    const tokensFile = join(tempDir('lspd-tokens-'), 'tokens.json');
    const entry = (name: string, secret: string, orgs: '*' | string[]) => ({ name, sha256: hashToken(secret), orgs, permissions: ['upload', 'read'] });
    writeFileSync(tokensFile, JSON.stringify({ tokens: [entry('admin', admin, '*'), entry('ac', limited, ['alpha', 'charlie'])] }));
    s = await startStoreServer({ env: { LSPD_TOKENS: tokensFile } });
    const tar = await packTar([{ name: 'a.ts', data: 'export const a = 1;\n' }]);
    for (const id of roots) assert.equal((await put(s.url, id, tar, { 'content-type': 'application/x-tar', authorization: `Bearer ${admin}` })).status, 201);
  });
  after(() => s.destroy());

  const page = async (token: string, query: string) => {
    const r = await request(`${s.url}/v1/roots?${query}`, { headers: { authorization: `Bearer ${token}` } });
    assert.equal(r.statusCode, 200);
    const body = (await r.body.json()) as { roots: { root: { org: string; repo: string; sha: string } }[]; next?: string };
    return { ids: body.roots.map((x) => `${x.root.org}/${x.root.repo}/${x.root.sha}`), next: body.next };
  };
  const all = async (token: string, limit: number) => {
    const pages: { ids: string[]; next?: string }[] = [];
    let after: string | undefined;
    do {
      const p = await page(token, `limit=${limit}${after ? `&after=${encodeURIComponent(after)}` : ''}`);
      pages.push(p);
      after = p.next;
    } while (after !== undefined && pages.length < 20);
    return pages;
  };

  it('pages a limited token over its own orgs only: full pages, and no next naming another org', async () => {
    const visible = roots.filter((id) => !id.startsWith('bravo/'));
    for (const limit of [1, 2, 3]) {
      const pages = await all(limited, limit);
      for (const p of pages) {
        assert.ok(p.ids.length > 0, `an empty page at limit ${limit}`);
        assert.ok(
          p.ids.every((id) => !id.startsWith('bravo/')),
          `page holds another org's root: ${p.ids.join(', ')}`,
        );
        if (p.next !== undefined) assert.ok(!p.next.startsWith('bravo/'), `next names another org's root: ${p.next}`);
      }
      assert.deepEqual(
        pages.flatMap((p) => p.ids),
        visible,
        `limit ${limit}`,
      );
      assert.equal(pages.length, Math.ceil(visible.length / limit), 'no trailing empty page');
    }
    // Past the last root it may see, nothing: not the next org's.
    assert.deepEqual(await page(limited, `limit=1&after=${encodeURIComponent(roots[2]!)}`), { ids: [visible[3]], next: visible[3] });
    assert.deepEqual(await page(limited, `limit=5&after=${encodeURIComponent(visible[4]!)}`), { ids: [], next: undefined });
  });

  it('an unlimited token pages over every org', async () => {
    assert.deepEqual(
      (await all(admin, 3)).flatMap((p) => p.ids),
      roots,
    );
  });
});

describe('generations', () => {
  it('every upload of a key is a new generation, kept in meta.json; an older meta.json gets a stable one at load', async () => {
    const dataDir = tempDir('lspd-generation-');
    const key = { org: 'acme', repo: 'gen', sha: SHA(1) };
    const meta = join(dataDir, 'roots/acme/gen', SHA(1), 'meta.json');
    const tar = await packTar([{ name: 'a.ts', data: 'export const a = 1;\n' }]);
    let s = await startStoreServer({ dataDir });
    try {
      assert.equal((await put(s.url, `acme/gen/${SHA(1)}`, tar)).status, 201);
      const first = s.store.get(key)!.generation;
      assert.equal((JSON.parse(readFileSync(meta, 'utf8')) as { generation: string }).generation, first);
      assert.equal((await call(s.url, 'DELETE', `/v1/roots/acme/gen/${SHA(1)}`)).status, 204);
      assert.equal((await put(s.url, `acme/gen/${SHA(1)}`, tar)).status, 201);
      assert.notEqual(s.store.get(key)!.generation, first);
      await s.close();
      // A root stored before generations existed.
      const { generation: _g, ...old } = JSON.parse(readFileSync(meta, 'utf8')) as Record<string, unknown>;
      writeFileSync(meta, JSON.stringify(old));
      s = await startStoreServer({ dataDir });
      const derived = s.store.get(key)!.generation;
      assert.match(derived, /^legacy-[0-9a-f]{16}$/);
      await s.close();
      s = await startStoreServer({ dataDir });
      assert.equal(s.store.get(key)!.generation, derived, 'the same after another restart');
    } finally {
      await s.destroy();
    }
  });
});
