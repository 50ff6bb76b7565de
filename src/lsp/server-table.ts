// The closed table of language servers: for each, the command run inside the SERVE
// jail, the languages it serves, its workspace root markers, what it is told at
// initialize, how to tell it has finished indexing, and the quirks that make it
// behave. No caller ever supplies a command; adding a language is adding a row
// here (and a fixture test). Availability and version are probed at boot from the
// installed files (nothing is executed outside the jail) and shown in /readyz; a
// row whose server is absent stays in the table, reported unavailable with why.
import { join } from 'node:path';
import type { Config } from '../config.js';
import type { ServerAvailability } from '../health.js';
import type { Language } from '../languages.js';
import type { Bind } from '../jail/types.js';
import type { Ecosystem } from '../fetch/types.js';
import { JAIL_NODE_MODULES, PROJECT_DIR } from '../jail/policy.js';
import { PYTHON_DEPS_AT } from './paths.js';
import type { Encoding } from './encoding.js';
import type { GeneratedFiles } from './session-files.js';
import { languageRows } from './language-rows.js';
import { JAIL_ENV, NODE, probeFiles } from './server-env.js';

export { probeFiles };

/**
 * How a session decides a server has finished loading the project, so an answer
 * given before then is marked `incomplete` (never passed off as "no results").
 * Every strategy also waits while a `$/progress` token it does not ignore is open,
 * and for `readyGraceMs` after the last one ended.
 */
export type Readiness =
  /**
   * Ready when no (non-ignored) progress is open. Right for servers that hold
   * requests until they can answer them right: TS 7 loads the project inside
   * didOpen and queues requests behind it; pyright holds them until analysis.
   */
  | {
      kind: 'progress';
      ignoreTitles?: RegExp;
      /**
       * The server always reports its indexing as $/progress, but only some time
       * after `initialized` (intelephense: 0.1-0.3 s): not ready until one such
       * progress has begun and ended, so a query in that gap does not pass for ready.
       */
      expectProgress?: boolean;
    }
  /**
   * A document is ready once the server has published diagnostics for it: the
   * semantic checker has then loaded the project holding it. For servers whose
   * early answers come from a syntax-only pass (typescript-language-server).
   */
  | { kind: 'documentDiagnostics'; ignoreTitles?: RegExp }
  /**
   * Ready once the server has logged (window/logMessage) a line matching
   * `pattern`: for servers whose only word that indexing finished is a log line
   * (bash-language-server's background analysis). The line is tested, never kept.
   */
  | { kind: 'logMessage'; pattern: RegExp; ignoreTitles?: RegExp };

export interface ServerRow {
  /** Stable name: answers' `server`, /readyz, metrics, session keys. */
  name: string;
  languages: readonly Language[];
  /** argv inside the jail; argv[0] absolute. */
  argv: readonly string[];
  /** Environment inside the jail (the jail starts from nothing). */
  env: Readonly<Record<string, string>>;
  /** Extra read-only binds this server needs (tests bind their fakes this way). */
  binds?: readonly Bind[];
  /** Files whose presence in a directory makes it a workspace (nearest ancestor wins). */
  rootMarkers: readonly string[];
  /** Sent at initialize; a function is given the workspace's in-jail directory. */
  initializationOptions?: unknown | ((workspaceAt: string) => unknown);
  /**
   * Files generated for each session (in-jail path under HOME or /tmp → contents),
   * bound read-only; e.g. clangd's compile_commands.json. Given the host tree and the
   * workspace, which it may read (never follow links out of: see the row), and the
   * configuration (its bounds). Its notes are logged and carried by answers.
   */
  sessionFiles?: (ws: { treeHostDir: string; workspace: string; workspaceAt: string }, config: Config) => Promise<GeneratedFiles>;
  /** Whose fetched dependencies this server reads: their binds and env, and what answers say of them. */
  ecosystem?: Ecosystem;
  /** Answers to `workspace/configuration`, by section (a dotted section is looked up by path). */
  settings?: Readonly<Record<string, unknown>>;
  /**
   * The settings for a session that sees the root's fetched dependencies (their
   * read-only binds), in place of `settings`; undefined: `settings` as they are.
   */
  dependencySettings?: (depBinds: readonly Bind[]) => Readonly<Record<string, unknown>> | undefined;
  readiness: Readiness;
  /** Position encodings offered at initialize, preferred first (LSP 3.17 general.positionEncodings). */
  encodings: readonly Encoding[];
  /** Most requests in flight on one session; more wait in the pool's queue. */
  maxInFlight: number;
  /** Chosen among rows claiming the same language only when this holds (default: always). */
  selectedWhen?: (config: Config) => boolean;
  /** Is it installed, which version. Runs at boot; must not execute anything outside the jail. */
  probe: () => Promise<ServerAvailability>;
}

