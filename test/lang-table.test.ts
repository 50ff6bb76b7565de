// The server table as a whole, on one real daemon: /readyz lists every row with
// whether its server is installed, its version, and why not; a monorepo (two Go
// modules, a TypeScript package and a Python project side by side) gets one
// session per workspace, each answering within its own. Plus the pure pieces the
// rows rely on: readiness by log line and by expected progress, generated compile
// databases, dependency notes, paths under a fetched mount.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { clangdSessionFiles, CLANGD_CDB_DIR, type CdbLimits } from '../src/lsp/servers/clangd-cdb.js';
import { bodyText } from '../src/lsp/session/session-files.js';
import { dependencyNote, fetchingFor, type DependencySource } from '../src/lsp/session/dependencies.js';
import { hostPathOf } from '../src/lsp/answer/paths.js';
import { settingFor } from '../src/lsp/servers/server-row.js';
import { ReadinessTracker } from '../src/lsp/session/readiness.js';
import { debianVersion } from '../src/lsp/servers/server-env.js';
import type { FetchView } from '../src/fetch/types.js';
import { scratchDir } from './helpers/fetch-env.js';
import { cannotJail, fetchSettled, getJson, lineOf, lspQuery, position, realRows, uploadDir } from './helpers/lsp-harness.js';
import { acmeRoot, langSuite } from './helpers/lang-suite.js';

const skip = cannotJail();
const FX = 'monorepo';
const root = acmeRoot(FX);

