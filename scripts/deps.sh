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

# A fresh install of redis-server on Debian starts the packaged service on
# 127.0.0.1:6379; nothing here uses that port, so it is left alone. The
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
