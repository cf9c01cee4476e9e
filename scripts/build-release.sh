#!/usr/bin/env bash
# The one release build recipe: docker/Dockerfile's build stage runs it, and
# `make test` runs it on the host (scripts/check-deploy.py), so the image and
# what the tests check cannot drift apart.
#
#   scripts/build-release.sh --install-deps   apt-get the build packages
#   scripts/build-release.sh DESTDIR          build, then install into DESTDIR:
#
#     DESTDIR/usr/local/bin/tagproxy               the binary (stripped)
#     DESTDIR/usr/local/bin/tagproxy-healthcheck   GET /healthz probe (bash only)
#     DESTDIR/etc/tagproxy/tagproxy.conf           docker/tagproxy.conf
#     DESTDIR/etc/tagproxy/layouts/*.rules         the shipped key layouts
#     DESTDIR/runtime-packages                     Debian packages of the shared
#                                                  libraries the binary loads
#
# The build uses its own folder (DESTDIR/.build, removed afterwards), never
# the tree's build/.
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD_PACKAGES=(gcc make pkg-config libevent-dev libhiredis-dev libssl-dev liburing-dev)

die() { echo "build-release.sh: $*" >&2; exit 1; }

if [ "${1:-}" = --install-deps ]; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q
    apt-get install -y -q --no-install-recommends "${BUILD_PACKAGES[@]}"
    rm -rf /var/lib/apt/lists/*
    exit 0
fi
[ $# -eq 1 ] && [ -n "$1" ] || die "usage: $0 --install-deps | DESTDIR"
dest=$(mkdir -p "$1" && cd "$1" && pwd)
obj="$dest/.build"

# NDEBUG: the release leaves out ASSERT's checks (lib/base/assert.h)
make -s -j"$(nproc 2>/dev/null || echo 2)" B="$obj" CFLAGS="-O2 -g -DNDEBUG" "$obj/tagproxy"
install -D -m 0755 -s "$obj/tagproxy" "$dest/usr/local/bin/tagproxy"
install -D -m 0755 scripts/healthcheck.sh "$dest/usr/local/bin/tagproxy-healthcheck"
install -D -m 0644 docker/tagproxy.conf "$dest/etc/tagproxy/tagproxy.conf"
for r in conf/layouts/*.rules; do
    install -D -m 0644 "$r" "$dest/etc/tagproxy/layouts/${r##*/}"
done
rm -rf "$obj"

# The packages owning the shared libraries the binary loads: the runtime
# stage installs exactly these. dpkg knows a library by its /usr path on a
# merged-/usr system, so both spellings are tried.
libs=$(ldd "$dest/usr/local/bin/tagproxy" | awk '/=> \// { print $3 } /^[ \t]*\// { print $1 }')
[ -n "$libs" ] || die "ldd found no shared library"
if ldd "$dest/usr/local/bin/tagproxy" | grep -q 'not found'; then
    die "a shared library is missing: $(ldd "$dest/usr/local/bin/tagproxy" | grep 'not found')"
fi
for lib in $libs; do
    real=$(readlink -f "$lib")
    pkg=$(dpkg -S "$real" 2>/dev/null || dpkg -S "/usr$real" 2>/dev/null ||
          dpkg -S "${real#/usr}" 2>/dev/null || dpkg -S "$lib" 2>/dev/null) ||
        die "no Debian package owns $lib"
    echo "${pkg%%:*}"
done | sed 's/,.*//' | sort -u > "$dest/runtime-packages"
echo "build-release.sh: $dest/usr/local/bin/tagproxy; runtime packages:" \
     $(cat "$dest/runtime-packages") >&2
