// When a fetch ends, the sessions started without it are restarted and their
// successors warmed: those servers only. A polyglot root uploaded ?warm=false whose
// /ask woke pyright alone gets pyright again after the fetch, not TypeScript and bash
// too (bench/monorepo on playwright: /ask of a Python-only name started four servers,
// three of them by the warm-up that followed the fetch).
// Real daemon, real jail, real servers; the npm registry is the test's, on 127.0.0.1,
// held until the test lets it answer (so the fetch ends after pyright started); the
// Python index is the test's too.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { greetLib } from './helpers/dep-packages.js';
import { gatedRegistry, startNpmRegistry, type GatedRegistry, type NpmRegistry } from './helpers/npm-registry.js';
import { startPypiIndex, type PyIndex } from './helpers/pypi-index.js';
import { cannotJail, fetchSettled, fixturesDir, postJson, shaOf, startLspd, uploadDir, type Lspd } from './helpers/lsp-harness.js';

const skip = cannotJail();
const root = { org: 'acme', repo: 'polyglot-fetch', sha: shaOf('warm-restart') };

describe('the warm-up after a fetch', { skip }, () => {
  let d: Lspd;
  let registry: NpmRegistry;
  let gate: GatedRegistry;
  let index: PyIndex;
  let dir: string;
  const spawns = async () => {
    const m = await d.metrics.registry.getSingleMetric('lspd_session_spawns_total')!.get();
    return Object.fromEntries(m.values.filter((v) => v.value > 0).map((v) => [String(v.labels.server), v.value]));
  };

  before(async () => {
    registry = await startNpmRegistry();
    gate = await gatedRegistry(registry);
    index = await startPypiIndex([greetLib]);
    d = await startLspd({
      env: {
        LSPD_NPM_REGISTRY: gate.url,
        LSPD_PIP_INDEX_URL: index.url,
        LSPD_FETCH_REGISTRIES: `${gate.authority},${index.authority}`,
        LSPD_WARM_MAX_SESSIONS: '4',
      },
    });
    dir = mkdtempSync(join(tmpdir(), 'lspd-polyglot-fetch-'));
    cpSync(join(fixturesDir, 'ask-py'), dir, { recursive: true });
    writeFileSync(join(dir, 'requirements.txt'), `greet-lib==1.0.0 --hash=sha256:${index.sha256(index.wheelName(greetLib))}\n`);
    cpSync(join(fixturesDir, 'npm-dep'), join(dir, 'web'), { recursive: true });
    cpSync(join(fixturesDir, 'sh-basic'), join(dir, 'scripts'), { recursive: true });
    await uploadDir(d.url, root, dir, '?warm=false');
  });
  after(async () => {
    await d?.close();
    await gate?.close();
    await index?.close();
    await registry?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  test("warms again only the servers the fetch's end restarted", async () => {
    const r = await postJson(d.url, '/ask', { ...root, symbol: 'Server.close' });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.deepEqual(r.body.dependencies, { state: 'running', may_change: true }, 'answered while the npm fetch was held');
    assert.deepEqual(await spawns(), { pyright: 1 });

    gate.release();
    const view = await fetchSettled(d.url, root);
    assert.equal(view.state, 'done', JSON.stringify(view));
    // pyright was restarted (its session lacked the wheels) and its successor warmed.
    const until = Date.now() + 30_000;
    while (((await spawns()).pyright ?? 0) < 2 && Date.now() < until) await new Promise((res) => setTimeout(res, 50));
    // A warm-up plans every server it warms at once: a second look finds no other.
    await new Promise((res) => setTimeout(res, 1000));
    assert.deepEqual(await spawns(), { pyright: 2 });
    assert.deepEqual(
      d.lsp.pool.sessionsOf(`${root.org}/${root.repo}/${root.sha}`).map((s) => s.server),
      ['pyright'],
    );
  });
});
