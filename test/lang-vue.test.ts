// Vue single-file components: the vue row (vue-language-server 3 beside
// typescript-language-server with @vue/typescript-plugin, one SERVE jail, relayed by
// vue-hybrid.mjs) on test/fixtures/vue-basic, whose node_modules/vue is a stub of the
// types the generated template code names. The row also serves the root's .ts files
// (takesOver), so a definition asked from a .ts and from a .vue file lands alike and
// references from the .ts file reach the .vue use.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { tmpdir } from 'node:os';
import { cannotJail, getJson, lineOf, position, postJson, realRows } from './helpers/lsp-harness.js';
import { acmeRoot, assertClean, at, completeDiagnostics, langSuite, symbolIn } from './helpers/lang-suite.js';
import { ServerTable } from '../src/lsp/servers/server-table.js';
import { loadConfig } from '../src/config.js';

const skip = cannotJail();
const FX = 'vue-basic';
const root = acmeRoot(FX);
const BASKET = 'src/components/Basket.vue';
const addTotalsAt = () => `src/totals.ts:${lineOf(FX, 'src/totals.ts', 'export function addTotals')}`;

describe('Vue (vue-language-server + tsserver with the Vue plugin) in the SERVE jail', { skip }, () => {
  const s = langSuite({ server: 'vue', uploads: [[root, FX]] });
  const ask = (body: Record<string, unknown>) => s.ask(root, body);

  test('definition of an imported TS function from <script setup lang="ts"> lands on its line in the .ts file', async () => {
    const a = await ask({ op: 'definition', path: BASKET, ...position(FX, BASKET, 'addTotals(12', 1) });
    assert.equal(a.incomplete, false);
    assert.deepEqual(at(a), [addTotalsAt()]);
  });

  test('the same definition asked from a .ts file of the root: the same server, the same line', async () => {
    const a = await ask({ op: 'definition', path: 'src/report.ts', ...position(FX, 'src/report.ts', 'addTotals(a, b)', 1) });
    assert.deepEqual(at(a), [addTotalsAt()]);
  });

  test('references of the function asked from the .ts file include its use in the .vue file', async () => {
    const a = await ask({ op: 'references', path: 'src/totals.ts', ...position(FX, 'src/totals.ts', 'addTotals(a', 1) });
    const got = at(a);
    for (const want of [
      addTotalsAt(),
      `src/report.ts:${lineOf(FX, 'src/report.ts', 'addTotals(a, b)')}`,
      `${BASKET}:${lineOf(FX, BASKET, 'import { addTotals }')}`,
      `${BASKET}:${lineOf(FX, BASKET, 'addTotals(12')}`,
    ])
      assert.ok(got.includes(want), `${want} in ${JSON.stringify(got)}`);
  });

  test('hover in the .vue file shows the signature and its doc comment', async () => {
    const a = await ask({ op: 'hover', path: BASKET, ...position(FX, BASKET, 'addTotals(12', 1) });
    assert.match(String(a.contents), /addTotals\(a: number, b: number\): number/);
    assert.match(String(a.contents), /Adds two line totals/);
  });

  test('hover on a template expression is typed from <script setup>', async () => {
    const a = await ask({ op: 'hover', path: BASKET, ...position(FX, BASKET, 'basketLabel(3)', 1) });
    assert.match(String(a.contents), /basketLabel: \(count: number\) => string/);
  });

  test('documentSymbols of the .vue file: its script functions and bindings with their lines', async () => {
    const a = await ask({ op: 'documentSymbols', path: BASKET });
    assert.equal(symbolIn(a, (x) => x.name === 'basketLabel').range.start.line, lineOf(FX, BASKET, 'function basketLabel'));
    assert.equal(symbolIn(a, (x) => x.name === 'subtotal').range.start.line, lineOf(FX, BASKET, 'const subtotal'));
  });

  test('diagnostics: a type error inside a template expression, with its line; a clean component is clean', async () => {
    const diags = completeDiagnostics(await ask({ op: 'diagnostics', path: 'src/components/Broken.vue' }));
    const d = diags.find((x) => x.range.start.line === lineOf(FX, 'src/components/Broken.vue', 'title.toFixed'));
    assert.ok(d, JSON.stringify(diags));
    assert.match(d.message, /Property 'toFixed' does not exist on type 'string'/);
    assertClean(await ask({ op: 'diagnostics', path: BASKET }));
  });

  test('incomingCalls of the function asked from the .ts file: its callers in the .ts and the .vue file', async () => {
    const a = await ask({ op: 'incomingCalls', path: 'src/totals.ts', ...position(FX, 'src/totals.ts', 'addTotals(a', 1) });
    assert.equal(a.incomplete, false);
    const nodes = a.nodes as { depth: number; path: string; name: string; call_sites?: { path: string; range: { start: { line: number } } }[] }[];
    const sites = nodes.flatMap((n) => (n.call_sites ?? []).map((c) => `${c.path}:${c.range.start.line}`));
    assert.ok(sites.includes(`src/report.ts:${lineOf(FX, 'src/report.ts', 'addTotals(a, b)')}`), JSON.stringify(nodes));
    assert.ok(sites.includes(`${BASKET}:${lineOf(FX, BASKET, 'addTotals(12')}`), JSON.stringify(nodes));
  });

  test('rename of the function at its .ts declaration edits its .ts and .vue uses, as one program', async () => {
    const a = await ask({ op: 'rename', path: 'src/totals.ts', ...position(FX, 'src/totals.ts', 'addTotals(a', 1), newName: 'sumTotals' });
    const files = (a.files as { path: string }[]).map((f) => f.path).sort();
    assert.deepEqual(files, [BASKET, 'src/report.ts', 'src/totals.ts']);
    const patch = String(a.patch);
    assert.match(patch, /\+export function sumTotals\(a: number, b: number\): number \{/);
    assert.match(patch, /\+const subtotal = sumTotals\(12\.5, 7\.25\);/);
  });

  test('/readyz says which versions serve Vue and Angular templates', async () => {
    const r = await getJson(s.daemon().url, '/readyz');
    const servers = r.body.servers as Record<string, { available: boolean; version?: string; hierarchy_ops?: string[] }>;
    assert.equal(servers.vue?.available, true);
    assert.match(servers.vue?.version ?? '', /^3\.3\.11, @vue\/typescript-plugin 3\.3\.11, typescript-language-server 4\.4\.1, typescript 5\.9\.3$/);
    assert.deepEqual(servers.vue?.hierarchy_ops, ['incomingCalls', 'outgoingCalls']);
    assert.equal(servers.angular?.available, true);
    assert.match(servers.angular?.version ?? '', /^21\.2\.13, typescript 5\.9\.3$/);
  });

  test('/ask by name finds a function declared in a .vue file', async () => {
    const r = await postJson(s.daemon().url, '/ask', { ...root, symbol: 'basketLabel' });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    const locations = r.body.locations as { path: string; range: { start: { line: number } } }[];
    assert.deepEqual(
      locations.map((l) => `${l.path}:${l.range.start.line}`),
      [`${BASKET}:${lineOf(FX, BASKET, 'function basketLabel')}`],
    );
  });
});

test('the table: .ts goes to the vue row only in a root holding .vue files, and only while it is installed', () => {
  const table = new ServerTable(realRows(), loadConfig({ LSPD_DATA: tmpdir() }));
  assert.equal(table.choose('typescript')?.name, 'typescript');
  assert.equal(table.choose('typescript', ['typescript', 'python'])?.name, 'typescript');
  assert.equal(table.choose('typescript', ['typescript', 'vue'])?.name, 'vue');
  assert.equal(table.choose('javascript', ['javascript', 'vue'])?.name, 'vue');
  assert.equal(table.choose('vue', ['vue'])?.name, 'vue');
  assert.equal(table.choose('typescript', ['typescript', 'vue'], (r) => r.name !== 'vue')?.name, 'typescript');
});
