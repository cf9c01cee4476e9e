#!/bin/sh
# build/gen/revision.c: the git revision built and the liburing version
# (lib/base/version.h's externs, for tagproxy --version), written only when
# they change, so that a build relinks only then.
#
#   sh scripts/revision.sh OUT
set -eu
rev=$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
if [ "$rev" != unknown ] && ! git diff --quiet HEAD -- 2>/dev/null; then
    rev="$rev-dirty"
fi
uring=$(pkg-config --modversion liburing 2>/dev/null || echo unknown)
new=$(printf 'const char tagproxy_revision[] = "%s";\nconst char tagproxy_liburing_version[] = "%s";' \
      "$rev" "$uring")
if [ -f "$1" ] && [ "$(cat "$1")" = "$new" ]; then
    exit 0
fi
printf '%s\n' "$new" > "$1"
