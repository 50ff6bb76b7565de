// FETCH for npm, hermetic: a tiny registry on 127.0.0.1 served by the test and
// reached from the real FETCH jail only through the egress proxy (the jail has its
// own network namespace). Also: refused and none states, the deadline, and
// cancellation by root removal. (The byte bound is tested with Go, whose file://
// proxy makes a large download deterministic.)
import assert from 'node:assert/strict';
import { existsSync, readFileSync, readdirSync, readlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it, type TestContext } from 'node:test';
import type { RootKey } from '../src/store/types.js';
import { fetchEnv, fetchTree, fixtures, newKey, scratchDir, type FetchEnv } from './helpers/fetch-env.js';
import { startNpmRegistry, type NpmRegistry } from './helpers/npm-registry.js';
import { skipOrFail } from './helpers/host.js';
import { jailUidEnv } from './helpers/uids.js';
import { startHangingServer } from './chaos/hanging-server.js';

/** A tree with one dependency whose lockfile entry says where to get it and what hash it has. */
function lockedTree(dep: { name: string; version: string; resolved: string; integrity: string }): string {
  const dir = scratchDir('lspd-npm-tree-');
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 't', version: '0.0.0', private: true, dependencies: { [dep.name]: dep.version } }));
  writeFileSync(
    join(dir, 'package-lock.json'),
    JSON.stringify({
      name: 't',
      version: '0.0.0',
      lockfileVersion: 3,
      requires: true,
      packages: {
        '': { name: 't', version: '0.0.0', dependencies: { [dep.name]: dep.version } },
        [`node_modules/${dep.name}`]: { version: dep.version, resolved: dep.resolved, integrity: dep.integrity },
      },
    }),
  );
  return dir;
}

const fixtureIntegrity = JSON.parse(readFileSync(join(fixtures, 'npm-dep', 'package-lock.json'), 'utf8')).packages['node_modules/left-pad-lite']
  .integrity as string;

describe('fetch: npm through the egress proxy', () => {
  let env: FetchEnv;
  let registry: NpmRegistry;
  let other: NpmRegistry;
  before(async () => {
    registry = await startNpmRegistry();
    other = await startNpmRegistry(); // a second registry that is NOT allowed
    env = await fetchEnv({
      LSPD_NPM_REGISTRY: registry.url,
      LSPD_FETCH_REGISTRIES: registry.authority,
      ...jailUidEnv(),
    });
  });
  after(async () => {
    await env?.close();
    await registry?.close();
    await other?.close();
  });

  it('installs the locked package into the deps dir, with no install script run', async (t) => {
    if (env.skipReason) return t.skip(env.skipReason);
    if (!env.tools.npm || !env.tools.node) return t.skip(skipOrFail('npm/node are not installed under /usr'));
    const { m, key, queued, view } = await fetchTree(env, 'npm-dep', join(fixtures, 'npm-dep'));
    assert.equal(queued.state, 'queued');
    assert.equal(view.state, 'done', view.log);

    const nm = join(env.store.depsDir(key), 'npm', 'top', 'node_modules');
    const pkg = JSON.parse(readFileSync(join(nm, 'left-pad-lite', 'package.json'), 'utf8')) as { version: string };
    assert.equal(pkg.version, '1.0.0');
    // preinstall/install/postinstall would each have written SCRIPT_RAN_<phase> into the package dir.
    assert.deepEqual(
      readdirSync(join(nm, 'left-pad-lite')).filter((f) => f.startsWith('SCRIPT_RAN')),
      [],
    );
    // The lockfile names registry.npmjs.org; npm swaps in the configured registry (replace-registry-host).
    assert.ok(registry.hits.includes('/left-pad-lite/-/left-pad-lite-1.0.0.tgz'), registry.hits.join(','));
    // The tree was never written: npm installed beside copies of package.json and the lockfile.
    assert.equal(existsSync(join(env.store.treeDir(key), 'node_modules')), false);
    assert.equal(existsSync(join(env.store.depsDir(key), 'npm-cache')), false, 'the download cache is removed');

    assert.deepEqual(m.serveBinds(key, '/src'), [{ host: nm, at: '/src/node_modules' }]);
    assert.deepEqual(m.serveEnv(key, 'npm'), {});
  });

  it('installs an npm workspaces monorepo from its root lockfile', async (t) => {
    if (env.skipReason) return t.skip(env.skipReason);
    if (!env.tools.npm || !env.tools.node) return t.skip(skipOrFail('npm/node are not installed under /usr'));
    const { m, key, view } = await fetchTree(env, 'npm-ws', join(fixtures, 'npm-workspaces'));
    assert.equal(view.state, 'done', view.log);
    // One workspace (the lockfile's dir); the member's package.json was copied so npm
    // could link it, and the link is relative: in SERVE it points into the tree.
    assert.deepEqual(view.ecosystems, [{ ecosystem: 'npm', dir: '', state: 'done' }]);
    const nm = join(env.store.depsDir(key), 'npm', 'top', 'node_modules');
    assert.equal(JSON.parse(readFileSync(join(nm, 'left-pad-lite', 'package.json'), 'utf8')).version, '1.0.0');
    assert.equal(readlinkSync(join(nm, 'a')), '../packages/a');
    assert.deepEqual(
      m.serveBinds(key, '/src').map((b) => b.at),
      ['/src/node_modules'],
    );
  });

  it('fails with a clear log tail when the lockfile points at a host that is not allowed', async (t) => {
    if (env.skipReason) return t.skip(env.skipReason);
    if (!env.tools.npm || !env.tools.node) return t.skip(skipOrFail('npm/node are not installed under /usr'));
    const resolved = `${other.url}left-pad-lite/-/left-pad-lite-1.0.0.tgz`;
    const { m, key, view } = await fetchTree(env, 'npm-evil', lockedTree({ name: 'left-pad-lite', version: '1.0.0', resolved, integrity: fixtureIntegrity }));
    assert.equal(view.state, 'failed', view.log);
    assert.match(view.error!, /not an allowed registry/);
    assert.match(view.log!, /403/);
    assert.match(view.log!, new RegExp(`${other.authority.replace(/\./g, '\\.')}`));
    assert.deepEqual(other.hits, [], 'nothing reached the disallowed host');
    assert.deepEqual(m.serveBinds(key, '/src'), []);
  });

  it('refuses Python without a lock, saying dependencies were not fetched and why', async (t) => {
    if (env.skipReason) return t.skip(env.skipReason);
    const m = env.manager();
    const key = newKey('py');
    env.store.put(key, join(fixtures, 'py-basic'));
    const view = await m.enqueue(key);
    assert.equal(view.state, 'refused');
    assert.match(view.error!, /Python dependencies were not fetched: there is no lock file/);
    assert.deepEqual(
      m.ecosystemStatus(key, 'python').map((s) => s.state),
      ['refused'],
    );
    assert.equal((await m.wait(key)).state, 'refused');
  });

  it('answers none for a tree with nothing to fetch', async (t) => {
    if (env.skipReason) return t.skip(env.skipReason);
    const m = env.manager();
    const key = newKey('ts');
    env.store.put(key, join(fixtures, 'ts-basic'));
    assert.deepEqual(await m.enqueue(key), { state: 'none' });
    assert.deepEqual(m.state(key), { state: 'none' });
    assert.deepEqual(m.serveBinds(key, '/src'), []);
  });
});

