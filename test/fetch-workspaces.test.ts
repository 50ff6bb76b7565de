// A fetch is per workspace (issue 26), in the real daemon with the real FETCH and
// SERVE jails, a hermetic npm registry and nothing else: a tree whose top npm
// workspace fetches while a Python workspace's index does not answer (a closed
// 127.0.0.1 port that IS an allowed registry) and a second npm workspace's lockfile
// names a host that is NOT allowed ends `partial`, each failure with its own
// reason; the next commit links the good workspace (no registry request; the same
// inode), and a head uploaded with `?base=` answers a definition into that
// dependency at once, with no fetch of its own.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { scratchDir } from './helpers/fetch-env.js';
import { cannotJail, fetchSettled, fixturesDir, lspQuery, position, shaOf, uploadDir, waitFor, type Lspd, startLspd } from './helpers/lsp-harness.js';
import { assertLeftPadDefinition } from './helpers/npm-dep.js';
import { startNpmRegistry, type NpmRegistry } from './helpers/npm-registry.js';
import { closedPort } from './helpers/ports.js';

const skip = cannotJail();
const root = (n: number) => ({ org: 'acme', repo: 'mono', sha: shaOf(`mono-${n}`) });

type Step = { ecosystem: string; dir: string; state: string; reason?: string; reused?: string };

/** npm-dep at the top; web/ locks its package on a host that is not allowed; utils/doclint pins a wheel. */
function monorepo(forbidden: number, extra: Record<string, string> = {}): string {
  const dir = scratchDir('lspd-ws-tree-');
  for (const f of ['package.json', 'package-lock.json', 'index.js']) copyFileSync(join(fixturesDir, 'npm-dep', f), join(dir, f));
  mkdirSync(join(dir, 'web'));
  copyFileSync(join(fixturesDir, 'npm-dep', 'package.json'), join(dir, 'web', 'package.json'));
  // Another integrity too: the job's npm cache holds the top workspace's tarball by its integrity, and would answer for it.
  const other = createHash('sha512').update('another left-pad-lite').digest('base64');
  const lock = readFileSync(join(fixturesDir, 'npm-dep', 'package-lock.json'), 'utf8')
    .replace('https://registry.npmjs.org/', `http://127.0.0.1:${forbidden}/`)
    .replace(/"integrity": "sha512-[^"]+"/, `"integrity": "sha512-${other}"`);
  writeFileSync(join(dir, 'web', 'package-lock.json'), lock);
  mkdirSync(join(dir, 'utils', 'doclint'), { recursive: true });
  writeFileSync(join(dir, 'utils', 'doclint', 'requirements.txt'), 'greet-lib==1.0.0\n');
  for (const [n, body] of Object.entries(extra)) writeFileSync(join(dir, n), body);
  return dir;
}

/** The definition of require('left-pad-lite') in index.js: it must land in the fetched package; the answer's `dependencies`. */
async function leftPadDefinition(url: string, r: ReturnType<typeof root>): Promise<{ state: string; error?: string }> {
  const a = await lspQuery(url, { ...r, op: 'definition', path: 'index.js', ...position('npm-dep', 'index.js', "require('left-pad-lite')", 9) });
  assert.equal(a.status, 200, JSON.stringify(a.body));
  const locs = a.body.locations as { external?: boolean; module?: string; version?: string }[];
  assert.ok(
    locs.some((l) => l.external === true && l.module === 'left-pad-lite' && l.version === '1.0.0'),
    JSON.stringify(a.body),
  );
  return a.body.dependencies as { state: string; error?: string };
}

