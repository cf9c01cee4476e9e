#!/usr/bin/env bash
# make bench: tagproxy against a direct redis-server, side by side in one run.
#
#   scripts/bench.sh            (from the top of the tree, after `make`)
#
# Starts, on free loopback ports and in a temporary folder:
#   direct      a standalone redis-server
#   tagproxy    build/tagproxy --threads 1 in front of a local cluster
#               (scripts/cluster.sh, 3 masters, no replicas by default)
#   nutcracker  twemproxy in front of the standalone server, when Debian's
#               `nutcracker` is installed (optional: skipped otherwise)
#   relay       build/bench/relay (tests/bench/relay.c) in front of the
#               standalone server: a relay that only copies bytes, one
#               upstream connection per client; what the extra hop alone
#               costs, for scale
# then runs redis-benchmark against each: SET and GET, 50 clients, random
# keys (-r 100000), pipeline 1 and 16; every case BENCH_ROUNDS times, the
# targets interleaved, keeping the median run. For each case it prints, as a
# markdown table: requests/s and the ratio to direct; the CPU time per request of the
# target process (utime+stime from /proc/PID/stat, before and after the run)
# next to the standalone redis-server's in the direct run; what the servers
# behind a proxy spent (the cluster masters' total, or the standalone server
# behind nutcracker); the whole machine's busy CPU per request and its idle
# share (from /proc/stat); p50 and p99 latency from redis-benchmark's CSV.
# Throughput is the busy CPUs divided by the machine's CPU per request, so
# for GET -P 16 it prints the ratio to direct as the product of those two
# ratios: the cost of the path, and how well the CPUs were kept busy; and
# the target's CPU per request split into kernel (stime) and user time, next
# to redis-server's, since a proxy reads and writes the same client
# connections as the server does before its own work begins (the kernel
# counts both in clock ticks, so the split is rough). Then,
# for each proxy, every round's throughput against the direct run of the same
# round: the machine drifts between rounds, and this line shows by how much.
#
# RESP3 rows (issue 21): the direct server and tagproxy are measured a second
# time in every case with redis-benchmark -3 (HELLO 3 on each connection, so
# the proxy serves them over its RESP3 node connections), each run next to
# the RESP2 run of the same target, case and round (after it in odd rounds,
# before it in even ones), so that the machine's drift hits both alike. Their rows ("direct RESP3", "tagproxy
# RESP3") compare with direct RESP3. The summary line `tagproxy RESP3 vs
# RESP2` gives, for SET and GET at pipeline 1 and 16, the throughput of
# RESP3 through the proxy over RESP2 through the proxy (goal: at least 0.95)
# and the same for the proxy's CPU per request; `direct RESP3 vs RESP2`
# says what the protocol costs redis-server alone, for scale; and each has
# its round-by-round line, every RESP3 run against the RESP2 run of its
# round.
#
# Everything it starts is stopped by PID, and its folder removed, on exit.
#
# Environment:
#   BENCH_REQUESTS       requests per pipeline-1 run      (default 200000)
#   BENCH_REQUESTS_P16   requests per pipeline-16 run     (default 5 x that)
#   BENCH_CLIENTS        redis-benchmark -c                (default 50)
#   BENCH_KEYSPACE       redis-benchmark -r                (default 100000)
#   BENCH_THREADS        tagproxy --threads                (default 1)
#   BENCH_REPLICAS       replicas per cluster master       (default 0)
#   BENCH_ROUNDS         runs of every case; the median is shown (default 5:
#                        the machine drifts, and 3 rounds left the median to chance)
#   BENCH_TIMEOUT_S      limit on one redis-benchmark run  (default 120)
#   BENCH_PROXY_ARGS     extra arguments for build/tagproxy
#   BENCH_RESP3          0: no RESP3 rows                  (default 1)
#   BENCH_ONLY           "layout", "acl", "tracking" or "acks" (with read-from's):
#                        only those rows (below)
#                                                          (default: all)
#   BENCH_CHATS          chats listed by the KEYS row          (default 100000)
#   BENCH_KEYS_REQUESTS  KEYS calls per KEYS run               (default 20)
#
# Key layout rows (issue 3), against a second proxy on the same cluster with
# the shipped rules (conf/layouts/botmesh-v1.rules, layout-prefix "bench"):
#   SET and GET on legacy names a rule rewrites (bench:lock:<n>, sent as
#     bench:{lk:<n>}:l), against the same commands on plain names, both
#     through that proxy (goal: at least 0.9);
#   an indexed write (SET bench:contact:<n>: the record and its index
#     entry, one script in their slot) against a plain SET through it;
#   KEYS bench:chat:* over BENCH_CHATS chats, answered from the 32 chat
#     indexes, against KEYS on the standalone redis-server holding the same
#     legacy names alone (in its db 1) (goal: no slower than 2x, ratio 0.5).
#
# ACL rows (issue 36), against a third proxy on the same cluster with a user
# whose rules have key patterns (user bench: ~key:* ~other:* allchannels
# +@all): GET and SET as that user, whose every key is matched against its
# patterns, against the same commands as the default user (every key: one
# bit test), both through that proxy (goal: at least 0.95).
#
# Tracking rows (issue 40), with build/bench/trackload (redis-benchmark
# cannot turn CLIENT TRACKING on): GET of random keys key:0..BENCH_KEYSPACE
# from BENCH_CLIENTS RESP3 clients with CLIENT TRACKING ON, against the same
# clients without it, at pipeline 1 and 16, through the proxy (goal: at
# least 0.9) and on the standalone redis-server (what tracking costs a
# server itself); then the proxy's tracking table, in bytes per key and per
# (key, client) entry (INFO: tracking_table_bytes).
#
# Replica-acks rows (issue 41; BENCH_ONLY=acks, on a cluster with one
# replica per master unless BENCH_REPLICAS says otherwise; skipped in the
# full run, whose cluster has no replicas by default): SET through a proxy
# with replica-acks 1 1000 (each round's writes wait for a replica: one
# WAIT per connection and round) against SET through the proxy without it,
# at pipeline 1 and 16 (goal: at least 0.7 at 16), and GET through it
# (reads go on as they were).
#
# Read-from rows (issue 41; with the replica-acks rows): GET through a proxy
# with read-from replica against GET through the proxy without it, at
# pipeline 1 and 16, and the masters' CPU per GET in each (what replica
# reads free on the masters).
#   TAGPROXY             the proxy binary                  (default build/tagproxy)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
# shellcheck source=scripts/lib.sh
. "$here/lib.sh"

