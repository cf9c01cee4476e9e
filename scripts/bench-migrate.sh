#!/usr/bin/env bash
# make bench-migrate: tagproxy migrate against redis-cli --cluster import,
# side by side in one run (issue 25's anchor).
#
#   scripts/bench-migrate.sh        (from the top of the tree, after `make`)
#
# Starts, on free loopback ports and in a temporary folder, a standalone
# redis-server holding MIGRATE_KEYS legacy chat records (DEBUG POPULATE:
# bot:chat:0 .. bot:chat:N-1) and a local cluster (scripts/cluster.sh, 3
# masters, no replicas), then:
#
#   tagproxy   build/tagproxy migrate --source the server --target-cluster
#              the cluster --prefix bot: each record rewritten to its
#              cluster name (bot:{ch:<b>}:r:<id>) with its index entry
#   import     redis-cli --cluster import --cluster-copy --cluster-replace
#              of the same keys, names unchanged (MIGRATE): the anchor
#
# and prints, for each, the seconds, keys per second and the peak RSS of
# the tool (from /usr/bin/time), and tagproxy's rate over import's (goal:
# at least 1). The cluster is flushed between the two. Everything it starts
# is stopped by PID, and its folder removed, on exit.
#
# Environment: MIGRATE_KEYS (default 1000000).
set -euo pipefail
cd "$(dirname "$0")/.."
here=$PWD/scripts
# shellcheck source=scripts/lib.sh
. "$here/lib.sh"

keys=${MIGRATE_KEYS:-1000000}
[[ $keys =~ ^[0-9]+$ ]] || die "MIGRATE_KEYS is not a number: $keys"
for tool in redis-server redis-cli /usr/bin/time; do
    command -v "$tool" >/dev/null || die "$tool is not installed (make deps)"
done
[ -x build/tagproxy ] || die "build/tagproxy is missing: run make first"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/tagproxy-bench-migrate.XXXXXX")
source_pid='' cluster_base='' cluster_dir=''
cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    if [ -n "$source_pid" ] && pid_matches "$source_pid" redis-server; then
        stop_pid "$source_pid" 5 || true
    fi
    if [ -n "$cluster_dir" ]; then
        bash "$here/cluster.sh" stop --base-port "$cluster_base" --dir "$cluster_dir" >/dev/null 2>&1 ||
            log "could not stop the cluster in $cluster_dir"
    fi
    rm -rf "$tmp"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

pick_port source_port
mkdir -p "$tmp/source"
redis-server --port "$source_port" --bind 127.0.0.1 --save '' --appendonly no \
    --enable-debug-command yes --dir "$tmp/source" --logfile "$tmp/source/redis.log" &
source_pid=$!
wait_ready "$source_port" "$source_pid" 10 || die "the source redis-server did not start"
pick_port cluster_base 3
cluster_dir=$tmp/cluster
bash "$here/cluster.sh" start --base-port "$cluster_base" --masters 3 --replicas 0 \
    --dir "$cluster_dir" > "$tmp/cluster.log" 2>&1 || { tail -n 20 "$tmp/cluster.log" >&2; die "the cluster did not start"; }

log "populating $keys legacy chat records"
redis-cli -p "$source_port" debug populate "$keys" bot:chat > /dev/null

# run NAME CMD...: its seconds and peak RSS (KB) into secs[NAME], rss[NAME]
declare -A secs rss
run() {
    local name=$1
    shift
    local t0 t1
    t0=$(date +%s.%N)
    /usr/bin/time -f '%M' -o "$tmp/$name.rss" "$@" > "$tmp/$name.out" 2>&1 ||
        { tail -n 20 "$tmp/$name.out" >&2; die "$name failed"; }
    t1=$(date +%s.%N)
    secs[$name]=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')
    rss[$name]=$(tail -n 1 "$tmp/$name.rss")
}

flush_cluster() {
    local p
    for ((p = cluster_base; p < cluster_base + 3; p++)); do
        redis-cli -p "$p" flushall > /dev/null
    done
}

log "tagproxy migrate"
run tagproxy build/tagproxy migrate --source "redis://127.0.0.1:$source_port" \
    --target-cluster "127.0.0.1:$cluster_base" --prefix bot
grep -q "copied $keys," "$tmp/tagproxy.out" || { cat "$tmp/tagproxy.out" >&2; die "tagproxy did not copy every key"; }
flush_cluster
log "redis-cli --cluster import"
run import redis-cli --cluster import "127.0.0.1:$cluster_base" --cluster-from \
    "127.0.0.1:$source_port" --cluster-copy --cluster-replace

echo "migrating $keys keys from one redis-server into a 3-master cluster, $(nproc) CPUs, $(redis-server --version | awk '{ print $3 }')"
echo
echo "| tool | seconds | keys/s | peak RSS (MB) |"
echo "| - | -: | -: | -: |"
for name in tagproxy import; do
    awk -v n="$name" -v s="${secs[$name]}" -v k="$keys" -v r="${rss[$name]}" \
        'BEGIN { printf "| %s | %.2f | %.0f | %.1f |\n", n, s, k / s, r / 1024 }'
done
echo
awk -v a="${secs[import]}" -v b="${secs[tagproxy]}" \
    'BEGIN { printf "tagproxy migrate vs redis-cli --cluster import: keys/s %.2f (goal >= 1)\n", a / b }'
