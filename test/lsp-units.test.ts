// The LSP side's pure and small parts: the server table (deterministic choice,
// absent servers reported not dropped, configuration answers), the readiness
// tracker (progress, grace, per-document diagnostics, ignored titles), the result
// cache (exact keys, incomplete never kept, a root's entries dropped), target-file
// checks and workspace markers.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../src/config.js';
import { createMetrics } from '../src/metrics.js';
import { languageOf } from '../src/languages.js';
import { ResultCache } from '../src/lsp/cache.js';
import { MAX_EARLY_DOCS, ReadinessTracker } from '../src/lsp/session/readiness.js';
import { initializeParams } from '../src/lsp/session/client-side.js';
import { defaultServerPaths, settingFor } from '../src/lsp/servers/server-row.js';
import { probeFiles } from '../src/lsp/servers/server-env.js';
import { ServerTable, defaultServerRows } from '../src/lsp/servers/server-table.js';
import { MAX_WORKSPACE_LEVELS, WorkspaceFinder, findFileOf, readTarget } from '../src/lsp/target-file.js';
import { isAppError } from '../src/errors.js';
import { lspQuery } from '../src/api/schemas.js';

const cfg = (env: Record<string, string> = {}) => loadConfig({ LSPD_DATA: tmpdir(), ...env });

test('the table picks one TS/JS server by configuration, deterministically', () => {
  const rows = defaultServerRows(defaultServerPaths());
  const native = new ServerTable(rows, cfg());
  assert.equal(native.choose('typescript')?.name, 'typescript');
  assert.equal(native.choose('javascript')?.name, 'typescript');
  assert.equal(native.choose('python')?.name, 'pyright');
  assert.equal(new ServerTable([], cfg()).choose('typescript'), undefined);
  const ts = new ServerTable(rows, cfg({ LSPD_TYPESCRIPT_SERVER: 'tsserver' }));
  assert.equal(ts.choose('typescript')?.name, 'typescript-language-server');
  assert.equal(ts.choose('javascript')?.name, 'typescript-language-server');
  assert.throws(() => new ServerTable([...rows, rows[0]!], cfg()), /duplicate row/);
  // Take-overs, in table order: .vue first (its hybrid row), then .svelte/.astro (typescript-web), whichever TS server is configured.
  for (const t of [native, ts]) {
    assert.equal(t.choose('typescript', ['typescript', 'svelte'])?.name, 'typescript-web');
    assert.equal(t.choose('javascript', ['javascript', 'astro'])?.name, 'typescript-web');
    assert.equal(t.choose('typescript', ['typescript', 'svelte', 'vue'])?.name, 'vue');
    assert.equal(t.choose('svelte', ['typescript', 'svelte'])?.name, 'svelte-language-server');
    assert.equal(t.choose('astro', ['typescript', 'astro'])?.name, 'astro-language-server');
  }
});

test('suffixes move the language id: .mjs/.cjs are JavaScript, .mts/.cts TypeScript', () => {
  assert.deepEqual(languageOf('a/b.mjs'), { language: 'javascript', languageId: 'javascript' });
  assert.deepEqual(languageOf('a/b.cjs'), { language: 'javascript', languageId: 'javascript' });
  assert.deepEqual(languageOf('a/b.mts'), { language: 'typescript', languageId: 'typescript' });
  assert.deepEqual(languageOf('a/b.cts'), { language: 'typescript', languageId: 'typescript' });
  assert.equal(languageOf('a/b.tsx')?.languageId, 'typescriptreact');
});

test('every real row is installed here, with a version; an absent one is reported, not dropped', async () => {
  const NODE_ROWS = ['pyright', 'typescript', 'typescript-language-server'];
  const table = new ServerTable(defaultServerRows(defaultServerPaths()), cfg());
  const av = await table.probeAll();
  assert.deepEqual(Object.keys(av).sort(), table.rows.map((r) => r.name).sort(), 'one entry per row');
  for (const name of NODE_ROWS) {
    assert.equal(av[name]?.available, true, name);
    assert.match(av[name]?.version ?? '', /^\d+\.\d+\.\d+/, name);
  }
  const gone = defaultServerRows({ nodeModulesHost: '/nonexistent/node_modules', nodeModulesAt: '/opt/x' });
  const missing = await new ServerTable(gone, cfg()).probeAll();
  assert.equal(Object.keys(missing).length, gone.length);
  for (const name of NODE_ROWS) {
    const a = missing[name]!;
    assert.equal(a.available, false);
    assert.match(a.reason ?? '', /not installed/);
    assert.ok(!a.reason!.includes('/nonexistent'), 'no host path in the reason');
  }
  assert.deepEqual(await probeFiles([]), { available: true });
});

