// C and C++: clangd in the real SERVE jail. test/fixtures/c-basic has no compile
// database (lspd lists its sources with the fallback flags, so the background index
// sees the whole workspace); test/fixtures/cpp-cdb has one whose flags (an include
// dir, a -D) the code needs. Every op by file and line; the index lives in the
// session's private tmpfs, never in the read-only tree.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { CLANGD } from '../src/lsp/servers/rows/c.js';
import { cannotJail, lineOf, position } from './helpers/lsp-harness.js';
import { lacksBinaries } from './helpers/host.js';
import { acmeRoot, assertClean, at, completeDiagnostics, langSuite, locs, symbols } from './helpers/lang-suite.js';

const skip = cannotJail() ?? lacksBinaries('clangd', CLANGD);
const C = 'c-basic';
const CPP = 'cpp-cdb';
const cRoot = acmeRoot(C);
const cppRoot = acmeRoot(CPP);

describe('C/C++ (clangd) in the SERVE jail', { skip }, () => {
  const { daemon, ask } = langSuite({
    server: 'clangd',
    uploads: [
      [cRoot, C],
      [cppRoot, CPP],
    ],
  });

  test('definition of a call lands on the .c definition (whole workspace indexed without a database)', async () => {
    const a = await ask(cRoot, { op: 'definition', path: 'src/main.c', ...position(C, 'src/main.c', 'greet(buf, sizeof buf, "world")') });
    assert.equal(a.incomplete, false);
    assert.deepEqual(at(a), [`src/greet.c:${lineOf(C, 'src/greet.c', 'int greet(')}`]);
    assert.match(locs(a)[0]!.preview!, /int greet\(char \*out, int size, const char \*name\)/);
  });

  test('references across files: header declaration, definition, calls', async () => {
    const a = await ask(cRoot, { op: 'references', path: 'src/main.c', ...position(C, 'src/main.c', 'greet(buf, sizeof buf, "world")') });
    assert.deepEqual(
      at(a).sort(),
      [
        `include/greet.h:${lineOf(C, 'include/greet.h', 'int greet(')}`,
        `src/greet.c:${lineOf(C, 'src/greet.c', 'int greet(')}`,
        `src/greet.c:${lineOf(C, 'src/greet.c', 'return greet(out')}`,
        `src/main.c:${lineOf(C, 'src/main.c', '"world")')}`,
        `src/main.c:${lineOf(C, 'src/main.c', '"again")')}`,
      ].sort(),
    );
  });

  test('hover shows the declaration and its comment', async () => {
    const a = await ask(cRoot, { op: 'hover', path: 'src/main.c', ...position(C, 'src/main.c', 'greet(buf, sizeof buf, "again")') });
    assert.match(String(a.contents), /int greet\(char \*out, int size, const char \*name\)/);
    assert.match(String(a.contents), /Write a greeting for name into out/);
    assert.ok(!String(a.contents).includes('/home/lspd'), 'no in-jail home path');
  });

  test('documentSymbols of a header: the struct and both functions', async () => {
    const a = await ask(cRoot, { op: 'documentSymbols', path: 'include/greet.h' });
    const syms = symbols(a);
    const by = (n: string) => syms.find((s) => s.name === n);
    assert.equal(by('greet')?.kind, 'function');
    assert.equal(by('greet')?.range.start.line, lineOf(C, 'include/greet.h', 'int greet('));
    assert.ok(['struct', 'class'].includes(by('person')?.kind ?? ''), 'clangd calls a C struct a class');
    assert.equal(by('person_hello')?.range.start.line, lineOf(C, 'include/greet.h', 'int person_hello('));
  });

  test('diagnostics: the type error with its line; a clean file is clean', async () => {
    const bad = await ask(cRoot, { op: 'diagnostics', path: 'src/broken.c' });
    const diags = completeDiagnostics(bad);
    assert.ok(
      diags.some((x) => x.severity === 'error' && x.range.start.line === lineOf(C, 'src/broken.c', 'int n = p;')),
      JSON.stringify(diags),
    );
    const clean = await ask(cRoot, { op: 'diagnostics', path: 'src/main.c' });
    assert.deepEqual(clean.diagnostics, []);
  });

  test('workspaceSymbols finds a function defined in another file', async () => {
    const a = await ask(cRoot, { op: 'workspaceSymbols', query: 'person_hello' });
    const paths = symbols(a)
      .filter((s) => s.name === 'person_hello')
      .map((s) => s.path);
    assert.ok(paths.includes('src/greet.c') || paths.includes('include/greet.h'), JSON.stringify(a.symbols));
  });

  test("a tree's compile_commands.json is used: its -I and -D make the C++ clean, definitions cross files", async () => {
    const clean = await ask(cppRoot, { op: 'diagnostics', path: 'src/shape.cpp' });
    assertClean(clean, 'GREETING and inc/ come from the database');
    const a = await ask(cppRoot, { op: 'definition', path: 'src/main.cpp', ...position(CPP, 'src/main.cpp', 'describe(sq)') });
    assert.deepEqual(at(a), [`src/shape.cpp:${lineOf(CPP, 'src/shape.cpp', 'std::string describe(')}`]);
    const impl = await ask(cppRoot, { op: 'implementation', path: 'inc/shape.hpp', ...position(CPP, 'inc/shape.hpp', 'area() const = 0') });
    assert.ok(at(impl).includes(`inc/shape.hpp:${lineOf(CPP, 'inc/shape.hpp', 'double area() const override')}`), JSON.stringify(impl.locations));
  });

  test('the index was written in the private tmpfs, never into the stored tree', () => {
    for (const root of [cRoot, cppRoot]) {
      assert.equal(existsSync(join(daemon().store.treeDir(root), '.cache')), false, `${root.repo}: no .cache in the tree`);
    }
  });
});
