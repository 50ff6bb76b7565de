// bench/overhead-real: bench/overhead's warm comparison on a real tree (issue 28).
// Real answers are larger than ts-basic's (references with a hundred locations, long
// hovers, a big file's outline) and projection and JSON scale with them: this asks the
// questions of a spec (bench/overhead-playwright.json) of any tree given as a
// `git archive` tar, through lspd over HTTP (result cache off: the server answers every
// time) and of the same server binary driven bare over stdio (bench/bare-lsp.ts: the
// row's argv, settings and initializationOptions, TS7_INITIALIZATION_OPTIONS for TS 7),
// interleaved one by one with the HTTP floor (GET /livez on the same lean connection,
// bench/warm-compare.ts WarmClient, every answer parsed on both sides), and
// checks every answer on both sides (definition: the expected file and line;
// references and documentSymbols: lspd's total equals the raw server's count, at least
// `min`; hover: both texts hold `contains` and are at least `minChars` long).
// Like for like: neither side has dependencies. The spec's `strip` names the lockfiles
// (basenames) deleted from the tar (`tar --delete`) before anything sees it; lspd gets
// that tar, so its FETCH finds nothing to install (npm refuses a package.json without a
// lock: no jail runs, no network), and the raw server runs on the same tar unpacked,
// in the workspace lspd gives the file (its row's nearest root marker), with didOpen of
// the files asked about, as lspd's session has. The fetch is waited out before timing.
// Printed per question: lspd's body bytes and its locations or symbols, lspd and raw
// p50/p95, the floor's p50, own cost p50 = lspd − raw − floor, daemon CPU per answer
// (its threads' schedstat around each POST, bench/process-cpu.ts: utime/stime's 10 ms
// ticks are coarser than an answer), the server's CPU per answer in lspd's jail and
// bare, the jail's CPU-cap throttling, and the load.
// Run: node --import tsx bench/overhead-real.ts --tar /tmp/pw.tar --spec bench/overhead-playwright.json [--iterations 200]
//   [--env K=V]: a daemon setting to try, repeatable (LSPD_JAIL_CPU_MILLIS=0: no jail CPU cap, which
//   TS 7's references, run on more than one core, meet: the `cap` column).
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { basename, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BareServer, bareServerFor } from './bare-lsp.js';
import { cpuMsOf, descendantsRunning, throttledMsOf } from './process-cpu.js';
import { WarmClient, f, pct, time, type WarmAnswer } from './warm-compare.js';
import { spawnDaemon } from '../test/helpers/daemon.js';
import { cannotJail, fetchSettled, positionIn, shaOf } from '../test/helpers/lsp-harness.js';
import { jailUidEnv } from '../test/helpers/uids.js';

type Op = 'definition' | 'references' | 'hover' | 'documentSymbols';
interface Question {
  name: string;
  op: Op;
  path: string;
  /** Where the position is (not for documentSymbols): the first needle in path, offset characters into it. */
  needle?: string;
  offset?: number;
  /** definition: path and the line of needle in it; references, documentSymbols: min; hover: contains, minChars. */
  expect: { path?: string; needle?: string; min?: number; contains?: string; minChars?: number };
}
interface WarmSpec {
  strip: string[];
  questions: Question[];
}

const args = process.argv.slice(2);
const opt = (name: string) => (args.includes(name) ? args[args.indexOf(name) + 1] : undefined);
const N = Number(opt('--iterations') ?? 200);
const METHOD: Record<Op, string> = {
  definition: 'textDocument/definition',
  references: 'textDocument/references',
  hover: 'textDocument/hover',
  documentSymbols: 'textDocument/documentSymbol',
};

/** What a check compares, from either side: paths root-relative, lines 0-based. */
interface Seen {
  locs: { path: string; line: number }[];
  count: number;
  text: string;
}

function fromLspd(op: Op, b: Record<string, unknown>): Seen {
  const locs = ((b.locations ?? []) as { path: string; external?: boolean; range: { start: { line: number } } }[])
    .filter((l) => !l.external)
    .map((l) => ({ path: l.path, line: l.range.start.line }));
  const count = op === 'documentSymbols' ? Number(b.total ?? 0) : Number(b.total ?? locs.length);
  return { locs, count, text: typeof b.contents === 'string' ? b.contents : '' };
}

