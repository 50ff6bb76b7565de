// Definitions into fetched PHP and Python dependencies, on one real daemon (real
// jails, real intelephense and pyright, real routes). The Composer repository and
// the simple index are the test's, on 127.0.0.1 behind the egress proxy:
// - a tree with composer.lock and requirements.txt: GET shows each ecosystem's
//   state (Python's skipped sdist named); definition of a vendor class answers
//   `external` acme/greeter@1.0.0 with its file in vendor/; definition of an
//   imported function lands in the wheel, greet-lib@1.0.0;
// - a tree whose Python fetch failed (a hash that does not match) is still served,
//   and its answers say why.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startComposerRepo, type ComposerRepo } from './helpers/composer-repo.js';
import { composerTree, greeter, greetLib, onlySdist } from './helpers/dep-packages.js';
import { scratchDir } from './helpers/fetch-env.js';
import { startPypiIndex, type PyIndex } from './helpers/pypi-index.js';
import { cannotJail, fetchSettled, getJson, lspQuery, positionIn, shaOf, startLspd, uploadDir, type Lspd } from './helpers/lsp-harness.js';

const skip = cannotJail();

type Loc = { path: string; external?: boolean; module?: string; version?: string; preview?: string; range: { start: { line: number } } };

describe('definitions into fetched PHP and Python dependencies', { skip }, () => {
  let d: Lspd;
  let repo: ComposerRepo;
  let index: PyIndex;
  let both: string;
  const mixed = { org: 'acme', repo: 'deps-mixed', sha: shaOf('lang-deps-mixed') };
  const badHash = { org: 'acme', repo: 'deps-bad-hash', sha: shaOf('lang-deps-bad-hash') };

  before(async () => {
    repo = await startComposerRepo([greeter]);
    index = await startPypiIndex([greetLib, onlySdist]);
    both = composerTree(repo.lock(['acme/greeter']));
    const sha = index.sha256(index.wheelName(greetLib));
    writeFileSync(join(both, 'requirements.txt'), `greet-lib==1.0.0 --hash=sha256:${sha}\nonly-sdist==1.0\n`);
    writeFileSync(join(both, 'app.py'), 'from greet_lib import greet\n\nprint(greet("world"))\n');
    d = await startLspd({
      env: {
        LSPD_COMPOSER_REPO: repo.url,
        LSPD_PIP_INDEX_URL: index.url,
        LSPD_FETCH_REGISTRIES: `${repo.authority},${index.authority}`,
        LSPD_QUERY_TIMEOUT_MS: '60000',
      },
    });
  });
  after(async () => {
    await d?.close();
    await repo?.close();
    await index?.close();
  });

  test('GET on the root shows each ecosystem: composer done, Python done with the sdist named', async () => {
    await uploadDir(d.url, mixed, both);
    const view = await fetchSettled(d.url, mixed);
    assert.equal(view.state, 'done', JSON.stringify(view));
    const got = await getJson(d.url, `/v1/roots/${mixed.org}/${mixed.repo}/${mixed.sha}`);
    const f = got.body.fetch as { ecosystems: { ecosystem: string; dir: string; state: string; skipped?: string[] }[] };
    assert.deepEqual(
      f.ecosystems.map((e) => `${e.ecosystem}:${e.dir}:${e.state}`),
      ['composer::done', 'python::done'],
    );
    const py = f.ecosystems.find((e) => e.ecosystem === 'python')!;
    assert.equal(py.skipped?.length, 1);
    assert.match(py.skipped![0]!, /^only-sdist==1\.0: no wheel/);
    assert.ok(!index.hits.some((h) => h.endsWith('.tar.gz')), 'the sdist was never downloaded');
  });

  test('definition of a vendor class answers external acme/greeter@1.0.0, the file in vendor/', async () => {
    const r = await lspQuery(d.url, { ...mixed, op: 'definition', path: 'index.php', ...positionIn(both, 'index.php', 'new Greeter', 'new '.length) });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.server, 'intelephense');
    assert.equal(r.body.incomplete, false, JSON.stringify(r.body));
    assert.deepEqual(r.body.dependencies, { state: 'done' });
    const locs = r.body.locations as Loc[];
    assert.equal(locs.length, 1, JSON.stringify(r.body));
    const [loc] = locs;
    assert.equal(loc!.external, true, JSON.stringify(loc));
    assert.equal(loc!.module, 'acme/greeter');
    assert.equal(loc!.version, '1.0.0');
    assert.equal(loc!.path, 'src/Greeter.php');
    assert.equal(loc!.range.start.line, greeter.files['src/Greeter.php']!.split('\n').indexOf('class Greeter'));
    assert.match(loc!.preview ?? '', /class Greeter/);
    assert.ok(!JSON.stringify(r.body).includes(d.config.dataDir), 'no host path');
  });

  test('definition of an imported function lands in the fetched wheel, greet-lib@1.0.0', async () => {
    const r = await lspQuery(d.url, { ...mixed, op: 'definition', path: 'app.py', ...positionIn(both, 'app.py', 'greet("world")') });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.server, 'pyright');
    assert.equal(r.body.incomplete, false, JSON.stringify(r.body));
    const dep = r.body.dependencies as { state: string; skipped?: string[] };
    assert.equal(dep.state, 'done');
    assert.match(dep.skipped?.[0] ?? '', /^only-sdist==1\.0/);
    const locs = r.body.locations as Loc[];
    assert.ok(locs.length >= 1, JSON.stringify(r.body));
    for (const loc of locs) {
      assert.equal(loc.external, true, JSON.stringify(loc));
      assert.equal(loc.module, 'greet-lib');
      assert.equal(loc.version, '1.0.0');
    }
    const core = locs.find((l) => l.path === 'greet_lib/core.py');
    assert.ok(core, JSON.stringify(locs));
    assert.equal(core.range.start.line, 0);
    assert.match(core.preview ?? '', /def greet\(name: str\) -> str:/);
  });

  test('a fetch that failed still serves, and the answer says why', async () => {
    const tree = scratchDir('lspd-lang-deps-bad-');
    writeFileSync(join(tree, 'requirements.txt'), `greet-lib==1.0.0 --hash=sha256:${'0'.repeat(64)}\n`);
    writeFileSync(join(tree, 'app.py'), 'from greet_lib import greet\n\n\ndef main() -> None:\n    print(greet("world"))\n');
    await uploadDir(d.url, badHash, tree);
    const view = await fetchSettled(d.url, badHash);
    assert.equal(view.state, 'failed', JSON.stringify(view));
    const r = await lspQuery(d.url, { ...badHash, op: 'documentSymbols', path: 'app.py' });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    const dep = r.body.dependencies as { state: string; error?: string };
    assert.equal(dep.state, 'failed');
    assert.match(dep.error ?? '', /does not match the hashes/);
    assert.ok(
      (r.body.symbols as { name: string }[]).some((s) => s.name === 'main'),
      JSON.stringify(r.body),
    );
  });
});
