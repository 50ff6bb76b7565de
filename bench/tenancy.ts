// Question: while one org floods the daemon, how much slower are a polite org's
// queries than on an idle daemon? (issue 13; goal: the polite org's p99 within 2x
// of its idle p99.) With --hostile, the same question of issue 30's hostile shapes
// (bench/tenancy-shapes.ts): the polite org's p99 during each, the daemon's peak heap,
// the hostile org's charge beside du of its roots.
//   node --import tsx bench/tenancy.ts [--seconds N] [--flood-clients N] [--flood-roots N] [--slow-clients N] [--quick] [--shares-off] [--resend] [--hostile]
// Defaults: 30 s per phase; the flooding org has 300 clients on a slow root (its npm
// dependencies come from a registry that never answers, so its queries wait: they
// fill the flooder's share of the wait queue) and 400 more on 4 warm roots (more
// than their sessions' in-flight slots). A refused client waits its Retry-After, as
// lspd's own client does; --resend sends again at once (then the daemon's one event
// loop spends its time refusing, and everyone's latency suffers; this was --hostile
// before the shapes took that name). --quick is 8 s phases (and shapes a tenth the size);
// --shares-off runs the daemon with LSPD_ORG_RESERVE_PERCENT=0 (first come, first
// served, as before shares: the polite org is then refused).
// One daemon (the result cache off, so every query reaches a language server), in
// one run:
//   idle     the polite org alone: sequential definitions on its warm ts-basic root
//   flooded  the same, while the flood runs (a child process of its own: sharing
//            this process's event loop, the flood's clients delayed the polite
//            client's own timing by seconds)
//   idle, after   the first again, once the flood is over (the host's own load
//            drifts: a 2-core VM shared with other work)
// --hostile: idle, then each shape while the polite org asks, then idle after (no flood).
// Printed: the polite org's n/p50/p99/max per phase (as its client saw them, and
// the daemon's own elapsed_ms), the ratios, what the daemon counted of the flood
// while the polite phase ran, what the flooder was told, and the load average.
import { spawn } from 'node:child_process';
import { cpSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { Agent, request } from 'undici';
import { bufferOf, CHAOS_ENV, fixtureTar, fixturesDir, putTar, tsCall, uidRange } from '../test/chaos/daemons.js';
import { spawnServing, type Serving } from '../test/helpers/daemon.js';
import { Figures, percentile, send, sleep, type Result } from '../test/chaos/harness.js';
import { startHangingServer } from '../test/chaos/hanging-server.js';
import { shaOf, tarOf } from '../test/helpers/lsp-harness.js';
import { scratchDir } from '../test/helpers/fetch-env.js';
import { hostileShapes } from './tenancy-shapes.js';

const args = process.argv.slice(2);
const flag = (name: string, def: number) => {
  const i = args.indexOf(name);
  return i >= 0 && args[i + 1] !== undefined ? Number(args[i + 1]) : def;
};
const quick = args.includes('--quick');
const seconds = flag('--seconds', quick ? 8 : 30);
const floodClients = flag('--flood-clients', 400);
const sharesOff = args.includes('--shares-off');
const slowClients = flag('--slow-clients', 300);
const resend = args.includes('--resend');
const hostile = args.includes('--hostile');
const floodRoots = flag('--flood-roots', 4);
const OPS = 4; // tsCall's questions 0..3: definition, hover, references, documentSymbols

interface PhaseFigures {
  n: number;
  p50: number;
  p99: number;
  max: number;
  /** The daemon's elapsed_ms of the same answers. */
  serverP50: number;
  serverP99: number;
  wrong: number;
  refused: number;
}

type Root = { org: string; repo: string; sha: string };

/**
 * The polite org's client: one keep-alive connection for the whole run, as a client
 * that is not flooding keeps one. (A fresh connection opened during a 400-client
 * flood waited 15-19 s to be served, before lspd could know whose it was.)
 */
const politeAgent = new Agent({ connections: 1 });

/** The polite org: one definition after another for `ms` (and until `work` settles, if given), each judged. */
async function politePhase(url: string, root: { org: string; repo: string; sha: string }, ms: number, work?: Promise<unknown>): Promise<PhaseFigures> {
  const agent = politeAgent;
  const lat: number[] = [];
  const server: number[] = [];
  let wrong = 0;
  let refused = 0;
  const until = Date.now() + ms;
  let settled = work === undefined;
  void work?.then(
    () => (settled = true),
    () => (settled = true),
  );
  while (Date.now() < until || !settled) {
    const r = await send(url, tsCall(root, 0), { timeoutMs: 80_000, dispatcher: agent });
    if (r.outcome === 'answered' && !r.wrong) {
      lat.push(r.ms);
      server.push(Number(r.body?.elapsed_ms));
    } else if (r.outcome === 'refused') refused++;
    else wrong++;
  }
  return {
    n: lat.length,
    p50: percentile(lat, 50),
    p99: percentile(lat, 99),
    max: Math.max(...lat),
    serverP50: percentile(server, 50),
    serverP99: percentile(server, 99),
    wrong,
    refused,
  };
}

type FloodFigures = Record<'answered' | 'refused' | 'lost' | 'wrong' | 'sent', number> & { byCode: Record<string, number>; samples: Record<string, string> };

/** Figures that also keep the first message of each refusal code (what the flooder was told). */
class SampledFigures extends Figures {
  readonly samples: Record<string, string> = {};
  override add(r: Result, label = ''): void {
    super.add(r, label);
    if (r.code && !(r.code in this.samples)) this.samples[r.code] = String(r.body?.message);
  }
}

/**
 * The flooding org, in its own process (`--flood-worker URL WARM_ROOTS_JSON SLOW_ROOT_JSON`):
 * floods until a line arrives on stdin, then prints its figures as JSON and exits
 * (its connections go with it, so the daemon drops what it still held for them).
 */
async function floodWorker(url: string, roots: Root[], slow: Root): Promise<void> {
  /** `concurrency` clients sending `next(i)` one after the other; a refused one waits Retry-After first, unless resending. */
  const load = (next: (i: number) => ReturnType<typeof tsCall>, concurrency: number) => {
    const figures = new SampledFigures();
    const agent = new Agent({ connections: concurrency });
    let i = 0;
    for (let c = 0; c < concurrency; c++) {
      void (async () => {
        for (;;) {
          const r = await send(url, next(i++), { timeoutMs: 80_000, dispatcher: agent });
          figures.add(r);
          if (r.status === 503 && !resend) await sleep(Number(r.retryAfter ?? 1) * 1000);
        }
      })();
    }
    return {
      figures,
      load: {
        get count() {
          return i;
        },
      },
    };
  };
  // The slow root's clients first, until the daemon has counted each: they hold the
  // flooder's share of the wait queue (what the warm flood would fill only now and then).
  const waiting = load(() => tsCall(slow, 0), slowClients);
  const before = await queriesOf(url, 'flood');
  while ((await queriesOf(url, 'flood')) < before + slowClients) await sleep(100);
  const warm = load((i) => tsCall(roots[i % roots.length]!, Math.floor(i / roots.length) % OPS), floodClients);
  process.stdin.resume();
  await new Promise((resolve) => process.stdin.once('data', resolve));
  const out = (x: typeof warm): FloodFigures => ({
    answered: x.figures.answered,
    refused: x.figures.refused,
    lost: x.figures.lost,
    wrong: x.figures.wrong,
    byCode: x.figures.byCode,
    samples: x.figures.samples,
    sent: x.load.count,
  });
  process.stdout.write(JSON.stringify({ warm: out(warm), slow: out(waiting) }) + '\n', () => process.exit(0));
}

/** A counter of the daemon's /metrics, summed over the series whose labels include `labels`. */
async function counter(url: string, name: string, labels: string): Promise<number> {
  const r = await request(`${url}/metrics`, { dispatcher: politeAgent });
  const text = await r.body.text();
  return text
    .split('\n')
    .filter((l) => l.startsWith(name + '{') && l.includes(labels))
    .reduce((n, l) => n + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
}

const queriesOf = (url: string, org: string) => counter(url, 'lspd_org_queries_total', `org="${org}"`);

interface Flood {
  /** Stop the flood; its figures. */
  stop(): Promise<{ warm: FloodFigures; slow: FloodFigures }>;
}

/** Start the flood worker; resolves once the daemon has counted every slow client's query and one per warm client. */
async function startFlood(url: string, roots: Root[], slow: Root): Promise<Flood> {
  const before = await queriesOf(url, 'flood');
  const argv = [
    '--import',
    'tsx',
    import.meta.filename,
    '--flood-worker',
    url,
    JSON.stringify(roots),
    JSON.stringify(slow),
    '--flood-clients',
    String(floodClients),
    '--slow-clients',
    String(slowClients),
    ...(resend ? ['--resend'] : []),
  ];
  const child = spawn(process.execPath, argv, { stdio: ['pipe', 'pipe', 'inherit'] });
  let out = '';
  child.stdout!.setEncoding('utf8').on('data', (d: string) => (out += d));
  const closed = new Promise<{ warm: FloodFigures; slow: FloodFigures }>((resolve, reject) =>
    child.once('close', (code) => (code === 0 ? resolve(JSON.parse(out.trim().split('\n').at(-1)!)) : reject(new Error(`the flood worker exited ${code}`)))),
  );
  closed.catch(() => undefined);
  while ((await queriesOf(url, 'flood')) < before + slowClients + floodClients) {
    if (child.exitCode !== null) await closed;
    await sleep(100);
  }
  return {
    stop: () => {
      child.stdin!.end('stop\n');
      return closed;
    },
  };
}

async function main(): Promise<void> {
  const registry = await startHangingServer();
  const d: Serving = await spawnServing({
    uids: uidRange(0),
    env: { ...CHAOS_ENV, LSPD_NPM_REGISTRY: registry.url, LSPD_FETCH_REGISTRIES: registry.authority, ...(sharesOff ? { LSPD_ORG_RESERVE_PERCENT: '0' } : {}) },
  });
  try {
    if (d.notReady) throw new Error(`the daemon is not ready: ${d.notReady}`);
    const tar = await fixtureTar('ts-basic');
    const polite = { org: 'polite', repo: 'ts-basic', sha: shaOf('bench-tenancy-polite') };
    // --hostile runs no flood: its roots are neither stored nor warmed.
    const flood = Array.from({ length: hostile ? 0 : floodRoots }, (_, i) => ({ org: 'flood', repo: `ts${i}`, sha: shaOf(`bench-tenancy-flood-${i}`) }));
    for (const r of [polite, ...flood]) await putTar(d.url, r, tar);
    // The slow root: ts-basic with an npm lockfile; its fetch hangs for the whole run.
    const slow = { org: 'flood', repo: 'slow', sha: shaOf('bench-tenancy-slow') };
    const slowTree = scratchDir('lspd-bench-slow-');
    cpSync(join(fixturesDir, 'ts-basic'), slowTree, { recursive: true });
    for (const f of ['package.json', 'package-lock.json']) cpSync(join(fixturesDir, 'npm-dep', f), join(slowTree, f));
    if (!hostile) await putTar(d.url, slow, await bufferOf(tarOf(slowTree)));
    // Warm every root: a session each, TS 7 loaded, the file open.
    for (const r of [polite, ...flood]) {
      const w = await send(d.url, tsCall(r, 0), { timeoutMs: 80_000 });
      if (w.outcome !== 'answered' || w.wrong) throw new Error(`warming ${r.repo}: ${w.status} ${w.why ?? JSON.stringify(w.body)}`);
    }

    await politePhase(d.url, polite, 3000); // JIT and caches warm, not counted
    const load0 = loadavg()[0]!;
    const idle = await politePhase(d.url, polite, seconds * 1000);
    const loadIdle = loadavg()[0]!;
    if (hostile) {
      const shapes = await hostileShapes({
        url: d.url,
        dataDir: d.daemon.dataDir,
        agent: politeAgent,
        politeWhile: (work, minMs) => politePhase(d.url, polite, minMs, work),
        idle,
        quick,
        seconds,
      });
      const loadShapes = loadavg()[0]!;
      const idleAfter = await politePhase(d.url, polite, seconds * 1000);
      const row = (name: string, f: PhaseFigures, load: string) =>
        `| ${name} | ${f.n} | ${f.p50} | ${f.p99} | ${f.max} | ${f.refused} | ${f.wrong} | ${load} |`;
      const lines = [
        `polite org: sequential definitions on a warm ts-basic root (cache off), ${seconds} s idle phases`,
        '| phase | n | p50 ms | p99 ms | max ms | refused | wrong | load avg (1 min) |',
        '|---|---|---|---|---|---|---|---|',
        row('idle daemon', idle, `${load0.toFixed(1)} → ${loadIdle.toFixed(1)}`),
        row('idle daemon, after the shapes', idleAfter, `${loadShapes.toFixed(1)} → ${loadavg()[0]!.toFixed(1)}`),
        '',
        ...shapes,
      ];
      process.stdout.write(lines.join('\n') + '\n');
      return;
    }

    const floodOn = await startFlood(d.url, flood, slow);
    await sleep(2000); // the flood reaches its level before measuring
    // The daemon's own counts before and after the polite phase prove the flood overlapped it.
    const refusedBefore = await counter(d.url, 'lspd_org_refusals_total', 'org="flood"');
    const floodQueriesBefore = await queriesOf(d.url, 'flood');
    const flooded = await politePhase(d.url, polite, seconds * 1000);
    const floodDuring = {
      queries: (await queriesOf(d.url, 'flood')) - floodQueriesBefore,
      refused: (await counter(d.url, 'lspd_org_refusals_total', 'org="flood"')) - refusedBefore,
    };
    const loadFlooded = loadavg()[0]!;
    const fl = await floodOn.stop();
    await sleep(2000); // the flood's last answers drain
    const idleAfter = await politePhase(d.url, polite, seconds * 1000);
    const loadAfter = loadavg()[0]!;

    const row = (name: string, f: PhaseFigures, load: string) =>
      `| ${name} | ${f.n} | ${f.p50} | ${f.p99} | ${f.max} | ${f.serverP50} | ${f.serverP99} | ${f.refused} | ${f.wrong} | ${load} |`;
    const lines = [
      `polite org: sequential definitions on a warm ts-basic root (cache off), ${seconds} s per phase${sharesOff ? '; fair shares OFF' : ''}; the flood ${resend ? 'resends refused queries at once (--resend)' : 'waits Retry-After when refused'}`,
      '| phase | n | p50 ms | p99 ms | max ms | daemon p50 ms | daemon p99 ms | refused | wrong | load avg (1 min) |',
      '|---|---|---|---|---|---|---|---|---|---|',
      row('idle daemon', idle, `${load0.toFixed(1)} → ${loadIdle.toFixed(1)}`),
      row(`flooded (${floodClients} clients, ${floodRoots} roots)`, flooded, `→ ${loadFlooded.toFixed(1)}`),
      row('idle daemon, after', idleAfter, `→ ${loadAfter.toFixed(1)}`),
      '',
      ...[idle, idleAfter].map(
        (i, k) =>
          `ratios flooded/idle${k ? ' after' : ''}: p50 ${(flooded.p50 / i.p50).toFixed(2)}x, p99 ${(flooded.p99 / i.p99).toFixed(2)}x (goal: p99 ≤ 2x); daemon-side p50 ${(flooded.serverP50 / i.serverP50).toFixed(2)}x, p99 ${(flooded.serverP99 / i.serverP99).toFixed(2)}x`,
      ),
      `flood org during the polite flooded phase, as the daemon counted: ${floodDuring.queries} queries, ${floodDuring.refused} refused 503 busy`,
      ...(['warm', 'slow'] as const).map((k) => {
        const f = fl[k];
        const who = k === 'warm' ? `${floodClients} clients on ${floodRoots} warm roots` : `${slowClients} clients on the slow root`;
        return `flood org (own process), ${who}, whole flood: ${f.answered} answered, ${f.refused} refused ${JSON.stringify(f.byCode)}, ${f.lost} lost, ${f.wrong} wrong; ${f.sent} sent\n  told: ${JSON.stringify(f.samples)}`;
      }),
    ];
    const metrics = await (await request(`${d.url}/metrics`, { dispatcher: politeAgent })).body.text();
    lines.push(
      'daemon: ' +
        metrics
          .split('\n')
          .filter((l) => l.startsWith('lspd_org_refusals_total'))
          .join(', '),
    );
    process.stdout.write(lines.join('\n') + '\n');
  } finally {
    await d.daemon.stop();
    d.daemon.cleanup();
    await registry.close();
    await politeAgent.close();
  }
}

const worker = args.indexOf('--flood-worker');
(worker >= 0 ? floodWorker(args[worker + 1]!, JSON.parse(args[worker + 2]!) as Root[], JSON.parse(args[worker + 3]!) as Root) : main()).catch(
  (err: unknown) => {
    process.stderr.write(`bench/tenancy: ${(err as Error).stack ?? String(err)}\n`);
    process.exit(1);
  },
);
