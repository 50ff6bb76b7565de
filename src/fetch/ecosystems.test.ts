// Detection on small trees built in a temp dir: which workspaces are fetched,
// which refused and why, and what is never looked into.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, describe, it } from 'node:test';
import { detect, isSafeRelDir } from './ecosystems.js';

const all = { go: '/usr/bin/go', npm: '/usr/bin/npm', node: '/usr/bin/node' };
const dirs: string[] = [];
after(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

function tree(files: Record<string, string>): string {
  const d = mkdtempSync(join(tmpdir(), 'lspd-detect-'));
  dirs.push(d);
  for (const [p, body] of Object.entries(files)) {
    mkdirSync(dirname(join(d, p)), { recursive: true });
    writeFileSync(join(d, p), body);
  }
  return d;
}

/** Each planned item as 'ecosystem:dir' → 'fetch', or why it is refused. */
function verdicts(plan: Awaited<ReturnType<typeof detect>>): Record<string, string> {
  return Object.fromEntries(plan.map((p) => [`${p.ecosystem}:${p.dir}`, p.action === 'refuse' ? p.reason : 'fetch']));
}

describe('detect', () => {
  it('plans one item per (ecosystem, workspace), shallow first', async () => {
    const d = tree({
      'go.mod': 'module a',
      'svc/b/go.mod': 'module b',
      'web/package.json': '{}',
      'web/package-lock.json': '{}',
      'tools/npm-shrinkwrap.json': '{}',
      'tools/package.json': '{}',
    });
    const plan = await detect(d, all);
    assert.deepEqual(
      plan.map((p) => `${p.ecosystem}:${p.dir}:${p.action}`),
      ['go::fetch', 'npm:tools:fetch', 'npm:web:fetch', 'go:svc/b:fetch'],
    );
  });

  it('never looks into node_modules, vendor, testdata or .git, nor through symlinks', async () => {
    const d = tree({
      'node_modules/x/package-lock.json': '{}',
      'vendor/y/go.mod': 'module y',
      'pkg/testdata/go.mod': 'module fake',
      '.git/go.mod': 'module g',
      'real/go.mod': 'module r',
    });
    symlinkSync(join(d, 'real'), join(d, 'link'));
    const plan = await detect(d, all);
    assert.deepEqual(
      plan.map((p) => `${p.ecosystem}:${p.dir}`),
      ['go:real'],
    );
  });

  it('refuses, with a reason, what FETCH must not or cannot run', async () => {
    const d = tree({
      'py/requirements.txt': 'requests==2.0',
      'pyproj/pyproject.toml': '[project]\nname = "x"\ndependencies = ["requests"]\n',
      'rs/Cargo.lock': '',
      'rs/Cargo.toml': '[package]\nname = "rs"\n',
      'php/composer.lock': '{}',
      'y/yarn.lock': '',
      'package.json': '{"dependencies":{"left-pad":"1.0.0"}}',
      'composer.json': '{"require":{"php":">=8.1","acme/x":"^1.0"}}',
    });
    const reasons = verdicts(await detect(d, all));
    assert.match(reasons['python:py']!, /no pinned python3 with pip/);
    assert.match(reasons['python:pyproj']!, /there is no lock file/);
    assert.match(reasons['cargo:rs']!, /the Debian 13 root with the pinned cargo is not made/);
    assert.match(reasons['composer:php']!, /no pinned composer/);
    assert.match(reasons['composer:']!, /composer\.json has no composer\.lock/);
    assert.match(reasons['npm:y']!, /yarn or pnpm/);
    assert.match(reasons['npm:']!, /no package-lock\.json/);
  });

  it('fetches a Cargo workspace from its lock at its root only; a top-level Cargo.toml with dependencies and no lock is refused', async () => {
    const cargo = { ...all, cargo: '/usr/bin/cargo', cargoRoot: '/opt/lspd/debian13' };
    const ws = tree({
      'Cargo.toml': '[workspace]\nmembers = ["a", "b"]\n',
      'Cargo.lock': 'version = 4\n',
      'a/Cargo.toml': '[package]\nname = "a"\n\n[dependencies]\nserde = "1"\n',
      'b/Cargo.toml': '[package]\nname = "b"\n',
      // A lock without a manifest beside it is no workspace.
      'stray/Cargo.lock': '',
    });
    assert.deepEqual(verdicts(await detect(ws, cargo)), { 'cargo:': 'fetch' });
    for (const [manifest, refused] of [
      ['[package]\nname = "x"\n\n[dependencies]\nserde = { version = "1" }\n', true],
      ['[package]\nname = "x"\n\n[dependencies.serde]\nversion = "1"\n', true],
      ['[package]\nname = "x"\n\n[target.\'cfg(unix)\'.dev-dependencies]\nlibc = "0.2"\n', true],
      ['[package]\nname = "x"\n\n[dependencies]\n', false],
      ['[package]\nname = "x"\n# dependencies = nothing\n', false],
    ] as const) {
      const reasons = verdicts(await detect(tree({ 'Cargo.toml': manifest, 'src/lib.rs': '' }), cargo));
      if (refused) assert.match(reasons['cargo:']!, /Cargo\.toml has no Cargo\.lock/, manifest);
      else assert.deepEqual(reasons, {}, manifest);
    }
    // Nested crates without a lock are members of something else, or need nothing: not reported.
    assert.deepEqual(verdicts(await detect(tree({ 'tools/x/Cargo.toml': '[dependencies]\nserde = "1"\n' }), cargo)), {});
  });

  it('fetches composer and Python workspaces from their locks when the toolchains are there', async () => {
    const withAll = {
      ...all,
      composer: '/usr/bin/composer',
      php: '/usr/bin/php8.2',
      python: '/usr/bin/python3',
      pip: '/usr/lib/python3/dist-packages/pip/__main__.py',
    };
    const d = tree({
      'composer.json': '{}',
      'composer.lock': '{}',
      'a/requirements-dev.txt': 'x==1',
      'b/uv.lock': '',
      'c/poetry.lock': '',
      'd/Pipfile.lock': '{}',
      'e/requirements/base.txt': 'x==1',
      'f/composer.json': '{"require":{"acme/x":"1.0.0"}}',
    });
    const plan = await detect(d, withAll);
    assert.deepEqual(
      plan.map((p) => `${p.ecosystem}:${p.dir}:${p.action}`),
      ['composer::fetch', 'python:a:fetch', 'python:b:fetch', 'python:c:fetch', 'python:d:fetch'],
    );
  });

  it('a package.json without dependencies needs nothing; a missing toolchain refuses', async () => {
    assert.deepEqual(await detect(tree({ 'package.json': '{"name":"x"}' }), all), []);
    // Dependencies committed in node_modules: the tree's own install, nothing to say.
    assert.deepEqual(await detect(tree({ 'package.json': '{"dependencies":{"g":"1.0.0"}}', 'node_modules/g/package.json': '{}' }), all), []);
    const plan = await detect(tree({ 'go.mod': 'module a' }), {});
    assert.equal(plan[0]!.action, 'refuse');
  });

  it('caps the workspaces fetched per ecosystem', async () => {
    const d = tree({ 'a/go.mod': '', 'b/go.mod': '', 'c/go.mod': '' });
    const plan = await detect(d, all, { maxEntries: 1000, maxDepth: 8, maxWorkspaces: 2 });
    assert.deepEqual(
      plan.map((p) => p.action),
      ['fetch', 'fetch', 'refuse'],
    );
  });

  it('a lockfile or manifest over the bound refuses its fetch, unparsed, saying which file and how large', async () => {
    const big = '{"lockfileVersion":3,"packages":{' + '"node_modules/x":{},'.repeat(2000) + '"":{}}}';
    const d = tree({
      'web/package.json': '{}',
      'web/package-lock.json': big,
      'svc/go.mod': 'module s',
      'svc/go.sum': 'x'.repeat(50_000),
      'ok/go.mod': 'module ok',
    });
    const got = verdicts(await detect(d, all, { maxEntries: 1000, maxDepth: 8, maxWorkspaces: 8, maxLockfileBytes: 32 * 1024 }));
    assert.equal(got['go:ok'], 'fetch');
    assert.match(got['npm:web']!, /^package-lock\.json is 40 KiB, over the 32 KiB bound for a lockfile or manifest: not parsed/);
    assert.match(got['go:svc']!, /^go\.sum is .* not parsed, dependencies not fetched\.$/);
  });

  it('isSafeRelDir refuses anything that could leave a host dir', () => {
    for (const ok of ['', 'a', 'a/b.c']) assert.equal(isSafeRelDir(ok), true, ok);
    for (const bad of ['/a', 'a/../b', '..', 'a//b', 'a/', './a', 'a\\b']) assert.equal(isSafeRelDir(bad), false, bad);
  });
});