describe('the table on a real daemon', { skip }, () => {
  const s = langSuite({ uploads: [[root, FX]] });

  test('/readyz lists every row: available with a version, or unavailable with the reason', async () => {
    const r = await getJson(s.daemon().url, '/readyz');
    assert.equal(r.status, 200, JSON.stringify(r.body));
    const servers = r.body.servers as Record<string, { available: boolean; version?: string; reason?: string }>;
    assert.deepEqual(
      Object.keys(servers).sort(),
      realRows()
        .map((x) => x.name)
        .sort(),
    );
    for (const name of ['typescript', 'typescript-language-server', 'pyright', 'intelephense', 'bash-language-server']) {
      assert.equal(servers[name]!.available, true, name);
      assert.match(servers[name]!.version ?? '', /^\d+\.\d+\.\d+/, name);
    }
    // Debian packages: the version dpkg recorded (images/pins.env pins it).
    assert.deepEqual(servers.gopls, {
      available: true,
      version: '2:0.16.1+ds-1 (go 1.24.4)',
      hierarchy_ops: ['incomingCalls', 'outgoingCalls'],
      hierarchy_ops_from: 'row',
      edit_ops: ['rename', 'codeActions'],
      edit_ops_from: 'row',
    });
    // The newest clangd bookworm packages (clangd-16), not the default clangd 14.
    assert.match(servers.clangd!.version ?? '', /^1:16\./);
    // Rust: Debian 13's, from the Debian 13 root, which /readyz names with its packages.
    assert.deepEqual(servers['rust-analyzer'], {
      available: true,
      version: '1.85.1+dfsg1-1+deb13u1',
      toolchain:
        "Debian 13 root (LSPD_DEBIAN13_ROOT), bound as the jail's /usr: rustc 1.85.1+dfsg1-1+deb13u1, cargo 1.85.1+dfsg1-1+deb13u1, rust-src 1.85.1+dfsg1-1+deb13u1",
      hierarchy_ops: ['incomingCalls', 'outgoingCalls'],
      hierarchy_ops_from: 'row',
      edit_ops: ['rename', 'codeActions'],
      edit_ops_from: 'row',
    });
    // The rows only the image installs: unavailable here, saying why.
    for (const name of ['jdtls', 'ruby-lsp']) {
      assert.deepEqual(servers[name], {
        available: false,
        reason: `not installed (${name} is installed by the image only: images/pins.env pins its release and sha256, and this host cannot download it)`,
      });
    }
  });

  test('a file whose server is absent is refused with the reason', async () => {
    const dir = scratchDir('lspd-java-');
    writeFileSync(join(dir, 'Main.java'), 'class Main {}\n');
    const java = acmeRoot('java', 'java-tree');
    await uploadDir(s.daemon().url, java, dir);
    const r = await lspQuery(s.daemon().url, { ...java, op: 'hover', path: 'Main.java', line: 0, character: 7 });
    assert.equal(r.status, 422);
    assert.equal(r.body.error, 'no_server');
    assert.match(String(r.body.message), /jdtls is installed by the image only/);
  });

  test('monorepo: one session per workspace, each answering within its own', async () => {
    const def = async (path: string, needle: string) => {
      const r = await lspQuery(s.daemon().url, { ...root, op: 'definition', path, ...position(FX, path, needle) });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      return (r.body.locations as { path: string; range: { start: { line: number } } }[]).map((l) => `${l.path}:${l.range.start.line}`);
    };
    // The Go modules' fetch ending restarts their gopls sessions (by design: sessions
    // see the dependencies); asked before it ends, the listing below could miss them.
    assert.notEqual((await fetchSettled(s.daemon().url, root)).state, 'running');
    const [api, worker, web, tools] = await Promise.all([
      def('services/api/main.go', 'Greet("api")'),
      def('services/worker/main.go', 'Greet("worker")'),
      def('web/src/app.ts', "greet('web')"),
      def('tools/pkg/app.py', 'greet("tools")'),
    ]);
    assert.deepEqual(api, [`services/api/greet/greet.go:${lineOf(FX, 'services/api/greet/greet.go', 'func Greet(')}`]);
    assert.deepEqual(worker, [`services/worker/greet/greet.go:${lineOf(FX, 'services/worker/greet/greet.go', 'func Greet(')}`]);
    assert.deepEqual(web, [`web/src/greet.ts:${lineOf(FX, 'web/src/greet.ts', 'export function greet')}`]);
    assert.deepEqual(tools, [`tools/pkg/greet.py:${lineOf(FX, 'tools/pkg/greet.py', 'def greet')}`]);

    // References of one module's Greet never reach into the other module.
    const refs = await lspQuery(s.daemon().url, {
      ...root,
      op: 'references',
      path: 'services/api/greet/greet.go',
      ...position(FX, 'services/api/greet/greet.go', 'func Greet(', 5),
    });
    const paths = (refs.body.locations as { path: string }[]).map((l) => l.path);
    assert.ok(paths.length >= 2 && paths.every((p) => p.startsWith('services/api/')), JSON.stringify(paths));

    const got = await getJson(s.daemon().url, `/v1/roots/${root.org}/${root.repo}/${root.sha}`);
    const sessions = (got.body.sessions as { server: string; workspace: string }[]).map((s) => `${s.server}@${s.workspace}`).sort();
    assert.deepEqual(sessions, ['gopls@services/api', 'gopls@services/worker', 'pyright@tools', 'typescript@web']);
  });
});

test('readiness by log line: only the pattern counts, and the line is not kept', async () => {
  const t = new ReadinessTracker({ kind: 'logMessage', pattern: /BackgroundAnalysis: Completed/ }, 0, 0);
  assert.equal(t.isReady(undefined), false);
  t.onLog({ type: 3, message: 'BackgroundAnalysis: resolving glob "**/*.sh" inside "file:///src"...' });
  assert.equal(t.isReady(undefined), false);
  setTimeout(() => t.onLog({ type: 3, message: '06:36:30.666 INFO BackgroundAnalysis: Completed after 0.338 seconds.' }), 10);
  assert.equal(await t.waitReady(undefined, 2000), true);
  t.onProgress({ token: 'x', value: { kind: 'begin', title: 'something else' } });
  assert.equal(t.isReady(undefined), false, 'open progress still blocks');
});

