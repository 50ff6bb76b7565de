// Issue 30's reproduction 3 at a testable scale: /v1/diff over roots of thousands of
// changed files with long paths (real uploads, a real daemon with its jail proved).
// Every answer is at most LSPD_MAX_ANSWER_BYTES, its cursor walks every changed file
// exactly once, the diff cache keeps only the page it gave (charged its bytes) and
// evicts at its byte budget, and the heap a walk of three such diffs leaves behind,
// after a full GC, is a small fraction of the answers walked (before, each cached
// diff kept every changed path), and a root's removal takes its pages. Asserted by
// bytes and counts, never by time.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { makeTar } from './helpers/ops.js';
import { cannotJail, startLspd, type Lspd } from './helpers/lsp-harness.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

const org = 'acme';
const repo = 'wide';
const MAX_ANSWER = 128 * 1024;
const DIFF_CACHE = 1024 * 1024;
const N = 8000;
const sha = (c: string) => c.repeat(40);
const BASE = sha('a');
const HEAD1 = sha('b');
const HEAD2 = sha('c');

/** ~900-byte paths (the store takes 3 KiB), 40 groups of long directory names: a changed-file list of megabytes. */
const pathOf = (i: number) => `g${i % 40}/${'a'.repeat(220)}/${'b'.repeat(220)}/${'c'.repeat(220)}/f${i}-${'d'.repeat(200)}.txt`;
const treeOf = (ids: number[], text: string) => Object.fromEntries(ids.map((i) => [pathOf(i), `${text} ${i}\n`]));
const range = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => from + i);

type Page = { status: number; bytes: number; body: Record<string, unknown> };
type File = { path: string; change: string };

