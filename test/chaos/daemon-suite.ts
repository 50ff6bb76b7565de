// Faults around a real daemon (a child process, real jail, real TypeScript 7),
// while a load generator keeps queries going on several roots: SIGKILL of the
// language servers' process groups mid-request, a burst of 500 concurrent queries
// (bounded queueing: 503 + Retry-After past LSPD_MAX_QUEUED_QUERIES, RSS sampled),
// uploads racing deletes of one root, and last the daemon itself SIGKILLed during
// an upload, a fetch and queries, then restarted on the same data dir.
// Shared by daemon.test.ts (short) and chaos.long.ts (more of each).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync } from 'node:fs';
import http from 'node:http';
import { join } from 'node:path';
import { Agent } from 'undici';
import { packTar, walk } from '../store-helpers.js';
import { cannotJail } from '../helpers/lsp-harness.js';
import { CHAOS_ENV, fixtureTar, putTar, rootPath, shaOf, tsCall, tsLoad, tsRoots, uidRange, type Root } from './daemons.js';
import { spawnServing, type Serving } from '../helpers/daemon.js';
import { Figures, Load, percentile, report, rng, send, sleep, waitFor, type Call } from './harness.js';
import { startHangingServer, type HangingServer } from './hanging-server.js';
import { MiB, jailMachinery, jailProcs, killServerGroups, rssBytes, sampleRss } from './procs.js';

const TS_SERVER = /lib\/tsc --lsp/;
const MAX_QUEUED = 32;
const QUERY_TIMEOUT_MS = 20_000;

export interface DaemonSuiteOptions {
  label: string;
  slot: number;
  kills: number;
  bursts: number;
  raceRounds: number;
  /** Seconds of sustained load with a server kill every 15 s (0: skip). */
  soakSeconds?: number;
}

/** Files in a directory tree (regular files only). */
function countFiles(dir: string): number {
  let n = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) n += e.isDirectory() ? countFiles(join(dir, e.name)) : e.isFile() ? 1 : 0;
  return n;
}

/** Does disk agree with GET for `root`? Visible means whole: meta.json and every file of the tree. */
async function consistent(c: Serving, root: Root, files: number): Promise<'present' | 'absent'> {
  const dir = join(c.daemon.dataDir, 'roots', root.org, root.repo, root.sha);
  const get = await fetch(c.url + rootPath(root));
  await get.arrayBuffer();
  if (get.status === 404) {
    assert.ok(!existsSync(dir), `GET says absent but ${dir} exists`);
    return 'absent';
  }
  assert.equal(get.status, 200);
  assert.ok(existsSync(join(dir, 'meta.json')), 'a visible root has its meta.json');
  assert.equal(countFiles(join(dir, 'tree')), files, 'a visible root has every file');
  return 'present';
}

