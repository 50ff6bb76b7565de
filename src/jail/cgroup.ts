// Memory, pids and CPU caps per jail, with cgroup v2 where the host delegates it and
// cgroup v1 where it does not (this Debian VM: v1 memory and pids hierarchies,
// and a hybrid /sys/fs/cgroup/unified with no controllers). Each jail gets its own
// cgroup under one directory per daemon, nested under the daemon's own cgroup so
// whatever limit the host puts on lspd still bounds its jails.
// CPU is shared by org first: every org's jails sit in one cgroup of that org, all at
// the kernel's default weight, so when the host is busy each org gets an equal share
// however many jails it runs (or however hard one of them spins); the per-jail cap
// then bounds one jail inside its org. daemon/lspd-<pid>/o<hash of org>/<jail>.
// The jail is placed in its cgroups while lspd-gate holds it before exec'ing bwrap
// (jail/gate.c), so no process of the jail is ever forked outside them.
// RLIMIT_AS is no substitute: V8 reserves far more address space than it uses.
// cgroups(7), https://docs.kernel.org/admin-guide/cgroup-v2.html
import { existsSync, mkdirSync, readFileSync, readdirSync, rmdirSync, writeFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { join } from 'node:path';

export type CgroupVersion = 'v1' | 'v2';

export interface JailCgroup {
  /** Place a process (blocked in lspd-gate) in every controller. */
  attach(pid: number): void;
  /** Processes still in the jail's cgroup. */
  pids(): number[];
  /** SIGKILL every process in it (cgroup.kill on v2, else one by one). */
  killAll(): void;
  /** rmdir; false while processes remain. */
  remove(): boolean;
  /** Memory the jail's processes use now (v2 memory.current, v1 memory.usage_in_bytes); undefined when unreadable. */
  memoryBytes(): number | undefined;
  /** Put a jail created `uncapped` under its CPU cap (idempotent; throws CgroupError when the kernel refuses). */
  capCpu(): void;
  /** Give a jail created `background` the default CPU weight (idempotent; a failed write leaves it background). */
  foreground(): void;
}

export interface JailPlacement {
  /** The org the jail works for: its CPU is shared with that org's other jails. */
  org: string;
  /** Start without the per-jail CPU cap (the org's share still holds) until capCpu(). */
  uncapped?: boolean;
  /**
   * Start at a low CPU weight among the org's jails until foreground(): work nobody
   * waits for yet (a warm-up's session) yields the cores to one a query waits on.
   * Weights count only while the cores are contended; an idle host runs it at full speed.
   */
  background?: boolean;
}

/** The background weight: 1/16 of the default (v2 cpu.weight 100, v1 cpu.shares 1024). */
const BACKGROUND_WEIGHT_V2 = '6';
const DEFAULT_WEIGHT_V2 = '100';
const BACKGROUND_SHARES_V1 = '64';
const DEFAULT_SHARES_V1 = '1024';

export interface Cgroups {
  readonly version: CgroupVersion;
  /** False when the host delegates no CPU controller: jails then run without a CPU cap. */
  readonly cpuCapped: boolean;
  create(name: string, limits: CgroupLimits, placement: JailPlacement): JailCgroup;
  /** Remove the daemon's (empty) cgroup directories. */
  close(): void;
}

export interface CgroupLimits {
  memoryBytes: number;
  pids: number;
  /** CPU time per wall-clock second, in thousandths of a CPU (1000: one CPU); 0: no cap. */
  cpuMillis: number;
  /** CPU time (ms) an idle jail saves up to spend above its cap, as a cold start does; 0: none. */
  cpuBurstMillis: number;
}

/** The kernel's CFS bandwidth (quota per period, and the burst saved from idle periods). */
interface CpuBandwidth {
  periodUs: number;
  quotaUs: number;
  burstUs: number;
}

const MIN_PERIOD_US = 100_000; // the kernel's default period
const MAX_PERIOD_US = 1_000_000; // the kernel's largest

/**
 * The kernel takes a burst of at most one period's quota, so a burst larger than
 * that lengthens the period (to 1 s at most): the average cap is the same, it is only
 * enforced over a longer window. sched-bwc: https://docs.kernel.org/scheduler/sched-bwc.html
 */
export function cpuBandwidth(cpuMillis: number, cpuBurstMillis: number): CpuBandwidth {
  const cpus = cpuMillis / 1000;
  const wanted = cpuBurstMillis * 1000;
  const periodUs = Math.min(MAX_PERIOD_US, Math.max(MIN_PERIOD_US, Math.ceil(wanted / cpus)));
  const quotaUs = Math.max(1000, Math.round(cpus * periodUs));
  return { periodUs, quotaUs, burstUs: Math.min(wanted, quotaUs) };
}

export class CgroupError extends Error {
  override name = 'CgroupError';
}

interface Mount {
  point: string;
  root: string;
  fstype: string;
  superOpts: string[];
}

function mounts(): Mount[] {
  // mountinfo(5): id parent maj:min root mountpoint opts [optional...] - fstype source superopts
  return readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => {
      const [left, right = ''] = line.split(' - ');
      const f = left!.split(' ');
      const r = right.split(' ');
      const unesc = (s: string) => s.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)));
      return { root: unesc(f[3] ?? ''), point: unesc(f[4] ?? ''), fstype: r[0] ?? '', superOpts: (r[2] ?? '').split(',') };
    });
}

