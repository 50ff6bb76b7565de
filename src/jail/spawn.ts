// Starting one jail: open and check the tree, take a uid and a cgroup, hand bwrap
// its options, filter and tree by descriptor, release it through lspd-gate once it
// sits in its cgroups, and confirm the sandbox was set up before anyone talks to it.
// The JailedProcess it returns owns the process group, the cgroup and the uid until
// every process of the jail is gone.
//
// Process tree: daemon → lspd-gate (parked as root, then the pool uid; process-group
// leader, subreaper; its exit means the whole jail is gone) → bwrap monitor → sandbox
// PID 1 → the command. Descriptors of the gate/bwrap process (the numbers bwrap-argv.ts
// is given): 0-2 stdio · 3 --json-status-fd · 4 --args · 5 --seccomp · 6 the gate's
// message · 7 --ro-bind-fd (tree), then one --ro-bind-fd per read-only caller bind
// (the gate reopens those from the daemon's descriptors: jail/gate.c).
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { closeSync, constants, fchownSync, openSync, readFileSync } from 'node:fs';
import { lchown, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable, type Duplex } from 'node:stream';
import { errors } from '../errors.js';
import type { Logger } from '../log.js';
import { bwrapOptions, jailCommand } from './bwrap-argv.js';
import type { CgroupLimits, Cgroups, JailCgroup } from './cgroup.js';
import { GATE_MESSAGE_FD, GATE_STDIO_COUNT, type GatePool, type StartingJails } from './gates.js';
import { JAIL_HOME } from './layout.js';
import { withSystemRoot, type PhasePolicy } from './policy.js';
import { cpuTimes } from './proc-cpu.js';
import { StderrRing, makeScrubber } from './stderr-ring.js';
import { checkBindHost, checkSystemRoot, openBindSource, openTree, preCreateMountPoints } from './tree.js';
import type { JailExit, JailSpawnOptions, JailedProcess, Phase } from './types.js';
import { DAEMON_ORG, type UidPool } from './uid-pool.js';

const FD = { jsonStatus: 3, args: 4, seccomp: 5, gate: GATE_MESSAGE_FD, tree: GATE_STDIO_COUNT } as const;
/** bwrap's complaint when the tree's path changed between our check and its bind (its words: only text says it). */
const RACE = 'Race condition binding dirfd';
const RACE_ATTEMPTS = 5;
const SETUP_TIMEOUT_MS = 10_000;
const DRAIN_TIMEOUT_MS = 5_000;
const KILL_GRACE_MS = 1_000;

export interface SpawnContext {
  bwrapPath: string;
  gates: GatePool;
  filters: Readonly<Record<Phase, Buffer>>;
  policies: Readonly<Record<Phase, PhasePolicy>>;
  uids: UidPool;
  cgroups: Cgroups;
  limits: CgroupLimits & { tmpBytes: number; stderrRingBytes: number };
  /** Host path → what to show instead, for stderr tails. */
  scrub: readonly (readonly [string, string])[];
  log: Logger;
  /** Every jail not yet gone, for close(). */
  live: Set<JailedProcess>;
  /** Jails in their uncapped start (no first answer yet): the gate pool forks only when there is none. */
  starting: StartingJails;
}

let seq = 0;

/**
 * Spawn `opts` in a jail of its phase. The caller has checked that the phase is
 * proved. `policy` replaces the phase's own when this jail sees something of its
 * own (a FETCH jail's egress socket).
 */
export async function spawnInJail(ctx: SpawnContext, opts: JailSpawnOptions, phase: PhasePolicy = ctx.policies[opts.phase]): Promise<JailedProcess> {
  assert.equal(phase.phase, opts.phase, 'the policy is of the spawn phase');
  if (opts.systemRoot !== undefined) checkSystemRoot(opts.systemRoot);
  const policy = opts.systemRoot !== undefined ? withSystemRoot(phase, opts.systemRoot) : phase;
  assert.ok(opts.argv.length > 0 && opts.argv[0]!.startsWith('/'), 'argv[0] must be an absolute in-jail path');
  for (const b of opts.binds ?? []) assert.ok(!b.rw || opts.phase === 'fetch', 'read-write binds exist only in FETCH');
  opts.signal?.throwIfAborted();
  for (const b of opts.binds ?? []) checkBindHost(b.host);
  const treeFd = opts.tree ? openTree(opts.tree) : undefined;
  // Read-only binds go by descriptor too (--ro-bind-fd): what was checked is what is
  // mounted. bwrap 0.8.0 has no --bind-fd, so FETCH's read-write dir goes by path.
  const bindFds: (number | undefined)[] = [];
  try {
    for (const b of opts.binds ?? []) bindFds.push(b.rw ? undefined : openBindSource(b.host));
    if (opts.tree && treeFd !== undefined) preCreateMountPoints(treeFd, opts.tree.at, opts.binds ?? []);
    for (let attempt = 1; ; attempt++) {
      const j = launch(ctx, policy, opts, treeFd, bindFds);
      const setup = await j.setup;
      if (setup.ok) return j;
      await j.exited;
      if (setup.treeMoved && attempt < RACE_ATTEMPTS) {
        ctx.log.warn({ attempt }, 'tree path changed while binding it; retrying');
        continue;
      }
      if (setup.treeMoved) throw errors.serverUnavailable('The tree moved while its jail was being set up.', 1);
      if (opts.signal?.aborted) throw opts.signal.reason;
      throw errors.serverUnavailable(`The jail could not be set up: ${setup.why}`, 5);
    }
  } finally {
    if (treeFd !== undefined) closeSync(treeFd);
    for (const fd of bindFds) if (fd !== undefined) closeSync(fd);
  }
}

