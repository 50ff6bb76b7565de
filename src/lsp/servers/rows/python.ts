// Python: pyright, with the wheels FETCH installed from the tree's lock as extra paths.

import { nodeServerRow, type ServerPaths, type ServerRow } from '../server-row.js';
import { PYTHON_DEPS_AT } from '../../../jail/layout.js';

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

export function pythonRow(p: ServerPaths): ServerRow {
  return nodeServerRow(p, {
    // Code from the tree: none. Pyright runs one program, a Python interpreter,
    // for sys.path: the image's /usr/bin/python3 (python.pythonPath below; a
    // pyrightconfig.json or [tool.pyright] cannot name one: venvPath/venv only
    // point it at site-packages to read). It runs that with the workspace as its
    // cwd: PYTHONSAFEPATH keeps the cwd (the tree: a json.py, os.py there) off
    // sys.path from the start, beside pyright's own scrub of it after `import os`
    // (frozen in 3.11); PYTHONNOUSERSITE: no user site-packages.
    name: 'pyright',
    languages: ['python'],
    node: {
      package: 'pyright',
      entry: 'langserver.index.js',
      args: ['--stdio'],
      env: { PYTHONSAFEPATH: '1', PYTHONNOUSERSITE: '1' },
      needs: ['pyright/dist/pyright-langserver.js'],
    },
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
    // It pushes a changed file in two parts, the bind pass's (empty) then the check's,
    // 15 ms apart idle and more under load, and a progress or another file's push can
    // fall between: the empty part was read as the answer (the flaky pyright check of
    // test/edit-check). It answers textDocument/diagnostic (registered only dynamically,
    // which we do not offer) with the file checked in the program as it is then.
    pullDiagnostics: true,
    hierarchyOps: ['incomingCalls', 'outgoingCalls'],
    editOps: ['rename', 'codeActions'],
    encodings: ['utf-16'],
    maxInFlight: 32,
  });
}