test('workspace/configuration answers come from the row: exact section, else a dotted walk', () => {
  const [native, , pyright] = defaultServerRows(defaultServerPaths());
  assert.deepEqual(settingFor(native!, 'js/ts'), { tsserver: { automaticTypeAcquisition: { enabled: false } } });
  assert.equal((settingFor(pyright!, 'python') as { pythonPath: string }).pythonPath, '/usr/bin/python3');
  assert.equal((settingFor(pyright!, 'python.analysis') as { typeCheckingMode: string }).typeCheckingMode, 'standard');
  assert.equal(settingFor(pyright!, 'nope.nothing'), null);
  assert.equal(settingFor(pyright!, 42), null);
});

test('readiness: open progress blocks, then the grace; ignored titles do not count', async () => {
  const t = new ReadinessTracker({ kind: 'progress', ignoreTitles: /^Finding references/ }, 50, Date.now() - 1000);
  assert.equal(t.isReady(undefined), true);
  t.onProgress({ token: 'a', value: { kind: 'begin', title: 'Finding references' } });
  assert.equal(t.isReady(undefined), true, 'per-request progress is not indexing');
  t.onProgress({ token: 'b', value: { kind: 'begin', title: 'Indexing' } });
  assert.equal(t.isReady(undefined), false);
  assert.equal(t.msUntilQuiet(), Infinity);
  const waited = t.waitReady(undefined, 2000);
  setTimeout(() => t.onProgress({ token: 'b', value: { kind: 'end' } }), 20);
  const t0 = Date.now();
  assert.equal(await waited, true);
  assert.ok(Date.now() - t0 >= 60, 'waited for the end and the grace');
  t.onProgress({ token: 'c', value: { kind: 'begin', title: 'Indexing' } });
  assert.equal(await t.waitReady(undefined, 60), false, 'bounded: answers incomplete past the bound');
  t.onProgress('junk');
  t.onProgress({ token: {}, value: { kind: 'end' } });
});

test("readiness by a server's quiescent status: a gap between its progresses is not readiness, however long", async () => {
  // rust-analyzer's order (test/lang-rust, traced): status not quiescent, Fetching, Building
  // CrateGraph, Roots Scanned, Fetching twice more, then quiescent; 1-11 ms between tokens here.
  const t = new ReadinessTracker({ kind: 'progress', expectProgress: true, quiescentStatus: true }, 0, 0);
  t.onServerStatus({ health: 'ok', quiescent: false, message: null });
  t.onProgress({ token: 'f', value: { kind: 'begin', title: 'Fetching' } });
  t.onProgress({ token: 'f', value: { kind: 'end' } });
  assert.equal(t.isReady(undefined, Date.now() + 60_000), false, 'every progress ended, the grace long past: still loading');
  const waited = t.waitReady(undefined, 2000);
  setTimeout(() => t.onServerStatus({ health: 'ok', quiescent: true, message: null }), 20);
  assert.equal(await waited, true, 'the status wakes the wait');
  t.onServerStatus({ health: 'ok', quiescent: false });
  assert.equal(t.isReady(undefined), false, 'loading again (a workspace reload)');
  for (const junk of ['junk', null, { quiescent: 'yes' }, {}]) t.onServerStatus(junk);
  assert.equal(t.isReady(undefined), false, 'only a boolean counts');
  // No status at all (a server that never sends one, or one not offered it): never ready, so answers say incomplete.
  const silent = new ReadinessTracker({ kind: 'progress', expectProgress: true, quiescentStatus: true }, 0, 0);
  silent.onProgress({ token: 'f', value: { kind: 'begin', title: 'Fetching' } });
  silent.onProgress({ token: 'f', value: { kind: 'end' } });
  assert.equal(await silent.waitReady(undefined, 30), false);
  // A row that does not read the status is not held by one.
  const plain = new ReadinessTracker({ kind: 'progress', expectProgress: true }, 0, 0);
  plain.onServerStatus({ quiescent: false });
  plain.onProgress({ token: 'f', value: { kind: 'begin', title: 'Fetching' } });
  plain.onProgress({ token: 'f', value: { kind: 'end' } });
  assert.equal(plain.isReady(undefined), true);
});