export function daemonSuite(o: DaemonSuiteOptions): void {
  describe(`chaos: a real daemon under load and faults (${o.label})`, { skip: cannotJail() }, () => {
    let c: Serving;
    let restarted: Serving | undefined;
    let registry: HangingServer;
    /** The upload held open when the daemon is killed (destroyed in after() whatever happened). */
    let held: http.ClientRequest | undefined;
    let roots: Root[] = [];
    const figures = new Figures();
    const rssAll: number[] = [];
    let rssTimer: NodeJS.Timeout | undefined;
    const env = () => ({
      LSPD_MAX_QUEUED_QUERIES: String(MAX_QUEUED),
      LSPD_QUERY_TIMEOUT_MS: String(QUERY_TIMEOUT_MS),
      // A fetch that can only hang: the registry accepts connections and never answers.
      LSPD_NPM_REGISTRY: registry.url,
      LSPD_FETCH_REGISTRIES: registry.authority,
    });

    before(async () => {
      registry = await startHangingServer();
      c = await spawnServing({ uids: uidRange(o.slot), env: { ...CHAOS_ENV, ...env() } });
      assert.equal(c.notReady, undefined, `the daemon must be ready: ${c.notReady}`);
      roots = await tsRoots(c.url, 3, `daemon-${o.label}`);
      for (const r of roots) assert.equal((await send(c.url, tsCall(r, 0), { timeoutMs: 30_000 })).status, 200, 'warm');
      rssTimer = setInterval(() => {
        const n = rssBytes((restarted ?? c).daemon.child.pid!);
        if (n > 0) rssAll.push(n);
      }, 250);
    });

    after(async () => {
      clearInterval(rssTimer);
      held?.destroy();
      for (const d of [restarted, c]) {
        if (!d) continue;
        if (d.daemon.child.exitCode === null && d.daemon.child.signalCode === null) await d.daemon.stop();
      }
      await registry?.close();
      if (c) {
        assert.ok(await waitFor(() => jailProcs(c.uids).length === 0, 10_000), `jail processes left: ${JSON.stringify(jailProcs(c.uids))}`);
        c.daemon.cleanup();
      }
    });

    const loadOn = (rs: Root[], f: Figures, extra: Partial<ConstructorParameters<typeof Load>[0]> = {}) =>
      new Load({
        url: c.url,
        next: tsLoad(rs),
        concurrency: 6,
        maxRequests: 100_000,
        maxMs: 10 * 60_000,
        timeoutMs: QUERY_TIMEOUT_MS + 10_000,
        figures: f,
        pauseMs: 5,
        ...extra,
      }).start();

    test('SIGKILL of the language servers’ process groups mid-request: clear 503s, then every root answers again', async (t) => {
      const f = new Figures();
      const load = loadOn(roots, f);
      let groups = 0;
      try {
        for (let k = 0; k < o.kills; k++) {
          await sleep(800);
          groups += killServerGroups(c.uids, TS_SERVER).length;
        }
        await sleep(1_000);
      } finally {
        await load.stop();
      }
      assert.ok(groups >= o.kills, `server process groups killed: ${groups}`);
      // A crash is a 503 the caller retries, never a 422 saying the server lacks the op.
      assert.equal(f.byCode['422 no_server'] ?? 0, 0, `a killed server was reported as unable to answer: ${f.line()}`);
      for (const r of roots) {
        const a = await send(c.url, tsCall(r, 0), { timeoutMs: 30_000 });
        f.add(a, 'after kills');
        assert.equal(a.status, 200, JSON.stringify(a.body));
      }
      const unavailable = f.byCode['503 server_unavailable'] ?? 0;
      f.fault(
        'SIGKILL of TypeScript server process groups under load',
        f.lost === 0 && f.wrong === 0,
        `${groups} groups killed, ${unavailable} in-flight queries answered 503 server_unavailable`,
      );
      report(t, `daemon ${o.label}: server kills`, f);
      figures.merge(f);
      assert.equal(f.lost, 0, f.lostWhy.join('\n'));
      assert.equal(f.wrong, 0, f.wrongWhy.join('\n'));
    });

    test(`a burst of 500 concurrent queries: bounded queueing (503 + Retry-After past ${MAX_QUEUED}), bounded memory`, async (t) => {
      const f = new Figures();
      const peaks: number[] = [];
      const after: number[] = [];
      const base = rssBytes(c.daemon.child.pid!);
      const lat: number[] = [];
      for (let b = 0; b < o.bursts; b++) {
        // A cold root (its session spawns during the burst) and the warm ones.
        const cold = (await tsRoots(c.url, 1, `burst-${o.label}-${b}`))[0]!;
        // definition and hover only: the burst is about admission, not about the costlier ops.
        const calls: Call[] = Array.from({ length: 500 }, (_, i) => tsCall(i % 5 === 4 ? roots[i % roots.length]! : cold, i % 2));
        const agent = new Agent({ connections: 500 });
        const rss = sampleRss(c.daemon.child.pid!, 25);
        const results = await Promise.all(calls.map((call) => send(c.url, call, { timeoutMs: QUERY_TIMEOUT_MS + 10_000, dispatcher: agent })));
        await agent.close();
        await sleep(500);
        const samples = rss.stop();
        peaks.push(Math.max(...samples));
        after.push(samples.at(-1)!);
        for (const r of results) {
          f.add(r, `burst ${b}`);
          if (r.outcome === 'answered') lat.push(r.ms);
        }
        await send(c.url, { method: 'DELETE', path: rootPath(cold) }, { timeoutMs: 20_000 });
      }
      const busy = f.byCode['503 busy'] ?? 0;
      const mib = (n: number) => Math.round(n / MiB);
      const note = `${f.answered} answered, ${busy} × 503 busy; RSS base ${mib(base)} MiB, peaks ${peaks.map(mib).join('/')} MiB, after ${after.map(mib).join('/')} MiB; p50 ${percentile(lat, 50)} ms, p99 ${percentile(lat, 99)} ms`;
      f.fault('burst of 500 concurrent queries', f.lost === 0, note);
      report(t, `daemon ${o.label}: bursts`, f);
      figures.merge(f);
      assert.equal(f.lost, 0, f.lostWhy.join('\n'));
      assert.equal(f.wrong, 0, f.wrongWhy.join('\n'));
      assert.ok(busy > 0, `the queue bound was reached: ${f.line()}`);
      assert.equal(f.noRetryAfter, 0, 'every 503 carries Retry-After');
      assert.ok(f.answered >= MAX_QUEUED, `at least the queue's worth answered: ${f.line()}`);
      assert.ok(Math.max(...peaks) - base < 256 * MiB, `RSS grew by ${mib(Math.max(...peaks) - base)} MiB during a burst`);
      if (after.length > 2) assert.ok(after.at(-1)! - after[1]! < 64 * MiB, `RSS keeps growing across bursts: ${after.map(mib).join(', ')} MiB`);
    });

    test('uploads racing deletes of one root: either whole or absent, and GET agrees with disk', async (t) => {
      const f = new Figures();
      const tar = await fixtureTar('ts-basic');
      const files = countFiles(join(c.daemon.dataDir, 'roots', roots[0]!.org, roots[0]!.repo, roots[0]!.sha, 'tree'));
      const r = rng(0xc4a05 + o.slot);
      const load = loadOn(roots, f, { concurrency: 2, pauseMs: 20 });
      const seen = { present: 0, absent: 0 };
      try {
        for (let round = 0; round < o.raceRounds; round++) {
          const key = { org: 'chaos', repo: 'race', sha: shaOf(`race-${o.label}-${round % 3}`) };
          const ops: Call[] = [
            { method: 'PUT', path: rootPath(key), raw: tar, headers: { 'content-type': 'application/x-tar' } },
            { method: 'DELETE', path: rootPath(key) },
            { method: 'PUT', path: rootPath(key), raw: tar, headers: { 'content-type': 'application/x-tar' } },
            { method: 'DELETE', path: rootPath(key) },
            tsCall(key, round),
          ];
          const results = await Promise.all(
            ops.map(async (op) => {
              await sleep(Math.floor(r() * 30));
              return send(c.url, op, { timeoutMs: QUERY_TIMEOUT_MS + 10_000 });
            }),
          );
          results.forEach((res, i) => f.add(res, `race ${round} op ${i}`));
          for (const res of results) assert.ok([200, 201, 204, 404, 409, 503].includes(res.status), `race answer ${res.status} ${JSON.stringify(res.body)}`);
          seen[await consistent(c, key, files)]++;
          assert.deepEqual(
            walk(c.daemon.dataDir).filter((p) => p.startsWith('staging/')),
            [],
            'nothing left in staging',
          );
        }
      } finally {
        await load.stop();
      }
      f.fault(
        'uploads racing deletes of one root',
        f.lost === 0,
        `${o.raceRounds} rounds: ${seen.present} ended present (whole), ${seen.absent} absent; GET agreed with disk every time`,
      );
      report(t, `daemon ${o.label}: upload/delete races`, f);
      figures.merge(f);
      assert.equal(f.lost, 0, f.lostWhy.join('\n'));
      assert.equal(f.wrong, 0, f.wrongWhy.join('\n'));
    });

    // The soak belongs to the long form only: the short form does not register it
    // (rather than listing it as skipped in npm test).
    if (o.soakSeconds)
      test('sustained load with a server kill every 15 s: nothing lost, RSS levels off', async (t) => {
        const f = new Figures();
        const seconds = o.soakSeconds ?? 0;
        const load = loadOn(roots, f, { concurrency: 8, pauseMs: 2, maxMs: seconds * 1000 });
        const rss: number[] = [];
        let kills = 0;
        try {
          for (let s = 1; s <= seconds; s++) {
            await sleep(1000);
            rss.push(rssBytes(c.daemon.child.pid!));
            if (s % 15 === 0) kills += killServerGroups(c.uids, TS_SERVER).length;
          }
        } finally {
          await load.stop();
        }
        // RSS is a sawtooth (V8 collects now and then): compare the peaks of the two halves.
        const h = Math.floor(rss.length / 2);
        const first = Math.max(...rss.slice(0, h));
        const second = Math.max(...rss.slice(h));
        const mib = (n: number) => Math.round(n / MiB);
        f.fault(
          'sustained load with periodic server kills',
          f.lost === 0,
          `${seconds} s, ${kills} server groups killed, ${f.answered} answered; RSS peak ${mib(first)} MiB in the first half, ${mib(second)} MiB in the second`,
        );
        report(t, `daemon ${o.label}: soak`, f);
        figures.merge(f);
        assert.equal(f.lost, 0, f.lostWhy.join('\n'));
        assert.equal(f.wrong, 0, f.wrongWhy.join('\n'));
        assert.ok(second - first < Math.max(32 * MiB, first * 0.15), `RSS keeps growing: peaks ${mib(first)} → ${mib(second)} MiB`);
      });

    test('the daemon SIGKILLed during an upload, a fetch and queries; restarted: roots intact, no staging, no orphans, sessions respawn', async (t) => {
      const f = new Figures();
      // An upload held open at 80 %.
      const big = await packTar(
        Array.from({ length: 1500 }, (_, i) => ({ name: `src/m${i % 20}/f${i}.ts`, data: `export const v${i} = "${'x'.repeat(2000)}";\n` })),
      );
      const crashKey = { org: 'chaos', repo: 'crash', sha: shaOf(`crash-${o.label}`) };
      const { hostname, port } = new URL(c.url);
      const up = (held = http.request({ hostname, port, method: 'PUT', path: rootPath(crashKey), headers: { 'content-type': 'application/x-tar' } }));
      up.on('error', () => {}); // the daemon dies under it
      up.write(big.subarray(0, Math.floor(big.length * 0.8)));
      assert.ok(await waitFor(() => walk(c.daemon.dataDir).filter((p) => p.startsWith('staging/')).length > 50, 20_000), 'the upload reached staging');
      // A fetch (a tree with an npm lockfile; the registry hangs, so it stays running).
      const npmKey = { org: 'chaos', repo: 'npm', sha: shaOf(`npm-${o.label}`) };
      const put = await putTar(c.url, npmKey, await fixtureTar('npm-dep'));
      const fetchState = (put.fetch as { state?: string } | undefined)?.state;
      let fetchNote = `fetch not exercised: the upload answered fetch.state=${fetchState} (the FETCH phase is not wired into the daemon's routes yet)`;
      if (fetchState === 'queued') {
        const running = await waitFor(async () => {
          const g = (await (await fetch(c.url + rootPath(npmKey))).json()) as { fetch?: { state?: string } };
          return g.fetch?.state === 'running';
        }, 15_000);
        fetchNote = running ? 'killed with a fetch running' : 'the fetch never showed running';
      }
      // Queries in flight.
      let killing = false;
      const load = loadOn(roots, f, { cutting: () => killing });
      await sleep(700);
      const before = new Map<string, number>();
      for (const r of [...roots, npmKey]) before.set(rootPath(r), ((await (await fetch(c.url + rootPath(r))).json()) as { files: number }).files);
      killing = true;
      await c.daemon.kill();
      up.destroy();
      await load.stop();
      const orphansGone = await waitFor(() => jailProcs(c.uids).length === 0, 5_000);
      assert.ok(orphansGone, `processes of the dead daemon's jails: ${JSON.stringify(jailProcs(c.uids))}`);
      assert.deepEqual(jailMachinery(c.uids), [], 'no bwrap or lspd-gate left');

      restarted = await spawnServing({ uids: uidRange(o.slot), env: { ...CHAOS_ENV, ...env() }, dataDir: c.daemon.dataDir });
      c = { ...c, url: restarted.url };
      assert.deepEqual(
        walk(restarted.daemon.dataDir).filter((p) => p.startsWith('staging/') || p.startsWith('trash/')),
        [],
        'staging and trash were emptied',
      );
      const crash = await fetch(restarted.url + rootPath(crashKey));
      await crash.arrayBuffer();
      assert.equal(crash.status, 404, 'the interrupted upload left no root');
      for (const [path, files] of before) {
        const g = await fetch(restarted.url + path);
        assert.equal(g.status, 200, `${path} survived`);
        assert.equal(((await g.json()) as { files: number }).files, files);
      }
      for (const r of roots) {
        const a = await send(restarted.url, tsCall(r, 1), { timeoutMs: 30_000 });
        f.add(a, 'after restart');
        assert.equal(a.status, 200, `sessions respawn on demand: ${JSON.stringify(a.body)}`);
      }
      assert.ok(
        restarted.daemon.logs.some((l) => l.msg === 'session ready'),
        'a new session started',
      );
      if (fetchState === 'queued') {
        // The fetch the crash interrupted is taken up again (once) by the new daemon.
        const resumed = await waitFor(async () => {
          const g = (await (await fetch(restarted!.url + rootPath(npmKey))).json()) as { fetch?: { state?: string } };
          return g.fetch?.state === 'running' || g.fetch?.state === 'queued';
        }, 15_000);
        assert.ok(resumed, 'the interrupted fetch is queued or running again after the restart');
        fetchNote += '; resumed after the restart';
      }
      f.fault('daemon SIGKILLed during an upload, a fetch and queries; restarted', true, `${f.cut} in-flight requests cut by the kill; ${fetchNote}`);
      report(t, `daemon ${o.label}: SIGKILL and restart`, f);
      figures.merge(f);
      assert.equal(f.lost, 0, f.lostWhy.join('\n'));
      assert.equal(f.wrong, 0, f.wrongWhy.join('\n'));
      // A clean stop of the restarted daemon leaves nothing either.
      assert.equal(await restarted.daemon.stop(), 0);
      assert.ok(await waitFor(() => jailProcs(c.uids).length === 0, 10_000), 'a clean stop leaves no jail process');
    });

    test('figures for the whole daemon suite', (t) => {
      const mib = (n: number) => Math.round(n / MiB);
      t.diagnostic(`daemon RSS over the suite: min ${mib(Math.min(...rssAll))} MiB, max ${mib(Math.max(...rssAll))} MiB, samples ${rssAll.length}`);
      report(t, `daemon ${o.label}: total`, figures);
      assert.equal(figures.lost, 0);
    });
  });
}
