// /ask by name finds what the web rows' files declare (issue 29): a CSS custom property
// and a class rule, an SCSS variable and mixin, a Less variable (the CSS server has no
// workspace symbols: /ask asks the outlines of the files that mention the name, and a
// custom property, which is no symbol to it, through a use), a function in a Vue
// `<script setup>`, in a Svelte component, in Astro frontmatter, and an Angular
// component's template-visible member (declared in its .ts: the TS row answers). Real
// daemon, real jail, real servers; every answer asserted by file and line.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { scratchDir } from './helpers/fetch-env.js';
import { cannotJail, fixturesDir, lineOf, postJson, uploadDir } from './helpers/lsp-harness.js';
import { acmeRoot, at, langSuite, type Answer, type Root } from './helpers/lang-suite.js';

const skip = cannotJail();
const CSS = 'css-basic';
const roots = {
  css: acmeRoot(CSS, 'ask-web-css'),
  vue: acmeRoot('vue-basic', 'ask-web-vue'),
  svelte: acmeRoot('svelte-basic', 'ask-web-svelte'),
  astro: acmeRoot('astro-basic', 'ask-web-astro'),
  angular: acmeRoot('angular-basic', 'ask-web-angular'),
};
const L = (fixture: string, path: string, needle: string, prefix = '') => `${prefix}${path}:${lineOf(fixture, path, needle)}`;

