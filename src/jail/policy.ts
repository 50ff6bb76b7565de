// The two phase policies as data (DESIGN.md "Two jail phases"): what each jail
// sees of the host, its namespaces and mounts (/proc, /dev, tmpfs), which network
// it has and the environment it starts from, at the places layout.ts names. Only
// host-dependent facts (where the project lives, how /bin is laid out) are filled
// in by `phasePolicy`; bwrap-argv.ts turns a policy into bubblewrap options and
// decides nothing itself.
import { lstatSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { DEV_AT, JAIL_EGRESS_SOCKET, JAIL_HOME, JAIL_NODE_MODULES, JAIL_TMP, JAIL_TOOLS, PROC_AT, jailEnv } from './layout.js';
import type { Phase } from './types.js';

/** The lspd project directory on the host (src/jail/ → ../..). */
export const PROJECT_DIR = resolve(import.meta.dirname, '..', '..');
/** Where `make -C jail` puts the helper, the gate, the probe and the forwarder. */
export const JAIL_BUILD_DIR = join(PROJECT_DIR, 'jail', 'build');
export const GATE_PATH = join(JAIL_BUILD_DIR, 'lspd-gate');
export const PROBE_PATH = join(JAIL_BUILD_DIR, 'lspd-probe');
export const FORWARDER_PATH = join(JAIL_BUILD_DIR, 'lspd-egress-fwd');

/** The uid/gid a jailed process has inside its user namespace (the host uid is the pool's). */
export const JAIL_INNER_UID = 1000;

/** Every namespace bwrap can unshare: a jail has its own of each, always (bwrap-argv.ts refuses fewer). */
export const NAMESPACES = ['user', 'ipc', 'pid', 'net', 'uts', 'cgroup'] as const;
export type Namespace = (typeof NAMESPACES)[number];

export interface RoBind {
  host: string;
  at: string;
  /** Skip silently when the host path is absent (e.g. /lib32 on a host without it). */
  optional?: boolean;
}

export interface PhasePolicy {
  readonly phase: Phase;
  /**
   * Namespaces of its own (bwrap --unshare-*): all of NAMESPACES. The user namespace
   * cannot make nested ones (--disable-userns): they would hand the jailed process a
   * fresh set of capabilities over new namespaces (the kernel attack surface behind
   * most userns CVEs).
   */
  readonly namespaces: readonly Namespace[];
  /** 'none': a network namespace with only lo. 'egress-proxy': the same, plus the daemon's proxy socket and an in-jail forwarder on 127.0.0.1. */
  readonly network: 'none' | 'egress-proxy';
  /** Read-only binds of host paths (toolchains, the few /etc files that are needed). */
  readonly roBinds: readonly RoBind[];
  /** Symlinks created in the jail root (merged-/usr hosts: /bin → usr/bin). */
  readonly symlinks: readonly { target: string; at: string }[];
  /** Where a fresh procfs of the jail's PID namespace is mounted: gopls dies without /proc (readlink /proc/self/exe). */
  readonly proc: string;
  /** Where bwrap's minimal /dev is mounted (null, zero, random, urandom, tty, pts, shm). */
  readonly dev: string;
  /** Size-bounded private tmpfs mounts. */
  readonly tmpfs: readonly string[];
  /** Environment every command starts from (the caller's env is laid over it). */
  readonly env: Readonly<Record<string, string>>;
  readonly hostname: string;
}

/** Host facts a policy depends on; gathered once at boot. */
export interface HostLayout {
  projectDir: string;
  /** Daemon-written files bound over /etc/passwd, /etc/group, /etc/hosts (a uid with a name; nothing of the host's users). */
  etcDir: string;
  /** The daemon's egress proxy socket (host path). */
  egressSocket: string;
  /** Top-level entries that are symlinks into /usr on this host (merged /usr), by name. */
  usrMerged: Readonly<Record<string, string>>;
}

/** This host's layout for a daemon over `dataDir`: its jail files live in <dataDir>/jail. */
export function hostLayout(dataDir: string): HostLayout {
  const jailDir = join(dataDir, 'jail');
  return { projectDir: PROJECT_DIR, etcDir: join(jailDir, 'etc'), egressSocket: join(jailDir, 'egress.sock'), usrMerged: topLevelDirs() };
}

/** Every host path a phase's policy binds into its jails, with where and in which phase. */
export function boundHostPaths(host: HostLayout): { host: string; at: string; phase: Phase }[] {
  return (['serve', 'fetch'] as const).flatMap((phase) => phasePolicy(phase, host).roBinds.map((b) => ({ host: b.host, at: b.at, phase })));
}

/** /bin, /sbin, /lib* as symlinks where the host has them so, else read-only binds. */
export function topLevelDirs(): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of ['bin', 'sbin', 'lib', 'lib32', 'lib64', 'libx32']) {
    try {
      const st = lstatSync(`/${name}`);
      out[name] = st.isSymbolicLink() ? 'symlink' : 'dir';
    } catch {
      /* absent */
    }
  }
  return out;
}

