// Question: behind a consistent-hash proxy (nginx running images/nginx/lspd.conf,
// as ingress-nginx would), what throughput and latency do 1, 2 and 3 replicas give
// beside one daemon without the proxy; and what does one very busy repo do to the
// other repos of its replica, and does spreading it over several replicas help?
//   node --import tsx bench/scale.ts [--phase-seconds N] [--rounds N] [--hot-clients N] [--flood-clients N] [--pin] [--only 1|2] [--quick]
// Defaults: 15 s per phase, 2 rounds of part 1 (the second in reverse order, so a
// drift in the host's load shows between rounds rather than between rows), 16 clients
// on the hot repo; --quick is 5 s phases and 1 round. --pin puts replica A (and
// every jail it starts) on CPU 0 and B, C on CPU 1 (taskset), so A's CPU is its
// own as a replica's node would be; without it all replicas share the host's CPUs.
// Load: roots of test/fixtures/ts-basic (one per repo), the five checked questions of
// test/chaos (definition, hover, references, documentSymbols, /ask), result cache
// off so every query reaches TS 7 in its SERVE jail, each request carrying
// x-lspd-route-key. Every root is uploaded and warmed where it will be asked, so
// the figures are steady state, not uploads or cold starts.
// Part 1: 8 clients over 12 repos: straight to replica A, then through nginx to
// [A], [A, B], [A, B, C]. Part 2: 3 replicas; 20 quiet repos (one client each, a
// query every 500 ms) alone, then beside 1 hot repo (--hot-clients in a loop), then
// with the hot repo spread over 3 and over 12 route keys (lspd/client's `spread`: a
// key per query at random among <org>/<repo>, #1, #2...; the root uploaded under
// each beforehand, as `lspd push --spread` does); then the hot repo with
// --flood-clients (320: more than one replica keeps in flight and waiting, so it
// refuses with 503 busy), alone on A and spread over 12 keys. Quiet latency and
// refusals are split by whether the repo shares the hot repo's replica.
// Jail uids 335000-337255 (the scale-out test uses 330000-334255).
import { execFileSync } from 'node:child_process';
import { cpus, loadavg } from 'node:os';
import { fixtureTar, putTar, tsCall, type Root } from '../test/chaos/daemons.js';
import { Figures, Load, percentile, sleep, type Call } from '../test/chaos/harness.js';
import { spawnDaemon, type Daemon } from '../test/helpers/daemon.js';
import { chashPick, startNginx, type Nginx } from '../test/helpers/nginx.js';
import { ROUTE_KEY_HEADER, routeKey } from '../src/client/index.js';
import { jailUidEnv } from '../test/helpers/uids.js';

const args = process.argv.slice(2);
const flag = (name: string, def: number) => {
  const i = args.indexOf(name);
  return i >= 0 && args[i + 1] !== undefined ? Number(args[i + 1]) : def;
};
const quick = args.includes('--quick');
const phaseSeconds = flag('--phase-seconds', quick ? 5 : 15);
const hotClients = flag('--hot-clients', 16);
// Past what one replica holds for one repo: 32 in flight on its session (the row's
// maxInFlight) + 256 waiting (LSPD_MAX_QUEUED_QUERIES, per replica, not per repo).
const floodClients = flag('--flood-clients', 320);
const rounds = flag('--rounds', quick ? 1 : 2);
const pin = args.includes('--pin');
const only = flag('--only', 0); // 1 or 2: run that part alone
const CLIENTS = 8;
const QUESTIONS = 5;
const QUIET_PAUSE_MS = 500;
const ORG = 'bench';

interface Replica {
  name: string;
  daemon: Daemon;
  addr: string;
}

const load = () =>
  loadavg()
    .map((x) => x.toFixed(1))
    .join(' ');
const routed = (root: Root, q: number, key = `${root.org}/${root.repo}`): Call => ({ ...tsCall(root, q), headers: { [ROUTE_KEY_HEADER]: key } });
const rootOf = (repo: string): Root => ({ org: ORG, repo, sha: 'b'.repeat(40) });

