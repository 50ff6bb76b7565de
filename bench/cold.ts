// bench/cold: cold time to the first answer, per language, lspd beside the bare
// server, in one run. The question is each row's fixture definition (bench/cases).
//   lspd  a fresh root (uploaded, its fetch settled), then one POST /v1/code/lsp:
//         jail spawn, initialize, didOpen, readiness wait, the request, projection.
//         Its one answer is checked: right or not.
//   bare  the same server binary spawned directly, initialize, didOpen, then the
//         definition asked every 25 ms: the first answer, and the first right one
//         (servers that answer early answer empty or wrong; lspd waits instead).
// lspd runs as its own process (src/main.ts, as operators run it); runs of the two
// are interleaved so machine load hits both alike; medians of RUNS.
// Run: node --import tsx bench/cold.ts [runs] [row names...]
import { createHash } from 'node:crypto';
import { cpus, loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { spawnDaemon, type Daemon } from '../test/helpers/daemon.js';
import { cannotJail, fetchSettled, lspQuery, uploadFixture } from '../test/helpers/lsp-harness.js';
import { bareFor, cases, isRight, rawLocations, type Case } from './cases.js';
import { jailUidEnv } from '../test/helpers/uids.js';

const RUNS = Number(process.argv[2] ?? 3) || 3;
const ONLY = process.argv.slice(3);

async function daemon(env: Record<string, string>): Promise<Daemon> {
  return spawnDaemon({ env: { LOG_LEVEL: 'info', ...jailUidEnv(64), ...env }, timeoutMs: 60_000 });
}

async function lspdOnce(d: Daemon, c: Case, run: number): Promise<{ ms: number; right: boolean }> {
  // A root never seen before (a fresh session, nothing cached).
  const root = { org: 'bench', repo: c.fixture, sha: createHash('sha1').update(`cold ${c.row.name} ${run} ${process.pid} ${Date.now()}`).digest('hex') };
  await uploadFixture(d.url, root, c.fixture);
  await fetchSettled(d.url, root);
  const t0 = performance.now();
  const r = await lspQuery(d.url, { ...root, op: 'definition', path: c.path, ...c.position });
  const ms = performance.now() - t0;
  if (r.status !== 200) throw new Error(`${c.row.name}: ${r.status} ${JSON.stringify(r.body)}`);
  const locs = (r.body.locations as { path: string; range: { start: { line: number } } }[]).map((l) => `${l.path}:${l.range.start.line}`);
  return { ms, right: isRight(c, locs) };
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

const median = (xs: number[]) => (xs.length ? [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]! : NaN);
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
  console.log(`bench/cold: time to the first definition on a cold server, ms, median of ${RUNS} (interleaved)`);
  console.log('lspd = fresh root, one POST /v1/code/lsp (jail, initialize, readiness, answer); bare = same server over stdio, no jail, asked every 25 ms\n');
  console.log(`${'server'.padEnd(28)} lspd  right?  bare 1st  bare right  lspd−bare right`);
  try {
    for (const c of all) {
      const d = await daemonFor(c);
      const l: { ms: number; right: boolean }[] = [];
      const b: { first: number; right?: number }[] = [];
      for (let i = 0; i < RUNS; i++) {
        l.push(await lspdOnce(d, c, i));
        b.push(await bareOnce(c));
      }
      const lm = median(l.map((x) => x.ms));
      const rightCount = l.filter((x) => x.right).length;
      const bRight = median(b.map((x) => x.right).filter((x): x is number => x !== undefined));
      console.log(`${c.row.name.padEnd(28)}${f(lm)}  ${`${rightCount}/${RUNS}`.padStart(5)}  ${f(median(b.map((x) => x.first)))}    ${f(bRight)}        ${f(lm - bRight)}`);
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
