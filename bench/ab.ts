// bench/ab: this checkout of lspd beside another (`--other DIR`: a git worktree of the
// commit to compare, with its node_modules and its jail built), asked the same load
// in short phases that alternate A B, B A, ... On this VM the same build's throughput
// drifts by ±20% from one minute to the next (bench/load's /livez row moved from
// 17.7k to 28.5k/s within an hour), far more than one change moves it; two phases
// seconds apart see the same host, so the ratio of each pair says what one long run
// of each cannot. Printed per round: answers/s and CPU µs per answer of both; then
// the medians and the median of the paired ratios (B ÷ A) with their range.
// Both daemons stay up throughout, each with its own roots of ts-basic, warmed first;
// the one not asked is idle. `--raw` in place of `--other`: B is the raw TS 7 server
// (bench/raw-ts.ts, bench/load's raw row), so A ÷ B is issue 28's "lspd ÷ raw",
// paired; B's CPU is then the bare server's, A's the daemon's. `--raw-servers N`: B is
// N bare servers asked in turn, as lspd's load asks its roots (one server per root,
// `--roots`): like for like, where the issue's raw row is one server.
// `--b-env K=V,...`: B is this checkout too, started with those settings added (a
// knob paired against its default). Each lspd side also shows its servers' CPU per
// answer (its jails' processes), which is what a knob of the jail moves. `--busy-core`:
// a process beside both sides that keeps one core busy as the daemon does (250 µs of
// work, a short sleep, again): what the bare servers pay per answer when they do not
// have the cores to themselves.
//   node --import tsx bench/ab.ts (--other DIR | --raw [--raw-servers N] | --b-env K=V,...) [--clients C] [--roots R] [--rounds N] [--seconds S] [--cached] [--busy-core]
import { spawn } from 'node:child_process';
import { loadavg } from 'node:os';
import { resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { CHAOS_ENV, tsRoots, uidRange } from '../test/chaos/daemons.js';
import { Figures } from '../test/chaos/harness.js';
import { jailProcs } from '../test/chaos/procs.js';
import { spawnServing } from '../test/helpers/daemon.js';
import { cpuMsOf } from './process-cpu.js';
import { RawTs } from './raw-ts.js';
import { tsQueryLoad } from './ts-load.js';

const args = process.argv.slice(2);
const flag = (name: string, def: number) => {
  const i = args.indexOf(name);
  return i >= 0 && args[i + 1] !== undefined ? Number(args[i + 1]) : def;
};
const valueOf = (name: string) => (args.includes(name) ? (args[args.indexOf(name) + 1] ?? '') : undefined);
const RAW = args.includes('--raw');
const OTHER = valueOf('--other');
const B_ENV = valueOf('--b-env');
if ([RAW, OTHER !== undefined, B_ENV !== undefined].filter(Boolean).length !== 1 || OTHER === '' || B_ENV === '' || (B_ENV && !/^\w+=/.test(B_ENV))) {
  console.error(
    'usage: node --import tsx bench/ab.ts (--other DIR | --raw [--raw-servers N] | --b-env K=V,...) [--clients C] [--roots R] [--rounds N] [--seconds S] [--cached] [--busy-core]',
  );
  process.exit(2);
}
const bEnv = Object.fromEntries(
  (B_ENV ?? '')
    .split(',')
    .filter(Boolean)
    .map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]),
);
const CLIENTS = flag('--clients', 8);
const ROOTS = flag('--roots', 1);
const ROUNDS = flag('--rounds', 8);
/** `--raw-servers N`: B is N bare servers, as lspd runs one per root (`--roots`); the issue's raw row is one. */
const RAW_SERVERS = flag('--raw-servers', 1);
const SECONDS = flag('--seconds', 4);
/** The result cache on (every repeat a hit), else off (every query reaches TS 7), as bench/load's rows. */
const CACHED = args.includes('--cached');
const env = { ...CHAOS_ENV, LOG_LEVEL: 'info', ...(CACHED ? { LSPD_RESULT_CACHE_ENTRIES: '10000' } : {}) };

interface Side {
  name: string;
  /** One phase: answers/s and CPU µs per answer (the daemon's; the bare server's for raw). */
  run(seconds: number): Promise<{ perSecond: number; cpuUs: number; serversUs: number }>;
  stop(): Promise<void>;
  perSecond: number[];
  cpuUs: number[];
  /** Its servers' CPU µs per answer (the jails' processes); the raw side's server is its cpuUs. */
  serversUs: number[];
}

async function lspdSide(slot: number, name: string, project: string | undefined, extraEnv: Record<string, string> = {}): Promise<Side> {
  const uids = uidRange(slot);
  const d = await spawnServing({ uids, env: { ...env, ...extraEnv }, ...(project ? { project } : {}) });
  const stop = async () => {
    await d.daemon.stop();
    d.daemon.cleanup();
  };
  if (d.notReady) {
    await stop();
    throw new Error(`${name} is not ready here: ${d.notReady}`);
  }
  const roots = await tsRoots(d.url, ROOTS, `ab-${slot}`);
  return {
    name,
    stop,
    perSecond: [],
    cpuUs: [],
    serversUs: [],
    async run(seconds) {
      const f = new Figures();
      const servers = () => jailProcs(uids).reduce((n, p) => n + cpuMsOf(p.pid), 0);
      const servers0 = servers();
      const cpu0 = cpuMsOf(d.daemon.child.pid!);
      const t0 = performance.now();
      const load = tsQueryLoad(d.url, roots, CLIENTS, seconds, f);
      await sleep(seconds * 1000);
      await load.stop();
      const elapsed = (performance.now() - t0) / 1000;
      const cpu = cpuMsOf(d.daemon.child.pid!) - cpu0;
      const serversMs = servers() - servers0;
      if (f.wrong > 0) throw new Error(`${name}: wrong answers: ${f.wrongWhy.join('; ')}`);
      const n = Math.max(1, f.answered);
      return { perSecond: f.answered / elapsed, cpuUs: (cpu * 1000) / n, serversUs: (serversMs * 1000) / n };
    },
  };
}