export function phasePolicy(phase: Phase, host: HostLayout): PhasePolicy {
  const symlinks: { target: string; at: string }[] = [];
  // /usr holds every toolchain (node, go, gopls, clangd, npm); read-only.
  const roBinds: RoBind[] = [{ host: '/usr', at: '/usr' }];
  for (const [name, kind] of Object.entries(host.usrMerged)) {
    if (kind === 'symlink') symlinks.push({ target: `usr/${name}`, at: `/${name}` });
    else roBinds.push({ host: `/${name}`, at: `/${name}`, optional: true });
  }
  // As little of /etc as works: the dynamic linker's cache (clangd's LLVM libraries),
  // and daemon-written passwd/group/hosts so the jail uid has a name (os.userInfo(),
  // Go's os/user) without exposing the host's accounts.
  roBinds.push(
    { host: '/etc/ld.so.cache', at: '/etc/ld.so.cache', optional: true },
    { host: join(host.etcDir, 'passwd'), at: '/etc/passwd' },
    { host: join(host.etcDir, 'group'), at: '/etc/group' },
    { host: join(host.etcDir, 'hosts'), at: '/etc/hosts' },
    { host: join(host.projectDir, 'jail', 'build'), at: JAIL_TOOLS },
  );
  // SERVE: the daemon's node_modules (the Node servers), and no network at all.
  // FETCH verifies TLS (Go and composer read the system CA bundle; npm carries its
  // own) and reaches the network only through the egress proxy's socket.
  const serve = phase === 'serve';
  if (serve) {
    roBinds.push({ host: join(host.projectDir, 'node_modules'), at: JAIL_NODE_MODULES });
  } else {
    roBinds.push({ host: '/etc/ssl', at: '/etc/ssl', optional: true }, { host: '/etc/ca-certificates', at: '/etc/ca-certificates', optional: true });
    roBinds.push({ host: host.egressSocket, at: JAIL_EGRESS_SOCKET });
  }
  return Object.freeze({
    phase,
    namespaces: NAMESPACES,
    network: serve ? 'none' : 'egress-proxy',
    roBinds,
    symlinks,
    proc: PROC_AT,
    dev: DEV_AT,
    tmpfs: [JAIL_TMP, JAIL_HOME],
    env: jailEnv(phase),
    hostname: 'lspd',
  });
}

/**
 * The same policy over a system root of its own (a Debian 13 tree made by
 * images/debian13-root.sh): the jail sees the root's /usr, and its dynamic linker
 * cache, instead of the host's, with /bin, /sbin, /lib and /lib64 as merged-/usr
 * links into it (Debian 13 is merged-/usr). Nothing else changes: the same /etc
 * files, tmpfs mounts, network and environment. For rows whose Debian packages need
 * a newer C library than the host's (the Rust row), in SERVE and FETCH alike.
 */
export function withSystemRoot(policy: PhasePolicy, root: string): PhasePolicy {
  const topLevel = new Set(['/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32']);
  const roBinds = policy.roBinds
    .filter((b) => !topLevel.has(b.at))
    .map((b) =>
      b.at === '/usr' ? { host: join(root, 'usr'), at: '/usr' } : b.at === '/etc/ld.so.cache' ? { ...b, host: join(root, 'etc', 'ld.so.cache') } : b,
    );
  const symlinks = ['bin', 'sbin', 'lib', 'lib64'].map((name) => ({ target: `usr/${name}`, at: `/${name}` }));
  return Object.freeze({ ...policy, roBinds, symlinks });
}