async function startReplica(name: string): Promise<Replica> {
  const daemon = await spawnDaemon({
    env: { ...jailUidEnv(256), LSPD_RESULT_CACHE_ENTRIES: '0', LOG_LEVEL: 'info' },
    timeoutMs: 90_000,
  });
  const ready = await fetch(daemon.url + '/readyz');
  if (ready.status !== 200) {
    await daemon.kill();
    throw new Error(`replica ${name} is not ready here: ${await ready.text()}`);
  }
  // Before any jail exists: every jail it starts inherits the daemon's CPUs.
  if (pin) execFileSync('taskset', ['-a', '-p', '-c', name === 'A' ? '0' : '1', String(daemon.child.pid)], { stdio: 'ignore' });
  return { name, daemon, addr: new URL(daemon.url).host };
}

/** Upload each root to each replica, and ask it every question once there (warm sessions). */
async function place(roots: Root[], on: Replica[]): Promise<void> {
  const tar = await fixtureTar('ts-basic');
  for (const r of on) {
    for (const root of roots) await putTar(r.daemon.url, root, tar);
    await Promise.all(
      roots.map(async (root) => {
        for (let q = 0; q < QUESTIONS; q++) {
          const c = tsCall(root, q);
          const res = await fetch(r.daemon.url + c.path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(c.json) });
          const body = (await res.json()) as Record<string, unknown>;
          if (res.status !== 200 || !c.check!(body)) throw new Error(`warm-up on ${r.name}: ${res.status} ${JSON.stringify(body).slice(0, 200)}`);
        }
      }),
    );
  }
}

interface Stats {
  requests: number;
  perSecond: number;
  p50: number;
  p99: number;
  refused: number;
  lost: number;
  codes: Record<string, number>;
}

function stats(f: Figures, latencies: number[], seconds: number): Stats {
  if (f.wrong > 0) throw new Error(`wrong answers: ${f.wrongWhy.join('; ')}`);
  if (f.lost > 0) console.error(`lost: ${f.lostWhy.join('; ')}`);
  return {
    requests: f.sent,
    perSecond: Math.round(f.answered / seconds),
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
    refused: f.refused,
    lost: f.lost,
    codes: f.byCode,
  };
}

const codesOf = (...ss: (Stats | undefined)[]) => {
  const all: Record<string, number> = {};
  for (const s of ss) for (const [c, n] of Object.entries(s?.codes ?? {})) all[c] = (all[c] ?? 0) + n;
  return (
    Object.entries(all)
      .map(([c, n]) => `${c}×${n}`)
      .join(', ') || '-'
  );
};

/** `clients` workers over `roots` for phaseSeconds against `url`. */
async function run(url: string, roots: Root[], clients: number): Promise<Stats> {
  const f = new Figures();
  const t0 = performance.now();
  const l = new Load({
    url,
    next: (i) => routed(roots[i % roots.length]!, Math.floor(i / roots.length) % QUESTIONS),
    concurrency: clients,
    maxRequests: 1e9,
    maxMs: phaseSeconds * 1000,
    timeoutMs: 80_000,
    figures: f,
  }).start();
  await sleep(phaseSeconds * 1000);
  await l.stop();
  return stats(f, l.latencies, (performance.now() - t0) / 1000);
}

/** How the proxied requests of the last phase split over the replicas. */
async function split(ng: Nginx, from: number, replicas: Replica[]): Promise<string> {
  const counts = new Map<string, number>();
  for (const x of (await ng.accessLog()).slice(from)) counts.set(x.upstream, (counts.get(x.upstream) ?? 0) + 1);
  return replicas.map((r) => `${r.name} ${counts.get(r.addr) ?? 0}`).join(', ');
}

function table(head: string[], rows: (string | number)[][]): string {
  const all = [head, ...rows.map((r) => r.map(String))];
  const w = head.map((_, i) => Math.max(...all.map((r) => r[i]!.length)));
  return all.map((r) => r.map((c, i) => (i === 0 ? c.padEnd(w[i]!) : c.padStart(w[i]!))).join('  ')).join('\n');
}

