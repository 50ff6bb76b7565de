// Angular templates (.html): @angular/language-server, which runs the Angular
// compiler inside its own tsserver project service over the pinned TypeScript 5.
import { NODE, probeFiles } from '../server-env.js';
import { packageClosureBinds } from '../package-binds.js';
import { nodeModulesOf, type ServerPaths, type ServerRow } from '../server-row.js';

/** The server, the Angular language service and TypeScript, as a node_modules of their own: its probe locations. */
const ANGULAR_AT = '/opt/lspd-angular';

export function angularRow(p: ServerPaths): ServerRow {
  const { host } = nodeModulesOf(p);
  return {
    // Code from the tree: none. TypeScript and @angular/language-service are found
    // only in the probe locations we give (ANGULAR_AT, which holds the three pinned
    // packages alone), never the tree's node_modules; its project service loads the
    // Angular plugin from there with allowLocalPluginLoads false, so a tsconfig's
    // plugins can name nothing else; no typings installer.
    name: 'angular',
    languages: ['html'],
    argv: [NODE, `${ANGULAR_AT}/node_modules/@angular/language-server/index.js`, '--stdio', '--tsProbeLocations', ANGULAR_AT, '--ngProbeLocations', ANGULAR_AT],
    env: {},
    binds: packageClosureBinds(p.nodeModulesHost, ['@angular/language-server'], ANGULAR_AT),
    // The server turns itself off for a project whose program holds no @angular/core
    // declarations (and answers nothing): such a template is refused up front instead.
    needsPackage: {
      name: '@angular/core',
      absent:
        ".html files are served as Angular templates, which need @angular/core in node_modules (the tree's, or fetched from its package.json and lockfile)",
    },
    ecosystem: 'npm',
    rootMarkers: ['tsconfig.json', 'package.json'],
    // No progress; its first diagnostics of the template come once the project has
    // loaded and the Angular compiler has analysed it.
    readiness: { kind: 'documentDiagnostics' },
    // Its initialize capabilities (21.2.13): no call or type hierarchy, no document or workspace symbols.
    hierarchyOps: [],
    encodings: ['utf-16'],
    maxInFlight: 32,
    probe: () =>
      probeFiles(
        [host('@angular/language-server/index.js'), host('@angular/language-service/index.js'), host('typescript/lib/tsserverlibrary.js')],
        host('@angular/language-server/package.json'),
        host('typescript/package.json'),
      ),
  };
}