/** /proc/self/cgroup as controller → path ('' for the v2 unified line). */
function selfCgroups(): Map<string, string> {
  const m = new Map<string, string>();
  for (const line of readFileSync('/proc/self/cgroup', 'utf8').split('\n')) {
    const match = /^\d+:([^:]*):(.*)$/.exec(line);
    if (!match) continue;
    const ctrls = match[1] === '' ? [''] : match[1]!.split(',');
    for (const c of ctrls) m.set(c, match[2]!);
  }
  return m;
}

function dirOf(mount: Mount, cgPath: string): string {
  const rel = mount.root !== '/' && cgPath.startsWith(mount.root) ? cgPath.slice(mount.root.length) : cgPath;
  return join(mount.point, rel);
}

const readPids = (file: string): number[] => readFileSync(file, 'utf8').split('\n').filter(Boolean).map(Number);

function killPids(pids: number[]): void {
  for (const pid of pids) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      /* already gone */
    }
  }
}

function tryRmdir(dir: string): boolean {
  try {
    rmdirSync(dir);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ENOENT';
  }
}

/** An org's cgroup name: a digest, so no org name is ever a cgroup path (or a control file's name). */
const orgDirName = (org: string) => `o${createHash('sha256').update(org).digest('hex').slice(0, 16)}`;

/**
 * One cgroup per org with live jails, under `base`: made with the org's first jail
 * and removed with its last. Counted in the daemon (every create and remove is
 * synchronous on its one thread), so no removal races a jail being placed.
 */
class OrgDirs {
  private readonly jails = new Map<string, number>();
  constructor(
    private readonly base: string,
    private readonly prepare: (dir: string) => void = () => {},
  ) {}

  enter(org: string): string {
    const dir = join(this.base, orgDirName(org));
    const n = this.jails.get(org) ?? 0;
    if (n === 0) {
      mkdirSync(dir, { recursive: true });
      try {
        this.prepare(dir);
      } catch (err) {
        tryRmdir(dir);
        throw err;
      }
    }
    this.jails.set(org, n + 1);
    return dir;
  }

  leave(org: string): void {
    const n = (this.jails.get(org) ?? 1) - 1;
    if (n > 0) return void this.jails.set(org, n);
    this.jails.delete(org);
    tryRmdir(join(this.base, orgDirName(org)));
  }
}