/** Where the daemon's own node_modules are on the host and inside the SERVE jail. */
export interface ServerPaths {
  nodeModulesHost: string;
  nodeModulesAt: string;
}

/** The daemon's node_modules as the SERVE jail binds it. */
export function defaultServerPaths(): ServerPaths {
  return { nodeModulesHost: join(PROJECT_DIR, 'node_modules'), nodeModulesAt: JAIL_NODE_MODULES };
}

/** Where the tsserver row sees the daemon's pinned TypeScript 5 (a bind of its own). */
const TSSERVER_TS_AT = '/opt/lspd-typescript/typescript';

const PYRIGHT_ANALYSIS = { typeCheckingMode: 'standard', diagnosticMode: 'openFilesOnly', autoSearchPaths: true, logLevel: 'Error' };

/**
 * pyright's settings. Pin the interpreter pyright asks for sys.path to the image's
 * own, never a `python` a tree could put first; check what a tree's config does not
 * say. logLevel error: its info logs are notifications each request would pay for.
 * `extraPaths`: the fetched site-packages dirs (nothing in a Python tree says where
 * installed packages live, so pyright is told).
 */
function pyrightSettings(extraPaths: string[] = []): Record<string, unknown> {
  const analysis = extraPaths.length > 0 ? { ...PYRIGHT_ANALYSIS, extraPaths } : PYRIGHT_ANALYSIS;
  return { python: { pythonPath: '/usr/bin/python3', analysis }, 'python.analysis': analysis, pyright: {} };
}

