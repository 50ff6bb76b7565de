// CPU in the jails: each jail is capped (the kernel's CFS bandwidth, a quota per
// period), a language server may start uncapped until it has started, and every
// org's jails share one cgroup at an equal weight, so a busy org's many jails get
// what one jail of another org gets.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { cpuTimes } from '../src/jail/proc-cpu.js';
import type { JailedProcess } from '../src/jail/types.js';
import { jailProcs, policyOf } from './chaos/procs.js';
import { cpuBandwidthOf, cpuCgroupOf, UNLIMITED } from './helpers/cgroup.js';
import { skipOrFail } from './helpers/host.js';
import { cannotJail, pidsOfUids, runJailed, startJail, UID_COUNT, waitFor, type TestJail } from './helpers/jail.js';

const skip = cannotJail();
/** A shell that spins on `n` processes and says so. */
const spinners = (n: number) => ['/bin/sh', '-c', `for i in $(seq ${n}); do (while :; do :; done) & done; echo spinning; wait`];

const requireCpuCap = (t: TestJail) => assert.ok(t.jail.cpuCapped || skipOrFail('the host delegates no CPU controller') !== undefined, 'CPU cap in force');

async function spawnSpinning(t: TestJail, n: number, org?: string): Promise<JailedProcess> {
  const j = await t.jail.spawn({ phase: 'serve', argv: spinners(n), ...(org ? { org } : {}) });
  j.stdin.end();
  await new Promise<void>((r) => j.stdout.once('data', () => r()));
  return j;
}

// The cap (0.1 CPU here) is the kernel's CFS bandwidth: a quota per period. With no
// burst the period is the kernel's 100 ms; with one, the period grows so the quota
// holds the burst (the kernel takes no more), and idle time is saved up to the burst.
for (const { burst, periodUs, burstUs, spinMs } of [
  { burst: '0', periodUs: 100_000, burstUs: 0, spinMs: 1500 },
  { burst: '1000', periodUs: 1_000_000, burstUs: 100_000, spinMs: 2500 },
]) {
  describe(`jail CPU cap (burst ${burst} ms)`, { skip }, () => {
    let t: TestJail;
    before(async () => {
      t = await startJail({ LSPD_JAIL_CPU_MILLIS: '100', LSPD_JAIL_CPU_BURST_MILLIS: burst });
    });
    after(async () => t?.close());

    test('a jail spinning on every core gets the CPU time its cap allows, no more', async () => {
      requireCpuCap(t);
      if (!t.jail.cpuCapped) return;
      const j = await spawnSpinning(t, 4);
      const t0 = performance.now();
      assert.deepEqual(cpuBandwidthOf(j.pid), { periodUs, quotaUs: periodUs / 10, burstUs }, "the kernel's settings for the jail");
      await new Promise((r) => setTimeout(r, spinMs));
      const cpuS = pidsOfUids(t.uidBase, UID_COUNT).reduce((sum, pid) => sum + cpuSecondsOf(pid), 0);
      const wallS = (performance.now() - t0) / 1000;
      j.kill();
      await j.exited;
      // 0.1 CPU over the wall time since the first spinner ran (and the shell's start,
      // and one period the window may straddle), plus the burst: uncapped, four
      // spinners take every core (2 s or more here on 2 cores).
      const allowed = 0.1 * (wallS + 0.5 + periodUs / 1e6) + burstUs / 1e6 + 0.1;
      assert.ok(cpuS <= allowed, `the jail used ${cpuS.toFixed(2)} CPU s in ${wallS.toFixed(2)} s (cap 0.1 CPU, allowed ${allowed.toFixed(2)})`);
      assert.deepEqual(pidsOfUids(t.uidBase, UID_COUNT), []);
    });
  });
}

describe('jail CPU: uncapped start, and a share per org', { skip }, () => {
  let t: TestJail;
  before(async () => {
    t = await startJail({ LSPD_JAIL_CPU_MILLIS: '100' });
  });
  after(async () => t?.close());

  test('a jail started uncapped is capped when its caller says it has started, or when its time is up', async () => {
    requireCpuCap(t);
    if (!t.jail.cpuCapped) return;
    const capped = { periodUs: 100_000, quotaUs: 10_000, burstUs: 0 };
    const told = await t.jail.spawn({ phase: 'serve', org: 'acme', argv: ['/bin/sleep', '300'], uncappedStartMs: 60_000 });
    const timed = await t.jail.spawn({ phase: 'serve', org: 'acme', argv: ['/bin/sleep', '300'], uncappedStartMs: 400 });
    try {
      assert.equal(cpuBandwidthOf(told.pid).quotaUs, UNLIMITED, 'no quota while it starts');
      assert.equal(cpuBandwidthOf(timed.pid).quotaUs, UNLIMITED);
      told.capCpu!();
      assert.deepEqual(cpuBandwidthOf(told.pid), capped, 'its cap from the moment it is told');
      told.capCpu!();
      assert.deepEqual(cpuBandwidthOf(told.pid), capped, 'idempotent');
      assert.ok(await waitFor(() => cpuBandwidthOf(timed.pid).quotaUs === capped.quotaUs, 5000), 'capped when its uncapped start ran out');
      assert.deepEqual(cpuBandwidthOf(timed.pid), capped);
      const plain = await t.jail.spawn({ phase: 'serve', org: 'acme', argv: ['/bin/sleep', '300'] });
      assert.deepEqual(cpuBandwidthOf(plain.pid), capped, 'a jail that asks for no uncapped start is capped from its first instruction');
      plain.kill();
      await plain.exited;
    } finally {
      for (const j of [told, timed]) j.kill();
      await Promise.all([told.exited, timed.exited]);
    }
  });

  test("one org's jails sit in one cgroup of that org, removed with its last jail", async () => {
    requireCpuCap(t);
    if (!t.jail.cpuCapped) return;
    const a1 = await t.jail.spawn({ phase: 'serve', org: 'acme', argv: ['/bin/sleep', '300'] });
    const a2 = await t.jail.spawn({ phase: 'serve', org: 'acme', argv: ['/bin/sleep', '300'] });
    const b = await t.jail.spawn({ phase: 'serve', org: '../beta', argv: ['/bin/sleep', '300'] });
    const orgDir = (j: JailedProcess) => dirname(cpuCgroupOf(j.pid));
    assert.equal(orgDir(a1), orgDir(a2), 'one cgroup for the org');
    assert.notEqual(orgDir(a1), orgDir(b), 'another for the other org');
    for (const j of [a1, b]) assert.match(basename(orgDir(j)), /^o[0-9a-f]{16}$/, 'named by a digest of the org, never by its name');
    assert.equal(dirname(orgDir(a1)), dirname(orgDir(b)), "both under the daemon's cgroup");
    const acme = orgDir(a1);
    a1.kill();
    await a1.exited;
    assert.ok(existsSync(acme), 'kept while the org has a jail');
    a2.kill();
    b.kill();
    await Promise.all([a2.exited, b.exited]);
    assert.ok(!existsSync(acme), 'removed with its last jail');
  });
});

