// Issue 13, reproduction 3: one org's flood of queries on a slow root filled the
// global wait queue (LSPD_MAX_QUEUED_QUERIES) and another org's first query was
// answered 503 busy. Now each org waits within its share: the flooding org past it
// gets 503 busy with retry_after, the other org's queries are answered right.
// Twice, with two kinds of slow root, each slow for as long as the test needs:
//  - the real daemon (a child process, as operators run it), real jails, the real
//    TypeScript server; the root's npm dependencies are being fetched from a
//    registry that never answers, and queries may wait for it as long as they like
//    (LSPD_FETCH_WAIT_MS), so they wait for the fetch (they count as queued: before
//    shares they were not counted at all);
//  - the in-process daemon with a server that never answers initialize (the
//    never-init fault fake, as in the original reproduction: queries wait for the
//    server), the other org on the real TypeScript server.
// Also the session pool's share, at its own level (in-process daemon, real jail).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ServerRow } from '../src/lsp/servers/server-row.js';
import { rootId } from '../src/store/types.js';
import { startHangingServer, type HangingServer } from './chaos/hanging-server.js';
import { spawnDaemon, type Daemon } from './helpers/daemon.js';
import { scratchDir } from './helpers/fetch-env.js';
import {
  cannotJail,
  fixturesDir,
  getJson,
  lineOf,
  lspQuery,
  pidsOfUids,
  position,
  realRows,
  shaOf,
  startLspd,
  uploadDir,
  uploadFixture,
  waitFor,
  type Lspd,
} from './helpers/lsp-harness.js';
import { jailUids } from './helpers/uids.js';

const skip = cannotJail();
const FX = 'ts-basic';
/** This file's uids (310000-319999 are this work's). */
const DAEMON_UIDS = jailUids(64);
const POOL_UIDS = jailUids(64).base;
const FAKE_UIDS = jailUids(64).base;
const FLOOD = 300;
/** LSPD_MAX_QUEUED_QUERIES' default, and what one org alone may hold of it: all but the reserve, ceil(12% of 256). */
const MAX_QUEUED = 256;
const ADMITTED_ALONE = MAX_QUEUED - Math.ceil(MAX_QUEUED * 0.12);

const definitionOfGreet = { op: 'definition', path: 'src/app.ts', ...position(FX, 'src/app.ts', "greet('world')") };
const greetLine = lineOf(FX, 'src/greet.ts', 'export function greet');
type Loc = { path: string; range: { start: { line: number } } };

/** GET the root until its fetch runs (or 60 s pass); its fetch state then. */
async function fetchRunning(url: string, root: { org: string; repo: string; sha: string }): Promise<string> {
  let state = '';
  for (const until = Date.now() + 60_000; Date.now() < until && state !== 'running'; await new Promise((r) => setTimeout(r, 100))) {
    state = ((await getJson(url, `/v1/roots/${root.org}/${root.repo}/${root.sha}`)).body.fetch as { state: string }).state;
  }
  return state;
}

describe('reproduction 3: one org flooding a slow root does not starve another org', { skip }, () => {
  let d: Daemon;
  let registry: HangingServer;
  const slow = { org: 'flood', repo: 'slow', sha: shaOf('tenancy-slow') };
  const polite = { org: 'polite', repo: 'ts-basic', sha: shaOf('tenancy-polite') };

  before(async () => {
    registry = await startHangingServer();
    d = await spawnDaemon({
      env: {
        LSPD_JAIL_UID_BASE: String(DAEMON_UIDS.base),
        LSPD_JAIL_UID_COUNT: String(DAEMON_UIDS.count),
        LSPD_NPM_REGISTRY: registry.url,
        LSPD_FETCH_REGISTRIES: registry.authority,
        // The flood waits on the fetch for half its budget (an operator may let queries
        // wait that long: LSPD_FETCH_WAIT_MS): longer than this test.
        LSPD_QUERY_TIMEOUT_MS: '600000',
        LSPD_FETCH_WAIT_MS: '600000',
        LSPD_RESULT_CACHE_ENTRIES: '0',
      },
      timeoutMs: 60_000,
    });
    // The slow root: ts-basic with an npm lockfile whose registry hangs.
    const tree = scratchDir('lspd-tenancy-');
    cpSync(join(fixturesDir, FX), tree, { recursive: true });
    for (const f of ['package.json', 'package-lock.json']) cpSync(join(fixturesDir, 'npm-dep', f), join(tree, f));
    await uploadDir(d.url, slow, tree);
    await uploadFixture(d.url, polite, FX);
    const state = await fetchRunning(d.url, slow);
    assert.equal(state, 'running', "the slow root's fetch runs (and hangs)");
  });

  after(async () => {
    await d?.stop();
    await registry?.close();
    assert.deepEqual(pidsOfUids(DAEMON_UIDS.base, DAEMON_UIDS.count), [], 'no jail outlives the daemon');
    d?.cleanup();
  });

  test(`${FLOOD} concurrent queries of one org: past its share 503 busy with retry_after; the other org is answered right`, () =>
    floodWhileOtherOrgAsks(d.url, { ...slow, ...definitionOfGreet }, polite));
});