test('readiness by diagnostics, progress due after them: a progress that begins late still holds it (clangd under load)', async () => {
  const row = { kind: 'documentDiagnostics', graceMs: 0, progressWithinMs: 200 } as const;
  const uri = 'file:///src/main.c';
  const t = new ReadinessTracker(row, 0, 0);
  t.watch(uri);
  t.onDiagnostics({ uri, diagnostics: [] });
  assert.equal(t.isReady(uri), false, 'diagnostics alone: the index may not have begun');
  t.onProgress({ token: 'i', value: { kind: 'begin', title: 'indexing' } });
  assert.equal(t.isReady(uri), false);
  t.onProgress({ token: 'i', value: { kind: 'end' } });
  assert.equal(t.isReady(uri), true);
  // No progress ever: ready once the window after the diagnostics has passed, not before.
  const quiet = new ReadinessTracker(row, 0, 0);
  quiet.watch(uri);
  quiet.onDiagnostics({ uri, diagnostics: [] });
  const began = Date.now();
  assert.equal(await quiet.waitReady(uri, 5000), true);
  assert.ok(Date.now() - began >= 150, 'waited for the window');
});

test('readiness with expected progress: quiet before the first progress is not ready', async () => {
  const t = new ReadinessTracker({ kind: 'progress', expectProgress: true }, 0, 0);
  assert.equal(t.isReady(undefined), false, 'intelephense has not begun indexing yet');
  t.onProgress({ token: 1, value: { kind: 'begin', title: 'Intelephense indexing' } });
  assert.equal(t.isReady(undefined), false);
  t.onProgress({ token: 1, value: { kind: 'end' } });
  assert.equal(t.isReady(undefined), true);
  assert.equal(
    await new ReadinessTracker({ kind: 'progress', expectProgress: true }, 0, 0).waitReady(undefined, 50),
    false,
    'bounded: incomplete, never a hang',
  );
});

/** The generated database of a clangd session, parsed, and the notes (complete once it was read). */
async function cdb(
  ws: { treeHostDir: string; workspace: string; workspaceAt: string },
  limits?: CdbLimits,
): Promise<{ db: CdbEntry[]; text: string; notes: readonly string[] }> {
  const g = await clangdSessionFiles(ws, limits);
  assert.deepEqual(Object.keys(g.files), [`${CLANGD_CDB_DIR}/compile_commands.json`]);
  const text = await bodyText(g.files[`${CLANGD_CDB_DIR}/compile_commands.json`]!);
  return { db: JSON.parse(text) as CdbEntry[], text, notes: g.notes };
}
type CdbEntry = { directory: string; file: string; arguments: string[]; command?: string; output?: string };

test('clangd: a tree without a database gets one listing its sources; one with a database gets a copy; links are not followed', async () => {
  const tree = scratchDir('lspd-cdb-');
  mkdirSync(join(tree, 'lib', 'src'), { recursive: true });
  mkdirSync(join(tree, 'lib', 'nested'), { recursive: true });
  writeFileSync(join(tree, 'lib', 'src', 'a.c'), 'int a;\n');
  writeFileSync(join(tree, 'lib', 'src', 'b.cpp'), 'int b;\n');
  writeFileSync(join(tree, 'lib', 'src', 'b.h'), 'int b;\n');
  writeFileSync(join(tree, 'lib', 'nested', 'compile_flags.txt'), '-DX\n');
  writeFileSync(join(tree, 'lib', 'nested', 'n.c'), 'int n;\n');
  symlinkSync('/etc/passwd', join(tree, 'lib', 'src', 'evil.c'));
  const { db, notes } = await cdb({ treeHostDir: tree, workspace: 'lib', workspaceAt: '/src/lib' });
  assert.deepEqual(
    db.map((e) => e.file),
    ['/src/lib/src/a.c', '/src/lib/src/b.cpp'],
    'sources only; the nested workspace and the link left out',
  );
  assert.deepEqual(db[0]!.arguments, ['clang', '-I/src/lib', '-I/src/lib/include', '-I/src/lib/src', '-c', '/src/lib/src/a.c']);
  assert.equal(db[1]!.arguments[0], 'clang++');
  assert.deepEqual(notes, []);
  const nested = await cdb({ treeHostDir: tree, workspace: 'lib/nested', workspaceAt: '/src/lib/nested' });
  assert.deepEqual(nested.db[0]!.arguments, ['clang', '-DX', '-c', '/src/lib/nested/n.c']);
  writeFileSync(join(tree, 'lib', 'compile_commands.json'), '[{"directory":"/ci","file":"x.c","command":"cc x.c"}]');
  const own = await cdb({ treeHostDir: tree, workspace: 'lib', workspaceAt: '/src/lib' });
  // Nothing of it found in the tree: copied as it is, but for `command` given back as `arguments` (split, filtered).
  assert.deepEqual(own.db, [{ directory: '/ci', file: 'x.c', arguments: ['cc', 'x.c'] }]);
  assert.deepEqual(own.notes, []);
});

