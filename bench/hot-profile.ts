// bench/hot-profile: where lspd's daemon spends its CPU per warm answer, by stage.
// Question: of the daemon's CPU per /v1/code/lsp answer, how much is HTTP and
// validation, auth and admission, target checks, the session lease, the transport,
// projection, serialisation, metrics and logging, GC?
// Two daemons in turn, each under `node --cpu-prof` (sampling every 100 µs):
// "uncached" (LSPD_RESULT_CACHE_ENTRIES=0: every query reaches TS 7) and "cached"
// (every repeat is a hit), each asked bench/load's four questions over four warm
// roots of ts-basic by C clients for S seconds after a warm-up. Printed: answers,
// daemon CPU µs per answer (utime+stime of the daemon from /proc over the window,
// all its threads), then the profile's samples inside the window summed by stage:
// each sample goes to the stage of the nearest frame on its stack that names one
// (so fastify calling our route counts as the route's stage), µs per answer; then
// the top self-time functions.
// `--callers NAME`: also the three frames (`--depth N`) above every sample whose
// function is NAME (who calls `join`, say), summed the same way.
// `--project DIR`: profile the daemon of another checkout (a git worktree of a commit
// to compare); the load stays this checkout's.
//   node --import tsx bench/hot-profile.ts [--seconds S] [--clients C] [--roots R] [--top N] [--only uncached|cached] [--no-prof] [--callers NAME [--depth N]] [--project DIR]
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { CHAOS_ENV, tsRoots, uidRange } from '../test/chaos/daemons.js';
import { Figures } from '../test/chaos/harness.js';
import { tsQueryLoad } from './ts-load.js';
import { projectArg, spawnServing } from '../test/helpers/daemon.js';

const args = process.argv.slice(2);
const flag = (name: string, def: number) => {
  const i = args.indexOf(name);
  return i >= 0 && args[i + 1] !== undefined ? Number(args[i + 1]) : def;
};
const SECONDS = flag('--seconds', 8);
const CLIENTS = flag('--clients', 8);
/** bench/load's `--roots`: 1 asks a single TS 7 server. */
const ROOTS = flag('--roots', 4);
const TOP = flag('--top', 20);
/** `--only uncached|cached`: one phase; `--no-prof`: CPU per answer without the profiler's own cost. */
const ONLY = args.includes('--only') ? args[args.indexOf('--only') + 1] : undefined;
const PROF = !args.includes('--no-prof');
const CALLERS = args.includes('--callers') ? args[args.indexOf('--callers') + 1] : undefined;
const CALLER_DEPTH = flag('--depth', 3);
const PROJECT = projectArg(args);

