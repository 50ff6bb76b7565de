// Nothing a jail starts outlives it: not a request that timed out (abort signal),
// not the daemon after SIGKILL (bwrap --die-with-parent, the jail's PID namespace).
// And each jail is capped: pids and memory by its cgroup, stderr by a ring.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { skipOrFail } from './helpers/host.js';
import { cannotJail, pidsOfUids, privateUidBase, projectDir, startJail, tempDir, UID_COUNT, waitFor, type TestJail } from './fixtures/jail/harness.js';

const skip = cannotJail();
// A shell that leaves children, grandchildren and an orphan (re-parented to the jail's init) behind.
const FORKER = ['/bin/sh', '-c', 'sleep 300 & sleep 300 & (sleep 300 &) ; echo started; exec sleep 300'];

describe('jail lifetime', { skip }, () => {
  let t: TestJail;
  before(async () => {
    t = await startJail({ LSPD_JAIL_PIDS: '32', LSPD_JAIL_MEMORY_BYTES: String(96 * 1024 * 1024) });
  });
  after(async () => t?.close());

  const running = () => pidsOfUids(t.uidBase, UID_COUNT);

  test('a request that timed out takes every process of its jail with it', async () => {
    const signal = AbortSignal.timeout(400);
    const j = await t.jail.spawn({ phase: 'serve', argv: FORKER, signal });
    j.stdin.end();
    await new Promise<void>((r) => j.stdout.once('data', () => r()));
    assert.ok(running().length >= 5, `bwrap, its init, the shell's sleeps: ${running().length}`);
    const exit = await j.exited;
    assert.equal(exit.code, 128 + 9, "bwrap reports its sandbox's init SIGKILLed");
    assert.deepEqual(running(), [], 'nothing of the jail survives the abort, not even a zombie');
  });

  test('an abort during setup refuses the spawn and leaves nothing', async () => {
    const ac = new AbortController();
    ac.abort(new Error('caller gone'));
    await assert.rejects(t.jail.spawn({ phase: 'serve', argv: FORKER, signal: ac.signal }), /caller gone/);
    assert.deepEqual(running(), []);
  });

  test('output a jail wrote before it exited is still there for a caller that reads late', async () => {
    // Node resumes a child's unread stdout when the child exits, dropping its bytes; a
    // fast jail (the canary's probe) can be gone before spawn() returns to its caller.
    const j = await t.jail.spawn({ phase: 'serve', argv: ['/bin/sh', '-c', 'echo written-before-exit'] });
    j.stdin.end();
    assert.equal((await j.exited).code, 0);
    await new Promise((r) => setTimeout(r, 50));
    let out = '';
    for await (const d of j.stdout) out += String(d);
    assert.equal(out, 'written-before-exit\n');
  });

  test('kill() is idempotent and the uid returns to the pool', async () => {
    const j = await t.jail.spawn({ phase: 'fetch', argv: FORKER });
    j.stdin.end();
    await new Promise<void>((r) => j.stdout.once('data', () => r()));
    j.kill();
    j.kill();
    await j.exited;
    assert.deepEqual(running(), []);
  });

  test('the pids cgroup caps a fork bomb', async () => {
    const j = await t.jail.spawn({ phase: 'serve', argv: ['/bin/sh', '-c', 'for i in $(seq 64); do sleep 5 & done; wait'] });
    j.stdin.end();
    const exit = await j.exited;
    assert.notEqual(exit.code, 0);
    assert.match(j.stderrTail(), /fork/i);
    assert.deepEqual(running(), []);
  });

  test('the memory cgroup caps a jail (OOM kill), and V8 runs under it', async () => {
    const ok = await t.jail.spawn({ phase: 'serve', argv: ['/usr/bin/node', '-e', 'console.log(1+1)'] });
    ok.stdin.end();
    assert.equal((await ok.exited).code, 0, 'no RLIMIT_AS: node starts under a 96 MiB cgroup');
    const j = await t.jail.spawn({
      phase: 'serve',
      argv: ['/usr/bin/node', '-e', 'const a=[]; for (let i=0;i<64;i++) a.push(Buffer.alloc(8<<20, 1)); console.log("survived")'],
    });
    j.stdin.end();
    let out = '';
    j.stdout.on('data', (d: Buffer) => (out += d));
    const exit = await j.exited;
    assert.equal(out, '');
    assert.equal(exit.code, 128 + 9, 'bwrap reports its command killed by SIGKILL');
  });

  test('stderr is a bounded ring, scrubbed of host paths', async () => {
    const j = await t.jail.spawn({
      phase: 'serve',
      stderrRingBytes: 1024,
      argv: ['/bin/sh', '-c', `head -c 200000 /dev/zero | tr '\\0' x >&2; echo " at ${t.dataDir}/roots/x and ${projectDir}/node_modules" >&2`],
    });
    j.stdin.end();
    await j.exited;
    const tail = j.stderrTail();
    assert.ok(tail.length < 1200, `kept ${tail.length} chars`);
    assert.match(tail, /earlier bytes dropped/);
    assert.ok(!tail.includes(t.dataDir) && !tail.includes(projectDir), tail.slice(-200));
    assert.match(tail, /<data>\/roots\/x and \/opt\/lspd\/node_modules/);
  });
});