test("clangd: a database written on a CI machine is rebased onto the workspace's in-jail path", async () => {
  const tree = scratchDir('lspd-cdb-ci-');
  mkdirSync(join(tree, 'src'), { recursive: true });
  mkdirSync(join(tree, 'build'), { recursive: true });
  writeFileSync(join(tree, 'src', 'a.c'), 'int a;\n');
  const ci = '/home/runner/work/app/app';
  const db = [
    { directory: `${ci}/build`, file: `${ci}/src/a.c`, arguments: ['cc', `-I${ci}/include`, `-I${ci}-extra/x`, '-c', `${ci}/src/a.c`] },
    { directory: `${ci}/build`, file: '../src/a.c', command: `cc -I${ci}/include -c ../src/a.c` },
  ];
  writeFileSync(join(tree, 'build', 'compile_commands.json'), JSON.stringify(db));
  const got = (await cdb({ treeHostDir: tree, workspace: '', workspaceAt: '/src' })).db;
  assert.equal(got[0]!.directory, '/src/build');
  assert.equal(got[0]!.file, '/src/src/a.c');
  assert.deepEqual(got[0]!.arguments, ['cc', '-I/src/include', `-I${ci}-extra/x`, '-c', '/src/src/a.c'], 'only whole path prefixes');
  assert.deepEqual(got[1]!.arguments, ['cc', '-I/src/include', '-c', '../src/a.c']);
  const inJail = [{ directory: '/src', file: 'src/a.c', arguments: ['cc', '-c', 'src/a.c'] }];
  writeFileSync(join(tree, 'compile_commands.json'), JSON.stringify(inJail));
  assert.deepEqual((await cdb({ treeHostDir: tree, workspace: '', workspaceAt: '/src' })).db, inJail, 'already the jail layout: unchanged');
});

test('dependency notes: per ecosystem, failures and refusals with their reason', () => {
  const rows = realRows();
  const row = (n: string) => rows.find((r) => r.name === n)!;
  const src = (view: FetchView): DependencySource => ({
    state: () => view,
    peek: () => view,
    wait: async () => view,
    serveBinds: () => [],
    serveEnv: () => ({}),
    onDone: () => () => {},
  });
  const key = { org: 'a', repo: 'b', sha: 'c'.repeat(40) };
  const mixed: FetchView = {
    state: 'failed',
    error: 'a dependency fetch failed',
    ecosystems: [
      { ecosystem: 'go', dir: '', state: 'failed', reason: 'go.sum lacks entries' },
      { ecosystem: 'npm', dir: 'web', state: 'done' },
      { ecosystem: 'python', dir: 'tools', state: 'refused', reason: 'Python dependencies were not fetched: pip runs code.' },
    ],
  };
  assert.deepEqual(dependencyNote(src(mixed), key, row('gopls')), { state: 'failed', error: 'go.sum lacks entries' });
  assert.deepEqual(dependencyNote(src(mixed), key, row('typescript')), { state: 'done' });
  assert.deepEqual(dependencyNote(src(mixed), key, row('pyright')), { state: 'refused', error: 'Python dependencies were not fetched: pip runs code.' });
  assert.deepEqual(dependencyNote(src(mixed), key, row('clangd')), { state: 'none' });
  assert.deepEqual(dependencyNote(src({ state: 'none' }), key, row('pyright')), { state: 'none' });
  // Done, with what was left out named; composer answers are intelephense's.
  const skipped: FetchView = {
    state: 'done',
    ecosystems: [
      { ecosystem: 'python', dir: '', state: 'done', skipped: ['only-sdist==1.0: no wheel'] },
      { ecosystem: 'composer', dir: '', state: 'done' },
    ],
  };
  assert.deepEqual(dependencyNote(src(skipped), key, row('pyright')), { state: 'done', skipped: ['only-sdist==1.0: no wheel'] });
  assert.deepEqual(dependencyNote(src(skipped), key, row('intelephense')), { state: 'done' });
  const running: FetchView = { state: 'running', ecosystems: [{ ecosystem: 'go', dir: '', state: 'running' }] };
  assert.equal(fetchingFor(running, row('gopls')), true);
  assert.equal(fetchingFor(running, row('typescript')), false, 'a TypeScript query does not wait for Go modules');
  // Mounts are published when the job ends: Go's steps being done is not enough.
  const goDoneNpmRunning: FetchView = {
    state: 'running',
    ecosystems: [
      { ecosystem: 'go', dir: '', state: 'done' },
      { ecosystem: 'npm', dir: 'web', state: 'running' },
    ],
  };
  assert.equal(fetchingFor(goDoneNpmRunning, row('gopls')), true);
  assert.equal(fetchingFor({ ...goDoneNpmRunning, state: 'done' }, row('gopls')), false);
});

