// Rust: Debian 13's rust-analyzer over the Debian 13 root's rustc, cargo and rust-src
// (images/debian13-root.sh; ROOT13_DEB_* in images/pins.env), whose /usr its jail
// sees in place of the host's: Debian 13's builds need a newer C library than a
// bookworm host has.
import { readlinkSync } from 'node:fs';
import { join } from 'node:path';
import type { ServerAvailability } from '../../../health.js';
import { CARGO_LOCKDOWN_ENV } from '../../../fetch/cargo.js';
import { CARGO_TARGET_AT, JAIL_HOME, RUST_CARGO_WRAPPER_AT } from '../../../jail/layout.js';
import { PROJECT_DIR } from '../../../jail/policy.js';
import { debianVersion, probeBinary } from '../server-env.js';
import type { ServerRow } from '../server-row.js';

/** rust-analyzer, as the jail runs it (the root's /usr is the jail's /usr). */
export const RUST_ANALYZER = '/usr/bin/rust-analyzer';
/** The cargo rust-analyzer runs (CARGO): the root's, started outside the tree (cargo-outside-tree.sh). */
const CARGO_WRAPPER = { host: join(PROJECT_DIR, 'src', 'lsp', 'servers', 'rows', 'cargo-outside-tree.sh'), at: RUST_CARGO_WRAPPER_AT };

/**
 * What rust-analyzer is told, at initialize and when it asks (workspace/configuration):
 * no build scripts, no proc-macro expansion, no `cargo check` on save (each runs code
 * of the tree or of its dependencies), the sysroot found from the root's rustc (its
 * rust-src: definitions into std land there) and laid out by rust-analyzer itself
 * (sysrootQueryMetadata none: by default 1.85 runs `cargo metadata` on rust-src's
 * library workspace, which offline, without its crates.io dependencies, left std with
 * no edge to core or alloc, so std::vec::Vec, std::mem and the prelude were unknown), no cache priming (it indexes all of std
 * and every crate before its progress ends: seconds of a cold start no first answer
 * needs, since answers are computed on demand), no reloads on file changes (roots
 * never change).
 */
const RUST_ANALYZER_CONFIG = {
  cargo: { buildScripts: { enable: false }, sysroot: 'discover', sysrootQueryMetadata: 'none', targetDir: CARGO_TARGET_AT },
  procMacro: { enable: false, attributes: { enable: false } },
  checkOnSave: false,
  check: { workspace: false },
  cachePriming: { enable: false },
  files: { watcher: 'client' },
  lru: { capacity: 128 },
};

/** rust-analyzer in the Debian 13 root, its version from the root's dpkg database; where it lives for /readyz. */
export async function probeRustAnalyzer(root: string): Promise<ServerAvailability> {
  const absent = `not installed (no Debian 13 root at LSPD_DEBIAN13_ROOT: images/setup.sh makes it with rust-analyzer, rustc, cargo and rust-src pinned in images/pins.env)`;
  const bin = await probeBinary({ path: join(root, 'usr', 'bin', 'rust-analyzer'), absent });
  if (!bin.available) return bin;
  const status = join(root, 'var', 'lib', 'dpkg', 'status');
  const version = await debianVersion('rust-analyzer', status);
  const toolchain = await Promise.all(['rustc', 'cargo', 'rust-src'].map(async (p) => `${p} ${(await debianVersion(p, status)) ?? 'missing'}`));
  return {
    available: true,
    ...(version ? { version } : {}),
    toolchain: `Debian 13 root (LSPD_DEBIAN13_ROOT), bound as the jail's /usr: ${toolchain.join(', ')}`,
  };
}

/**
 * The rust-src version of the root: Debian links /usr/lib/rustlib/src/rust to
 * ../../../src/rustc-<version>. Read once (the root changes only with set-up, and a
 * new root means a restart); undefined when it is not such a link.
 */
