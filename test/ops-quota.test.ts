// The disk quota with real sessions: under a quota that fits two fixture roots, a
// root whose language-server session is held by a query (a real native TS 7
// session in the real SERVE jail) is never evicted, however old; the least recently
// used unheld roots go instead. Once the lease is released, the held root is the
// oldest and goes next, and its session is stopped with it.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { rootId } from '../src/store/types.js';
import { cannotJail, shaOf, startLspd, uploadFixture, waitFor, type Lspd } from './helpers/lsp-harness.js';

const FX = 'ts-basic';
const key = (i: number) => ({ org: 'acme', repo: 'quota', sha: shaOf(`quota-${i}`) });

describe('disk quota with held sessions', { skip: cannotJail() }, () => {
  let d: Lspd;
  let fixtureBytes = 0;
  before(async () => {
    // Learn what the fixture is charged on a throwaway daemon, then size the quota to two roots.
    const probe = await startLspd();
    await uploadFixture(probe.url, key(0), FX);
    fixtureBytes = probe.store.orgUsage().get(key(0).org)!;
    await probe.close();
    d = await startLspd({ env: { LSPD_DISK_QUOTA_BYTES: String(Math.floor(fixtureBytes * 2.5)) } });
  });
  after(() => d?.close());

  test('a root a session holds is never evicted; released, it is the next to go', async () => {
    await uploadFixture(d.url, key(1), FX);
    const row = d.lsp.table.get('typescript')!;
    const lease = d.lsp.pool.acquire({ row, rootId: rootId(key(1)), workspace: '', treeHostDir: d.store.treeDir(key(1)) });
    try {
      await lease.session.whenReady(AbortSignal.timeout(30_000));
      for (const i of [2, 3, 4]) await uploadFixture(d.url, key(i), FX);
      assert.ok(d.store.get(key(1)), 'the held root is kept although it is the least recently used');
      assert.equal(d.store.get(key(2)), undefined, 'the oldest unheld root was evicted');
      assert.ok(d.store.get(key(4)), 'the root just stored is kept');
      assert.equal(lease.session.state.kind, 'ready', 'the held session kept running');
      assert.ok((await d.metrics.evictions.get()).values[0]!.value >= 2);
    } finally {
      lease.release();
    }
    await uploadFixture(d.url, key(5), FX);
    assert.equal(d.store.get(key(1)), undefined, 'released, the oldest root is evicted');
    assert.ok(await waitFor(() => d.lsp.pool.sessionsOf(rootId(key(1))).length === 0, 10_000, 50), 'the evicted root has no session left');
  });
});