describe('a fetch is per workspace: partial, reasons, reuse by workspace', { skip }, () => {
  let d: Lspd;
  let registry: NpmRegistry;
  let forbidden: number;
  let dataDir: string;
  let env: Record<string, string>;
  before(async () => {
    registry = await startNpmRegistry();
    const unreachable = await closedPort();
    forbidden = await closedPort();
    dataDir = mkdtempSync(join(tmpdir(), 'lspd-ws-'));
    env = {
      LSPD_NPM_REGISTRY: registry.url,
      LSPD_PIP_INDEX_URL: `http://127.0.0.1:${unreachable}/simple/`,
      LSPD_FETCH_REGISTRIES: `${registry.authority},127.0.0.1:${unreachable}`,
      // The head's first query waits for its link however loaded the host is; what is asserted is counted.
      LSPD_FETCH_WAIT_MS: '30000',
    };
    d = await startLspd({ env, dataDir });
  });
  after(async () => {
    await d?.close();
    rmSync(dataDir, { recursive: true, force: true });
    await registry?.close();
  });

  const step = (f: object, ecosystem: string, dir: string) =>
    ((f as { ecosystems?: Step[] }).ecosystems ?? []).find((s) => s.ecosystem === ecosystem && s.dir === dir)!;
  const nodeModules = (k: ReturnType<typeof root>) => join(d.store.depsDir(k), 'npm', 'top', 'node_modules', 'left-pad-lite', 'package.json');

  test('one good workspace beside an unreachable and a not-allowed one: partial, two reasons; the next commits link the good one', async () => {
    await uploadDir(d.url, root(1), monorepo(forbidden));
    const one = await fetchSettled(d.url, root(1), 180_000);
    assert.equal(one.state, 'partial', JSON.stringify(one));
    assert.equal(step(one, 'npm', '').state, 'done');
    const py = step(one, 'python', 'utils/doclint');
    const web = step(one, 'npm', 'web');
    assert.equal(py.state, 'failed', JSON.stringify(one));
    assert.equal(web.state, 'failed', JSON.stringify(one));
    // An allowed host that does not answer, and a host the proxy refused: two different reasons.
    assert.match(py.reason!, /could not be reached/, JSON.stringify(py));
    assert.doesNotMatch(py.reason!, /not an allowed/);
    assert.match(web.reason!, /not an allowed registry/, JSON.stringify(web));
    assert.match(one.error!, /python in utils\/doclint: [^.]*could not be reached/);
    assert.match(one.error!, /npm in web: [^.]*not an allowed/);
    assert.ok(
      registry.hits.some((h) => h.endsWith('.tgz')),
      'the good workspace fetched',
    );
    // The top workspace's packages are served; the answer says its ecosystem is partial, and why.
    const deps = await leftPadDefinition(d.url, root(1));
    assert.equal(deps.state, 'partial');
    assert.match(deps.error!, /^web: [^.]*not an allowed registry/);

    // The next commit, uploaded whole: its top workspace's inputs are unchanged, so it is linked, not fetched.
    const hits = registry.hits.length;
    await uploadDir(d.url, root(2), monorepo(forbidden, { 'extra.js': 'module.exports = 2;\n' }));
    const two = await fetchSettled(d.url, root(2), 180_000);
    assert.equal(two.state, 'partial', JSON.stringify(two));
    assert.equal(step(two, 'npm', '').reused, root(1).sha, JSON.stringify(two));
    assert.equal(step(two, 'python', 'utils/doclint').state, 'failed', 'a failed workspace is fetched again, never linked');
    assert.equal(registry.hits.length, hits, 'no registry request for the linked workspace');
    assert.equal(statSync(nodeModules(root(2))).ino, statSync(nodeModules(root(1))).ino, "a link to the first commit's file");

    // A head on it, one file changed: the top workspace is linked from its base, the failed ones are tried again.
    const layer = scratchDir('lspd-ws-layer-');
    writeFileSync(join(layer, 'extra2.js'), 'module.exports = 3;\n');
    await uploadDir(d.url, root(3), layer, `?base=${root(2).sha}`);
    const three = await fetchSettled(d.url, root(3), 180_000);
    assert.equal(three.state, 'partial', JSON.stringify(three));
    assert.equal(step(three, 'npm', '').reused, root(2).sha, 'its base first');
    assert.equal(statSync(nodeModules(root(3))).ino, statSync(nodeModules(root(1))).ino);
    assert.equal(registry.hits.length, hits, 'no registry request for the head');
    assert.equal((await leftPadDefinition(d.url, root(3))).state, 'partial');
  });

  test('a head with unchanged lockfiles answers a dependency definition at once, with no fetch of its own', async (t) => {
    const base = { org: 'acme', repo: 'clean', sha: shaOf('clean-1') };
    const head = { org: 'acme', repo: 'clean', sha: shaOf('clean-2') };
    const other = { org: 'other', repo: 'clean', sha: shaOf('clean-2') };
    const tree = scratchDir('lspd-ws-clean-');
    for (const f of ['package.json', 'package-lock.json', 'index.js']) copyFileSync(join(fixturesDir, 'npm-dep', f), join(tree, f));
    await uploadDir(d.url, base, tree);
    assert.equal((await fetchSettled(d.url, base, 180_000)).state, 'done');
    const hits = registry.hits.length;
    const layer = scratchDir('lspd-ws-layer-');
    writeFileSync(join(layer, 'extra.js'), 'module.exports = 1;\n');
    const t0 = performance.now();
    await uploadDir(d.url, head, layer, `?base=${base.sha}`);
    const t1 = performance.now();
    // The first query after the upload: the link is made before it is answered, never behind a fetch slot.
    await assertLeftPadDefinition(d.url, head);
    t.diagnostic(
      `head: upload ${(t1 - t0).toFixed(0)} ms, then its first dependency definition ${(performance.now() - t1).toFixed(0)} ms (session cold start included)`,
    );
    assert.equal(registry.hits.length, hits, 'no registry request');
    const view = await fetchSettled(d.url, head);
    assert.equal(view.state, 'done');
    assert.equal(step(view, 'npm', '').reused, base.sha);
    assert.doesNotMatch(view.log ?? '', /npm ci/, 'no fetcher ran for it');

    // Never across orgs: the same tree under another org fetches its own.
    await uploadDir(d.url, other, tree);
    const theirs = await fetchSettled(d.url, other, 180_000);
    assert.equal(theirs.state, 'done');
    assert.equal(step(theirs, 'npm', '').reused, undefined);
    assert.ok(registry.hits.length > hits, 'the other org downloaded');
  });

  test("a head uploaded while its base still fetches waits for the base's fetch, holding no slot, and links it", async () => {
    const base = { org: 'acme', repo: 'early', sha: shaOf('early-1') };
    const head = { org: 'acme', repo: 'early', sha: shaOf('early-2') };
    const tree = scratchDir('lspd-ws-early-');
    for (const f of ['package.json', 'package-lock.json', 'index.js']) copyFileSync(join(fixturesDir, 'npm-dep', f), join(tree, f));
    const tarballs = () => registry.hits.filter((h) => h.endsWith('.tgz')).length;
    const before = tarballs();
    await uploadDir(d.url, base, tree);
    const layer = scratchDir('lspd-ws-layer-');
    writeFileSync(join(layer, 'extra.js'), 'module.exports = 1;\n');
    await uploadDir(d.url, head, layer, `?base=${base.sha}`);
    const h = await fetchSettled(d.url, head, 180_000);
    assert.equal(h.state, 'done', JSON.stringify(h));
    assert.equal(step(h, 'npm', '').reused, base.sha, JSON.stringify(h));
    assert.equal((await fetchSettled(d.url, base, 180_000)).state, 'done');
    // At most the base's one: none when acme's package store holds it from an earlier test.
    assert.ok(tarballs() <= before + 1, `${tarballs() - before} downloads; at most one, by the base`);
    await assertLeftPadDefinition(d.url, head);
  });

  test('after a restart: partial and reused are read back, and the linked packages still answer', async () => {
    await d.close();
    d = await startLspd({ env, dataDir });
    // The daemon reads the state files back after it starts listening.
    const back = () => [1, 2].every((n) => d.fetcher.state(root(n)).state !== 'none');
    assert.ok(await waitFor(back, 60_000), 'the fetch states were read back');
    const one = await fetchSettled(d.url, root(1));
    assert.equal(one.state, 'partial', JSON.stringify(one));
    const two = await fetchSettled(d.url, root(2));
    assert.equal(step(two, 'npm', '').reused, root(1).sha, JSON.stringify(two));
    assert.equal((await leftPadDefinition(d.url, root(2))).state, 'partial');
  });
});
