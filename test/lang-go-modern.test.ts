// Go from this decade (issue 32): Debian 13's Go 1.24 and gopls 0.16 in the real
// SERVE jail, where bookworm's Go 1.19 answered false errors ("cannot range over n
// (variable of type int)"). test/fixtures/go-modern holds three modules, each a
// workspace (a session) of its own:
// - ints (go 1.22): range over an int;
// - iters (go 1.23): range over iterator functions, `func(yield func(int) bool)`, its
//   own and the standard library's (maps.Keys);
// - toolchain (go 1.22, `toolchain go1.25.0`): a toolchain line newer than ours.
// test/fixtures/go-future (go 1.25.0) needs a newer Go than the installed one: go
// refuses it, and every answer says why.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { cannotJail, fetchSettled, lineOf, lspQuery, position } from './helpers/lsp-harness.js';
import { lacksBinaries } from './helpers/host.js';
import { acmeRoot, assertClean, at, completeDiagnostics, langSuite, type Loc } from './helpers/lang-suite.js';

const skip = cannotJail() ?? lacksBinaries('gopls or go', '/usr/bin/gopls', '/usr/bin/go');
const FX = 'go-modern';
const root = acmeRoot(FX);
const future = acmeRoot('go-future');
/** The installed Go's version, as the notes name it. */
const GO = /^go(\S+)/.exec(readGoVersion())![1]!;

function readGoVersion(): string {
  try {
    return readFileSync('/usr/lib/go/VERSION', 'utf8');
  } catch {
    return 'go?';
  }
}