/**
 * How a sandbox's set-up ended: its PID 1 runs under the filter, or why not
 * (bwrap's scrubbed complaint; `treeMoved` when the tree's path changed while it
 * was bound, which is worth another attempt).
 */
type Setup = { ok: true } | { ok: false; why: string; treeMoved: boolean };

interface Launched extends JailedProcess {
  readonly setup: Promise<Setup>;
}

const setupFailed = (why: string): Setup => ({ ok: false, why, treeMoved: why.includes(RACE) });

function launch(
  ctx: SpawnContext,
  policy: PhasePolicy,
  opts: JailSpawnOptions,
  treeFd: number | undefined,
  bindFds: readonly (number | undefined)[],
): Launched {
  const uid = ctx.uids.acquire(opts.org);
  let cg: JailCgroup;
  try {
    cg = ctx.cgroups.create(`j${uid}-${++seq}`, ctx.limits, {
      org: opts.org ?? DAEMON_ORG,
      uncapped: (opts.uncappedStartMs ?? 0) > 0,
      ...(opts.background ? { background: true } : {}),
    });
  } catch (err) {
    ctx.uids.release(uid);
    throw err;
  }
  const rwBinds = (opts.binds ?? []).filter((b) => b.rw);
  // A FETCH jail writes its dependency dir as its pool uid; handed back to root when it is gone.
  // fchown through an O_NOFOLLOW|O_DIRECTORY fd: never chown what a link points at.
  try {
    for (const b of rwBinds) {
      const fd = openSync(b.host, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW);
      try {
        fchownSync(fd, uid, uid);
      } finally {
        closeSync(fd);
      }
    }
  } catch {
    cg.remove();
    ctx.uids.release(uid);
    throw errors.serverUnavailable('A read-write directory for the jail is not a plain directory.', 60);
  }

  // Descriptors past the fixed ones: the tree, then each read-only bind, numbered in
  // order; the gate reopens each of these daemon descriptors as that number.
  const passed: number[] = [];
  if (treeFd !== undefined) passed.push(treeFd);
  const binds = (opts.binds ?? []).map((b, i) => {
    const fd = bindFds[i];
    if (fd === undefined) return b;
    passed.push(fd);
    return { ...b, fd: FD.tree + passed.length - 1 };
  });
  const bwrapArgs = bwrapOptions({
    policy,
    fds: { jsonStatus: FD.jsonStatus, seccomp: FD.seccomp, ...(treeFd !== undefined ? { tree: FD.tree } : {}) },
    ...(opts.tree ? { treeAt: opts.tree.at } : {}),
    binds,
    tmpBytes: ctx.limits.tmpBytes,
    env: opts.env ?? {},
    cwd: opts.cwd ?? opts.tree?.at ?? JAIL_HOME,
  });
  // The gate's whole message (jail/gate.c): uid, gid, the descriptors, then bwrap's argv.
  // An empty environment: bwrap's PID 1 keeps the environ it was started with, and
  // /proc/1/environ is readable inside the jail (the gate was spawned with none).
  const argsMessage = nulFields(bwrapArgs);
  const gateMessage = nulFields([
    String(uid),
    String(uid),
    String(passed.length),
    ...passed.map(String),
    ctx.bwrapPath,
    '--args',
    String(FD.args),
    '--',
    ...jailCommand(policy, opts.argv),
  ]);
  const child: ChildProcess = ctx.gates.take();

  const scrub = makeScrubber([
    ...(opts.tree ? [[opts.tree.hostDir, opts.tree.at] as const] : []),
    ...(opts.binds ?? []).map((b) => [b.host, b.at] as const),
    ...policy.roBinds.map((b) => [b.host, b.at] as const),
    ...ctx.scrub,
  ]);
  const ring = new StderrRing(opts.stderrRingBytes ?? ctx.limits.stderrRingBytes);
  child.stderr!.on('data', (d: Buffer) => {
    ring.push(d);
    opts.onStderr?.(d);
  });
  const stderrDone = new Promise<void>((resolve) => child.stderr!.once('close', () => resolve()));

  // The sandbox's PID 1 (host pid), from bwrap's --json-status-fd.
  const sandbox: { pid1?: number } = {};
  let killed = false;
  const killGroup = () => {
    if (child.pid !== undefined) {
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        /* group already gone */
      }
    }
    cg.killAll();
  };
  // Kill the sandbox's PID 1 first: the kernel then SIGKILLs every process of its PID
  // namespace (pid_namespaces(7)), the init reaps them, bwrap and the gate reap the
  // init, so nothing is left as a zombie for the host's init. The process group and
  // the cgroup are the backstop: at once while PID 1 is not known, else after a grace.
  const kill = () => {
    if (killed) return;
    killed = true;
    if (sandbox.pid1 === undefined) return killGroup();
    try {
      process.kill(sandbox.pid1, 'SIGKILL');
    } catch {
      /* already gone */
    }
    setTimeout(() => {
      if (child.exitCode === null && child.signalCode === null) killGroup();
    }, KILL_GRACE_MS).unref();
  };
  const onAbort = () => kill();
  opts.signal?.addEventListener('abort', onAbort, { once: true });

  // A jail started uncapped gets its CPU cap when its caller says it has started, or
  // when uncappedStartMs have passed, whichever is first. A cap the kernel refuses
  // ends the jail: it never runs on uncapped for want of a write.
  let capped = (opts.uncappedStartMs ?? 0) <= 0;
  const capCpu = () => {
    if (capped) return;
    capped = true;
    ctx.starting.delete(jailed);
    clearTimeout(capTimer);
    try {
      cg.capCpu();
    } catch (err) {
      ctx.log.error({ err: (err as Error).message }, 'cannot put a started jail under its CPU cap; killing it');
      kill();
    }
  };
  const capTimer = capped
    ? undefined
    : setTimeout(() => {
        ctx.log.info({ org: opts.org, ms: opts.uncappedStartMs }, 'a jail ran out its uncapped start before its first answer; capping it');
        capCpu();
      }, opts.uncappedStartMs).unref();

  // --- the process is gone: drain the cgroup, hand back what the jail held ---
  const bwrapExit = new Promise<JailExit>((resolve) => {
    child.once('exit', (code, signal) => resolve({ code, signal }));
    child.once('error', () => resolve({ code: 127, signal: null }));
  });
  const exited = bwrapExit.then(async (exit) => {
    opts.signal?.removeEventListener('abort', onAbort);
    capped = true;
    ctx.starting.delete(jailed);
    clearTimeout(capTimer);
    const gone = await drain(cg);
    if (gone) {
      for (const b of rwBinds) await chownBack(b.host, ctx.log);
      ctx.uids.release(uid);
    } else {
      // Never reuse a uid while a process of it may live (D state); leak it loudly.
      ctx.log.error({ uid, pids: cg.pids() }, 'jail processes survived SIGKILL; uid quarantined');
    }
    ctx.live.delete(jailed);
    return exit;
  });

  // --- hand over options, filter, cgroup placement, go-ahead ---
  const fds = child.stdio as unknown as (Duplex | null)[];
  const setup = (async (): Promise<Setup> => {
    if (child.pid === undefined) {
      await exited;
      return setupFailed('the jail gate could not be started (is jail/build built?)');
    }
    fds[FD.args]!.end(argsMessage);
    fds[FD.seccomp]!.end(ctx.filters[opts.phase]);
    try {
      cg.attach(child.pid);
    } catch (err) {
      kill();
      await exited;
      return setupFailed(`cannot place the jail in its cgroup (${(err as Error).message})`);
    }
    fds[FD.gate]!.end(gateMessage);
    return confirmSetup(child, fds[FD.jsonStatus]!, sandbox, exited, opts.signal).then((r) => (r.ok ? r : setupFailed(scrub(firstLine(ring.text()) || r.why))));
  })();

  const jailed: Launched = {
    pid: child.pid ?? -1,
    stdin: child.stdin!,
    stdout: holdOutput(child.stdout!),
    stderrTail: () => scrub(ring.text()),
    stderrDone,
    exited,
    kill,
    memoryBytes: () => cg.memoryBytes(),
    cpuTimes: () => cpuTimes(cg.pids()),
    capCpu,
    foreground: () => cg.foreground(),
    setup,
  };
  ctx.live.add(jailed);
  if (!capped) ctx.starting.add(jailed);
  return jailed;
}

