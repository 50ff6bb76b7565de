import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { defaultServerPaths } from '../server-row.js';
import { typescriptWebRow } from './typescript-web.js';

const versionOf = (file: string) => (JSON.parse(readFileSync(file, 'utf8')) as { version: string }).version;

test("web-tsserver's package.json names the pinned TypeScript's version: typescript-language-server reads a tsserver's version from it", () => {
  const p = defaultServerPaths();
  const row = typescriptWebRow(p);
  const wrapper = row.binds!.find((b) => b.at === '/opt/lspd/web-tsserver')!;
  assert.equal(versionOf(join(wrapper.host, 'package.json')), versionOf(join(p.nodeModulesHost, 'typescript', 'package.json')));
});

test('typescript-web takes over TS/JS in roots holding Svelte or Astro files, with both plugins, the pinned Svelte bound as `svelte`', () => {
  const p = defaultServerPaths();
  const row = typescriptWebRow(p);
  assert.deepEqual(
    [row.takesOver, row.takesOverIn],
    [
      ['typescript', 'javascript'],
      ['svelte', 'astro'],
    ],
  );
  const plugins = (row.initializationOptions as { plugins: { name: string }[] }).plugins.map((x) => x.name);
  assert.deepEqual(plugins, ['typescript-svelte-plugin', '@astrojs/ts-plugin']);
  const svelte = row.binds!.find((b) => b.at === '/opt/lspd-web-ts/node_modules/svelte')!;
  assert.equal(versionOf(join(svelte.host, 'package.json')).split('.')[0], '5');
  assert.equal(row.selectedWhen, undefined, 'a take-over row is chosen whatever LSPD_TYPESCRIPT_SERVER says');
});
