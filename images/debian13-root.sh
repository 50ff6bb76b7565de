#!/usr/bin/env bash
# The Debian 13 (trixie) root of the rows whose Debian packages need a newer C
# library than a bookworm host has (rust-analyzer, rustc, cargo, rust-src: libc6 >=
# 2.38). Made by debootstrap (minbase), then the ROOT13_DEB_* pins of images/pins.env
# installed by apt inside it (chroot), so every .deb is checked against trixie's
# Release signature by the host's debian-archive-keyring. The Rust row's jails bind
# its /usr (bin, lib, lib64 are merged-usr links), nothing else of it.
#   bash images/debian13-root.sh [DIR]   DIR defaults to $LSPD_DEBIAN13_ROOT or
#                                        /opt/lspd/debian13 (what config.ts defaults to)
# Idempotent: a stamp holds the pins the root was made with; equal pins, nothing to do.
# A changed pin builds a fresh root beside the old one and swaps it in by rename, so
# a running daemon's jails never see a half-made /usr.
set -euo pipefail
cd "$(dirname "$0")/.."
say() { printf 'debian13-root: %s\n' "$*" >&2; }
# shellcheck source=images/pins.env
. images/pins.env

root=${1:-${LSPD_DEBIAN13_ROOT:-/opt/lspd/debian13}}
stamp=$root/.lspd-pins
# What the root is made of: the suite, the mirror and every pin, one per line.
want=$(
  echo "suite=$ROOT13_SUITE mirror=$ROOT13_MIRROR"
  sed -n 's/^\(ROOT13_DEB_[A-Z0-9_]*\)=.*/\1/p' images/pins.env | while read -r var; do echo "$var=${!var}"; done
)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  exit 0
fi
if [ "$(id -u)" != 0 ]; then
  say "the Debian 13 root at $root is missing or stale: run images/setup.sh as root once"
  exit 1
fi
command -v debootstrap >/dev/null 2>&1 || {
  say "debootstrap is missing (images/setup.sh installs it at its pinned version)"
  exit 1
}

start=$(date +%s)
mkdir -p "$(dirname "$root")"
new=$root.new.$$
trap 'umount -l "$new/proc" 2>/dev/null || true; rm -rf "$new"' EXIT
say "making $root (debootstrap $ROOT13_SUITE, minbase; then apt inside it)"
debootstrap --variant=minbase --keyring=/usr/share/keyrings/debian-archive-keyring.gpg \
  "$ROOT13_SUITE" "$new" "$ROOT13_MIRROR" >"$new.log" 2>&1 || {
  tail -20 "$new.log" >&2
  exit 1
}
rm -f "$new.log"
pkgs=()
for line in $(echo "$want" | sed 1d); do
  var=${line%%=*}
  pkgs+=("$(echo "${var#ROOT13_DEB_}" | tr 'A-Z_' 'a-z-')=${line#*=}")
done
# No service starts in the root (none of these has one; said, not assumed).
printf '#!/bin/sh\nexit 101\n' >"$new/usr/sbin/policy-rc.d"
chmod 0755 "$new/usr/sbin/policy-rc.d"
# apt and dpkg want /proc; a container build may not mount it (then they run without).
proc=0
mount -t proc proc "$new/proc" 2>/dev/null && proc=1
chroot "$new" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${pkgs[@]}" >/dev/null
chroot "$new" apt-get clean
[ $proc = 1 ] && umount "$new/proc"
rm -rf "$new/var/lib/apt/lists"/*_Packages "$new/var/cache/apt"/*.bin
# Jailed uids read and run it; nobody but root writes it.
chmod -R go-w "$new"
echo "$want" >"$new/.lspd-pins"
if [ -e "$root" ]; then
  mv "$root" "$root.old.$$"
  mv "$new" "$root"
  rm -rf "$root.old.$$"
else
  mv "$new" "$root"
fi
trap - EXIT
say "made $root in $(($(date +%s) - start)) s ($(du -sh "$root" | cut -f1))"
