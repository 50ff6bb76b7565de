// Jail uids and FETCH egress connections are shared fairly between orgs (issue 13):
// an org past its share is refused (503 busy at spawn; 503 from the egress proxy to
// the tool inside its jail) while another org's jail starts and connects. Real
// jails (bwrap, seccomp, cgroups), the real egress proxy reached through the in-jail
// forwarder, and a "registry" on 127.0.0.1 that holds every connection open.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { loadConfig } from '../src/config.js';
import { createJail, type JailRuntime } from '../src/jail/jail.js';
import type { JailedProcess } from '../src/jail/types.js';
import { createLogger } from '../src/log.js';
import { createMetrics, type Metrics } from '../src/metrics.js';
import { startHangingServer, type HangingServer } from './chaos/hanging-server.js';
import { cannotJail, pidsOfUids, projectDir, jailDir } from './helpers/jail.js';
import { jailUids } from './helpers/uids.js';

const skip = cannotJail() ?? (process.getuid?.() !== 0 ? 'the jail needs root (it runs each jail as a pool uid)' : undefined);
/** 8 uids of this file's own: R = 1 at the default 12%. */
const UID_COUNT = 8;
const UID_BASE = jailUids(UID_COUNT).base;
const EGRESS_CAP = 16;

/** In the FETCH jail: open N CONNECT tunnels one after the other through HTTPS_PROXY, print their statuses, hold them until stdin ends. */
const TUNNELS = `
  const http = require('node:http');
  const u = new URL(process.env.HTTPS_PROXY);
  const [n, dest] = [Number(process.argv[1]), process.argv[2]];
  const one = () => new Promise((done) => {
    const req = http.request({ host: u.hostname, port: u.port, method: 'CONNECT', path: dest, agent: false });
    req.on('connect', (res, sock) => { if (res.statusCode !== 200) sock.destroy(); done(res.statusCode); });
    req.on('response', (res) => { res.resume(); done(res.statusCode); });
    req.on('error', (e) => done('error ' + e.code));
    req.end();
  });
  (async () => {
    const out = [];
    for (let i = 0; i < n; i++) out.push(await one());
    console.log(JSON.stringify(out));
    process.stdin.resume();
    process.stdin.on('end', () => process.exit(0));
  })();`;

describe('jail uids and egress connections are shared fairly between orgs', { skip }, () => {
  let jail: JailRuntime;
  let metrics: Metrics;
  let registry: HangingServer;
  let dataDir: string;
  const live: JailedProcess[] = [];

  before(async () => {
    registry = await startHangingServer();
    dataDir = jailDir('lspd-shares-');
    const config = loadConfig(
      {
        LSPD_DATA: dataDir,
        LSPD_JAIL_UID_BASE: String(UID_BASE),
        LSPD_JAIL_UID_COUNT: String(UID_COUNT),
        LSPD_FETCH_REGISTRIES: registry.authority,
        LSPD_ORG_MAX_EGRESS_CONNECTIONS: String(EGRESS_CAP),
      },
      projectDir,
    );
    metrics = createMetrics(config);
    jail = await createJail({ config, log: createLogger('silent'), metrics });
    const v = await jail.canary();
    assert.ok(v.serve.ok && v.fetch.ok, `canary: ${JSON.stringify(v)}`);
  });
  after(async () => {
    for (const j of live) j.kill();
    await jail?.close();
    await registry?.close();
    rmSync(dataDir, { recursive: true, force: true });
    assert.deepEqual(pidsOfUids(UID_BASE, UID_COUNT), [], 'no jail outlives the test');
  });

  const refusals = async (org: string, reason: string) =>
    (await metrics.orgRefusals.get()).values.find((v) => v.labels.org === org && v.labels.reason === reason)?.value ?? 0;

  const sleeper = async (org: string) => {
    const j = await jail.spawn({ phase: 'serve', org, argv: ['/usr/bin/sleep', '600'] });
    live.push(j);
    return j;
  };

  test('uids: alone an org gets all but the reserve; another org still gets one; freed uids go to the org under its share', async () => {
    const alpha: JailedProcess[] = [];
    for (let i = 0; i < UID_COUNT - 1; i++) alpha.push(await sleeper('alpha'));
    await assert.rejects(sleeper('alpha'), (err: Error & { code?: string; extra?: { retry_after?: number } }) => {
      assert.equal(err.code, 'busy');
      assert.match(err.message, /Org alpha already runs 7 jails, its share/);
      return true;
    });
    const beta = await sleeper('beta');
    assert.ok(beta.pid > 0);
    // One of alpha's jails ends: alpha (6 of 8, over its share 8/3) may not take the uid back; beta may.
    alpha[0]!.kill();
    await alpha[0]!.exited;
    await assert.rejects(sleeper('alpha'), { code: 'busy' });
    await sleeper('beta');
    assert.equal(await refusals('alpha', 'uids'), 2);
    for (const j of live.splice(0)) {
      j.kill();
      await j.exited;
    }
  });

  /** Run TUNNELS for `org` in a FETCH jail; resolves with the statuses once printed (the jail keeps its tunnels open). */
  const tunnels = async (org: string, n: number): Promise<{ statuses: (number | string)[]; jail: JailedProcess }> => {
    const j = await jail.spawn({ phase: 'fetch', org, argv: ['/usr/bin/node', '-e', TUNNELS, String(n), registry.authority] });
    live.push(j);
    const line = await new Promise<string>((resolve, reject) => {
      createInterface({ input: j.stdout }).once('line', resolve);
      void j.exited.then((e) => reject(new Error(`the jail exited (${JSON.stringify(e)}) before printing: ${j.stderrTail()}`)));
    });
    return { statuses: JSON.parse(line) as (number | string)[], jail: j };
  };

  test('egress: past its cap an org gets 503 from the proxy inside its jail, while another org connects', async () => {
    const alpha = await tunnels('alpha', EGRESS_CAP + 4);
    assert.deepEqual(alpha.statuses, [...Array(EGRESS_CAP).fill(200), ...Array(4).fill(503)]);
    const beta = await tunnels('beta', 3);
    assert.deepEqual(beta.statuses, [200, 200, 200], "beta's connections are its own, not alpha's");
    assert.equal(await refusals('alpha', 'egress'), 4);
    assert.equal(await refusals('beta', 'egress'), 0);
    // alpha's jail ends: its connections go with it, and alpha's next jail connects again.
    alpha.jail.stdin.end();
    await alpha.jail.exited;
    const again = await tunnels('alpha', 2);
    assert.deepEqual(again.statuses, [200, 200]);
    for (const j of [beta.jail, again.jail]) {
      j.stdin.end();
      await j.exited;
    }
  });
});
