// TypeScript and JavaScript: TS 7 (the native server, the default) and
// typescript-language-server over the daemon's pinned TypeScript 5 (LSPD_TYPESCRIPT_SERVER=tsserver).
import { TSSERVER_TYPESCRIPT_AT } from '../../../jail/layout.js';
import { NODE, probeFiles } from '../server-env.js';
import { nodeModulesOf, type ServerPaths, type ServerRow } from '../server-row.js';

/** typescript-language-server's options: this tsserver, never the tree's; `plugins` global, from the row's own node_modules. */
export function tslsOptions(tsserverJs: string, plugins?: { name: string; location: string; languages?: string[] }[]): Record<string, unknown> {
  return {
    tsserver: { path: tsserverJs, logVerbosity: 'off' },
    // The typings installer starts npm and reaches for the network; it also outlived the server.
    disableAutomaticTypingAcquisition: true,
    preferences: {},
    ...(plugins && { plugins }),
  };
}

/**
 * TS 7 logs warnings and errors only (`logVerbosity` is VS Code's LogLevel: 4 is
 * Warning). At its default, Info, it sends one or two window/logMessage lines per
 * request ("handled method …", snapshot clones) that the session drops unread, each
 * a frame for the daemon to parse and dispatch: 1.75 inbound messages per answer
 * besides the answer itself, measured with strace on bench/load's questions.
 * The benches give the raw server the same options.
 */
export const TS7_INITIALIZATION_OPTIONS = Object.freeze({ logVerbosity: 4 });

/** Both rows; LSPD_TYPESCRIPT_SERVER selects one (`selectedWhen`). */
export function typescriptRows(p: ServerPaths): ServerRow[] {
  const { host, at } = nodeModulesOf(p);
  return [
    {
      // TypeScript 7 (typescript-go). Its platform binary is run directly: the
      // package's bin/tsc wrapper cannot exec it on Node 20 and stays resident.
      // Code from the tree: none. It has no language-service plugin loader
      // (tsconfig compilerOptions.plugins is an option it reads and never acts on),
      // never runs the tree's node_modules/typescript, and its one program run
      // (npm, for type acquisition) is turned off below.
      name: 'typescript',
      languages: ['typescript', 'javascript'],
      argv: [at('@typescript/typescript-linux-x64/lib/tsc'), '--lsp', '--stdio'],
      env: {},
      ecosystem: 'npm',
      rootMarkers: ['tsconfig.json', 'jsconfig.json', 'package.json'],
      // Automatic type acquisition runs `npm install types-registry` for JS projects
      // (measured: it does, unasked). It is turned off through the settings TS 7
      // reads with workspace/configuration: the unified `js/ts` key and the older one.
      settings: {
        'js/ts': { tsserver: { automaticTypeAcquisition: { enabled: false } } },
        typescript: { disableAutomaticTypeAcquisition: true, tsserver: { automaticTypeAcquisition: { enabled: false } } },
        javascript: {},
        editor: {},
      },
      initializationOptions: TS7_INITIALIZATION_OPTIONS,
      // TS 7 loads the project synchronously inside didOpen, and requests queue
      // behind it: the first answer is already right (94 ms cold on the fixture).
      readiness: { kind: 'progress', queuesFromStart: true },
      hierarchyOps: ['incomingCalls', 'outgoingCalls'],
      editOps: ['rename', 'codeActions'],
      // It negotiates utf-8 when offered; we offer utf-16 first and convert if not.
      encodings: ['utf-16', 'utf-8'],
      maxInFlight: 32,
      selectedWhen: (c) => c.typescriptServer === 'native',
      probe: () => probeFiles([host('@typescript/typescript-linux-x64/lib/tsc')], host('@typescript/typescript-linux-x64/package.json')),
    },
    {
      // typescript-language-server over the daemon's pinned TypeScript 5: tsserver's
      // exact semantics for projects that need them. `tsserver.path` pins it so the
      // tree's own node_modules/typescript (dependency-authored code) is never run.
      // Code from the tree: none. tsserver loads the plugins a tsconfig names
      // (compilerOptions.plugins) only by package name (no paths, no `..`) and only
      // from its search paths: --pluginProbeLocations (never given: no `plugins` in
      // initializationOptions), beside its own install (/opt/lspd-typescript, the
      // pinned package alone), and the project's directory only with
      // --allowLocalPluginLoads, which is never given. So neither the tree nor its
      // fetched node_modules can name a plugin that loads; typings installer off.
      name: 'typescript-language-server',
      languages: ['typescript', 'javascript'],
      argv: [NODE, at('typescript-language-server/lib/cli.mjs'), '--stdio'],
      env: {},
      // The pinned TypeScript bound on its own: run from inside the daemon's
      // node_modules, tsserver walked and inotify-watched every package beside it
      // (measured with strace: thousands of readlink/inotify_add_watch calls).
      binds: [{ host: host('typescript'), at: TSSERVER_TYPESCRIPT_AT }],
      ecosystem: 'npm',
      rootMarkers: ['tsconfig.json', 'jsconfig.json', 'package.json'],
      initializationOptions: tslsOptions(`${TSSERVER_TYPESCRIPT_AT}/lib/tsserver.js`),
      // Its syntax server answers definitions with the local import line before the
      // project loads (non-empty and wrong), and its progress can end seconds before
      // the right answer: wait for the document's first semantic diagnostics.
      readiness: { kind: 'documentDiagnostics' },
      hierarchyOps: ['incomingCalls', 'outgoingCalls'],
      editOps: ['rename', 'codeActions'],
      // Its quick fixes carry their edit as this client-side command's argument, not as `edit`.
      editCommands: ['_typescript.applyWorkspaceEdit'],
      encodings: ['utf-16'],
      maxInFlight: 32,
      selectedWhen: (c) => c.typescriptServer === 'tsserver',
      probe: () =>
        probeFiles(
          [host('typescript-language-server/lib/cli.mjs'), host('typescript/lib/tsserver.js')],
          host('typescript-language-server/package.json'),
          host('typescript/package.json'),
        ),
    },
  ];
}
