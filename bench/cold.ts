// bench/cold: cold time to the first answer, per language, lspd beside the bare
// server, in one run. The question is each row's fixture definition (bench/cases).
//   lspd  a fresh root (uploaded, its fetch settled), then one POST /v1/code/lsp:
//         jail spawn, initialize, didOpen, readiness wait, the request, projection.
//         Its one answer is checked: right or not. Uploaded with ?warm=false.
//   warmed  a fresh root uploaded with warm-up on (the default), GET polled until
//         its sessions are ready, then the same one query: the first answer after
//         a warmed upload; and `warm p50`, that query asked 5 more times (the
//         result cache is off, so each goes to the server).
//   bare  the same server binary spawned directly, initialize, didOpen, then the
//         definition asked every 25 ms: the first answer, and the first right one
//         (servers that answer early answer empty or wrong; lspd waits instead).
// lspd runs as its own process (src/main.ts, as operators run it), asked over one
// kept-alive connection as bench/overhead asks (bench/keep-alive.ts: the queries, and
// the GET polls of a warmed upload); runs of the two are interleaved so machine load
// hits both alike, each cold start on a quiet host (settle below), which goes first
// alternating; medians of RUNS, after one round per row that is not counted.
// `lspd−bare right` is the median over runs of lspd's start less the bare start right
// after it, with its quartiles: a multi-second server's own start moves by more than
// the goal between runs, so read the spread beside it. BENCH_COLD_PAIRS=1 prints runs.
// Run: node --import tsx bench/cold.ts [runs] [row names...]
import { createHash } from 'node:crypto';
import { cpus, loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { spawnDaemon, type Daemon } from '../test/helpers/daemon.js';
import { cannotJail, fetchSettled, fixturesDir, uploadDir } from '../test/helpers/lsp-harness.js';
import { getJson, postLsp } from './keep-alive.js';
import { join } from 'node:path';
import { readFileSync } from 'node:fs';
import { bareFor, cases, isRight, rawLocations, type Case } from './cases.js';
import { jailUidEnv } from '../test/helpers/uids.js';

if (process.argv.includes('--help')) {
  console.log('node --import tsx bench/cold.ts [runs] [row names...]: lspd cold, bare server, lspd after a warmed upload (see the head of bench/cold.ts)');
  process.exit(0);
}
const RUNS = Number(process.argv[2] ?? 3) || 3;
const ONLY = process.argv.slice(3);

async function daemon(env: Record<string, string>): Promise<Daemon> {
  return spawnDaemon({
    env: { LOG_LEVEL: 'info', ...jailUidEnv(64), LSPD_WARM_MAX_SESSIONS: '4', LSPD_RESULT_CACHE_ENTRIES: '0', ...env },
    timeoutMs: 60_000,
  });
}

type Root = { org: string; repo: string; sha: string };

async function ask(d: Daemon, c: Case, root: Root): Promise<{ ms: number; right: boolean }> {
  const t0 = performance.now();
  const r = await postLsp(d.url, { ...root, op: 'definition', path: c.path, ...c.position });
  const ms = performance.now() - t0;
  if (r.status !== 200) throw new Error(`${c.row.name}: ${r.status} ${JSON.stringify(r.body)}`);
  const locs = (r.body.locations as { path: string; range: { start: { line: number } } }[]).map((l) => `${l.path}:${l.range.start.line}`);
  return { ms, right: isRight(c, locs) };
}

/** Upload with warm-up, wait (≤ 180 s) for GET to show every session ready, then the first query and 5 more. */
async function warmedOnce(d: Daemon, c: Case, run: number): Promise<{ ms: number; right: boolean; p50: number }> {
  const root = { org: 'bench', repo: c.fixture, sha: createHash('sha1').update(`warm ${c.row.name} ${run} ${process.pid} ${Date.now()}`).digest('hex') };
  await uploadDir(d.url, root, join(fixturesDir, c.fixture));
  const until = Date.now() + 180_000;
  for (;;) {
    const s = (await getJson(d.url, `/v1/roots/${root.org}/${root.repo}/${root.sha}`)).body.sessions as { state: string }[];
    if (s.length > 0 && s.every((x) => x.state === 'ready')) break;
    if (Date.now() > until) throw new Error(`${c.row.name}: not warm after 180 s: ${JSON.stringify(s)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  const first = await ask(d, c, root);
  const more: number[] = [];
  for (let i = 0; i < 5; i++) more.push((await ask(d, c, root)).ms);
  await remove(d, root);
  return { ...first, p50: median(more) };
}

/** DELETE the root: its sessions stop, so runs do not pile up jails (the org's share of uids). */
async function remove(d: Daemon, root: Root): Promise<void> {
  const r = await fetch(`${d.url}/v1/roots/${root.org}/${root.repo}/${root.sha}`, { method: 'DELETE' });
  if (r.status !== 204) throw new Error(`DELETE answered ${r.status}: ${await r.text()}`);
}

async function lspdOnce(d: Daemon, c: Case, run: number): Promise<{ ms: number; right: boolean }> {
  // A root never seen before (a fresh session, nothing cached).
  const root = { org: 'bench', repo: c.fixture, sha: createHash('sha1').update(`cold ${c.row.name} ${run} ${process.pid} ${Date.now()}`).digest('hex') };
  await uploadDir(d.url, root, join(fixturesDir, c.fixture), '?warm=false');
  await fetchSettled(d.url, root);
  const answer = await ask(d, c, root);
  await remove(d, root);
  return answer;
}

async function bareOnce(c: Case): Promise<{ first: number; right?: number }> {
  const s = await bareFor(c);
  try {
    await s.initialize();
    const uri = s.open(c.path);
    let first: number | undefined;
    while (s.now() < 60_000) {
      const res = await s.request('textDocument/definition', { textDocument: { uri }, position: c.position });
      first ??= s.now();
      if (isRight(c, rawLocations(c, res))) return { first, right: s.now() };
      await new Promise((r) => setTimeout(r, 25));
    }
    return { first: first ?? NaN };
  } finally {
    await s.stop();
  }
}

/** Busy and total jiffies of the host so far (/proc/stat's first line: user nice system idle iowait irq softirq steal). */
function hostJiffies(): { busy: number; total: number } {
  const [user, nice, system, idle, iowait, irq, softirq, steal] = readFileSync('/proc/stat', 'latin1')
    .split('\n', 1)[0]!
    .trim()
    .split(/\s+/)
    .slice(1, 9)
    .map(Number);
  const busy = user! + nice! + system! + irq! + softirq! + steal!;
  return { busy, total: busy + idle! + iowait! };
}

/**
 * Before a cold start, lspd's and the bare server's alike: 300 ms (the run before has
 * just stopped a server of the same kind), then until the host is quiet, a 100 ms
 * window in which every CPU together was busy under a fifth of one CPU, 3 s at most.
 * Without it a start could share the CPUs with the last one's teardown.
 */
async function settle(): Promise<void> {
  await new Promise((r) => setTimeout(r, 300));
  const until = Date.now() + 3_000;
  while (Date.now() < until) {
    const a = hostJiffies();
    await new Promise((r) => setTimeout(r, 100));
    const b = hostJiffies();
    if ((b.busy - a.busy) * cpus().length * 5 <= b.total - a.total) return;
  }
}

const median = (xs: number[]) => (xs.length ? [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]! : NaN);
/** The q-quantile (0..1) of xs, nearest rank. */
const quantile = (xs: number[], q: number) => (xs.length ? [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(q * xs.length))]! : NaN);
const f = (n: number) => (Number.isFinite(n) ? n.toFixed(0) : '-').padStart(8);

async function main(): Promise<void> {
  const why = cannotJail();
  if (why) {
    console.log(`bench/cold skipped: ${why}`);
    return;
  }
  const all = cases(ONLY);
  const daemons = new Map<string, Promise<Daemon>>();
  const daemonFor = (c: Case) => {
    const key = c.row.name === 'typescript-language-server' ? 'tsserver' : 'native';
    if (!daemons.has(key)) daemons.set(key, daemon(key === 'tsserver' ? { LSPD_TYPESCRIPT_SERVER: 'tsserver' } : {}));
    return daemons.get(key)!;
  };
  console.log(`bench/cold: time to the first definition on a cold server, ms, median of ${RUNS} (interleaved); load ${loadavg()[0]!.toFixed(1)} at the start`);
  console.log('lspd = fresh root, one POST /v1/code/lsp (jail, initialize, readiness, answer); bare = same server over stdio, no jail, asked every 25 ms\n');
  console.log(`${'server'.padEnd(28)} lspd  right?  bare 1st  bare right  lspd−bare right (q1..q3)  warmed 1st  right?  warm p50  ratio`);
  try {
    for (const c of all) {
      const d = await daemonFor(c);
      const l: { ms: number; right: boolean }[] = [];
      const b: { first: number; right?: number }[] = [];
      const w: { ms: number; right: boolean; p50: number }[] = [];
      // Round 0 is not counted: the first start of a server kind after the daemon's
      // own start pays for the page cache and the daemon's untried code paths, once.
      for (let i = 0; i <= RUNS; i++) {
        // Each cold start on a settled host; which of the two goes first alternates.
        const pair: [{ ms: number; right: boolean }?, { first: number; right?: number }?] = [];
        for (const side of i % 2 === 0 ? [0, 1] : [1, 0]) {
          await settle();
          if (side === 0) pair[0] = await lspdOnce(d, c, i);
          else pair[1] = await bareOnce(c);
        }
        const warm = await warmedOnce(d, c, i);
        if (i === 0) continue;
        l.push(pair[0]!);
        b.push(pair[1]!);
        w.push(warm);
      }
      // The goal: the first answer after a warmed upload within 2x of a warm query's p50.
      const [wFirst, wP50] = [median(w.map((x) => x.ms)), median(w.map((x) => x.p50))];
      const f1 = (n: number) => n.toFixed(1).padStart(8);
      const warmed = `${f1(wFirst)}    ${`${w.filter((x) => x.right).length}/${RUNS}`.padStart(5)}  ${f1(wP50)}  ${(wFirst / wP50).toFixed(2).padStart(5)}`;
      const lm = median(l.map((x) => x.ms));
      const rightCount = l.filter((x) => x.right).length;
      const bRight = median(b.map((x) => x.right).filter((x): x is number => x !== undefined));
      // What lspd adds, per run: each lspd start less the bare start right after it. The
      // median of those is steadier than one median less the other when the host drifts.
      const added = l.flatMap((x, i) => (b[i]!.right === undefined ? [] : [x.ms - b[i]!.right!]));
      const spread = `${f(quantile(added, 0.25)).trim()}..${f(quantile(added, 0.75)).trim()}`.padStart(12);
      if (process.env.BENCH_COLD_PAIRS)
        console.log('  runs (lspd/bare right):', l.map((x, i) => `${x.ms.toFixed(0)}/${b[i]!.right?.toFixed(0) ?? '-'}`).join(' '));
      console.log(
        `${c.row.name.padEnd(28)}${f(lm)}  ${`${rightCount}/${RUNS}`.padStart(5)}  ${f(median(b.map((x) => x.first)))}    ${f(bRight)}        ${f(median(added))} ${spread}     ${warmed}`,
      );
    }
  } finally {
    for (const p of daemons.values()) {
      const d = await p;
      await d.stop();
      d.cleanup();
    }
  }
  console.log(`\n(1-minute load average at the end: ${loadavg()[0]!.toFixed(1)} on ${cpus().length} CPUs)`);
}

await main();
