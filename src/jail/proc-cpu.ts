// CPU time of a jail's processes, from /proc/<pid>/stat (utime + stime, proc(5)).
// cgroup v1 keeps CPU usage in the cpuacct hierarchy, where jails are not placed;
// reading each process serves v1 and v2 alike. A process that exits between two
// readings drops out of both, so callers compare per pid.
import { readFileSync } from 'node:fs';

/** USER_HZ: the unit of utime/stime, 100 on every Linux architecture Node runs on. */
const TICKS_PER_SECOND = 100;

/**
 * Processes read at most per call: a jail forking all it may (LSPD_JAIL_PIDS) would
 * otherwise cost the daemon's one thread hundreds of reads per reading.
 */
export const MAX_PROCESSES_READ = 64;

/** CPU ms used so far by each pid still readable; undefined when there are more than MAX_PROCESSES_READ (busy, whatever they do). */
export function cpuTimes(pids: readonly number[]): Map<number, number> | undefined {
  if (pids.length > MAX_PROCESSES_READ) return undefined;
  const out = new Map<number, number>();
  for (const pid of pids) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      // "pid (comm) state ppid ..."; comm may hold spaces and parentheses; utime and stime are fields 14 and 15.
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      out.set(pid, ((Number(f[11]) + Number(f[12])) * 1000) / TICKS_PER_SECOND);
    } catch {
      /* gone */
    }
  }
  return out;
}

/** CPU ms spent between two readings by the processes in both. */
export function cpuSpent(before: ReadonlyMap<number, number>, after: ReadonlyMap<number, number>): number {
  let ms = 0;
  for (const [pid, t] of after) {
    const t0 = before.get(pid);
    if (t0 !== undefined && t >= t0) ms += t - t0;
  }
  return ms;
}
