// The server table's rows beyond TypeScript and Python: Go, C/C++, PHP, shell,
// and the rows only the image installs (Rust, Java, Ruby: images/pins.env), which
// stay in the table and report unavailable with the reason on a host without them. Each row carries its quirks beside
// it: where it writes caches (always the session's private tmpfs HOME/TMPDIR), what
// it needs of /proc, its readiness signal, and the position encodings it speaks.
// Readiness figures are from bench/calibrate (LLM.md "Calibration").
import { readdir } from 'node:fs/promises';
import type { ServerAvailability } from '../health.js';
import type { ServerRow, ServerPaths } from './server-table.js';
import { JAIL_ENV, NODE, probeBinary, probeFiles } from './server-env.js';
import { JAIL_HOME, JAIL_TMP } from '../jail/policy.js';
import { CLANGD_CDB_DIR, clangdSessionFiles, defaultCdbLimits, fallbackFlags } from './clangd-cdb.js';

/** Go's own tree in the image (golang-go); gopls runs `go list` from it. */
export const GOROOT = '/usr/lib/go';

const INTELEPHENSE_STORAGE = `${JAIL_HOME}/intelephense`;
/** The newest clangd Debian bookworm packages (images/pins.env DEB_CLANGD_16). */
export const CLANGD = '/usr/bin/clangd-16';
/** Debian's JDK 17 (IMAGE_DEB_OPENJDK_17_JDK_HEADLESS), by its real path. */
export const JAVA = '/usr/lib/jvm/java-17-openjdk-amd64/bin/java';
/** Where the Dockerfile unpacks jdtls and installs ruby-lsp's gems (under /usr: the jail binds it). */
export const JDTLS_HOME = '/usr/local/share/jdtls';
export const RUBY_LSP_HOME = '/usr/local/lib/ruby-lsp';
/** Why the image-only rows are absent on a host: said by /readyz. */
const IMAGE_ONLY = 'is installed by the image only: images/pins.env pins its release and sha256, and this host cannot download it';

/** Nothing of the tree runs: no build tool import, no autobuild (annotation processors). */
const JDTLS_SETTINGS = {
  java: {
    import: { gradle: { enabled: false, wrapper: { enabled: false } }, maven: { enabled: false }, generatesMetadataFilesAtProjectRoot: false },
    autobuild: { enabled: false },
    configuration: { updateBuildConfiguration: 'disabled' },
    maven: { downloadSources: false },
    telemetry: { enabled: false },
  },
};

/** jdtls: the JDK and the unpacked release; its version from the core plugin's file name. */
async function probeJdtls(): Promise<ServerAvailability> {
  const absent = { available: false, reason: `not installed (jdtls ${IMAGE_ONLY})` };
  const jdk = await probeBinary({ path: JAVA, debianPackage: 'openjdk-17-jdk-headless', absent: '' });
  if (!jdk.available || !(await probeFiles([`${JDTLS_HOME}/launcher.jar`, `${JDTLS_HOME}/config_linux/config.ini`])).available) return absent;
  const core = (await readdir(`${JDTLS_HOME}/plugins`).catch(() => [] as string[])).map((f) => /^org\.eclipse\.jdt\.ls\.core_(\d+\.\d+\.\d+)/.exec(f)?.[1]).find(Boolean);
  return { available: true, ...(core ? { version: `${core} (JDK ${jdk.version ?? '17'})` } : {}) };
}

