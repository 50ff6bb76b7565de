// The server table's rows beyond TypeScript and Python: Go, C/C++, PHP, shell,
// and the rows for servers this image may lack (Rust, Java, Ruby), which stay in the
// table and report unavailable with the reason. Each row carries its quirks beside
// it: where it writes caches (always the session's private tmpfs HOME/TMPDIR), what
// it needs of /proc, its readiness signal, and the position encodings it speaks.
// Readiness figures are from bench/calibrate (LLM.md "Calibration").
import type { ServerRow, ServerPaths } from './server-table.js';
import { JAIL_ENV, NODE, probeBinary, probeFiles } from './server-env.js';
import { JAIL_HOME } from '../jail/policy.js';
import { CLANGD_CDB_DIR, clangdSessionFiles, defaultCdbLimits, fallbackFlags } from './clangd-cdb.js';

/** Go's own tree in the image (golang-go); gopls runs `go list` from it. */
export const GOROOT = '/usr/lib/go';

const INTELEPHENSE_STORAGE = `${JAIL_HOME}/intelephense`;

/** jdtls: never import a build (Gradle runs build scripts, Maven runs plugins). */
const JDTLS_SETTINGS = {
  java: { import: { gradle: { enabled: false, wrapper: { enabled: false } }, maven: { enabled: false } }, autobuild: { enabled: false } },
};

