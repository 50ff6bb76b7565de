// Astro: @astrojs/language-server in the real SERVE jail on test/fixtures/astro-basic,
// a page whose frontmatter imports a function from a .ts file. Its TypeScript is the
// daemon's pinned one (typescript.tsdk), started through astro-untrusted.cjs.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { cannotJail, getJson, lineOf, lspQuery, position, postJson } from './helpers/lsp-harness.js';
import { acmeRoot, assertClean, at, completeDiagnostics, langSuite, symbolIn } from './helpers/lang-suite.js';

const skip = cannotJail();
const FX = 'astro-basic';
const root = acmeRoot(FX);
/** The same tree again, whose first question is its diagnostics: asked of a cold project. */
const cold = acmeRoot(FX, 'astro-cold');
const INDEX = 'src/pages/index.astro';
const GREET = `src/greet.ts:${lineOf(FX, 'src/greet.ts', 'export function greet')}`;

describe('Astro (@astrojs/language-server) in the SERVE jail', { skip }, () => {
  const s = langSuite({
    server: 'astro-language-server',
    uploads: [
      [root, FX],
      [cold, FX],
    ],
  });
  const ask = (body: Record<string, unknown>) => s.ask(root, body);

  test('/readyz: available, its pinned version, the ops its row declares (no session yet)', async () => {
    const r = await getJson(s.daemon().url, '/readyz');
    assert.deepEqual((r.body.servers as Record<string, unknown>)['astro-language-server'], {
      available: true,
      version: '2.17.1, typescript 5.9.3',
      hierarchy_ops: ['incomingCalls', 'outgoingCalls'],
      hierarchy_ops_from: 'row',
      edit_ops: ['rename', 'codeActions'],
      edit_ops_from: 'row',
    });
  });

  test('definition of an imported TS function from the frontmatter lands on its line in the .ts file; the first answer is right', async () => {
    const a = await ask({ op: 'definition', path: INDEX, ...position(FX, INDEX, "greet('astro', true)") });
    assert.equal(a.incomplete, false);
    assert.deepEqual(at(a), [GREET]);
  });

  test('hover shows its TypeScript signature', async () => {
    const a = await ask({ op: 'hover', path: INDEX, ...position(FX, INDEX, "greet('astro', true)") });
    assert.match(String(a.contents), /greet\(name: string, excited\?: boolean\): string/);
  });

  test('definition of a frontmatter function from the template', async () => {
    const a = await ask({ op: 'definition', path: INDEX, ...position(FX, INDEX, 'footerText(2026)') });
    assert.deepEqual(at(a), [`${INDEX}:${lineOf(FX, INDEX, 'function footerText')}`]);
  });

  test('references of a frontmatter function reach its template use', async () => {
    const a = await ask({ op: 'references', path: INDEX, ...position(FX, INDEX, 'footerText(year') });
    const got = at(a);
    assert.ok(got.includes(`${INDEX}:${lineOf(FX, INDEX, 'footerText(2026)')}`), JSON.stringify(got));
  });

  test('documentSymbols: the frontmatter function with its line', async () => {
    const a = await ask({ op: 'documentSymbols', path: INDEX });
    const sym = symbolIn(a, (x) => x.name === 'footerText');
    assert.equal(sym.range.start.line, lineOf(FX, INDEX, 'function footerText'));
  });

  test('diagnostics: a type error in the frontmatter with its line, the first question of a cold session; a clean page is clean', async () => {
    // Pulled (row.pullDiagnostics): its first push is the Astro pass alone, empty, and was taken for the answer.
    const bad = completeDiagnostics(await s.ask(cold, { op: 'diagnostics', path: 'src/pages/broken.astro' }));
    const d = bad.find((x) => x.range.start.line === lineOf(FX, 'src/pages/broken.astro', 'const wrongCount'));
    assert.ok(d, JSON.stringify(bad));
    assert.match(d.message, /Type 'string' is not assignable to type 'number'/);
    assertClean(await ask({ op: 'diagnostics', path: INDEX }));
  });

  test('references of a TS function from its .ts file reach its uses in .astro frontmatter (typescript-web: tsserver with @astrojs/ts-plugin)', async () => {
    const r = await lspQuery(s.daemon().url, { ...root, op: 'references', path: 'src/greet.ts', ...position(FX, 'src/greet.ts', 'greet(name') });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.server, 'typescript-web');
    const found = at(r.body);
    for (const use of [GREET, `${INDEX}:${lineOf(FX, INDEX, "greet('astro', true)")}`, `${INDEX}:${lineOf(FX, INDEX, 'import { greet }')}`])
      assert.ok(found.includes(use), `${use} in ${JSON.stringify(found)}`);
  });

  test('/ask by name finds a function declared in an .astro file', async () => {
    const r = await postJson(s.daemon().url, '/ask', { ...root, symbol: 'footerText' });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.deepEqual(at(r.body), [`${INDEX}:${lineOf(FX, INDEX, 'function footerText')}`]);
  });

  test("the tree's own @astrojs/svelte editor integration is never run (astro-untrusted.cjs)", async () => {
    // The fixture's node_modules/@astrojs/svelte/dist/editor.cjs types every Svelte
    // component as taking `{ ran: 'tree code ran' }`: the server alone requires it.
    const W = 'src/pages/widget.astro';
    const a = await ask({ op: 'hover', path: W, ...position(FX, W, 'Widget from') });
    assert.match(String(a.contents), /import Widget/);
    assert.doesNotMatch(String(a.contents), /tree code ran/);
  });
});
