#!/usr/bin/env bash
# Install what the build, `make run` and `make test` need, only when missing:
# the Debian packages below (apt-get, as root or through sudo), then the npm
# packages of the end-to-end tests (npm ci from the committed lock).
# Silent when everything is already there.
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(gcc make pkg-config libevent-dev libhiredis-dev libssl-dev liburing-dev check
          redis-server redis-tools nodejs npm python3-yaml prometheus)

installed() {
    [ "$(dpkg-query -W -f='${db:Status-Status}' "$1" 2>/dev/null)" = installed ] && return 0
    # NodeSource's nodejs package ships npm and conflicts with Debian's npm
    [ "$1" = npm ] && installed nodejs && command -v npm >/dev/null
}

missing=()
for p in "${PACKAGES[@]}"; do
    installed "$p" || missing+=("$p")
done

if [ ${#missing[@]} -gt 0 ]; then
    echo "deps.sh: installing ${missing[*]}" >&2
    command -v apt-get >/dev/null || { echo "deps.sh: no apt-get; install ${missing[*]} by hand" >&2; exit 1; }
    sudo=()
    if [ "$(id -u)" -ne 0 ]; then
        command -v sudo >/dev/null || { echo "deps.sh: run as root (or install sudo)" >&2; exit 1; }
        sudo=(sudo)
    fi
    export DEBIAN_FRONTEND=noninteractive
    "${sudo[@]}" apt-get update -q
    "${sudo[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# Valkey 8, today's server beside redis-server 7.0: on bookworm it is in
# bookworm-backports only, so that suite is added (its packages have
# priority 100: nothing is taken from it unless named) and valkey-server
# alone is installed from it, with valkey-tools of the same build.
if ! installed valkey-server; then
    command -v apt-get >/dev/null || { echo "deps.sh: no apt-get; install valkey-server 8 by hand" >&2; exit 1; }
    sudo=()
    [ "$(id -u)" -ne 0 ] && sudo=(sudo)
    export DEBIAN_FRONTEND=noninteractive
    target=valkey-server
    if [ "$(. /etc/os-release && echo "${VERSION_CODENAME:-}")" = bookworm ]; then
        list=/etc/apt/sources.list.d/tagproxy-bookworm-backports.sources
        if [ ! -f "$list" ]; then
            echo "deps.sh: adding bookworm-backports (for valkey-server) as $list" >&2
            printf '%s\n' "Types: deb" "URIs: http://deb.debian.org/debian" \
                "Suites: bookworm-backports" "Components: main" \
                "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg" |
                "${sudo[@]}" tee "$list" >/dev/null
        fi
        target=valkey-server/bookworm-backports
    fi
    echo "deps.sh: installing $target" >&2
    "${sudo[@]}" apt-get update -q
    "${sudo[@]}" apt-get install -y -q --no-install-recommends "$target"
fi

# A fresh install of redis-server (or valkey-server) on Debian starts the
# packaged service on 127.0.0.1:6379; nothing here uses that port, so it is
# left alone. The
# prometheus package is here for promtool (make test checks /metrics with
# it); its server, should the package start it, is left alone the same way.

e2e=tests/e2e
if [ -f "$e2e/package-lock.json" ]; then
    if [ ! -d "$e2e/node_modules" ] || [ "$e2e/package-lock.json" -nt "$e2e/node_modules" ]; then
        echo "deps.sh: npm ci in $e2e" >&2
        (cd "$e2e" && npm ci --no-audit --no-fund --loglevel=error)
        # npm ci recreates node_modules; make its time stamp say so
        touch "$e2e/node_modules"
    fi
fi
