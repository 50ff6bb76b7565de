// lspd-gate, the jail's first process (jail/gate.c), and the pool that parks gates
// ahead of need (src/jail/gates.ts). A gate starts as root and runs nothing until
// its one message names a jail uid; every malformed or dangerous message is refused
// with 125 and nothing started. The jail it runs holds the uid only (no groups, no
// capabilities) and exactly the descriptors it was given.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, openSync, readdirSync, readlinkSync, constants } from 'node:fs';
import { GATE_PATH } from '../src/jail/policy.js';
import { allProcs } from './chaos/procs.js';
import { cannotJail, privateUidBase, startJail, jailDir, UID_COUNT, waitFor, type TestJail } from './helpers/jail.js';

const skip = cannotJail();

/** A gate as the pool starts one: root, empty environment, seven pipes, message on 6. */
function startGate(): ChildProcess {
  const g = spawn(GATE_PATH, ['6'], { env: {}, cwd: '/', detached: true, stdio: Array<'pipe'>(7).fill('pipe') });
  for (const s of g.stdio) s?.on('error', () => {});
  return g;
}

const messagePipe = (g: ChildProcess) => (g.stdio as unknown as NodeJS.WritableStream[])[6]!;

const nul = (fields: (string | number)[]) => Buffer.from(fields.map((f) => `${f}\0`).join(''));

async function run(message: Buffer | null): Promise<{ code: number | null; stdout: string; gate: ChildProcess }> {
  const gate = startGate();
  let stdout = '';
  gate.stdout!.setEncoding('utf8').on('data', (d: string) => (stdout += d));
  const exited = new Promise<number | null>((r) => gate.once('exit', (code) => r(code)));
  const msgPipe = messagePipe(gate);
  if (message) msgPipe.end(message);
  else msgPipe.end();
  const code = await exited;
  await new Promise<void>((r) => (gate.stdout!.readableEnded ? r() : gate.stdout!.once('end', () => r())));
  return { code, stdout, gate };
}

/** Children of a process. */
const childrenOf = (pid: number): number[] =>
  allProcs()
    .filter((p) => p.ppid === pid)
    .map((p) => p.pid);

/** lspd-gate processes running as root among this process's children: the parked ones. */
const parkedGates = (): number[] =>
  allProcs()
    .filter((p) => p.ppid === process.pid && p.uid === 0 && p.argv[0] === GATE_PATH)
    .map((p) => p.pid);

