// PHP: intelephense in the real SERVE jail on test/fixtures/php-basic (a composer
// project with classes and a function in src/ used from index.php). Every op by
// file and line, with the free features only (no licence key is ever given).
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { cannotJail, lineOf, position } from './helpers/lsp-harness.js';
import { acmeRoot, assertClean, at, completeDiagnostics, langSuite, symbolIn, symbols } from './helpers/lang-suite.js';

const skip = cannotJail();
const FX = 'php-basic';
const root = acmeRoot(FX);

describe('PHP (intelephense) in the SERVE jail', { skip }, () => {
  const s = langSuite({ server: 'intelephense', uploads: [[root, FX]] });
  const ask = (body: Record<string, unknown>) => s.ask(root, body);

  test('definition of a method crosses files', async () => {
    const a = await ask({ op: 'definition', path: 'index.php', ...position(FX, 'index.php', "greet('world')") });
    assert.equal(a.incomplete, false);
    assert.deepEqual(at(a), [`src/Greeter.php:${lineOf(FX, 'src/Greeter.php', 'public function greet(')}`]);
    // composer.lock is absent: nothing to fetch, and the answer says so.
    assert.deepEqual(a.dependencies, { state: 'none' });
  });

  test('definition of a namespaced function', async () => {
    const a = await ask({ op: 'definition', path: 'index.php', ...position(FX, 'index.php', "shout('again')") });
    assert.deepEqual(at(a), [`src/Greeter.php:${lineOf(FX, 'src/Greeter.php', 'function shout(')}`]);
  });

  test('references of a method across files', async () => {
    const a = await ask({ op: 'references', path: 'src/Greeter.php', ...position(FX, 'src/Greeter.php', 'function greet(', 'function '.length) });
    const got = at(a);
    for (const want of [
      `index.php:${lineOf(FX, 'index.php', "greet('world')")}`,
      `src/Person.php:${lineOf(FX, 'src/Person.php', '$g->greet(')}`,
      `src/Greeter.php:${lineOf(FX, 'src/Greeter.php', '->greet($name)')}`,
    ])
      assert.ok(got.includes(want), `${want} in ${JSON.stringify(got)}`);
  });

  test('hover shows the signature and the doc comment', async () => {
    const a = await ask({ op: 'hover', path: 'index.php', ...position(FX, 'index.php', "greet('world')") });
    assert.match(String(a.contents), /function greet\(string \$name\): string/);
    assert.match(String(a.contents), /Greet someone by name/);
  });

  test('documentSymbols: the class, its method, the function', async () => {
    const a = await ask({ op: 'documentSymbols', path: 'src/Greeter.php' });
    const syms = symbols(a);
    const by = (n: string) => syms.find((s) => s.name === n || s.name.endsWith(`\\${n}`));
    assert.equal(by('Greeter')?.kind, 'class');
    assert.equal(by('greet')?.kind, 'method');
    assert.equal(by('greet')?.range.start.line, lineOf(FX, 'src/Greeter.php', 'public function greet(') - 1, 'its range starts at its doc comment');
    assert.equal(by('shout')?.kind, 'function');
  });

  test('workspaceSymbols finds a class in another file', async () => {
    const a = await ask({ op: 'workspaceSymbols', query: 'Person' });
    const p = symbolIn(a, (s) => s.name === 'Person' || s.name.endsWith('\\Person'));
    assert.equal(p.path, 'src/Person.php');
    assert.equal(p.range.start.line, lineOf(FX, 'src/Person.php', 'class Person'));
  });

  test('diagnostics: the syntax error with its line; a clean file is clean', async () => {
    const bad = await ask({ op: 'diagnostics', path: 'src/Broken.php' });
    const diags = completeDiagnostics(bad);
    assert.ok(
      diags.some((x) => x.severity === 'error' && x.range.start.line === lineOf(FX, 'src/Broken.php', '$n = ;')),
      JSON.stringify(diags),
    );
    const clean = await ask({ op: 'diagnostics', path: 'src/Person.php' });
    assertClean(clean);
  });
});
