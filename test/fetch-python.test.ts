// FETCH for Python, hermetic: a PEP 503 simple index on 127.0.0.1 with wheels and
// an sdist built by the test, reached from the real FETCH jail only through the
// egress proxy. Wheels only: a requirement with only an sdist (whose setup.py would
// write a marker) or with no wheel for this platform is skipped and named, never
// built; the tree's own index options, editables and URLs are never obeyed; hashes
// in the lock are checked. Every lock format lspd reads installs the same wheel.
import assert from 'node:assert/strict';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fetchEnv, fetchTree, filesUnder, newKey, scratchDir, type FetchEnv } from './helpers/fetch-env.js';
import { startPypiIndex, type PyIndex, type PyProject } from './helpers/pypi-index.js';
import { greetLib, onlySdist } from './helpers/dep-packages.js';
import { jailUidEnv } from './helpers/uids.js';

const windowsOnly: PyProject = { name: 'win-only', version: '2.0', tag: 'cp311-cp311-win_amd64', wheel: { 'win_only/__init__.py': 'X = 1\n' } };

function tree(files: Record<string, string>): string {
  const dir = scratchDir('lspd-py-tree-');
  for (const [n, body] of Object.entries(files)) writeFileSync(join(dir, n), body);
  return dir;
}

describe('fetch: Python wheels through the egress proxy', () => {
  let env: FetchEnv;
  let index: PyIndex;
  let wheelSha: string;
  before(async () => {
    index = await startPypiIndex([greetLib, onlySdist, windowsOnly]);
    wheelSha = index.sha256(index.wheelName(greetLib));
    env = await fetchEnv({ LSPD_PIP_INDEX_URL: index.url, LSPD_FETCH_REGISTRIES: index.authority, ...jailUidEnv() });
  });
  after(async () => {
    await env?.close();
    await index?.close();
  });

  it('installs the wheels a requirements.txt pins; an sdist-only requirement is skipped and named, its setup.py never run', async (t) => {
    if (env.skipReason) return t.skip(env.skipReason);
    assert.ok(env.tools.python && env.tools.pip, 'python3 and pip are installed (images/pins.env)');
    const m = env.manager();
    const key = newKey('py-req');
    env.store.put(
      key,
      tree({
        'requirements.txt': [
          "# the index is lspd's, never the tree's",
          '--index-url https://evil.example/simple',
          `greet-lib==1.0.0 \\`,
          `    --hash=sha256:${wheelSha}`,
          'only-sdist==1.0',
          'requests>=2.0',
          '-e .',
          'win-only==2.0',
          'evil @ https://evil.example/evil-1.0.tar.gz',
          '',
        ].join('\n'),
        'app.py': 'from greet_lib import greet\n\nprint(greet("world"))\n',
      }),
    );
    assert.equal((await m.enqueue(key)).state, 'queued');
    const view = await m.wait(key);
    assert.equal(view.state, 'done', view.log);
    const step = view.ecosystems![0]!;
    assert.equal(step.ecosystem, 'python');
    assert.equal(step.state, 'done');
    const skipped = step.skipped ?? [];
    for (const want of [
      /^only-sdist==1\.0: no wheel/,
      /^win-only==2\.0: no wheel/,
      /^requests>=2\.0: not pinned/,
      /^\.: an editable requirement/,
      /^evil @ https:\/\/evil\.example\/evil-1\.0\.tar\.gz: a direct URL/,
    ]) {
      assert.ok(
        skipped.some((s) => want.test(s)),
        `${want} in ${JSON.stringify(skipped)}`,
      );
    }
    assert.equal(skipped.length, 5, JSON.stringify(skipped));

    const site = join(env.store.depsDir(key), 'python', 'top', 'site-packages');
    assert.match(readFileSync(join(site, 'greet_lib', 'core.py'), 'utf8'), /def greet/);
    assert.ok(existsSync(join(site, 'greet_lib-1.0.0.dist-info', 'METADATA')));
    // Never built: the sdist was never even downloaded, and no marker exists anywhere.
    assert.ok(!index.hits.some((h) => h.endsWith('.tar.gz')), index.hits.join(','));
    assert.deepEqual(
      filesUnder(env.store.depsDir(key)).filter((f) => f.includes('SETUP_PY_RAN')),
      [],
    );
    assert.ok(index.hits.includes(`/files/${index.wheelName(greetLib)}`));
    assert.equal(existsSync(join(env.store.depsDir(key), 'python-tmp')), false, "pip's temp dir is removed");
    assert.ok(!view.log!.includes(env.dataDir), 'no host path in the log tail');
    assert.match(view.log!, /skipped only-sdist==1\.0/);

    assert.deepEqual(m.serveBinds(key, '/src'), [{ host: site, at: '/deps/python/top/site-packages' }]);
  });

  it('fails when a wheel does not match the hash in the lock', async (t) => {
    if (env.skipReason) return t.skip(env.skipReason);
    const { m, key, view } = await fetchTree(env, 'py-hash', tree({ 'requirements.txt': `greet-lib==1.0.0 --hash=sha256:${'0'.repeat(64)}\n` }));
    assert.equal(view.state, 'failed', view.log);
    assert.match(view.error!, /does not match the hashes/);
    assert.equal(existsSync(join(env.store.depsDir(key), 'python', 'top', 'site-packages', 'greet_lib')), false);
    assert.deepEqual(m.serveBinds(key, '/src'), []);
  });

  it('reads uv.lock, poetry.lock and Pipfile.lock, hashes and all', async (t) => {
    if (env.skipReason) return t.skip(env.skipReason);
    const wheelUrl = `https://files.example/${index.wheelName(greetLib)}`;
    const locks: Record<string, Record<string, string>> = {
      uv: {
        'uv.lock': [
          'version = 1',
          'requires-python = ">=3.9"',
          '',
          '[[package]]',
          'name = "app"',
          'version = "0.1.0"',
          'source = { editable = "." }',
          'dependencies = [{ name = "greet-lib" }]',
          '',
          '[[package]]',
          'name = "greet-lib"',
          'version = "1.0.0"',
          'source = { registry = "https://pypi.org/simple" }',
          `wheels = [{ url = "${wheelUrl}", hash = "sha256:${wheelSha}", size = 1 }]`,
          '',
          '[[package]]',
          'name = "from-git"',
          'version = "0.1.0"',
          'source = { git = "https://github.com/acme/from-git?rev=abc" }',
          '',
        ].join('\n'),
      },
      poetry: {
        'poetry.lock': [
          '[[package]]',
          'name = "greet-lib"',
          'version = "1.0.0"',
          'description = ""',
          'optional = false',
          'python-versions = "*"',
          'files = [',
          `    {file = "${index.wheelName(greetLib)}", hash = "sha256:${wheelSha}"},`,
          ']',
          '',
          '[metadata]',
          'lock-version = "2.0"',
          'python-versions = "^3.9"',
          'content-hash = "x"',
          '',
        ].join('\n'),
      },
      pipenv: {
        'Pipfile.lock': JSON.stringify({
          _meta: { sources: [{ name: 'pypi', url: 'https://evil.example/simple', verify_ssl: true }] },
          default: { 'greet-lib': { hashes: [`sha256:${wheelSha}`], version: '==1.0.0' } },
          develop: { 'only-sdist': { hashes: [], version: '==1.0' }, local: { path: '.', editable: true } },
        }),
      },
    };
    const m = env.manager();
    for (const [kind, files] of Object.entries(locks)) {
      const key = newKey(`py-${kind}`);
      env.store.put(key, tree(files));
      await m.enqueue(key);
      const view = await m.wait(key);
      assert.equal(view.state, 'done', `${kind}: ${view.log}`);
      assert.ok(existsSync(join(env.store.depsDir(key), 'python', 'top', 'site-packages', 'greet_lib', 'core.py')), `${kind}: installed`);
      const skipped = view.ecosystems![0]!.skipped ?? [];
      if (kind === 'uv') assert.deepEqual(skipped, ['from-git: from a git source, not an index']);
      if (kind === 'poetry') assert.deepEqual(skipped, []);
      if (kind === 'pipenv') {
        assert.equal(skipped.length, 2, JSON.stringify(skipped));
        assert.ok(
          skipped.some((s) => s.startsWith('only-sdist==1.0: no wheel')),
          JSON.stringify(skipped),
        );
      }
    }
    assert.ok(!index.hits.some((h) => h.endsWith('.tar.gz')), index.hits.join(','));
  });

  it('refuses a Python project with no lock, saying why', async (t) => {
    if (env.skipReason) return t.skip(env.skipReason);
    const m = env.manager();
    const key = newKey('py-nolock');
    env.store.put(key, tree({ 'pyproject.toml': '[project]\nname = "x"\ndependencies = ["greet-lib"]\n' }));
    const view = await m.enqueue(key);
    assert.equal(view.state, 'refused');
    assert.match(view.error!, /Python dependencies were not fetched: there is no lock file/);
  });
});
