// bench/ab: this checkout of lspd beside another (`--other DIR`: a git worktree of the
// commit to compare, with its node_modules and its jail built), asked the same load
// in short phases that alternate A B, B A, ... On this VM the same build's throughput
// drifts by ±20% from one minute to the next (bench/load's /livez row moved from
// 17.7k to 28.5k/s within an hour), far more than one change moves it; two phases
// seconds apart see the same host, so the ratio of each pair says what one long run
// of each cannot. Printed per round: answers/s and daemon CPU µs per answer of both;
// then the medians and the median of the paired ratios (B ÷ A) with their range.
// Both daemons stay up throughout, each with its own roots of ts-basic, warmed first;
// the one not asked is idle.
//   node --import tsx bench/ab.ts --other DIR [--clients C] [--roots R] [--rounds N] [--seconds S] [--cached]
import { loadavg } from 'node:os';
import { resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { CHAOS_ENV, tsRoots, uidRange } from '../test/chaos/daemons.js';
import { Figures } from '../test/chaos/harness.js';
import { spawnServing, type Serving } from '../test/helpers/daemon.js';
import { cpuMsOf } from './process-cpu.js';
import { tsQueryLoad } from './ts-load.js';

const args = process.argv.slice(2);
const flag = (name: string, def: number) => {
  const i = args.indexOf(name);
  return i >= 0 && args[i + 1] !== undefined ? Number(args[i + 1]) : def;
};
const otherAt = args.indexOf('--other');
if (otherAt < 0 || !args[otherAt + 1]) {
  console.error('usage: node --import tsx bench/ab.ts --other DIR [--clients C] [--roots R] [--rounds N] [--seconds S] [--cached]');
  process.exit(2);
}
const OTHER = resolve(args[otherAt + 1]!);
const CLIENTS = flag('--clients', 8);
const ROOTS = flag('--roots', 1);
const ROUNDS = flag('--rounds', 8);
const SECONDS = flag('--seconds', 4);
/** The result cache on (every repeat a hit), else off (every query reaches TS 7), as bench/load's rows. */
const CACHED = args.includes('--cached');

interface Side {
  name: string;
  d: Serving;
  roots: Awaited<ReturnType<typeof tsRoots>>;
  perSecond: number[];
  cpuUs: number[];
}

/** One phase on one side: answers/s and the daemon's CPU µs per answer. */
async function phase(s: Side, seconds: number): Promise<{ perSecond: number; cpuUs: number }> {
  const f = new Figures();
  const cpu0 = cpuMsOf(s.d.daemon.child.pid!);
  const t0 = performance.now();
  const load = tsQueryLoad(s.d.url, s.roots, CLIENTS, seconds, f);
  await sleep(seconds * 1000);
  await load.stop();
  const elapsed = (performance.now() - t0) / 1000;
  const cpu = cpuMsOf(s.d.daemon.child.pid!) - cpu0;
  if (f.wrong > 0) throw new Error(`${s.name}: wrong answers: ${f.wrongWhy.join('; ')}`);
  return { perSecond: f.answered / elapsed, cpuUs: (cpu * 1000) / Math.max(1, f.answered) };
}

const median = (xs: readonly number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};
const range = (xs: readonly number[]) => `${Math.min(...xs).toFixed(2)}–${Math.max(...xs).toFixed(2)}`;

const env = { ...CHAOS_ENV, LOG_LEVEL: 'info', ...(CACHED ? { LSPD_RESULT_CACHE_ENTRIES: '10000' } : {}) };
const sides: Side[] = [];
try {
  for (const [slot, name, project] of [
    [0, 'A (this checkout)', undefined],
    [1, `B (${OTHER})`, OTHER],
  ] as const) {
    const d = await spawnServing({ uids: uidRange(slot), env, ...(project ? { project } : {}) });
    if (d.notReady) throw new Error(`${name} is not ready here: ${d.notReady}`);
    sides.push({ name, d, roots: await tsRoots(d.url, ROOTS, `ab-${slot}`), perSecond: [], cpuUs: [] });
  }
  // Warm-up, not reported: a fresh server's first seconds are slower than its steady state.
  for (const s of sides) await phase(s, Math.max(5, SECONDS));
  console.log(`bench/ab: ${CLIENTS} clients, ${ROOTS} root(s) of ts-basic, ${CACHED ? 'cached' : 'uncached'}, ${ROUNDS} rounds of ${SECONDS} s a side`);
  console.log(`A = this checkout; B = ${OTHER}`);
  console.log('round   A answers/s   B answers/s   B÷A    A µs/answer   B µs/answer   load');
  for (let r = 0; r < ROUNDS; r++) {
    // Alternate who goes first, so a drift within a round is not always charged to the same side.
    for (const s of r % 2 === 0 ? sides : [...sides].reverse()) {
      const p = await phase(s, SECONDS);
      s.perSecond.push(p.perSecond);
      s.cpuUs.push(p.cpuUs);
    }
    const [a, b] = sides as [Side, Side];
    console.log(
      `${String(r + 1).padStart(5)}   ${a.perSecond[r]!.toFixed(0).padStart(11)}   ${b.perSecond[r]!.toFixed(0).padStart(11)}   ${(b.perSecond[r]! / a.perSecond[r]!).toFixed(2).padStart(4)}   ${a.cpuUs[r]!.toFixed(0).padStart(11)}   ${b.cpuUs[r]!.toFixed(0).padStart(11)}   ${loadavg()[0]!.toFixed(1)}`,
    );
  }
  const [a, b] = sides as [Side, Side];
  const rate = a.perSecond.map((x, i) => b.perSecond[i]! / x);
  const cpu = a.cpuUs.map((x, i) => b.cpuUs[i]! / x);
  console.log(
    `median answers/s: A ${median(a.perSecond).toFixed(0)}, B ${median(b.perSecond).toFixed(0)}; paired B÷A median ${median(rate).toFixed(2)} (${range(rate)})`,
  );
  console.log(
    `median daemon CPU µs/answer: A ${median(a.cpuUs).toFixed(0)}, B ${median(b.cpuUs).toFixed(0)}; paired B÷A median ${median(cpu).toFixed(2)} (${range(cpu)})`,
  );
} finally {
  for (const s of sides) {
    await s.d.daemon.stop();
    s.d.daemon.cleanup();
  }
}
