// What one language server row says: the command run inside the SERVE jail, the
// languages it serves, its workspace root markers, what it is told at initialize,
// how to tell it has finished indexing, and the quirks that make it behave. The rows
// themselves are in rows/, one file per language family; server-table.ts lists them.
import { join } from 'node:path';
import { DEFAULT_DEBIAN13_ROOT, type Config } from '../../config.js';
import type { ServerAvailability } from '../../health.js';
import type { Language } from '../../languages.js';
import type { EditOp, GraphOp } from '../../api/schemas.js';
import type { Bind } from '../../jail/types.js';
import type { Ecosystem } from '../../fetch/types.js';
import { JAIL_NODE_MODULES } from '../../jail/layout.js';
import { PROJECT_DIR } from '../../jail/policy.js';
import type { Encoding } from '../wire/encoding.js';
import type { GeneratedFiles } from '../session/session-files.js';
import { NODE, probeFiles } from './server-env.js';

/**
 * How a session decides a server has finished loading the project, so an answer
 * given before then is marked `incomplete` (never passed off as "no results").
 * Every strategy also waits while a `$/progress` token it does not ignore is open,
 * and for `readyGraceMs` (or the row's `graceMs`) after the last one ended.
 */
type ReadinessSignal =
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
      /**
       * It holds every request, from its first, until it can answer it right (TS 7:
       * the project loads inside didOpen and requests queue behind it; measured: its
       * first answer is its first right one). So no start-up grace is waited for a
       * progress that may begin late: it cost TS 7's cold start ~20 ms.
       */
      queuesFromStart?: boolean;
      /**
       * The server says when it has nothing left to load: rust-analyzer's
       * `experimental/serverStatus` (`quiescent`), which the client offers only to a
       * row that sets this. Not ready until the last status it sent said quiescent.
       * Its progress tokens follow one another with gaps (fetch, crate graph, fetch
       * again, roots scanned: 1–11 ms apart here) that a loaded host stretched past the
       * grace once: a first definition answered [] as complete.
       */
      quiescentStatus?: boolean;
    }
  /**
   * A document is ready once the server has published diagnostics for it: the
   * semantic checker has then loaded the project holding it. For servers whose
   * early answers come from a syntax-only pass (typescript-language-server).
   */
  | {
      kind: 'documentDiagnostics';
      ignoreTitles?: RegExp;
      /**
       * For servers whose indexing progress may begin only after the document's
       * diagnostics (clangd's background index): not ready until a progress has
       * begun, or this long after the diagnostics passed without one.
       */
      progressWithinMs?: number;
    }
  /**
   * Ready once the server has logged (window/logMessage) a line matching
   * `pattern`: for servers whose only word that indexing finished is a log line
   * (bash-language-server's background analysis). The line is tested, never kept.
   */
  | { kind: 'logMessage'; pattern: RegExp; ignoreTitles?: RegExp };

export type Readiness = ReadinessSignal & {
  /** The quiet time after the last progress ends, for this row (measured with bench/calibrate); default `readyGraceMs`. */
  graceMs?: number;
};

/** The row's readiness waits for the server's `experimental/serverStatus` (`quiescentStatus`), so the client offers it. */
export const readsServerStatus = (r: Readiness): boolean => r.kind === 'progress' && r.quiescentStatus === true;