export function languageRows(p: ServerPaths): ServerRow[] {
  const at = (rel: string) => `${p.nodeModulesAt}/${rel}`;
  const host = (rel: string) => `${p.nodeModulesHost}/${rel}`;
  return [
    {
      // gopls (Debian 0.5.0 on go 1.19). Quirks:
      // - needs /proc (readlink /proc/self/exe at start) and /dev/null (go list);
      //   both are in every SERVE jail.
      // - runs `go list` for every package load: GOROOT is the image's, the build
      //   cache (GOCACHE, from XDG_CACHE_HOME) and GOPATH live in the private HOME.
      // - dependencies: the module cache FETCH filled is bound read-only at
      //   /deps/go/pkg/mod and named by GOMODCACHE (the fetcher's serveEnv adds it);
      //   GOPROXY=off and -mod=readonly so a missing module is an error, never a
      //   download or a rewrite of go.mod/go.sum. GOTOOLCHAIN=local: never fetch a Go.
      // - readiness: it loads the workspace after `initialized` and holds requests
      //   until then; its progress ("Setting up workspace") begins a few ms after
      //   `initialized` and closes when loaded (expectProgress: the diagnostics
      //   window then starts after the load, not during it).
      // - positions: UTF-16 only.
      // Code from the tree: none. The go command it runs is the image's (GOROOT);
      // what could make go run another program is pinned here, where a tree cannot
      // reach: GOTOOLCHAIN=local (a go.mod `toolchain` line never downloads or
      // runs a Go), GOFLAGS set (so no -toolexec/-exec), GOENV=off (no go/env
      // file), GOWORK=off (no go.work), CGO_ENABLED=0 (no C compiler for #cgo
      // lines: `go list -compiled` runs nothing), GOPROXY=off, GOVCS=*:off.
      // Nothing here reads the tree's env files; build flags come from our settings.
      name: 'gopls',
      languages: ['go'],
      argv: ['/usr/bin/gopls'],
      env: {
        ...JAIL_ENV,
        GOROOT,
        GOPATH: `${JAIL_HOME}/go`,
        GOFLAGS: '-mod=readonly',
        GOPROXY: 'off',
        GOSUMDB: 'off',
        GOTOOLCHAIN: 'local',
        GOTELEMETRY: 'off',
        GOENV: 'off',
        GOWORK: 'off',
        GOVCS: '*:off',
        CGO_ENABLED: '0',
      },
      ecosystem: 'go',
      rootMarkers: ['go.mod'],
      settings: { gopls: { hoverKind: 'FullDocumentation', linksInHover: false } },
      readiness: { kind: 'progress', expectProgress: true },
      encodings: ['utf-16'],
      maxInFlight: 16,
      probe: () => probeBinary({ path: '/usr/bin/gopls', debianPackage: 'gopls', absent: 'not installed (gopls missing; images/pins.env pins the Debian package)' }),
    },
    {
      // clangd 14. Quirks:
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
      //   built; the index has begun) and then for the progress to close.
      // - positions: UTF-16 (clangd 14 predates LSP 3.17 position encodings).
      // Code and config from the tree: none. Plugins, response files, config files
      // and toolchain paths are removed from every compile command it gets
      // (compile-flags.ts) and the driver is a bare compiler name; --enable-config=false
      // so a tree's .clangd (which can add flags) is never read; --query-driver is
      // never given, so no compiler is ever executed. .clang-tidy and .clang-format
      // are read: they choose among checks and styles built into clangd, load nothing.
      name: 'clangd',
      languages: ['c', 'cpp'],
      argv: ['/usr/bin/clangd', `--compile-commands-dir=${CLANGD_CDB_DIR}`, '--enable-config=false', '--background-index', '--log=error', '--pch-storage=memory', '--header-insertion=never', '-j=2'],
      env: { ...JAIL_ENV },
      rootMarkers: ['compile_commands.json', 'compile_flags.txt'],
      sessionFiles: (ws, c) =>
        clangdSessionFiles(ws, { ...defaultCdbLimits, maxDatabaseBytes: c.maxCompileDbBytes, maxFlagsBytes: c.maxCompileFlagsBytes }),
      initializationOptions: (workspaceAt: string) => ({ fallbackFlags: fallbackFlags(workspaceAt) }),
      readiness: { kind: 'documentDiagnostics' },
      encodings: ['utf-16'],
      maxInFlight: 16,
      probe: () => probeBinary({ path: '/usr/bin/clangd', debianPackage: 'clangd', absent: 'not installed (clangd missing; images/pins.env pins the Debian package)' }),
    },
    {
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
      argv: [NODE, at('intelephense/lib/intelephense.js'), '--stdio'],
      env: { ...JAIL_ENV },
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
      readiness: { kind: 'progress', expectProgress: true },
      encodings: ['utf-16'],
      maxInFlight: 16,
      probe: () => probeFiles([host('intelephense/lib/intelephense.js')], host('intelephense/package.json')),
    },
    {
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
      argv: [NODE, at('bash-language-server/out/cli.js'), 'start'],
      env: { ...JAIL_ENV },
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
      encodings: ['utf-16'],
      maxInFlight: 16,
      probe: () => probeFiles([host('bash-language-server/out/cli.js'), '/usr/bin/shellcheck'], host('bash-language-server/package.json')),
    },
    {
      // rust-analyzer, pinned by the Dockerfile (release and sha256) at
      // /usr/local/bin. Build scripts and proc macros off: both run the tree's code.
      // Cargo's registry would be the FETCH phase's (cargo fetch), not yet built.
      // Code from the tree: rust-analyzer's own stance is that the code it opens is
      // trusted ("Security" in its manual). What this row can pin, it does: no
      // build scripts, proc macros or cargo check; a tree's .cargo/config.toml
      // cannot swap rustc or wrap it (RUSTC, RUSTC_WRAPPER, RUSTC_WORKSPACE_WRAPPER
      // in the environment outrank config files; empty means none). What it cannot:
      // a rust-toolchain.toml (only rustup reads it; the image has none) and a
      // rust-analyzer.toml's commands. It stays unavailable in this image (no
      // binary); installed, the jail is all that contains it.
      name: 'rust-analyzer',
      languages: ['rust'],
      argv: ['/usr/local/bin/rust-analyzer'],
      env: { ...JAIL_ENV, CARGO_NET_OFFLINE: 'true', CARGO_HOME: `${JAIL_HOME}/cargo`, RUSTC: 'rustc', RUSTC_WRAPPER: '', RUSTC_WORKSPACE_WRAPPER: '' },
      ecosystem: 'cargo',
      rootMarkers: ['Cargo.toml'],
      initializationOptions: {
        cargo: { buildScripts: { enable: false }, sysroot: null },
        procMacro: { enable: false },
        checkOnSave: false,
        cachePriming: { enable: false },
      },
      readiness: { kind: 'progress' },
      encodings: ['utf-16', 'utf-8'],
      maxInFlight: 16,
      probe: () =>
        probeBinary({ path: '/usr/local/bin/rust-analyzer', absent: 'rust-analyzer cannot be installed from the registries this host reaches; the Dockerfile pins it' }),
    },
    {
      // Eclipse JDT LS, when an image provides /usr/bin/jdtls (Debian bookworm has
      // no package). Its workspace data dir (-data) belongs in the private HOME.
      // Code from the tree: importing a Gradle project runs its build scripts (and
      // a wrapper the tree ships), a Maven one its plugins: both imports are off,
      // so it reads sources as an unmanaged folder.
      name: 'jdtls',
      languages: ['java'],
      argv: ['/usr/bin/jdtls', '-data', `${JAIL_HOME}/jdtls-data`],
      env: { ...JAIL_ENV },
      rootMarkers: ['pom.xml', 'build.gradle', 'build.gradle.kts', '.project'],
      initializationOptions: { settings: JDTLS_SETTINGS },
      settings: JDTLS_SETTINGS,
      readiness: { kind: 'progress' },
      encodings: ['utf-16'],
      maxInFlight: 16,
      probe: () => probeBinary({ path: '/usr/bin/jdtls', absent: 'not installed (no jdtls in this image: Debian bookworm has no package of it)' }),
    },
    {
      // ruby-lsp, when an image provides it. It must never shell out to bundler
      // (which would run the tree's Gemfile): BUNDLE_GEMFILE points at nothing.
      // Code from the tree: RuboCop would `require` what a tree's .rubocop.yml
      // names, so the formatter and linters are off; RUBYOPT/RUBYLIB are empty so
      // no -r reaches the interpreter.
      name: 'ruby-lsp',
      languages: ['ruby'],
      argv: ['/usr/local/bin/ruby-lsp'],
      env: { ...JAIL_ENV, BUNDLE_GEMFILE: '/dev/null', GEM_HOME: `${JAIL_HOME}/gems`, RUBYOPT: '', RUBYLIB: '' },
      initializationOptions: { formatter: 'none', linters: [] },
      rootMarkers: ['Gemfile', '.ruby-version'],
      readiness: { kind: 'progress' },
      encodings: ['utf-16'],
      maxInFlight: 16,
      probe: () => probeBinary({ path: '/usr/local/bin/ruby-lsp', absent: 'not installed (no ruby-lsp in this image: it is a gem, and no pinned Ruby toolchain is installed)' }),
    },
  ];
}

