// Scale-out as README "Scale-out" describes it, on the engine platform teams run:
// lspd replicas that share nothing (own data dir, own jail uid range, own port)
// behind nginx from Debian running images/nginx/lspd.conf, the configuration
// ingress-nginx renders from images/k8s/ingress.yaml (`hash
// $http_x_lspd_route_key consistent`). The test plays the Kubernetes endpoints
// controller: it polls each replica's /readyz and gives nginx the ready ones
// (`nginx -s reload`). Real git repos, pushed with `lspd push`, queried through
// lspd/client with real TypeScript and Python servers in their jails:
//   1. 30 repos over 3 replicas: every query of a repo reaches the replica that
//      holds its root (nginx's access log, each replica's listing and /metrics
//      agree), and none meets need_tree;
//   2. one replica stops: only its repos move, each answering after exactly one
//      upload by the client's `tree` callback; nobody else sees a 409 or uploads;
//   3. it comes back at the same address (its volume kept): its repos return with
//      no upload; a fourth replica joins: only repos that now hash to it move
//      (counted: about a quarter), and they recover the same way;
//   4. a replica whose jail canary fails is never ready: in the list it would get
//      its share and answer 503 not_ready (no passive check catches an answer),
//      so readiness decides the list, and through the gate it gets nothing;
//   5. a hot repo spread over several route keys (what README recommends for a
//      hot repo): `lspd push --spread` uploads under each, lspd/client's `spread`
//      queries land on each key's replica with no upload, and a repo pushed under
//      one key only is uploaded once to each other replica its keys reach.
// Bounded: small trees, pushes 6 and queries 4 at a time.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { LspdClient, LspdError, routeKey } from '../src/client/index.js';
import { spawnDaemon, tempDir, type Daemon } from './helpers/daemon.js';
import { chashPick, chashRing, startNginx, type AccessRecord, type Nginx } from './helpers/nginx.js';
import { gitRepo, makeTar, runCli } from './helpers/ops.js';
import { jailUidEnv } from './helpers/uids.js';

const ORG = 'scale';
const REPOS = 30;
/** Each replica's own jail uids, 256 of them, the same for a slot each time (C restarts in its own). */
const slotUids = new Map<number, ReturnType<typeof jailUidEnv>>();
const uidEnv = (slot: number) => slotUids.get(slot) ?? slotUids.set(slot, jailUidEnv(256)).get(slot)!;

interface Repo {
  name: string;
  key: string; // the route key, org/repo
  sha: string;
  dir: string;
  files: Record<string, string>;
  /** The definition query and the answer it must get. */
  query: { path: string; line: number; character: number };
  expect: { path: string; line: number };
}

/** Two files, one calling the other: TypeScript, every fifth one Python. */
function repoFiles(i: number): Pick<Repo, 'files' | 'query' | 'expect'> {
  const fn = `greet${i}`;
  if (i % 5 === 4) {
    const main = `from lib import ${fn}\n\nprint(${fn}("world"))\n`;
    return {
      files: { 'lib.py': `\n\ndef ${fn}(name: str) -> str:\n    return "hello " + name\n`, 'main.py': main },
      query: { path: 'main.py', line: 2, character: 'print('.length },
      expect: { path: 'lib.py', line: 2 },
    };
  }
  return {
    files: {
      'src/lib.ts': `// lib ${i}\nexport function ${fn}(name: string): string {\n  return 'hello ' + name;\n}\n`,
      'src/main.ts': `import { ${fn} } from './lib';\n\nconsole.log(${fn}('world'));\n`,
    },
    query: { path: 'src/main.ts', line: 2, character: 'console.log('.length },
    expect: { path: 'src/lib.ts', line: 1 },
  };
}

interface Replica {
  name: string;
  daemon: Daemon;
  /** host:port, as on nginx's server line */
  addr: string;
}

const addrOf = (d: Daemon) => new URL(d.url).host;