test('only the row whose readiness reads it is offered experimental/serverStatus', () => {
  const rows = defaultServerRows(defaultServerPaths());
  const caps = (name: string) => {
    const row = rows.find((r) => r.name === name);
    assert.ok(row, name);
    return (initializeParams(row, 'file:///src', '/src') as { capabilities: { experimental?: unknown } }).capabilities;
  };
  assert.deepEqual(caps('rust-analyzer').experimental, { serverStatusNotification: true });
  for (const name of ['typescript', 'pyright', 'gopls', 'clangd']) assert.equal(caps(name).experimental, undefined, name);
});

test('a server that queues requests from its start is ready at once; others wait out the start-up grace; progress still counts', () => {
  const now = Date.now();
  const graced = new ReadinessTracker({ kind: 'progress' }, 150, now);
  assert.equal(graced.isReady(undefined, now + 10), false, 'a progress may still begin just after initialized');
  assert.equal(graced.isReady(undefined, now + 150), true);
  const queues = new ReadinessTracker({ kind: 'progress', queuesFromStart: true }, 150, now);
  assert.equal(queues.isReady(undefined, now), true);
  queues.onProgress({ token: 'p', value: { kind: 'begin', title: 'Loading' } });
  assert.equal(queues.isReady(undefined), false, 'an open progress is still waited for');
  queues.onProgress({ token: 'p', value: { kind: 'end' } });
  assert.equal(queues.isReady(undefined), false, 'and the grace after it');
  assert.equal(queues.isReady(undefined, Date.now() + 150), true);
  // A row's own grace (clangd: 0) replaces the default, at start and after a progress.
  const own = new ReadinessTracker({ kind: 'documentDiagnostics', graceMs: 0 }, 150, now);
  const uri = 'file:///src/main.c';
  own.watch(uri);
  own.onProgress({ token: 'i', value: { kind: 'begin', title: 'indexing' } });
  own.onDiagnostics({ uri, diagnostics: [] });
  assert.equal(own.isReady(uri), false, 'the index progress is still open');
  own.onProgress({ token: 'i', value: { kind: 'end' } });
  assert.equal(own.isReady(uri), true);
});

test('readiness by document diagnostics; pushes for unopened documents wait (bounded) for their didOpen', async () => {
  const t = new ReadinessTracker({ kind: 'documentDiagnostics' }, 0, 0);
  const early = 'file:///src/b.go';
  t.onDiagnostics({ uri: early, diagnostics: [{ message: 'early' }] });
  assert.equal(t.diagnosticsFor(early), undefined, 'not opened: not served yet');
  t.watch(early); // gopls published at load and will not publish the same again
  assert.deepEqual(t.diagnosticsFor(early)?.items, [{ message: 'early' }]);
  for (let i = 0; i < MAX_EARLY_DOCS + 10; i++) t.onDiagnostics({ uri: `file:///src/f${i}.go`, diagnostics: [] });
  t.watch('file:///src/f0.go');
  assert.equal(t.diagnosticsFor('file:///src/f0.go'), undefined, 'the oldest early push was dropped');
  const uri = 'file:///src/a.ts';
  t.watch(uri);
  assert.equal(t.isReady(uri), false);
  setTimeout(() => t.onDiagnostics({ uri, diagnostics: Array.from({ length: 1500 }, () => ({ message: 'x' })) }), 10);
  assert.equal(await t.waitReady(uri, 2000), true);
  const p = t.diagnosticsFor(uri)!;
  assert.equal(p.items.length, 1000);
  assert.equal(p.cut, true);
});

test('the result cache: exact keys, incomplete answers never kept, a generation of its own, a root dropped whole', () => {
  const metrics = createMetrics();
  const c = new ResultCache({ entries: 100, bytes: 1024 * 1024 }, metrics);
  const q = lspQuery.parse({ org: 'a', repo: 'b', sha: 'c'.repeat(40), op: 'hover', path: 'x.ts', line: 1, character: 2 });
  const root = { id: 'a/b/' + q.sha, generation: 'g1' };
  const reupload = { id: root.id, generation: 'g2' };
  const k1 = ResultCache.keyOf('typescript', q);
  const k2 = ResultCache.keyOf('typescript', { ...q, encoding: 'utf-8' });
  assert.notEqual(k1, k2);
  c.set(root, k1, { incomplete: false });
  c.set(root, k2, { incomplete: true });
  assert.deepEqual(c.get(root, k1), { incomplete: false });
  assert.equal(c.get(root, k2), undefined);
  assert.equal(c.get(reupload, k1), undefined, 'another upload of the same key sees nothing of the first');
  c.set(root, k1, { incomplete: false }); // replace under the same key keeps the index
  c.set(reupload, k1, { incomplete: false });
  c.dropRoot(root.id);
  assert.equal(c.get(root, k1), undefined);
  assert.equal(c.get(reupload, k1), undefined);
  assert.equal(c.size, 0);
});

