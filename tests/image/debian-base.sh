#!/usr/bin/env bash
# Print the path of a tarball of a minimal Debian (debootstrap --variant=minbase, suite $1, default
# bookworm: what node:22-bookworm-slim is made of), made first unless it is there: the base of the
# image test's runtime image (src/base-image.ts). It is kept between runs, one per suite, under
# ~/.cache/ricochet/image-test ($XDG_CACHE_HOME if set): delete it to make it again. `.ci/run` starts
# this in the background early, so that the minute or more debootstrap takes overlaps the suite; the
# test runs it again, which waits for that run (a lock beside the tarball) and finds the tarball
# made. Built in a temporary directory and renamed into place once whole, so a run cut short leaves
# no half tarball.
set -euo pipefail
suite=${1:-bookworm}
# The Debian mirror apt is set up with on this machine (the first of its sources), unless
# DEBIAN_MIRROR names another: the one this machine is known to reach.
apt_mirror() {
  if [ -f /etc/apt/sources.list.d/debian.sources ]; then
    awk '/^URIs:/ { print $2; exit }' /etc/apt/sources.list.d/debian.sources
  elif [ -f /etc/apt/sources.list ]; then
    awk '$1 == "deb" { for (i = 2; i <= NF; i++) if ($i ~ /^[a-z]+:\/\//) { print $i; exit } }' /etc/apt/sources.list
  fi
}
mirror=${DEBIAN_MIRROR:-$(apt_mirror)}
if [ -z "$mirror" ]; then
  echo "debian-base.sh: no Debian mirror in apt's sources; set DEBIAN_MIRROR" >&2
  exit 1
fi
tarball="${XDG_CACHE_HOME:-$HOME/.cache}/ricochet/image-test/debian-$suite-minbase.tar"
mkdir -p "$(dirname "$tarball")"
exec 9>"$tarball.lock"
flock 9
if [ -f "$tarball" ]; then
  echo "$tarball"
  exit 0
fi
work=$(mktemp -d /tmp/ricochet-debootstrap-XXXXXX)
trap 'rm -rf "$work"' EXIT
debootstrap --variant=minbase "$suite" "$work/root" "$mirror" >"$work/log" 2>&1 || {
  tail -20 "$work/log" >&2
  exit 1
}
tar --create --file "$work/debian.tar" --directory "$work/root" --numeric-owner .
mv "$work/debian.tar" "$tarball"
echo "$tarball"