describe('jail CPU: a busy org does not starve another', { skip }, () => {
  // Every jail may use every core (its cap is all of them) and spins on all of them,
  // so the host is contended whatever its size, and only the weights decide.
  const cores = availableParallelism();
  let t: TestJail;
  before(async () => {
    t = await startJail({ LSPD_JAIL_CPU_MILLIS: String(cores * 1000) });
  });
  after(async () => t?.close());

  test("three jails of one org spinning on every core get no more CPU than another org's one jail", async (tc) => {
    requireCpuCap(t);
    if (!t.jail.cpuCapped) return;
    const busy = await Promise.all([1, 2, 3].map(() => spawnSpinning(t, cores, 'busy')));
    const other = await spawnSpinning(t, cores, 'other');
    try {
      const cpuOf = (js: JailedProcess[]) => js.reduce((sum, j) => sum + jailCpuSeconds(j), 0);
      await new Promise((r) => setTimeout(r, 300)); // every spinner running
      const before = { busy: cpuOf(busy), other: cpuOf([other]) };
      await new Promise((r) => setTimeout(r, 2500));
      const busyS = cpuOf(busy) - before.busy;
      const otherS = cpuOf([other]) - before.other;
      // Per org, half each (a ratio of 1); weighted jail by jail (no org level), the
      // one jail would get a quarter and the busy org three quarters (0.33).
      const ratio = otherS / busyS;
      tc.diagnostic(`other org ${otherS.toFixed(2)} CPU s, busy org ${busyS.toFixed(2)} (ratio ${ratio.toFixed(2)}, fair 1.00, by jail 0.33; ${cores} cores)`);
      assert.ok(ratio >= 0.6, `the other org got ${otherS.toFixed(2)} CPU s against the busy org's ${busyS.toFixed(2)} (ratio ${ratio.toFixed(2)}, fair 1.00)`);
    } finally {
      for (const j of [...busy, other]) j.kill();
      await Promise.all([...busy, other].map((j) => j.exited));
    }
  });
});

// Scheduling (jail/gate.c, 5): the gate makes the jail SCHED_BATCH before it runs
// bwrap, so a jailed process woken by the daemon's write does not preempt the
// daemon's loop turn (bench/ab: 1.24x the answers at 8 clients over four roots).
describe('jail CPU: scheduling', { skip }, () => {
  let t: TestJail;
  before(async () => {
    t = await startJail();
  });
  after(async () => t?.close());

  test('every process of a jail, of either phase, runs as SCHED_BATCH; the daemon stays SCHED_OTHER', async () => {
    assert.equal(policyOf(readFileSync('/proc/self/stat', 'latin1')), SCHED_OTHER, 'the daemon (this process)');
    for (const phase of ['serve', 'fetch'] as const) {
      const { out } = await runJailed(t, { phase, argv: ['/bin/cat', '/proc/self/stat'] });
      assert.equal(policyOf(out), SCHED_BATCH, `${phase}: the command, as it sees itself`);
    }
    const j = await t.jail.spawn({ phase: 'serve', argv: ['/bin/sh', '-c', 'sleep 300 & echo started; wait'] });
    try {
      j.stdin.end();
      await new Promise<void>((r) => j.stdout.once('data', () => r()));
      const procs = jailProcs({ base: t.uidBase, count: UID_COUNT });
      assert.ok(procs.length >= 4, `the gate, bwrap, the sandbox's init, sh and sleep: ${procs.length} processes`);
      for (const p of procs) assert.equal(p.policy, SCHED_BATCH, `pid ${p.pid} (${p.argv.join(' ')})`);
    } finally {
      j.kill();
      await j.exited;
    }
  });
});

const SCHED_OTHER = 0;
const SCHED_BATCH = 3;

/** CPU seconds a process has used (proc-cpu's reading of /proc/<pid>/stat; 0 when gone). */
function cpuSecondsOf(pid: number): number {
  return (cpuTimes([pid])?.get(pid) ?? 0) / 1000;
}

/** CPU seconds the live processes of one jail have used (each jail runs as its own pool uid: the gate's). */
function jailCpuSeconds(j: JailedProcess): number {
  const uid = Number(/^Uid:\s+(\d+)/m.exec(readFileSync(`/proc/${j.pid}/status`, 'utf8'))?.[1]);
  return pidsOfUids(uid, 1).reduce((sum, pid) => sum + cpuSecondsOf(pid), 0);
}