/**
 * Runs `body` against a registry that accepts connections and never answers: a
 * fetch env allowed to reach it (plus `settings`) and a stored root whose lockfile
 * resolves its one dependency there, not yet fetched. Skips where the FETCH jail or
 * npm is missing; closes the env and the registry after.
 */
async function withHangingRegistry(
  t: TestContext,
  repo: string,
  settings: Record<string, string>,
  body: (env: FetchEnv, key: RootKey) => Promise<void>,
): Promise<void> {
  const hang = await startHangingServer();
  const env = await fetchEnv({ LSPD_NPM_REGISTRY: hang.url, LSPD_FETCH_REGISTRIES: hang.authority, ...settings, ...jailUidEnv() });
  try {
    if (env.skipReason) return t.skip(env.skipReason);
    if (!env.tools.npm || !env.tools.node) return t.skip(skipOrFail('npm/node are not installed under /usr'));
    const key = newKey(repo);
    env.store.put(
      key,
      lockedTree({ name: 'left-pad-lite', version: '1.0.0', resolved: `${hang.url}left-pad-lite/-/left-pad-lite-1.0.0.tgz`, integrity: fixtureIntegrity }),
    );
    await body(env, key);
  } finally {
    await env.close();
    await hang.close();
  }
}

describe('fetch: deadline and cancellation', () => {
  it('fails a fetch that outlives fetchTimeoutMs, killing its jail', (t) =>
    withHangingRegistry(t, 'hang', { LSPD_FETCH_TIMEOUT_MS: '1500' }, async (env, key) => {
      const m = env.manager();
      const t0 = Date.now();
      await m.enqueue(key);
      const view = await m.wait(key);
      assert.equal(view.state, 'failed');
      assert.match(view.error!, /deadline/);
      assert.ok(Date.now() - t0 < 10_000, 'stopped near its deadline');
    }));

  it('cancels a running fetch when its root is removed', (t) =>
    withHangingRegistry(t, 'cancel', {}, async (env, key) => {
      const m = env.manager();
      await m.enqueue(key);
      // A query waiting within its budget sees the fetch still running when the budget ends.
      const budget = AbortSignal.timeout(300);
      assert.equal((await m.wait(key, budget)).state, 'running');
      assert.equal(m.busy(key), true);
      const waiting = m.wait(key);
      const t0 = Date.now();
      // As RootStore.delete does: the fetcher's onRemove listener is awaited (the jail
      // is gone when it resolves), then the files are removed.
      await env.store.remove(key);
      assert.ok(Date.now() - t0 < 5_000);
      assert.deepEqual(await waiting, { state: 'none' });
      assert.deepEqual(m.state(key), { state: 'none' });
      assert.equal(m.busy(key), false);
    }));

  it('a shutdown mid-fetch is resumed at the next start, not counted as a crash', (t) =>
    withHangingRegistry(t, 'shutdown', {}, async (env, key) => {
      for (let start = 0; start < 3; start++) {
        const m = env.manager();
        await m.resume([key]); // the first start finds no state file and detects the tree
        assert.equal((await m.wait(key, AbortSignal.timeout(300))).state, 'running', `start ${start}`);
        await m.close(); // SIGTERM: the jail is killed, the job written back as queued
        const file = JSON.parse(readFileSync(join(env.store.depsDir(key), 'fetch.json'), 'utf8')) as { view: { state: string }; attempt: number };
        assert.deepEqual([file.view.state, file.attempt], ['queued', 0]);
      }
    }));
});
