// FETCH slots are shared between orgs (issue 13): the queue hands jobs out
// round-robin between orgs, and an org runs at most its share of the slots, so one
// org's many uploads cannot hold another org's first fetch behind all of theirs.
// Real FetchManager, real FETCH jail, a registry that hangs (a job runs exactly
// until the test cancels it or its deadline passes).
import assert from 'node:assert/strict';
import { skipOrFail } from './helpers/host.js';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { RootKey } from '../src/store/types.js';
import { startHangingServer, type HangingServer } from './chaos/hanging-server.js';
import { fetchEnv, fixtures, type FetchEnv } from './helpers/fetch-env.js';
import { jailUidEnv } from './helpers/uids.js';

let n = 0;
const keyOf = (org: string): RootKey => ({ org, repo: 'npm-dep', sha: (++n).toString(16).padStart(40, '0') });

describe('fetch slots are shared fairly between orgs', () => {
  let hang: HangingServer;
  before(async () => {
    hang = await startHangingServer();
  });
  after(() => hang?.close());

  /** A FETCH environment whose npm registry hangs, on 16 jail uids of its own. */
  const env = (extra: Record<string, string> = {}) =>
    fetchEnv({ LSPD_NPM_REGISTRY: hang.url, LSPD_FETCH_REGISTRIES: hang.authority, ...jailUidEnv(16), ...extra });

  it('the default two slots: alone, an org runs one; another org starts at once in the other (fetch-slot-hold)', async (t) => {
    const e: FetchEnv = await env();
    try {
      if (e.skipReason) return t.skip(e.skipReason);
      if (!e.tools.npm || !e.tools.node) return t.skip(skipOrFail('npm/node are not installed under /usr'));
      assert.equal(e.config.fetchSlots, 2, 'LSPD_FETCH_SLOTS defaults to 2');
      // The daemon's own configuration, as startDaemon builds the manager: no override.
      const m = e.manager();
      const a = [keyOf('alpha'), keyOf('alpha'), keyOf('alpha')];
      for (const k of a) {
        e.store.put(k, join(fixtures, 'npm-dep'));
        await m.enqueue(k);
      }
      const states = (keys: RootKey[]) => keys.map((k) => m.state(k).state);
      assert.deepEqual(states(a), ['running', 'queued', 'queued'], 'the second slot is kept for another org');

      const b = keyOf('beta');
      e.store.put(b, join(fixtures, 'npm-dep'));
      await m.enqueue(b);
      assert.deepEqual(states([...a, b]), ['running', 'queued', 'queued', 'running'], "beta's first fetch starts at once");

      // alpha's job goes: its next job takes the slot (alpha holds none now), beta's keeps running.
      await e.store.remove(a[0]!);
      assert.deepEqual(states([...a.slice(1), b]), ['running', 'queued', 'running']);
    } finally {
      await e.close();
    }
  });

  it('one slot: jobs start round-robin between orgs, not in upload order', async (t) => {
    const e: FetchEnv = await env({ LSPD_FETCH_TIMEOUT_MS: '1500', LSPD_FETCH_SLOTS: '1' });
    try {
      if (e.skipReason) return t.skip(e.skipReason);
      if (!e.tools.npm || !e.tools.node) return t.skip(skipOrFail('npm/node are not installed under /usr'));
      const m = e.manager();
      const order: string[] = [];
      m.onDone((k) => order.push(`${k.org}:${k.sha.replace(/^0+/, '')}`));
      const keys = [keyOf('alpha'), keyOf('alpha'), keyOf('alpha'), keyOf('beta')];
      for (const k of keys) {
        e.store.put(k, join(fixtures, 'npm-dep'));
        await m.enqueue(k);
      }
      for (const k of keys) assert.equal((await m.wait(k)).state, 'failed', 'each ran until its deadline');
      const [a1, a2, a3, b1] = keys.map((k) => `${k.org}:${k.sha.replace(/^0+/, '')}`);
      // With one slot a job runs to its end: one at a time, alpha's second waits for beta's first.
      assert.deepEqual(order, [a1, b1, a2, a3]);
    } finally {
      await e.close();
    }
  });
});
