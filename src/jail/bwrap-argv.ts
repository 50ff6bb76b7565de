// Policy → bubblewrap options, as a pure function: no I/O, no defaults decided
// here, so the whole confinement of a jail can be read (and unit-tested) as one
// list of strings. Options go to bwrap through `--args FD` (bwrap-args(1)), so the
// host paths in them never appear in /proc/1/cmdline inside the jail; the command
// itself follows `--` on bwrap's real command line.
// bwrap(1): https://manpages.debian.org/bookworm/bubblewrap/bwrap.1.en.html
import assert from 'node:assert/strict';
import { posix } from 'node:path';
import type { Bind } from './types.js';
import { FETCH_PROXY_PORT, JAIL_EGRESS_SOCKET, JAIL_FORWARDER } from './layout.js';
import { JAIL_INNER_UID, NAMESPACES, type PhasePolicy } from './policy.js';

export interface BwrapPlan {
  policy: PhasePolicy;
  /** Descriptor numbers as the bwrap process will have them. */
  fds: { jsonStatus: number; seccomp: number; tree?: number };
  /** Where the tree (bound from fds.tree) appears. */
  treeAt?: string;
  /** Extra binds from the caller (dependency dirs); `fd`: bind that descriptor read-only instead of the path. */
  binds: readonly (Bind & { fd?: number })[];
  /** Size of each private tmpfs. */
  tmpBytes: number;
  /** The caller's environment, laid over the policy's. */
  env: Readonly<Record<string, string>>;
  cwd: string;
}

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** An absolute, normalised in-jail path with no NUL: what bwrap may mount on. */
export function isJailPath(p: string): boolean {
  return p.startsWith('/') && !p.includes('\0') && posix.normalize(p) === p && p !== '/' && !p.endsWith('/');
}

export function bwrapOptions(plan: BwrapPlan): string[] {
  const { policy } = plan;
  assert.ok(Number.isSafeInteger(plan.tmpBytes) && plan.tmpBytes > 0, 'tmpBytes');
  // Every namespace, or no jail: SERVE and FETCH both get a network namespace holding
  // only lo (FETCH's way out is the proxy socket its policy binds). --unshare-all is
  // bwrap's "user (if it can), ipc, pid, net, uts, cgroup"; --unshare-user makes the
  // user namespace certain, so --disable-userns (no nested ones) always applies.
  for (const ns of NAMESPACES) assert.ok(policy.namespaces.includes(ns), `the policy unshares the ${ns} namespace`);
  const a: string[] = [
    '--unshare-all',
    '--unshare-user',
    '--disable-userns',
    // SIGKILL the sandbox when bwrap's parent (the daemon) dies: nothing outlives lspd.
    '--die-with-parent',
    // setsid(): no TIOCSTI into a terminal the daemon might have.
    '--new-session',
    '--cap-drop',
    'ALL',
    '--uid',
    String(JAIL_INNER_UID),
    '--gid',
    String(JAIL_INNER_UID),
    '--hostname',
    policy.hostname,
    '--json-status-fd',
    String(plan.fds.jsonStatus),
    '--seccomp',
    String(plan.fds.seccomp),
  ];
  for (const b of policy.roBinds) {
    assert.ok(isJailPath(b.at), `policy bind target ${b.at}`);
    a.push(b.optional ? '--ro-bind-try' : '--ro-bind', b.host, b.at);
  }
  for (const s of policy.symlinks) a.push('--symlink', s.target, s.at);
  assert.ok(isJailPath(policy.proc) && isJailPath(policy.dev), 'proc and dev targets');
  a.push('--proc', policy.proc, '--dev', policy.dev);
  for (const t of policy.tmpfs) a.push('--size', String(plan.tmpBytes), '--perms', '0700', '--tmpfs', t);

  if (plan.fds.tree !== undefined) {
    assert.ok(plan.treeAt && isJailPath(plan.treeAt), 'tree target');
    // By the directory fd the daemon opened and checked. bwrap re-resolves the fd
    // to a path to mount it and then compares st_dev/st_ino with the fd, failing
    // with "Race condition binding dirfd" rather than mounting a swapped-in tree.
    a.push('--ro-bind-fd', String(plan.fds.tree), plan.treeAt);
  } else {
    assert.equal(plan.treeAt, undefined, 'treeAt without a tree fd');
  }
  // Parents before children, so a bind under the tree lands on top of it.
  const binds = [...plan.binds].sort((x, y) => x.at.split('/').length - y.at.split('/').length);
  for (const b of binds) {
    assert.ok(isJailPath(b.at), `bind target ${b.at}`);
    assert.ok(b.host.startsWith('/') && !b.host.includes('\0'), 'bind source');
    if (b.fd !== undefined) {
      assert.ok(!b.rw, 'bwrap 0.8.0 binds descriptors read-only only');
      a.push('--ro-bind-fd', String(b.fd), b.at);
    } else a.push(b.rw ? '--bind' : '--ro-bind', b.host, b.at);
  }

  a.push('--clearenv');
  const env = { ...policy.env, ...plan.env };
  for (const [k, v] of Object.entries(env)) {
    assert.ok(ENV_NAME.test(k), `env name ${k}`);
    assert.ok(!v.includes('\0'), `env value of ${k}`);
    a.push('--setenv', k, v);
  }
  assert.ok(plan.cwd.startsWith('/'), 'cwd');
  a.push('--chdir', plan.cwd);
  return a;
}

/**
 * The command bwrap execs. In FETCH it is started by the in-jail forwarder, which
 * listens on 127.0.0.1:FETCH_PROXY_PORT and carries each connection to the daemon's
 * proxy socket, so HTTPS_PROXY=http://127.0.0.1:PORT works for npm, go and composer.
 */
export function jailCommand(policy: PhasePolicy, argv: readonly string[]): string[] {
  assert.ok(argv.length > 0 && argv[0]!.startsWith('/'), 'argv[0] must be an absolute in-jail path');
  if (policy.network === 'none') return [...argv];
  return [JAIL_FORWARDER, String(FETCH_PROXY_PORT), JAIL_EGRESS_SOCKET, '--', ...argv];
}
