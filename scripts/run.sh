#!/usr/bin/env bash
# `make run`: a local 3-master/3-replica cluster on 127.0.0.1 ports
# TAGPROXY_CLUSTER_PORT..+5 (default 7000..7005), and build/tagproxy in the
# foreground with conf/tagproxy.conf (listening on 127.0.0.1:6380, as the
# conf says). Ctrl-C, or the proxy exiting, stops the proxy and the cluster.
# Arguments are passed on to the proxy (e.g. --log-level debug).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh

port=${TAGPROXY_CLUSTER_PORT:-7000}
bin=build/tagproxy
conf=conf/tagproxy.conf
[ -x "$bin" ] || die "$bin is missing; run make"
[ -f "$conf" ] || die "$conf is missing"

dir=$(mktemp -d "${TMPDIR:-/tmp}/tagproxy-run.XXXXXX")
proxy_pid=

cleanup() {
    trap - EXIT INT TERM
    if [ -n "$proxy_pid" ]; then stop_pid "$proxy_pid" 5 || true; fi
    echo "run.sh: stopping the cluster" >&2
    scripts/cluster.sh stop --dir "$dir" >/dev/null 2>&1 || true
    rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

echo "run.sh: starting a cluster on 127.0.0.1:$port-$((port + 5)) in $dir" >&2
scripts/cluster.sh start --base-port "$port" --dir "$dir" >/dev/null

echo "run.sh: $bin $conf --cluster 127.0.0.1:$port $*  (Ctrl-C stops it all)" >&2
# In the background so that this shell can forward signals and still clean
# up; the proxy gets the terminal's SIGINT itself, and TERM from cleanup.
"$bin" "$conf" --cluster "127.0.0.1:$port" "$@" &
proxy_pid=$!
set +e
wait "$proxy_pid"
rc=$?
# wait returns early when a trapped signal arrives; the trap then exits
set -e
proxy_pid=
echo "run.sh: proxy exited with status $rc" >&2
exit "$rc"
