// Svelte: svelte-language-server (npm) over the daemon's pinned Svelte 5 compiler and TypeScript.
import { join } from 'node:path';
import { PROJECT_DIR } from '../../../jail/policy.js';
import { NODE, probeFiles } from '../server-env.js';
import { nodeModulesOf, type ServerPaths, type ServerRow } from '../server-row.js';

/** The start script that hands it the pinned Svelte 5 (svelte-pinned.cjs), bound on its own. */
const PINNED = { host: join(PROJECT_DIR, 'src', 'lsp', 'servers', 'rows', 'svelte-pinned.cjs'), at: '/opt/lspd/svelte/pinned.cjs' };
/** The pinned Svelte 5, an npm alias: the server's own dependency is Svelte 4. */
export const SVELTE = 'svelte5';

export function svelteRow(p: ServerPaths): ServerRow {
  const { host, at } = nodeModulesOf(p);
  return {
    // svelte-language-server 0.18.4. Quirks:
    // - `<script lang="ts">` is answered by its own TypeScript language service over
    //   svelte2tsx's view of each component, with the `typescript` it resolves from
    //   its own install (the daemon's pinned 5.9.3), so a definition lands in the .ts
    //   file and a hover shows the TS signature.
    // - compiler and Svelte types: the pinned Svelte 5 (svelte-pinned.cjs), whatever
    //   the tree uses; Svelte 3/4 components are read in Svelte 5's legacy mode.
    // - no preprocessor of the tree's config runs: <script lang="ts"> is transpiled by
    //   its fallback, and the compiler's warnings for a <style lang="scss"> or a
    //   template in another language are dropped (as it does for any fallback config),
    //   not reported wrong (measured: SCSS nesting and variables, no diagnostic).
    // - positions: UTF-16.
    // Code from the tree: none. By default it imports the workspace's svelte.config.js
    // (preprocessors: the tree's code) and prefers the tree's node_modules/svelte,
    // svelte-preprocess and prettier to its own. Its `isTrusted: false` would stop that
    // but also every Svelte compiler diagnostic, so it runs trusted and
    // svelte-pinned.cjs replaces the config loader (its own TS-only fallback, always)
    // and those package loads (ours, or none). Its TypeScript service is a
    // LanguageService, which loads no tsconfig `plugins`.
    name: 'svelte-language-server',
    languages: ['svelte'],
    argv: [NODE, PINNED.at, at('svelte-language-server'), at(SVELTE), '--stdio'],
    env: {},
    binds: [PINNED],
    ecosystem: 'npm',
    rootMarkers: ['svelte.config.js', 'tsconfig.json', 'jsconfig.json', 'package.json'],
    initializationOptions: { isTrusted: true, configuration: { svelte: { plugin: {} } } },
    settings: { svelte: { plugin: {} }, typescript: {}, javascript: {} },
    // Measured (bench/calibrate, bare): no $/progress; its first definition is already right.
    readiness: { kind: 'progress', queuesFromStart: true },
    // Measured 2026-12-02 (test/lang-svelte): call hierarchy both ways (a template call's caller is the component), no type hierarchy; rename, code actions.
    hierarchyOps: ['incomingCalls', 'outgoingCalls'],
    editOps: ['rename', 'codeActions'],
    encodings: ['utf-16'],
    maxInFlight: 16,
    // /readyz: its version, the compiler and the TypeScript it runs.
    probe: () =>
      probeFiles(
        [host('svelte-language-server/bin/server.js'), host(`${SVELTE}/compiler/index.js`), PINNED.host],
        host('svelte-language-server/package.json'),
        host(`${SVELTE}/package.json`),
        host('typescript/package.json'),
      ),
  };
}