describe('/v1/diff pages a diff of thousands of changed files (issue 30, reproduction 3)', { skip: cannotJail() }, () => {
  let d: Lspd;
  const diff = async (body: Record<string, unknown>): Promise<Page> => {
    const r = await fetch(`${d.url}/v1/diff`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ org, repo, ...body }),
    });
    const text = await r.text();
    return { status: r.status, bytes: Buffer.byteLength(text), body: JSON.parse(text) as Record<string, unknown> };
  };
  const cacheBytes = async () => (await d.metrics.cacheBytes.get()).values.find((v) => v.labels.cache === 'diff')?.value ?? 0;
  const heapAfterGc = () => {
    gc();
    gc();
    return process.memoryUsage().heapUsed;
  };

  before(async () => {
    d = await startLspd({ env: { LSPD_MAX_ANSWER_BYTES: String(MAX_ANSWER), LSPD_DIFF_CACHE_BYTES: String(DIFF_CACHE) } });
    const put = async (s: string, files: Record<string, string>) => {
      const r = await fetch(`${d.url}/v1/roots/${org}/${repo}/${s}`, {
        method: 'PUT',
        headers: { 'content-type': 'application/x-tar' },
        body: await makeTar(files),
      });
      assert.equal(r.status, 201, await r.text());
    };
    await put(BASE, treeOf(range(0, N), 'base'));
    // Every file modified.
    await put(HEAD1, treeOf(range(0, N), 'head one'));
    // Three quarters modified, a quarter removed, as many added.
    await put(HEAD2, treeOf([...range(0, (N * 3) / 4), ...range(N, N + N / 4)], 'head two'));
  });
  after(() => d?.close());

  test('the cache keeps the page it gave, charged its bytes, and serves it again', { timeout: 120_000 }, async () => {
    assert.equal(await cacheBytes(), 0);
    const p = await diff({ base: BASE, head: HEAD1 });
    assert.equal(p.status, 200, JSON.stringify(p.body).slice(0, 500));
    assert.ok(p.bytes <= MAX_ANSWER, `${p.bytes} bytes`);
    assert.equal(p.body.files_total, N);
    assert.equal(typeof p.body.next_cursor, 'string');
    const held = await cacheBytes();
    // The page as answered (its elapsed_ms aside) and its key: not the 8000 paths (~7 MB) the diff found.
    assert.ok(held >= p.bytes - 64 && held <= p.bytes + 1024, `${held} bytes held for an answer of ${p.bytes}`);
    const again = await diff({ base: BASE, head: HEAD1 });
    assert.equal(again.body.cached, true);
    const strip = ({ elapsed_ms: _e, cached: _c, ...rest }: Record<string, unknown>) => rest;
    assert.deepEqual(strip(again.body), strip(p.body));
    assert.equal(await cacheBytes(), held);
  });

  test('every answer within LSPD_MAX_ANSWER_BYTES; the cursor walks each changed file once; the heap keeps none of it', { timeout: 600_000 }, async (t) => {
    // Measured from the end of the first walk: the code the first one compiles and the pools it fills are not what a cache retains.
    let heapBefore = 0;
    let walked = 0;
    const expect: [string, string, Record<string, number>][] = [
      [BASE, HEAD1, { modified: N }],
      [BASE, HEAD2, { modified: (N * 3) / 4, removed: N / 4, added: N / 4 }],
      [HEAD1, HEAD2, { modified: (N * 3) / 4, removed: N / 4, added: N / 4 }],
    ];
    for (const [base, head, changes] of expect) {
      const seen = new Set<string>();
      const counts: Record<string, number> = {};
      let listed = 0;
      let pages = 0;
      let cursor: string | undefined;
      do {
        const p = await diff({ base, head, ...(cursor ? { cursor } : {}) });
        assert.equal(p.status, 200, JSON.stringify(p.body).slice(0, 500));
        assert.ok(p.bytes <= MAX_ANSWER, `page ${pages}: ${p.bytes} bytes`);
        pages++;
        walked += p.bytes;
        for (const f of p.body.files as File[]) {
          seen.add(f.path);
          counts[f.change] = (counts[f.change] ?? 0) + 1;
          listed++;
        }
        cursor = p.body.next_cursor as string | undefined;
        assert.equal(p.body.truncated, cursor !== undefined);
        assert.equal(p.body.incomplete, false);
        const held = await cacheBytes();
        assert.ok(held <= DIFF_CACHE, `the diff cache holds ${held} bytes`);
      } while (cursor !== undefined);
      const total = Object.values(changes).reduce((n, c) => n + c, 0);
      assert.equal(listed, total, `${base.slice(0, 1)}..${head.slice(0, 1)}: every changed file listed`);
      assert.equal(seen.size, total, 'and each once');
      assert.deepEqual(counts, changes);
      // ~950 bytes a file in 128 KiB pages.
      assert.ok(pages >= Math.ceil((total * 900) / MAX_ANSWER), `${pages} pages`);
      if (heapBefore === 0) {
        heapBefore = heapAfterGc();
        walked = 0;
      }
    }
    const heapAfter = heapAfterGc();
    // What a cache of whole diffs kept: every changed path of each, ~9.5 MB of answers per diff here. What is retained now: the daemon's own noise.
    t.diagnostic(`heap after GC grew ${heapAfter - heapBefore} bytes over two diffs of ${walked} answer bytes`);
    assert.ok(walked > 16 * 1024 * 1024, `${walked} bytes walked`);
    assert.ok(heapAfter - heapBefore < 6 * 1024 * 1024, `the heap grew by ${heapAfter - heapBefore} bytes over a walk of ${walked}`);
  });

  test('at its byte budget the diff cache evicts: the last page walked is served from it, the first computed again', { timeout: 120_000 }, async () => {
    const first = await diff({ base: BASE, head: HEAD1 });
    assert.equal(first.body.cached, undefined, 'evicted by the pages walked since');
    assert.ok((await cacheBytes()) <= DIFF_CACHE);
    const again = await diff({ base: BASE, head: HEAD1 });
    assert.equal(again.body.cached, true);
    // A cursor of one diff is refused by another (its scope names both roots).
    const foreign = await diff({ base: BASE, head: HEAD2, cursor: first.body.next_cursor });
    assert.equal(foreign.status, 400, JSON.stringify(foreign.body));
    // A root's removal takes every page about it, as base or as head.
    const held = await cacheBytes();
    const del = await fetch(`${d.url}/v1/roots/${org}/${repo}/${HEAD1}`, { method: 'DELETE' });
    assert.ok(del.ok, `DELETE: ${del.status}`);
    assert.ok((await cacheBytes()) <= held - again.bytes, `${await cacheBytes()} of ${held} bytes still held`);
  });
});