async function rawSide(): Promise<Side> {
  const raws = await Promise.all(Array.from({ length: RAW_SERVERS }, () => RawTs.start()));
  const cpuMs = () => raws.reduce((n, r) => n + cpuMsOf(r.child.pid!), 0);
  return {
    name: `B (raw TS 7 over a pipe${RAW_SERVERS > 1 ? `, ${RAW_SERVERS} servers, asked in turn` : ''})`,
    perSecond: [],
    cpuUs: [],
    serversUs: [],
    stop: async () => raws.forEach((r) => r.stop()),
    async run(seconds) {
      const cpu0 = cpuMs();
      const p = await RawTs.phaseOver(raws, CLIENTS, seconds);
      const cpu = cpuMs() - cpu0;
      if (p.failed > 0) throw new Error(`raw TS 7: ${p.failed} requests failed`);
      const us = (cpu * 1000) / Math.max(1, p.lat.length);
      return { perSecond: p.lat.length / p.elapsed, cpuUs: us, serversUs: us };
    },
  };
}

const median = (xs: readonly number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};
const range = (xs: readonly number[]) => `${Math.min(...xs).toFixed(2)}–${Math.max(...xs).toFixed(2)}`;

/** `--busy-core`'s load: a core kept busy in bursts, as a daemon under load keeps it. */
const BUSY = `const s = new Int32Array(new SharedArrayBuffer(4));
for (;;) { const t = process.hrtime.bigint(); while (process.hrtime.bigint() - t < 250000n); Atomics.wait(s, 0, 0, 0.08); }`;
const busy = args.includes('--busy-core') ? spawn(process.execPath, ['-e', BUSY], { stdio: 'ignore' }) : undefined;

const sides: Side[] = [];
try {
  sides.push(await lspdSide(0, 'A (this checkout)', undefined));
  if (RAW) sides.push(await rawSide());
  else sides.push(await lspdSide(1, OTHER ? `B (${OTHER})` : `B (this checkout, ${B_ENV})`, OTHER && resolve(OTHER), bEnv));
  // Warm-up, not reported: a fresh server's first seconds are slower than its steady state.
  for (const s of sides) await s.run(Math.max(5, SECONDS));
  const [a, b] = sides as [Side, Side];
  console.log(`bench/ab: ${CLIENTS} clients, ${ROOTS} root(s) of ts-basic, ${CACHED ? 'cached' : 'uncached'}, ${ROUNDS} rounds of ${SECONDS} s a side`);
  console.log(`${a.name}; ${b.name}${busy ? '; a core kept busy beside both (--busy-core)' : ''}`);
  console.log('round   A answers/s   B answers/s   B÷A    A µs/answer   B µs/answer   A servers µs   B servers µs   load');
  for (let r = 0; r < ROUNDS; r++) {
    // Alternate who goes first, so a drift within a round is not always charged to the same side.
    for (const s of r % 2 === 0 ? sides : [...sides].reverse()) {
      const p = await s.run(SECONDS);
      s.perSecond.push(p.perSecond);
      s.cpuUs.push(p.cpuUs);
      s.serversUs.push(p.serversUs);
    }
    console.log(
      `${String(r + 1).padStart(5)}   ${a.perSecond[r]!.toFixed(0).padStart(11)}   ${b.perSecond[r]!.toFixed(0).padStart(11)}   ${(b.perSecond[r]! / a.perSecond[r]!).toFixed(2).padStart(4)}   ${a.cpuUs[r]!.toFixed(0).padStart(11)}   ${b.cpuUs[r]!.toFixed(0).padStart(11)}   ${a.serversUs[r]!.toFixed(0).padStart(12)}   ${b.serversUs[r]!.toFixed(0).padStart(12)}   ${loadavg()[0]!.toFixed(1)}`,
    );
  }
  const rate = a.perSecond.map((x, i) => b.perSecond[i]! / x);
  const cpu = a.cpuUs.map((x, i) => b.cpuUs[i]! / x);
  console.log(
    `median answers/s: A ${median(a.perSecond).toFixed(0)}, B ${median(b.perSecond).toFixed(0)}; paired B÷A median ${median(rate).toFixed(2)} (${range(rate)})`,
  );
  if (RAW) {
    const lspdOverRaw = rate.map((x) => 1 / x);
    console.log(`lspd ÷ raw answers/s, paired: median ${median(lspdOverRaw).toFixed(2)} (${range(lspdOverRaw)})`);
  }
  console.log(
    `median CPU µs/answer: A ${median(a.cpuUs).toFixed(0)}, B ${median(b.cpuUs).toFixed(0)}; paired B÷A median ${median(cpu).toFixed(2)} (${range(cpu)})`,
  );
  if (!RAW && median(a.serversUs) > 0) {
    const srv = a.serversUs.map((x, i) => b.serversUs[i]! / x);
    console.log(
      `median servers' CPU µs/answer: A ${median(a.serversUs).toFixed(0)}, B ${median(b.serversUs).toFixed(0)}; paired B÷A median ${median(srv).toFixed(2)} (${range(srv)})`,
    );
  }
} finally {
  busy?.kill('SIGKILL');
  for (const s of sides) await s.stop();
}