describe('reproduction 3 with a slow server: one that never finishes initialize (a fault fake; the other org runs the real one)', { skip }, () => {
  let d: Lspd;
  let tree: string;
  const slow = { org: 'flood', repo: 'never-ready', sha: shaOf('tenancy-never-ready') };
  const polite = { org: 'polite', repo: 'ts-basic', sha: shaOf('tenancy-polite-2') };
  before(async () => {
    const typescript = realRows().filter((r) => r.name === 'typescript');
    d = await startLspd({
      rows: [...typescript, neverInitRow()],
      env: {
        LSPD_JAIL_UID_BASE: String(FAKE_UIDS),
        // The flood waits for initialize, which never comes: longer than this test.
        LSPD_INITIALIZE_TIMEOUT_MS: '600000',
        LSPD_QUERY_TIMEOUT_MS: '600000',
        LSPD_SHUTDOWN_TIMEOUT_MS: '500',
        LSPD_RESULT_CACHE_ENTRIES: '0',
      },
    });
    tree = scratchDir('lspd-tenancy-go-');
    writeFileSync(join(tree, 'main.go'), 'package main\n\nfunc main() {}\n');
    await uploadDir(d.url, slow, tree);
    await uploadFixture(d.url, polite, FX);
  });
  after(() => d?.close());

  test(`${FLOOD} concurrent queries of one org on a server that never gets ready: the other org is answered right`, () =>
    floodWhileOtherOrgAsks(d.url, { ...slow, op: 'definition', path: 'main.go', line: 2, character: 5 }, polite));
});

/** A table row for the never-init fault fake, serving Go (which the real TypeScript row does not). */
function neverInitRow(): ServerRow {
  return {
    name: 'fake-never-init',
    languages: ['go'],
    argv: ['/usr/bin/node', '/opt/fakes/never-init.mjs'],
    env: {},
    binds: [{ host: join(fixturesDir, 'fake-servers'), at: '/opt/fakes' }],
    rootMarkers: [],
    readiness: { kind: 'progress' },
    encodings: ['utf-16'],
    maxInFlight: 8,
    probe: async () => ({ available: true, version: 'fake' }),
  };
}

/**
 * FLOOD queries of the slow root's org at once; then, while the admitted ones still
 * wait: every refused one was 503 busy with retry_after, and the other org's first
 * query and ten more at once are answered right. Per-org metrics say the same.
 */
