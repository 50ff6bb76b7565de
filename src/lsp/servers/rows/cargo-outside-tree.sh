#!/bin/sh
# lspd: cargo as rust-analyzer runs it in SERVE (the row's CARGO), started from a
# directory outside the tree. cargo reads configuration from its working directory
# up, so a tree's .cargo/config.toml (source replacement, [patch], paths, wrappers)
# is never read; rust-analyzer names the manifest by --manifest-path, so the
# directory is otherwise unused. CARGO_HOME's config.toml, lspd's own, still is.
cd /tmp || exit 1
exec /usr/bin/cargo "$@"
