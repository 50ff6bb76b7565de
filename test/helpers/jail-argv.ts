// A jail's whole command line as src/jail/spawn.ts builds it, for a fixed host and
// without spawning: the bwrap options (descriptors numbered as spawn.ts numbers them:
// 3 json-status, 5 seccomp, 7 the tree, then one per read-only bind in order), then
// `--` and the command (behind the forwarder in FETCH). Pure, so a snapshot of it
// pins what every jail sees.
import { bwrapOptions, jailCommand } from '../../src/jail/bwrap-argv.js';
import { JAIL_HOME } from '../../src/jail/layout.js';
import type { HostLayout, PhasePolicy } from '../../src/jail/policy.js';
import type { Bind } from '../../src/jail/types.js';

/** A host as the snapshot sees it: merged /usr, a real /lib32, data under /data, the project at /opt/proj. */
export const FIXED_HOST: HostLayout = {
  projectDir: '/opt/proj',
  etcDir: '/data/jail/etc',
  egressSocket: '/data/jail/egress.sock',
  usrMerged: { bin: 'symlink', sbin: 'symlink', lib: 'symlink', lib64: 'symlink', lib32: 'dir' },
};

export interface ArgvInput {
  argv: readonly string[];
  env?: Record<string, string>;
  binds?: readonly Bind[];
  tree?: { at: string };
  cwd?: string;
}

export function fullJailArgv(policy: PhasePolicy, spawn: ArgvInput, tmpBytes = 1 << 20): string[] {
  let next = 7;
  const tree = spawn.tree ? next++ : undefined;
  const binds = (spawn.binds ?? []).map((b) => (b.rw ? b : { ...b, fd: next++ }));
  const options = bwrapOptions({
    policy,
    fds: { jsonStatus: 3, seccomp: 5, ...(tree !== undefined ? { tree } : {}) },
    ...(spawn.tree ? { treeAt: spawn.tree.at } : {}),
    binds,
    tmpBytes,
    env: spawn.env ?? {},
    cwd: spawn.cwd ?? spawn.tree?.at ?? JAIL_HOME,
  });
  return [...options, '--', ...jailCommand(policy, spawn.argv)];
}

/** argv grouped for reading: one group per option (a token starting with `--`) and its values; the command whole. */
export function groupArgv(argv: readonly string[]): { options: string[][]; command: string[] } {
  const end = argv.indexOf('--');
  const options: string[][] = [];
  for (const t of argv.slice(0, end)) {
    if (t.startsWith('--')) options.push([t]);
    else options.at(-1)!.push(t);
  }
  return { options, command: argv.slice(end + 1) };
}
