// Svelte: svelte-language-server (npm), its TypeScript being the daemon's pinned one.
import { nodeServerRow, type ServerPaths, type ServerRow } from '../server-row.js';

export function svelteRow(p: ServerPaths): ServerRow {
  return nodeServerRow(p, {
    // svelte-language-server 0.18.4. Quirks:
    // - `<script lang="ts">` is answered by its own TypeScript language service over
    //   svelte2tsx's view of each component, with the `typescript` it resolves from
    //   its own install (the daemon's pinned 5.9.3), so a definition lands in the .ts
    //   file and a hover shows the TS signature.
    // - Components are compiled by the Svelte 4 compiler it depends on (svelte 4.2.20):
    //   Svelte 5 runes in a tree are read by svelte2tsx, but its compiler warnings
    //   are Svelte 4's.
    // - positions: UTF-16.
    // Code from the tree: none. By default it imports the workspace's svelte.config.js
    // (preprocessors: the tree's code) and prefers the tree's node_modules/svelte and
    // prettier to its own; `isTrusted: false` turns both off (config loading disabled,
    // packages resolved from its install only). Its TypeScript service is a
    // LanguageService, which loads no tsconfig `plugins`.
    name: 'svelte-language-server',
    languages: ['svelte'],
    node: { package: 'svelte-language-server', entry: 'bin/server.js', args: ['--stdio'] },
    ecosystem: 'npm',
    rootMarkers: ['svelte.config.js', 'tsconfig.json', 'jsconfig.json', 'package.json'],
    initializationOptions: { isTrusted: false, configuration: { svelte: { plugin: {} } } },
    settings: { svelte: { plugin: {} }, typescript: {}, javascript: {} },
    readiness: { kind: 'progress', queuesFromStart: true },
    // Measured 2026-12-02 (test/lang-svelte): call hierarchy both ways (a template call's caller is the component), no type hierarchy; rename, code actions.
    hierarchyOps: ['incomingCalls', 'outgoingCalls'],
    editOps: ['rename', 'codeActions'],
    encodings: ['utf-16'],
    maxInFlight: 16,
  });
}
