// bench/calibrate: how long each language server takes to be ready on its fixture,
// and which defaults follow. For every row with a fixture question (bench/cases),
// RUNS cold starts of the bare server (spawned directly, driven over stdio: the
// jail adds 3-50 ms to a start, bench/cold shows how much), each timing from spawn:
//   init      the initialize answer
//   progress  first $/progress begin, last end (indexing, as the server reports it)
//   diag      the opened file's first pushed diagnostics
//   log       the readiness log line (rows that wait for one)
//   first     the first definition answer, asked every 25 ms from didOpen
//   right     the first answer that is right (file and line)
// then the worst case over runs and servers, and the defaults it suggests:
//   readyTimeoutMs       ≥ 3 × the slowest time to a right answer, at least 10 s
//   readyGraceMs         ≥ the longest a server still answered wrong after the
//                        signal lspd waits for (its row's readiness strategy):
//                        a question sent that long after the signal got a wrong
//                        answer (0: every answer asked after the signal was right)
//   initializeTimeoutMs  ≥ 10 × the slowest initialize, at least 10 s
//   diagnosticsWindowMs  ≥ 3 × the longest from readiness to the opened file's
//                        first diagnostics (the window starts once ready), ≥ 2 s
// Run: node --import tsx bench/calibrate.ts [runs] [row names...]
import { cpus, loadavg } from 'node:os';
import { isRight, rawLocations, bareFor, cases, type Case } from './cases.js';
import { readsServerStatus } from '../src/lsp/servers/server-row.js';

const RUNS = Number(process.argv[2] ?? 3) || 3;
const ONLY = process.argv.slice(3);
const GIVE_UP_MS = 60_000;

interface Run {
  init: number;
  progressBegin?: number;
  progressEnd?: number;
  diag?: number;
  log?: number;
  first: number;
  right?: number;
  /** ms after the readiness signal that a question was still answered wrong (0 if none). */
  wrongAfterSignal?: number;
  /** ms from the readiness signal to the opened file's first diagnostics. */
  diagAfterSignal?: number;
}

async function once(c: Case): Promise<Run> {
  const s = await bareFor(c);
  try {
    await s.initialize();
    const init = s.now();
    const uri = s.open(c.path);
    let first: number | undefined;
    let right: number | undefined;
    const wrongSentAt: number[] = [];
    while (right === undefined && s.now() < GIVE_UP_MS) {
      const sent = s.now();
      const res = await s.request('textDocument/definition', { textDocument: { uri }, position: c.position });
      const at = s.now();
      first ??= at;
      if (isRight(c, rawLocations(c, res))) right = at;
      else {
        wrongSentAt.push(sent);
        await new Promise((r) => setTimeout(r, 25));
      }
    }
    // Let late signals arrive: a progress still open (intelephense answers right
    // before its indexing ends) is waited for, up to the give-up bound.
    const open = () => s.timeline.filter((e) => e.kind === 'progress-begin').length - s.timeline.filter((e) => e.kind === 'progress-end').length;
    while (open() > 0 && s.now() < GIVE_UP_MS) await s.changed(500);
    await s.changed(300);
    const tl = s.timeline;
    const ends = tl.filter((e) => e.kind === 'progress-end');
    const pattern = c.row.readiness.kind === 'logMessage' ? c.row.readiness.pattern : undefined;
    const run: Run = { init, first: first! };
    const begin = tl.find((e) => e.kind === 'progress-begin');
    if (begin) run.progressBegin = begin.at;
    if (ends.length) run.progressEnd = ends[ends.length - 1]!.at;
    const diag = tl.find((e) => e.kind === 'diagnostics' && c.path.endsWith(e.detail.split(' ')[0]!));
    if (diag) run.diag = diag.at;
    const log = pattern ? tl.find((e) => e.kind === 'log' && pattern.test(e.detail)) : undefined;
    if (log) run.log = log.at;
    if (right !== undefined) run.right = right;
    // What lspd waits for: the log line; diagnostics and the end of progress; the
    // end of progress and, for a row that reads it, the last quiescent status (or, for
    // a server that reports no progress, the initialize answer).
    const quiet = tl.filter((e) => e.kind === 'quiescent').pop()?.at;
    const signal =
      c.row.readiness.kind === 'logMessage'
        ? run.log
        : c.row.readiness.kind === 'documentDiagnostics'
          ? Math.max(run.diag ?? 0, run.progressEnd ?? 0)
          : readsServerStatus(c.row.readiness)
            ? quiet === undefined
              ? undefined
              : Math.max(quiet, run.progressEnd ?? 0)
            : begin
              ? run.progressEnd
              : run.init;
    if (signal !== undefined) run.wrongAfterSignal = Math.max(0, ...wrongSentAt.map((t) => t - signal));
    if (signal !== undefined && run.diag !== undefined) run.diagAfterSignal = Math.max(0, run.diag - signal);
    return run;
  } finally {
    await s.stop();
  }
}

