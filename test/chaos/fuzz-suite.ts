// Hostile input against a real daemon, from a seeded generator (a failing case is
// replayed by its seed and index): the tar ingest (every answer 201/200, a 4xx
// with a code, or 507; never another 5xx, never a hang; the data dir never holds a
// partial root and GET always agrees with it) and every JSON route's body (never
// a 500, never a non-JSON answer). The daemon must still answer real queries after.
// Shared by fuzz.test.ts (short) and chaos.long.ts (long).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import http from 'node:http';
import { join } from 'node:path';
import { walk } from '../store-helpers.js';
import { cannotJail } from '../helpers/lsp-harness.js';
import { CHAOS_ENV, rootPath, shaOf, tsCall, tsRoots, uidRange, type Root } from './daemons.js';
import { spawnServing, type Serving } from '../helpers/daemon.js';
import { Figures, report, rng, send, waitFor } from './harness.js';
import { jsonCase } from './json-fuzz.js';
import { MiB, jailProcs, rssBytes } from './procs.js';
import { tarCase } from './tar-fuzz.js';

const MAX_FILES = 300;
const CASE_TIMEOUT_MS = 20_000;

export interface FuzzSuiteOptions {
  label: string;
  slot: number;
  seed: number;
  tarCases: number;
  jsonCases: number;
}

