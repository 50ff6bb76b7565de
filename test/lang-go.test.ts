// Go: gopls in the real SERVE jail on test/fixtures/go-basic (every op, by file and
// line), and the hermetic dependency acceptance: test/fixtures/go-dep requires
// example.com/dep v1.0.0, published into a directory laid out as a Go module proxy
// and fetched by the real FETCH phase with GOPROXY=file://…; a definition of
// dep.Greet from main.go and `/ask dep.Greet` then land `external` at
// example.com/dep@v1.0.0 in the read-only module cache.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { scratchDir } from './helpers/fetch-env.js';
import { buildGoProxy } from './helpers/go-proxy.js';
import { cannotJail, fetchSettled, lineOf, position, postJson } from './helpers/lsp-harness.js';
import { lacksBinaries } from './helpers/host.js';
import { acmeRoot, assertClean, at, completeDiagnostics, langSuite, type Loc, symbolIn, symbols } from './helpers/lang-suite.js';

const skip = cannotJail() ?? lacksBinaries('gopls or go', '/usr/bin/gopls', '/usr/bin/go');
const FX = 'go-basic';
const basic = acmeRoot(FX);
const withDep = acmeRoot('go-dep', 'go-dep-fetched');

describe('Go (gopls) in the SERVE jail', { skip }, () => {
  const { daemon, ask } = langSuite({
    server: 'gopls',
    uploads: [
      [basic, FX],
      [withDep, 'go-dep'],
    ],
    // Nothing may leave: the file:// proxy needs no network and go.sum is complete.
    start: () => ({ env: { LSPD_GO_PROXY: buildGoProxy(scratchDir('lspd-lang-goproxy-')), LSPD_FETCH_REGISTRIES: '127.0.0.1:9' } }),
  });

  test('definition crosses packages, first answer right', async () => {
    const a = await ask(basic, { op: 'definition', path: 'main.go', ...position(FX, 'main.go', 'Greet("world")') });
    assert.equal(a.incomplete, false);
    assert.deepEqual(at(a), [`greet/greet.go:${lineOf(FX, 'greet/greet.go', 'func Greet(')}`]);
    assert.match((a.locations as Loc[])[0]!.preview!, /func Greet\(name string\) string/);
    // A module with no requirements: its fetch had nothing to download, and succeeded.
    assert.deepEqual(a.dependencies, { state: 'done' });
  });

  test('references across packages, with and without the declaration', async () => {
    const pos = position(FX, 'greet/greet.go', 'func Greet(', 'func '.length);
    const all = await ask(basic, { op: 'references', path: 'greet/greet.go', ...pos });
    assert.deepEqual(
      at(all).sort(),
      [
        `greet/greet.go:${lineOf(FX, 'greet/greet.go', 'func Greet(')}`,
        `greet/greet.go:${lineOf(FX, 'greet/greet.go', 'says " + Greet(')}`,
        `main.go:${lineOf(FX, 'main.go', 'Greet("world")')}`,
        `main.go:${lineOf(FX, 'main.go', 'Greet("again")')}`,
      ].sort(),
    );
    const uses = await ask(basic, { op: 'references', path: 'greet/greet.go', ...pos, includeDeclaration: false });
    assert.equal(uses.total, 3, JSON.stringify(uses.locations));
  });

  test('hover shows the signature and the doc comment', async () => {
    const a = await ask(basic, { op: 'hover', path: 'main.go', ...position(FX, 'main.go', 'Greet("again")') });
    assert.match(String(a.contents), /func (greet\.)?Greet\(name string\) string/);
    assert.match(String(a.contents), /Greet returns a greeting for name/);
    assert.ok(!String(a.contents).includes('/src/'), 'no in-jail path');
  });

  test('documentSymbols: functions, the type and its method', async () => {
    const a = await ask(basic, { op: 'documentSymbols', path: 'greet/greet.go' });
    const syms = symbols(a);
    const by = (n: string) => syms.find((s) => s.name === n || s.name.endsWith(`.${n}`) || s.name.endsWith(`) ${n}`));
    assert.equal(by('Greet')?.range.start.line, lineOf(FX, 'greet/greet.go', 'func Greet('));
    assert.equal(by('Person')?.range.start.line, lineOf(FX, 'greet/greet.go', 'type Person struct'));
    assert.equal(by('Person')?.kind, 'struct');
    assert.equal(by('Hello')?.range.start.line, lineOf(FX, 'greet/greet.go', 'func (p Person) Hello'));
  });

  test('workspaceSymbols finds the type by name', async () => {
    const a = await ask(basic, { op: 'workspaceSymbols', query: 'Person' });
    const p = symbolIn(a, (s) => s.name === 'Person' || s.name.endsWith('.Person'));
    assert.equal(p.path, 'greet/greet.go');
    assert.equal(p.range.start.line, lineOf(FX, 'greet/greet.go', 'type Person struct'));
  });

  test('diagnostics: the type error is pushed and found; a clean file is clean', async () => {
    const bad = await ask(basic, { op: 'diagnostics', path: 'broken/broken.go' });
    const diags = completeDiagnostics(bad);
    assert.ok(diags.length >= 1, JSON.stringify(bad));
    assert.equal(diags[0]!.severity, 'error');
    assert.equal(diags[0]!.range.start.line, lineOf(FX, 'broken/broken.go', 'var n int'));
    assert.match(diags[0]!.message, /cannot use "three"/);
    const clean = await ask(basic, { op: 'diagnostics', path: 'greet/greet.go' });
    assertClean(clean);
  });

  test('acceptance: dep.Greet, fetched from a file:// module proxy, answers external at example.com/dep@v1.0.0', async () => {
    // The fetch runs in the background after the upload; a query would wait for it
    // too, but the state is checked first so a failure names its log.
    const fetch = await fetchSettled(daemon().url, withDep);
    assert.equal(fetch.state, 'done', JSON.stringify(fetch));

    const FXD = 'go-dep';
    const a = await ask(withDep, { op: 'definition', path: 'main.go', ...position(FXD, 'main.go', 'Greet("world")') });
    assert.equal(a.incomplete, false);
    assert.deepEqual(a.dependencies, { state: 'done' });
    const locs = a.locations as Loc[];
    assert.equal(locs.length, 1, JSON.stringify(a));
    assert.deepEqual(
      { external: locs[0]!.external, module: locs[0]!.module, version: locs[0]!.version, path: locs[0]!.path },
      { external: true, module: 'example.com/dep', version: 'v1.0.0', path: 'greet.go' },
    );
    assert.equal(locs[0]!.range.start.line, 4); // `func Greet(` in test/fixtures/go-proxy/example.com/dep@v1.0.0/greet.go
    assert.match(locs[0]!.preview!, /func Greet\(name string\) string/);

    const asked = await postJson(daemon().url, '/ask', { ...withDep, symbol: 'dep.Greet' });
    assert.equal(asked.status, 200, JSON.stringify(asked.body));
    const aloc = asked.body.locations as Loc[];
    assert.ok(aloc.length >= 1, JSON.stringify(asked.body));
    assert.deepEqual(
      { external: aloc[0]!.external, module: aloc[0]!.module, version: aloc[0]!.version, path: aloc[0]!.path, line: aloc[0]!.range.start.line },
      { external: true, module: 'example.com/dep', version: 'v1.0.0', path: 'greet.go', line: 4 },
    );
  });
});
