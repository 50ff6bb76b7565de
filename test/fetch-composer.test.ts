// FETCH for PHP, hermetic: a Composer repository on 127.0.0.1 built by the test
// (packages.json, p2 metadata, dist zips), reached from the real FETCH jail only
// through the egress proxy. Composer installs from the tree's composer.lock with
// --no-scripts --no-plugins; a root script and a plugin that would each write a
// marker prove neither ran. Also: no lock (refused), a dist only on a host that
// is not allowed (failed, nothing reached it), a dist whose shasum does not match.
import assert from 'node:assert/strict';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fetchEnv, fetchTree, filesUnder, newKey, scratchDir, type FetchEnv } from './helpers/fetch-env.js';
import { startComposerRepo, type ComposerRepo } from './helpers/composer-repo.js';
import { composerTree, greeter, hooks } from './helpers/dep-packages.js';
import { jailUidEnv } from './helpers/uids.js';

describe('fetch: composer through the egress proxy', () => {
  let env: FetchEnv;
  let repo: ComposerRepo;
  let other: ComposerRepo;
  before(async () => {
    repo = await startComposerRepo([greeter, hooks]);
    // A second repository that is NOT allowed; it alone has acme/elsewhere.
    other = await startComposerRepo([{ name: 'acme/elsewhere', version: '2.0.0', files: { 'src/E.php': '<?php class E {}\n' } }]);
    env = await fetchEnv({ LSPD_COMPOSER_REPO: repo.url, LSPD_FETCH_REGISTRIES: repo.authority, ...jailUidEnv() });
  });
  after(async () => {
    await env?.close();
    await repo?.close();
    await other?.close();
  });

  it('installs the locked packages into vendor/ with no script or plugin run', async (t) => {
    if (env.skipReason) return t.skip(env.skipReason);
    assert.ok(env.tools.composer && env.tools.php, 'composer and php are installed (images/pins.env)');
    const lock = repo.lock(['acme/greeter', 'acme/hooks']);
    // A package composer could only clone: left out and named, never cloned.
    (lock.packages as unknown[]).push({
      name: 'acme/gitonly',
      version: 'dev-main',
      source: { type: 'git', url: 'https://github.com/acme/gitonly.git', reference: 'abc' },
    });
    const { m, key, queued, view } = await fetchTree(env, 'composer', composerTree(lock, { 'acme/gitonly': 'dev-main' }));
    assert.equal(queued.state, 'queued');
    assert.equal(view.state, 'done', view.log);
    assert.deepEqual(view.ecosystems, [
      { ecosystem: 'composer', dir: '', state: 'done', skipped: ['acme/gitonly@dev-main: no dist archive in the lock (lspd never clones sources)'] },
    ]);

    const top = join(env.store.depsDir(key), 'composer', 'top');
    const vendor = join(top, 'vendor');
    assert.match(readFileSync(join(vendor, 'acme', 'greeter', 'src', 'Greeter.php'), 'utf8'), /class Greeter/);
    assert.ok(existsSync(join(vendor, 'acme', 'hooks', 'src', 'Plugin.php')), 'the plugin is installed as files');
    const installed = JSON.parse(readFileSync(join(vendor, 'composer', 'installed.json'), 'utf8')) as { packages: { name: string; version: string }[] };
    assert.deepEqual(installed.packages.map((p) => `${p.name}@${p.version}`).sort(), ['acme/greeter@1.0.0', 'acme/hooks@1.0.0']);
    // No root script, no dependency script, no plugin ran: none of their markers exists anywhere.
    assert.deepEqual(
      filesUnder(env.store.depsDir(key)).filter((f) => f.endsWith('_RAN')),
      [],
    );
    // The tree's vendor-dir and repositories were not obeyed; its git source never reached.
    assert.equal(existsSync(join(top, 'lib')), false);
    // Downloads came through the mirror layout, through the proxy (the jail has no other way out).
    assert.ok(repo.hits.includes(`/dists/acme/greeter/${(lock.packages as { dist: { reference: string } }[])[0]!.dist.reference}.zip`), repo.hits.join(','));
    assert.equal(repo.hits.filter((h) => h === '/notify').length, 0, 'no install notification was posted');
    assert.equal(existsSync(join(env.store.depsDir(key), 'composer-cache')), false, 'the download cache is removed');
    assert.equal(existsSync(join(env.store.treeDir(key), 'vendor')), false, 'the tree was never written');
    assert.ok(!view.log!.includes(env.dataDir), 'no host path in the log tail');

    assert.deepEqual(m.serveBinds(key, '/src'), [{ host: vendor, at: '/src/vendor' }]);
    // The state survives the manager, mounts re-checked.
    const next = env.manager();
    await next.resume([key]);
    assert.deepEqual(next.state(key).ecosystems, view.ecosystems);
    assert.deepEqual(next.serveBinds(key, '/src'), m.serveBinds(key, '/src'));
    console.log(`composer: ${relative(env.dataDir, top)} ${view.bytes} bytes; hits ${repo.hits.join(' ')}`);
  });

  it('fails, naming the host, when a dist is only on a host that is not allowed', async (t) => {
    if (env.skipReason) return t.skip(env.skipReason);
    const { m, key, view } = await fetchTree(env, 'composer-evil', composerTree(other.lock(['acme/elsewhere'])));
    assert.equal(view.state, 'failed', view.log);
    assert.match(view.error!, /not an allowed registry/, view.log);
    assert.deepEqual(other.hits, [], 'nothing reached the disallowed host');
    assert.deepEqual(m.serveBinds(key, '/src'), []);
  });

  it('fails when a dist does not match the shasum in the lock', async (t) => {
    if (env.skipReason) return t.skip(env.skipReason);
    const lock = repo.lock(['acme/greeter']);
    (lock.packages as { dist: { shasum: string } }[])[0]!.dist.shasum = '0'.repeat(40);
    const { key, view } = await fetchTree(env, 'composer-sha', composerTree(lock));
    assert.equal(view.state, 'failed', view.log);
    assert.match(view.error!, /shasum/, view.log);
    assert.equal(existsSync(join(env.store.depsDir(key), 'composer', 'top', 'vendor', 'acme', 'greeter', 'src')), false);
  });

  it('refuses a composer.json that requires packages but has no lock, saying why', async (t) => {
    if (env.skipReason) return t.skip(env.skipReason);
    const m = env.manager();
    const key = newKey('composer-nolock');
    const dir = scratchDir('lspd-composer-nolock-');
    writeFileSync(join(dir, 'composer.json'), JSON.stringify({ require: { php: '>=8.1', 'acme/greeter': '^1.0' } }));
    env.store.put(key, dir);
    const view = await m.enqueue(key);
    assert.equal(view.state, 'refused');
    assert.match(view.error!, /composer\.json has no composer\.lock/);
  });
});
