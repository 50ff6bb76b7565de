// What a jail sees, by name: every in-jail path that is a mount point or that two
// modules share, and the environment every jailed command starts from
// (`jailEnv(phase)`). FETCH and SERVE alike, so nothing a fetch records names
// another place. The policy (policy.ts) binds these places, the fetchers write them,
// the rows run from them and the answers read them; none of them spells one again.
// A scratch path only one row or fetcher uses (gopls's GOPATH, clangd's database) is
// named there, but always built on JAIL_HOME or JAIL_TMP, the private tmpfs mounts.
//
// Layout:
//   /src                      the uploaded tree, read-only (TREE_AT). Root-relative
//                             paths in answers are relative to it.
//   /deps                     the root's dependency cache, read-only in SERVE,
//                             written only by the FETCH phase (DEPS_AT).
//   /deps/go                  GOPATH; so GOMODCACHE is /deps/go/pkg/mod, where Go
//                             keeps sources as <escaped module>@<version>/...
//   /deps/npm/top/node_modules, /deps/npm/ws/<workspace>/node_modules
//                             what `npm ci` installed for the tree's top directory,
//                             or for the workspace directory <workspace> (a
//                             root-relative path; kept under ws/ so no directory
//                             name can collide with `top`). The jail may also bind it
//                             over /src/<workspace>/node_modules so Node resolution
//                             finds it; coordinates.ts resolves either place.
//   /src/<workspace>/vendor   what `composer install` built (bound over the tree,
//                             where intelephense indexes it).
//   /deps/python/top/site-packages, /deps/python/ws/<workspace>/site-packages
//                             the wheels pip installed; pyright's extra paths.
//   /deps/cargo               CARGO_HOME: registry/src/<index>/<crate>-<version>/… are
//                             the unpacked crates `cargo fetch` got (rust-analyzer's).
//   /opt/lspd/...             the daemon's own files, read-only: its node_modules
//                             (SERVE), jail/build (probe, forwarder), the pip driver
//                             (FETCH), the Rust row's cargo wrapper.
//   /home/lspd, /tmp          private, size-bounded tmpfs mounts of each jail.
//   /run/lspd/egress.sock     FETCH only: the daemon's egress proxy.
// Which coordinates a path under /deps has is decided by the ecosystem resolvers in
// src/lsp/answer/coordinates.ts, not here.

import type { Phase } from './types.js';

export const TREE_AT = '/src';
export const DEPS_AT = '/deps';
export const GOPATH_AT = `${DEPS_AT}/go`;
export const GOMODCACHE_AT = `${GOPATH_AT}/pkg/mod`;
export const NPM_DEPS_AT = `${DEPS_AT}/npm`;
export const PYTHON_DEPS_AT = `${DEPS_AT}/python`;
export const CARGO_HOME_AT = `${DEPS_AT}/cargo`;
/** The Rust toolchain's rust-src (the Debian 13 root's /usr, which the Rust row's jail sees as /usr). */
export const RUST_SRC_AT = '/usr/lib/rustlib/src/rust';

/** The daemon's own files inside a jail; also the label its project dir is shown as in stderr tails. */
export const LSPD_AT = '/opt/lspd';
/** The project's node_modules (pyright, intelephense, bash-language-server, tsc, …), read-only, SERVE only. */
export const JAIL_NODE_MODULES = `${LSPD_AT}/node_modules`;
/** jail/build: the probe and the egress forwarder (and the helper and gate, harmless), read-only. */
export const JAIL_TOOLS = `${LSPD_AT}/jail`;
export const JAIL_PROBE = `${JAIL_TOOLS}/lspd-probe`;
export const JAIL_FORWARDER = `${JAIL_TOOLS}/lspd-egress-fwd`;
/** FETCH: src/fetch/pip-driver.py, the Python fetcher's work inside the jail. */
export const PIP_DRIVER_AT = `${LSPD_AT}/fetch/pip-driver.py`;
/** SERVE: the cargo rust-analyzer runs (rows/cargo-outside-tree.sh). */
export const RUST_CARGO_WRAPPER_AT = `${LSPD_AT}/rust/cargo`;
/** SERVE: the tsserver row's pinned TypeScript 5, outside /opt/lspd on purpose (rows/typescript.ts says why). */
export const TSSERVER_TYPESCRIPT_AT = '/opt/lspd-typescript/typescript';

/** Private, size-bounded tmpfs per jail. */
export const JAIL_HOME = '/home/lspd';
export const JAIL_TMP = '/tmp';
/** Where cargo builds (FETCH's cargo fetch, SERVE's rust-analyzer): the private /tmp, never the tree. */
export const CARGO_TARGET_AT = `${JAIL_TMP}/target`;
/** A fresh procfs of the jail's PID namespace, and bwrap's minimal /dev (null, zero, random, urandom, tty, pts, shm). */
export const PROC_AT = '/proc';
export const DEV_AT = '/dev';

/** FETCH: the daemon's egress proxy, bound into the jail. */
export const JAIL_EGRESS_SOCKET = '/run/lspd/egress.sock';
/** FETCH: what the in-jail forwarder listens on; each jail has its own network namespace, so a fixed port is fine. */
export const FETCH_PROXY_PORT = 3128;
export const FETCH_PROXY_URL = `http://127.0.0.1:${FETCH_PROXY_PORT}`;

/**
 * The environment every command of `phase` starts from (bwrap --clearenv, then
 * this, then the caller's over it): PATH, and HOME and temp in the private tmpfs
 * mounts. SERVE adds the XDG dirs (servers' caches and configs stay in HOME);
 * FETCH the way out through the in-jail forwarder to the egress proxy, in both
 * spellings tools read, and plain output (fetch logs are read by people through
 * GET /v1/roots: no colour codes, no spinners).
 */
export function jailEnv(phase: Phase): Record<string, string> {
  const base = { PATH: '/usr/local/bin:/usr/bin:/bin', HOME: JAIL_HOME, TMPDIR: JAIL_TMP, USER: 'lspd', LANG: 'C.UTF-8' };
  if (phase === 'serve') {
    return { ...base, XDG_CACHE_HOME: `${JAIL_HOME}/.cache`, XDG_CONFIG_HOME: `${JAIL_HOME}/.config`, XDG_DATA_HOME: `${JAIL_HOME}/.local/share` };
  }
  const proxy = FETCH_PROXY_URL;
  return { ...base, HTTPS_PROXY: proxy, HTTP_PROXY: proxy, https_proxy: proxy, http_proxy: proxy, NO_COLOR: '1', TERM: 'dumb' };
}