/** Sum of a Prometheus counter's samples whose labels include `labels`. */
function metricSum(text: string, name: string, labels: Record<string, string>): number {
  let sum = 0;
  for (const line of text.split('\n')) {
    const m = /^([a-z_]+)\{([^}]*)\} (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const have = Object.fromEntries([...m[2]!.matchAll(/(\w+)="([^"]*)"/g)].map((x) => [x[1], x[2]]));
    if (Object.entries(labels).every(([k, v]) => have[k] === v)) sum += Number(m[3]);
  }
  return sum;
}

async function metrics(r: Replica): Promise<{ queries: number; needTree: number; uploads: number }> {
  const text = await (await fetch(r.daemon.url + '/metrics')).text();
  return {
    queries: metricSum(text, 'lspd_http_request_seconds_count', { route: '/v1/code/lsp', status: '200' }),
    needTree: metricSum(text, 'lspd_http_request_seconds_count', { route: '/v1/code/lsp', status: '409' }),
    uploads: metricSum(text, 'lspd_upload_seconds_count', {}),
  };
}

/** The repos whose roots a replica holds, asked of it directly (not through nginx). */
async function listing(r: Replica): Promise<Set<string>> {
  const c = new LspdClient({ url: r.daemon.url });
  try {
    const out = new Set<string>();
    let after: string | undefined;
    for (;;) {
      const page = await c.listRoots({ limit: 100, ...(after ? { after } : {}) });
      for (const item of page.roots) if (item.root) out.add(`${item.root.org}/${item.root.repo}`);
      if (!page.next) return out;
      after = page.next;
    }
  } finally {
    await c.close();
  }
}

async function isReady(r: Replica): Promise<boolean> {
  try {
    return (await fetch(r.daemon.url + '/readyz')).status === 200;
  } catch {
    return false; // stopped: connection refused
  }
}

/** n at a time, in order of `items`. */
async function eachLimit<T>(items: readonly T[], n: number, fn: (t: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: n }, async () => {
      while (next < items.length) await fn(items[next++]!);
    }),
  );
}

/** The replica that finally answered a logged request (after any that refused the connection). */
const lastUpstream = (r: AccessRecord) => r.upstream.split(', ').pop()!;

