// C and C++: Debian's clangd 16, with a compile database generated per session (clangd-cdb.ts).
import { CLANGD_CDB_DIR, clangdSessionFiles, defaultCdbLimits, fallbackFlags } from '../clangd-cdb.js';
import { probeBinary } from '../server-env.js';
import type { ServerRow } from '../server-row.js';

/** The newest clangd Debian bookworm packages (images/pins.env DEB_CLANGD_16). */
export const CLANGD = '/usr/bin/clangd-16';

export function cRow(): ServerRow {
  return {
    // clangd 16 (Debian's clangd-16; bookworm's default clangd is 14: bench/calibrate
    // measured 16 no slower to a right answer, LLM.md "Calibration"). Quirks:
    // - compile commands: every session gets a compile_commands.json generated
    //   into its private HOME (clangd-cdb.ts, --compile-commands-dir): a copy of
    //   the workspace's own (or build/'s) when it has one, rebased from the CI
    //   checkout it names onto the jail's path, else every C/C++ source listed with
    //   the workspace's compile_flags.txt or the fallback flags (the workspace,
    //   include/ and src/ on the include path). Bounded in bytes (maxCompileDbBytes,
    //   maxCompileFlagsBytes), written as a stream; what a bound cut is a note.
    // - index: clangd writes its background index beside the database it loaded,
    //   so it lives in the session's private tmpfs (not the read-only tree), and
    //   goes with the session.
    // - readiness: the background index reports $/progress ("indexing") that
    //   begins only once the first file is opened, after the moment a progress
    //   check would look: so wait for the opened file's diagnostics (its AST is
    //   built) and then for the progress to close; under load the progress can
    //   begin after the diagnostics (CI saw a definition land on the header), so a
    //   progress is awaited up to progressWithinMs after them. No grace
    //   after it: the two signals are its own, and bench/calibrate (3 runs a day,
    //   issues 7 and 15) never saw a wrong answer asked after them (50 ms of a
    //   300 ms cold start).
    // - positions: UTF-16 (the encoding lspd's callers speak; no conversion needed).
    // Code and config from the tree: none. Plugins, response files, config files
    // and toolchain paths are removed from every compile command it gets
    // (compile-flags.ts) and the driver is a bare compiler name; --enable-config=false
    // so a tree's .clangd (which can add flags) is never read; --query-driver is
    // never given, so no compiler is ever executed. .clang-tidy and .clang-format
    // are read: they choose among checks and styles built into clangd, load nothing.
    name: 'clangd',
    languages: ['c', 'cpp'],
    argv: [
      CLANGD,
      `--compile-commands-dir=${CLANGD_CDB_DIR}`,
      '--enable-config=false',
      '--background-index',
      '--log=error',
      '--pch-storage=memory',
      '--header-insertion=never',
      '-j=2',
    ],
    env: {},
    rootMarkers: ['compile_commands.json', 'compile_flags.txt'],
    sessionFiles: (ws, c) => clangdSessionFiles(ws, { ...defaultCdbLimits, maxDatabaseBytes: c.maxCompileDbBytes, maxFlagsBytes: c.maxCompileFlagsBytes }),
    initializationOptions: (workspaceAt: string) => ({ fallbackFlags: fallbackFlags(workspaceAt) }),
    readiness: { kind: 'documentDiagnostics', graceMs: 0, progressWithinMs: 1000 },
    // clangd 16 advertises callHierarchyProvider but answers callHierarchy/outgoingCalls
    // MethodNotFound (outgoing calls came in a later clangd): that op is 422 no_server.
    hierarchyOps: ['incomingCalls', 'supertypes', 'subtypes'],
    // clangd 16's refactors (tweaks) are commands (clangd.applyTweak): listed without a patch; its quick fixes carry edits.
    editOps: ['rename', 'codeActions'],
    encodings: ['utf-16'],
    maxInFlight: 16,
    probe: () =>
      probeBinary({ path: CLANGD, debianPackage: 'clangd-16', absent: 'not installed (clangd-16 missing; images/pins.env pins the Debian package)' }),
  };
}