describe('modern Go (gopls 0.16, Go 1.24) in the SERVE jail', { skip }, () => {
  const { daemon, ask } = langSuite({
    server: 'gopls',
    uploads: [
      [root, FX],
      [future, 'go-future'],
    ],
    // Nothing to download: no module requires another, and nothing may leave.
    start: () => ({ env: { LSPD_GO_PROXY: 'off', LSPD_FETCH_REGISTRIES: '127.0.0.1:9' } }),
  });

  test('the installed Go is 1.23 or later', () => {
    const [maj, min] = GO.split('.').map(Number) as [number, number];
    assert.ok(maj > 1 || min >= 23, GO);
  });

  test('go 1.22, range over an int: no false diagnostics, definitions right', async () => {
    const a = await ask(root, { op: 'definition', path: 'ints/main.go', ...position(FX, 'ints/main.go', 'Triangle(4)') });
    assert.equal(a.incomplete, false);
    assertClean(await ask(root, { op: 'diagnostics', path: 'ints/main.go' }));
    assert.deepEqual(at(a), [`ints/main.go:${lineOf(FX, 'ints/main.go', 'func Triangle(')}`]);
    // The loop variable of `range n` is the int it ranges over.
    const i = await ask(root, { op: 'definition', path: 'ints/main.go', ...position(FX, 'ints/main.go', 'total += i', 'total += '.length) });
    assert.deepEqual(at(i), [`ints/main.go:${lineOf(FX, 'ints/main.go', 'for i := range n')}`]);
    const h = await ask(root, { op: 'hover', path: 'ints/main.go', ...position(FX, 'ints/main.go', 'total += i', 'total += '.length) });
    assert.match(String(h.contents), /var i int/);
    // The module's fetch had nothing to download, and no toolchain was fetched.
    assert.deepEqual(a.dependencies, { state: 'done' });
    assert.equal(a.notes, undefined);
  });

  test('go 1.23, range over iterator functions: no false diagnostics, definitions and types right', async () => {
    const count = await ask(root, { op: 'definition', path: 'iters/main.go', ...position(FX, 'iters/main.go', 'Count(3)') });
    assert.deepEqual(at(count), [`iters/seq/seq.go:${lineOf(FX, 'iters/seq/seq.go', 'func Count(')}`]);
    assert.match((count.locations as Loc[])[0]!.preview!, /func Count\(n int\) func\(yield func\(int\) bool\)/);
    const sum = await ask(root, { op: 'definition', path: 'iters/main.go', ...position(FX, 'iters/main.go', 'Sum(seq') });
    assert.deepEqual(at(sum), [`iters/seq/seq.go:${lineOf(FX, 'iters/seq/seq.go', 'func Sum(')}`]);
    // v is what the iterator yields: an int, declared by the range statement.
    const v = await ask(root, { op: 'definition', path: 'iters/main.go', ...position(FX, 'iters/main.go', 'total += v', 'total += '.length) });
    assert.deepEqual(at(v), [`iters/main.go:${lineOf(FX, 'iters/main.go', 'for v := range seq.Count(3)')}`]);
    const h = await ask(root, { op: 'hover', path: 'iters/main.go', ...position(FX, 'iters/main.go', 'total += v', 'total += '.length) });
    assert.match(String(h.contents), /var v int/);
    // And the standard library's iterators: maps.Keys yields the map's keys.
    const name = await ask(root, { op: 'hover', path: 'iters/main.go', ...position(FX, 'iters/main.go', 'Println(name)', 'Println('.length) });
    assert.match(String(name.contents), /var name string/);
    // Diagnostics after the definitions: a cold gopls type-checks fmt, maps and slices
    // from source first, which under a loaded CI host can outlast the diagnostics
    // window (the answer is then honestly `incomplete`, which is not what is tested here).
    assertClean(await ask(root, { op: 'diagnostics', path: 'iters/main.go' }));
    assertClean(await ask(root, { op: 'diagnostics', path: 'iters/seq/seq.go' }));
    // References to Count: its declaration and the two calls.
    const refs = await ask(root, { op: 'references', path: 'iters/seq/seq.go', ...position(FX, 'iters/seq/seq.go', 'func Count(', 'func '.length) });
    assert.deepEqual(
      at(refs).sort(),
      [
        `iters/main.go:${lineOf(FX, 'iters/main.go', 'range seq.Count(3)')}`,
        `iters/main.go:${lineOf(FX, 'iters/main.go', 'seq.Sum(seq.Count(4))')}`,
        `iters/seq/seq.go:${lineOf(FX, 'iters/seq/seq.go', 'func Count(')}`,
      ].sort(),
    );
  });

  test('a toolchain line newer than our Go: nothing downloaded, the module served by ours, and the answer says so', async () => {
    const fetch = await fetchSettled(daemon().url, root);
    assert.equal(fetch.state, 'done', JSON.stringify(fetch));
    assertClean(await ask(root, { op: 'diagnostics', path: 'toolchain/main.go' }));
    const a = await ask(root, { op: 'definition', path: 'toolchain/main.go', ...position(FX, 'toolchain/main.go', 'Count(2)') });
    assert.deepEqual(at(a), [`toolchain/main.go:${lineOf(FX, 'toolchain/main.go', 'func Count(')}`]);
    assert.deepEqual(a.notes, [`go.mod prefers toolchain go1.25.0; lspd never downloads one (GOTOOLCHAIN=local): answers come from Go ${GO}.`]);
  });

  test('a go line newer than our Go: the fetch, the diagnostics and a failed definition all say why', async () => {
    const fetch = await fetchSettled(daemon().url, future);
    assert.equal(fetch.state, 'failed', JSON.stringify(fetch));
    const why = `go.mod requires go 1.25.0, newer than this daemon's Go ${GO}`;
    assert.ok(fetch.error?.includes(why), JSON.stringify(fetch));
    const note = `${why}: go refuses to load the module and lspd never downloads a toolchain (GOTOOLCHAIN=local), so answers in it are empty or fail.`;

    const d = await ask(future, { op: 'diagnostics', path: 'main.go' });
    assert.deepEqual(d.notes, [note]);
    assert.deepEqual(d.dependencies, {
      state: 'failed',
      error: `${why}; lspd runs only its pinned Go and never downloads a toolchain (GOTOOLCHAIN=local).`,
    });
    // gopls's own word, on the file: go's refusal, never a download.
    const diags = completeDiagnostics(d);
    assert.ok(
      diags.some((x) => /go\.mod requires go >= 1\.25\.0 \(running go [\d.]+; GOTOOLCHAIN=local\)/.test(x.message)),
      JSON.stringify(diags),
    );

    // gopls has no package for the file: its error comes back with the note.
    const r = await lspQuery(daemon().url, { ...future, op: 'definition', path: 'main.go', ...position('go-future', 'main.go', 'Hello())') });
    assert.equal(r.status, 503, JSON.stringify(r.body));
    assert.equal(r.body.error, 'server_unavailable');
    assert.deepEqual(r.body.notes, [note]);
    assert.equal(typeof r.body.server_message, 'string');
  });
});