export function rustSrcVersionOf(root: string): () => string | undefined {
  let v: string | null | undefined;
  return () => {
    if (v === undefined) {
      try {
        v = /(?:^|\/)rustc-([0-9]+\.[0-9]+\.[0-9]+)$/.exec(readlinkSync(join(root, 'usr', 'lib', 'rustlib', 'src', 'rust')))?.[1] ?? null;
      } catch {
        v = null;
      }
    }
    return v ?? undefined;
  };
}

export function rustRow(root: string): ServerRow {
  return {
    // rust-analyzer 1.85 (Debian 13). Quirks:
    // - its jail sees the Debian 13 root's /usr (systemRoot): rust-analyzer, rustc
    //   and cargo link trixie's libc; the rest of the jail is every SERVE jail's.
    // - runs `cargo metadata` (offline: CARGO_NET_OFFLINE) and `rustc --print
    //   sysroot` at load; CARGO_HOME is the fetched one under /deps, read-only
    //   (FetchManager.serveEnv), else an empty one in the private HOME, where cargo
    //   metadata fails on a registry dependency and rust-analyzer loads the
    //   workspace without it.
    // - std: the sysroot is /usr, its sources /usr/lib/rustlib/src/rust (rust-src).
    // - the cargo it runs (CARGO, read by rust-analyzer's toolchain lookup) is
    //   cargo-outside-tree.sh: the root's cargo started in /tmp, so a tree's
    //   .cargo/config.toml never redirects crates.io (offline, that left the
    //   workspace unloaded) nor sets anything else; FETCH runs cargo the same way.
    // - readiness: after `initialized` it fetches the workspace (cargo metadata),
    //   then loads and scans its roots, each as a $/progress; it answers during
    //   those from what is loaded so far. expectProgress: not ready until a
    //   progress has begun and every one has ended; quiescentStatus: and until its
    //   experimental/serverStatus says quiescent (the gaps between its progresses
    //   are no sign that it is done).
    // Code from the tree: rust-analyzer's own stance is that the code it opens is
    // trusted ("Security" in its manual). What this row can pin, it does: no build
    // scripts, proc macros or cargo check (so neither build.rs nor a proc-macro
    // crate of the tree or a dependency ever runs); a tree's .cargo/config.toml is
    // not read (CARGO above), and RUSTC, RUSTC_WRAPPER, RUSTC_WORKSPACE_WRAPPER are
    // pinned in the environment besides (empty means none). A rust-toolchain.toml
    // is read by rustup only, which the root does not have. A rust-analyzer.toml's
    // commands (overrideCommand) it could run: the jail contains them.
    name: 'rust-analyzer',
    languages: ['rust'],
    argv: [RUST_ANALYZER],
    binds: [CARGO_WRAPPER],
    systemRoot: root,
    stdSourcesVersion: rustSrcVersionOf(root),
    env: {
      CARGO: CARGO_WRAPPER.at,
      CARGO_HOME: `${JAIL_HOME}/cargo`,
      CARGO_NET_OFFLINE: 'true',
      CARGO_TARGET_DIR: CARGO_TARGET_AT,
      ...CARGO_LOCKDOWN_ENV,
    },
    ecosystem: 'cargo',
    // The lockfile marks a workspace (its members' Cargo.toml files do not): one session
    // per Cargo workspace, as cargo itself resolves it. No Cargo.lock: the tree's top.
    rootMarkers: ['Cargo.lock'],
    initializationOptions: RUST_ANALYZER_CONFIG,
    settings: { 'rust-analyzer': RUST_ANALYZER_CONFIG },
    readiness: { kind: 'progress', expectProgress: true, quiescentStatus: true },
    // rust-analyzer 1.85's capabilities: call hierarchy, no type hierarchy (test/lang-rust).
    hierarchyOps: ['incomingCalls', 'outgoingCalls'],
    // Its session advertises renameProvider and codeActionProvider (test/lang-rust).
    editOps: ['rename', 'codeActions'],
    encodings: ['utf-16', 'utf-8'],
    maxInFlight: 16,
    probe: () => probeRustAnalyzer(root),
  };
}
