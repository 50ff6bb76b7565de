// Issue 30, reproduction 5 and item 5: uploads are bounded in time and in number,
// over real HTTP. A body that stalls is cut at LSPD_UPLOAD_READ_TIMEOUT_MS and
// leaves nothing behind (no staging dir, no root, no charge, its upload slot given
// back); the uploads running at once are fair-shared per org (LSPD_MAX_UPLOADS),
// so an org that holds its share gets 503 busy and another org is still admitted.
import assert from 'node:assert/strict';
import { request as httpRequest, type ClientRequest, type IncomingMessage } from 'node:http';
import { readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { SHA, call, packTar, put } from './store-helpers.js';
import { startStoreServer, type StoreServer } from './helpers/daemon.js';

/** A PUT whose body we feed by hand; `answer` resolves when the server answers (possibly before the body ends). */
function openPut(
  url: string,
  path: string,
): { req: ClientRequest; answer: Promise<{ status: number; body: Record<string, unknown>; headers: IncomingMessage['headers'] }> } {
  const u = new URL(`${url}/v1/roots/${path}`);
  const req = httpRequest({ host: u.hostname, port: u.port, path: u.pathname + u.search, method: 'PUT', headers: { 'content-type': 'application/x-tar' } });
  const answer = new Promise<{ status: number; body: Record<string, unknown>; headers: IncomingMessage['headers'] }>((resolve, reject) => {
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString();
        resolve({ status: res.statusCode ?? 0, body: text ? (JSON.parse(text) as Record<string, unknown>) : {}, headers: res.headers });
      });
    });
    req.on('error', reject);
  });
  answer.catch(() => {});
  return { req, answer };
}

const stagingOf = (s: StoreServer) => readdirSync(join(s.dataDir, 'staging'));

async function until(what: string, cond: () => boolean): Promise<void> {
  for (let i = 0; i < 2000 && !cond(); i++) await new Promise((r) => setTimeout(r, 10));
  assert.ok(cond(), what);
}

/** Until `read` gives the same value five polls in a row (50 ms apart), within 20 s. */
async function settled(what: string, read: () => number): Promise<void> {
  let last = read();
  let same = 0;
  for (let i = 0; i < 400 && same < 5; i++) {
    await new Promise((r) => setTimeout(r, 50));
    const now = read();
    same = now === last ? same + 1 : 0;
    last = now;
  }
  assert.ok(same >= 5, what);
}

describe('a stalled upload is cut at the read timeout and leaves nothing behind', () => {
  let s: StoreServer;
  before(async () => {
    s = await startStoreServer({ env: { LSPD_UPLOAD_READ_TIMEOUT_MS: '2000' } });
  });
  after(async () => s?.destroy());

  it('cuts an incremental upload that sent its first header and stopped', async () => {
    const base = await packTar([{ name: 'a.ts', data: 'export const a = 1;\n' }]);
    assert.equal((await put(s.url, `acme/r/${SHA(1)}`, base)).status, 201);
    const charged = s.store.orgUsage().get('acme');
    const layer = await packTar([{ name: 'big.ts', data: 'x'.repeat(100_000) }]);
    const { req, answer } = openPut(s.url, `acme/r/${SHA(2)}?base=${SHA(1)}`);
    req.write(layer.subarray(0, 512 + 4096)); // its header and a little data, then nothing
    await until('the upload began', () => s.store.uploadsRunning('acme') === 1);
    const r = await answer;
    req.destroy();
    assert.equal(r.status, 400, JSON.stringify(r.body));
    assert.equal(r.body.error, 'upload_aborted');
    assert.match(String(r.body.message), /stalled: no data arrived for 2000 ms/);
    assert.deepEqual(stagingOf(s), [], 'the staging dir was removed');
    assert.equal((await call(s.url, 'GET', `/v1/roots/acme/r/${SHA(2)}`)).status, 404);
    assert.equal(s.store.orgUsage().get('acme'), charged, 'nothing charged beyond the base');
    assert.equal(s.store.uploadsRunning('acme'), 0, 'its upload slot was given back');
  });

  it("reads the base's index only once the layer has arrived", async () => {
    // Proved by what the upload finds: an index spoiled while the layer streams is
    // read after it (409: upload the whole tree), so nothing of it was held before.
    const base = await packTar([{ name: 'b.ts', data: 'export const b = 1;\n' }]);
    assert.equal((await put(s.url, `acme/i/${SHA(1)}`, base)).status, 201);
    const layer = await packTar([{ name: 'c.ts', data: 'export const c = 1;\n' }]);
    const { req, answer } = openPut(s.url, `acme/i/${SHA(2)}?base=${SHA(1)}`);
    req.write(layer.subarray(0, 512));
    await until('the upload began', () => s.store.uploadsRunning('acme') === 1);
    writeFileSync(join(s.dataDir, 'roots/acme/i', SHA(1), 'tree.idx'), 'spoiled');
    req.end(layer.subarray(512));
    const r = await answer;
    assert.equal(r.status, 409, JSON.stringify(r.body));
    assert.equal(r.body.error, 'need_tree');
    assert.match(String(r.body.message), /has no tree index/);
    assert.deepEqual(stagingOf(s), []);
  });

  it('cuts a stalled upload of a root that already exists (its body is only read and dropped)', async () => {
    const { req, answer } = openPut(s.url, `acme/r/${SHA(1)}`);
    req.write(Buffer.alloc(512));
    const r = await answer;
    req.destroy();
    assert.equal(r.status, 400, JSON.stringify(r.body));
    assert.equal(r.body.error, 'upload_aborted');
    assert.equal(s.store.uploadsRunning('acme'), 0);
  });

  it('does not cut a slow upload that keeps sending', async () => {
    const tar = await packTar([{ name: 'slow.ts', data: 'y'.repeat(64 * 1024) }]);
    const { req, answer } = openPut(s.url, `acme/r/${SHA(3)}`);
    // Pieces every 250 ms: each gap well under the 2 s timeout, the whole upload over it.
    for (let off = 0; off < tar.length; off += 8192) {
      req.write(tar.subarray(off, off + 8192));
      await new Promise((res) => setTimeout(res, 250));
    }
    req.end();
    const r = await answer;
    assert.equal(r.status, 201, JSON.stringify(r.body));
  });
});