/** ruby-lsp: Ruby and the installed gems; its version from the gem's specification file. */
async function probeRubyLsp(): Promise<ServerAvailability> {
  const absent = { available: false, reason: `not installed (ruby-lsp ${IMAGE_ONLY})` };
  if (!(await probeBinary({ path: `${RUBY_LSP_HOME}/bin/ruby-lsp`, absent: '' })).available) return absent;
  if (!(await probeBinary({ path: '/usr/bin/ruby', absent: '' })).available) return absent;
  const spec = (await readdir(`${RUBY_LSP_HOME}/specifications`).catch(() => [] as string[])).map((f) => /^ruby-lsp-(\d[\w.]*)\.gemspec$/.exec(f)?.[1]).find(Boolean);
  return { available: true, ...(spec ? { version: spec } : {}) };
}

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
      //   built; the index has begun) and then for the progress to close.
      // - positions: UTF-16 (the encoding lspd's callers speak; no conversion needed).
      // Code and config from the tree: none. Plugins, response files, config files
      // and toolchain paths are removed from every compile command it gets
      // (compile-flags.ts) and the driver is a bare compiler name; --enable-config=false
      // so a tree's .clangd (which can add flags) is never read; --query-driver is
      // never given, so no compiler is ever executed. .clang-tidy and .clang-format
      // are read: they choose among checks and styles built into clangd, load nothing.
      name: 'clangd',
      languages: ['c', 'cpp'],
      argv: [CLANGD, `--compile-commands-dir=${CLANGD_CDB_DIR}`, '--enable-config=false', '--background-index', '--log=error', '--pch-storage=memory', '--header-insertion=never', '-j=2'],
      env: { ...JAIL_ENV },
      rootMarkers: ['compile_commands.json', 'compile_flags.txt'],
      sessionFiles: (ws, c) =>
        clangdSessionFiles(ws, { ...defaultCdbLimits, maxDatabaseBytes: c.maxCompileDbBytes, maxFlagsBytes: c.maxCompileFlagsBytes }),
      initializationOptions: (workspaceAt: string) => ({ fallbackFlags: fallbackFlags(workspaceAt) }),
      readiness: { kind: 'documentDiagnostics' },
      encodings: ['utf-16'],
      maxInFlight: 16,
      probe: () => probeBinary({ path: CLANGD, debianPackage: 'clangd-16', absent: 'not installed (clangd-16 missing; images/pins.env pins the Debian package)' }),
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
      // rust-analyzer, installed by the image only (images/pins.env: release and
      // sha256) at /usr/local/bin. Build scripts and proc macros off: both run the tree's code.
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
        probeBinary({ path: '/usr/local/bin/rust-analyzer', absent: `not installed (rust-analyzer ${IMAGE_ONLY})` }),
    },
    {
      // Eclipse JDT LS 1.39.0 on Debian's JDK 17, installed by the image only
      // (images/pins.env: the dated milestone tarball, checked against its sha256,
      // under /usr/local/share/jdtls). Run by java directly, not its python wrapper.
      // Quirks:
      // - configuration area: the shipped config_linux is read-only in the jail, so it
      //   is the shared (cascaded, read-only) area and the writable one is in the
      //   jail's tmp (-configuration); the workspace data dir (-data) is in the
      //   private HOME. Both go with the session.
      // - code from the tree: importing a Gradle project runs its build scripts (and
      //   a wrapper the tree ships, which downloads), a Maven one its plugins: both
      //   imports are off, and so is the autobuild, which would run annotation
      //   processors a tree's .factorypath names. It reads sources as an unmanaged folder.
      // - java is named by its real path: /usr/bin/java is a link through
      //   /etc/alternatives, which the jail does not bind.
      name: 'jdtls',
      languages: ['java'],
      argv: [
        JAVA,
        '-Declipse.application=org.eclipse.jdt.ls.core.id1',
        '-Dosgi.bundles.defaultStartLevel=4',
        '-Declipse.product=org.eclipse.jdt.ls.core.product',
        '-Dosgi.checkConfiguration=true',
        `-Dosgi.sharedConfiguration.area=${JDTLS_HOME}/config_linux`,
        '-Dosgi.sharedConfiguration.area.readOnly=true',
        '-Dosgi.configuration.cascaded=true',
        '-Dlog.level=ERROR',
        '-Xmx1G',
        '--add-modules=ALL-SYSTEM',
        '--add-opens',
        'java.base/java.util=ALL-UNNAMED',
        '--add-opens',
        'java.base/java.lang=ALL-UNNAMED',
        '-jar',
        `${JDTLS_HOME}/launcher.jar`,
        '-configuration',
        `${JAIL_TMP}/jdtls-config`,
        '-data',
        `${JAIL_HOME}/jdtls-data`,
      ],
      env: { ...JAIL_ENV },
      rootMarkers: ['pom.xml', 'build.gradle', 'build.gradle.kts', '.project'],
      initializationOptions: { settings: JDTLS_SETTINGS },
      settings: JDTLS_SETTINGS,
      readiness: { kind: 'progress' },
      encodings: ['utf-16'],
      maxInFlight: 16,
      probe: () => probeJdtls(),
    },
    {
      // ruby-lsp 0.23.11 and its gems on Debian's Ruby 3.1, installed by the image only
      // (images/pins.env: each .gem checked against its sha256, installed with no
      // resolution under /usr/local/lib/ruby-lsp). Quirks:
      // - BUNDLE_GEMFILE names the image's empty Gemfile: unset, ruby-lsp composes a
      //   bundle from the tree's Gemfile in <tree>/.ruby-lsp and runs `bundle install`
      //   (the tree's gems' code, the network). So there is no bundle install, and
      //   the tree's own gems do not resolve.
      // - GEM_PATH is the image's gems, read-only; GEM_HOME the private HOME.
      // - code from the tree: RuboCop would `require` what a tree's .rubocop.yml
      //   names, so the formatter and linters are off; RUBYOPT/RUBYLIB are empty so
      //   no -r reaches the interpreter.
      name: 'ruby-lsp',
      languages: ['ruby'],
      argv: [`${RUBY_LSP_HOME}/bin/ruby-lsp`],
      env: { ...JAIL_ENV, GEM_PATH: RUBY_LSP_HOME, GEM_HOME: `${JAIL_HOME}/gems`, BUNDLE_GEMFILE: `${RUBY_LSP_HOME}/Gemfile`, RUBYOPT: '', RUBYLIB: '' },
      initializationOptions: { formatter: 'none', linters: [] },
      rootMarkers: ['Gemfile', '.ruby-version'],
      readiness: { kind: 'progress' },
      encodings: ['utf-16'],
      maxInFlight: 16,
      probe: () => probeRubyLsp(),
    },
  ];
}

