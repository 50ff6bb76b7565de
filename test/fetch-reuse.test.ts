// Fetch reuse for incremental roots, with the real store, the real FETCH jail and
// a hermetic npm registry: a head composed on a base whose layer touches no
// lockfile or manifest gets the base's finished fetch as hard links (the registry
// sees no second download, and the head is charged nothing for them while the base
// is stored); a layer that changes the lockfile fetches for real; deleting the base
// leaves the head's dependencies whole, and then charged in full.
import assert from 'node:assert/strict';
import { skipOrFail } from './helpers/host.js';
import { chmodSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { loadConfig } from '../src/config.js';
import { FetchManager } from '../src/fetch/fetch-manager.js';
import { detectToolchains } from '../src/fetch/toolchains.js';
import { createJail, type JailRuntime } from '../src/jail/jail.js';
import { createLogger } from '../src/log.js';
import { createMetrics, type Metrics } from '../src/metrics.js';
import { dirBytes } from '../src/store/disk.js';
import { RootStore } from '../src/store/store.js';
import type { RootKey } from '../src/store/types.js';
import { projectDir, tempDir } from './helpers/daemon.js';
import { fixtures } from './helpers/fetch-env.js';
import { startNpmRegistry, type NpmRegistry } from './helpers/npm-registry.js';
import { packTar, SHA, type PackEntry } from './store-helpers.js';
import { jailUidEnv } from './helpers/uids.js';

const fixture = (name: string) => readFileSync(join(fixtures, 'npm-dep', name), 'utf8');
const key = (n: number): RootKey => ({ org: 'acme', repo: 'reuse', sha: SHA(n) });

describe('fetch reuse for incremental roots', () => {
  let registry: NpmRegistry;
  let jail: JailRuntime;
  let store: RootStore;
  let fetcher: FetchManager;
  let metrics: Metrics;
  let dataDir: string;
  let skip: string | undefined;
  const put = async (k: RootKey, entries: PackEntry[], base?: string) => {
    const r = await store.put(k, Readable.from([await packTar(entries)]), { gzip: false, ...(base ? { base } : {}) });
    const view = await fetcher.enqueue(k, base && r.changed ? { base: { ...k, sha: base }, changed: r.changed } : undefined);
    return { r, view };
  };
  const settled = async (k: RootKey) => {
    const v = await fetcher.wait(k);
    // As daemon.ts measures a root after its fetch: once its state file is written.
    await fetcher.stateWritten(k);
    await store.refreshUsage(k);
    return v;
  };
  const gauge = async () => (await metrics.rootsBytes.get()).values[0]!.value;
  const nodeModules = (k: RootKey) => join(store.depsDir(k), 'npm', 'top', 'node_modules');

  before(async () => {
    registry = await startNpmRegistry();
    dataDir = tempDir('lspd-fetch-reuse-');
    chmodSync(dataDir, 0o755); // jails run as pool uids and must traverse it
    const config = loadConfig(
      { LSPD_DATA: dataDir, LOG_LEVEL: 'silent', LSPD_NPM_REGISTRY: registry.url, LSPD_FETCH_REGISTRIES: registry.authority, ...jailUidEnv(64) },
      projectDir,
    );
    const log = createLogger('silent');
    metrics = createMetrics();
    store = await RootStore.open({ config, log, metrics });
    jail = await createJail({ config, log });
    const verdicts = await jail.canary();
    const tools = await detectToolchains();
    if (!verdicts.fetch.ok) skip = skipOrFail(`the FETCH jail is not available here: ${verdicts.fetch.reason}`);
    else if (!tools.npm || !tools.node) skip = skipOrFail('npm/node are not installed under /usr');
    fetcher = new FetchManager({ config, log, metrics, jail, store, tools });
  });
  after(async () => {
    await fetcher?.close();
    await store?.close();
    await jail?.close();
    await registry?.close();
  });

  it("links the base's fetch when the layer touches no lockfile, fetches when it does, and survives the base", async (t) => {
    if (skip) return t.skip(skip);
    const tree: PackEntry[] = ['package.json', 'package-lock.json', 'index.js'].map((name) => ({ name, data: fixture(name) }));
    await put(key(1), [...tree, { name: 'src/app.ts', data: 'export const v = 1;\n' }]);
    const base = await settled(key(1));
    assert.equal(base.state, 'done', base.log);
    const downloads = () => registry.hits.filter((h) => h.endsWith('.tgz')).length;
    const fetched = downloads();
    assert.ok(fetched >= 1);

    const before = await gauge();
    const { r, view } = await put(key(2), [{ name: 'src/app.ts', data: 'export const v = 2;\n' }], SHA(1));
    assert.equal(view.state, 'queued');
    const head = await settled(key(2));
    assert.equal(head.state, 'done', head.log);
    assert.match(head.log!, new RegExp(`linked from ${SHA(1)}`));
    assert.deepEqual(head.ecosystems, [{ ecosystem: 'npm', dir: '', state: 'done', reused: SHA(1) }]);
    assert.equal(downloads(), fetched, 'nothing was downloaded again');
    const pkg = 'left-pad-lite/package.json';
    assert.equal(statSync(join(nodeModules(key(2)), pkg)).ino, statSync(join(nodeModules(key(1)), pkg)).ino, "a link to the base's file");
    assert.deepEqual(fetcher.serveBinds(key(2), '/src'), [{ host: nodeModules(key(2)), at: '/src/node_modules' }], 'the head binds its own copy');
    // The shared files are charged nothing; the directories linkTree made are the head's own.
    const depsOwn = (await gauge()) - before - r.info.ownDiskBytes!;
    assert.equal(depsOwn, await dirBytes(store.depsDir(key(2)), true));
    assert.ok(depsOwn <= (await dirBytes(store.depsDir(key(2)))) - 4096, `the head's deps are charged ${depsOwn} B`);

    const lock = JSON.parse(fixture('package-lock.json')) as Record<string, unknown>;
    await put(key(3), [{ name: 'package-lock.json', data: JSON.stringify(lock, null, 4) + '\n' }], SHA(1));
    const own = await settled(key(3));
    assert.equal(own.state, 'done', own.log);
    assert.doesNotMatch(own.log!, /linked from/, 'a changed lockfile means a fetch of its own');
    assert.notEqual(statSync(join(nodeModules(key(3)), pkg)).ino, statSync(join(nodeModules(key(1)), pkg)).ino);

    assert.ok(await store.delete(key(1)));
    assert.equal(JSON.parse(readFileSync(join(nodeModules(key(2)), pkg), 'utf8')).version, '1.0.0', "the head's dependencies outlive the base");
    assert.equal(statSync(join(nodeModules(key(2)), pkg)).nlink, 1);
    await fetcher.close();
    await store.close(); // waits for the re-measure the removal started
    // With their base gone, both heads are charged their whole tree and dependencies.
    const whole = async () => {
      let n = 0;
      for (const k of [key(2), key(3)]) n += store.get(k)!.diskBytes! + (await dirBytes(store.depsDir(k)));
      return n;
    };
    const expected = await whole();
    assert.equal(await gauge(), expected);
    store = await RootStore.open({ config: loadConfig({ LSPD_DATA: dataDir, LOG_LEVEL: 'silent' }, projectDir), log: createLogger('silent'), metrics });
    assert.equal(store.get(key(2))!.base, SHA(1));
    assert.equal(await gauge(), expected, 'and so after a restart');
  });
});