describe('uploads running at once are fair-shared per org', () => {
  let s: StoreServer;
  before(async () => {
    // 4 slots, a reserve of 1 (12%): one org alone holds at most 3.
    s = await startStoreServer({ env: { LSPD_MAX_UPLOADS: '4', LSPD_ORG_RESERVE_PERCENT: '12' } });
  });
  after(async () => s?.destroy());

  it('refuses an org past its share with 503 busy and admits another org meanwhile', async () => {
    const tar = await packTar([{ name: 'a.ts', data: 'export const a = 1;\n' }]);
    const held = [1, 2, 3].map((n) => openPut(s.url, `acme/r/${SHA(n)}`));
    for (const h of held) h.req.write(tar.subarray(0, 512));
    await until('acme holds 3 uploads', () => s.store.uploadsRunning('acme') === 3);

    const refused = await put(s.url, `acme/r/${SHA(4)}`, tar);
    assert.equal(refused.status, 503, JSON.stringify(refused.body));
    assert.equal(refused.body.error, 'busy');
    assert.match(String(refused.body.message), /org acme already has 3 uploads running/);
    assert.equal(refused.body.retry_after, 1);
    assert.equal(s.store.uploadsRunning('acme'), 3);

    const other = await put(s.url, `other/r/${SHA(1)}`, tar);
    assert.equal(other.status, 201, JSON.stringify(other.body));

    for (const h of held) h.req.end(tar.subarray(512));
    for (const h of held) assert.equal((await h.answer).status, 201);
    assert.equal(s.store.uploadsRunning('acme'), 0);
    assert.equal((await put(s.url, `acme/r/${SHA(4)}`, tar)).status, 201, 'slots given back are taken again');
    const refusals = await s.metrics.registry.getSingleMetricAsString('lspd_org_refusals_total');
    assert.match(refusals, /lspd_org_refusals_total\{org="acme",reason="uploads"\} 1/);
  });
});

describe('the memory uploads hold is fair-shared per org', () => {
  let s: StoreServer;
  before(async () => {
    // 8 MiB in 1 MiB units, a reserve of 1: one org alone may hold 7 MiB.
    s = await startStoreServer({ env: { LSPD_UPLOAD_MEMORY_BYTES: String(8 << 20), LSPD_ORG_RESERVE_PERCENT: '12' } });
  });
  after(async () => s?.destroy());

  /** `n` links with ~3 KB targets: each holds ~3.5 KB of names until the tree is indexed. */
  const links = (n: number, dir = 'l') =>
    packTar(Array.from({ length: n }, (_, i) => ({ name: `${dir}/${i}`, type: 'symlink' as const, linkname: `../t${i}/` + 'ab/'.repeat(1000) + 'f' })));

  it('refuses 413 a tree whose names no share could hold, leaving nothing', async () => {
    const r = await put(s.url, `acme/m/${SHA(1)}`, await links(2200));
    assert.equal(r.status, 413, JSON.stringify(r.body));
    assert.equal(r.body.limit, 'upload_memory');
    assert.deepEqual(stagingOf(s), []);
    assert.equal(s.store.uploadMemoryHeld('acme'), 0);
  });

  it("refuses an org's upload past its share with 503 busy while another org's is admitted", async () => {
    const held = await links(1700);
    const a = openPut(s.url, `acme/m/${SHA(2)}`);
    a.req.write(held.subarray(0, 1600 * 4608)); // ~1600 links' headers, then it waits
    await until('acme holds 5 MiB', () => s.store.uploadMemoryHeld('acme') >= 5 << 20);
    // Then until every header written so far is admitted and charged: the charge grows as
    // the parser catches up, and a second upload judged against a half-counted first one
    // could fit (it did, 1 run in 3 on a quiet host).
    await settled('acme stops growing', () => s.store.uploadMemoryHeld('acme'));

    const refused = await put(s.url, `acme/m/${SHA(3)}`, await links(700, 'k'));
    assert.equal(refused.status, 503, JSON.stringify(refused.body));
    assert.equal(refused.body.error, 'busy');
    assert.match(String(refused.body.message), /org acme's uploads hold their share/);
    assert.deepEqual(stagingOf(s).length, 1, "only the held upload's staging is there");

    const other = await put(s.url, `other/m/${SHA(1)}`, await links(100));
    assert.equal(other.status, 201, JSON.stringify(other.body));
    assert.equal(s.store.uploadMemoryHeld('other'), 0, 'given back when the upload is stored');

    a.req.end(held.subarray(1600 * 4608));
    assert.equal((await a.answer).status, 201);
    assert.equal(s.store.uploadMemoryHeld('acme'), 0);
    assert.deepEqual(stagingOf(s), []);
    const refusals = await s.metrics.registry.getSingleMetricAsString('lspd_org_refusals_total');
    assert.match(refusals, /lspd_org_refusals_total\{org="acme",reason="upload_memory"\} 1/);
  });
});
