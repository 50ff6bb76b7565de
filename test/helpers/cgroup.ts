// Reading a jail's CPU cgroup back from the kernel, by the pid of any process in it.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/** What cpu.max / cpu.cfs_quota_us says when there is no quota (v2 "max", v1 -1). */
export const UNLIMITED = -1;

/** The cpu cgroup dir holding `pid` (v1 cpu hierarchy, or the v2 unified one). */
export function cpuCgroupOf(pid: number): string {
  const lines = readFileSync(`/proc/${pid}/cgroup`, 'utf8').split('\n');
  const v1 = lines.map((l) => /^\d+:([^:]*\bcpu\b[^:]*):(.*)$/.exec(l)).find(Boolean);
  if (v1) return [join('/sys/fs/cgroup', v1[1]!, v1[2]!), join('/sys/fs/cgroup/cpu', v1[2]!)].find((d) => existsSync(join(d, 'cpu.cfs_quota_us')))!;
  return join('/sys/fs/cgroup', lines.find((l) => l.startsWith('0::'))!.slice(3));
}

/** The CPU bandwidth of the cgroup holding `pid` (v2 cpu.max and cpu.max.burst, v1 cpu.cfs_*); burst 0 where the kernel has none. */
export function cpuBandwidthOf(pid: number): { periodUs: number; quotaUs: number; burstUs: number } {
  const dir = cpuCgroupOf(pid);
  const num = (file: string) => (existsSync(file) ? Number(readFileSync(file, 'utf8').trim()) : 0);
  if (existsSync(join(dir, 'cpu.cfs_quota_us'))) {
    return { periodUs: num(join(dir, 'cpu.cfs_period_us')), quotaUs: num(join(dir, 'cpu.cfs_quota_us')), burstUs: num(join(dir, 'cpu.cfs_burst_us')) };
  }
  const [quota, period] = readFileSync(join(dir, 'cpu.max'), 'utf8').trim().split(' ');
  return { periodUs: Number(period), quotaUs: quota === 'max' ? UNLIMITED : Number(quota), burstUs: num(join(dir, 'cpu.max.burst')) };
}

/** The CPU weight of the cgroup holding `pid`, as a fraction of the kernel's default (v1 cpu.shares / 1024, v2 cpu.weight / 100). */
export function cpuWeightOf(pid: number): number {
  const dir = cpuCgroupOf(pid);
  if (existsSync(join(dir, 'cpu.shares'))) return Number(readFileSync(join(dir, 'cpu.shares'), 'utf8').trim()) / 1024;
  return Number(readFileSync(join(dir, 'cpu.weight'), 'utf8').trim()) / 100;
}