type RawLoc = { uri?: string; targetUri?: string; range?: { start: { line: number } }; targetSelectionRange?: { start: { line: number } } };
type RawSymbol = { children?: RawSymbol[] };
const symbolCount = (xs: RawSymbol[]): number => xs.reduce((n, s) => n + 1 + symbolCount(s.children ?? []), 0);

function fromRaw(op: Op, tree: string, r: unknown): Seen {
  if (op === 'hover') {
    const c = (r as { contents?: unknown } | null)?.contents;
    const parts = Array.isArray(c) ? c : [c];
    return { locs: [], count: 0, text: parts.map((p) => (typeof p === 'string' ? p : String((p as { value?: string })?.value ?? ''))).join('\n') };
  }
  const list = (Array.isArray(r) ? r : r ? [r] : []) as RawLoc[];
  if (op === 'documentSymbols') return { locs: [], count: symbolCount(list as RawSymbol[]), text: '' };
  const locs = list.map((l) => ({
    path: relative(tree, fileURLToPath(l.targetUri ?? l.uri ?? 'file:///')),
    line: (l.targetSelectionRange ?? l.range)?.start.line ?? -1,
  }));
  // lspd counts distinct locations (projection.ts): so does the raw side.
  const distinct = new Set(list.map((l) => JSON.stringify([l.targetUri ?? l.uri, l.targetSelectionRange ?? l.range])));
  return { locs, count: distinct.size, text: '' };
}

/** Why `s` is not the expected answer (undefined: it is). */
function wrong(q: Question, s: Seen, expectLine: number): string | undefined {
  const e = q.expect;
  switch (q.op) {
    case 'definition':
      return s.locs.some((l) => l.path === e.path && l.line === expectLine) ? undefined : `not at ${e.path}:${expectLine}: ${JSON.stringify(s.locs)}`;
    case 'references':
    case 'documentSymbols':
      return s.count >= e.min! ? undefined : `${s.count} < ${e.min}`;
    case 'hover':
      return s.text.includes(e.contains!) && s.text.length >= e.minChars! ? undefined : `${s.text.length} chars: ${s.text.slice(0, 200)}`;
  }
}

/** The spec's tar without its lockfiles, in a fresh dir, and unpacked beside it. */
function prepare(tarFile: string, strip: readonly string[]): { dir: string; tar: string; tree: string; stripped: string[] } {
  const dir = mkdtempSync(join(tmpdir(), 'lspd-overhead-real-'));
  const tar = join(dir, 'tree.tar');
  const tree = join(dir, 'tree');
  copyFileSync(tarFile, tar);
  const names = execFileSync('tar', ['-tf', tar], { encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 }).split('\n');
  const stripped = names.filter((n) => n !== '' && !n.endsWith('/') && strip.includes(basename(n)));
  if (stripped.length > 0) execFileSync('tar', ['--delete', '-f', tar, ...stripped]);
  mkdirSync(tree);
  execFileSync('tar', ['-xf', tar, '-C', tree]);
  return { dir, tar, tree, stripped };
}

interface Asked {
  q: Question;
  /** lspd's request (WarmClient.query), and the raw server's params of the same question. */
  request: Buffer;
  params: Record<string, unknown>;
  raw: BareServer;
  /** The question's path in the raw server's workspace. */
  file: string;
  expectLine: number;
}

/** The spec's questions on the unpacked tree, each with the raw server of its workspace (one per workspace, shared). */
function askedOf(spec: WarmSpec, tree: string, root: Record<string, string>, raws: Map<string, BareServer>, client: WarmClient): Asked[] {
  return spec.questions.map((q) => {
    const at = q.needle === undefined ? {} : positionIn(tree, q.path, q.needle, q.offset ?? 0);
    const expectLine = q.expect.path && q.expect.needle ? positionIn(tree, q.expect.path, q.expect.needle).line : -1;
    const b = bareServerFor(tree, q.path);
    const raw = raws.get(b.workspace) ?? new BareServer(b.row, b.workspace);
    raws.set(b.workspace, raw);
    const params: Record<string, unknown> = { textDocument: { uri: raw.uri(b.file) } };
    if (q.needle !== undefined) params.position = at;
    if (q.op === 'references') params.context = { includeDeclaration: true };
    return { q, request: client.query({ ...root, op: q.op, path: q.path, ...at }), params, raw, file: b.file, expectLine };
  });
}

