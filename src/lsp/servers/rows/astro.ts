// Astro: @astrojs/language-server (npm, Volar), over the daemon's pinned TypeScript.
import { join } from 'node:path';
import { PROJECT_DIR } from '../../../jail/policy.js';
import { NODE, probeFiles } from '../server-env.js';
import { nodeModulesOf, type ServerPaths, type ServerRow } from '../server-row.js';

const PACKAGE = '@astrojs/language-server';
/** The start script that keeps the tree's code out (astro-untrusted.cjs), bound on its own. */
const UNTRUSTED = { host: join(PROJECT_DIR, 'src', 'lsp', 'servers', 'rows', 'astro-untrusted.cjs'), at: '/opt/lspd/astro/untrusted.cjs' };

export function astroRow(p: ServerPaths): ServerRow {
  const { host, at } = nodeModulesOf(p);
  return {
    // @astrojs/language-server 2.17.1. Quirks:
    // - it requires `typescript.tsdk` at initialize: the daemon's pinned TypeScript
    //   (5.9.3), never a tree's node_modules/typescript.
    // - frontmatter (`---` … `---`) and template expressions are one TSX view per
    //   .astro file in a TS project of the workspace (tsconfig.json), so a definition
    //   lands in the .ts file and a hover shows the TS signature.
    // - without an `astro` package in the tree (no FETCH, or none asked for) it types
    //   Astro's globals with its own fallback .d.ts files.
    // - positions: UTF-16.
    // Code from the tree: none. It is started through astro-untrusted.cjs, which
    // replaces the four functions that would require() code from the workspace's
    // node_modules (the Svelte and Vue editor integrations, prettier and its Astro
    // plugin); what it still reads there is package.json files and .d.ts types. Its
    // TypeScript project is Volar's LanguageService: no tsconfig `plugins` load.
    // Content-collection intellisense (it would read .astro/ JSON schemas) stays off.
    name: 'astro-language-server',
    languages: ['astro'],
    argv: [NODE, UNTRUSTED.at, at(PACKAGE), '--stdio'],
    env: {},
    binds: [UNTRUSTED],
    ecosystem: 'npm',
    rootMarkers: ['astro.config.mjs', 'astro.config.ts', 'astro.config.js', 'tsconfig.json', 'jsconfig.json', 'package.json'],
    initializationOptions: { typescript: { tsdk: at('typescript/lib') }, contentIntellisense: false },
    settings: { typescript: {}, javascript: {}, astro: {}, html: {}, css: {}, emmet: {}, prettier: {} },
    // Measured (bench/calibrate, bare): no $/progress; its first definition is already right.
    readiness: { kind: 'progress', queuesFromStart: true },
    // Volar pushes when a plugin has inter-file dependencies (TypeScript's has), first
    // the Astro pass (empty), the type check only after the project loads; it answers
    // textDocument/diagnostic whole all the same.
    pullDiagnostics: true,
    // Measured 2026-12-02: call hierarchy both ways is answered, but calls from the template are not found (frontmatter only); no type hierarchy; rename, code actions.
    hierarchyOps: ['incomingCalls', 'outgoingCalls'],
    editOps: ['rename', 'codeActions'],
    encodings: ['utf-16'],
    maxInFlight: 16,
    // /readyz: its version and the TypeScript it is given.
    probe: () =>
      probeFiles(
        [host(`${PACKAGE}/dist/nodeServer.js`), host('typescript/lib/typescript.js'), UNTRUSTED.host],
        host(`${PACKAGE}/package.json`),
        host('typescript/package.json'),
      ),
  };
}
