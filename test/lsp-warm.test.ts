// Warm-up on upload (issue 15), in the real SERVE jail with the real servers: a
// TS + Python tree uploaded with no query gets both its sessions started and
// driven to readiness (GET shows them `ready`), and the first definitions then
// answer right without a spawn. The same tree uploaded with ?warm=false starts
// nothing, and its first query pays the cold start (the figures are printed).
// After a restart on the same data dir, the most recently used roots are warmed
// again (LSPD_WARM_ON_START_ROOTS) and the others are not. A commit's warm-up opens
// the files it changed against the repo's previous upload.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { appendFileSync, cpSync, mkdtempSync, rmSync, utimesSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { LspdClient } from '../src/client/index.js';
import { cpuBandwidthOf } from './helpers/cgroup.js';
import { skipOrFail } from './helpers/host.js';
import { cannotJail, fixturesDir, getJson, lineOf, lspQuery, position, shaOf, startLspd, tarOf, type Lspd } from './helpers/lsp-harness.js';

const skip = cannotJail();
const warmRoot = { org: 'acme', repo: 'warm', sha: shaOf('warm-on') };
const coldRoot = { org: 'acme', repo: 'warm', sha: shaOf('warm-off') };

async function spawns(d: Lspd): Promise<number> {
  return (await d.metrics.spawns.get()).values.reduce((n, v) => n + v.value, 0);
}

async function put(d: Lspd, root: typeof warmRoot, dir: string, query = ''): Promise<void> {
  const r = await fetch(`${d.url}/v1/roots/${root.org}/${root.repo}/${root.sha}${query}`, {
    method: 'PUT',
    headers: { 'content-type': 'application/x-tar' },
    body: Readable.toWeb(tarOf(dir)) as ReadableStream,
    duplex: 'half',
  } as RequestInit);
  assert.equal(r.status, 201, await r.text());
}

type Session = { server: string; state: string; workspace: string; documents: number };
const sessionsOf = async (d: Lspd, root: typeof warmRoot): Promise<Session[]> =>
  ((await getJson(d.url, `/v1/roots/${root.org}/${root.repo}/${root.sha}`)).body.sessions as Session[]).sort((a, b) => (a.server < b.server ? -1 : 1));