async function floodWhileOtherOrgAsks(url: string, slowQuery: Record<string, unknown>, polite: { org: string; repo: string; sha: string }): Promise<void> {
  const org = String(slowQuery.org);
  const stop = new AbortController();
  const done: { status: number; body: Record<string, unknown>; retryAfter: string | null }[] = [];
  const flood = Array.from({ length: FLOOD }, () =>
    fetch(`${url}/v1/code/lsp`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(slowQuery), signal: stop.signal }).then(
      async (r) => void done.push({ status: r.status, body: (await r.json()) as Record<string, unknown>, retryAfter: r.headers.get('retry-after') }),
      () => undefined, // aborted at the end
    ),
  );
  try {
    // Every query past the flooder's share is answered at once; the admitted ones wait.
    assert.ok(await waitFor(() => done.length >= FLOOD - ADMITTED_ALONE, 120_000, 50), `only ${done.length} answered`);
    for (const r of done) {
      assert.equal(r.status, 503, JSON.stringify(r.body));
      assert.equal(r.body.error, 'busy');
      assert.equal(typeof r.body.retry_after, 'number');
      assert.ok(Number(r.retryAfter) >= 1, 'Retry-After header');
      assert.match(String(r.body.message), new RegExp(`Org ${org} already has \\d+ queries waiting .* kept for other orgs`));
    }

    // The other org, while the flood waits: its first query, then ten at once, each answered right.
    const first = await lspQuery(url, { ...polite, ...definitionOfGreet });
    assert.equal(first.status, 200, JSON.stringify(first.body));
    const answers = [first, ...(await Promise.all(Array.from({ length: 10 }, () => lspQuery(url, { ...polite, ...definitionOfGreet }))))];
    for (const a of answers) {
      assert.equal(a.status, 200, JSON.stringify(a.body));
      assert.deepEqual(
        (a.body.locations as Loc[]).map((l) => [l.path, l.range.start.line]),
        [['src/greet.ts', greetLine]],
      );
    }
    // The flooder is still held at its share meanwhile, and its admitted queries still wait.
    const more = await lspQuery(url, slowQuery);
    assert.equal(more.status, 503);
    assert.equal(more.body.error, 'busy');
    assert.equal(done.length, FLOOD - ADMITTED_ALONE, 'the admitted ones still wait (the root is slow)');

    const text = await (await fetch(`${url}/metrics`)).text();
    const metric = (line: string) => Number(new RegExp(`^${line.replace(/[{}]/g, '\\$&')} (\\d+)`, 'm').exec(text)?.[1] ?? NaN);
    assert.equal(metric(`lspd_org_refusals_total{org="${org}",reason="queue"}`), FLOOD - ADMITTED_ALONE + 1);
    assert.equal(metric(`lspd_org_queries_total{org="${org}"}`), FLOOD + 1);
    assert.equal(metric(`lspd_org_queries_total{org="${polite.org}"}`), answers.length);
    assert.doesNotMatch(text, new RegExp(`lspd_org_refusals_total\\{org="${polite.org}"`));
  } finally {
    stop.abort();
    await Promise.all(flood);
  }
}

describe("the session pool: an org keeps at most its share of sessions busy; idle ones are anyone's", { skip }, () => {
  let d: Lspd;
  const alpha = Array.from({ length: 4 }, (_, i) => ({ org: 'alpha', repo: 'pool', sha: shaOf(`shares-alpha-${i}`) }));
  const beta = Array.from({ length: 2 }, (_, i) => ({ org: 'beta', repo: 'pool', sha: shaOf(`shares-beta-${i}`) }));
  before(async () => {
    // 4 sessions: the reserve is 1.
    d = await startLspd({ env: { LSPD_MAX_SESSIONS: '4', LSPD_JAIL_UID_BASE: String(POOL_UIDS) } });
    await Promise.all([...alpha, ...beta].map((r) => uploadFixture(d.url, r, FX)));
  });
  after(() => d?.close());

  test('alone 3 of 4; another org gets the 4th; a freed one goes to the org under its share, evicting the idle one', async () => {
    const row = d.lsp.table.get('typescript')!;
    const pool = d.lsp.pool;
    const acquire = (r: { org: string; repo: string; sha: string }) => pool.acquire({ row, rootId: rootId(r), workspace: '', treeHostDir: d.store.treeDir(r) });
    const a = alpha.slice(0, 3).map(acquire);
    assert.throws(
      () => acquire(alpha[3]!),
      (err: Error & { code?: string }) => err.code === 'busy' && /Org alpha keeps 3 language-server sessions busy, its share/.test(err.message),
    );
    const b0 = acquire(beta[0]!);
    assert.equal(pool.size, 4);

    // alpha lets one session go idle: it may not make another busy (2 of 4 is past its share 4/3) ...
    a[0]!.release();
    assert.throws(() => acquire(alpha[3]!), { code: 'busy' });
    assert.throws(() => acquire(alpha[0]!), { code: 'busy' }, 'not even its own idle one');
    // ... but another query on a session alpha keeps busy costs nothing,
    const again = acquire(alpha[1]!);
    assert.equal(again.session, a[1]!.session);
    // and beta (1, under its share) gets a new one in the idle one's place.
    const b1 = acquire(beta[1]!);
    assert.equal(pool.size, 4);
    assert.deepEqual(pool.sessionsOf(rootId(alpha[0]!)), [], "alpha's idle session was stopped for beta");

    const refusals = (await d.metrics.orgRefusals.get()).values.find((v) => v.labels.org === 'alpha' && v.labels.reason === 'sessions')?.value;
    assert.equal(refusals, 3);
    const gauge = Object.fromEntries((await d.metrics.orgSessions.get()).values.map((v) => [v.labels.org, v.value]));
    assert.deepEqual(gauge, { alpha: 2, beta: 2 });
    // The sessions are real servers: one answers.
    await b1.session.whenReady(AbortSignal.timeout(60_000));
    assert.equal(b1.session.state.kind, 'ready');
    for (const l of [...a, again, b0, b1]) l.release();
  });
});
