// What runs on the host, read from /proc: the processes of a jail uid range, the
// language servers among them (to SIGKILL their process group), orphans a dead
// daemon could have left (bwrap or lspd-gate anywhere), and a process's RSS.
// Tests only read /proc and signal pids they found in their own uid range.
import { readFileSync, readdirSync, statSync } from 'node:fs';
import type { UidRange } from '../helpers/uids.js';

export interface Proc {
  pid: number;
  ppid: number;
  pgid: number;
  uid: number;
  argv: string[];
  /** Scheduling policy (sched(7): 0 SCHED_OTHER, 3 SCHED_BATCH). */
  policy: number;
}

/** stat(5)'s fields from `state` on (index 0 is field 3): the `(comm)` before them may hold spaces and parentheses. */
export function statFields(stat: string): string[] {
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
}

/** The scheduling policy in a stat(5) line: its field 41. */
export const policyOf = (stat: string): number => Number(statFields(stat)[41 - 3]);

export function procOf(pid: number): Proc | undefined {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const rest = statFields(stat); // "state ppid pgrp ..."
    const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').slice(0, -1);
    return { pid, ppid: Number(rest[1]), pgid: Number(rest[2]), uid: Number(/^Uid:\s+(\d+)/m.exec(status)?.[1]), argv, policy: policyOf(stat) };
  } catch {
    return undefined; // gone while we looked
  }
}

export function allProcs(): Proc[] {
  const out: Proc[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const p = procOf(Number(name));
    if (p) out.push(p);
  }
  return out;
}

/** Every process whose real uid is in the range (every jail of one daemon). */
export function jailProcs(r: UidRange): Proc[] {
  return allProcs().filter((p) => p.uid >= r.base && p.uid < r.base + r.count);
}

const isJailMachinery = (p: Proc) => /(^|\/)(bwrap|lspd-gate)$/.test(p.argv[0] ?? '');

/**
 * Language-server processes of the range (not the gate, not bwrap) whose command
 * line matches; their process groups are what a SIGKILL of "the server's group" hits.
 */
export function serverProcs(r: UidRange, match: RegExp): Proc[] {
  return jailProcs(r).filter((p) => !isJailMachinery(p) && p.argv.length > 0 && match.test(p.argv.join(' ')));
}

/** SIGKILL the process group of each server process matched; returns the groups hit. */
export function killServerGroups(r: UidRange, match: RegExp, max = Infinity): number[] {
  const groups = [...new Set(serverProcs(r, match).map((p) => p.pgid))].slice(0, max);
  for (const g of groups) {
    try {
      process.kill(-g, 'SIGKILL');
    } catch {
      /* already gone */
    }
  }
  return groups;
}

/** bwrap or lspd-gate processes in the range: what a dead daemon must not leave. */
export function jailMachinery(r: UidRange): Proc[] {
  return jailProcs(r).filter(isJailMachinery);
}

/** Resident set of a process in bytes (0 when gone). */
export function rssBytes(pid: number): number {
  try {
    const kb = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
    return kb ? Number(kb) * 1024 : 0;
  } catch {
    return 0;
  }
}

/** Sum of the RSS of every process in the range (the jails' memory, for the bench). */
export function jailRssBytes(r: UidRange): number {
  return jailProcs(r).reduce((n, p) => n + rssBytes(p.pid), 0);
}

/** Sample a process's RSS every stepMs until stopped; bounded by maxSamples. */
export function sampleRss(pid: number, stepMs = 100, maxSamples = 100_000): { samples: number[]; stop(): number[] } {
  const samples: number[] = [];
  const timer = setInterval(() => {
    if (samples.length < maxSamples) samples.push(rssBytes(pid));
  }, stepMs);
  samples.push(rssBytes(pid));
  return {
    samples,
    stop() {
      clearInterval(timer);
      samples.push(rssBytes(pid));
      return samples;
    },
  };
}

export const MiB = 1024 * 1024;

/**
 * Processes of one jail uid alive at one instant: the pids seen in two walks of
 * /proc in a row (one walk alone counts a churning bomb's exits and births both).
 * By the owner of /proc/<pid> (the process's uid), one stat each: the fault suite
 * runs it beside its in-process daemon, where reading every process's status and
 * cmdline (allProcs: 22 ms a walk on this host) twice every 50 ms starved the daemon's
 * event loop and made a fork bomb's neighbour look slow (8-17 s to a first answer).
 */
export function populationOf(uid: number): number {
  const pids = () => {
    const out = new Set<string>();
    for (const name of readdirSync('/proc')) {
      if (!/^\d+$/.test(name)) continue;
      try {
        if (statSync(`/proc/${name}`).uid === uid) out.add(name);
      } catch {
        /* gone while we looked */
      }
    }
    return out;
  };
  const a = pids();
  const b = pids();
  return [...a].filter((p) => b.has(p)).length;
}
