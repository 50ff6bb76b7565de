// Why a Python workspace could not be fetched, in the real FETCH jail with the real
// pip (the driver asks the index once, through the egress proxy, before pip): an
// index host that is not in LSPD_FETCH_REGISTRIES, and an allowed one that accepts no
// connection (the proxy answers 504 after its connect timeout; pip alone would say
// "no matching distribution" and retry for minutes). Two reasons, neither the other.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fetchEnv, newKey, scratchDir, type FetchEnv } from './helpers/fetch-env.js';
import { closedPort, stalledPort, type StalledPort } from './helpers/ports.js';
import { jailUidEnv } from './helpers/uids.js';

function pinned(): string {
  const dir = scratchDir('lspd-py-reasons-');
  writeFileSync(join(dir, 'requirements.txt'), 'greet-lib==1.0.0\n');
  return dir;
}

describe('fetch reasons: an index not allowed, an index that does not answer', () => {
  let stalled: StalledPort;
  let forbidden: number;
  let env: FetchEnv;
  before(async () => {
    stalled = await stalledPort();
    forbidden = await closedPort();
    // One environment: the stalled index is allowed, the forbidden one is not (each test points pip at one).
    env = await fetchEnv({ LSPD_FETCH_REGISTRIES: `127.0.0.1:${stalled.port}`, ...jailUidEnv() });
  });
  after(async () => {
    await env?.close();
    stalled?.close();
  });

  const run = async (indexPort: number, repo: string) => {
    const m = env.manager({ config: { ...env.config, pipIndexUrl: `http://127.0.0.1:${indexPort}/simple/` } });
    const key = newKey(repo);
    env.store.put(key, pinned());
    const started = performance.now();
    await m.enqueue(key);
    const view = await m.wait(key);
    return { view, seconds: (performance.now() - started) / 1000 };
  };

  it('a host not on the allowlist: "not an allowed registry"', async (t) => {
    if (env.skipReason) return t.skip(env.skipReason);
    const { view } = await run(forbidden, 'py-forbidden');
    assert.equal(view.state, 'failed', view.log);
    assert.match(view.ecosystems![0]!.reason!, /not an allowed registry/, JSON.stringify(view.ecosystems));
  });

  it('an allowed host that accepts no connection: "did not answer in time", not "not allowed"', async (t) => {
    if (env.skipReason) return t.skip(env.skipReason);
    const { view, seconds } = await run(stalled.port, 'py-stalled');
    assert.equal(view.state, 'failed', view.log);
    const reason = view.ecosystems![0]!.reason!;
    assert.match(reason, /did not answer in time/, JSON.stringify(view.ecosystems));
    assert.doesNotMatch(reason, /not an allowed/);
    t.diagnostic(`the stalled index failed its workspace in ${seconds.toFixed(1)} s`);
  });
});
