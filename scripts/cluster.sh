#!/usr/bin/env bash
# A local Redis Cluster on loopback, for `make run` and the tests.
#
#   scripts/cluster.sh start  [--base-port N] [--masters M] [--replicas R]
#                             [--dir D] [--node-timeout MS] [--tls CERTDIR]
#                             [--requirepass PASS] [--bind HOST]
#                             [--server redis-server|valkey-server]
#   scripts/cluster.sh stop   [--base-port N | --dir D]
#   scripts/cluster.sh status [--base-port N | --dir D]
#   scripts/cluster.sh restart-node --dir D --port P [--server BIN]
#
# start runs M*(1+R) redis-servers (default 3 masters, 1 replica each) on
# 127.0.0.1 ports N.. (default 7000; each also uses port+10000 for the cluster
# bus), each with its own folder under D (default: a new temporary folder,
# printed on stdout), creates the cluster, and returns once every node says
# cluster_state:ok and all nodes agree on the slot map. D/pids lists
# "PORT PID" per node. If start fails, it stops what it started.
#
# --tls CERTDIR: the nodes speak only TLS (--port 0 --tls-port N.., the
# cluster bus too), with CERTDIR/ca.crt, CERTDIR/server.crt and
# CERTDIR/server.key; clients need a certificate only if they offer one
# (tls-auth-clients optional). --requirepass PASS: every node wants PASS
# (and replicas log in with it, masterauth). Both are remembered in D, so
# stop and status need neither. --bind HOST: the nodes listen on HOST
# (default 127.0.0.1; ::1 makes a cluster that announces IPv6 addresses),
# also remembered in D. --server: the server binary the nodes run (default
# redis-server; valkey-server takes the same options), remembered in D too.
#
# stop kills exactly the PIDs in D/pids (TERM, then KILL) and removes D.
# Without --dir, D is found through the state file of the base port
# (${TMPDIR:-/tmp}/tagproxy-cluster-N.dir), written by start.
# Both are idempotent: start on a running cluster and stop on a stopped one
# say so and succeed.
#
# restart-node starts node P of the cluster in D again, as start ran it,
# with its folder and nodes.conf (for the fault tests: a master killed with
# kill -9 comes back and rejoins as its promoted replica's replica), or with
# --server on another binary (a rolling upgrade). D/pids then names its new
# PID. It fails if P still runs.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"

usage() { sed -n '2,36s/^# \{0,1\}//p' "$0" >&2; exit 2; }

cmd=${1:-}; [ $# -gt 0 ] && shift
base=7000 masters=3 replicas=1 dir= node_timeout=5000 tls= pass= host=127.0.0.1 port=
server=
while [ $# -gt 0 ]; do
    [ $# -ge 2 ] || usage
    case $1 in
        --base-port)    base=$2 ;;
        --masters)      masters=$2 ;;
        --replicas)     replicas=$2 ;;
        --dir)          dir=$2 ;;
        --node-timeout) node_timeout=$2 ;;
        --tls)          tls=$2 ;;
        --requirepass)  pass=$2 ;;
        --bind)         host=$2 ;;
        --port)         port=$2 ;;
        --server)       server=$2 ;;
        *) usage ;;
    esac
    shift 2
done
for v in "$base" "$masters" "$replicas" "$node_timeout"; do
    [[ $v =~ ^[0-9]+$ ]] || die "not a number: $v"
done
[ "$masters" -ge 3 ] || die "a cluster needs at least 3 masters"
nodes=$((masters * (1 + replicas)))
[ $((base + nodes - 1 + 10000)) -le 65535 ] || die "base port $base too high"

statefile=${TMPDIR:-/tmp}/tagproxy-cluster-$base.dir
MARKER=.tagproxy-cluster

ports() { seq "$base" $((base + nodes - 1)); }

# redis-cli with what the nodes need (TLS, password), from D/access once
# the cluster exists.
cli_args=()
set_cli_args() {
    cli_args=()
    if [ -n "$tls" ]; then cli_args+=(--tls --cacert "$tls/ca.crt"); fi
    if [ -n "$pass" ]; then cli_args+=(-a "$pass" --no-auth-warning); fi
}
cli() { redis-cli "${cli_args[@]}" "$@"; }
node_ping() { [ "$(cli -h "$host" -p "$1" ping 2>/dev/null)" = PONG ]; }

