// The pool under concurrency, in the real jail with the native TypeScript server:
// 50 parallel queries on one root share one session and all answer; queries on 10
// roots spawn 10 sessions; idle sessions are reaped (and their processes are gone);
// a leased session is never reaped; close() happens once for every caller; a full
// queue answers 503 busy with retry_after.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { rootId } from '../src/store/types.js';
import { SessionPool } from '../src/lsp/session/pool.js';
import { cannotJail, jailedPids, lspQuery, position, shaOf, startLspd, uploadFixture, waitFor, type Lspd } from './helpers/lsp-harness.js';

const skip = cannotJail();
const FX = 'ts-basic';
const IDLE_MS = 4000;
// Ten repos, not ten commits of one: a new commit's session stops the idle sessions of
// the repo's older commits (lsp-repo-sessions.test.ts), which would take root 0's, idle
// between its answer and a later root's spawn, out from under "one session per root".
const roots = Array.from({ length: 10 }, (_, i) => ({ org: 'acme', repo: `pool-${i}`, sha: shaOf(`pool-root-${i}`) }));

async function spawns(d: Lspd, server = 'typescript'): Promise<number> {
  return (await d.metrics.spawns.get()).values.find((v) => v.labels.server === server)?.value ?? 0;
}

describe('the session pool', { skip }, () => {
  let d: Lspd;
  before(async () => {
    d = await startLspd({
      env: { LSPD_RESULT_CACHE_ENTRIES: '0', LSPD_IDLE_TIMEOUT_MS: String(IDLE_MS), LSPD_REAP_INTERVAL_MS: '250' },
    });
    await Promise.all(roots.map((r) => uploadFixture(d.url, r, FX)));
  });
  after(() => d?.close());

  const queries = [
    { op: 'definition', path: 'src/app.ts', ...position(FX, 'src/app.ts', "greet('world')") },
    { op: 'hover', path: 'src/app.ts', ...position(FX, 'src/app.ts', "greet('again')") },
    { op: 'references', path: 'src/greet.ts', ...position(FX, 'src/greet.ts', 'function greet', 9) },
    { op: 'hover', path: 'src/greet.ts', ...position(FX, 'src/greet.ts', 'class Person', 6) },
    { op: 'documentSymbols', path: 'src/greet.ts' },
  ];

  test('50 parallel queries on one root share one session and all answer', async () => {
    const before = await spawns(d);
    const root = roots[0]!;
    const answers = await Promise.all(Array.from({ length: 50 }, (_, i) => lspQuery(d.url, { ...root, ...queries[i % queries.length] })));
    for (const a of answers) assert.equal(a.status, 200, JSON.stringify(a.body));
    assert.equal(await spawns(d), before + 1);
    assert.equal(d.lsp.pool.sessionsOf(rootId(root)).length, 1);
  });

  test('queries on 10 roots spawn 10 sessions', async () => {
    const before = await spawns(d);
    // Each root's session is looked at as its answer arrives: on a loaded host the
    // first answered can idle past IDLE_MS (and be reaped) before the tenth answers.
    const answers = await Promise.all(
      roots.map(async (r) => ({ ...(await lspQuery(d.url, { ...r, ...queries[0] })), sessions: d.lsp.pool.sessionsOf(rootId(r)).length })),
    );
    for (const a of answers) assert.equal(a.status, 200, JSON.stringify(a.body));
    assert.deepEqual(
      answers.map((a) => a.sessions),
      roots.map(() => 1),
      'one session per root',
    );
    // root 0's session may have been reaped since the last test; every other root's is new
    assert.ok((await spawns(d)) - before >= 9);
  });

  test('idle sessions are reaped and their processes are gone', async () => {
    const reaped = await waitFor(() => d.lsp.pool.size === 0, IDLE_MS + 5000, 50);
    assert.ok(
      reaped,
      `still live: ${d.lsp.pool
        .list()
        .map((s) => s.key.rootId)
        .join(', ')}`,
    );
    assert.ok(await waitFor(() => jailedPids(d).length === 0, 5000), `left: ${jailedPids(d).join(', ')}`);
  });

  test('a leased session is never reaped; released, it is', async () => {
    const row = d.lsp.table.get('typescript')!;
    const r = roots[1]!;
    const lease = d.lsp.pool.acquire({ row, rootId: rootId(r), workspace: '', treeHostDir: d.store.treeDir(r) });
    await lease.session.whenReady(AbortSignal.timeout(30_000));
    lease.session.lastUsed = 0; // idle since the epoch, as far as the reaper can tell
    assert.equal(d.lsp.pool.reap(Date.now() + 10 * IDLE_MS), 0);
    assert.equal(lease.session.state.kind, 'ready');
    lease.release();
    lease.release(); // idempotent
    assert.equal(d.lsp.pool.reap(Date.now() + 10 * IDLE_MS), 1);
    assert.equal(d.lsp.pool.size, 0);
    await lease.session.stop();
    assert.equal(lease.session.state.kind, 'stopped');
  });

  test('close() stops every session once; concurrent closers wait for the same close', async () => {
    const answers = await Promise.all(roots.slice(0, 3).map((r) => lspQuery(d.url, { ...r, ...queries[1] })));
    for (const a of answers) assert.equal(a.status, 200);
    const pool: SessionPool = d.lsp.pool;
    const sessions = pool.list();
    assert.equal(sessions.length, 3);
    const a = pool.close();
    const b = pool.close();
    assert.equal(a, b);
    await Promise.all([a, b]);
    assert.ok(sessions.every((s) => s.state.kind === 'stopped'));
    assert.ok(await waitFor(() => jailedPids(d).length === 0, 5000), `left: ${jailedPids(d).join(', ')}`);
    const late = await lspQuery(d.url, { ...roots[0]!, ...queries[0] });
    assert.equal(late.status, 503);
    assert.equal(late.body.error, 'shutting_down');
  });
});

describe('a full queue answers 503 busy', { skip }, () => {
  let d: Lspd;
  const root = { org: 'acme', repo: 'busy', sha: shaOf('busy') };
  before(async () => {
    // Shares off: this is the global bound with one org (test/tenancy-shares.test.ts has the per-org one).
    d = await startLspd({ env: { LSPD_MAX_QUEUED_QUERIES: '2', LSPD_RESULT_CACHE_ENTRIES: '0', LSPD_ORG_RESERVE_PERCENT: '0' } });
    await uploadFixture(d.url, root, FX);
  });
  after(() => d?.close());

  test('past maxQueuedQueries waiting for a starting server, queries get busy with retry_after', async () => {
    const q = { ...root, op: 'hover', path: 'src/app.ts', ...position(FX, 'src/app.ts', "greet('world')") };
    const answers = await Promise.all(Array.from({ length: 20 }, () => lspQuery(d.url, q)));
    const busy = answers.filter((a) => a.status === 503);
    const ok = answers.filter((a) => a.status === 200);
    assert.ok(busy.length > 0, 'some were refused');
    assert.ok(ok.length >= 2, 'the admitted ones answered');
    assert.equal(busy.length + ok.length, 20);
    for (const b of busy) {
      assert.equal(b.body.error, 'busy');
      assert.equal(typeof b.body.retry_after, 'number');
    }
    const rejected = (await d.metrics.rejected.get()).values.reduce((n, v) => n + v.value, 0);
    assert.equal(rejected, busy.length);
  });
});
