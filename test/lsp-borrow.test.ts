// A one-file commit with unchanged lockfiles (?base=) is served from its base's
// fetched packages at once (src/fetch/borrow.ts): its warm session starts once, with
// them, and is not restarted when the head's own copy lands; the registry is asked
// nothing. bench/monorepo on playwright: the head's sessions were warmed before the
// link of its base's node_modules (1.6-7.5 s) and started again once it landed, so its
// first dependency answer took 6.8-19.9 s. The test holds the head's copy
// (FetchManager.copyGate), so its session starts while it binds the base's dirs.
// Then the base is deleted: the session that bound the base's dirs is restarted on
// the head's own copy, which answers the same.
// Real daemon, real jail, real TS server, the test's npm registry on 127.0.0.1.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { startNpmRegistry, type NpmRegistry } from './helpers/npm-registry.js';
import { assertLeftPadDefinition } from './helpers/npm-dep.js';
import { cannotJail, fetchSettled, fixturesDir, getJson, shaOf, startLspd, tarOf, uploadFixture, waitFor, type Lspd } from './helpers/lsp-harness.js';

const skip = cannotJail();

describe('a head whose lockfiles did not change', { skip }, () => {
  let d: Lspd;
  let registry: NpmRegistry;
  let layer: string;
  const base = { org: 'acme', repo: 'npm-dep', sha: shaOf('borrow-base') };
  const head = { ...base, sha: shaOf('borrow-head') };
  const idOf = (r: typeof base) => `${r.org}/${r.repo}/${r.sha}`;
  const tsSessions = (r: typeof base) => d.lsp.pool.list().filter((s) => s.key.rootId === idOf(r) && s.row.name === 'typescript');
  const tsSpawns = async () => {
    const m = await d.metrics.registry.getSingleMetric('lspd_session_spawns_total')!.get();
    return m.values.filter((v) => v.labels.server === 'typescript').reduce((n, v) => n + v.value, 0);
  };

  before(async () => {
    registry = await startNpmRegistry();
    d = await startLspd({ env: { LSPD_NPM_REGISTRY: registry.url, LSPD_FETCH_REGISTRIES: registry.authority, LSPD_WARM_MAX_SESSIONS: '4' } });
    // The layer: index.js with a line added at its end (the question's position is unchanged).
    layer = mkdtempSync(join(tmpdir(), 'lspd-borrow-'));
    writeFileSync(join(layer, 'index.js'), readFileSync(join(fixturesDir, 'npm-dep', 'index.js'), 'utf8') + '// the head\n');
  });
  after(async () => {
    await d?.close();
    await registry?.close();
    if (layer) rmSync(layer, { recursive: true, force: true });
  });

  test('starts its session once, on its base’s packages, and keeps it when its own copy lands', async () => {
    await uploadFixture(d.url, base, 'npm-dep');
    assert.equal((await fetchSettled(d.url, base)).state, 'done');
    await assertLeftPadDefinition(d.url, base);
    const asked = registry.hits.length;
    const spawnsBefore = await tsSpawns();

    let letCopy!: () => void;
    const copyHeld = new Promise<void>((r) => (letCopy = r));
    d.fetcher.copyGate = () => copyHeld;
    const put = await fetch(`${d.url}/v1/roots/${head.org}/${head.repo}/${head.sha}?base=${base.sha}`, {
      method: 'PUT',
      headers: { 'content-type': 'application/x-tar' },
      body: Readable.toWeb(tarOf(layer)) as ReadableStream,
      duplex: 'half',
    } as RequestInit);
    assert.equal(put.status, 201, await put.text());

    // The warm-up starts the head's session while its copy is held: it binds the base's node_modules.
    assert.ok(await waitFor(() => tsSessions(head).some((s) => s.state.kind === 'ready'), 60_000), 'the head was warmed');
    const [warmed] = tsSessions(head);
    const baseDeps = d.store.depsDir(base);
    assert.ok(
      d.fetcher.serveBinds(head, '/src').every((b) => b.host.startsWith(`${baseDeps}/`)),
      JSON.stringify(d.fetcher.serveBinds(head, '/src')),
    );
    const during = (await getJson(d.url, `/v1/roots/${head.org}/${head.repo}/${head.sha}`)).body.fetch as { state: string; ecosystems: unknown[] };
    assert.equal(during.state, 'queued', 'its own copy is not made yet');
    assert.deepEqual(during.ecosystems, [{ ecosystem: 'npm', dir: '', state: 'done', reused: base.sha }]);
    const borrowed = await assertLeftPadDefinition(d.url, head);
    const loc = (borrowed.locations as { external?: boolean; read?: { from: string; path: string } }[]).find((l) => l.external)!;
    assert.equal(loc.read?.from, 'deps', JSON.stringify(loc));
    assert.match(loc.read!.path, /^npm\/top\/node_modules\/left-pad-lite\//, 'named as the head’s own copy will be');

    letCopy();
    assert.equal((await fetchSettled(d.url, head)).state, 'done');
    assert.ok(
      d.fetcher.serveBinds(head, '/src').every((b) => b.host.startsWith(`${d.store.depsDir(head)}/`)),
      'new sessions bind the head’s own copy',
    );
    await assertLeftPadDefinition(d.url, head);
    assert.deepEqual(tsSessions(head), [warmed], 'the same session: never restarted');
    assert.equal(warmed!.state.kind, 'ready');
    assert.equal((await tsSpawns()) - spawnsBefore, 1, 'one TS session started for the head');
    assert.equal(registry.hits.length, asked, 'the registry was asked nothing');
    // The file an answer names is read from the head's own copy.
    const read = await getJson(d.url, `/v1/roots/${head.org}/${head.repo}/${head.sha}/files/${loc.read!.path}?from=deps`);
    assert.equal(read.status, 200, JSON.stringify(read.body));

    // The base goes: the session that bound its dirs is replaced, on the head's copy.
    const del = await fetch(`${d.url}/v1/roots/${base.org}/${base.repo}/${base.sha}`, { method: 'DELETE' });
    assert.equal(del.status, 204);
    assert.ok(await waitFor(() => !tsSessions(head).includes(warmed!), 20_000), 'restarted once its base went');
    await assertLeftPadDefinition(d.url, head);
    assert.equal(registry.hits.length, asked);
  });
});