const fmt = (n: number | undefined) => (n === undefined ? '-' : n.toFixed(0)).padStart(7);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const roundUp = (ms: number, step: number) => Math.ceil(ms / step) * step;

async function main(): Promise<void> {
  const all = cases(ONLY);
  console.log(`bench/calibrate: ${RUNS} cold runs per server, bare (no jail), ms from spawn; median of runs\n`);
  console.log(`${'server'.padEnd(28)}   init  pBegin    pEnd    diag     log   first   right  wrong after signal`);
  let worstRight = 0;
  let worstInit = 0;
  let worstDiag = 0;
  let worstGap = 0;
  const missed: string[] = [];
  for (const c of all) {
    const runs: Run[] = [];
    for (let i = 0; i < RUNS; i++) runs.push(await once(c));
    const med = (k: keyof Run) => {
      const v = runs.map((r) => r[k]).filter((x): x is number => x !== undefined);
      return v.length ? median(v) : undefined;
    };
    // How long after the signal lspd waits for a question was still answered wrong: what a grace must cover.
    const gap = runs.map((r) => r.wrongAfterSignal).filter((g): g is number => g !== undefined);
    for (const r of runs) {
      if (r.right === undefined) missed.push(c.row.name);
      worstRight = Math.max(worstRight, r.right ?? 0);
      worstInit = Math.max(worstInit, r.init);
      worstDiag = Math.max(worstDiag, r.diagAfterSignal ?? 0);
    }
    worstGap = Math.max(worstGap, ...gap, 0);
    console.log(
      `${c.row.name.padEnd(28)}${fmt(med('init'))} ${fmt(med('progressBegin'))} ${fmt(med('progressEnd'))} ${fmt(med('diag'))} ${fmt(med('log'))} ${fmt(med('first'))} ${fmt(med('right'))}  ${gap.length ? fmt(Math.max(...gap)) : '      -'}`,
    );
  }
  console.log(
    '\nworst over all runs: right answer %d ms, initialize %d ms, diagnostics after readiness %d ms, wrong after signal %d ms',
    Math.round(worstRight),
    Math.round(worstInit),
    Math.round(worstDiag),
    Math.round(worstGap),
  );
  if (missed.length) console.log(`never right within ${GIVE_UP_MS} ms: ${[...new Set(missed)].join(', ')}`);
  console.log('\nsuggested defaults:');
  console.log(`  readyTimeoutMs      ${Math.max(10_000, roundUp(3 * worstRight, 1000))}`);
  console.log(`  readyGraceMs        ${Math.max(50, roundUp(worstGap, 50))}`);
  console.log(`  initializeTimeoutMs ${Math.max(10_000, roundUp(10 * worstInit, 1000))}`);
  console.log(`  diagnosticsWindowMs ${Math.max(2_000, roundUp(3 * worstDiag, 500))}`);
  console.log(`(1-minute load average: ${loadavg()[0]!.toFixed(1)} on ${cpus().length} CPUs)`);
}

await main();