# Finds D (from the state file unless --dir was given) and the layout the
# cluster in D was started with.
resolve_dir() {
    if [ -z "$dir" ] && [ -f "$statefile" ]; then
        dir=$(cat "$statefile")
    fi
    if [ -n "$dir" ] && [ -f "$dir/access" ]; then
        { read -r tls; read -r pass; read -r host; read -r kept_server; } < "$dir/access" || true
        host=${host:-127.0.0.1}
        server=${server:-${kept_server:-}}
    fi
    set_cli_args
    if [ -n "$dir" ] && [ -f "$dir/layout" ]; then
        read -r base masters replicas layout_timeout < "$dir/layout" || true
        node_timeout=${layout_timeout:-$node_timeout}
        nodes=$((masters * (1 + replicas)))
        statefile=${TMPDIR:-/tmp}/tagproxy-cluster-$base.dir
    fi
}

# live_pids: "PORT PID" of the nodes of $dir that still run as ours, from
# D/pids and from the nodes' own pid files (a start that failed half-way).
live_pids() {
    local port pid f
    [ -n "$dir" ] && [ -d "$dir" ] || return 0
    {
        [ -f "$dir/pids" ] && cat "$dir/pids"
        for f in "$dir"/*/redis.pid; do
            [ -f "$f" ] || continue
            port=${f%/redis.pid}; port=${port##*/}
            echo "$port $(cat "$f" 2>/dev/null)"
        done
    } | sort -u | while read -r port pid; do
        # redis-server or valkey-server: restart-node may change the binary
        if pid_matches "$pid" "-server" && pid_matches "$pid" ":$port"; then
            echo "$port $pid"
        fi
    done
}

do_stop() {
    local port pid pids=()
    resolve_dir
    if [ -z "$dir" ] || [ ! -d "$dir" ]; then
        log "no cluster to stop (base port $base)"
        rm -f "$statefile"
        return 0
    fi
    while read -r port pid; do
        [ -n "$pid" ] && pids+=("$pid")
    done < <(live_pids)
    # TERM them all first, so that the nodes stop together
    for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
    for pid in "${pids[@]}"; do stop_pid "$pid" 5 || true; done
    # remove only a folder this script made its own
    if [ -f "$dir/$MARKER" ]; then
        rm -rf "$dir"
    else
        log "$dir has no $MARKER; not removing it"
    fi
    if [ -f "$statefile" ] && [ "$(cat "$statefile")" = "$dir" ]; then
        rm -f "$statefile"
    fi
    return 0
}

# view PORT: the node's CLUSTER NODES reduced to what must agree everywhere:
# id, role, master id, link state and slots, sorted.
view() {
    cli -h "$host" -p "$1" cluster nodes 2>/dev/null |
        awk '{ role = ($3 ~ /master/) ? "master" : (($3 ~ /slave/) ? "slave" : $3)
               if ($3 ~ /fail|handshake|noaddr/) role = role "!" $3
               s = $1 " " role " " $4 " " $8
               for (i = 9; i <= NF; i++) s = s " " $i
               print s }' | sort
}

cluster_ready() {
    local p first= v
    for p in $(ports); do
        cli -h "$host" -p "$p" cluster info 2>/dev/null |
            grep -q '^cluster_state:ok' || return 1
        v=$(view "$p")
        [ "$(printf '%s\n' "$v" | grep -c .)" -eq "$nodes" ] || return 1
        printf '%s\n' "$v" | grep -q '!' && return 1
        if [ -z "$first" ]; then
            first=$v
        elif [ "$v" != "$first" ]; then
            return 1
        fi
    done
    # every replica has finished its first sync
    for p in $(ports); do
        if cli -h "$host" -p "$p" info replication 2>/dev/null | grep -q '^role:slave'; then
            cli -h "$host" -p "$p" info replication | grep -q '^master_link_status:up' || return 1
        fi
    done
    return 0
}

do_status() {
    local port pid n=0
    resolve_dir
    if [ -z "$dir" ] || [ ! -f "$dir/pids" ]; then
        echo "stopped (base port $base)"
        return 1
    fi
    while read -r port pid; do
        echo "node $host:$port pid $pid"
        n=$((n + 1))
    done < <(live_pids)
    if [ "$n" -eq "$nodes" ] && cluster_ready; then
        echo "running: $n nodes, cluster_state:ok, dir $dir"
        return 0
    fi
    echo "not healthy: $n of $nodes nodes running, dir $dir"
    return 1
}

