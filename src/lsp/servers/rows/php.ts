// PHP: intelephense (npm), over the vendor/ dir composer filled in FETCH.
import { JAIL_HOME } from '../../../jail/layout.js';
import { nodeServerRow, type ServerPaths, type ServerRow } from '../server-row.js';

const INTELEPHENSE_STORAGE = `${JAIL_HOME}/intelephense`;

export function phpRow(p: ServerPaths): ServerRow {
  return nodeServerRow(p, {
    // intelephense 1.18.5 (npm). Quirks:
    // - storagePath/globalStoragePath point into the private HOME: by default it
    //   writes its index cache under os.tmpdir() and the user's home.
    // - no licence key is given (none is read: HOME is empty), so only the free
    //   features answer; telemetry off.
    // - readiness: its "indexing" $/progress, which begins 0.1-0.3 s after
    //   `initialized` (so a query in that gap must not pass for ready:
    //   expectProgress). Before it ends, definitions into unindexed files answer
    //   empty; it indexes the PHP stubs (~140 files) every session.
    // - positions: UTF-16.
    // Code from the tree: none. It is a parser written in JS: it runs no PHP and
    // no program; its settings come from us (workspace/configuration), not the tree.
    name: 'intelephense',
    languages: ['php'],
    node: { package: 'intelephense', entry: 'lib/intelephense.js', args: ['--stdio'] },
    ecosystem: 'composer',
    rootMarkers: ['composer.json'],
    initializationOptions: { storagePath: `${INTELEPHENSE_STORAGE}/storage`, globalStoragePath: `${INTELEPHENSE_STORAGE}/global`, clearCache: true },
    settings: {
      intelephense: {
        telemetry: { enabled: false },
        files: { maxSize: 2_000_000, exclude: ['**/.git/**', '**/node_modules/**'] },
        diagnostics: { enable: true },
      },
    },
    // graceMs 0: one indexing progress per session, and no question asked after it
    // ended was answered wrong (bench/calibrate, 7 cold runs); the default 50 ms
    // was only waited, on every cold start.
    readiness: { kind: 'progress', expectProgress: true, graceMs: 0 },
    hierarchyOps: [],
    // The free intelephense (no licence key) advertises neither rename nor code actions (measured 2026-12-02).
    editOps: [],
    encodings: ['utf-16'],
    maxInFlight: 16,
  });
}