describe('lspd-gate', { skip }, () => {
  const uid = privateUidBase() + UID_COUNT; // the slot's second half: startJail below uses the first

  test('EOF before any message (the daemon died, gave up, or closed the pool) runs nothing', async () => {
    assert.equal((await run(null)).code, 125);
  });

  test('a message asking for root, for a relative program, or cut short is refused', async () => {
    for (const [why, msg] of [
      ['uid 0', nul([0, uid, 0, '/usr/bin/id'])],
      ['gid 0', nul([uid, 0, 0, '/usr/bin/id'])],
      ['a relative program', nul([uid, uid, 0, 'id'])],
      ['no program', nul([uid, uid, 0])],
      ['more descriptors named than given', nul([uid, uid, 2, 5, '/usr/bin/id'])],
      ['a number with junk', nul([`${uid}x`, uid, 0, '/usr/bin/id'])],
      ['no final NUL', nul([uid, uid, 0, '/usr/bin/id']).subarray(0, -1)],
      ['more than 64 KiB', Buffer.concat([nul([uid, uid, 0, '/usr/bin/id']), Buffer.alloc(70_000, 0x61), Buffer.from([0])])],
    ] as const) {
      const r = await run(msg);
      assert.equal(r.code, 125, `${why}: refused`);
      assert.equal(r.stdout, '', `${why}: nothing ran`);
    }
  });

  test('a descriptor the daemon does not hold is refused', async () => {
    assert.equal((await run(nul([uid, uid, 1, 987_654, '/usr/bin/id']))).code, 125);
  });

  test('the program runs as the uid alone: no supplementary group, no capability', async () => {
    const r = await run(nul([uid, uid, 0, '/bin/sh', '-c', 'id -u; id -g; id -G; grep -E "^Cap(Inh|Prm|Eff|Amb):" /proc/self/status']));
    assert.equal(r.code, 0);
    const [u, g, groups, ...caps] = r.stdout.trim().split('\n');
    assert.equal(u, String(uid));
    assert.equal(g, String(uid));
    assert.equal(groups, String(uid), 'no group but its own');
    assert.equal(caps.length, 4);
    for (const c of caps) assert.match(c!, /:\s+0{16}$/, `no capability: ${c}`);
  });

  test('the program gets the daemon descriptors it was named, as 7, 8, ..., and no other past 5', async () => {
    const dirA = jailDir('lspd-gate-a-');
    const dirB = jailDir('lspd-gate-b-');
    const fdA = openSync(dirA, constants.O_RDONLY | constants.O_DIRECTORY);
    const fdB = openSync(dirB, constants.O_RDONLY | constants.O_DIRECTORY);
    try {
      const gate = startGate();
      messagePipe(gate).end(nul([uid, uid, 2, fdA, fdB, '/bin/sleep', '30']));
      let sleeper: number | undefined;
      assert.ok(
        await waitFor(() => (sleeper = childrenOf(gate.pid!)[0]) !== undefined && readlinkSync(`/proc/${sleeper}/exe`).endsWith('sleep'), 5000),
        'the program started',
      );
      const fds = readdirSync(`/proc/${sleeper}/fd`)
        .map(Number)
        .sort((a, b) => a - b);
      assert.deepEqual(fds, [0, 1, 2, 3, 4, 5, 7, 8]);
      assert.equal(readlinkSync(`/proc/${sleeper}/fd/7`), dirA);
      assert.equal(readlinkSync(`/proc/${sleeper}/fd/8`), dirB);
      process.kill(-gate.pid!, 'SIGKILL');
      await new Promise((r) => gate.once('exit', r));
    } finally {
      closeSync(fdA);
      closeSync(fdB);
    }
  });
});

describe('parked gates', { skip }, () => {
  let t: TestJail | undefined;
  before(async () => {
    t = await startJail();
  });
  after(async () => t?.close());

  test('no gate is parked while a jail is in its uncapped start; one is once it has started', async () => {
    assert.ok(await waitFor(() => parkedGates().length === 1, 5000), 'one gate parked');
    const j = await t!.jail.spawn({ phase: 'serve', argv: ['/bin/sleep', '30'], uncappedStartMs: 10_000 });
    await new Promise((r) => setTimeout(r, 700));
    assert.deepEqual(parkedGates(), [], 'no fork of the daemon while a server starts');
    j.capCpu!();
    assert.ok(await waitFor(() => parkedGates().length === 1, 3000), 'a gate parked once it has started');
    j.kill();
    await j.exited;
  });

  test('a jail takes the parked gate, another is parked after it, and close() leaves none', async () => {
    assert.ok(await waitFor(() => parkedGates().length === 1, 5000), 'one gate parked (LSPD_JAIL_PARKED_GATES=1)');
    const [parked] = parkedGates();
    const j = await t!.jail.spawn({ phase: 'serve', argv: ['/bin/sh', '-c', 'echo hi'] });
    assert.equal(j.pid, parked, 'the jail runs in the gate that was parked');
    j.stdin.end();
    assert.equal((await j.exited).code, 0);
    assert.ok(await waitFor(() => parkedGates().length === 1 && parkedGates()[0] !== parked, 5000), 'a new gate parked');
    await t!.close();
    t = undefined;
    assert.ok(await waitFor(() => parkedGates().length === 0, 5000), 'no gate left parked');
  });
});