/**
 * The jail's stdout as a stream that keeps what the jail wrote until the caller reads
 * it. When a child exits, Node resumes each of its stdio streams nobody has started
 * reading (flushStdio in lib/internal/child_process.js) and the bytes go nowhere; a
 * jail as quick as the canary's probe can exit before spawnInJail returns, and its
 * answer was lost (1 daemon start in 100 not ready). Piped, the child's stream is
 * never "unread"; backpressure still reaches the jail through the pipe.
 */
function holdOutput(out: Readable): Readable {
  // A bare Readable fed by 'data', not a PassThrough that `out` pipes into: the same
  // hold and backpressure without a Transform's write path on every chunk a server
  // sends (each answer of a warm query passes here).
  let ended = false;
  const end = () => {
    if (!ended) held.push(null);
    ended = true;
  };
  const held = new Readable({ read: () => void out.resume() });
  out.on('data', (chunk: Buffer) => {
    if (!held.push(chunk)) out.pause();
  });
  out.once('end', end);
  // An errored pipe (the jail's end reset) does not end: end what is held here.
  out.once('close', end);
  held.once('close', () => out.destroy());
  return held;
}

/**
 * bwrap writes {"child-pid": N} on --json-status-fd right after clone(), and
 * {"exit-code": N} at the end only if the sandbox got as far as exec. In between,
 * N (the sandbox's PID 1) loads the seccomp filter only after every mount, the tree's
 * race check included: so "N has Seccomp: 2" or an exit-code record means set up.
 */