describe('/ask finds symbols declared in Vue, Svelte, Astro, Angular and stylesheet files', { skip }, () => {
  const s = langSuite({
    uploads: [
      [roots.css, CSS],
      [roots.vue, 'vue-basic'],
      [roots.svelte, 'svelte-basic'],
      [roots.astro, 'astro-basic'],
      [roots.angular, 'angular-basic'],
    ],
  });
  const ask = async (root: Root, body: Answer, status = 200): Promise<Answer> => {
    const r = await postJson(s.daemon().url, '/ask', { ...root, ...body });
    assert.equal(r.status, status, JSON.stringify(r.body));
    return r.body;
  };

  test('CSS: a custom property (no symbol to the server: found through its uses) and its references', async () => {
    const T = 'styles/theme.css';
    const a = await ask(roots.css, { symbol: '--brand-color' });
    assert.equal(a.server, 'vscode-css-language-server');
    assert.equal(a.matches, 1);
    assert.deepEqual(at(a), [L(CSS, T, '--brand-color:')]);
    // Scoped to a file: resolved where it is used there.
    assert.deepEqual(at(await ask(roots.css, { symbol: '--gap', path: T })), [L(CSS, T, '--gap:')]);
    const refs = await ask(roots.css, { symbol: '--gap', op: 'references' });
    assert.deepEqual(at(refs).sort(), [L(CSS, T, '--gap:'), L(CSS, T, 'margin: var(--gap)'), L(CSS, T, 'calc(var(--gap)')].sort());
  });

  test('CSS: a class rule, asked as `button` or `.button`; a nested SCSS rule by its parent', async () => {
    for (const symbol of ['button', '.button']) {
      const a = await ask(roots.css, { symbol });
      assert.deepEqual(at(a), [L(CSS, 'styles/theme.css', '.button {')], symbol);
      assert.equal((a.locations as { preview?: string }[])[0]!.preview, '.button {');
    }
    assert.deepEqual(at(await ask(roots.css, { symbol: 'panel.title' })), [L(CSS, 'styles/panel.scss', '.title {')]);
  });

  test('SCSS: a variable and a mixin; Less: a variable', async () => {
    const P = 'styles/panel.scss';
    assert.deepEqual(at(await ask(roots.css, { symbol: '$spacing' })), [L(CSS, P, '$spacing: 4px')]);
    assert.deepEqual(at(await ask(roots.css, { symbol: 'card-shadow' })), [L(CSS, P, '@mixin card-shadow')]);
    assert.deepEqual(at(await ask(roots.css, { symbol: '@primary' })), [L(CSS, 'styles/box.less', '@primary: #333')]);
  });

  test('stylesheets only: a name no file mentions is 404 with no near names, not 422 for the CSS server', async () => {
    const a = await ask(roots.css, { symbol: '--missing-color' }, 404);
    assert.equal(a.error, 'symbol_not_found');
  });

  test('Vue: a function and a constant of <script setup>', async () => {
    const B = 'src/components/Basket.vue';
    const a = await ask(roots.vue, { symbol: 'basketLabel' });
    assert.equal(a.server, 'vue');
    assert.deepEqual(at(a), [L('vue-basic', B, 'function basketLabel')]);
    assert.deepEqual(at(await ask(roots.vue, { symbol: 'subtotal' })), [L('vue-basic', B, 'const subtotal')]);
  });

  test('Svelte: a function of a component; a name two components declare is ambiguous, each by file', async () => {
    assert.deepEqual(at(await ask(roots.svelte, { symbol: 'shoutGreeting' })), [L('svelte-basic', 'src/App.svelte', 'function shoutGreeting')]);
    const a = await ask(roots.svelte, { symbol: 'increment' });
    assert.equal(a.matches, 2);
    assert.deepEqual(at(a), [L('svelte-basic', 'src/Counter.svelte', 'function increment'), L('svelte-basic', 'src/Runes.svelte', 'function increment')]);
  });

  test('Astro: a function and a constant of the frontmatter', async () => {
    const I = 'src/pages/index.astro';
    const a = await ask(roots.astro, { symbol: 'footerText' });
    assert.equal(a.server, 'astro-language-server');
    assert.deepEqual(at(a), [L('astro-basic', I, 'function footerText')]);
    assert.deepEqual(at(await ask(roots.astro, { symbol: 'title' })), [L('astro-basic', I, 'const title')]);
  });

  test("Angular: a component's template-visible member is declared in its .ts (the TS row's workspace symbols)", async () => {
    const C = 'src/app/basket.component.ts';
    const a = await ask(roots.angular, { symbol: 'BasketComponent.basketLabel' });
    assert.deepEqual(at(a), [L('angular-basic', C, 'basketLabel(count')]);
    assert.deepEqual(at(await ask(roots.angular, { symbol: 'itemCount' })), [L('angular-basic', C, 'itemCount = 3')]);
    // The Angular row itself has none to give: its templates are outlined instead.
    const ng = await postJson(s.daemon().url, '/v1/code/lsp', { ...roots.angular, op: 'workspaceSymbols', query: 'itemCount', languages: ['html'] });
    assert.equal(ng.status, 422, JSON.stringify(ng.body));
    assert.match(String(ng.body.message), /angular does not answer workspaceSymbols/);
  });

  test('a root with TypeScript and stylesheets: a stylesheet name is found beside the TS server', async () => {
    const dir = scratchDir('lspd-ask-web-');
    cpSync(join(fixturesDir, CSS), dir, { recursive: true });
    cpSync(join(fixturesDir, 'ts-basic'), join(dir, 'web'), { recursive: true });
    // A .ts file mentions the class too: its server answers workspace symbols, so only the stylesheet is outlined.
    writeFileSync(join(dir, 'web', 'classes.ts'), "export const buttonClass = 'button';\n");
    const mixed = acmeRoot('ask-web-mixed');
    await uploadDir(s.daemon().url, mixed, dir, '?warm=false');
    assert.deepEqual(at(await ask(mixed, { symbol: 'button' })), [L(CSS, 'styles/theme.css', '.button {')]);
    assert.deepEqual(at(await ask(mixed, { symbol: 'card-shadow' })), [L(CSS, 'styles/panel.scss', '@mixin card-shadow')]);
    assert.deepEqual(at(await ask(mixed, { symbol: 'Person' })), [L('ts-basic', 'src/greet.ts', 'export class Person', 'web/')]);
  });

  test('a custom property declared in one stylesheet and used in many before it: found at its declaration', async () => {
    const dir = scratchDir('lspd-ask-web-tokens-');
    // The CSS server resolves a var() only within its own file: these uses resolve to nothing.
    for (let i = 0; i < 8; i++) writeFileSync(join(dir, `a${i}.css`), `.a${i} {\n  color: var(--ink);\n  border-color: var(--ink);\n}\n`);
    writeFileSync(join(dir, 'z-tokens.css'), ':root {\n  --paper: #fff;\n  --ink: #111;\n}\n');
    const tokens = acmeRoot('ask-web-tokens');
    await uploadDir(s.daemon().url, tokens, dir, '?warm=false');
    const a = await ask(tokens, { symbol: '--ink' });
    assert.equal(a.matches, 1);
    assert.deepEqual(at(a), ['z-tokens.css:2']);
  });

  test('the outlines asked are bounded (16 files), the cut said in notes', async () => {
    const dir = scratchDir('lspd-ask-web-many-');
    for (let i = 0; i < 18; i++) writeFileSync(join(dir, `tile${String(i).padStart(2, '0')}.css`), `/* tile ${i} */\n.tile {\n  color: red;\n}\n`);
    const many = acmeRoot('ask-web-many');
    await uploadDir(s.daemon().url, many, dir, '?warm=false');
    const a = await ask(many, { symbol: 'tile' });
    assert.equal(a.matches, 16);
    assert.deepEqual(
      (a.candidates as { path: string }[]).map((c) => c.path),
      Array.from({ length: 16 }, (_, i) => `tile${String(i).padStart(2, '0')}.css`),
    );
    assert.ok(
      (a.notes as string[]).some((n) => n.includes('18 files') && n.includes('first 16')),
      JSON.stringify(a.notes),
    );
  });
});