test('pyright is given the fetched site-packages as extra paths, and only then', () => {
  const pyright = realRows().find((r) => r.name === 'pyright')!;
  const binds = [
    { host: '/d/deps/npm/top/node_modules', at: '/src/node_modules' },
    { host: '/d/deps/python/top/site-packages', at: '/deps/python/top/site-packages' },
    { host: '/d/deps/python/ws/svc/site-packages', at: '/deps/python/ws/svc/site-packages' },
  ];
  const s = pyright.dependencySettings!(binds)!;
  const sites = ['/deps/python/top/site-packages', '/deps/python/ws/svc/site-packages'];
  assert.deepEqual((settingFor(pyright, 'python.analysis', s) as { extraPaths: string[] }).extraPaths, sites);
  assert.deepEqual((settingFor(pyright, 'python', s) as { analysis: { extraPaths: string[] } }).analysis.extraPaths, sites);
  assert.equal((settingFor(pyright, 'python', s) as { pythonPath: string }).pythonPath, '/usr/bin/python3');
  assert.equal(pyright.dependencySettings!(binds.slice(0, 1)), undefined, 'nothing fetched: the row settings as they are');
  assert.equal((settingFor(pyright, 'python.analysis') as { extraPaths?: string[] }).extraPaths, undefined);
});

test('paths under a fetched mount read from the mount; the deepest mount wins', () => {
  const dirs = {
    treeHostDir: '/d/roots/x/tree',
    depsHostDir: '/d/roots/x/deps',
    mounts: [{ host: '/d/roots/x/deps/npm/ws/web/node_modules', at: '/src/web/node_modules' }],
  };
  assert.equal(hostPathOf('/src/web/node_modules/left-pad/index.js', dirs), '/d/roots/x/deps/npm/ws/web/node_modules/left-pad/index.js');
  assert.equal(hostPathOf('/src/web/src/app.ts', dirs), '/d/roots/x/tree/web/src/app.ts');
  assert.equal(hostPathOf('/src/web/node_modules/../../../etc/passwd', dirs), undefined);
});

test('Debian versions come from dpkg status, a paragraph per package', async () => {
  const f = join(scratchDir('lspd-dpkg-'), 'status');
  writeFileSync(
    f,
    'Package: gopls\nStatus: install ok installed\nVersion: 1:0.5.0+ds-1\n\nPackage: clangd\nStatus: deinstall ok config-files\nVersion: 1:14\n',
  );
  assert.equal(await debianVersion('gopls', f), '1:0.5.0+ds-1');
  assert.equal(await debianVersion('clangd', f), undefined, 'removed packages are not installed');
  assert.equal(await debianVersion('nope', f), undefined);
});