export function fuzzSuite(o: FuzzSuiteOptions): void {
  describe(`chaos: hostile input (${o.label}, seed ${o.seed})`, { skip: cannotJail() }, () => {
    let c: Serving;
    let root: Root;

    before(async () => {
      c = await spawnServing({
        uids: uidRange(o.slot),
        env: {
          ...CHAOS_ENV,
          LSPD_MAX_TREE_BYTES: String(32 * MiB),
          LSPD_MAX_FILE_BYTES: String(8 * MiB),
          LSPD_MAX_TREE_FILES: String(MAX_FILES),
          LSPD_QUERY_TIMEOUT_MS: '15000',
        },
      });
      assert.equal(c.notReady, undefined, `the daemon must be ready: ${c.notReady}`);
      root = (await tsRoots(c.url, 1, `fuzz-${o.label}`))[0]!;
    });

    after(async () => {
      if (!c) return;
      await c.daemon.stop();
      assert.ok(await waitFor(() => jailProcs(c.uids).length === 0, 10_000), 'no jail process left');
      c.daemon.cleanup();
    });

    const staging = () => walk(c.daemon.dataDir).filter((p) => p.startsWith('staging/'));
    const rootDir = (k: Root) => join(c.daemon.dataDir, 'roots', k.org, k.repo, k.sha);

    test('tar ingest: random, truncated and crafted archives', async (t) => {
      const f = new Figures();
      const r = rng(o.seed);
      const byKind = new Map<string, Map<string, number>>();
      for (let i = 0; i < o.tarCases; i++) {
        const tc = await tarCase(r, { maxFiles: MAX_FILES });
        const key = { org: 'fuzz', repo: 'tar', sha: shaOf(`tar-${o.seed}-${i}`) };
        const where = `seed ${o.seed} case ${i} (${tc.kind})`;
        const res = await send(c.url, { method: 'PUT', path: rootPath(key), raw: tc.body, headers: tc.headers }, { timeoutMs: CASE_TIMEOUT_MS });
        f.add(res, where);
        f.fuzzCases++;
        const kinds = byKind.get(tc.kind) ?? new Map<string, number>();
        kinds.set(res.code ?? String(res.status), (kinds.get(res.code ?? String(res.status)) ?? 0) + 1);
        byKind.set(tc.kind, kinds);
        assert.notEqual(res.outcome, 'lost', `${where}: ${res.why}`);
        const ok = res.status === 200 || res.status === 201 || (res.status >= 400 && res.status < 500) || res.status === 507;
        assert.ok(ok, `${where}: answered ${res.status} ${JSON.stringify(res.body)}`);
        assert.deepEqual(staging(), [], `${where}: staging left behind`);
        const get = await send(c.url, { method: 'GET', path: rootPath(key) }, { timeoutMs: CASE_TIMEOUT_MS });
        if (res.status === 201) {
          assert.equal(get.status, 200, `${where}: stored but GET says ${get.status}`);
          assert.ok(existsSync(join(rootDir(key), 'meta.json')), `${where}: stored root is whole`);
          const del = await send(c.url, { method: 'DELETE', path: rootPath(key) }, { timeoutMs: CASE_TIMEOUT_MS });
          assert.equal(del.status, 204);
        } else {
          assert.equal(get.status, 404, `${where}: refused but GET says ${get.status}`);
          assert.ok(!existsSync(rootDir(key)), `${where}: a refused upload left ${rootDir(key)}`);
        }
        // Now and then the client itself hangs up half way: the daemon must clean up alone.
        if (i % 50 === 49) {
          await clientAbort(c.url, { org: 'fuzz', repo: 'tar', sha: shaOf(`abort-${o.seed}-${i}`) }, tc.body);
          f.fuzzCases++;
          assert.ok(await waitFor(() => staging().length === 0, 10_000), `abort after case ${i}: staging not cleaned`);
        }
      }
      for (const [kind, m] of [...byKind].sort()) t.diagnostic(`  ${kind}: ${[...m].map(([k, n]) => `${k}×${n}`).join(', ')}`);
      f.fault('tar ingest fuzz', f.lost === 0, `${f.fuzzCases} cases`);
      report(t, `fuzz ${o.label}: tar ingest`, f);
      assert.equal(f.lost, 0, f.lostWhy.join('\n'));
      // (The empty org/repo directories stay; no sha directory may.)
      assert.deepEqual(
        walk(c.daemon.dataDir).filter((p) => /^roots\/fuzz\/[^/]+\/[^/]+/.test(p)),
        [],
        'no fuzz root left behind',
      );
    });

    test('JSON routes: random, wrong-typed, huge, deep and unicode bodies never get a 500', async (t) => {
      const f = new Figures();
      const r = rng(o.seed ^ 0x5eed);
      const byKind = new Map<string, Map<string, number>>();
      for (let i = 0; i < o.jsonCases; i++) {
        const call = jsonCase(r, root);
        const res = await send(c.url, call, { timeoutMs: CASE_TIMEOUT_MS });
        f.add(res, `seed ${o.seed} json case ${i} (${call.kind})`);
        f.fuzzCases++;
        const kinds = byKind.get(call.kind) ?? new Map<string, number>();
        const label = res.code ?? String(res.status);
        kinds.set(label, (kinds.get(label) ?? 0) + 1);
        byKind.set(call.kind, kinds);
        assert.notEqual(
          res.status,
          500,
          `json case ${i} (${call.kind}): ${JSON.stringify(res.body)} for ${JSON.stringify(call.json ?? call.raw?.toString('utf8').slice(0, 200))}`,
        );
      }
      for (const [kind, m] of [...byKind].sort()) t.diagnostic(`  ${kind}: ${[...m].map(([k, n]) => `${k}×${n}`).join(', ')}`);
      f.fault('JSON body fuzz', f.lost === 0, `${f.fuzzCases} cases`);
      report(t, `fuzz ${o.label}: JSON routes`, f);
      assert.equal(f.lost, 0, f.lostWhy.join('\n'));
    });

    test('after the fuzz the daemon still answers real queries, and its memory is bounded', async (t) => {
      const a = await send(c.url, tsCall(root, 0), { timeoutMs: 30_000 });
      assert.equal(a.status, 200, JSON.stringify(a.body));
      assert.equal((await send(c.url, { method: 'GET', path: '/readyz' }, { timeoutMs: 5_000 })).status, 200);
      const rss = rssBytes(c.daemon.child.pid!);
      t.diagnostic(`daemon RSS after the fuzz: ${Math.round(rss / MiB)} MiB`);
      assert.ok(rss < 1024 * MiB, `RSS ${Math.round(rss / MiB)} MiB`);
    });
  });
}

/** Send part of an upload and hang up; the answer is nobody's to read. */
async function clientAbort(url: string, key: Root, body: Buffer): Promise<void> {
  const { hostname, port } = new URL(url);
  const req = http.request({
    hostname,
    port,
    method: 'PUT',
    path: rootPath(key),
    headers: { 'content-type': 'application/x-tar', 'content-length': String(body.length + 100_000) },
  });
  req.on('error', () => {});
  req.write(body);
  await new Promise((res) => setTimeout(res, 100));
  req.destroy();
}
