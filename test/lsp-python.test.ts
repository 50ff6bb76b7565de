// Every /v1/code/lsp op on the Python fixture, answered by pyright in the real
// SERVE jail, the tree uploaded through the real PUT route. Positions are found by
// text; answers are checked by file and line.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { cannotJail, lineOf, lspQuery, position } from './helpers/lsp-harness.js';
import { acmeRoot, assertAnswerFrame, assertClean, at, completeDiagnostics, langSuite, locs, symbolIn, symbols } from './helpers/lang-suite.js';

const skip = cannotJail();
const FX = 'py-basic';
const root = acmeRoot(FX);

describe('Python (pyright) in the SERVE jail', { skip }, () => {
  const s = langSuite({ server: 'pyright', uploads: [[root, FX]], checks: assertAnswerFrame });
  const ask = (body: Record<string, unknown>) => s.ask(root, body);

  test('definition crosses modules', async () => {
    const a = await ask({ op: 'definition', path: 'pkg/app.py', ...position(FX, 'pkg/app.py', 'greet("world")') });
    assert.equal(a.incomplete, false);
    assert.deepEqual(at(a), [`pkg/greet.py:${lineOf(FX, 'pkg/greet.py', 'def greet')}`]);
    assert.match(locs(a)[0]!.preview!, /def greet\(name: str\) -> str:/);
  });

  test('typeDefinition of an instance lands on its class', async () => {
    const a = await ask({ op: 'typeDefinition', path: 'pkg/app.py', ...position(FX, 'pkg/app.py', 'alice.hello') });
    assert.deepEqual(at(a), [`pkg/greet.py:${lineOf(FX, 'pkg/greet.py', 'class Person')}`]);
  });

  test('implementation: pyright does not offer it, and says so', async () => {
    const r = await lspQuery(s.daemon().url, { ...root, op: 'implementation', path: 'pkg/app.py', ...position(FX, 'pkg/app.py', 'alice.hello') });
    assert.equal(r.status, 422);
    assert.equal(r.body.error, 'no_server');
    assert.match(String(r.body.message), /pyright does not answer implementation/);
  });

  test('references with counts', async () => {
    const pos = position(FX, 'pkg/greet.py', 'def greet', 'def '.length);
    const all = await ask({ op: 'references', path: 'pkg/greet.py', ...pos });
    // the definition, the call inside Person.hello, the import and two calls in app.py
    assert.equal(all.total, 5, JSON.stringify(all.locations));
    assert.deepEqual(
      at(all).sort(),
      [
        `pkg/app.py:${lineOf(FX, 'pkg/app.py', 'from pkg.greet')}`,
        `pkg/app.py:${lineOf(FX, 'pkg/app.py', 'greet("world")')}`,
        `pkg/app.py:${lineOf(FX, 'pkg/app.py', 'greet("again")')}`,
        `pkg/greet.py:${lineOf(FX, 'pkg/greet.py', 'def greet')}`,
        `pkg/greet.py:${lineOf(FX, 'pkg/greet.py', 'return greet(other)')}`,
      ].sort(),
    );
    const uses = await ask({ op: 'references', path: 'pkg/greet.py', ...pos, includeDeclaration: false });
    assert.equal(uses.total, 4);
    assert.ok(!at(uses).includes(`pkg/greet.py:${lineOf(FX, 'pkg/greet.py', 'def greet')}`));
  });

  test('hover shows the signature and the docstring', async () => {
    const a = await ask({ op: 'hover', path: 'pkg/app.py', ...position(FX, 'pkg/app.py', 'greet("world")') });
    assert.match(String(a.contents), /def greet\(name: str\) -> str/);
    assert.match(String(a.contents), /Say hello to someone\./);
  });

  test('documentSymbols with containers; filtered', async () => {
    const a = await ask({ op: 'documentSymbols', path: 'pkg/greet.py' });
    const syms = symbols(a);
    const by = (n: string, c?: string) => syms.find((s) => s.name === n && s.container === c);
    assert.equal(by('greet')?.kind, 'function');
    assert.equal(by('greet')?.range.start.line, lineOf(FX, 'pkg/greet.py', 'def greet'));
    assert.equal(by('Person')?.kind, 'class');
    assert.equal(by('hello', 'Person')?.kind, 'method');
    assert.equal(by('hello', 'Person')?.range.start.line, lineOf(FX, 'pkg/greet.py', 'def hello'));
    const f = await ask({ op: 'documentSymbols', path: 'pkg/greet.py', query: 'hell' });
    assert.deepEqual(
      symbols(f).map((s) => s.name),
      ['hello'],
    );
  });

  test('workspaceSymbols finds a class by name', async () => {
    const a = await ask({ op: 'workspaceSymbols', query: 'Person' });
    const p = symbolIn(a, (s) => s.name === 'Person');
    assert.equal(p.path, 'pkg/greet.py');
    assert.equal(p.range.start.line, lineOf(FX, 'pkg/greet.py', 'class Person'));
  });

  test('diagnostics: the type error is found (pulled from pyright); a clean module is clean', async () => {
    const bad = await ask({ op: 'diagnostics', path: 'pkg/broken.py' });
    const diags = completeDiagnostics(bad);
    assert.ok(diags.length >= 1, JSON.stringify(bad));
    assert.equal(diags[0]!.severity, 'error');
    assert.equal(diags[0]!.range.start.line, lineOf(FX, 'pkg/broken.py', 'count: int'));
    assert.match(diags[0]!.message, /"str" is not assignable to "int"|not assignable/);
    const clean = await ask({ op: 'diagnostics', path: 'pkg/app.py' });
    assertClean(clean);
  });
});
