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
// paired; B's CPU is then the bare server's, A's the daemon's.
//   node --import tsx bench/ab.ts (--other DIR | --raw) [--clients C] [--roots R] [--rounds N] [--seconds S] [--cached]
import { loadavg } from 'node:os';
import { resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { CHAOS_ENV, tsRoots, uidRange } from '../test/chaos/daemons.js';
import { Figures } from '../test/chaos/harness.js';
import { spawnServing } from '../test/helpers/daemon.js';
import { cpuMsOf } from './process-cpu.js';
import { RawTs } from './raw-ts.js';
import { tsQueryLoad } from './ts-load.js';

const args = process.argv.slice(2);
const flag = (name: string, def: number) => {
  const i = args.indexOf(name);
  return i >= 0 && args[i + 1] !== undefined ? Number(args[i + 1]) : def;
};
const otherAt = args.indexOf('--other');
const RAW = args.includes('--raw');
if (RAW === otherAt >= 0 || (otherAt >= 0 && !args[otherAt + 1])) {
  console.error('usage: node --import tsx bench/ab.ts (--other DIR | --raw) [--clients C] [--roots R] [--rounds N] [--seconds S] [--cached]');
  process.exit(2);
}
const OTHER = RAW ? undefined : resolve(args[otherAt + 1]!);
const CLIENTS = flag('--clients', 8);
const ROOTS = flag('--roots', 1);
const ROUNDS = flag('--rounds', 8);
const SECONDS = flag('--seconds', 4);
/** The result cache on (every repeat a hit), else off (every query reaches TS 7), as bench/load's rows. */
const CACHED = args.includes('--cached');
const env = { ...CHAOS_ENV, LOG_LEVEL: 'info', ...(CACHED ? { LSPD_RESULT_CACHE_ENTRIES: '10000' } : {}) };

interface Side {
  name: string;
  /** One phase: answers/s and CPU µs per answer (the daemon's; the bare server's for raw). */
  run(seconds: number): Promise<{ perSecond: number; cpuUs: number }>;
  stop(): Promise<void>;
  perSecond: number[];
  cpuUs: number[];
}

async function lspdSide(slot: number, name: string, project: string | undefined): Promise<Side> {
  const d = await spawnServing({ uids: uidRange(slot), env, ...(project ? { project } : {}) });
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
    async run(seconds) {
      const f = new Figures();
      const cpu0 = cpuMsOf(d.daemon.child.pid!);
      const t0 = performance.now();
      const load = tsQueryLoad(d.url, roots, CLIENTS, seconds, f);
      await sleep(seconds * 1000);
      await load.stop();
      const elapsed = (performance.now() - t0) / 1000;
      const cpu = cpuMsOf(d.daemon.child.pid!) - cpu0;
      if (f.wrong > 0) throw new Error(`${name}: wrong answers: ${f.wrongWhy.join('; ')}`);
      return { perSecond: f.answered / elapsed, cpuUs: (cpu * 1000) / Math.max(1, f.answered) };
    },
  };
}

async function rawSide(): Promise<Side> {
  const raw = await RawTs.start();
  return {
    name: 'B (raw TS 7 over a pipe)',
    perSecond: [],
    cpuUs: [],
    stop: async () => raw.stop(),
    async run(seconds) {
      const cpu0 = cpuMsOf(raw.child.pid!);
      const p = await raw.phase(CLIENTS, seconds);
      const cpu = cpuMsOf(raw.child.pid!) - cpu0;
      if (p.failed > 0) throw new Error(`raw TS 7: ${p.failed} requests failed`);
      return { perSecond: p.lat.length / p.elapsed, cpuUs: (cpu * 1000) / Math.max(1, p.lat.length) };
    },
  };
}

const median = (xs: readonly number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};
const range = (xs: readonly number[]) => `${Math.min(...xs).toFixed(2)}–${Math.max(...xs).toFixed(2)}`;

const sides: Side[] = [];
try {
  sides.push(await lspdSide(0, 'A (this checkout)', undefined));
  sides.push(OTHER ? await lspdSide(1, `B (${OTHER})`, OTHER) : await rawSide());
  // Warm-up, not reported: a fresh server's first seconds are slower than its steady state.
  for (const s of sides) await s.run(Math.max(5, SECONDS));
  const [a, b] = sides as [Side, Side];
  console.log(`bench/ab: ${CLIENTS} clients, ${ROOTS} root(s) of ts-basic, ${CACHED ? 'cached' : 'uncached'}, ${ROUNDS} rounds of ${SECONDS} s a side`);
  console.log(`${a.name}; ${b.name}`);
  console.log('round   A answers/s   B answers/s   B÷A    A µs/answer   B µs/answer   load');
  for (let r = 0; r < ROUNDS; r++) {
    // Alternate who goes first, so a drift within a round is not always charged to the same side.
    for (const s of r % 2 === 0 ? sides : [...sides].reverse()) {
      const p = await s.run(SECONDS);
      s.perSecond.push(p.perSecond);
      s.cpuUs.push(p.cpuUs);
    }
    console.log(
      `${String(r + 1).padStart(5)}   ${a.perSecond[r]!.toFixed(0).padStart(11)}   ${b.perSecond[r]!.toFixed(0).padStart(11)}   ${(b.perSecond[r]! / a.perSecond[r]!).toFixed(2).padStart(4)}   ${a.cpuUs[r]!.toFixed(0).padStart(11)}   ${b.cpuUs[r]!.toFixed(0).padStart(11)}   ${loadavg()[0]!.toFixed(1)}`,
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
} finally {
  for (const s of sides) await s.stop();
}
