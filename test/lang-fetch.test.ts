// The FETCH phase as queries see it, on one real daemon (real jails, real routes):
// - PUT queues a root's fetch; GET shows it; the list shows only {state, error}.
// - a query on a root still fetching what its server reads waits at most
//   LSPD_FETCH_WAIT_MS, then answers from the tree alone: an in-tree definition
//   lands, and the answer says `dependencies: {state: running, may_change: true}`;
// - a session started before the fetch finished is replaced after it, and the next
//   answer sees the dependency (external, with its version);
// - a failed fetch still serves the tree and says so in each answer; Python answers
//   say why its dependencies were not fetched (no lock).
// The npm registry is the test's, on 127.0.0.1 behind the egress proxy, and holds
// every request until the test lets it answer.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fixtures, scratchDir } from './helpers/fetch-env.js';
import { buildGoProxy } from './helpers/go-proxy.js';
import { assertLeftPadDefinition } from './helpers/npm-dep.js';
import { gatedRegistry, startNpmRegistry, type GatedRegistry, type NpmRegistry } from './helpers/npm-registry.js';
import { cannotJail, fetchSettled, getJson, lspQuery, position, shaOf, startLspd, uploadDir, uploadFixture, type Lspd } from './helpers/lsp-harness.js';

const skip = cannotJail();

describe('FETCH as queries see it', { skip }, () => {
  let d: Lspd;
  let registry: NpmRegistry;
  let gate: GatedRegistry;
  const npmRoot = { org: 'acme', repo: 'npm-dep', sha: shaOf('fetch-wiring-npm') };
  const goBad = { org: 'acme', repo: 'go-bad-sum', sha: shaOf('fetch-wiring-go-bad') };
  const py = { org: 'acme', repo: 'py-basic', sha: shaOf('fetch-wiring-py') };

  before(async () => {
    registry = await startNpmRegistry();
    gate = await gatedRegistry(registry);
    const proxy = buildGoProxy(scratchDir('lspd-wiring-goproxy-'));
    d = await startLspd({
      env: {
        LSPD_NPM_REGISTRY: gate.url,
        LSPD_GO_PROXY: proxy,
        LSPD_FETCH_REGISTRIES: gate.authority,
      },
    });
  });
  after(async () => {
    await d?.close();
    await gate?.close();
    await registry?.close();
  });

  test('PUT queues the fetch, GET shows it; a query answers from the tree while the fetch is held, saying so', async () => {
    await uploadFixture(d.url, npmRoot, 'npm-dep');
    const path = `/v1/roots/${npmRoot.org}/${npmRoot.repo}/${npmRoot.sha}`;
    const got = await getJson(d.url, path);
    const f = got.body.fetch as { state: string; ecosystems?: { ecosystem: string; state: string }[] };
    assert.ok(['queued', 'running'].includes(f.state), JSON.stringify(f));
    assert.deepEqual(
      f.ecosystems?.map((e) => e.ecosystem),
      ['npm'],
    );

    // In-tree: leftPad's use lands on its declaration, with no dependency needed.
    const r = await lspQuery(d.url, { ...npmRoot, op: 'definition', path: 'index.js', ...position('npm-dep', 'index.js', 'leftPad(') });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.deepEqual(
      (r.body.locations as { path: string; range: { start: { line: number } } }[]).map((l) => `${l.path}:${l.range.start.line}`),
      ['index.js:0'],
    );
    assert.deepEqual(r.body.dependencies, { state: 'running', may_change: true });
    // The dependency's definition cannot land yet, and the answer says it may change.
    const dep = await lspQuery(d.url, { ...npmRoot, op: 'definition', path: 'index.js', ...position('npm-dep', 'index.js', "require('left-pad-lite')", 9) });
    assert.equal(dep.status, 200, JSON.stringify(dep.body));
    assert.ok(!(dep.body.locations as { external?: boolean }[]).some((l) => l.external), JSON.stringify(dep.body));
    assert.deepEqual(dep.body.dependencies, { state: 'running', may_change: true });
    // Both answered while the registry still held every request: nothing waited for the fetch.
    const still = (await getJson(d.url, path)).body.fetch as { state: string };
    assert.ok(['queued', 'running'].includes(still.state), JSON.stringify(still));
    assert.equal(d.lsp.pool.sessionsOf(`${npmRoot.org}/${npmRoot.repo}/${npmRoot.sha}`).length, 1, 'one session, on the tree alone');
  });

  test('a session started before the fetch finished is replaced after it; the answer then sees the package', async () => {
    const id = `${npmRoot.org}/${npmRoot.repo}/${npmRoot.sha}`;
    // The session the queries above started on the tree alone, while the fetch is held.
    const sessions = d.lsp.pool.list().filter((s) => s.key.rootId === id);
    assert.equal(sessions.length, 1);
    const before = sessions[0]!;

    gate.release();
    const view = await fetchSettled(d.url, npmRoot);
    assert.equal(view.state, 'done', JSON.stringify(view));
    assert.ok(['stopped', 'failed'].includes(before.state.kind) || !d.lsp.pool.list().includes(before), 'the old session was taken out');

    await assertLeftPadDefinition(d.url, npmRoot);
    assert.notEqual(
      d.lsp.pool.list().find((s) => s.key.rootId === id),
      before,
      'a fresh session answered',
    );
  });

  test('a failed fetch still serves the tree, and every answer says why', async () => {
    const tree = scratchDir('lspd-wiring-go-bad-');
    cpSync(join(fixtures, 'go-dep'), tree, { recursive: true });
    writeFileSync(join(tree, 'go.sum'), readFileSync(join(tree, 'go.sum'), 'utf8').replace(/dep v1\.0\.0 h1:.{4}/, 'dep v1.0.0 h1:AAAA'));
    await uploadDir(d.url, goBad, tree);
    const view = await fetchSettled(d.url, goBad);
    assert.equal(view.state, 'failed', JSON.stringify(view));
    const r = await lspQuery(d.url, { ...goBad, op: 'documentSymbols', path: 'main.go' });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    const dep = r.body.dependencies as { state: string; error?: string };
    assert.equal(dep.state, 'failed');
    assert.match(dep.error ?? '', /go\.sum/);
    assert.ok((r.body.symbols as { name: string }[]).some((s) => s.name === 'main'));

    // The list says where each fetch stands, and nothing more.
    const list = await getJson(d.url, '/v1/roots?limit=100');
    const entry = (list.body.roots as { root: { repo: string }; fetch: Record<string, unknown> }[]).find((x) => x.root.repo === goBad.repo)!;
    assert.deepEqual(Object.keys(entry.fetch).sort(), ['error', 'state']);
    assert.equal(entry.fetch.state, 'failed');
  });

  test('Python answers on a tree with no lock say its dependencies were not fetched', async () => {
    await uploadFixture(d.url, py, 'py-basic');
    const view = await fetchSettled(d.url, py);
    assert.equal(view.state, 'refused');
    const r = await lspQuery(d.url, { ...py, op: 'documentSymbols', path: 'pkg/greet.py' });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    const dep = r.body.dependencies as { state: string; error?: string };
    assert.equal(dep.state, 'refused');
    assert.match(dep.error ?? '', /Python dependencies were not fetched/);
  });
});
