// A tree's tsconfig.json names language-service plugins it ships itself (in its
// own node_modules, by package name and by path): a plugin that, loaded, prints a
// marker and ends the process. Neither TS row ever loads it (TS 7 has no plugin
// loader; tsserver loads plugins only from its own install and probe locations we
// never give, and never a project's own): in the real SERVE jail, each answers a
// definition and a hover right, from one session that never died.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cannotJail, fixturesDir, lineOf, lspQuery, position, shaOf, startLspd, uploadDir, type Lspd } from './helpers/lsp-harness.js';

const MARKER = 'LSPD-TS-PLUGIN-MARKER-51c2';
const FX = 'ts-basic';
const PLUGIN = `process.stderr.write(${JSON.stringify(MARKER + '\n')}); process.exit(97);\nmodule.exports = () => ({ create: (info) => info.languageService });\n`;

/** ts-basic whose tsconfig asks for plugins it carries in its own node_modules. */
function pluginTree(): string {
  const dir = mkdtempSync(join(tmpdir(), 'lspd-ts-plugin-'));
  cpSync(join(fixturesDir, FX), dir, { recursive: true });
  const tsconfig = JSON.parse(readFileSync(join(dir, 'tsconfig.json'), 'utf8')) as { compilerOptions: Record<string, unknown> };
  tsconfig.compilerOptions.plugins = [
    { name: 'evil-plugin' },
    { name: '@evil/plugin' },
    { name: './node_modules/evil-plugin' },
    { name: `${dir}/node_modules/evil-plugin` },
  ];
  writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify(tsconfig, null, 2));
  for (const pkg of ['evil-plugin', '@evil/plugin']) {
    mkdirSync(join(dir, 'node_modules', pkg), { recursive: true });
    writeFileSync(join(dir, 'node_modules', pkg, 'package.json'), JSON.stringify({ name: pkg, version: '1.0.0', main: 'index.js' }));
    writeFileSync(join(dir, 'node_modules', pkg, 'index.js'), PLUGIN);
  }
  return dir;
}

for (const [server, env] of [
  ['typescript', {}],
  ['typescript-language-server', { LSPD_TYPESCRIPT_SERVER: 'tsserver', LSPD_READY_TIMEOUT_MS: '60000' }],
] as const) {
  describe(`${server}: a tree's tsconfig plugins are never loaded`, { skip: cannotJail() }, () => {
    let d: Lspd;
    let tree: string;
    const root = { org: 'acme', repo: 'ts-plugins', sha: shaOf(`ts-plugins-${server}`) };
    before(async () => {
      tree = pluginTree();
      // The control: a process that loads it prints the marker and ends.
      const control = spawnSync(process.execPath, ['-e', `require(${JSON.stringify(join(tree, 'node_modules', 'evil-plugin'))})`], { encoding: 'utf8' });
      assert.equal(control.status, 97);
      assert.match(control.stderr, new RegExp(MARKER));
      d = await startLspd({ env });
      await uploadDir(d.url, root, tree);
    });
    after(async () => {
      await d?.close();
      rmSync(tree, { recursive: true, force: true });
    });

    test('answers right from one session that never died', async () => {
      const call = position(FX, 'src/app.ts', "greet('world')");
      const def = await lspQuery(d.url, { ...root, op: 'definition', path: 'src/app.ts', ...call });
      assert.equal(def.status, 200, JSON.stringify(def.body));
      assert.equal(def.body.server, server);
      assert.equal(def.body.incomplete, false);
      assert.deepEqual(
        (def.body.locations as { path: string; range: { start: { line: number } } }[]).map((l) => `${l.path}:${l.range.start.line}`),
        [`src/greet.ts:${lineOf(FX, 'src/greet.ts', 'export function greet')}`],
      );
      const hover = await lspQuery(d.url, { ...root, op: 'hover', path: 'src/app.ts', ...call });
      assert.equal(hover.status, 200, JSON.stringify(hover.body));
      assert.match(String(hover.body.contents), /greet\(name: string\): string/);
      assert.doesNotMatch(JSON.stringify([def.body, hover.body]), new RegExp(MARKER));
      const spawns = (await d.metrics.spawns.get()).values.filter((v) => v.labels.server === server);
      assert.deepEqual(
        spawns.map((v) => v.value),
        [1],
        'one session, never restarted',
      );
    });
  });
}