describe('jail lifetime: the daemon is SIGKILLed', { skip }, () => {
  test('no process of any jail outlives it, and its cgroups are swept at the next start', { timeout: 60_000 }, async () => {
    const uidBase = privateUidBase() + 32; // a range of its own, apart from the suite above
    const dataDir = tempDir('lspd-jail-kill-');
    const cli = spawn(process.execPath, ['--import', 'tsx', 'src/cli/jail.ts', '--phase', 'serve', '--', ...FORKER], {
      cwd: projectDir,
      env: { ...process.env, LSPD_DATA: dataDir, LSPD_JAIL_UID_BASE: String(uidBase), LSPD_JAIL_UID_COUNT: '32' },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let err = '';
    cli.stderr.on('data', (d: Buffer) => (err += d));
    await new Promise<void>((resolve, reject) => {
      cli.stdout.once('data', () => resolve());
      cli.once('exit', (c) => reject(new Error(`lspd jail exited ${c}: ${err}`)));
    });
    const pool = () => pidsOfUids(uidBase, 32);
    assert.ok(pool().length >= 5, `the jail runs: ${pool().length} processes`);
    const cgDir = memoryCgroupOf(cli.pid!);

    cli.kill('SIGKILL');
    assert.ok(await waitFor(() => pool().length === 0, 5_000), `survivors: ${pool().join(' ')}`);
    // A SIGKILLed daemon leaves its empty cgroup dir; any daemon that starts next
    // sweeps it, and in npm test that may be another test file's daemon, first.
    if (cgDir && existsSync(cgDir)) {
      const next = await startJail();
      await next.close();
      assert.ok(!existsSync(cgDir), 'the next daemon sweeps it');
    }
  });
});

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
      assert.ok(t.jail.cpuCapped || skipOrFail('the host delegates no CPU controller') !== undefined, 'CPU cap in force');
      if (!t.jail.cpuCapped) return;
      const j = await t.jail.spawn({ phase: 'serve', argv: ['/bin/sh', '-c', 'for i in 1 2 3 4; do (while :; do :; done) & done; echo spinning; wait'] });
      j.stdin.end();
      await new Promise<void>((r) => j.stdout.once('data', () => r()));
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

/** The CPU bandwidth of the cgroup holding `pid` (v2 cpu.max and cpu.max.burst, v1 cpu.cfs_*); burst 0 where the kernel has none. */
function cpuBandwidthOf(pid: number): { periodUs: number; quotaUs: number; burstUs: number } {
  const lines = readFileSync(`/proc/${pid}/cgroup`, 'utf8').split('\n');
  const v1 = lines.map((l) => /^\d+:([^:]*\bcpu\b[^:]*):(.*)$/.exec(l)).find(Boolean);
  const num = (file: string) => (existsSync(file) ? Number(readFileSync(file, 'utf8').trim()) : 0);
  if (v1) {
    const dir = [join('/sys/fs/cgroup', v1[1]!, v1[2]!), join('/sys/fs/cgroup/cpu', v1[2]!)].find((d) => existsSync(join(d, 'cpu.cfs_quota_us')))!;
    return { periodUs: num(join(dir, 'cpu.cfs_period_us')), quotaUs: num(join(dir, 'cpu.cfs_quota_us')), burstUs: num(join(dir, 'cpu.cfs_burst_us')) };
  }
  const dir = join('/sys/fs/cgroup', lines.find((l) => l.startsWith('0::'))!.slice(3));
  const [quota, period] = readFileSync(join(dir, 'cpu.max'), 'utf8').trim().split(' ').map(Number);
  return { periodUs: period!, quotaUs: quota!, burstUs: num(join(dir, 'cpu.max.burst')) };
}

/** CPU seconds a process has used (utime + stime of /proc/<pid>/stat; 0 when gone). */
function cpuSecondsOf(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(f[11]) + Number(f[12])) / 100; // USER_HZ is 100 on Linux
  } catch {
    return 0;
  }
}

/** The v1 memory cgroup dir the jail code made for `pid` (undefined on v2). */
function memoryCgroupOf(pid: number): string | undefined {
  const line = readFileSync('/proc/self/cgroup', 'utf8')
    .split('\n')
    .find((l) => /^\d+:memory:/.test(l));
  if (!line) return undefined;
  const dir = join('/sys/fs/cgroup/memory', line.split(':')[2]!, `lspd-${pid}`);
  return existsSync(dir) ? dir : undefined;
}
