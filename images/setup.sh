#!/usr/bin/env bash
# One set-up for `npm start` and `npm test` (and the Dockerfile's build stage):
# Debian packages from images/pins.env (its DEB_* rows; IMAGE_DEB_* are the image's
# alone), npm dependencies from package-lock.json,
# and the jail's native helper. Idempotent: each step checks before it acts, so a
# second run takes well under a second.
#   bash images/setup.sh            everything `npm test` needs
#   bash images/setup.sh --runtime  without the test-only packages (TEST_ONLY_DEB in
#                                   pins.env): `npm start` and the image's builder
set -euo pipefail
cd "$(dirname "$0")/.."
say() { printf 'setup: %s\n' "$*" >&2; }
runtime=0
[ "${1:-}" = --runtime ] && runtime=1

# shellcheck source=images/pins.env
. images/pins.env

# --- Debian packages -------------------------------------------------------
# name:binary-or-file that proves it is installed : pin variable
pkgs=(
  "bubblewrap:/usr/bin/bwrap:$DEB_BUBBLEWRAP"
  "libseccomp-dev:/usr/include/seccomp.h:$DEB_LIBSECCOMP_DEV"
  "clangd-16:/usr/bin/clangd-16:$DEB_CLANGD_16"
  "golang-go:/usr/bin/go:$DEB_GOLANG_GO"
  "gopls:/usr/bin/gopls:$DEB_GOPLS"
  "shellcheck:/usr/bin/shellcheck:$DEB_SHELLCHECK"
  "composer:/usr/bin/composer:$DEB_COMPOSER"
  "php-cli:/usr/bin/php.default:$DEB_PHP_CLI"
  "php-zip:/usr/share/doc/php-zip/copyright:$DEB_PHP_ZIP"
  "python3:/usr/bin/python3:$DEB_PYTHON3"
  "python3-pip:/usr/lib/python3/dist-packages/pip/__main__.py:$DEB_PYTHON3_PIP"
  "nginx:/usr/sbin/nginx:$DEB_NGINX"
)
missing=()
present=()
test_only=()
for row in "${pkgs[@]}"; do
  IFS=: read -r name file version <<<"$row"
  # versions may hold an epoch colon: take everything after the second field
  version=${row#*:*:}
  var=DEB_$(echo "$name" | tr 'a-z-' 'A-Z_')
  if [[ " $TEST_ONLY_DEB " == *" $var "* ]]; then
    [ $runtime = 1 ] && continue
    test_only+=("$name")
  fi
  if [ -e "$file" ]; then present+=("$name=$version"); else missing+=("$name=$version"); fi
done
# A file proves a package is there, not which version: a bumped pin (Go 1.19 -> 1.24)
# must be installed too. One dpkg-query for them all (tens of ms).
if [ ${#present[@]} -gt 0 ] && command -v dpkg-query >/dev/null 2>&1; then
  installed=$'\n'$(dpkg-query -W -f='${Package}=${Version}\n' "${present[@]%%=*}" 2>/dev/null || true)$'\n'
  for pv in "${present[@]}"; do
    [[ $installed == *$'\n'"$pv"$'\n'* ]] || missing+=("$pv")
  done
fi
need_cc=0
command -v cc >/dev/null 2>&1 || need_cc=1
command -v make >/dev/null 2>&1 || need_cc=1
if [ ${#missing[@]} -gt 0 ] || [ $need_cc = 1 ]; then
  if [ "$(uname -s)" != Linux ] || ! command -v apt-get >/dev/null 2>&1; then
    say "missing: ${missing[*]:-a C compiler}. This host has no apt-get: install them by hand (see README, 'Other hosts')."
    exit 1
  fi
  if [ "$(id -u)" != 0 ]; then
    say "missing: ${missing[*]:-a C compiler}. Run as root once (or: sudo apt-get install ${missing[*]})."
    exit 1
  fi
  say "installing Debian packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  # No package's service starts at install (nginx's would take port 80): the
  # tests run nginx themselves, on loopback ports. policy-rc.d is Debian's switch
  # for that (invoke-rc.d and deb-systemd-invoke both obey it); ours is removed after.
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\n# images/setup.sh: no service starts during its install\nexit 101\n' >/usr/sbin/policy-rc.d
    chmod 0755 /usr/sbin/policy-rc.d
    trap 'rm -f /usr/sbin/policy-rc.d' EXIT
  fi
  # Debian 13 as a source for TRIXIE_PACKAGES alone (Go 1.24, gopls 0.16).
  sh images/trixie-apt.sh
  apt-get update -qq
  extra=()
  [ $need_cc = 1 ] && extra+=(gcc make libc6-dev)
  if ! apt-get install -y -qq --no-install-recommends "${missing[@]}" "${extra[@]}" >/dev/null; then
    # A Debian point release replaces old versions; rather than fail the set-up,
    # take the current one and say loudly that images/pins.env needs a bump.
    say "WARNING: a pinned version is gone from the archive; installing the current one. Update images/pins.env."
    apt-get install -y -qq --no-install-recommends "${missing[@]%%=*}" "${extra[@]}" >/dev/null
  fi
  # Nor at boot: a test tool is no service of this host.
  if [ -d /run/systemd/system ]; then
    for name in "${test_only[@]}"; do systemctl disable --quiet "$name.service" 2>/dev/null || true; done
  fi
fi

# --- npm dependencies ------------------------------------------------------
stamp=node_modules/.lspd-lock-hash
want=$(sha256sum package-lock.json | cut -d' ' -f1)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  say "installing npm dependencies (npm ci --ignore-scripts)"
  # No dependency's install script runs: none of ours needs one, and lspd runs
  # no code it has not chosen.
  npm ci --ignore-scripts --no-audit --no-fund --loglevel=error
  echo "$want" >"$stamp"
fi

# --- the jail uids must reach the project's files ---------------------------
# Each jail runs as its own unprivileged host uid, and bwrap resolves the paths it
# binds (node_modules, jail/build, the data dir) as that uid: every directory above
# the project must be searchable by others (o+x: traverse, not list). A checkout
# under a closed home (/root is 0700) would otherwise fail closed at the canary.
dir=$(pwd -P)
while :; do
  if [ "$(( $(stat -c '%#a' "$dir") & 1 ))" = 0 ]; then
    if [ "$(id -u)" = 0 ]; then
      say "making $dir searchable by others (o+x, no listing) so jailed uids can reach the project"
      chmod o+x "$dir"
    else
      say "WARNING: $dir is not searchable by others; the jail will refuse to start (see README, 'Other hosts')"
    fi
  fi
  [ "$dir" = / ] && break
  dir=$(dirname "$dir")
done

# --- the jail's native helper ----------------------------------------------
if [ -f jail/Makefile ]; then
  make -s -C jail
fi