async function askLspd(client: WarmClient, a: Asked): Promise<WarmAnswer> {
  const r = await client.ask(a.request);
  if (r.status !== 200) throw new Error(`${a.q.name}: lspd answered ${r.status} ${JSON.stringify(r.body).slice(0, 400)}`);
  return r;
}

function check(a: Asked, side: string, s: Seen): void {
  const w = wrong(a.q, s, a.expectLine);
  if (w) throw new Error(`${a.q.name}: ${side}'s answer is wrong: ${w}`);
}

/** What the loop reads besides the answers: the daemon's pid and the servers in its jails. */
interface Watched {
  client: WarmClient;
  tree: string;
  daemonPid: number;
  jailed: number[];
}

const sum = (pids: number[], read: (pid: number) => number | undefined) => pids.reduce((n, pid) => n + (read(pid) ?? 0), 0);

/** N rounds of one question, interleaved: lspd, raw, floor; every answer checked; its row of the table. */
async function measure(a: Asked, w: Watched): Promise<string> {
  const [tl, tr, th]: [number[], number[], number[]] = [[], [], []];
  let [daemonCpu, jailCpu, rawCpu, bytes, items] = [0, 0, 0, 0, ''];
  const throttled0 = sum(w.jailed, throttledMsOf);
  for (let i = 0; i < N; i++) {
    const [c0, j0] = [cpuMsOf(w.daemonPid), sum(w.jailed, cpuMsOf)];
    let got!: Awaited<ReturnType<typeof askLspd>>;
    tl.push(await time(async () => (got = await askLspd(w.client, a))));
    daemonCpu += cpuMsOf(w.daemonPid) - c0;
    jailCpu += sum(w.jailed, cpuMsOf) - j0;
    const seen = fromLspd(a.q.op, got.body);
    check(a, 'lspd', seen);
    const shown = (got.body.locations ?? got.body.symbols) as unknown[] | undefined;
    bytes = got.bytes;
    items = shown === undefined ? `${seen.text.length}ch` : shown.length === seen.count ? String(shown.length) : `${shown.length}/${seen.count}`;
    const r0 = cpuMsOf(a.raw.pid);
    let res: unknown;
    tr.push(await time(async () => (res = await a.raw.request(METHOD[a.q.op], a.params))));
    rawCpu += cpuMsOf(a.raw.pid) - r0;
    const rawSeen = fromRaw(a.q.op, w.tree, res);
    check(a, 'raw', rawSeen);
    if ((a.q.op === 'references' || a.q.op === 'documentSymbols') && seen.count !== rawSeen.count)
      throw new Error(`${a.q.name}: lspd's total ${seen.count} is not the raw server's ${rawSeen.count}`);
    th.push(await time(() => w.client.floor()));
  }
  const throttled = sum(w.jailed, throttledMsOf) - throttled0;
  const [l50, r50, h50] = [pct(tl, 50), pct(tr, 50), pct(th, 50)];
  const us = (ms: number) => String(Math.round((ms * 1000) / N)).padStart(6);
  return (
    `${a.q.name.padEnd(26)}${String(bytes).padStart(9)}  ${items.padStart(7)}  ${f(l50)}  ${f(pct(tl, 95))}  ${f(r50)}  ${f(pct(tr, 95))}   ${f(h50)}  ${f(l50 - r50 - h50)}` +
    `      ${us(daemonCpu)}     ${us(jailCpu)} / ${us(rawCpu)}  ${throttled.toFixed(0).padStart(4)}  ${loadavg()[0]!.toFixed(1)}`
  );
}