/** Poll GET until the root has `n` sessions, all ready (≤ 180 s: the warm-up budget, LSPD_WARM_TIMEOUT_MS 120 s, on a loaded host). */
async function readySessions(d: Lspd, root: typeof warmRoot, n: number): Promise<Session[]> {
  const until = Date.now() + 180_000;
  let seen: Session[] = [];
  while (Date.now() < until) {
    seen = await sessionsOf(d, root);
    if (seen.length === n && seen.every((x) => x.state === 'ready')) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  return seen;
}

describe('warm-up on upload', { skip }, () => {
  let d: Lspd;
  let tree: string;
  before(async () => {
    // Result cache off: the cold root's answers must come from its own session.
    d = await startLspd({ env: { LSPD_WARM_MAX_SESSIONS: '4', LSPD_RESULT_CACHE_ENTRIES: '0' } });
    tree = mkdtempSync(join(tmpdir(), 'lspd-warm-'));
    cpSync(join(fixturesDir, 'ts-basic'), join(tree, 'web'), { recursive: true });
    cpSync(join(fixturesDir, 'py-basic'), join(tree, 'tools'), { recursive: true });
  });
  after(async () => {
    await d?.close();
    if (tree) rmSync(tree, { recursive: true, force: true });
  });

  const tsDef = { op: 'definition', path: 'web/src/app.ts', ...position('ts-basic', 'src/app.ts', "greet('world')") };
  const pyDef = { op: 'definition', path: 'tools/pkg/app.py', ...position('py-basic', 'pkg/app.py', 'greet("world")') };
  type Loc = { path: string; range: { start: { line: number } } };
  const at = (a: Record<string, unknown>) => (a.locations as Loc[]).map((l) => `${l.path}:${l.range.start.line}`);

  test('?warm=false is refused when it is not a boolean', async () => {
    const r = await fetch(`${d.url}/v1/roots/${coldRoot.org}/${coldRoot.repo}/${coldRoot.sha}?warm=maybe`, {
      method: 'PUT',
      headers: { 'content-type': 'application/x-tar' },
      body: Readable.toWeb(tarOf(tree)) as ReadableStream,
      duplex: 'half',
    } as RequestInit);
    assert.equal(r.status, 400);
    assert.equal(((await r.json()) as { error: string }).error, 'bad_request');
  });

  test('an upload with no query gets its TS and Python sessions ready; the first definitions spawn nothing', async (t) => {
    // Through lspd/client's `warm: false` (what `lspd push --no-warm` sends).
    const client = new LspdClient({ url: d.url });
    try {
      assert.equal((await client.putRoot(coldRoot, () => tarOf(tree), { warm: false })).created, true);
    } finally {
      await client.close();
    }
    await put(d, warmRoot, tree);
    const seen = await readySessions(d, warmRoot, 2);
    assert.deepEqual(
      seen.map((s) => s.state),
      ['ready', 'ready'],
      JSON.stringify(seen),
    );
    assert.deepEqual(
      (await sessionsOf(d, warmRoot)).map((s) => `${s.server}@${s.workspace}`),
      ['pyright@tools', 'typescript@web'],
    );
    const warmed = (await d.metrics.warmups.get()).values.filter((v) => v.labels.result === 'ready' || v.labels.result === 'incomplete');
    assert.deepEqual(warmed.map((v) => v.labels.server).sort(), ['pyright', 'typescript']);
    // Planned before the warm root's, the ?warm=false root was never started.
    assert.deepEqual(await sessionsOf(d, coldRoot), []);

    const before = await spawns(d);
    const ts = await lspQuery(d.url, { ...warmRoot, ...tsDef });
    const py = await lspQuery(d.url, { ...warmRoot, ...pyDef });
    assert.equal(ts.status, 200, JSON.stringify(ts.body));
    assert.equal(py.status, 200, JSON.stringify(py.body));
    assert.equal(await spawns(d), before, 'the first definitions ran on the warmed sessions');
    assert.deepEqual(at(ts.body), [`web/src/greet.ts:${lineOf('ts-basic', 'src/greet.ts', 'export function greet')}`]);
    assert.deepEqual(at(py.body), [`tools/pkg/greet.py:${lineOf('py-basic', 'pkg/greet.py', 'def greet')}`]);
    assert.equal(ts.body.incomplete, false);
    assert.equal(py.body.incomplete, false);

    // The same tree, not warmed: its first definitions start both servers.
    const tsCold = await lspQuery(d.url, { ...coldRoot, ...tsDef });
    const pyCold = await lspQuery(d.url, { ...coldRoot, ...pyDef });
    assert.equal(tsCold.status, 200, JSON.stringify(tsCold.body));
    assert.equal(pyCold.status, 200, JSON.stringify(pyCold.body));
    assert.equal(await spawns(d), before + 2);
    assert.deepEqual(at(tsCold.body), at(ts.body));
    assert.deepEqual(at(pyCold.body), at(py.body));
    // Each server started without its jail's own CPU cap, and has it from its first
    // answer on: a warm-up's nudge, or the cold root's first definition.
    assert.ok(d.jail.cpuCapped || skipOrFail('the host delegates no CPU controller') !== undefined, 'CPU cap in force');
    if (d.jail.cpuCapped) {
      const cap = (d.config.jailCpuMillis / 1000) * 100_000; // quota per the kernel's 100 ms period
      const quotas = d.lsp.pool.list().map((s) => `${s.key.rootId} ${s.row.name} ${cpuBandwidthOf(s.pid!).quotaUs}`);
      const expected = [warmRoot, coldRoot].flatMap((r) => ['pyright', 'typescript'].map((server) => `${r.org}/${r.repo}/${r.sha} ${server} ${cap}`));
      assert.deepEqual(quotas.sort(), expected.sort());
    }
    // A warm query's p50 on the warmed root, for comparison (cache off: each goes to the server).
    const p50 = async (q: Record<string, unknown>) => {
      const ms: number[] = [];
      for (let i = 0; i < 5; i++) ms.push((await lspQuery(d.url, { ...warmRoot, ...q })).body.elapsed_ms as number);
      return ms.sort((a, b) => a - b)[2];
    };
    t.diagnostic(`warm query p50 elapsed_ms: TS ${await p50(tsDef)}, Python ${await p50(pyDef)}`);
    t.diagnostic(
      `first definition elapsed_ms: warmed TS ${ts.body.elapsed_ms}, Python ${py.body.elapsed_ms}; cold TS ${tsCold.body.elapsed_ms}, Python ${pyCold.body.elapsed_ms}`,
    );
  });
});

describe('warm-up of a new commit', { skip }, () => {
  const first = { org: 'acme', repo: 'changes', sha: shaOf('changes-1') };
  const second = { org: 'acme', repo: 'changes', sha: shaOf('changes-2') };
  let d: Lspd;
  let tree: string;
  before(async () => {
    d = await startLspd({ env: { LSPD_WARM_MAX_SESSIONS: '4', LSPD_WARM_OPEN_FILES: '2' } });
    tree = mkdtempSync(join(tmpdir(), 'lspd-warm-changes-'));
    cpSync(join(fixturesDir, 'ts-basic'), tree, { recursive: true });
  });
  after(async () => {
    await d?.close();
    if (tree) rmSync(tree, { recursive: true, force: true });
  });

  test('opens the files the commit changed against the repo previous upload, beside its largest', async () => {
    await put(d, first, tree, '?warm=false');
    // The next commit changes one small file; with 2 files a workspace, the warm-up opens
    // the largest (src/greet.ts) and that one, not the next largest (src/app.ts).
    appendFileSync(join(tree, 'src/emoji.ts'), '// changed in the second commit\n');
    await put(d, second, tree);
    const seen = await readySessions(d, second, 1);
    assert.deepEqual(
      seen.map((s) => `${s.server}:${s.state}:${s.documents}`),
      ['typescript:ready:2'],
      JSON.stringify(seen),
    );
    const session = d.lsp.pool.list().find((s) => s.key.rootId === `${second.org}/${second.repo}/${second.sha}`)!;
    assert.deepEqual(
      ['src/greet.ts', 'src/emoji.ts', 'src/app.ts'].map((p) => session.isOpen(p)),
      [true, true, false],
    );
    const before = await spawns(d);
    const r = await lspQuery(d.url, { ...second, op: 'hover', path: 'src/emoji.ts', ...position('ts-basic', 'src/emoji.ts', 'wave') });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(await spawns(d), before, 'answered by the warmed session');
  });
});

describe('warm-up after a restart', { skip }, () => {
  const recent = { org: 'acme', repo: 'restart', sha: shaOf('restart-recent') };
  const older = { org: 'acme', repo: 'restart', sha: shaOf('restart-older') };
  let dataDir: string;
  let d: Lspd | undefined;
  before(() => {
    dataDir = mkdtempSync(join(tmpdir(), 'lspd-warm-restart-'));
  });
  after(async () => {
    await d?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  test('the most recently used root is warmed on start, with no query; an older one is not', async () => {
    const env = { LSPD_WARM_MAX_SESSIONS: '4', LSPD_WARM_ON_START_ROOTS: '1' };
    d = await startLspd({ env, dataDir });
    await put(d, older, join(fixturesDir, 'ts-basic'), '?warm=false');
    await put(d, recent, join(fixturesDir, 'ts-basic'), '?warm=false');
    // Used order survives the restart through meta.json's mtime (whole seconds on some file systems).
    const past = new Date(Date.now() - 3_600_000);
    utimesSync(join(dataDir, 'roots', older.org, older.repo, older.sha, 'meta.json'), past, past);
    assert.deepEqual(await sessionsOf(d, recent), [], 'not warmed on upload (?warm=false)');
    await d.close();

    d = await startLspd({ env, dataDir });
    const seen = await readySessions(d, recent, 1);
    assert.deepEqual(
      seen.map((s) => `${s.server}@${s.workspace}:${s.state}`),
      ['typescript@:ready'],
    );
    assert.deepEqual(await sessionsOf(d, older), [], 'past LSPD_WARM_ON_START_ROOTS');
    const before = await spawns(d);
    const ts = await lspQuery(d.url, { ...recent, op: 'definition', path: 'src/app.ts', ...position('ts-basic', 'src/app.ts', "greet('world')") });
    assert.equal(ts.status, 200, JSON.stringify(ts.body));
    assert.equal(await spawns(d), before, 'the first definition after the restart ran on the warmed session');
  });
});