describe('scale-out behind nginx (consistent hash on x-lspd-route-key)', { timeout: 900_000 }, () => {
  const repos: Repo[] = [];
  const replicas: Replica[] = [];
  const stopped: Replica[] = [];
  let ng: Nginx;
  /** Uploads the client's `tree` callback made, per repo. */
  const uploads = new Map<string, number>();
  /** Where each repo was answered in the last phase. */
  let home = new Map<string, string>();

  const start = async (name: string, slot: number, env: Record<string, string> = {}, dataDir?: string): Promise<Replica> => {
    const daemon = await spawnDaemon({ env: { ...uidEnv(slot), ...env }, timeoutMs: 90_000, ...(dataDir ? { dataDir } : {}) });
    const r = { name, daemon, addr: addrOf(daemon) };
    replicas.push(r);
    return r;
  };
  const byAddr = (addr: string) => replicas.find((r) => r.addr === addr)?.name ?? addr;

  /** The endpoints controller: nginx gets the replicas whose /readyz says 200. */
  async function gate(candidates: Replica[]): Promise<Replica[]> {
    const ready: Replica[] = [];
    for (const r of candidates) if (await isReady(r)) ready.push(r);
    await ng.setReplicas(ready.map((r) => r.addr));
    return ready;
  }

  /**
   * Query every repo of `which` once through nginx with the client, each with a
   * `tree` callback; check each answer; return the access-log records of the phase.
   */
  async function queryAll(which: Repo[]): Promise<AccessRecord[]> {
    const from = (await ng.accessLog()).length;
    const client = new LspdClient({ url: ng.url });
    try {
      await eachLimit(which, 4, async (r) => {
        const tree = async () => {
          uploads.set(r.name, (uploads.get(r.name) ?? 0) + 1);
          return makeTar(r.files);
        };
        const a = await client.lsp({ org: ORG, repo: r.name, sha: r.sha, op: 'definition', ...r.query }, { tree });
        const loc = a.locations?.[0];
        assert.equal(loc?.path, r.expect.path, `${r.key}: ${JSON.stringify(a)}`);
        assert.equal(loc?.range.start.line, r.expect.line, `${r.key}: ${JSON.stringify(a)}`);
      });
    } finally {
      await client.close();
    }
    const log = (await ng.accessLog()).slice(from);
    home = new Map();
    for (const rec of log) if (rec.method === 'POST' && rec.status === 200) home.set(rec.route_key, lastUpstream(rec));
    return log;
  }

  const uploadsNow = () => new Map(uploads);
  /** Repos whose callback uploaded since `before`, by how many times. */
  const uploadedSince = (before: Map<string, number>) =>
    new Map([...uploads].filter(([k, n]) => n !== (before.get(k) ?? 0)).map(([k, n]) => [k, n - (before.get(k) ?? 0)]));

  before(async () => {
    for (let i = 0; i < REPOS; i++) {
      const name = `r${String(i).padStart(2, '0')}`;
      const dir = tempDir(`lspd-scale-${name}-`);
      const spec = repoFiles(i);
      repos.push({ name, key: `${ORG}/${name}`, sha: gitRepo(dir, spec.files), dir, ...spec });
    }
    // Started together (their canaries run side by side); listed in order A, B, C.
    const started = await Promise.all(['A', 'B', 'C'].map((name, i) => start(name, i)));
    replicas.sort((x, y) => started.indexOf(x) - started.indexOf(y));
    for (const r of replicas) assert.ok(await isReady(r), `replica ${r.name} is not ready: the jail cannot run on this host`);
    ng = await startNginx(replicas.map((r) => r.addr));
  });

  after(async () => {
    await ng?.stop();
    for (const r of replicas) {
      if (r.daemon.child.exitCode === null && r.daemon.child.signalCode === null) await r.daemon.stop();
      r.daemon.cleanup();
    }
    for (const r of repos) rmSync(r.dir, { recursive: true, force: true });
  });

  it('1. pushes 30 repos with `lspd push`, and every query reaches the replica that holds the root', async (t) => {
    const t0 = performance.now();
    // Six at a time: each push is mostly a Node start (tsx, undici), CPU on a shared host.
    await eachLimit(repos, 6, async (r) => {
      const out = await runCli(['push', '--org', ORG, '--repo', r.name, '--url', ng.url], { cwd: r.dir, timeoutMs: 120_000 });
      assert.equal(out.code, 0, out.stderr);
      assert.match(out.stdout, new RegExp(`^stored ${r.key}@${r.sha}: 2 files`));
    });
    const pushes = (await ng.accessLog()).filter((x) => x.method === 'PUT');
    assert.equal(pushes.length, REPOS, 'one upload per repo');
    for (const p of pushes) assert.equal(p.status, 201);

    // Each root is on exactly one replica, the one nginx's hash names for its key.
    const held = new Map<string, string>();
    for (const r of replicas)
      for (const key of await listing(r)) {
        assert.ok(!held.has(key), `${key} on two replicas`);
        held.set(key, r.addr);
      }
    assert.equal(held.size, REPOS);
    for (const r of repos) assert.equal(held.get(r.key), chashPick(ng.replicas, r.key), `${r.key} is where the ring says`);
    for (const p of pushes) assert.equal(p.upstream, held.get(p.route_key), `${p.route_key} uploaded where it is held`);
    const share = replicas.map((x) => [...held.values()].filter((a) => a === x.addr).length);
    for (const n of share) assert.ok(n > 0, `every replica holds some repos: ${share}`);

    const t1 = performance.now();
    const log = await queryAll(repos);
    t.diagnostic(`pushes ${((t1 - t0) / 1000).toFixed(1)} s, first queries ${((performance.now() - t1) / 1000).toFixed(1)} s`);
    assert.equal(uploads.size, 0, 'no query met need_tree, so no upload');
    const queries = log.filter((x) => x.method === 'POST');
    assert.equal(queries.length, REPOS);
    for (const q of queries) {
      assert.equal(q.status, 200);
      assert.equal(q.upstream, held.get(q.route_key), `${q.route_key} answered by the replica that holds it`);
    }
    // Each replica counted exactly the queries of the repos it lists, and no 409.
    for (const r of replicas) {
      const m = await metrics(r);
      const mine = repos.filter((x) => held.get(x.key) === r.addr).length;
      assert.deepEqual(m, { queries: mine, needTree: 0, uploads: mine }, `replica ${r.name}`);
    }
  });

  it('2. a replica stops: only its repos move, each answering after one upload by the client', async () => {
    const c = replicas.find((r) => r.name === 'C')!;
    const before = new Map(home);
    const cRepos = repos.filter((r) => before.get(r.key) === c.addr);
    await c.daemon.stop();
    stopped.push(c);

    // Before anything notices: nginx's passive check (connection refused) skips C.
    const since = uploadsNow();
    const log = await queryAll(repos);
    const moved = uploadedSince(since);
    assert.deepEqual([...moved.keys()].sort(), cRepos.map((r) => r.name).sort(), "exactly C's repos uploaded");
    for (const [name, n] of moved) assert.equal(n, 1, `${name}: one upload`);
    const others = ['A', 'B'].map((n) => replicas.find((r) => r.name === n)!.addr);
    for (const r of repos) {
      const mine = log.filter((x) => x.route_key === r.key);
      const statuses = mine.map((x) => `${x.method} ${x.status}`);
      if (cRepos.includes(r)) {
        // 409 need_tree, the upload, the retry: all on the replica the ring gives without C.
        assert.deepEqual(statuses, ['POST 409', 'PUT 201', 'POST 200'], r.key);
        const to = chashPick(others, r.key);
        for (const x of mine) assert.equal(lastUpstream(x), to, `${r.key} moved to ${byAddr(to)}`);
      } else {
        assert.deepEqual(statuses, ['POST 200'], `${r.key}: no 409, no upload`);
        assert.equal(mine[0]!.upstream, before.get(r.key), `${r.key} stayed on ${byAddr(before.get(r.key)!)}`);
      }
    }

    // The endpoints controller drops C (its /readyz is gone): the same placement, no upload.
    assert.deepEqual(
      (await gate(replicas.filter((r) => r !== c))).map((r) => r.name),
      ['A', 'B'],
    );
    const since2 = uploadsNow();
    const again = await queryAll(cRepos);
    assert.equal(uploadedSince(since2).size, 0, 'the gated list places them where the passive check did');
    for (const x of again) assert.equal(x.upstream, chashPick(others, x.route_key));
  });

  it('3. the replica comes back (same address, same volume) with no upload; a fourth joins and takes about a quarter', async () => {
    const old = stopped.pop()!;
    replicas.splice(replicas.indexOf(old), 1);
    const c = await start('C', 2, { LSPD_LISTEN: old.addr }, old.daemon.dataDir);
    assert.equal(c.addr, old.addr);
    const abc = replicas.filter((r) => ['A', 'B', 'C'].includes(r.name));
    assert.deepEqual(
      (await gate(abc)).map((r) => r.name),
      ['A', 'B', 'C'],
    );
    const since = uploadsNow();
    await queryAll(repos);
    assert.equal(uploadedSince(since).size, 0, 'C still holds its roots: nothing to upload');
    const before = new Map(home);

    const d = await start('D', 3);
    assert.deepEqual(
      (await gate([...abc, d])).map((r) => r.name),
      ['A', 'B', 'C', 'D'],
    );
    const since2 = uploadsNow();
    const log = await queryAll(repos);
    const moved = uploadedSince(since2);
    for (const [name, n] of moved) assert.equal(n, 1, `${name}: one upload`);
    for (const r of repos) {
      const mine = log.filter((x) => x.route_key === r.key);
      if (moved.has(r.name)) {
        assert.deepEqual(
          mine.map((x) => `${x.method} ${x.status}`),
          ['POST 409', 'PUT 201', 'POST 200'],
          r.key,
        );
        for (const x of mine) assert.equal(x.upstream, d.addr, `${r.key} moved to D, not between old replicas`);
      } else {
        assert.deepEqual(
          mine.map((x) => `${x.method} ${x.status}`),
          ['POST 200'],
          `${r.key}: no 409, no upload`,
        );
        assert.equal(mine[0]!.upstream, before.get(r.key), `${r.key} stayed`);
      }
    }
    // Exactly the repos nginx's ring gives D moved. Counted over 30 keys the share
    // is binomial around D's share of the ring; over many keys that share is about
    // a quarter. (With these 30 names and random ports, more than 15 of 30 moving
    // happens in about 0.07% of port draws: the bound below catches a reshuffle,
    // which would move about three quarters.)
    const ring = chashRing(ng.replicas);
    assert.deepEqual(
      [...moved.keys()].sort(),
      repos
        .filter((r) => ring.pick(r.key) === d.addr)
        .map((r) => r.name)
        .sort(),
    );
    const sample = 20_000;
    let toD = 0;
    for (let k = 0; k < sample; k++) if (ring.pick(`org${k % 97}/repo-${k}`) === d.addr) toD++;
    assert.ok(toD / sample > 0.15 && toD / sample < 0.35, `D's share of the ring: ${(toD / sample).toFixed(3)}`);
    assert.ok(moved.size >= 1 && moved.size <= 15, `${moved.size} of ${REPOS} moved`);
    const m = await metrics(d);
    assert.deepEqual(m, { queries: moved.size, needTree: moved.size, uploads: moved.size }, 'D saw only its share');
    console.log(`# scale-out: a fourth replica took ${moved.size} of ${REPOS} repos (its ring share ${(toD / sample).toFixed(3)})`);
  });

  it('4. a replica whose jail canary fails is never ready and, through the readiness gate, gets no traffic', async () => {
    const e = await start('E', 4, { LSPD_BWRAP_PATH: '/nonexistent/bwrap' });
    const ready = (await (await fetch(e.daemon.url + '/readyz')).json()) as { ready: boolean; reason?: string };
    assert.equal(ready.ready, false);
    assert.match(ready.reason ?? '', /bwrap|bubblewrap/i);
    const four = replicas.filter((r) => r !== e);

    // Listed anyway (no readiness gate), it takes its share of repos: a query of
    // one is refused 503 not_ready there before anything else is looked at, so the
    // client sends no tree to a replica that cannot serve it. A passive check sees
    // answers, not failures, so it never marks E down: readiness has to decide the list.
    const all = [...four, e];
    await ng.setReplicas(all.map((r) => r.addr));
    const victim = Array.from({ length: 1000 }, (_, k) => `probe-${k}`).find((k) => chashPick(ng.replicas, `${ORG}/${k}`) === e.addr)!;
    const from = (await ng.accessLog()).length;
    const client = new LspdClient({ url: ng.url });
    const r0 = repos[0]!;
    try {
      const q = { org: ORG, repo: victim, sha: r0.sha, op: 'documentSymbols' as const, path: r0.query.path };
      await assert.rejects(client.lsp(q, { tree: () => makeTar(r0.files) }), (err: unknown) => err instanceof LspdError && err.code === 'not_ready');
    } finally {
      await client.close();
    }
    const probe = (await ng.accessLog()).slice(from);
    assert.deepEqual(
      probe.map((x) => `${x.method} ${x.status} ${byAddr(x.upstream)}`),
      ['POST 503 E'],
    );
    const eBefore = await metrics(e);

    // The gate, as a readinessProbe on /readyz: E is left out.
    assert.deepEqual(
      (await gate(all)).map((r) => r.name),
      ['A', 'B', 'C', 'D'],
    );
    const since = uploadsNow();
    const before = new Map(home);
    const log = await queryAll(repos);
    assert.equal(uploadedSince(since).size, 0, 'nothing moved');
    for (const x of log) {
      assert.equal(x.status, 200);
      assert.notEqual(x.upstream, e.addr);
      assert.equal(x.upstream, before.get(x.route_key));
    }
    assert.deepEqual(await metrics(e), eBefore, 'E saw nothing after the gate');
    assert.deepEqual(eBefore, { queries: 0, needTree: 0, uploads: 0 });
    assert.equal((await fetch(e.daemon.url + '/readyz')).status, 503, 'still not ready');
  });

  it('5. spreads a hot repo over its route keys: pushed under each, queried on each, quiet repos untouched', async () => {
    const ring = chashRing(ng.replicas);
    /** Query `r` with a client spreading it over n keys until every key was used; return the phase's log. */
    const spreadQueries = async (r: Repo, n: number): Promise<AccessRecord[]> => {
      const from = (await ng.accessLog()).length;
      const client = new LspdClient({ url: ng.url, spread: { [r.key]: n } });
      const seen = new Set<string>();
      try {
        for (let i = 0; i < 80 && seen.size < n; i++) {
          const tree = async () => {
            uploads.set(r.name, (uploads.get(r.name) ?? 0) + 1);
            return makeTar(r.files);
          };
          const a = await client.lsp({ org: ORG, repo: r.name, sha: r.sha, op: 'definition', ...r.query }, { tree });
          assert.equal(a.locations?.[0]?.path, r.expect.path);
          assert.equal(a.locations?.[0]?.range.start.line, r.expect.line);
          for (const x of (await ng.accessLog()).slice(from)) if (x.method === 'POST' && x.status === 200) seen.add(x.route_key);
        }
      } finally {
        await client.close();
      }
      assert.equal(seen.size, n, `every key of ${r.key} was used`);
      const log = (await ng.accessLog()).slice(from);
      for (const x of log) assert.equal(x.upstream, ring.pick(x.route_key), `${x.route_key} answered by its ring replica`);
      return log;
    };

    // A new repo, pushed under 3 keys: each upload lands on its key's replica.
    const dir = tempDir('lspd-scale-hot-');
    const hot: Repo = { name: 'hot', key: `${ORG}/hot`, dir, ...repoFiles(0), sha: '' };
    hot.sha = gitRepo(dir, hot.files);
    repos.push(hot); // removed with the others
    const keys = [0, 1, 2].map((k) => routeKey({ org: ORG, repo: 'hot' }, k));
    const from = (await ng.accessLog()).length;
    const out = await runCli(['push', '--org', ORG, '--repo', 'hot', '--spread', '3', '--url', ng.url], { cwd: dir, timeoutMs: 120_000 });
    assert.equal(out.code, 0, out.stderr);
    assert.deepEqual(
      out.stdout
        .trim()
        .split('\n')
        .map((l) => /\(route key (\S+)\)/.exec(l)?.[1]),
      keys,
    );
    const puts = (await ng.accessLog()).slice(from);
    assert.deepEqual(
      puts.map((x) => x.route_key),
      keys,
    );
    for (const x of puts) assert.equal(x.upstream, ring.pick(x.route_key));
    const homes = new Set(keys.map((k) => ring.pick(k)));
    for (const r of replicas) if (homes.has(r.addr)) assert.ok((await listing(r)).has(hot.key), `${r.name} holds the hot repo`);

    // Queried through a client that spreads it: every key used, no upload needed.
    const since = uploadsNow();
    const log = await spreadQueries(hot, 3);
    assert.equal(uploadedSince(since).size, 0);
    assert.ok(log.every((x) => keys.includes(x.route_key) && x.status === 200));

    // A repo pushed under its plain key only, then spread over 3: each replica its
    // other keys reach and that lacks the root gets it once (409, upload, answer).
    const r = repos.find((x) => x.name === 'r05')!;
    const rKeys = [0, 1, 2].map((k) => routeKey({ org: ORG, repo: r.name }, k));
    const holds = new Map<string, boolean>();
    for (const x of replicas) holds.set(x.addr, (await listing(x)).has(r.key));
    const lacking = new Set(rKeys.map((k) => ring.pick(k)).filter((a) => !holds.get(a)));
    const since2 = uploadsNow();
    const log2 = await spreadQueries(r, 3);
    assert.equal(uploadedSince(since2).get(r.name) ?? 0, lacking.size, `one upload per replica that lacked ${r.key}`);
    assert.deepEqual(new Set(log2.filter((x) => x.method === 'PUT').map((x) => x.upstream)), lacking);
    assert.equal(log2.filter((x) => x.status === 409).length, lacking.size);
  });
});