requests=${BENCH_REQUESTS:-200000}
requests16=${BENCH_REQUESTS_P16:-$((requests * 5))}
clients=${BENCH_CLIENTS:-50}
keyspace=${BENCH_KEYSPACE:-100000}
threads=${BENCH_THREADS:-1}
replicas=${BENCH_REPLICAS:-0}
run_timeout=${BENCH_TIMEOUT_S:-120}
rounds=${BENCH_ROUNDS:-5}
proxy_bin=${TAGPROXY:-$top/build/tagproxy}
for v in "$requests" "$requests16" "$clients" "$keyspace" "$threads" "$run_timeout" "$rounds"; do
    [[ $v =~ ^[1-9][0-9]*$ ]] || die "not a positive number: $v"
done
[[ $replicas =~ ^[0-9]+$ ]] || die "not a number: $replicas"
only=${BENCH_ONLY:-}
resp3=${BENCH_RESP3:-1}
case $resp3 in 0 | 1) ;; *) die "BENCH_RESP3: 0 or 1, not '$resp3'" ;; esac
chats=${BENCH_CHATS:-100000}
keys_requests=${BENCH_KEYS_REQUESTS:-20}
case $only in '' | layout | acl | tracking | acks) ;;
*) die "BENCH_ONLY: 'layout', 'acl', 'tracking', 'acks' or nothing, not '$only'" ;; esac
if [ "$only" = acks ] && [ -z "${BENCH_REPLICAS:-}" ]; then replicas=1; fi
for v in "$chats" "$keys_requests"; do
    [[ $v =~ ^[1-9][0-9]*$ ]] || die "not a positive number: $v"
done
for tool in redis-server redis-cli redis-benchmark timeout; do
    command -v "$tool" >/dev/null || die "$tool is not installed (make deps)"
done
tck=$(getconf CLK_TCK)

tmp=$(mktemp -d "${TMPDIR:-/tmp}/tagproxy-bench.XXXXXX")
started=()          # "PID NAME" of processes started here, stopped in cleanup
cluster_dir='' cluster_base=''
bench_pid=''        # the redis-benchmark (under timeout) running now, if any