test('the result cache is bounded in bytes: answers charged their serialized length, the least recently used evicted, a hit a copy', () => {
  const metrics = createMetrics();
  const budget = 64 * 1024;
  const c = new ResultCache<{ incomplete?: boolean; text: string }>({ entries: 10_000, bytes: budget }, metrics);
  const root = { id: 'a/b/' + 'c'.repeat(40), generation: 'g1' };
  const answer = (i: number) => ({ incomplete: false, text: `${i} ${'x'.repeat(2000)}` });
  for (let i = 0; i < 100; i++) c.set(root, `k${i}`, answer(i));
  assert.ok(c.bytes <= budget, `${c.bytes} bytes held`);
  // 100 answers of ~2 KB: the entry bound (10,000) would have kept them all.
  assert.ok(c.size >= 25 && c.size < 32, `${c.size} answers held`);
  assert.equal(c.get(root, 'k0'), undefined, 'the least recently used went');
  const hit = c.get(root, 'k99')!;
  assert.deepEqual(hit, answer(99));
  hit.text = 'changed by a caller';
  assert.deepEqual(c.get(root, 'k99'), answer(99), 'a kept answer cannot be changed through a hit');
  // An answer larger than the whole budget is not kept, and costs nothing held.
  const before = c.bytes;
  c.set(root, 'huge', { incomplete: false, text: 'y'.repeat(budget) });
  assert.equal(c.get(root, 'huge'), undefined);
  assert.ok(c.bytes <= before);
});

test('target files: inside the root, regular, bounded, UTF-8', async () => {
  const top = mkdtempSync(join(tmpdir(), 'lspd-target-'));
  const tree = join(top, 'tree');
  mkdirSync(join(tree, 'pkg', 'sub'), { recursive: true });
  writeFileSync(join(top, 'secret.ts'), 'outside');
  writeFileSync(join(tree, 'ok.ts'), 'const a = 1;\r\nconst b = 2;\n');
  writeFileSync(join(tree, 'big.ts'), 'x'.repeat(2048));
  writeFileSync(join(tree, 'latin1.ts'), Buffer.from([0x63, 0x61, 0x66, 0xe9]));
  symlinkSync('../secret.ts', join(tree, 'escape.ts'));
  symlinkSync('ok.ts', join(tree, 'alias.ts'));
  const code = async (p: string) =>
    readTarget(tree, p, 1024).then(
      () => 'ok',
      (e: unknown) => (isAppError(e) ? e.code : String(e)),
    );
  assert.deepEqual((await readTarget(tree, 'ok.ts', 1024)).lines, ['const a = 1;', 'const b = 2;', '']);
  assert.equal(await code('alias.ts'), 'ok');
  assert.equal(await code('missing.ts'), 'no_such_file');
  assert.equal(await code('pkg'), 'no_such_file');
  assert.equal(await code('escape.ts'), 'no_such_file');
  assert.equal(await code('big.ts'), 'file_too_large');
  assert.equal(await code('latin1.ts'), 'not_utf8');

  writeFileSync(join(tree, 'pkg', 'pyproject.toml'), '');
  writeFileSync(join(tree, 'pkg', 'sub', 'm.py'), '');
  const w = new WorkspaceFinder();
  const root = { id: 'a/b/c', generation: 'g1' };
  assert.equal(await w.find(root, tree, 'pkg/sub/m.py', ['pyproject.toml']), 'pkg');
  assert.equal(await w.find(root, tree, 'pkg/sub/m.py', ['go.mod']), '');
  assert.equal(await w.find(root, tree, 'ok.ts', ['tsconfig.json']), '');
  // A deep tree: markers are looked for MAX_WORKSPACE_LEVELS directories up, no further.
  const deep = (n: number) => Array.from({ length: n }, (_, i) => `d${i % 10}`).join('/');
  mkdirSync(join(tree, deep(MAX_WORKSPACE_LEVELS + 20)), { recursive: true });
  writeFileSync(join(tree, deep(10), 'go.mod'), '');
  assert.equal(await w.find(root, tree, `${deep(100)}/x.go`, ['go.mod']), deep(10), '90 levels up: found');
  assert.equal(await w.find(root, tree, `${deep(MAX_WORKSPACE_LEVELS + 20)}/x.go`, ['go.mod']), '', 'past the bound: the top');
  assert.equal(await findFileOf(tree, (p) => p.endsWith('.py')), 'pkg/sub/m.py');
  assert.equal(await findFileOf(tree, (p) => p.endsWith('.rs')), undefined);
});
