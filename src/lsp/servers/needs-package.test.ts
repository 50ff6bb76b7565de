// Where a row's needed package (the Angular row's @angular/core) is looked for, as Node
// resolves it from the workspace: its node_modules or an ancestor's, the tree's or a
// fetched mount bound over it; and the node_modules of their own that the Vue and
// Angular rows' tsservers see (package-binds.ts).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { packageVisible } from './needs-package.js';
import { packageClosureBinds } from './package-binds.js';
import { PROJECT_DIR } from '../../jail/policy.js';
import { TREE_AT } from '../../jail/layout.js';

function withPackage(dir: string, name: string): void {
  mkdirSync(join(dir, name), { recursive: true });
  writeFileSync(join(dir, name, 'package.json'), JSON.stringify({ name, version: '1.0.0' }));
}

test('a needed package is found in the workspace, an ancestor, or a fetched mount; else not', async () => {
  const tree = mkdtempSync(join(tmpdir(), 'lspd-needs-'));
  const fetched = mkdtempSync(join(tmpdir(), 'lspd-needs-deps-'));
  mkdirSync(join(tree, 'apps', 'shop'), { recursive: true });
  const o = (workspace: string, depBinds: { host: string; at: string }[] = []) => ({ treeHostDir: tree, workspace, depBinds });
  assert.equal(await packageVisible('@angular/core', o('apps/shop')), false);
  withPackage(fetched, '@angular/core');
  assert.equal(
    await packageVisible('@angular/core', o('apps/shop', [{ host: fetched, at: `${TREE_AT}/apps/shop/node_modules` }])),
    true,
    'fetched for the workspace',
  );
  assert.equal(
    await packageVisible('@angular/core', o('apps/shop', [{ host: fetched, at: `${TREE_AT}/node_modules` }])),
    true,
    "fetched at the tree's top: an ancestor",
  );
  assert.equal(
    await packageVisible('@angular/core', o('', [{ host: fetched, at: `${TREE_AT}/apps/shop/node_modules` }])),
    false,
    'a descendant is not looked in',
  );
  withPackage(join(tree, 'node_modules'), '@angular/core');
  assert.equal(await packageVisible('@angular/core', o('apps/shop')), true, "the tree's own, at an ancestor");
  const empty = mkdtempSync(join(tmpdir(), 'lspd-needs-empty-'));
  assert.equal(
    await packageVisible('@angular/core', o('', [{ host: empty, at: `${TREE_AT}/node_modules` }])),
    false,
    'a fetched mount hides the tree dir it is bound over',
  );
});

test("the Vue plugin's own node_modules: its dependency closure and TypeScript, one bind per top-level package", () => {
  const nm = join(PROJECT_DIR, 'node_modules');
  const binds = packageClosureBinds(nm, ['@vue/typescript-plugin', 'typescript'], '/opt/x');
  const names = binds.map((b) => b.at.slice('/opt/x/node_modules/'.length));
  for (const want of ['@vue/typescript-plugin', '@vue/language-core', '@volar/typescript', 'typescript', 'vue-component-meta'])
    assert.ok(names.includes(want), want);
  for (const never of ['@vue/language-server', 'typescript-language-server', 'pyright', 'entities'])
    assert.ok(!names.includes(never), `${never}: not required by the plugin, or nested in a package that is`);
  for (const b of binds) assert.equal(b.host, join(nm, b.at.slice('/opt/x/node_modules/'.length)));
  assert.deepEqual(packageClosureBinds('/nonexistent/node_modules', ['typescript'], '/opt/x'), [], 'absent: nothing bound, the probe says why');
});
