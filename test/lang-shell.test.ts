// Shell: bash-language-server in the real SERVE jail on test/fixtures/sh-basic,
// whose main.sh sources lib/greet.sh by a computed path (so only
// includeAllWorkspaceSymbols resolves its functions), with shellcheck (Debian,
// /usr/bin) for diagnostics. The server sends no progress and answers empty until
// its background analysis is done: the first answer must already be right.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { cannotJail, lineOf, position } from './helpers/lsp-harness.js';
import { lacksBinaries } from './helpers/host.js';
import { acmeRoot, assertClean, at, completeDiagnostics, langSuite, symbolIn, symbols } from './helpers/lang-suite.js';

const skip = cannotJail() ?? lacksBinaries('shellcheck', '/usr/bin/shellcheck');
const FX = 'sh-basic';
const root = acmeRoot(FX);

describe('Shell (bash-language-server + shellcheck) in the SERVE jail', { skip }, () => {
  const s = langSuite({ server: 'bash-language-server', uploads: [[root, FX]] });
  const ask = (body: Record<string, unknown>) => s.ask(root, body);

  test('definition of a function from a file sourced by a computed path; the first answer is right', async () => {
    const a = await ask({ op: 'definition', path: 'main.sh', ...position(FX, 'main.sh', 'greet world') });
    assert.equal(a.incomplete, false);
    assert.deepEqual(at(a), [`lib/greet.sh:${lineOf(FX, 'lib/greet.sh', 'greet() {')}`]);
  });

  test('references across files', async () => {
    const a = await ask({ op: 'references', path: 'lib/greet.sh', ...position(FX, 'lib/greet.sh', 'greet() {') });
    const got = at(a);
    for (const want of [
      `lib/greet.sh:${lineOf(FX, 'lib/greet.sh', 'greet() {')}`,
      `lib/greet.sh:${lineOf(FX, 'lib/greet.sh', '  greet "$1"')}`,
      `main.sh:${lineOf(FX, 'main.sh', 'greet world')}`,
      `main.sh:${lineOf(FX, 'main.sh', 'greet "$USER"')}`,
    ])
      assert.ok(got.includes(want), `${want} in ${JSON.stringify(got)}`);
  });

  test('hover shows the function and its comment', async () => {
    const a = await ask({ op: 'hover', path: 'main.sh', ...position(FX, 'main.sh', 'shout again') });
    assert.match(String(a.contents), /shout/);
    assert.match(String(a.contents), /greet loudly/);
  });

  test('documentSymbols: both functions with their lines', async () => {
    const a = await ask({ op: 'documentSymbols', path: 'lib/greet.sh' });
    const syms = symbols(a);
    assert.equal(syms.find((s) => s.name === 'greet')?.range.start.line, lineOf(FX, 'lib/greet.sh', 'greet() {'));
    assert.equal(syms.find((s) => s.name === 'shout')?.range.start.line, lineOf(FX, 'lib/greet.sh', 'shout() {'));
    assert.equal(syms.find((s) => s.name === 'greet')?.kind, 'function');
  });

  test('workspaceSymbols finds a function in another file', async () => {
    const a = await ask({ op: 'workspaceSymbols', query: 'shout' });
    const s = symbolIn(a, (x) => x.name === 'shout');
    assert.equal(s.path, 'lib/greet.sh');
    assert.equal(s.range.start.line, lineOf(FX, 'lib/greet.sh', 'shout() {'));
  });

  test("diagnostics: shellcheck's warning with its line; a clean file is clean", async () => {
    const bad = await ask({ op: 'diagnostics', path: 'broken.sh' });
    const diags = completeDiagnostics(bad);
    const sc = diags.find((x) => x.range.start.line === lineOf(FX, 'broken.sh', 'if [ $name'));
    assert.ok(sc, JSON.stringify(diags));
    assert.match(String(sc.code), /SC2086/);
    assert.match(String(sc.source), /shellcheck/i);
    const clean = await ask({ op: 'diagnostics', path: 'lib/greet.sh' });
    assertClean(clean);
  });
});