/** Stages by the script a frame runs in; the first rule that matches a frame's URL names it. */
const STAGES: [string, RegExp][] = [
  ['transport (wire, vscode-jsonrpc)', /\/src\/lsp\/wire\/|vscode-jsonrpc/],
  ['projection (answer/)', /\/src\/lsp\/answer\//],
  ['result cache', /\/src\/lsp\/cache\.ts|\/src\/store\/root-cache\.ts|lru-cache/],
  ['target checks', /\/src\/lsp\/target-file|tree-lines/],
  ['session, lease, pool', /\/src\/lsp\/session\//],
  ['query service, ops', /\/src\/lsp\/(query-service|lsp-ops|graph-anchor)\.ts|\/src\/util\/deadline/],
  ['auth', /\/src\/http\/auth\.ts/],
  ['admission, tenancy', /\/src\/tenancy\//],
  ['validation (api/, zod)', /\/src\/api\/|\/zod\/|error-handler\.ts/],
  ['metrics (prom-client)', /prom-client|\/src\/metrics/],
  ['logging (pino)', /\/pino|\/src\/log\.ts/],
  ['route, answer body', /\/src\/http\//],
  ['fastify (routing, hooks, reply)', /fastify|find-my-way|avvio|light-my-request|fast-json-stringify|secure-json-parse/],
  ['node http', /node:_http|node:http/],
  ['node net, streams (both sockets)', /node:net|node:internal\/stream|node:stream|node:internal\/child_process/],
  ['timers, promises, ticks', /node:internal\/(timers|process\/task_queues)|node:timers/],
];

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  startTime: number;
  samples: number[];
  timeDeltas: number[];
}

function stageOf(stack: ProfileNode[]): string {
  const leaf = stack[0]!.callFrame.functionName;
  if (leaf === '(garbage collector)') return 'GC';
  if (leaf === '(idle)') return '(idle)';
  if (leaf === '(program)') return '(program: native, not JS)';
  for (const n of stack) for (const [name, re] of STAGES) if (re.test(n.callFrame.url)) return name;
  return 'other';
}

/** µs per stage and per leaf function over the samples in [from, to) (monotonic µs, the clock V8 stamps samples with). */
function summarise(p: Profile, from: number, to: number) {
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const stageCache = new Map<number, string>();
  const stages = new Map<string, number>();
  const leaves = new Map<string, number>();
  const files = new Map<string, number>();
  const callers = new Map<string, number>();
  const where = (n: ProfileNode) => `${n.callFrame.functionName || '(anonymous)'} ${n.callFrame.url.replace(/^.*\/(node_modules|src)\//, '$1/')}`;
  let t = p.startTime;
  for (let i = 0; i < p.samples.length; i++) {
    t += p.timeDeltas[i]!;
    // a sample's time is the gap to the next one
    const dt = p.timeDeltas[i + 1] ?? 0;
    if (t < from || t >= to) continue;
    const id = p.samples[i]!;
    let stage = stageCache.get(id);
    if (stage === undefined) {
      const stack: ProfileNode[] = [];
      for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) stack.push(byId.get(cur)!);
      stageCache.set(id, (stage = stageOf(stack)));
    }
    stages.set(stage, (stages.get(stage) ?? 0) + dt);
    const f = byId.get(id)!.callFrame;
    const leaf = `${f.functionName || '(anonymous)'} ${f.url.replace(/^.*\/(node_modules|src)\//, '$1/')}:${f.lineNumber + 1}`;
    leaves.set(leaf, (leaves.get(leaf) ?? 0) + dt);
    const file = f.url.replace(/^.*\/(node_modules|src)\//, '$1/') || f.functionName;
    files.set(file, (files.get(file) ?? 0) + dt);
    if (CALLERS !== undefined && f.functionName === CALLERS) {
      const up: string[] = [];
      for (let cur = parent.get(id); cur !== undefined && up.length < CALLER_DEPTH; cur = parent.get(cur)) up.push(where(byId.get(cur)!));
      const chain = up.join(' < ');
      callers.set(chain, (callers.get(chain) ?? 0) + dt);
    }
  }
  return { stages, leaves, files, callers };
}

/** utime and stime of a process, all threads, in µs. */
function cpuMicros(pid: number): { user: number; sys: number } {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const rest = f.slice(f.lastIndexOf(')') + 2).split(' ');
  return { user: (Number(rest[11]) * 1e6) / 100, sys: (Number(rest[12]) * 1e6) / 100 };
}
const nowMicros = () => Number(process.hrtime.bigint() / 1000n);

async function phase(slot: number, label: string, env: Record<string, string>): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'lspd-hot-prof-'));
  const d = await spawnServing({
    uids: uidRange(slot),
    env: { ...env, LOG_LEVEL: 'info' },
    nodeArgs: PROF ? ['--cpu-prof', '--cpu-prof-interval', '100', '--cpu-prof-dir', dir] : [],
    ...PROJECT,
  });
  try {
    if (d.notReady) throw new Error(`not ready: ${d.notReady}`);
    const pid = d.daemon.child.pid!;
    const roots = await tsRoots(d.url, ROOTS, `hot-${label}`);
    const run = async (seconds: number) => {
      const f = new Figures();
      const load = tsQueryLoad(d.url, roots, CLIENTS, seconds, f);
      await new Promise((r) => setTimeout(r, seconds * 1000));
      await load.stop();
      if (f.wrong > 0) throw new Error(`${label}: wrong answers: ${f.wrongWhy.join('; ')}`);
      return f.answered;
    };
    await run(4); // warm-up: sessions started, files opened, JIT settled
    const from = nowMicros();
    const cpu0 = cpuMicros(pid);
    const answered = await run(SECONDS);
    const cpu1 = cpuMicros(pid);
    const user = cpu1.user - cpu0.user;
    const sys = cpu1.sys - cpu0.sys;
    const cpu = user + sys;
    const split = `(user ${(user / answered).toFixed(0)}, system ${(sys / answered).toFixed(0)})`;
    const to = nowMicros();
    const load = loadavg()[0]!.toFixed(1);
    await d.daemon.stop();
    if (!PROF) {
      console.log(
        `${label}: ${answered} answers in ${SECONDS} s at ${CLIENTS} clients (${Math.round(answered / SECONDS)}/s); daemon CPU ${(cpu / answered).toFixed(0)} µs/answer ${split}; load ${load}`,
      );
      return;
    }
    // CPU.<date>.<time>.<pid>.<thread>.<seq>.cpuprofile: the daemon's worker threads write their own; thread 0 is the event loop.
    const file = readdirSync(dir).find((n) => n.includes(`.${pid}.0.`) && n.endsWith('.cpuprofile'));
    if (!file) throw new Error(`no profile of ${pid} in ${dir}`);
    const p = JSON.parse(readFileSync(join(dir, file), 'utf8')) as Profile;
    const { stages, leaves, files, callers } = summarise(p, from, to);
    const per = (us: number) => (us / answered).toFixed(1).padStart(8);
    const sampled = [...stages].filter(([k]) => k !== '(idle)').reduce((a, [, v]) => a + v, 0);
    console.log(
      `\n${label}: ${answered} answers in ${SECONDS} s at ${CLIENTS} clients (${Math.round(answered / SECONDS)}/s); daemon CPU ${per(cpu).trim()} µs/answer ${split} (all threads); main thread sampled ${per(sampled).trim()} µs/answer; load ${load} on ${cpus().length} CPUs`,
    );
    console.log('stage                                   µs/answer');
    for (const [k, v] of [...stages].sort((a, b) => b[1] - a[1])) if (k !== '(idle)') console.log(`  ${k.padEnd(38)}${per(v)}`);
    console.log(`top ${TOP} scripts by self time (µs/answer)`);
    for (const [k, v] of [...files].sort((a, b) => b[1] - a[1]).slice(0, TOP)) console.log(`  ${per(v)}  ${k}`);
    console.log(`top ${TOP} functions by self time (µs/answer)`);
    for (const [k, v] of [...leaves].sort((a, b) => b[1] - a[1]).slice(0, TOP)) console.log(`  ${per(v)}  ${k}`);
    if (CALLERS !== undefined) {
      console.log(`callers of ${CALLERS} (µs/answer of its self time)`);
      for (const [k, v] of [...callers].sort((a, b) => b[1] - a[1]).slice(0, TOP)) console.log(`  ${per(v)}  ${k}`);
    }
  } finally {
    if (d.daemon.child.exitCode === null) await d.daemon.stop();
    d.daemon.cleanup();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (ONLY !== 'cached') await phase(0, 'uncached', { ...CHAOS_ENV });
if (ONLY !== 'uncached') await phase(1, 'cached', { LSPD_RESULT_CACHE_ENTRIES: '10000' });