cleanup() {
    local rc=$? i pid name
    trap - EXIT INT TERM
    if [ -n "$bench_pid" ]; then kill -TERM "$bench_pid" 2>/dev/null || true; fi
    # proxies first (started last), then the servers behind them
    for ((i = ${#started[@]} - 1; i >= 0; i--)); do
        read -r pid name <<< "${started[i]}"
        # the name guards against a PID reused since by another process
        if pid_matches "$pid" "$name"; then stop_pid "$pid" 5 || true; fi
    done
    if [ -n "$cluster_dir" ]; then
        bash "$here/cluster.sh" stop --base-port "$cluster_base" --dir "$cluster_dir" >/dev/null 2>&1 ||
            log "could not stop the cluster in $cluster_dir"
    fi
    rm -rf "$tmp"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---- ports -----------------------------------------------------------------

# ---- targets ---------------------------------------------------------------
# For each target: its port, the PID whose CPU is its own, and the PIDs of
# the servers behind it (whose CPU is reported as "backend").

targets=()
# tproto: 3 for a RESP3 row (redis-benchmark -3), else RESP2; tref: the
# target its "x direct" is against (direct, or direct-resp3 for RESP3 rows)
declare -A tport tpid tbackend tnote tlog tproto tref

start_direct() {
    local port pid
    pick_port port
    mkdir -p "$tmp/direct"
    redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no \
        --dir "$tmp/direct" --logfile "$tmp/direct/redis.log" --daemonize no &
    pid=$!
    started+=("$pid redis-server")
    if ! wait_ready "$port" "$pid" 10; then
        tail -n 20 "$tmp/direct/redis.log" >&2
        die "the standalone redis-server did not start"
    fi
    targets+=(direct) tlog[direct]=$tmp/direct/redis.log
    tport[direct]=$port tpid[direct]=$pid tbackend[direct]=
}

start_cluster() {
    local base p pid role masters=()
    if [ ! -f "$here/cluster.sh" ]; then
        tnote[tagproxy]="skipped: scripts/cluster.sh is missing"
        return 1
    fi
    pick_port base 3
    cluster_base=$base cluster_dir=$tmp/cluster
    if ! bash "$here/cluster.sh" start --base-port "$base" --masters 3 \
            --replicas "$replicas" --dir "$cluster_dir" > "$tmp/cluster.log" 2>&1; then
        tail -n 20 "$tmp/cluster.log" >&2
        tnote[tagproxy]="skipped: the cluster did not start"
        return 1
    fi
    while read -r p pid; do
        role=$(redis-cli -h 127.0.0.1 -p "$p" role 2>/dev/null | head -n 1)
        [ "$role" = master ] && masters+=("$pid")
    done < "$cluster_dir/pids"
    [ ${#masters[@]} -ge 3 ] || die "the cluster has ${#masters[@]} masters, expected 3"
    cluster_seed=127.0.0.1:$base
    cluster_masters="${masters[*]}"
}

start_tagproxy() {
    local port pid conf=() extra=()
    if [ ! -x "$proxy_bin" ]; then
        tnote[tagproxy]="skipped: $proxy_bin is not built (run make)"
        return 1
    fi
    start_cluster || return 1
    [ -f "$top/conf/tagproxy.conf" ] && conf=("$top/conf/tagproxy.conf")
    # shellcheck disable=SC2206 # BENCH_PROXY_ARGS is split on purpose
    extra=(${BENCH_PROXY_ARGS:-})
    pick_port port
    # no admin endpoint: its fixed default port may be taken, and nothing here reads it
    "$proxy_bin" "${conf[@]}" --listen "127.0.0.1:$port" --cluster "$cluster_seed" \
        --threads "$threads" --admin-listen off "${extra[@]}" > "$tmp/tagproxy.log" 2>&1 &
    pid=$!
    started+=("$pid ${proxy_bin##*/}")
    if ! wait_ready "$port" "$pid" 15; then
        tail -n 20 "$tmp/tagproxy.log" >&2
        tnote[tagproxy]="skipped: build/tagproxy did not answer PING within 15 s"
        return 1
    fi
    targets+=(tagproxy) tlog[tagproxy]=$tmp/tagproxy.log
    tport[tagproxy]=$port tpid[tagproxy]=$pid tbackend[tagproxy]=$cluster_masters
}

# add_peer NAME PORT PID: a target just started in front of the standalone
# server (its process named NAME, its log $tmp/NAME.log) is measured once it
# answers; the server's CPU is its backend's.
add_peer() {
    local name=$1 port=$2 pid=$3
    started+=("$pid $name")
    if ! wait_ready "$port" "$pid" 10; then
        tail -n 20 "$tmp/$name.log" >&2
        tnote[$name]="skipped: $name did not answer PING within 10 s"
        return 1
    fi
    targets+=("$name") tlog[$name]=$tmp/$name.log
    tport[$name]=$port tpid[$name]=$pid tbackend[$name]=${tpid[direct]}
}

start_nutcracker() {
    local port stats
    if ! command -v nutcracker >/dev/null; then
        tnote[nutcracker]="skipped: nutcracker (twemproxy) is not installed (optional: apt-get install nutcracker)"
        return 1
    fi
    pick_port port
    pick_port stats
    cat > "$tmp/nutcracker.yml" <<EOF
bench:
  listen: 127.0.0.1:$port
  hash: fnv1a_64
  distribution: ketama
  redis: true
  preconnect: true
  server_connections: 1
  auto_eject_hosts: false
  timeout: 5000
  servers:
   - 127.0.0.1:${tport[direct]}:1
EOF
    nutcracker -c "$tmp/nutcracker.yml" -o "$tmp/nutcracker.log" -s "$stats" -a 127.0.0.1 \
        -p "$tmp/nutcracker.pid" &
    add_peer nutcracker "$port" $!
}

# The byte-copying relay (tests/bench/relay.c) in front of the standalone
# server: what the extra hop alone costs, with no proxy work at all.
start_relay() {
    local port bin=$top/build/bench/relay
    if [ ! -x "$bin" ]; then
        tnote[relay]="skipped: $bin is not built (make bench builds it)"
        return 1
    fi
    pick_port port
    "$bin" "$port" "${tport[direct]}" > "$tmp/relay.log" 2>&1 &
    add_peer relay "$port" $!
}

# RESP3 rows: the direct server and tagproxy once more, as the targets
# direct-resp3 and tagproxy-resp3 (the same port and processes, measured
# with redis-benchmark -3), each placed next to its RESP2 twin so that the
# two run back to back in every case and round.
add_resp3() {
    local t order=()
    if [ "$resp3" = 0 ]; then
        tnote[resp3]="skipped: BENCH_RESP3=0"
        return 0
    fi
    if ! redis-benchmark --help 2>&1 | grep -Eq '^ *-3 '; then
        tnote[resp3]="skipped: this redis-benchmark has no -3 (redis-tools 7.0 or later has it)"
        return 0
    fi
    for t in "${targets[@]}"; do
        order+=("$t")
        case $t in
            direct | tagproxy)
                order+=("$t-resp3")
                tport[$t-resp3]=${tport[$t]} tpid[$t-resp3]=${tpid[$t]} tlog[$t-resp3]=${tlog[$t]}
                tbackend[$t-resp3]=${tbackend[$t]} tproto[$t-resp3]=3 tref[$t-resp3]=direct-resp3
                ;;
        esac
    done
    targets=("${order[@]}")
}

# label TARGET: the target as the report names it (tagproxy-resp3: "tagproxy RESP3").
label() { if [ "${tproto[$1]:-2}" = 3 ]; then echo "${1%-resp3} RESP3"; else echo "$1"; fi; }

# ---- measuring -------------------------------------------------------------

# cpu_ticks PID...: utime+stime of all the PIDs, in clock ticks, then their
# stime alone. Fields are counted after the ')' that closes the command name,
# which may hold spaces.
cpu_ticks() {
    local pid stat sum=0 sys=0 f
    for pid in "$@"; do
        stat=$(cat "/proc/$pid/stat" 2>/dev/null) || return 1
        read -r -a f <<< "${stat##*) }"
        sum=$((sum + f[11] + f[12]))
        sys=$((sys + f[12]))
    done
    echo "$sum $sys"
}

# machine_ticks: the whole machine's busy and idle clock ticks so far (the
# first line of /proc/stat: idle and iowait are idle, the rest busy).
machine_ticks() {
    local f
    read -r -a f < /proc/stat
    echo "$((f[1] + f[2] + f[3] + f[6] + f[7] + f[8])) $((f[4] + f[5]))"
}

declare -A rps p50 p99 cpu sys_cpu backend_cpu machine_cpu idle

# bench TARGET TEST PIPELINE N: one redis-benchmark run; appends
# "TARGET TEST PIPELINE rps p50 p99 cpu-ns backend-ns machine-ns idle-% sys-ns"
# to $tmp/runs.
bench() {
    local t=$1 test=$2 pipe=$3 n=$4 key="$1 $2 $3" back0=0 back1=0 own sys back out line
    local -a f m0 m1 own0 own1 proto=()
    [ "${tproto[$t]:-2}" = 3 ] && proto=(-3)
    out=$tmp/bench.csv
    if ! pid_alive "${tpid[$t]}"; then
        log "$t is not running any more; the end of its log:"
        tail -n 20 "${tlog[$t]}" >&2
        return 1
    fi
    read -r -a own0 <<< "$(cpu_ticks "${tpid[$t]}")"
    # shellcheck disable=SC2086 # tbackend holds a list of PIDs
    if [ -n "${tbackend[$t]}" ]; then back0=$(cpu_ticks ${tbackend[$t]}); back0=${back0% *}; fi
    read -r -a m0 <<< "$(machine_ticks)"
    # in the background, so that a signal to this script is handled at once
    timeout "$run_timeout" redis-benchmark -h 127.0.0.1 -p "${tport[$t]}" \
        -c "$clients" -n "$n" -r "$keyspace" -P "$pipe" -t "$test" --csv "${proto[@]}" \
        > "$out" 2> "$tmp/bench.err" &
    bench_pid=$!
    if ! wait "$bench_pid"; then
        bench_pid=''
        log "$t $test -P $pipe: redis-benchmark failed or timed out: $(tail -n 3 "$tmp/bench.err" "$out" | tr '\n' ' ')"
        log "the end of $t's log:"
        tail -n 10 "${tlog[$t]}" >&2
        return 1
    fi
    bench_pid=''
    read -r -a m1 <<< "$(machine_ticks)"
    line=$(cpu_ticks "${tpid[$t]}") || { log "$t exited during the run"; return 1; }
    read -r -a own1 <<< "$line"
    if [ -n "${tbackend[$t]}" ]; then
        # shellcheck disable=SC2086
        back1=$(cpu_ticks ${tbackend[$t]}) || { log "a server behind $t exited"; return 1; }
        back1=${back1% *}
    fi
    line=$(grep -i "^\"$test\"" "$out" | tail -n 1 | tr -d '"')
    IFS=, read -r -a f <<< "$line"
    [ ${#f[@]} -ge 7 ] || { log "$t $test -P $pipe: no CSV result in: $(cat "$out")"; return 1; }
    own=$(awk -v d=$((own1[0] - own0[0])) -v t="$tck" -v n="$n" 'BEGIN { printf "%.0f", d * 1e9 / t / n }')
    sys=$(awk -v d=$((own1[1] - own0[1])) -v t="$tck" -v n="$n" 'BEGIN { printf "%.0f", d * 1e9 / t / n }')
    back=-
    if [ -n "${tbackend[$t]}" ]; then
        back=$(awk -v d=$((back1 - back0)) -v t="$tck" -v n="$n" 'BEGIN { printf "%.0f", d * 1e9 / t / n }')
    fi
    echo "$key ${f[1]} ${f[4]} ${f[6]} $own $back" \
         "$(awk -v b=$((m1[0] - m0[0])) -v i=$((m1[1] - m0[1])) -v t="$tck" -v n="$n" \
                'BEGIN { printf "%.0f %.0f", b * 1e9 / t / n, (b + i > 0) ? 100 * i / (b + i) : 0 }')" \
         "$sys" >> "$tmp/runs"
    log "$(printf '%-14s %-3s -P %-2s %10s req/s  p50 %s ms  p99 %s ms' "$(label "$t")" "$test" "$pipe" "${f[1]}" "${f[4]}" "${f[6]}")"
}

# ---- run -------------------------------------------------------------------

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || b + 0 == 0) print "-"; else printf "%.2f", a / b }'; }

# The proxy and nutcracker against the direct server: SET and GET, pipeline 1 and 16.
standard_rows() {
start_tagproxy || log "${tnote[tagproxy]}"
start_nutcracker || log "${tnote[nutcracker]}"
start_relay || log "${tnote[relay]}"
add_resp3

# Warm up every target (connections, allocator, first keys; the RESP3 rows
# in RESP3, which the proxy serves over node connections of their own); not
# measured.
for t in "${targets[@]}"; do
    proto=()
    [ "${tproto[$t]:-2}" = 3 ] && proto=(-3)
    timeout "$run_timeout" redis-benchmark -h 127.0.0.1 -p "${tport[$t]}" -c "$clients" \
        -n 20000 -r "$keyspace" -t set --csv "${proto[@]}" > /dev/null 2>&1 || log "$(label "$t"): warm-up failed"
done

cases=("SET 1 $requests" "GET 1 $requests" "SET 16 $requests16" "GET 16 $requests16")
: > "$tmp/runs"
for ((round = 1; round <= rounds; round++)); do
    if [ "$rounds" -gt 1 ]; then log "round $round of $rounds"; fi
    # every other round, each RESP3 run goes before its RESP2 twin's, so
    # that neither protocol always runs second
    order=()
    for t in "${targets[@]}"; do
        if [ "${tproto[$t]:-2}" = 3 ] && [ $((round % 2)) = 0 ]; then
            order=("${order[@]:0:${#order[@]}-1}" "$t" "${order[-1]}")
        else
            order+=("$t")
        fi
    done
    for c in "${cases[@]}"; do
        read -r test pipe n <<< "$c"
        for t in "${order[@]}"; do
            bench "$t" "$test" "$pipe" "$n" || tnote[$t]="${tnote[$t]:-}failed on $test -P $pipe; "
        done
    done
done

# Of each case's rounds, keep the run with the median throughput, whole (its
# CPU and latencies with it), so that one disturbed run does not decide.
while read -r t test pipe r l50 l99 own back mach idl sys; do
    key="$t $test $pipe"
    rps[$key]=$r p50[$key]=$l50 p99[$key]=$l99 cpu[$key]=$own machine_cpu[$key]=$mach idle[$key]=$idl
    sys_cpu[$key]=$sys
    [ "$back" = - ] || backend_cpu[$key]=$back
done < <(sort -k1,3 -k4,4g "$tmp/runs" |
         awk '{ k = $1 " " $2 " " $3; n[k]++; line[k, n[k]] = $0 }
              END { for (k in n) print line[k, int((n[k] + 1) / 2)] }')

# ---- report ----------------------------------------------------------------


echo
echo "redis-benchmark: $clients clients, -r $keyspace, 3-byte values;" \
     "$requests requests at pipeline 1, $requests16 at pipeline 16; median of $rounds rounds;" \
     "$(nproc) CPUs; $(redis-server --version | awk '{ print $3 }');" \
     "tagproxy --threads $threads, cluster of 3 masters x $replicas replicas."
echo "CPU: ns of utime+stime per request of the target process; \"x redis\" divides it by" \
     "the standalone redis-server's in the direct run; \"backend\" is what the servers behind" \
     "a proxy spent (cluster masters' total, or the standalone server behind nutcracker);" \
     "\"machine\" is the whole machine's busy CPU per request (redis-benchmark, the target and" \
     "the servers behind it), and \"idle\" the share of the run the CPUs had nothing to run."
if [ -n "${tproto[tagproxy-resp3]:-}${tproto[direct-resp3]:-}" ]; then
    echo "RESP3 rows: the same runs with redis-benchmark -3 (HELLO 3 on every connection), each" \
         "next to the RESP2 run of its target, case and round (after it in odd rounds, before it" \
         "in even ones); their \"x direct\" and \"x redis\" are against direct RESP3."
fi
echo
echo "| case | target | req/s | x direct | CPU ns/req | redis-server ns/req | CPU x redis | backend ns/req | machine ns/req | idle % | p50 ms | p99 ms |"
echo "| - | - | -: | -: | -: | -: | -: | -: | -: | -: | -: | -: |"
# the RESP2 targets in their order, then the RESP3 rows
shown=()
for t in "${targets[@]}"; do [ "${tproto[$t]:-2}" = 3 ] || shown+=("$t"); done
for t in "${targets[@]}"; do [ "${tproto[$t]:-2}" != 3 ] || shown+=("$t"); done
for c in "${cases[@]}"; do
    read -r test pipe n <<< "$c"
    for t in "${shown[@]}"; do
        k="$t $test $pipe" d="${tref[$t]:-direct} $test $pipe"
        [ -n "${rps[$k]:-}" ] || { echo "| $test -P $pipe | $(label "$t") | failed | | | | | | | | | |"; continue; }
        echo "| $test -P $pipe | $(label "$t") | ${rps[$k]} | $(ratio "${rps[$k]}" "${rps[$d]:-}") | ${cpu[$k]}" \
             "| ${cpu[$d]:--} | $(ratio "${cpu[$k]}" "${cpu[$d]:-}") | ${backend_cpu[$k]:--}" \
             "| ${machine_cpu[$k]} | ${idle[$k]} | ${p50[$k]} | ${p99[$k]} |"
    done
done
echo
for t in direct tagproxy nutcracker relay direct-resp3 tagproxy-resp3; do
    if [ -n "${tnote[$t]:-}" ]; then echo "$(label "$t"): ${tnote[$t]}"; fi
done
if [ -n "${tnote[resp3]:-}" ]; then echo "RESP3 rows: ${tnote[resp3]}"; fi
for t in "${targets[@]}"; do
    if [ "$t" = direct ] || [ "${tproto[$t]:-2}" = 3 ] || [ -z "${rps[$t GET 16]:-}" ] ||
        [ -z "${rps[$t GET 1]:-}" ]; then
        continue
    fi
    echo "$t vs direct: GET -P 16 throughput $(ratio "${rps[$t GET 16]}" "${rps[direct GET 16]}")" \
         "(goal >= 0.7), CPU/request $(ratio "${cpu[$t GET 16]}" "${cpu[direct GET 16]}")x" \
         "(goal <= 1.2), GET -P 1 throughput $(ratio "${rps[$t GET 1]}" "${rps[direct GET 1]}")" \
         "and SET -P 1 $(ratio "${rps[$t SET 1]:-}" "${rps[direct SET 1]:-}") (goal >= 0.8)"
    # Throughput = busy CPUs / machine CPU per request, so the ratio to direct
    # is the product of two ratios, and this line says which one holds it back.
    k="$t GET 16" d="direct GET 16"
    echo "$t vs direct, GET -P 16 throughput as machine CPU per request (direct/$t)" \
         "$(ratio "${machine_cpu[$d]}" "${machine_cpu[$k]}")" \
         "x busy share ($t/direct) $(ratio "$((100 - ${idle[$k]}))" "$((100 - ${idle[$d]}))")"
    # The kernel's share: a proxy reads and writes the same client connections
    # as the server does, and then the connections to the servers behind it.
    echo "$t vs direct, GET -P 16 CPU per request in the kernel (stime): $t ${sys_cpu[$k]} ns," \
         "redis-server ${sys_cpu[$d]} ns; in user space: $t $((${cpu[$k]} - ${sys_cpu[$k]})) ns," \
         "redis-server $((${cpu[$d]} - ${sys_cpu[$d]})) ns"
done
# RESP3 against RESP2, the same target in the same run: throughput and the
# target's CPU per request, case by case (issue 21: through the proxy, at
# least 0.95).
for t in tagproxy direct; do
    [ -n "${tproto[$t-resp3]:-}" ] || continue
    tput='' tcpu=''
    for c in "${cases[@]}"; do
        read -r test pipe n <<< "$c"
        k="$t $test $pipe" k3="$t-resp3 $test $pipe"
        tput+="${tput:+, }$test -P $pipe $(ratio "${rps[$k3]:-}" "${rps[$k]:-}")"
        tcpu+="${tcpu:+, }$test -P $pipe $(ratio "${cpu[$k3]:-}" "${cpu[$k]:-}")x"
    done
    if [ "$t" = tagproxy ]; then goal=" (goal >= 0.95)"; else goal=" (for scale)"; fi
    echo "$t RESP3 vs RESP2: throughput $tput$goal; CPU/request $tcpu"
done
# The same ratios round by round, each run against the direct run of its own
# round: the machine drifts between rounds, and this shows by how much. The
# median of those paired ratios follows each case: when the direct server
# has a slow patch (or the proxy one), the table's ratio of two medians
# moves with it, and the paired median much less. The RESP3 rows follow,
# each run against the RESP2 run of the same target and round.
pairs=''
for t in "${targets[@]}"; do
    if [ "$t" != direct ] && [ "${tproto[$t]:-2}" != 3 ]; then pairs+=" $t=direct"; fi
done
for t in tagproxy direct; do
    if [ -n "${tproto[$t-resp3]:-}" ]; then pairs+=" $t-resp3=$t"; fi
done
awk -v order="${cases[*]}" -v pairs="$pairs" '
    { k = $2 " " $3; n = ++runs[$1, k]; r[$1, k, n] = $4 }
    END {
        nc = split(order, w, " ")
        np = split(pairs, p, " ")
        for (i = 1; i <= np; i++) {
            split(p[i], q, "="); ta = q[1]; tb = q[2]
            name = (ta ~ /-resp3$/) ? tb " RESP3 vs RESP2" : ta " vs direct"
            line = ""
            for (j = 1; j + 2 <= nc; j += 3) {
                k = w[j] " " w[j + 1]; part = ""; m = 0
                for (n = 1; n <= runs[ta, k] && n <= runs[tb, k]; n++)
                    if (r[tb, k, n] > 0) {
                        v[++m] = r[ta, k, n] / r[tb, k, n]
                        part = part sprintf(" %.2f", v[m])
                    }
                for (a = 2; a <= m; a++)        # insertion sort, for the median
                    for (b = a; b > 1 && v[b - 1] > v[b]; b--) { x = v[b]; v[b] = v[b - 1]; v[b - 1] = x }
                if (m > 0)
                    part = part sprintf(" (median %.2f)", (v[int((m + 1) / 2)] + v[int(m / 2) + 1]) / 2)
                if (part != "") line = line sprintf("%s%s -P %s%s", line == "" ? "" : "; ", w[j], w[j + 1], part)
            }
            if (line != "") print name ", round by round: " line
        }
    }' "$tmp/runs"
[ -n "${rps[direct GET 16]:-}" ] || die "the direct runs failed"
}

# ---- key layout rows -------------------------------------------------------

# start_extra_proxy TARGET WHAT ARGS...: another proxy on the same cluster,
# with ARGS, as target TARGET (its log $tmp/TARGET.log).
start_extra_proxy() {
    local target=$1 what=$2 port pid
    shift 2
    [ -x "$proxy_bin" ] || die "$proxy_bin is not built (run make)"
    if [ -z "$cluster_dir" ]; then start_cluster || die "${tnote[tagproxy]}"; fi
    pick_port port
    "$proxy_bin" --listen "127.0.0.1:$port" --cluster "$cluster_seed" --threads "$threads" \
        "$@" --admin-listen off > "$tmp/$target.log" 2>&1 &
    pid=$!
    started+=("$pid ${proxy_bin##*/}")
    if ! wait_ready "$port" "$pid" 15; then
        tail -n 20 "$tmp/$target.log" >&2
        die "the $what proxy did not answer PING within 15 s"
    fi
    tport[$target]=$port tpid[$target]=$pid tlog[$target]=$tmp/$target.log
}

# bench_cmd LABEL TARGET PIPE N CLIENTS DB CMD...: one redis-benchmark run of
# a command (with bench_login's words before it, if any); appends
# "LABEL rps p50 p99" to $tmp/lruns.
bench_login=()
bench_cmd() {
    local label=$1 t=$2 pipe=$3 n=$4 c=$5 db=$6 line
    local -a f
    shift 6
    timeout "$run_timeout" redis-benchmark -h 127.0.0.1 -p "${tport[$t]}" -c "$c" -n "$n" \
        -r "$keyspace" -P "$pipe" --dbnum "$db" "${bench_login[@]}" --csv "$@" \
        > "$tmp/lbench.csv" 2> "$tmp/lbench.err" &
    bench_pid=$!
    if ! wait "$bench_pid"; then
        bench_pid=''
        log "$label: redis-benchmark failed: $(tail -n 3 "$tmp/lbench.err" "$tmp/lbench.csv" | tr '\n' ' ')"
        tail -n 10 "${tlog[$t]}" >&2
        return 1
    fi
    bench_pid=''
    line=$(tail -n 1 "$tmp/lbench.csv" | tr -d '"')
    IFS=, read -r -a f <<< "$line"
    [ ${#f[@]} -ge 7 ] || { log "$label: no CSV result in: $(cat "$tmp/lbench.csv")"; return 1; }
    echo "$label ${f[1]} ${f[4]} ${f[6]}" >> "$tmp/lruns"
    log "$(printf '%-24s %10s req/s  p50 %s ms  p99 %s ms' "$label" "${f[1]}" "${f[4]}" "${f[6]}")"
}

# fill_chats PORT DB: SET bench:chat:0 .. bench:chat:<chats-1> through redis-cli --pipe.
fill_chats() {
    awk -v n="$chats" 'BEGIN {
        for (i = 0; i < n; i++) {
            k = "bench:chat:" i
            printf "*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$1\r\nv\r\n", length(k), k
        }
    }' | redis-cli -p "$1" -n "$2" --pipe > "$tmp/fill.log" 2>&1 ||
        { cat "$tmp/fill.log" >&2; die "could not write the chats through port $1"; }
}

# runs_table NAME "LABEL|CASE|AGAINST|CASE|GOAL"...: the table of the
# median runs in $tmp/lruns (each case's median req/s, its p50 and p99),
# a row a pair of cases, then each round's ratio.
runs_table() {
    local name=$1 row label a against b goal r l50 l99 pairs=""
    local -A mrps mp50 mp99
    shift
    while read -r label r l50 l99; do
        mrps[$label]=$r mp50[$label]=$l50 mp99[$label]=$l99
    done < <(sort -k1,1 -k2,2g "$tmp/lruns" |
             awk '{ n[$1]++; line[$1, n[$1]] = $0 } END { for (k in n) print line[k, int((n[k] + 1) / 2)] }')
    echo
    echo "| case | req/s | against | req/s | ratio | goal | p50 ms | p99 ms |"
    echo "| - | -: | - | -: | -: | -: | -: | -: |"
    for row in "$@"; do
        IFS='|' read -r label a against b goal <<< "$row"
        echo "| $label | ${mrps[$a]:-failed} | $against | ${mrps[$b]:-failed}" \
             "| $(ratio "${mrps[$a]:-}" "${mrps[$b]:-}") | $goal | ${mp50[$a]:--} | ${mp99[$a]:--} |"
        pairs+="${pairs:+; }$label$(awk -v a="$a" -v b="$b" '
            $1 == a { x[++na] = $2 } $1 == b { y[++nb] = $2 }
            END { for (i = 1; i <= na && i <= nb; i++) if (y[i] > 0) printf " %.2f", x[i] / y[i] }' "$tmp/lruns")"
    done
    # each round's ratio, the two runs of a row taken in the same round
    echo
    echo "$name, round by round: $pairs"
}

layout_rows() {
    local round label lc
    start_extra_proxy layout "key layout" --layout-rules "$top/conf/layouts/botmesh-v1.rules" \
        --layout-prefix bench
    fill_chats "${tport[layout]}" 0
    fill_chats "${tport[direct]}" 1
    local -a lcases=(
        "set-plain-P1|layout|1|$requests|$clients|0|SET key:__rand_int__ xyz"
        "set-legacy-P1|layout|1|$requests|$clients|0|SET bench:lock:__rand_int__ xyz"
        "get-plain-P1|layout|1|$requests|$clients|0|GET key:__rand_int__"
        "get-legacy-P1|layout|1|$requests|$clients|0|GET bench:lock:__rand_int__"
        "set-plain-P16|layout|16|$requests16|$clients|0|SET key:__rand_int__ xyz"
        "set-legacy-P16|layout|16|$requests16|$clients|0|SET bench:lock:__rand_int__ xyz"
        "get-plain-P16|layout|16|$requests16|$clients|0|GET key:__rand_int__"
        "get-legacy-P16|layout|16|$requests16|$clients|0|GET bench:lock:__rand_int__"
        "set-indexed-P1|layout|1|$requests|$clients|0|SET bench:contact:__rand_int__ xyz"
        "set-indexed-P16|layout|16|$requests16|$clients|0|SET bench:contact:__rand_int__ xyz"
        "keys-chats-proxy|layout|1|$keys_requests|1|0|KEYS bench:chat:*"
        "keys-chats-direct|direct|1|$keys_requests|1|1|KEYS bench:chat:*"
    )
    : > "$tmp/lruns"
    for ((round = 1; round <= rounds; round++)); do
        if [ "$rounds" -gt 1 ]; then log "key layout rows: round $round of $rounds"; fi
        for lc in "${lcases[@]}"; do
            IFS='|' read -r label t pipe n c db cmd <<< "$lc"
            # shellcheck disable=SC2086 # the command is split into its words on purpose
            bench_cmd "$label" "$t" "$pipe" "$n" "$c" "$db" $cmd || log "$label failed"
        done
    done
    echo
    echo "Key layout: a proxy with conf/layouts/botmesh-v1.rules (prefix bench) on the same cluster;" \
         "$clients clients, -r $keyspace; KEYS: 1 client, $keys_requests calls over $chats chats;" \
         "median of $rounds rounds."
    runs_table "Key layout rows" \
        "SET -P 1 legacy name|set-legacy-P1|plain name|set-plain-P1|>= 0.9" \
        "GET -P 1 legacy name|get-legacy-P1|plain name|get-plain-P1|>= 0.9" \
        "SET -P 16 legacy name|set-legacy-P16|plain name|set-plain-P16|>= 0.9" \
        "GET -P 16 legacy name|get-legacy-P16|plain name|get-plain-P16|>= 0.9" \
        "SET -P 1 indexed record|set-indexed-P1|plain SET|set-plain-P1|-" \
        "SET -P 16 indexed record|set-indexed-P16|plain SET|set-plain-P16|-" \
        "KEYS bench:chat:* through the proxy|keys-chats-proxy|KEYS on redis-server|keys-chats-direct|>= 0.5"
}

# ---- ACL rows --------------------------------------------------------------

acl_rows() {
    local round label lc
    start_extra_proxy acl ACL --user bench benchpw '~key:*' '~other:*' allchannels +@all
    local -a acases=(
        "get-default-P1|1|$requests|GET key:__rand_int__"
        "get-patterns-P1|1|$requests|GET key:__rand_int__"
        "set-default-P16|16|$requests16|SET key:__rand_int__ xyz"
        "set-patterns-P16|16|$requests16|SET key:__rand_int__ xyz"
        "get-default-P16|16|$requests16|GET key:__rand_int__"
        "get-patterns-P16|16|$requests16|GET key:__rand_int__"
    )
    : > "$tmp/lruns"
    for ((round = 1; round <= rounds; round++)); do
        if [ "$rounds" -gt 1 ]; then log "ACL rows: round $round of $rounds"; fi
        for lc in "${acases[@]}"; do
            IFS='|' read -r label pipe n cmd <<< "$lc"
            bench_login=()
            case $label in *-patterns-*) bench_login=(--user bench -a benchpw) ;; esac
            # shellcheck disable=SC2086 # the command is split into its words on purpose
            bench_cmd "$label" acl "$pipe" "$n" "$clients" 0 $cmd || log "$label failed"
        done
    done
    bench_login=()
    echo
    echo "ACL: a proxy with user bench (~key:* ~other:* allchannels +@all) on the same cluster;" \
         "$clients clients, -r $keyspace; median of $rounds rounds."
    runs_table "ACL rows" \
        "GET -P 1 as a user with key patterns|get-patterns-P1|default user|get-default-P1|>= 0.95" \
        "GET -P 16 as a user with key patterns|get-patterns-P16|default user|get-default-P16|>= 0.95" \
        "SET -P 16 as a user with key patterns|set-patterns-P16|default user|set-default-P16|>= 0.95"
}

# ---- tracking rows -----------------------------------------------------------

# track_run LABEL TARGET PIPE N MODE: one trackload run (MODE track or
# plain); appends "LABEL rps p50 p99" to $tmp/lruns.
track_run() {
    local label=$1 t=$2 pipe=$3 n=$4 mode=$5 out
    if ! out=$(timeout "$run_timeout" "$top/build/bench/trackload" "${tport[$t]}" "$clients" \
                   "$pipe" "$n" "$keyspace" "$mode" 2> "$tmp/track.err"); then
        log "$label: trackload failed: $(tail -n 3 "$tmp/track.err" | tr '\n' ' ')"
        return 1
    fi
    echo "$label $out" >> "$tmp/lruns"
    log "$(printf '%-24s %10s req/s  p50 %s ms  p99 %s ms' "$label" $out)"
    if [ "$t" = tagproxy ] && [ "$mode" = track ]; then
        redis-cli -p "${tport[$t]}" INFO 2> /dev/null | tr -d '\r' > "$tmp/track.info"
    fi
    if [ "$t" != direct ]; then table_emptied "$t"; fi
}

# The proxy t's table lets go of the entries of the clients of the run
# just ended (a few thousand per round of its event loop, each INFO a
# round): the next run, tracking or not, does not pay for them.
table_emptied() {
    local t=$1 items i
    for ((i = 0; i < 3000; i++)); do
        items=$(redis-cli -p "${tport[$t]}" INFO 2> /dev/null | tr -d '\r' |
                sed -n 's/^tracking_total_items://p')
        [ "${items:-0}" -eq 0 ] && return 0
        sleep 0.01
    done
    log "$t: the table still holds $items entries"
}

tracking_rows() {
    local round tc label t pipe n mode
    [ -x "$top/build/bench/trackload" ] || die "build/bench/trackload is not built (make bench builds it)"
    if [ -z "$cluster_dir" ]; then start_cluster || die "${tnote[tagproxy]}"; fi
    if [ -z "${tport[tagproxy]:-}" ]; then start_extra_proxy tagproxy tracking; fi
    start_extra_proxy nodebcast "tracking-node-bcast" --tracking-node-bcast yes
    local -a tcases=(
        "proxy-plain-P1|tagproxy|1|$requests|plain" "proxy-track-P1|tagproxy|1|$requests|track"
        "nodebcast-track-P1|nodebcast|1|$requests|track"
        "direct-plain-P1|direct|1|$requests|plain" "direct-track-P1|direct|1|$requests|track"
        "proxy-plain-P16|tagproxy|16|$requests16|plain" "proxy-track-P16|tagproxy|16|$requests16|track"
        "nodebcast-track-P16|nodebcast|16|$requests16|track"
        "direct-plain-P16|direct|16|$requests16|plain" "direct-track-P16|direct|16|$requests16|track"
    )
    : > "$tmp/lruns"
    for ((round = 1; round <= rounds; round++)); do
        if [ "$rounds" -gt 1 ]; then log "tracking rows: round $round of $rounds"; fi
        for tc in "${tcases[@]}"; do
            IFS='|' read -r label t pipe n mode <<< "$tc"
            track_run "$label" "$t" "$pipe" "$n" "$mode" || log "$label failed"
        done
    done
    # the table as the last tracking run through tagproxy left it
    local info bytes keys items
    info=$(cat "$tmp/track.info" 2> /dev/null)
    bytes=$(sed -n 's/^tracking_table_bytes://p' <<< "$info")
    keys=$(sed -n 's/^tracking_total_keys://p' <<< "$info")
    items=$(sed -n 's/^tracking_total_items://p' <<< "$info")
    echo
    echo "Tracking: build/bench/trackload, $clients RESP3 clients (HELLO 3, and CLIENT TRACKING ON" \
         "for the tracking runs), GET of random keys key:0..$keyspace; median of $rounds rounds."
    runs_table "Tracking rows" \
        "GET -P 1 tracking, through the proxy|proxy-track-P1|not tracking|proxy-plain-P1|>= 0.9" \
        "GET -P 16 tracking, through the proxy|proxy-track-P16|not tracking|proxy-plain-P16|>= 0.9" \
        "GET -P 1 tracking, tracking-node-bcast yes|nodebcast-track-P1|not tracking|proxy-plain-P1|>= 0.9" \
        "GET -P 16 tracking, tracking-node-bcast yes|nodebcast-track-P16|not tracking|proxy-plain-P16|>= 0.9" \
        "GET -P 1 tracking, on redis-server|direct-track-P1|not tracking|direct-plain-P1|-" \
        "GET -P 16 tracking, on redis-server|direct-track-P16|not tracking|direct-plain-P16|-"
    if [ -n "$bytes" ] && [ "${keys:-0}" -gt 0 ] && [ "${items:-0}" -gt 0 ]; then
        echo
        echo "Tracking table after the last run: $keys keys, $items (key, client) entries," \
             "$bytes bytes: $((bytes / keys)) bytes per key, $((bytes / items)) per entry."
    fi
}

# ---- replica-acks rows -------------------------------------------------------

acks_rows() {
    local round label lc
    if [ "$replicas" -lt 1 ]; then
        log "replica-acks rows skipped: the cluster has no replicas (BENCH_ONLY=acks runs them)"
        return
    fi
    if [ -z "${tport[tagproxy]:-}" ]; then start_extra_proxy tagproxy plain; fi
    start_extra_proxy acks "replica-acks" --replica-acks 1 1000
    local -a kcases=(
        "set-plain-P1|tagproxy|1|$requests|SET key:__rand_int__ xyz"
        "set-acks-P1|acks|1|$requests|SET key:__rand_int__ xyz"
        "set-plain-P16|tagproxy|16|$requests16|SET key:__rand_int__ xyz"
        "set-acks-P16|acks|16|$requests16|SET key:__rand_int__ xyz"
        "get-plain-P16|tagproxy|16|$requests16|GET key:__rand_int__"
        "get-acks-P16|acks|16|$requests16|GET key:__rand_int__"
    )
    : > "$tmp/lruns"
    for ((round = 1; round <= rounds; round++)); do
        if [ "$rounds" -gt 1 ]; then log "replica-acks rows: round $round of $rounds"; fi
        for lc in "${kcases[@]}"; do
            IFS='|' read -r label t pipe n cmd <<< "$lc"
            # shellcheck disable=SC2086 # the command is split into its words on purpose
            bench_cmd "$label" "$t" "$pipe" "$n" "$clients" 0 $cmd || log "$label failed"
        done
    done
    echo
    echo "Replica-acks: a proxy with replica-acks 1 1000 on the same cluster (3 masters x" \
         "$replicas replicas); $clients clients, -r $keyspace; median of $rounds rounds."
    runs_table "Replica-acks rows" \
        "SET -P 1, replica-acks 1|set-acks-P1|without|set-plain-P1|-" \
        "SET -P 16, replica-acks 1|set-acks-P16|without|set-plain-P16|>= 0.7" \
        "GET -P 16, replica-acks 1|get-acks-P16|without|get-plain-P16|-"
    echo
    echo "WAITs sent by the replica-acks proxy: $(redis-cli -p "${tport[acks]}" INFO |
         sed -n 's/^replica_acks_waits:\([0-9]*\).*/\1/p'); writes answered short:" \
         "$(redis-cli -p "${tport[acks]}" INFO | sed -n 's/^replica_acks_short:\([0-9]*\).*/\1/p')."
}

# ---- read-from rows ----------------------------------------------------------

# readfrom_cmd LABEL TARGET PIPE N CMD...: bench_cmd, and the masters' CPU
# over the run, per request, appended as "LABEL ns" to $tmp/mcpu.
readfrom_cmd() {
    local label=$1 t=$2 pipe=$3 n=$4 m0 m1
    shift 4
    # shellcheck disable=SC2086 # a list of PIDs
    m0=$(cpu_ticks $cluster_masters) || return 1
    bench_cmd "$label" "$t" "$pipe" "$n" "$clients" 0 "$@" || return 1
    # shellcheck disable=SC2086
    m1=$(cpu_ticks $cluster_masters) || return 1
    awk -v l="$label" -v d=$((${m1% *} - ${m0% *})) -v t="$tck" -v n="$n" \
        'BEGIN { printf "%s %.0f\n", l, d * 1e9 / t / n }' >> "$tmp/mcpu"
}

readfrom_rows() {
    local round label lc t pipe n cmd
    if [ "$replicas" -lt 1 ]; then
        log "read-from rows skipped: the cluster has no replicas (BENCH_ONLY=acks runs them)"
        return
    fi
    if [ -z "${tport[tagproxy]:-}" ]; then start_extra_proxy tagproxy plain; fi
    start_extra_proxy readfrom "read-from" --read-from replica
    redis-cli -p "${tport[readfrom]}" GET key:0 > /dev/null     # its replicas asked from now on
    sleep 1
    local -a kcases=(
        "get-master-P1|tagproxy|1|$requests|GET key:__rand_int__"
        "get-replica-P1|readfrom|1|$requests|GET key:__rand_int__"
        "get-master-P16|tagproxy|16|$requests16|GET key:__rand_int__"
        "get-replica-P16|readfrom|16|$requests16|GET key:__rand_int__"
    )
    : > "$tmp/lruns"
    : > "$tmp/mcpu"
    for ((round = 1; round <= rounds; round++)); do
        if [ "$rounds" -gt 1 ]; then log "read-from rows: round $round of $rounds"; fi
        for lc in "${kcases[@]}"; do
            IFS='|' read -r label t pipe n cmd <<< "$lc"
            # shellcheck disable=SC2086 # the command is split into its words on purpose
            readfrom_cmd "$label" "$t" "$pipe" "$n" $cmd || log "$label failed"
        done
    done
    echo
    echo "Read-from: a proxy with read-from replica on the same cluster (3 masters x" \
         "$replicas replicas); $clients clients, -r $keyspace; median of $rounds rounds."
    runs_table "Read-from rows" \
        "GET -P 1, read-from replica|get-replica-P1|read-from master|get-master-P1|-" \
        "GET -P 16, read-from replica|get-replica-P16|read-from master|get-master-P16|-"
    echo
    echo "The masters' CPU per GET, in ns (median of the rounds):"
    echo
    echo "| pipeline | read-from master | read-from replica |"
    echo "| -: | -: | -: |"
    sort -k1,1 -k2,2g "$tmp/mcpu" |
        awk '{ n[$1]++; v[$1, n[$1]] = $2 }
             END { for (k in n) m[k] = v[k, int((n[k] + 1) / 2)]
                   printf "| 1 | %s | %s |\n| 16 | %s | %s |\n", m["get-master-P1"],
                          m["get-replica-P1"], m["get-master-P16"], m["get-replica-P16"] }'
    echo
    echo "Reads the read-from proxy sent to replicas: $(redis-cli -p "${tport[readfrom]}" INFO |
         sed -n 's/^reads_replica:\([0-9]*\).*/\1/p'), to masters: $(redis-cli -p "${tport[readfrom]}" INFO |
         sed -n 's/^reads_master:\([0-9]*\).*/\1/p')."
}

cd "$top"
start_direct
if [ -z "$only" ]; then standard_rows; fi
if [ -z "$only" ] || [ "$only" = layout ]; then layout_rows; fi
if [ -z "$only" ] || [ "$only" = acl ]; then acl_rows; fi
if [ -z "$only" ] || [ "$only" = tracking ]; then tracking_rows; fi
if [ -z "$only" ] || [ "$only" = acks ]; then acks_rows; readfrom_rows; fi
