// Shell: bash-language-server (npm) with Debian's shellcheck.
import { nodeServerRow, type ServerPaths, type ServerRow } from '../server-row.js';

export function shellRow(p: ServerPaths): ServerRow {
  return nodeServerRow(p, {
    // bash-language-server 5.8.1 with shellcheck (Debian, /usr/bin, so bound with
    // /usr) for diagnostics. Quirks:
    // - includeAllWorkspaceSymbols: without it, functions reached through a
    //   `source` of a computed path never resolve.
    // - readiness: it sends no $/progress and answers empty until its background
    //   analysis (a glob of the workspace, then a parse of each file) is done; it
    //   says so only in a log line, "BackgroundAnalysis: Completed after …", which
    //   is the signal waited for (logLevel info so the line is sent).
    // - no explainshell (the endpoint would be the network), no shfmt.
    // - positions: UTF-16.
    // Code from the tree: none. It runs one program, /usr/bin/shellcheck (the
    // path is ours), which parses scripts and never runs them; a tree's
    // .shellcheckrc only chooses checks and where `source`d files are read from.
    // backgroundAnalysisMaxFiles bounds the files it parses.
    name: 'bash-language-server',
    languages: ['shell'],
    node: { package: 'bash-language-server', entry: 'out/cli.js', args: ['start'], needs: ['/usr/bin/shellcheck'] },
    rootMarkers: [],
    settings: {
      bashIde: {
        includeAllWorkspaceSymbols: true,
        shellcheckPath: '/usr/bin/shellcheck',
        explainshellEndpoint: '',
        logLevel: 'info',
        backgroundAnalysisMaxFiles: 500,
        shfmt: { path: '' },
      },
    },
    readiness: { kind: 'logMessage', pattern: /BackgroundAnalysis: (Completed|skipping|stopped|failed)/ },
    hierarchyOps: [],
    editOps: ['rename', 'codeActions'],
    encodings: ['utf-16'],
    maxInFlight: 16,
  });
}
