// One definition question per server row, on its fixture tree, with the answer
// that counts as right (file and line found by text): what bench/calibrate and
// bench/cold time. Kept apart so both benches ask exactly the same thing.
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { fixturesDir, lineOf, position } from '../test/helpers/lsp-harness.js';
import { defaultServerPaths, type ServerRow } from '../src/lsp/servers/server-row.js';
import { defaultServerRows } from '../src/lsp/servers/server-table.js';
import { BareServer } from './bare-lsp.js';
import { loadConfig } from '../src/config.js';
import { bodyText } from '../src/lsp/session/session-files.js';

export interface Case {
  row: ServerRow;
  fixture: string;
  /** The file asked about, root-relative. */
  path: string;
  position: { line: number; character: number };
  /** "path:line" of the right definition. */
  right: string;
}

const q = (fixture: string, path: string, needle: string, target: string, targetNeedle: string) => ({
  fixture,
  path,
  position: position(fixture, path, needle),
  right: `${target}:${lineOf(fixture, target, targetNeedle)}`,
});

const QUESTIONS: Record<string, Omit<Case, 'row'>> = {
  typescript: q('ts-basic', 'src/app.ts', "greet('world')", 'src/greet.ts', 'export function greet'),
  'typescript-language-server': q('ts-basic', 'src/app.ts', "greet('world')", 'src/greet.ts', 'export function greet'),
  pyright: q('py-basic', 'pkg/app.py', 'greet("world")', 'pkg/greet.py', 'def greet'),
  gopls: q('go-basic', 'main.go', 'Greet("world")', 'greet/greet.go', 'func Greet('),
  clangd: q('c-basic', 'src/main.c', 'greet(buf, sizeof buf, "world")', 'src/greet.c', 'int greet('),
  intelephense: q('php-basic', 'index.php', "greet('world')", 'src/Greeter.php', 'public function greet('),
  'bash-language-server': q('sh-basic', 'main.sh', 'greet world', 'lib/greet.sh', 'greet() {'),
  // std only (no registry dependency): its fetch has nothing to get, and the bare run needs no CARGO_HOME.
  'rust-analyzer': q('rust-basic', 'src/main.rs', 'greet("world")', 'src/greet.rs', 'pub fn greet('),
  // From <script setup lang="ts"> to the .ts file: tsserver with the Vue plugin, vue-language-server beside it.
  vue: q('vue-basic', 'src/components/Basket.vue', 'addTotals(12', 'src/totals.ts', 'export function addTotals'),
  angular: q('angular-basic', 'src/app/basket.component.html', 'basketLabel(', 'src/app/basket.component.ts', 'basketLabel(count: number)'),
  'svelte-language-server': q('svelte-basic', 'src/App.svelte', 'greet(name, true)', 'src/greet.ts', 'export function greet'),
  // From the .ts file of a root holding .svelte files: tsserver with the Svelte and Astro plugins.
  'typescript-web': q('svelte-basic', 'src/greet.ts', 'greet(name', 'src/greet.ts', 'export function greet'),
  'astro-language-server': q('astro-basic', 'src/pages/index.astro', "greet('astro', true)", 'src/greet.ts', 'export function greet'),
  'vscode-css-language-server': q('css-basic', 'styles/theme.css', '--brand-color);', 'styles/theme.css', '--brand-color:'),
};

/** Every available-here row that has a question, in table order. */
export function cases(only?: string[]): Case[] {
  return defaultServerRows(defaultServerPaths())
    .filter((row) => QUESTIONS[row.name] && (!only?.length || only.includes(row.name)))
    .map((row) => ({ row, ...QUESTIONS[row.name]! }));
}

/** A bare server for a case, on the fixture's host directory (session files generated for host paths). */
export async function bareFor(c: Case): Promise<BareServer> {
  const dir = join(fixturesDir, c.fixture);
  const files: Record<string, string> = {};
  if (c.row.sessionFiles) {
    const generated = await c.row.sessionFiles({ treeHostDir: dir, workspace: '', workspaceAt: dir }, loadConfig({}));
    for (const [at, body] of Object.entries(generated.files)) files[at] = await bodyText(body);
  }
  return new BareServer(c.row, dir, files);
}

/** "path:line" of each location a raw definition answer names, relative to the fixture. */
export function rawLocations(c: Case, result: unknown): string[] {
  const dir = join(fixturesDir, c.fixture) + '/';
  const list = Array.isArray(result) ? result : result ? [result] : [];
  return list.map((l: { uri?: string; targetUri?: string; range?: { start: { line: number } }; targetSelectionRange?: { start: { line: number } } }) => {
    const uri = l.targetUri ?? l.uri ?? '';
    const path = uri.startsWith('file:') ? fileURLToPath(uri) : uri;
    const line = (l.targetSelectionRange ?? l.range)?.start.line;
    return `${path.startsWith(dir) ? path.slice(dir.length) : path}:${line}`;
  });
}

/** Is this the right answer (first location only, as a client would jump)? */
export function isRight(c: Case, locs: string[]): boolean {
  return locs[0] === c.right;
}