/** Remove `lspd-<pid>` directories left by daemons that were SIGKILLed (their jails died with them). */
function sweepStale(parent: string, prefix: string): void {
  let names: string[] = [];
  try {
    names = readdirSync(parent);
  } catch {
    return;
  }
  for (const name of names) {
    const m = new RegExp(`^${prefix}(\\d+)$`).exec(name);
    if (!m || Number(m[1]) === process.pid || existsSync(`/proc/${m[1]}`)) continue;
    rmdirTree(join(parent, name), 2); // its orgs' dirs, and their jails' below them
  }
}

/** rmdir `dir` after its subdirectories, `depth` levels down (a cgroup's files are not files: rmdir takes them). */
function rmdirTree(dir: string, depth: number): void {
  if (depth > 0) {
    try {
      for (const child of readdirSync(dir, { withFileTypes: true })) if (child.isDirectory()) rmdirTree(join(dir, child.name), depth - 1);
    } catch {
      /* raced */
    }
  }
  tryRmdir(dir);
}

function readNumber(file: string): number | undefined {
  try {
    const n = Number(readFileSync(file, 'utf8').trim());
    return Number.isFinite(n) ? n : undefined;
  } catch {
    return undefined;
  }
}

/** A write whose failure leaves things as they were (a weight raised back): nothing to refuse. */
function tryWrite(file: string, value: string): void {
  try {
    writeFileSync(file, value);
  } catch {
    /* the cgroup is gone with its jail, or the kernel refused: the jail stays as it was */
  }
}

