// Question: under a steady query load against warm roots, what throughput and
// latency does lspd give at 1, 8 and 64 concurrent clients, beside the raw
// language server, and does the daemon's memory level off over a long soak?
//   node --import tsx bench/load.ts [--soak-seconds N] [--phase-seconds N] [--roots N] [--quick] [--project DIR]
// Defaults: 20 s per phase, a 300 s soak; --quick is 5 s phases and a 30 s soak.
// Load: four roots of test/fixtures/ts-basic (--roots), each client looping over
// definition, hover, references and documentSymbols (bench/ts-load.ts: a lean
// keep-alive client, one connection per client).
// Rows: "lspd uncached" (LSPD_RESULT_CACHE_ENTRIES=0: every query reaches TS 7 in
// its SERVE jail), "lspd cached" (the default cache: roots are immutable, so
// repeats are hits), "lspd GET /livez" (the HTTP floor: node's server and fastify
// with nothing behind them), and "raw TS 7" (the same requests straight to a bare
// `tsc --lsp --stdio` over a pipe, no jail, no HTTP: the floor lspd adds to), each
// raw phase run right after lspd's uncached one at its client count; the last line
// gives lspd ÷ raw. For a change or a goal, bench/ab pairs phases seconds apart.
// `--project DIR` runs the daemon of another checkout (a git worktree of a commit to
// compare, as bench/ab's `--other`), while the client, the raw row and this bench stay
// this checkout's: a before and an after differ in the daemon alone.
// Beside each row: CPU µs per answer of the daemon, the servers and the client, and
// the host's idle share (the daemon is one event loop: a row that is not CPU-bound
// on both cores may be bound by that one thread, or by latency).
import { readFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { CHAOS_ENV, tsCall, tsRoots, uidRange, type Root } from '../test/chaos/daemons.js';
import { Figures, percentile, sleep } from '../test/chaos/harness.js';
import { TS_OPS as OPS, questionLoad, tsQueryLoad, type Question } from './ts-load.js';
import { get } from './lean-http.js';
import { MiB, jailProcs, jailRssBytes, rssBytes } from '../test/chaos/procs.js';
import { cpuMsOf } from './process-cpu.js';
import { RawTs } from './raw-ts.js';
import { projectArg, spawnServing, type Serving } from '../test/helpers/daemon.js';

const args = process.argv.slice(2);
const flag = (name: string, def: number) => {
  const i = args.indexOf(name);
  return i >= 0 && args[i + 1] !== undefined ? Number(args[i + 1]) : def;
};
const quick = args.includes('--quick');
const phaseSeconds = flag('--phase-seconds', quick ? 5 : 20);
const soakSeconds = flag('--soak-seconds', quick ? 30 : 300);
const CLIENTS = [1, 8, 64];
/** `--roots 1` asks one server, as the raw row does; four spread the load over four TS 7 processes. */
const ROOTS = flag('--roots', 4);
const PROJECT = projectArg(args);

interface Row {
  mode: string;
  clients: number;
  seconds: number;
  requests: number;
  perSecond: number;
  p50: number;
  p95: number;
  p99: number;
  refused: number;
  lost: number;
  rss: string;
  /** 1-minute load average at the phase's end: the host is shared, figures move with it. */
  load: string;
  /** CPU µs per answer of the daemon, of its jails' processes (the servers) and of this bench (the client). */
  cpu: { daemon: number | undefined; servers: number; client: number };
  /** Share of the host's CPU time left idle over the phase: a phase with idle cores is bound by latency, not by CPU. */
  idle: number;
}

/** Idle and total jiffies of the whole host so far (/proc/stat's first line; iowait counts as idle). */
function hostTicks(): { idle: number; total: number } {
  const f = readFileSync('/proc/stat', 'latin1');
  const n = f.slice(0, f.indexOf('\n')).trim().split(/\s+/).slice(1).map(Number);
  return { idle: n[3]! + n[4]!, total: n.reduce((a, b) => a + b, 0) };
}
const idleShare = (a: ReturnType<typeof hostTicks>, b: ReturnType<typeof hostTicks>) => (b.idle - a.idle) / Math.max(1, b.total - a.total);

const mib = (n: number) => Math.round(n / MiB);

/** Least-squares slope of one-per-second samples, in MiB per minute. */
function slopeMiBPerMin(ys: number[]): number {
  const n = ys.length;
  if (n < 2) return 0;
  const mx = (n - 1) / 2;
  const my = ys.reduce((a, b) => a + b, 0) / n;
  let num = 0;
  let den = 0;
  ys.forEach((y, x) => {
    num += (x - mx) * (y - my);
    den += (x - mx) ** 2;
  });
  return ((num / den) * 60) / MiB;
}

async function lspdPhase(
  d: Serving,
  mode: string,
  clients: number,
  seconds: number,
  /** The roots asked bench/ts-load's questions, or other questions to ask. */
  asked: Awaited<ReturnType<typeof tsRoots>> | Question[],
  onSecond?: (s: number) => void,
): Promise<Row> {
  const f = new Figures();
  const rss0 = rssBytes(d.daemon.child.pid!);
  const cpu0 = lspdCpu(d);
  const host0 = hostTicks();
  const t0 = performance.now();
  const load = 'raw' in asked[0]! ? questionLoad(d.url, asked as Question[], clients, seconds, f) : tsQueryLoad(d.url, asked as Root[], clients, seconds, f);
  for (let s = 1; s <= seconds; s++) {
    await sleep(1000);
    onSecond?.(s);
  }
  await load.stop();
  const elapsed = (performance.now() - t0) / 1000;
  const cpu1 = lspdCpu(d);
  const host1 = hostTicks();
  if (f.wrong > 0) throw new Error(`${mode}: wrong answers: ${f.wrongWhy.join('; ')}`);
  const lat = load.latencies;
  return {
    mode,
    clients,
    seconds: Math.round(elapsed),
    requests: f.sent,
    perSecond: Math.round(f.answered / elapsed),
    p50: percentile(lat, 50),
    p95: percentile(lat, 95),
    p99: percentile(lat, 99),
    refused: f.refused,
    lost: f.lost,
    rss: `${mib(rss0)}→${mib(rssBytes(d.daemon.child.pid!))}`,
    load: loadavg()[0]!.toFixed(1),
    cpu: perAnswer(cpu0, cpu1, f.answered),
    idle: idleShare(host0, host1),
  };
}

interface CpuMs {
  daemon: number | undefined;
  servers: number;
  client: number;
}

/** CPU ms so far: the daemon, every process of its jails' uid range, this process. */
function lspdCpu(d: Serving): CpuMs {
  const servers = jailProcs(d.uids).reduce((a, p) => a + cpuMsOf(p.pid), 0);
  return { daemon: cpuMsOf(d.daemon.child.pid!), servers, client: clientMs() };
}

function clientMs(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
}

function perAnswer(a: CpuMs, b: CpuMs, answers: number): Row['cpu'] {
  const us = (x: number, y: number) => Math.round(((y - x) * 1000) / Math.max(1, answers));
  return { daemon: a.daemon === undefined ? undefined : us(a.daemon, b.daemon!), servers: us(a.servers, b.servers), client: us(a.client, b.client) };
}

/** The same four questions straight to a bare TS 7 server over stdio, `clients` requests in flight. */
async function rawPhase(raw: RawTs, clients: number, seconds: number): Promise<Row> {
  const cpu0: CpuMs = { daemon: undefined, servers: cpuMsOf(raw.child.pid!), client: clientMs() };
  const host0 = hostTicks();
  const p = await raw.phase(clients, seconds);
  const cpu1: CpuMs = { daemon: undefined, servers: cpuMsOf(raw.child.pid!), client: clientMs() };
  const host1 = hostTicks();
  return {
    mode: 'raw TS 7 (stdio)',
    clients,
    seconds: Math.round(p.elapsed),
    requests: p.sent,
    perSecond: Math.round(p.lat.length / p.elapsed),
    p50: percentile(p.lat, 50),
    p95: percentile(p.lat, 95),
    p99: percentile(p.lat, 99),
    refused: p.failed,
    lost: 0,
    rss: '-',
    load: loadavg()[0]!.toFixed(1),
    cpu: perAnswer(cpu0, cpu1, p.lat.length),
    idle: idleShare(host0, host1),
  };
}

async function withDaemon<T>(slot: number, env: Record<string, string>, fn: (d: Serving) => Promise<T>): Promise<T> {
  const d = await spawnServing({ uids: uidRange(slot), env: { ...CHAOS_ENV, LOG_LEVEL: 'info', ...env }, ...PROJECT });
  try {
    if (d.notReady) throw new Error(`the daemon is not ready here: ${d.notReady}`);
    return await fn(d);
  } finally {
    await d.daemon.stop();
    d.daemon.cleanup();
  }
}

const rows: Row[] = [];
let soakLine = '';
await withDaemon(0, {}, async (d) => {
  const roots = await tsRoots(d.url, ROOTS, 'bench');
  for (const r of roots)
    for (let q = 0; q < OPS; q++)
      await fetch(d.url + '/v1/code/lsp', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(tsCall(r, q).json) }).then(
        (x) => x.arrayBuffer(),
      );
  // Warm-up, not reported: the daemon's first seconds (V8 compiling the hot path) and each server's first answers.
  await lspdPhase(d, 'warm-up', 8, Math.min(10, phaseSeconds), roots);
  // Each raw phase right after lspd's at the same client count: the host's speed drifts
  // by ±20% from one minute to the next, and the ratio is only as good as its pair. The
  // raw server lives as lspd's do, warmed as long and kept up: TS 7 slows as it ages
  // (a fresh one answered 8.7k/s in its first 5 s, 5.4-7.9k/s from 20 s on, its RSS
  // growing 1.3 KB an answer), so a fresh server per phase was its fastest self.
  const raw = await RawTs.start();
  try {
    await raw.phase(8, Math.min(10, phaseSeconds));
    for (const c of CLIENTS) {
      rows.push(await lspdPhase(d, 'lspd uncached', c, phaseSeconds, roots));
      rows.push(await rawPhase(raw, c, phaseSeconds));
    }
  } finally {
    raw.stop();
  }
  // The soak: 8 clients, RSS of the daemon (and of its jails) every second.
  const daemonRss: number[] = [];
  const jailRss: number[] = [];
  const soak = await lspdPhase(d, 'soak, lspd uncached', 8, soakSeconds, roots, () => {
    daemonRss.push(rssBytes(d.daemon.child.pid!));
    jailRss.push(jailRssBytes(d.uids));
  });
  rows.push(soak);
  const at = (xs: number[], p: number) => mib(xs[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))]!);
  // V8's RSS is a sawtooth (it grows until a collection, then drops): compare the peaks
  // of the two halves rather than means, and give the least-squares slope beside them.
  const h = Math.floor(daemonRss.length / 2);
  const peak1 = Math.max(...daemonRss.slice(0, h));
  const peak2 = Math.max(...daemonRss.slice(h));
  // Fewer than ten samples (a --soak-seconds 1 to skip the soak) say nothing either way.
  const verdict = daemonRss.length < 10 ? 'too short to tell' : peak2 - peak1 < Math.max(16 * MiB, 0.05 * peak1) ? 'levels off' : 'STILL GROWING';
  soakLine =
    `soak ${soakSeconds} s at 8 clients: daemon RSS MiB at 0/25/50/75/100 %: ${[0, 25, 50, 75, 100].map((p) => at(daemonRss, p)).join(' / ')}; ` +
    `peak first half ${mib(peak1)}, second half ${mib(peak2)}, slope ${slopeMiBPerMin(daemonRss).toFixed(1)} MiB/min → ${verdict}. ` +
    `Jails RSS MiB at 0/50/100 %: ${[0, 50, 100].map((p) => at(jailRss, p)).join(' / ')}`;
});
await withDaemon(1, { LSPD_RESULT_CACHE_ENTRIES: '10000' }, async (d) => {
  const roots = await tsRoots(d.url, ROOTS, 'bench-cached');
  await lspdPhase(d, 'warm-up', 8, Math.min(10, phaseSeconds), roots);
  for (const c of CLIENTS) rows.push(await lspdPhase(d, 'lspd cached', c, phaseSeconds, roots));
  // The floor under every row: the same daemon's cheapest route, node's HTTP server and fastify alone.
  const livez: Question = { path: '/livez', raw: get(d.url, '/livez'), check: (b) => b.live === true };
  rows.push(await lspdPhase(d, 'lspd GET /livez', 64, phaseSeconds, [livez]));
});