/** The real table. Order matters: among rows claiming a language and selected, the first wins. */
export function defaultServerRows(p: ServerPaths): ServerRow[] {
  const host = (rel: string) => join(p.nodeModulesHost, rel);
  const at = (rel: string) => `${p.nodeModulesAt}/${rel}`;
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
      env: { ...JAIL_ENV },
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
      // TS 7 loads the project synchronously inside didOpen, and requests queue
      // behind it: the first answer is already right (94 ms cold on the fixture).
      readiness: { kind: 'progress' },
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
      env: { ...JAIL_ENV },
      // The pinned TypeScript bound on its own: run from inside the daemon's
      // node_modules, tsserver walked and inotify-watched every package beside it
      // (measured with strace: thousands of readlink/inotify_add_watch calls).
      binds: [{ host: host('typescript'), at: TSSERVER_TS_AT }],
      ecosystem: 'npm',
      rootMarkers: ['tsconfig.json', 'jsconfig.json', 'package.json'],
      initializationOptions: {
        tsserver: { path: `${TSSERVER_TS_AT}/lib/tsserver.js`, logVerbosity: 'off' },
        // The typings installer starts npm and reaches for the network; it also outlived the server.
        disableAutomaticTypingAcquisition: true,
        preferences: {},
      },
      // Its syntax server answers definitions with the local import line before the
      // project loads (non-empty and wrong), and its progress can end seconds before
      // the right answer: wait for the document's first semantic diagnostics.
      readiness: { kind: 'documentDiagnostics' },
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
    {
      // Code from the tree: none. Pyright runs one program, a Python interpreter,
      // for sys.path: the image's /usr/bin/python3 (python.pythonPath below; a
      // pyrightconfig.json or [tool.pyright] cannot name one: venvPath/venv only
      // point it at site-packages to read). It runs that with the workspace as its
      // cwd: PYTHONSAFEPATH keeps the cwd (the tree: a json.py, os.py there) off
      // sys.path from the start, beside pyright's own scrub of it after `import os`
      // (frozen in 3.11); PYTHONNOUSERSITE: no user site-packages.
      name: 'pyright',
      languages: ['python'],
      argv: [NODE, at('pyright/langserver.index.js'), '--stdio'],
      env: { ...JAIL_ENV, PYTHONSAFEPATH: '1', PYTHONNOUSERSITE: '1' },
      // Wheels from the tree's lock (src/fetch/python.ts), bound under /deps/python.
      ecosystem: 'python',
      rootMarkers: ['pyrightconfig.json', 'pyproject.toml', 'setup.py', 'setup.cfg'],
      settings: pyrightSettings(),
      dependencySettings: (binds) => {
        const sites = binds.filter((b) => b.at.startsWith(`${PYTHON_DEPS_AT}/`)).map((b) => b.at);
        return sites.length > 0 ? pyrightSettings(sites) : undefined;
      },
      // Pyright holds requests until its first analysis is done, but it also opens
      // a progress token for every references request: those are not indexing.
      readiness: { kind: 'progress', ignoreTitles: /^(Finding references|Searching|Renaming)/i },
      encodings: ['utf-16'],
      maxInFlight: 32,
      probe: () => probeFiles([host('pyright/langserver.index.js'), host('pyright/dist/pyright-langserver.js')], host('pyright/package.json')),
    },
    // Go, C/C++, PHP, shell, Rust, Java, Ruby: src/lsp/language-rows.ts.
    ...languageRows(p),
  ];
}

/** A view of the rows for one configuration: choice per language, lookups by name. */
export class ServerTable {
  readonly rows: readonly ServerRow[];
  private readonly byName = new Map<string, ServerRow>();
  private readonly config: Config;

  constructor(rows: readonly ServerRow[], config: Config) {
    this.rows = rows;
    this.config = config;
    for (const r of rows) {
      if (this.byName.has(r.name)) throw new Error(`server table: duplicate row ${r.name}`);
      if (!r.argv[0]?.startsWith('/')) throw new Error(`server table: ${r.name} argv[0] must be absolute`);
      this.byName.set(r.name, r);
    }
  }

  get(name: string): ServerRow | undefined {
    return this.byName.get(name);
  }

  /**
   * The server for a language: the first row claiming it whose `selectedWhen`
   * holds. Deterministic by table order; there is no fallback to another row when
   * the chosen one is unavailable (an operator who chose tsserver wants tsserver).
   */
  choose(language: Language): ServerRow | undefined {
    return this.rows.find((r) => r.languages.includes(language) && (r.selectedWhen?.(this.config) ?? true));
  }

  /** Probe every row; absent servers are reported with the reason, never dropped. */
  async probeAll(): Promise<Record<string, ServerAvailability>> {
    const out: Record<string, ServerAvailability> = {};
    await Promise.all(
      this.rows.map(async (r) => {
        try {
          out[r.name] = await r.probe();
        } catch (err) {
          out[r.name] = { available: false, reason: `probe failed: ${(err as Error).message}` };
        }
      }),
    );
    return out;
  }
}

/** The value of a `workspace/configuration` item for a row: exact section, else walk a dotted path. */
export function settingFor(row: ServerRow, section: unknown, settings = row.settings): unknown {
  const s = settings;
  if (!s || typeof section !== 'string') return null;
  if (section in s) return s[section];
  let cur: unknown = s;
  for (const part of section.split('.')) {
    if (typeof cur !== 'object' || cur === null || !(part in cur)) return null;
    cur = (cur as Record<string, unknown>)[part];
  }
  return cur ?? null;
}
