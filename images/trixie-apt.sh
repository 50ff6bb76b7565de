#!/bin/sh
# Debian 13 (trixie) as an apt source for the packages TRIXIE_PACKAGES names in
# images/pins.env, and for nothing else: every other trixie version is pinned at -1
# (never installed, never an upgrade), so a bookworm host stays bookworm. Those
# packages are pure Go binaries and Go's own tree, whose dependencies bookworm has
# (gopls: libc6 >= 2.34; golang-1.24-go: only golang-1.24-src). Run by images/setup.sh
# before its apt-get update and by the image's runtime stage; idempotent (the files
# are rewritten only when their content would change).
#   sh images/trixie-apt.sh [pins.env]
set -eu
pins=${1:-$(dirname "$0")/pins.env}
# shellcheck source=images/pins.env
. "$pins"
write() { # path content: replace only when different, so a rerun touches nothing
  if [ ! -f "$1" ] || [ "$(cat "$1")" != "$2" ]; then printf '%s\n' "$2" >"$1.tmp" && mv "$1.tmp" "$1"; fi
}
write /etc/apt/sources.list.d/lspd-trixie.sources "# lspd (images/trixie-apt.sh): Debian 13, for TRIXIE_PACKAGES only (see preferences.d/lspd-trixie)
Types: deb
URIs: http://deb.debian.org/debian
Suites: trixie
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg"
write /etc/apt/preferences.d/lspd-trixie "# lspd (images/trixie-apt.sh): nothing comes from Debian 13 but these packages
Package: $TRIXIE_PACKAGES
Pin: release n=trixie
Pin-Priority: 500

Package: *
Pin: release n=trixie
Pin-Priority: -1"
