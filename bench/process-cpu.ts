// CPU time of processes for the benches, to the nanosecond: each thread's
// /proc/<pid>/task/<tid>/schedstat (its first field is the ns it ran). utime and
// stime count in 10 ms ticks, too coarse for a 50 ms request. A thread that ends
// between two readings drops its time: read around work, not across a restart.
import { readdirSync, readFileSync } from 'node:fs';

/** ms run so far by every thread of `pid` (0 when it is gone). */
export function cpuMsOf(pid: number): number {
  let ns = 0;
  try {
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      try {
        ns += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'latin1').split(' ')[0]);
      } catch {
        /* the thread ended */
      }
    }
  } catch {
    /* the process ended */
  }
  return ns / 1e6;
}

/** The pids below `ancestor` (any depth) whose command line contains `needle`. */
export function descendantsRunning(ancestor: number, needle: string): number[] {
  const parent = new Map<number, number>();
  const out: number[] = [];
  for (const name of readdirSync('/proc')) {
    const pid = Number(name);
    if (!Number.isInteger(pid)) continue;
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
      parent.set(pid, Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
      if (readFileSync(`/proc/${pid}/cmdline`, 'latin1').includes(needle)) out.push(pid);
    } catch {
      /* gone */
    }
  }
  const below = (pid: number): boolean => {
    for (let p = parent.get(pid), hops = 0; p !== undefined && p > 1 && hops < 64; p = parent.get(p), hops++) if (p === ancestor) return true;
    return false;
  };
  return out.filter(below);
}

/** ms the CPU cap held back `pid`'s cgroup so far (cpu.stat: v1 throttled_time ns, v2 throttled_usec); undefined when unreadable. */
export function throttledMsOf(pid: number): number | undefined {
  try {
    for (const line of readFileSync(`/proc/${pid}/cgroup`, 'latin1').split('\n')) {
      const [, controllers, path] = line.split(':');
      if (controllers === undefined || path === undefined) continue;
      const v1 = controllers.split(',').includes('cpu');
      if (!v1 && controllers !== '') continue;
      const stat = readFileSync(v1 ? `/sys/fs/cgroup/cpu${path}/cpu.stat` : `/sys/fs/cgroup${path}/cpu.stat`, 'latin1');
      const m = (v1 ? /throttled_time (\d+)/ : /throttled_usec (\d+)/).exec(stat);
      if (m) return Number(m[1]) / (v1 ? 1e6 : 1e3);
    }
  } catch {
    /* gone, or no CPU controller */
  }
  return undefined;
}