const replicas: Replica[] = [];
let ng: Nginx | undefined;
try {
  console.log(`lspd scale-out bench: ${cpus().length} cores, node ${process.version}, load average at start ${load()}`);
  for (const name of ['A', 'B', 'C']) replicas.push(await startReplica(name));
  const [a, b, c] = replicas as [Replica, Replica, Replica];

  ng = await startNginx([a.addr]);
  const logsFrom = replicas.map((r) => r.daemon.logs.length);

  // --- part 1: throughput at 1, 2, 3 replicas beside the daemon alone ---------
  if (only !== 2) {
    const roots = Array.from({ length: 12 }, (_, i) => rootOf(`t${String(i).padStart(2, '0')}`));
    await place(roots, replicas);
    const rows: (string | number)[][] = [];
    await run(a.daemon.url, roots, CLIENTS); // warm-up, not reported
    for (let round = 1; round <= rounds; round++) {
      const sets = [[], [a], [a, b], [a, b, c]];
      for (const set of round % 2 ? sets : sets.reverse()) {
        if (set.length === 0) {
          const direct = await run(a.daemon.url, roots, CLIENTS);
          rows.push([round, 'replica A, no proxy', direct.requests, direct.perSecond, direct.p50, direct.p99, codesOf(direct), direct.lost, '-', load()]);
          continue;
        }
        await ng.setReplicas(set.map((r) => r.addr));
        const from = (await ng.accessLog()).length;
        const s = await run(ng.url, roots, CLIENTS);
        rows.push([
          round,
          `nginx → ${set.length} replica${set.length > 1 ? 's' : ''}`,
          s.requests,
          s.perSecond,
          s.p50,
          s.p99,
          codesOf(s),
          s.lost,
          await split(ng, from, set),
          load(),
        ]);
      }
    }
    console.log(`\n1. ${CLIENTS} clients over ${roots.length} repos, ${phaseSeconds} s each${pin ? ', A on CPU 0, B and C on CPU 1' : ''}`);
    console.log(table(['round', 'route', 'requests', 'req/s', 'p50 ms', 'p99 ms', 'refused', 'lost', 'requests per replica', 'load average after'], rows));
  }

  // --- part 2: one hot repo and 20 quiet ones over 3 replicas -----------------
  if (only !== 1) {
    const ring = replicas.map((r) => r.addr);
    const home = (key: string) => replicas.find((r) => r.addr === chashPick(ring, key))!;
    const hotName = Array.from({ length: 1000 }, (_, k) => `hot${k}`).find((n) => home(`${ORG}/${n}`) === a)!;
    const hot = rootOf(hotName);
    const quiet = Array.from({ length: 20 }, (_, i) => rootOf(`q${String(i).padStart(2, '0')}`));
    const shardKeys = (n: number) => Array.from({ length: n }, (_, k) => routeKey(hot, k));
    const shardHomes = (n: number) =>
      shardKeys(n)
        .map((k) => home(k).name)
        .join('');
    for (const r of replicas) await place([...quiet.filter((q) => home(`${ORG}/${q.repo}`) === r)], [r]);
    await place([hot], replicas);
    const nearHot = quiet.filter((q) => home(`${ORG}/${q.repo}`) === a);

    const scenario = async (label: string, hotKeys: string[] | undefined, clients = hotClients) => {
      const from = (await ng!.accessLog()).length;
      const t0 = performance.now();
      const qf = new Map<Root, { f: Figures; l: Load }>();
      for (const q of quiet) {
        const f = new Figures();
        qf.set(q, {
          f,
          l: new Load({
            url: ng!.url,
            next: (i) => routed(q, i % QUESTIONS),
            concurrency: 1,
            maxRequests: 1e9,
            maxMs: phaseSeconds * 1000,
            timeoutMs: 80_000,
            figures: f,
            pauseMs: QUIET_PAUSE_MS,
          }).start(),
        });
      }
      const hf = new Figures();
      const hl = hotKeys
        ? new Load({
            url: ng!.url,
            next: (i) => routed(hot, i % QUESTIONS, hotKeys[Math.floor(Math.random() * hotKeys.length)]),
            concurrency: clients,
            maxRequests: 1e9,
            maxMs: phaseSeconds * 1000,
            timeoutMs: 80_000,
            figures: hf,
          }).start()
        : undefined;
      await sleep(phaseSeconds * 1000);
      await Promise.all([...[...qf.values()].map((x) => x.l.stop()), hl?.stop()]);
      const seconds = (performance.now() - t0) / 1000;
      const group = (rs: Root[]) => {
        const f = new Figures();
        const lat: number[] = [];
        for (const r of rs) {
          f.merge(qf.get(r)!.f);
          lat.push(...qf.get(r)!.l.latencies);
        }
        return stats(f, lat, seconds);
      };
      const near = group(nearHot);
      const far = group(quiet.filter((q) => !nearHot.includes(q)));
      const h = hl ? stats(hf, hl.latencies, seconds) : undefined;
      const pct = (x: Stats) => `${x.p50}/${x.p99}`;
      return [
        label,
        h ? h.perSecond : '-',
        h ? pct(h) : '-',
        h ? h.refused : '-',
        pct(near),
        `${near.requests - near.refused}/${near.refused}`,
        pct(far),
        `${far.requests - far.refused}/${far.refused}`,
        codesOf(near, far, h),
        near.lost + far.lost + (h?.lost ?? 0),
        await split(ng!, from, replicas),
        load(),
      ];
    };
    await ng.setReplicas(ring);
    const rows2: (string | number)[][] = [];
    rows2.push(await scenario('quiet only', undefined));
    rows2.push(await scenario(`+ hot repo on A, ${hotClients} clients`, shardKeys(1)));
    for (const n of [3, 12]) rows2.push(await scenario(`  spread ×${n} (keys on ${shardHomes(n)})`, shardKeys(n)));
    rows2.push(await scenario(`+ hot repo on A, ${floodClients} clients`, shardKeys(1), floodClients));
    rows2.push(await scenario(`  spread ×12 (keys on ${shardHomes(12)})`, shardKeys(12), floodClients));
    console.log(
      `\n2. 20 quiet repos (1 client each, a query every ${QUIET_PAUSE_MS} ms; ${nearHot.length} of them on A, the hot repo's replica) ` +
        `and 1 hot repo, 3 replicas, ${phaseSeconds} s each${pin ? ', A on CPU 0, B and C on CPU 1' : ''}`,
    );
    console.log(
      table(
        [
          'scenario',
          'hot req/s',
          'hot p50/p99 ms',
          'hot refused',
          'quiet on A p50/p99',
          'ok/refused',
          'quiet on B, C p50/p99',
          'ok/refused',
          'refusals',
          'lost',
          'requests per replica',
          'load average after',
        ],
        rows2,
      ),
    );
  }

  // What the replicas said went wrong, if anything (refusals are explained here).
  for (const [i, r] of replicas.entries()) {
    const bad = new Map<string, number>();
    for (const rec of r.daemon.logs.slice(logsFrom[i])) {
      if (Number(rec.level) < 40) continue;
      const what = [rec.msg, rec.code, rec.err && typeof rec.err === 'object' ? (rec.err as { message?: string }).message : rec.err].filter(Boolean).join(': ');
      bad.set(what, (bad.get(what) ?? 0) + 1);
    }
    if (bad.size) console.log(`replica ${r.name} warnings: ${[...bad].map(([m, n]) => `${m} ×${n}`).join('; ')}`);
  }
  console.log(`\n(load average at the end: ${load()} on ${cpus().length} CPUs)`);
} finally {
  await ng?.stop();
  for (const r of replicas) {
    await r.daemon.stop();
    r.daemon.cleanup();
  }
}