export interface ServerRow {
  /** Stable name: answers' `server`, /readyz, metrics, session keys. */
  name: string;
  languages: readonly Language[];
  /**
   * Languages it serves instead of their own row in a root that holds one of its
   * `languages` (the Vue row: TS and JS, so one program answers from a .ts file as
   * from a .vue file). ServerTable.choose applies it.
   */
  takesOver?: readonly Language[];
  /** The root languages that make it take over (default: its `languages`; the typescript-web row: svelte, astro). */
  takesOverIn?: readonly Language[];
  /**
   * A package it cannot work without, looked up from the workspace as Node would (the
   * tree's node_modules or a fetched one): absent, a query is 422 no_server saying
   * `absent` and no session starts (the Angular row: @angular/core).
   */
  needsPackage?: { name: string; absent: string };
  /** argv inside the jail; argv[0] absolute. */
  argv: readonly string[];
  /**
   * The server's own environment, laid over the one every SERVE jail starts from
   * (layout.ts jailEnv('serve'): PATH, HOME, TMPDIR, XDG dirs in the private tmpfs).
   */
  env: Readonly<Record<string, string>>;
  /**
   * A system root whose /usr its jail sees instead of the host's (JailSpawnOptions.systemRoot):
   * the Debian 13 root for a server the host's C library cannot run. Absent: the host's /usr.
   */
  systemRoot?: string;
  /** The version of the standard library sources its toolchain has (Rust's rust-src), for `external` std locations; read from files, cached. */
  stdSourcesVersion?: () => string | undefined;
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
   * configuration (its bounds). Its notes are logged and carried by answers; a row
   * may give notes and no files (gopls: what its go.mod asks that lspd will not do).
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
  /**
   * The call and type hierarchy ops its pinned version answers (its initialize
   * capabilities, measured), for /readyz before any session has started; a session's
   * own capabilities replace it there, and decide every query. Absent: not known.
   */
  hierarchyOps?: readonly GraphOp[];
  /** The edit ops (rename, codeActions) its pinned version answers, as hierarchyOps: for /readyz before a session; a session's capabilities replace it. */
  editOps?: readonly EditOp[];
  /**
   * Commands the server means its client to run whose first argument is the action's
   * WorkspaceEdit (typescript-language-server's `_typescript.applyWorkspaceEdit`): lspd
   * reads the edit from it and renders it as a patch; it never runs the command.
   */
  editCommands?: readonly string[];
  /**
   * It answers textDocument/diagnostic without advertising it, and its pushes come in
   * parts (Volar: a syntax pass, then the type check, seconds apart on a cold project),
   * so its diagnostics are pulled: the first push was read as the whole answer.
   */
  pullDiagnostics?: true;
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
  /** The Debian 13 root (config debian13Root); default DEFAULT_DEBIAN13_ROOT. */
  debian13Root?: string;
}

/** The daemon's node_modules as the SERVE jail binds it. */
export function defaultServerPaths(debian13Root: string = DEFAULT_DEBIAN13_ROOT): ServerPaths {
  return { nodeModulesHost: join(PROJECT_DIR, 'node_modules'), nodeModulesAt: JAIL_NODE_MODULES, debian13Root };
}

/** A path under the daemon's node_modules, on the host and as the SERVE jail sees it. */
export function nodeModulesOf(p: ServerPaths): { host: (rel: string) => string; at: (rel: string) => string } {
  return { host: (rel) => join(p.nodeModulesHost, rel), at: (rel) => `${p.nodeModulesAt}/${rel}` };
}

/**
 * What follows from a server being an npm package in the daemon's node_modules run
 * on the image's node: its argv, its env, and its probe (the entry script and
 * `needs` readable; the version from the package's package.json).
 */
export interface NodeServer {
  /** Its directory under node_modules, e.g. 'pyright'. */
  package: string;
  /** The script node runs, relative to the package, and the arguments after it. */
  entry: string;
  args: readonly string[];
  /** Its own environment (ServerRow.env). */
  env?: Readonly<Record<string, string>>;
  /** Other files it cannot run without: absolute on the host, or relative to node_modules. */
  needs?: readonly string[];
}

/** A row for a server run on the image's node from the daemon's node_modules (`node`); the rest is the row's own. */
export function nodeServerRow(p: ServerPaths, { node, ...row }: Omit<ServerRow, 'argv' | 'env' | 'probe'> & { node: NodeServer }): ServerRow {
  const { host, at } = nodeModulesOf(p);
  const entry = `${node.package}/${node.entry}`;
  const needs = (node.needs ?? []).map((f) => (f.startsWith('/') ? f : host(f)));
  return {
    ...row,
    argv: [NODE, at(entry), ...node.args],
    env: { ...node.env },
    probe: () => probeFiles([host(entry), ...needs], host(`${node.package}/package.json`)),
  };
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
