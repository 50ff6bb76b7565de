// CSS, SCSS and Less: vscode-css-language-server (vscode-langservers-extracted) in the
// real SERVE jail on test/fixtures/css-basic. One server for the three languages;
// definitions and references are within a stylesheet (it keeps no index across files).
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync } from 'node:fs';
import { join } from 'node:path';
import { scratchDir } from './helpers/fetch-env.js';
import { cannotJail, fixturesDir, getJson, lineOf, position, postJson, uploadDir } from './helpers/lsp-harness.js';
import { acmeRoot, assertClean, at, completeDiagnostics, langSuite, symbolIn, symbols } from './helpers/lang-suite.js';

const skip = cannotJail();
const FX = 'css-basic';
const root = acmeRoot(FX);
const THEME = 'styles/theme.css';
const L = (path: string, needle: string) => `${path}:${lineOf(FX, path, needle)}`;

describe('CSS, SCSS, Less (vscode-css-language-server) in the SERVE jail', { skip }, () => {
  const s = langSuite({ server: 'vscode-css-language-server', uploads: [[root, FX]] });
  const ask = (body: Record<string, unknown>) => s.ask(root, body);

  test('/readyz: available, its pinned version, the ops its row declares (no session yet)', async () => {
    const r = await getJson(s.daemon().url, '/readyz');
    assert.deepEqual((r.body.servers as Record<string, unknown>)['vscode-css-language-server'], {
      available: true,
      version: '4.10.0',
      hierarchy_ops: [],
      hierarchy_ops_from: 'row',
      edit_ops: ['rename', 'codeActions'],
      edit_ops_from: 'row',
    });
  });

  test("a custom property's definition from its var() use; the first answer is right", async () => {
    const a = await ask({ op: 'definition', path: THEME, ...position(FX, THEME, '--brand-color);') });
    assert.equal(a.incomplete, false);
    assert.deepEqual(at(a), [L(THEME, '--brand-color:')]);
  });

  test('references of a custom property: its declaration and every var() use', async () => {
    const a = await ask({ op: 'references', path: THEME, ...position(FX, THEME, '--gap:') });
    assert.deepEqual(at(a).sort(), [L(THEME, '--gap:'), L(THEME, 'margin: var(--gap)'), L(THEME, 'calc(var(--gap)')].sort());
  });

  test('documentSymbols: the rules with their lines (custom properties are not symbols to it)', async () => {
    const syms = symbols(await ask({ op: 'documentSymbols', path: THEME }));
    assert.equal(symbolIn({ symbols: syms }, (x) => x.name === '.button').range.start.line, lineOf(FX, THEME, '.button {'));
    assert.equal(symbolIn({ symbols: syms }, (x) => x.name === ':root').range.start.line, lineOf(FX, THEME, ':root {'));
    assert.equal(symbolIn({ symbols: syms }, (x) => x.name === '.card').kind, 'class');
  });

  test('diagnostics: a missing semicolon with its line; a clean stylesheet is clean', async () => {
    const bad = completeDiagnostics(await ask({ op: 'diagnostics', path: 'styles/broken.css' }));
    const d = bad.find((x) => x.range.start.line === lineOf(FX, 'styles/broken.css', 'width: 10px'));
    assert.ok(d, JSON.stringify(bad));
    assert.match(d.message, /semi-colon expected/);
    assert.equal(d.severity, 'error');
    assertClean(await ask({ op: 'diagnostics', path: THEME }));
  });

  test('SCSS: a variable and a mixin, from their uses; symbols; clean', async () => {
    const P = 'styles/panel.scss';
    assert.deepEqual(at(await ask({ op: 'definition', path: P, ...position(FX, P, '$spacing;') })), [L(P, '$spacing: 4px')]);
    assert.deepEqual(at(await ask({ op: 'definition', path: P, ...position(FX, P, 'card-shadow(2px)') })), [L(P, '@mixin card-shadow')]);
    const syms = symbols(await ask({ op: 'documentSymbols', path: P }));
    assert.equal(symbolIn({ symbols: syms }, (x) => x.name === 'card-shadow').range.start.line, lineOf(FX, P, '@mixin card-shadow'));
    assertClean(await ask({ op: 'diagnostics', path: P }));
  });

  test('Less: a variable from its use; symbols; clean', async () => {
    const B = 'styles/box.less';
    assert.deepEqual(at(await ask({ op: 'definition', path: B, ...position(FX, B, '@primary;') })), [L(B, '@primary: #333')]);
    const syms = symbols(await ask({ op: 'documentSymbols', path: B }));
    assert.equal(symbolIn({ symbols: syms }, (x) => x.name === '.box').range.start.line, lineOf(FX, B, '.box {'));
    assertClean(await ask({ op: 'diagnostics', path: B }));
  });

  test('hover on a property says what it is', async () => {
    const a = await ask({ op: 'hover', path: THEME, ...position(FX, THEME, 'margin: var') });
    assert.match(String(a.contents), /margin/i);
  });

  test('a root with stylesheets and TypeScript: workspaceSymbols and /ask leave out the CSS server, which has no workspace symbols', async () => {
    const dir = scratchDir('lspd-css-ts-');
    cpSync(join(fixturesDir, FX), dir, { recursive: true });
    cpSync(join(fixturesDir, 'ts-basic'), join(dir, 'web'), { recursive: true });
    const mixed = acmeRoot('css-ts', 'css-ts');
    await uploadDir(s.daemon().url, mixed, dir, '?warm=false');
    const ws = await postJson(s.daemon().url, '/v1/code/lsp', { ...mixed, op: 'workspaceSymbols', query: 'Person' });
    assert.equal(ws.status, 200, JSON.stringify(ws.body));
    assert.ok(
      (ws.body.symbols as { name: string; path: string }[]).some((x) => x.name === 'Person' && x.path === 'web/src/greet.ts'),
      JSON.stringify(ws.body),
    );
    const found = await postJson(s.daemon().url, '/ask', { ...mixed, symbol: 'Person' });
    assert.equal(found.status, 200, JSON.stringify(found.body));
    assert.deepEqual(at(found.body), [`web/src/greet.ts:${lineOf('ts-basic', 'src/greet.ts', 'export class Person')}`]);
    // A name no file mentions asks every server: still 404 with near names, not 422 for the CSS server.
    const missing = await postJson(s.daemon().url, '/ask', { ...mixed, symbol: 'Persn' });
    assert.equal(missing.status, 404, JSON.stringify(missing.body));
    assert.equal(missing.body.error, 'symbol_not_found');
    // Only the CSS server: its own refusal, as before.
    const css = await postJson(s.daemon().url, '/v1/code/lsp', { ...root, op: 'workspaceSymbols', query: 'card' });
    assert.equal(css.status, 422, JSON.stringify(css.body));
    assert.match(String(css.body.message), /vscode-css-language-server does not answer workspaceSymbols/);
  });
});
