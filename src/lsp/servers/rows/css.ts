// CSS, SCSS and Less: vscode-css-language-server from vscode-langservers-extracted (npm).
import { nodeServerRow, type ServerPaths, type ServerRow } from '../server-row.js';

const STYLE = { validate: true, lint: {}, hover: { documentation: true, references: false } };

export function cssRow(p: ServerPaths): ServerRow {
  return nodeServerRow(p, {
    // vscode-css-language-server (vscode-langservers-extracted 4.10.0), one server for
    // the three languages. Quirks:
    // - definition and references are within one stylesheet (a custom property's
    //   `var(--x)` → its `--x:` in the same file); it keeps no index across files.
    // - every answer is computed from the document it is asked about: no project
    //   load, nothing to wait for.
    // - positions: UTF-16.
    // Code from the tree: none. It parses stylesheets; it runs nothing. `dataPaths`
    // (custom-data JSON files it would read) are never given, nor the formatter.
    name: 'vscode-css-language-server',
    languages: ['css', 'scss', 'less'],
    node: { package: 'vscode-langservers-extracted', entry: 'bin/vscode-css-language-server', args: ['--stdio'] },
    rootMarkers: [],
    initializationOptions: { provideFormatter: false },
    settings: { css: STYLE, scss: STYLE, less: STYLE },
    // Measured (bench/calibrate, bare): no $/progress; its first definition is already right.
    readiness: { kind: 'progress', queuesFromStart: true },
    // Measured 2026-12-02: no hierarchies; rename and code actions (a misspelt property's fix). A custom property's new name (`--x`) is not a name /v1's rename takes.
    hierarchyOps: [],
    editOps: ['rename', 'codeActions'],
    encodings: ['utf-16'],
    maxInFlight: 16,
  });
}