# EXIT trap of start: unless start finished, stop what it started.
start_exit() {
    local rc=$? f
    [ "$started" = 1 ] && return 0
    log "start failed; stopping what was started"
    for f in "$dir"/*/redis.log; do
        [ -f "$f" ] && { echo "--- $f" >&2; grep -v overcommit "$f" | tail -n 2 >&2; }
    done
    do_stop
    exit $((rc == 0 ? 1 : rc))
}

# start_node PORT: runs node PORT of $dir, daemonized: the nodes do not get
# the terminal's Ctrl-C; whoever started them stops them with `stop`, by PID.
start_node() {
    local p=$1 port_args node_args=()
    mkdir -p "$dir/$p"
    if [ -n "$tls" ]; then
        node_args+=(--tls-cert-file "$tls/server.crt" --tls-key-file "$tls/server.key"
                    --tls-ca-cert-file "$tls/ca.crt" --tls-cluster yes --tls-replication yes
                    --tls-auth-clients optional)
    fi
    if [ -n "$pass" ]; then node_args+=(--requirepass "$pass" --masterauth "$pass"); fi
    if [ -n "$tls" ]; then port_args=(--port 0 --tls-port "$p"); else port_args=(--port "$p"); fi
    "${server:-redis-server}" "${port_args[@]}" --bind "$host" --daemonize yes \
        --pidfile "$dir/$p/redis.pid" --logfile "$dir/$p/redis.log" \
        --dir "$dir/$p" --cluster-enabled yes --cluster-config-file nodes.conf \
        --cluster-node-timeout "$node_timeout" --save '' --appendonly no \
        "${node_args[@]}" >/dev/null
}

do_restart_node() {
    local pid i
    [ -n "$dir" ] && [ -n "$port" ] || usage
    resolve_dir
    [ -f "$dir/$MARKER" ] && [ -d "$dir/$port" ] || die "$dir holds no node $port"
    live_pids | grep -q "^$port " && die "node $port still runs"
    rm -f "$dir/$port/redis.pid"
    start_node "$port"
    for ((i = 0; i < 100; i++)); do
        [ -s "$dir/$port/redis.pid" ] && break
        sleep 0.1
    done
    pid=$(cat "$dir/$port/redis.pid" 2>/dev/null || true)
    [ -n "$pid" ] || die "node $port wrote no pid file"
    { grep -v "^$port " "$dir/pids" || true; echo "$port $pid"; } > "$dir/pids.new"
    mv "$dir/pids.new" "$dir/pids"
    for ((i = 0; i < 100; i++)); do
        node_ping "$port" && return 0
        sleep 0.1
    done
    die "node $port does not answer"
}

do_start() {
    local p pid made_dir=0 i addrs=()
    resolve_dir
    if [ -n "$dir" ] && [ -f "$dir/pids" ] && [ -n "$(live_pids)" ]; then
        if do_status >/dev/null; then
            log "already running in $dir"
            echo "$dir"
            return 0
        fi
        die "a partial cluster runs in $dir; run: $0 stop --dir $dir"
    fi
    for p in $(ports); do
        ports_free "$p" $((p + 10000)) || die "port $p or $((p + 10000)) is in use"
    done
    if [ -z "$dir" ]; then
        dir=$(mktemp -d "${TMPDIR:-/tmp}/tagproxy-cluster.XXXXXX")
    else
        # stop removes D: never adopt a folder that holds something else
        if [ -d "$dir" ] && [ ! -f "$dir/$MARKER" ] && [ -n "$(ls -A "$dir")" ]; then
            die "$dir is not empty"
        fi
        mkdir -p "$dir"
    fi
    dir=$(cd "$dir" && pwd)
    : > "$dir/$MARKER"
    : > "$dir/pids"
    echo "$base $masters $replicas $node_timeout" > "$dir/layout"
    if [ -n "$tls" ]; then tls=$(cd "$tls" && pwd); fi
    printf '%s\n%s\n%s\n%s\n' "$tls" "$pass" "$host" "$server" > "$dir/access"
    chmod 600 "$dir/access"
    set_cli_args
    echo "$dir" > "$statefile"
    started=0
    trap start_exit EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM

    for p in $(ports); do start_node "$p"; done
    for p in $(ports); do
        for ((i = 0; i < 100; i++)); do
            [ -s "$dir/$p/redis.pid" ] && break
            sleep 0.1
        done
        pid=$(cat "$dir/$p/redis.pid" 2>/dev/null || true)
        [ -n "$pid" ] || { log "node $p wrote no pid file"; false; }
        echo "$p $pid" >> "$dir/pids"
    done
    for p in $(ports); do
        for ((i = 0; i < 100; i++)); do
            node_ping "$p" && break
            sleep 0.1
        done
        node_ping "$p" || { log "node $p does not answer"; false; }
        addrs+=("$host:$p")
    done

    cli --cluster create "${addrs[@]}" --cluster-replicas "$replicas" \
        --cluster-yes > "$dir/create.log" 2>&1 || { cat "$dir/create.log" >&2; false; }

    for ((i = 0; i < 600; i++)); do
        cluster_ready && break
        sleep 0.1
    done
    cluster_ready || { log "cluster not ready after 60 s"; false; }
    started=1
    trap - EXIT INT TERM
    echo "$dir"
}

case $cmd in
    start)  do_start ;;
    stop)   do_stop ;;
    status) do_status ;;
    restart-node) do_restart_node ;;
    *)      usage ;;
esac
