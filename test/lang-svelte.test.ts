// Svelte: svelte-language-server in the real SERVE jail on test/fixtures/svelte-basic,
// components whose `<script lang="ts">` import a function from a .ts file, in Svelte 4
// syntax and in Svelte 5 runes. Its TypeScript and its Svelte 5 compiler are the
// daemon's pinned ones (svelte-pinned.cjs); the tree has no node_modules.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { scratchDir } from './helpers/fetch-env.js';
import { cannotJail, fixturesDir, getJson, lineOf, lspQuery, position, postJson, uploadDir } from './helpers/lsp-harness.js';
import { acmeRoot, assertClean, at, completeDiagnostics, langSuite, symbolIn } from './helpers/lang-suite.js';

const skip = cannotJail();
const FX = 'svelte-basic';
const root = acmeRoot(FX);
const GREET = `src/greet.ts:${lineOf(FX, 'src/greet.ts', 'export function greet')}`;

describe('Svelte (svelte-language-server) in the SERVE jail', { skip }, () => {
  const s = langSuite({ server: 'svelte-language-server', uploads: [[root, FX]] });
  const ask = (body: Record<string, unknown>) => s.ask(root, body);

  test('/readyz: available, its pinned version, the ops its row declares (no session yet)', async () => {
    const r = await getJson(s.daemon().url, '/readyz');
    assert.deepEqual((r.body.servers as Record<string, unknown>)['svelte-language-server'], {
      available: true,
      version: '0.18.4, svelte 5.57.3, typescript 5.9.3',
      hierarchy_ops: ['incomingCalls', 'outgoingCalls'],
      hierarchy_ops_from: 'row',
      edit_ops: ['rename', 'codeActions'],
      edit_ops_from: 'row',
    });
  });

  test('definition of an imported TS function from <script lang="ts"> lands on its line in the .ts file; the first answer is right', async () => {
    const a = await ask({ op: 'definition', path: 'src/App.svelte', ...position(FX, 'src/App.svelte', 'greet(name, true)') });
    assert.equal(a.incomplete, false);
    assert.deepEqual(at(a), [GREET]);
  });

  test('hover shows its TypeScript signature', async () => {
    const a = await ask({ op: 'hover', path: 'src/App.svelte', ...position(FX, 'src/App.svelte', 'greet(name, true)') });
    assert.match(String(a.contents), /greet\(name: string, excited\?: boolean\): string/);
    assert.match(String(a.contents), /Greets someone by name/);
  });

  test('definition of a function declared in the component, from the template', async () => {
    const a = await ask({ op: 'definition', path: 'src/App.svelte', ...position(FX, 'src/App.svelte', 'shoutGreeting()}') });
    assert.deepEqual(at(a), [`src/App.svelte:${lineOf(FX, 'src/App.svelte', 'function shoutGreeting')}`]);
  });

  test('references of a component function reach its template use', async () => {
    const a = await ask({ op: 'references', path: 'src/Counter.svelte', ...position(FX, 'src/Counter.svelte', 'increment(): void') });
    const got = at(a);
    assert.ok(got.includes(`src/Counter.svelte:${lineOf(FX, 'src/Counter.svelte', 'on:click={increment}')}`), JSON.stringify(got));
  });

  test("incomingCalls of a component function: its caller is the component's template, at the call", async () => {
    const r = await lspQuery(s.daemon().url, {
      ...root,
      op: 'incomingCalls',
      path: 'src/App.svelte',
      ...position(FX, 'src/App.svelte', 'shoutGreeting(): string'),
    });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    const nodes = r.body.nodes as { name: string; path: string; call_sites?: { range: { start: { line: number } } }[] }[];
    assert.equal(nodes[0]?.name, 'shoutGreeting');
    assert.deepEqual(
      nodes[1]?.call_sites?.map((c) => c.range.start.line),
      [lineOf(FX, 'src/App.svelte', '<p>{shoutGreeting()}</p>')],
    );
  });

  test('documentSymbols: the script functions with their lines', async () => {
    const a = await ask({ op: 'documentSymbols', path: 'src/App.svelte' });
    const sym = symbolIn(a, (x) => x.name === 'shoutGreeting');
    assert.equal(sym.range.start.line, lineOf(FX, 'src/App.svelte', 'function shoutGreeting'));
  });

  test('diagnostics: a type error in <script lang="ts"> with its line; a clean component is clean', async () => {
    const bad = completeDiagnostics(await ask({ op: 'diagnostics', path: 'src/Broken.svelte' }));
    const d = bad.find((x) => x.range.start.line === lineOf(FX, 'src/Broken.svelte', 'const wrongCount'));
    assert.ok(d, JSON.stringify(bad));
    assert.match(d.message, /Type 'string' is not assignable to type 'number'/);
    assertClean(await ask({ op: 'diagnostics', path: 'src/Counter.svelte' }));
  });

  test("diagnostics: the Svelte compiler's own warnings (a11y); the tree's svelte.config.js, which throws, is never run", async () => {
    const diags = completeDiagnostics(await ask({ op: 'diagnostics', path: 'src/A11y.svelte' }));
    const d = diags.find((x) => x.code === 'a11y_missing_attribute');
    assert.ok(d, JSON.stringify(diags));
    assert.equal(d.range.start.line, lineOf(FX, 'src/A11y.svelte', '<img'));
    assert.equal(d.severity, 'warning');
    assert.equal(d.source, 'svelte');
    assert.ok(!diags.some((x) => /svelte\.config|tree code ran/.test(x.message)), JSON.stringify(diags));
  });

  test('Svelte 5 runes: clean, typed ($derived is a number), and the template reaches the .ts file', async () => {
    const R = 'src/Runes.svelte';
    assertClean(await ask({ op: 'diagnostics', path: R }), 'no "Cannot find name $state": the compiler is Svelte 5');
    const hover = await ask({ op: 'hover', path: R, ...position(FX, R, 'double = $derived') });
    assert.match(String(hover.contents), /const double: number/);
    assert.deepEqual(at(await ask({ op: 'definition', path: R, ...position(FX, R, 'greet(String(double))') })), [GREET]);
  });

  test('references of a TS function from its .ts file reach its uses in .svelte files (typescript-web: tsserver with typescript-svelte-plugin)', async () => {
    const r = await lspQuery(s.daemon().url, { ...root, op: 'references', path: 'src/greet.ts', ...position(FX, 'src/greet.ts', 'greet(name') });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.server, 'typescript-web');
    const ready = await getJson(s.daemon().url, '/readyz');
    assert.deepEqual(
      (ready.body.servers as Record<string, { version?: string }>)['typescript-web']?.version,
      '4.4.1, typescript-svelte-plugin 0.3.52, @astrojs/ts-plugin 1.10.12, typescript 5.9.3',
    );
    const found = at(r.body);
    for (const use of [
      GREET,
      `src/App.svelte:${lineOf(FX, 'src/App.svelte', 'greet(name, true)')}`,
      `src/Runes.svelte:${lineOf(FX, 'src/Runes.svelte', 'greet(')}`,
    ])
      assert.ok(found.includes(use), `${use} in ${JSON.stringify(found)}`);
    // The same program answers definition from the .ts side.
    const d = await lspQuery(s.daemon().url, { ...root, op: 'definition', path: 'src/greet.ts', ...position(FX, 'src/greet.ts', 'greet(name') });
    assert.deepEqual(at(d.body), [GREET]);
  });

  test("typescript-web never loads the tree's node_modules/svelte: a compiler there that throws changes nothing", async () => {
    const dir = scratchDir('lspd-svelte-ts-');
    cpSync(join(fixturesDir, FX), dir, { recursive: true });
    const svelte = join(dir, 'node_modules', 'svelte');
    mkdirSync(join(svelte, 'compiler'), { recursive: true });
    writeFileSync(join(svelte, 'package.json'), '{"name": "svelte", "version": "5.0.0", "main": "compiler/index.js"}\n');
    // Required, the plugin would fail to load (tsserver goes on without it) and the .svelte uses would be missing.
    writeFileSync(join(svelte, 'compiler', 'index.js'), "throw new Error('tree code ran: node_modules/svelte');\n");
    const tree = acmeRoot(FX, 'svelte-tree-compiler');
    await uploadDir(s.daemon().url, tree, dir, '?warm=false');
    const r = await lspQuery(s.daemon().url, { ...tree, op: 'references', path: 'src/greet.ts', ...position(FX, 'src/greet.ts', 'greet(name') });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.ok(at(r.body).includes(`src/App.svelte:${lineOf(FX, 'src/App.svelte', 'greet(name, true)')}`), JSON.stringify(r.body));
  });

  test('/ask by name finds a function declared in a .svelte file', async () => {
    const r = await postJson(s.daemon().url, '/ask', { ...root, symbol: 'shoutGreeting' });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.deepEqual(at(r.body), [`src/App.svelte:${lineOf(FX, 'src/App.svelte', 'function shoutGreeting')}`]);
  });
});