/** The process name of pid ('' once it is gone). */
function comm(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/comm`, 'latin1').trim();
  } catch {
    return '';
  }
}

async function main(): Promise<void> {
  const why = cannotJail();
  if (why) {
    console.log(`bench/overhead-real skipped: ${why}`);
    return;
  }
  const [tarFile, specFile] = [opt('--tar'), opt('--spec')];
  if (!tarFile || !specFile) throw new Error('usage: bench/overhead-real.ts --tar <git-archive.tar> --spec <questions.json> [--iterations N]');
  const spec = JSON.parse(readFileSync(specFile, 'utf8')) as WarmSpec;
  const { dir, tar, tree, stripped } = prepare(tarFile, spec.strip);
  const tried = Object.fromEntries(args.flatMap((a, i) => (a === '--env' && args[i + 1]?.includes('=') ? [args[i + 1]!.split(/=(.*)/s).slice(0, 2)] : [])));
  const d = await spawnDaemon({ env: { LOG_LEVEL: 'info', ...jailUidEnv(64), LSPD_RESULT_CACHE_ENTRIES: '0', ...tried }, timeoutMs: 90_000 });
  const raws = new Map<string, BareServer>();
  const client = new WarmClient(d.url);
  try {
    const root = { org: 'bench', repo: 'real', sha: shaOf(`overhead-real ${Date.now()}`) };
    const put = await fetch(`${d.url}/v1/roots/${root.org}/${root.repo}/${root.sha}`, {
      method: 'PUT',
      headers: { 'content-type': 'application/x-tar' },
      body: readFileSync(tar),
    });
    if (put.status !== 201) throw new Error(`PUT answered ${put.status}: ${await put.text()}`);
    const fetched = await fetchSettled(d.url, root, 300_000);
    console.log(`daemon settings tried: ${JSON.stringify(tried)}`);
    console.log(`tree ${tarFile}, ${stripped.length} lockfiles stripped (${stripped.join(', ')}); lspd's fetch: ${fetched.state}`);

    const asked = askedOf(spec, tree, root, raws, client);
    // The first answers wait for each side's project load; lspd's says incomplete until its server is ready.
    const cold = await time(async () => {
      for (const a of asked)
        for (let t0 = Date.now(); ; await new Promise((res) => setTimeout(res, 200))) {
          const r = await askLspd(client, a);
          if (r.body.incomplete === true && Date.now() - t0 < 300_000) continue;
          check(a, 'lspd', fromLspd(a.q.op, r.body));
          break;
        }
    });
    const rawCold = await time(async () => {
      for (const raw of raws.values()) await raw.initialize();
      // Each file opened once, as lspd's session opens it.
      const opened = new Set<string>();
      for (const a of asked) {
        const uri = a.raw.uri(a.file);
        if (opened.has(uri)) continue;
        opened.add(uri);
        a.raw.open(a.file);
      }
      for (const a of asked) await a.raw.request(METHOD[a.q.op], a.params);
    });
    console.log(
      `first answers to the ${asked.length} questions (a session's start and project load): lspd ${(cold / 1000).toFixed(1)} s, raw ${(rawCold / 1000).toFixed(1)} s`,
    );
    for (let i = 0; i < 20; i++) for (const a of asked) await Promise.all([askLspd(client, a), a.raw.request(METHOD[a.q.op], a.params)]);

    const daemonPid = d.child.pid!;
    // The servers in lspd's jails: the daemon's descendants running what the raw servers run (not bwrap or the gate).
    const serverComms = new Set([...raws.values()].map((r) => comm(r.pid)));
    const jailed = descendantsRunning(daemonPid, '').filter((pid) => serverComms.has(comm(pid)));
    // What the daemon spends with nothing asked (timers, its gates and watchers): part of every CPU figure below, said beside them.
    const idle0 = cpuMsOf(daemonPid);
    const idleMs = await time(() => new Promise((res) => setTimeout(res, 2000)));
    const idleRate = (cpuMsOf(daemonPid) - idle0) / idleMs;
    console.log(`\nbench/overhead-real: ${N} warm iterations per question, interleaved (lspd, raw, floor); ${jailed.length} server(s) in lspd's jails`);
    console.log('lspd = POST /v1/code/lsp (jail, pool, projection; cache off)   raw = same binary bare over stdio   floor = GET /livez, same connection');
    console.log("every answer checked on both sides; ms; CPU in µs per answer (daemon: its threads; server: in lspd's jail / bare; cap: jail throttled)\n");
    console.log(
      'question                      bytes    items   lspd p50  lspd p95   raw p50   raw p95  floor p50   own p50  daemon CPU  server CPU lspd/raw  cap  load',
    );
    for (const a of asked) console.log(await measure(a, { client, tree, daemonPid, jailed }));
    console.log(
      `\n(1-minute load average at the end: ${loadavg()[0]!.toFixed(1)} on ${cpus().length} CPUs; items: locations or symbols shown/total, a hover's characters; daemon CPU: a mean over the loop, its idle rate of ${(idleRate * 1000).toFixed(0)} µs per second included; cap: ms the jail's CPU cap held the server back over the question's loop)`,
    );
  } finally {
    client.close();
    for (const raw of raws.values()) await raw.stop();
    await d.stop();
    d.cleanup();
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
