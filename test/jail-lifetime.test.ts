// Nothing a jail starts outlives it: not a request that timed out (abort signal),
// not the daemon after SIGKILL (bwrap --die-with-parent, the jail's PID namespace).
// And each jail is capped: pids and memory by its cgroup, stderr by a ring.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { cannotJail, pidsOfUids, privateUidBase, projectDir, startJail, jailDir, UID_COUNT, waitFor, type TestJail } from './helpers/jail.js';

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
    const dataDir = jailDir('lspd-jail-kill-');
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

/** The v1 memory cgroup dir the jail code made for `pid` (undefined on v2). */
function memoryCgroupOf(pid: number): string | undefined {
  const line = readFileSync('/proc/self/cgroup', 'utf8')
    .split('\n')
    .find((l) => /^\d+:memory:/.test(l));
  if (!line) return undefined;
  const dir = join('/sys/fs/cgroup/memory', line.split(':')[2]!, `lspd-${pid}`);
  return existsSync(dir) ? dir : undefined;
}