function confirmSetup(
  child: ChildProcess,
  status: Duplex,
  sandbox: { pid1?: number },
  exited: Promise<JailExit>,
  signal?: AbortSignal,
): Promise<{ ok: true } | { ok: false; why: string }> {
  return new Promise((resolve) => {
    let buf = '';
    let sawExitCode = false;
    let settled = false;
    const done = (r: { ok: true } | { ok: false; why: string }) => {
      if (settled) return;
      settled = true;
      clearInterval(poll);
      clearTimeout(deadline);
      resolve(r);
    };
    status.setEncoding('utf8');
    status.on('data', (d: string) => {
      buf += d;
      for (;;) {
        const nl = buf.indexOf('\n');
        if (nl < 0) break;
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        try {
          const rec = JSON.parse(line) as Record<string, unknown>;
          if (typeof rec['child-pid'] === 'number') sandbox.pid1 = rec['child-pid'];
          if ('exit-code' in rec) {
            sawExitCode = true;
            done({ ok: true });
          }
        } catch {
          /* not ours to judge */
        }
      }
    });
    status.on('error', () => {});
    const poll = setInterval(() => {
      if (sandbox.pid1 === undefined) return;
      try {
        if (/^Seccomp:\s*2$/m.test(readFileSync(`/proc/${sandbox.pid1}/status`, 'utf8'))) done({ ok: true });
      } catch {
        /* gone: the exit path decides */
      }
    }, 1);
    const deadline = setTimeout(() => {
      child.kill('SIGKILL');
      done({ ok: false, why: 'the sandbox was not set up in time' });
    }, SETUP_TIMEOUT_MS);
    void exited.then(() => {
      // The exit-code record is written before bwrap exits; give the stream its last bytes.
      const end = () => done(sawExitCode ? { ok: true } : { ok: false, why: signal?.aborted ? 'aborted' : 'bwrap failed' });
      if (status.readableEnded || status.destroyed) end();
      else {
        status.once('close', end);
        setTimeout(end, 200).unref();
      }
    });
  });
}

/** NUL-terminated fields; a NUL inside one would shift every field after it. */
function nulFields(fields: readonly string[]): Buffer {
  for (const f of fields) assert.ok(!f.includes('\0'), 'no NUL inside an argument');
  return Buffer.from(fields.map((f) => f + '\0').join(''));
}

function firstLine(s: string): string {
  return (s.split('\n').find((l) => l.startsWith('bwrap:')) ?? s.split('\n')[0] ?? '').trim().slice(0, 300);
}

/** Wait for the jail's cgroup to empty, SIGKILLing stragglers; then remove it. */
async function drain(cg: JailCgroup): Promise<boolean> {
  const until = Date.now() + DRAIN_TIMEOUT_MS;
  for (let i = 0; ; i++) {
    if (cg.pids().length === 0 && cg.remove()) return true;
    if (Date.now() > until) return false;
    if (i > 0) cg.killAll();
    await new Promise((r) => setTimeout(r, Math.min(50, 2 ** i)));
  }
}

/** Give a FETCH dependency dir back to root, never following a link the jail left there. */
async function chownBack(dir: string, log: Logger): Promise<void> {
  try {
    await lchown(dir, 0, 0);
    for (const e of await readdir(dir, { withFileTypes: true })) {
      const p = join(dir, e.name);
      if (e.isDirectory()) await chownBack(p, log);
      else await lchown(p, 0, 0);
    }
  } catch (err) {
    log.warn({ code: (err as NodeJS.ErrnoException).code }, 'could not hand a dependency dir back to root');
  }
}