/** Milliseconds as printed: two decimals (both clients time requests fractionally). */
const ms = (x: number) => x.toFixed(2);
const head = [
  'mode',
  'clients',
  's',
  'requests',
  'req/s',
  'p50 ms',
  'p95 ms',
  'p99 ms',
  'refused',
  'lost',
  'daemon RSS MiB',
  'CPU µs/answer d+s+c',
  'idle',
  'load',
];
const cpuCell = ({ daemon, servers, client }: Row['cpu']) => `${daemon ?? '-'}+${servers}+${client}`;
const table = [
  head,
  ...rows.map((r) =>
    [
      r.mode,
      r.clients,
      r.seconds,
      r.requests,
      r.perSecond,
      ms(r.p50),
      ms(r.p95),
      ms(r.p99),
      r.refused,
      r.lost,
      r.rss,
      cpuCell(r.cpu),
      `${Math.round(r.idle * 100)}%`,
      r.load,
    ].map(String),
  ),
];
const widths = head.map((_, i) => Math.max(...table.map((row) => row[i]!.length)));
console.log(
  `lspd load bench: ${cpus().length} cores, node ${process.version}, TypeScript 7 (native), ${ROOTS} warm root${ROOTS === 1 ? '' : 's'} of ts-basic, ops definition/hover/references/documentSymbols${PROJECT.project ? `, the daemon of ${PROJECT.project}` : ''}`,
);
for (const row of table) console.log(row.map((c, i) => (i <= 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  '));
console.log(
  "CPU µs/answer d+s+c: the daemon (all its threads), the servers (every process in its jails; for raw, the bare server) and this bench (the client; for raw, its stdio client), per answer over the phase. idle: the host's CPU left idle over the phase (bound by latency, not CPU, when high)",
);
console.log(soakLine);
const rate = (mode: string, c: number) => rows.find((r) => r.mode === mode && r.clients === c)?.perSecond ?? NaN;
const ratios = (mode: string) => CLIENTS.map((c) => `${(rate(mode, c) / rate('raw TS 7 (stdio)', c)).toFixed(2)}`).join(' / ');
console.log(
  `÷ raw at ${CLIENTS.join(' / ')} clients: uncached ${ratios('lspd uncached')} (each raw phase right after lspd's); cached ${ratios('lspd cached')} (raw from minutes before)`,
);
