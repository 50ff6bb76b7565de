// The Cargo fetcher: `cargo fetch --locked` of a Cargo workspace (its Cargo.lock
// names every member's dependencies), in the FETCH jail over the Debian 13 root's
// /usr (cargo 1.85 links trixie's libc: Toolchains.cargoRoot), with CARGO_HOME
// under the root's dependency dir.
//
// Why each setting (cargo 1.85; https://doc.rust-lang.org/cargo/reference/config.html):
// - `fetch` downloads and unpacks crates; it compiles nothing, so no build.rs and
//   no proc-macro ever runs (SERVE keeps both off in rust-analyzer too).
// - `--locked`: the tree's Cargo.lock is the law. A lock that would change fails
//   the fetch (the tree is read-only anyway), and every .crate is checked against
//   the lock's checksum.
// - cargo reads config files from its working directory up, so it runs in /tmp with
//   `--manifest-path`: a tree's .cargo/config.toml (source replacement, git-fetch-with-cli,
//   http settings, aliases) is never read. The only config is CARGO_HOME's, written
//   here: crates.io replaced by LSPD_CARGO_REGISTRY when that is not crates.io's own
//   index (a mirror, or the tests' registry on 127.0.0.1), git through libgit2 only
//   (never a git binary), and offline nothing.
// - RUSTC names the root's rustc and RUSTC_WRAPPER is empty: cargo asks rustc for
//   target facts, and config cannot swap it for another program.
// - The network is the FETCH jail's: the egress proxy (HTTPS_PROXY, which cargo
//   reads) and its allowlist (LSPD_FETCH_REGISTRIES) decide which hosts answer.
//
// SERVE: CARGO_HOME is bound read-only at /deps/cargo (registry index cache, .crate
// files and their unpacked sources under registry/src/<index>/<name>-<version>/),
// and rust-analyzer's cargo runs offline against it.
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { CRATES_IO_SPARSE } from '../config.js';
import { CARGO_HOME_AT, CARGO_TARGET_AT, JAIL_TMP, TREE_AT } from '../jail/layout.js';
import { isPlainDir } from './ecosystems.js';
import { CARGO_HOME_REL, under, writableDepsDir, type ServeMount, type StepContext, type StepSpawn } from './step.js';

/** CARGO_HOME's config.toml: what cargo may reach, from the daemon's configuration only. */
export function cargoConfig(registry: string): string {
  const lines = ['# Written by lspd for this fetch (src/fetch/cargo.ts); the tree has no say.', '[net]', 'git-fetch-with-cli = false', 'retry = 2', ''];
  if (registry !== CRATES_IO_SPARSE) {
    lines.push('[source.crates-io]', 'replace-with = "lspd-registry"', '', '[source.lspd-registry]', `registry = ${JSON.stringify(registry)}`, '');
  }
  return lines.join('\n');
}

export async function prepareCargo(ctx: StepContext, ws: string): Promise<StepSpawn> {
  if (!ctx.tools.cargo || !ctx.tools.cargoRoot) throw new Error('cargo not installed (no Debian 13 root)');
  const home = await writableDepsDir(ctx, CARGO_HOME_REL);
  await writeFile(join(home.host, 'config.toml'), cargoConfig(ctx.cargoRegistry), { mode: 0o644 });
  return {
    argv: [ctx.tools.cargo, 'fetch', '--locked', '--manifest-path', `${under(TREE_AT, ws)}/Cargo.toml`],
    env: {
      ...CARGO_LOCKDOWN_ENV,
      CARGO_HOME: home.at,
      CARGO_TARGET_DIR: CARGO_TARGET_AT,
      CARGO_TERM_PROGRESS_WHEN: 'never',
    },
    binds: [home],
    tree: { hostDir: ctx.treeDir, at: TREE_AT },
    systemRoot: ctx.tools.cargoRoot,
    cwd: JAIL_TMP,
  };
}

/** What cargo is given in FETCH and SERVE alike (rows/rust.ts): the root's rustc, no wrapper, no colour, git through libgit2 only. */
export const CARGO_LOCKDOWN_ENV = {
  RUSTC: '/usr/bin/rustc',
  RUSTC_WRAPPER: '',
  RUSTC_WORKSPACE_WRAPPER: '',
  CARGO_TERM_COLOR: 'never',
  CARGO_NET_GIT_FETCH_WITH_CLI: 'false',
} as const;

/** A one-line hint for the caller when cargo's own message is buried in the tail. */
export function cargoHint(output: string): string | undefined {
  if (/lock file .* needs to be updated but --locked was passed|cannot update the lock file/.test(output)) {
    return "Cargo.lock does not match the workspace's manifests; the tree is read-only, so commit an up-to-date Cargo.lock (cargo generate-lockfile).";
  }
  if (/checksum for `[^`]+` changed between lock files|checksum .* did not match|failed to verify the checksum/.test(output)) {
    return "a downloaded crate does not match the checksum in the tree's Cargo.lock.";
  }
  if (/403|Forbidden|CONNECT tunnel failed/.test(output)) return 'a crate host is not among the allowed registries.';
  if (/no matching package named|failed to select a version|could not find `[^`]+` in registry/.test(output)) {
    return 'a locked crate is missing from the registry.';
  }
  return undefined;
}

/** CARGO_HOME, when it is a plain directory the SERVE side may bind read-only. */
export async function cargoServeMounts(depsDir: string): Promise<ServeMount[]> {
  return (await isPlainDir(depsDir, CARGO_HOME_REL)) ? [{ host: join(depsDir, CARGO_HOME_REL), at: CARGO_HOME_AT, treeRel: false }] : [];
}

/** rust-analyzer's cargo in SERVE: the fetched CARGO_HOME (read-only); without it, the row's private one. Offline either way (the row's env). */
export function cargoServeEnv(fetched: boolean): Record<string, string> {
  return fetched ? { CARGO_HOME: CARGO_HOME_AT } : {};
}