function write(file: string, value: string): void {
  try {
    writeFileSync(file, value);
  } catch (err) {
    throw new CgroupError(`cannot write ${value.trim()} to ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
}

function openV2(cgroupRoot: string): Cgroups | string {
  const mount = mounts().find((m) => m.fstype === 'cgroup2' && m.point === cgroupRoot);
  if (!mount) return 'no cgroup v2 mounted at the cgroup root';
  const self = dirOf(mount, selfCgroups().get('') ?? '/');
  const available = readFileSync(join(self, 'cgroup.controllers'), 'utf8').trim().split(' ');
  if (!available.includes('memory') || !available.includes('pids')) return 'cgroup v2 does not delegate memory and pids to lspd';
  // CPU where the host delegates it (a jail that spins, a fork bomb's churn, must not
  // take every core from the other orgs' jails); without it the jails run uncapped.
  const offered = available.includes('cpu');
  /** Enable the CPU controller for `dir`'s children where it can be; memory and pids are required, CPU is not. */
  const enableCpu = (dir: string): boolean => {
    if (!offered) return false;
    try {
      if (!/\bcpu\b/.test(readFileSync(join(dir, 'cgroup.subtree_control'), 'utf8'))) writeFileSync(join(dir, 'cgroup.subtree_control'), '+cpu');
      return true;
    } catch {
      return false; // e.g. a realtime process in the subtree: the kernel refuses +cpu
    }
  };
  try {
    const enabled = () => readFileSync(join(self, 'cgroup.subtree_control'), 'utf8');
    if (!/\bmemory\b/.test(enabled()) || !/\bpids\b/.test(enabled()) || (offered && !/\bcpu\b/.test(enabled()))) {
      // "No internal processes": controllers can be enabled for children only once
      // our own cgroup holds no process, so move its processes into a leaf first.
      const leaf = join(self, `lspd-daemon-${process.pid}`);
      mkdirSync(leaf, { recursive: true });
      for (let i = 0; i < 10; i++) {
        const left = readPids(join(self, 'cgroup.procs'));
        if (left.length === 0) break;
        for (const pid of left) write(join(leaf, 'cgroup.procs'), String(pid));
      }
      write(join(self, 'cgroup.subtree_control'), '+memory +pids');
    }
    sweepStale(self, 'lspd-');
    const base = join(self, `lspd-${process.pid}`);
    mkdirSync(base, { recursive: true });
    write(join(base, 'cgroup.subtree_control'), '+memory +pids');
    const cpu = enableCpu(self) && enableCpu(base);
    const orgs = new OrgDirs(base, (dir) => write(join(dir, 'cgroup.subtree_control'), cpu ? '+memory +pids +cpu' : '+memory +pids'));
    return {
      version: 'v2',
      cpuCapped: cpu,
      create(name, limits, placement) {
        const dir = join(orgs.enter(placement.org), name);
        let removed = false;
        const remove = () => {
          if (removed) return true;
          removed = tryRmdir(dir);
          if (removed) orgs.leave(placement.org);
          return removed;
        };
        const capped = cpu && limits.cpuMillis > 0;
        const bw = cpuBandwidth(limits.cpuMillis, limits.cpuBurstMillis);
        const capCpu = () => {
          write(join(dir, 'cpu.max'), `${bw.quotaUs} ${bw.periodUs}`);
          if (bw.burstUs > 0 && existsSync(join(dir, 'cpu.max.burst'))) write(join(dir, 'cpu.max.burst'), String(bw.burstUs));
        };
        let background = cpu && placement.background === true;
        try {
          mkdirSync(dir);
          if (capped && !placement.uncapped) capCpu();
          if (background) write(join(dir, 'cpu.weight'), BACKGROUND_WEIGHT_V2);
          write(join(dir, 'memory.max'), String(limits.memoryBytes));
          if (existsSync(join(dir, 'memory.swap.max'))) write(join(dir, 'memory.swap.max'), '0');
          write(join(dir, 'pids.max'), String(limits.pids));
        } catch (err) {
          remove();
          throw err;
        }
        const procs = join(dir, 'cgroup.procs');
        return {
          attach: (pid) => write(procs, String(pid)),
          pids: () => readPids(procs),
          killAll() {
            // cgroup.kill (Linux 5.14) kills atomically, forks in flight included.
            if (existsSync(join(dir, 'cgroup.kill'))) write(join(dir, 'cgroup.kill'), '1');
            else killPids(readPids(procs));
          },
          remove,
          memoryBytes: () => readNumber(join(dir, 'memory.current')),
          capCpu: () => void (capped && !removed && capCpu()),
          foreground() {
            if (!background || removed) return;
            background = false;
            tryWrite(join(dir, 'cpu.weight'), DEFAULT_WEIGHT_V2);
          },
        };
      },
      close: () => void tryRmdir(base),
    };
  } catch (err) {
    return `cgroup v2 is not usable: ${(err as Error).message}`;
  }
}

function openV1(cgroupRoot: string): Cgroups | string {
  const self = selfCgroups();
  const all = mounts();
  const dirs: Record<'memory' | 'pids', string> = { memory: '', pids: '' };
  const dirOfCtrl = (ctrl: string): string | undefined => {
    const m = all.find((x) => x.fstype === 'cgroup' && x.superOpts.includes(ctrl) && x.point.startsWith(cgroupRoot));
    const path = self.get(ctrl);
    if (!m || path === undefined) return undefined;
    const parent = dirOf(m, path);
    sweepStale(parent, 'lspd-');
    return join(parent, `lspd-${process.pid}`);
  };
  for (const ctrl of ['memory', 'pids'] as const) {
    const d = dirOfCtrl(ctrl);
    if (d === undefined) return `no cgroup v1 ${ctrl} hierarchy under the cgroup root`;
    dirs[ctrl] = d;
  }
  try {
    for (const d of Object.values(dirs)) mkdirSync(d, { recursive: true });
  } catch (err) {
    return `cgroup v1 is not writable: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`;
  }
  // CPU where the host mounts a writable cpu hierarchy; else the jails run uncapped.
  let cpuDir = dirOfCtrl('cpu');
  try {
    if (cpuDir !== undefined) mkdirSync(cpuDir, { recursive: true });
  } catch {
    cpuDir = undefined;
  }
  const orgs = cpuDir !== undefined ? new OrgDirs(cpuDir) : undefined;
  return {
    version: 'v1',
    cpuCapped: cpuDir !== undefined,
    create(name, limits, placement) {
      const mem = join(dirs.memory, name);
      const pids = join(dirs.pids, name);
      // Only the cpu hierarchy has an org level: memory and pids are capped per jail.
      const cpu = orgs ? join(orgs.enter(placement.org), name) : undefined;
      const capped = cpu !== undefined && limits.cpuMillis > 0;
      let removed = false;
      const remove = () => {
        if (removed) return true;
        removed = tryRmdir(pids) && tryRmdir(mem) && (cpu === undefined || tryRmdir(cpu));
        if (removed && cpu !== undefined) orgs!.leave(placement.org);
        return removed;
      };
      let background = cpu !== undefined && placement.background === true;
      const bw = cpuBandwidth(limits.cpuMillis, limits.cpuBurstMillis);
      const capCpu = (dir: string) => {
        write(join(dir, 'cpu.cfs_period_us'), String(bw.periodUs));
        write(join(dir, 'cpu.cfs_quota_us'), String(bw.quotaUs));
        if (bw.burstUs > 0 && existsSync(join(dir, 'cpu.cfs_burst_us'))) write(join(dir, 'cpu.cfs_burst_us'), String(bw.burstUs));
      };
      try {
        mkdirSync(mem);
        mkdirSync(pids);
        if (cpu !== undefined) {
          mkdirSync(cpu);
          if (capped && !placement.uncapped) capCpu(cpu);
          if (background) write(join(cpu, 'cpu.shares'), BACKGROUND_SHARES_V1);
        }
        write(join(mem, 'memory.limit_in_bytes'), String(limits.memoryBytes));
        // memsw (memory+swap) must not be below the memory limit, so it is written after it.
        if (existsSync(join(mem, 'memory.memsw.limit_in_bytes'))) write(join(mem, 'memory.memsw.limit_in_bytes'), String(limits.memoryBytes));
        write(join(pids, 'pids.max'), String(limits.pids));
      } catch (err) {
        remove();
        throw err;
      }
      return {
        attach(pid) {
          write(join(mem, 'cgroup.procs'), String(pid));
          write(join(pids, 'cgroup.procs'), String(pid));
          if (cpu !== undefined) write(join(cpu, 'cgroup.procs'), String(pid));
        },
        pids: () => readPids(join(pids, 'cgroup.procs')),
        memoryBytes: () => readNumber(join(mem, 'memory.usage_in_bytes')),
        // v1 has no cgroup.kill; the jail's PID namespace makes this a backstop (its
        // init dying takes every process in it), so a fork racing the sweep is moot.
        killAll: () => killPids(readPids(join(pids, 'cgroup.procs'))),
        remove,
        capCpu: () => void (capped && !removed && capCpu(cpu)),
        foreground() {
          if (!background || removed) return;
          background = false;
          tryWrite(join(cpu!, 'cpu.shares'), DEFAULT_SHARES_V1);
        },
      };
    },
    close() {
      for (const d of [...Object.values(dirs), ...(cpuDir !== undefined ? [cpuDir] : [])]) tryRmdir(d);
    },
  };
}

/** v2 where the host delegates memory and pids, else v1; throws CgroupError saying what is missing. */
export function openCgroups(cgroupRoot: string): Cgroups {
  const v2 = existsSync(join(cgroupRoot, 'cgroup.controllers')) ? openV2(cgroupRoot) : 'cgroup root is not a cgroup v2 mount';
  if (typeof v2 !== 'string') return v2;
  const v1 = openV1(cgroupRoot);
  if (typeof v1 !== 'string') return v1;
  throw new CgroupError(`no usable cgroups for memory and pids caps (${v2}; ${v1})`);
}
