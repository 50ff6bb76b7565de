// A stand-in Jail for developing sessions before the real one exists: bubblewrap
// with the same in-jail layout (tree at /src, node_modules at JAIL_NODE_MODULES,
// private /tmp and HOME), but no seccomp, cgroups or uid pool. Never used by a test
// that claims a feature works; those use the real jail (createJail).
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import type { Jail, JailExit, JailSpawnOptions, JailedProcess } from '../../src/jail/types.js';
import { JAIL_HOME, JAIL_NODE_MODULES, PROJECT_DIR } from '../../src/jail/policy.js';

export function createDevJail(): Jail & { pids: Set<number> } {
  const pids = new Set<number>();
  return {
    pids,
    async spawn(opts: JailSpawnOptions): Promise<JailedProcess> {
      const a = ['--unshare-all', '--die-with-parent', '--new-session', '--ro-bind', '/usr', '/usr'];
      for (const d of ['bin', 'lib', 'lib64', 'sbin']) a.push('--symlink', `usr/${d}`, `/${d}`);
      a.push('--ro-bind', '/etc', '/etc', '--proc', '/proc', '--dev', '/dev', '--tmpfs', '/tmp', '--tmpfs', JAIL_HOME);
      a.push('--ro-bind', join(PROJECT_DIR, 'node_modules'), JAIL_NODE_MODULES);
      if (opts.tree) a.push('--ro-bind', opts.tree.hostDir, opts.tree.at);
      for (const b of opts.binds ?? []) a.push(b.rw ? '--bind' : '--ro-bind', b.host, b.at);
      a.push('--clearenv');
      for (const [k, v] of Object.entries(opts.env ?? {})) a.push('--setenv', k, v);
      a.push('--chdir', opts.cwd ?? '/', '--', ...opts.argv);
      const cp = spawn('/usr/bin/bwrap', a, { stdio: ['pipe', 'pipe', 'pipe'], detached: true, env: {} });
      const pid = cp.pid!;
      pids.add(pid);
      let tail = '';
      const max = opts.stderrRingBytes ?? 65536;
      cp.stderr!.on('data', (d: Buffer) => {
        tail = (tail + d.toString('utf8')).slice(-max);
      });
      const exited = new Promise<JailExit>((res) =>
        cp.once('exit', (code, signal) => {
          pids.delete(pid);
          res({ code, signal });
        }),
      );
      const kill = () => {
        try {
          process.kill(-pid, 'SIGKILL');
        } catch {
          /* gone */
        }
      };
      opts.signal?.addEventListener('abort', kill, { once: true });
      return { pid, stdin: cp.stdin!, stdout: cp.stdout!, stderrTail: () => tail, exited, kill };
    },
  };
}
