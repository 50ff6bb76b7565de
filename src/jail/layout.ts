// The in-jail file layout: where every jail (FETCH and SERVE alike, so nothing a
// fetch records names another place) sees the tree and its dependencies. Declared
// once here; the jail binds, the fetchers write and the answers read these places.
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
// Which coordinates a path under /deps has is decided by the ecosystem resolvers in
// src/lsp/answer/coordinates.ts, not here.

export const TREE_AT = '/src';
export const DEPS_AT = '/deps';
export const GOPATH_AT = `${DEPS_AT}/go`;
export const GOMODCACHE_AT = `${GOPATH_AT}/pkg/mod`;
export const NPM_DEPS_AT = `${DEPS_AT}/npm`;
export const PYTHON_DEPS_AT = `${DEPS_AT}/python`;
export const CARGO_HOME_AT = `${DEPS_AT}/cargo`;
/** The Rust toolchain's rust-src (the Debian 13 root's /usr, which the Rust row's jail sees as /usr). */
export const RUST_SRC_AT = '/usr/lib/rustlib/src/rust';
