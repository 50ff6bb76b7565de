// FETCH for Go, hermetic: a module proxy laid out in a temp dir and reached as
// GOPROXY=file://… (bound read-only into the real FETCH jail), a fixture tree
// whose go.mod requires example.com/dep v1.0.0 and whose go.sum pins its hash.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { cpSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fetchEnv, fetchTree, fixtures, newKey, scratchDir, type FetchEnv } from './helpers/fetch-env.js';
import { buildGoProxy, writeGoProxy } from './helpers/go-proxy.js';
import { skipOrFail } from './helpers/host.js';
import { jailUidEnv } from './helpers/uids.js';

/** The go-dep fixture copied to a scratch dir (named by `prefix`), its go.sum made `edit(go.sum)`. */
function goDepWithSum(prefix: string, edit: (sum: string) => string): string {
  const src = scratchDir(prefix);
  cpSync(join(fixtures, 'go-dep'), src, { recursive: true });
  writeFileSync(join(src, 'go.sum'), edit(readFileSync(join(src, 'go.sum'), 'utf8')));
  return src;
}

describe('fetch: go', () => {
  let env: FetchEnv;
  let proxyDir: string;
  before(async () => {
    proxyDir = scratchDir('lspd-goproxy-');
    const goProxy = buildGoProxy(proxyDir);
    // Nothing is allowed out: the file:// proxy needs no network, and the checksum
    // database is never asked because the fixture's go.sum is complete.
    env = await fetchEnv({ LSPD_GO_PROXY: goProxy, LSPD_FETCH_REGISTRIES: '127.0.0.1:9', ...jailUidEnv() });
  });
  after(async () => {
    await env?.close();
  });

  it('downloads the module into the deps dir, verified against go.sum', async (t) => {
    if (env.skipReason) return t.skip(env.skipReason);
    if (!env.tools.go) return t.skip(skipOrFail('go is not installed under /usr'));
    const m = env.manager();
    const key = newKey('go-dep');
    env.store.put(key, join(fixtures, 'go-dep'));
    const queued = await m.enqueue(key);
    assert.equal(queued.state, 'queued');
    assert.deepEqual(queued.ecosystems, [{ ecosystem: 'go', dir: '', state: 'queued' }]);

    const view = await m.wait(key);
    assert.equal(view.state, 'done', view.log);
    assert.deepEqual(view.ecosystems, [{ ecosystem: 'go', dir: '', state: 'done' }]);
    const deps = env.store.depsDir(key);
    const greet = join(deps, 'go', 'pkg', 'mod', 'example.com', 'dep@v1.0.0', 'greet.go');
    assert.match(readFileSync(greet, 'utf8'), /func Greet\(name string\) string/);
    assert.ok(view.bytes! > 0);
    assert.ok(!view.log!.includes(env.dataDir), 'no host path in the log tail');

    // The state survives the manager: a new one (the next daemon start) reads it back.
    const state = JSON.parse(readFileSync(join(deps, 'fetch.json'), 'utf8')) as { view: { state: string } };
    assert.equal(state.view.state, 'done');
    const next = env.manager();
    await next.resume([key]);
    assert.equal(next.state(key).state, 'done');
    assert.deepEqual(next.serveBinds(key, '/src'), m.serveBinds(key, '/src'));

    // SERVE side: the module cache read-only at the fixed path, and named to gopls; the
    // rest of its env (GOPROXY off, -mod=readonly, the lock-down) is the row's own.
    assert.deepEqual(m.serveBinds(key, '/src'), [{ host: join(deps, 'go', 'pkg', 'mod'), at: '/deps/go/pkg/mod' }]);
    assert.deepEqual(m.serveEnv(key, 'go'), { GOMODCACHE: '/deps/go/pkg/mod' });
  });

  it('re-queues a fetch a crash interrupted, once; a second interruption marks it failed', async (t) => {
    if (env.skipReason) return t.skip(env.skipReason);
    if (!env.tools.go) return t.skip(skipOrFail('go is not installed under /usr'));
    const interrupted = (attempt: number) => ({
      v: 1,
      attempt,
      view: { state: 'running', ecosystems: [{ ecosystem: 'go', dir: '', state: 'running' }], startedAt: new Date().toISOString() },
    });
    const once = newKey('go-crash-1');
    env.store.put(once, join(fixtures, 'go-dep'));
    writeFileSync(join(env.store.depsDir(once), 'fetch.json'), JSON.stringify(interrupted(1)));
    const twice = newKey('go-crash-2');
    env.store.put(twice, join(fixtures, 'go-dep'));
    writeFileSync(join(env.store.depsDir(twice), 'fetch.json'), JSON.stringify(interrupted(2)));
    const never = newKey('go-crash-0'); // crashed between upload and enqueue: no state file
    env.store.put(never, join(fixtures, 'go-dep'));

    const m = env.manager();
    const done: string[] = [];
    m.onDone((key, view) => done.push(`${key.repo}:${view.state}`));
    await m.resume([once, twice, never]);
    const failed = m.state(twice);
    assert.equal(failed.state, 'failed');
    assert.match(failed.error!, /interrupted by a daemon restart 2 times/);
    assert.equal((await m.wait(once)).state, 'done');
    assert.equal((await m.wait(never)).state, 'done');
    assert.deepEqual(done.sort(), ['go-crash-0:done', 'go-crash-1:done']);
  });

  it('fails, saying why, when a module does not match go.sum', async (t) => {
    if (env.skipReason) return t.skip(env.skipReason);
    if (!env.tools.go) return t.skip(skipOrFail('go is not installed under /usr'));
    const src = goDepWithSum('lspd-go-tampered-', (sum) => sum.replace(/dep v1\.0\.0 h1:.{4}/, 'dep v1.0.0 h1:AAAA'));
    const { m, key, view } = await fetchTree(env, 'go-tampered', src);
    assert.equal(view.state, 'failed');
    assert.match(view.error!, /does not match the hash in the tree's go\.sum/);
    assert.match(view.log!, /checksum mismatch/);
    assert.equal(existsSync(join(env.store.depsDir(key), 'go', 'pkg', 'mod', 'example.com', 'dep@v1.0.0')), false, 'nothing unverified extracted');
    assert.deepEqual(m.serveBinds(key, '/src'), []);
  });

  it('fails with a clear reason when go.sum lacks entries (the tree is read-only)', async (t) => {
    if (env.skipReason) return t.skip(env.skipReason);
    if (!env.tools.go) return t.skip(skipOrFail('go is not installed under /usr'));
    const src = goDepWithSum('lspd-go-nosum-', () => '');
    const { key, view } = await fetchTree(env, 'go-nosum', src);
    assert.equal(view.state, 'failed');
    // go asks the checksum database for the missing hash (through the egress proxy,
    // which refuses it here) before it would extract anything.
    assert.match(view.error!, /go\.sum lacks entries/);
    assert.match(view.log!, /sum\.golang\.org/);
    assert.equal(existsSync(join(env.store.depsDir(key), 'go', 'pkg', 'mod', 'example.com', 'dep@v1.0.0')), false, 'nothing unverified extracted');
  });
});

describe('fetch: the byte bound', () => {
  it('removes what it fetched and fails when the deps dir outgrows fetchMaxBytes', async (t) => {
    const proxyDir = scratchDir('lspd-goproxy-big-');
    // 3 MiB of random (incompressible) bytes in one module, over a 1 MiB bound.
    const goSum = writeGoProxy(proxyDir, [
      {
        path: 'example.com/big',
        version: 'v1.0.0',
        files: {
          'go.mod': 'module example.com/big\n\ngo 1.19\n',
          'big.go': 'package big\n\n// N is big.\nconst N = 1\n',
          'blob.bin': randomBytes(3 * 1024 * 1024),
        },
      },
    ]);
    const tree = scratchDir('lspd-go-big-');
    writeFileSync(join(tree, 'go.mod'), 'module example.com/app\n\ngo 1.19\n\nrequire example.com/big v1.0.0\n');
    writeFileSync(join(tree, 'go.sum'), goSum);
    writeFileSync(join(tree, 'main.go'), 'package main\n\nimport "example.com/big"\n\nfunc main() { println(big.N) }\n');
    const env = await fetchEnv({
      LSPD_GO_PROXY: `file://${proxyDir}`,
      LSPD_FETCH_REGISTRIES: '127.0.0.1:9',
      LSPD_FETCH_MAX_BYTES: String(1024 * 1024),
      ...jailUidEnv(),
    });
    try {
      if (env.skipReason) return t.skip(env.skipReason);
      if (!env.tools.go) return t.skip(skipOrFail('go is not installed under /usr'));
      const { m, key, view } = await fetchTree(env, 'go-big', tree);
      assert.equal(view.state, 'failed', view.log);
      assert.match(view.error!, /more than 1048576 bytes/, view.log);
      assert.match(view.log!, /over the bound/);
      assert.equal(existsSync(join(env.store.depsDir(key), 'go')), false, 'fetched files removed');
      assert.ok(view.bytes! < 1024 * 1024);
      assert.deepEqual(m.serveBinds(key, '/src'), []);
    } finally {
      await env.close();
    }
  });
});
