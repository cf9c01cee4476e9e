#!/usr/bin/env bash
# `make test`: scripts/test.sh [--unit-only] [UNIT_TEST_BINARY...]
#
# 1. Runs the unit test binaries given as arguments, and
#    scripts/check-docs.py (the rules syntax alike in docs/key-layouts.md
#    and in every conf/layouts/*.rules header; every link of README.md and
#    docs/*.md resolving inside the repository) and scripts/check-layers.py (every
#    #include of the daemon points down its layers, scripts/layers).
# 2. Unless --unit-only: starts its own 3+3 Redis Cluster of redis-server
#    (scripts/cluster.sh) on free ports (base in 20000-29000, each port and port+10000 free) in a
#    temporary folder, and build/tagproxy on another free port (its log in
#    that folder, its tail printed when a test fails), its admin endpoint on
#    a third free port; runs every build/tests/integration/test_* with
#      TAGPROXY_TEST_PROXY=127.0.0.1:PORT   TAGPROXY_TEST_NODES="127.0.0.1:P ..."
#      TAGPROXY_TEST_BIN=$PWD/build/tagproxy TAGPROXY_TEST_DIR=<the folder>
#      TAGPROXY_TEST_ADMIN=127.0.0.1:APORT  (the proxy's admin-listen)
#      TAGPROXY_ADMIN_LISTEN=off            (so the extra proxies tests start
#                                            never fight over the default port)
#    then the end-to-end tests (node --test in tests/e2e, REDIS_URL pointing
#    at the proxy, REDIS_UNIX_SOCKET at its unixsocket, <the folder>/
#    tagproxy.sock) when tests/e2e/package.json exists; then restarts the
#    proxy with `--io-uring no` (and TAGPROXY_IO_URING=no for the proxies
#    tests start) and runs the socket-heavy tests (FALLBACK_TESTS) again.
#    Then the Valkey pass: a second 3+3 cluster, of valkey-server, and a
#    proxy in front of it, for the tests of commands and the handshake
#    (VALKEY_TESTS), with TAGPROXY_TEST_SERVER=valkey-server.
#    Once the cluster is up, first: scripts/check-deploy.py, the deployment
#    files (docker/) checked against the binary and the release build (run
#    on the cluster).
# 3. Stops the proxy and the cluster by PID and removes the folder, whatever
#    happens. Touches no Redis it did not start.
# 4. Runs the fault suite's short form, build/tests/chaos/chaos --short
#    (tests/chaos/chaos.h): its own 3+3 cluster and proxy, every fault once.
# 5. Runs the soak for two minutes, SOAK_MINUTES=2 build/tests/soak/soak
#    (tests/soak/soak.c): its own 3+3 cluster and proxy, its table and plot
#    in build/soak.
#
# TESTS="pipeline storm" (make test TESTS=...) runs only those integration
# tests (build/tests/integration/test_NAME), in every pass that has them, and no unit or e2e
# test: for working on a few tests at a time; TESTS=chaos the fault suite,
# TESTS=soak the two-minute soak.
#
# Counts test binaries and suites; prints the ten slowest ("slowest:"), the
# checks skipped (a test that cannot run one here appends "NAME: why" to
# $TAGPROXY_SKIP_FILE), the failures, and last "tests: N passed, N failed,
# N skipped"; the exit status is 0 only if nothing failed (a TESTS name
# that is no test fails).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh

unit_only=0
units=()
for a in "$@"; do
    case $a in
        --unit-only) unit_only=1 ;;
        -h|--help) sed -n '2,/^set /s/^# \{0,1\}//p' "$0"; exit 0 ;;
        *) units+=("$a") ;;
    esac
done

passed=0 failed=0 failures=() timings=()
started_ms=0
# A test begins: its name on a line of its own, and the clock for record.
begin() {   # begin LINE
    echo "$1"
    started_ms=$(date +%s%3N)
}
record() {   # record NAME STATUS [WHY]
    [ "$started_ms" -gt 0 ] && timings+=("$(( $(date +%s%3N) - started_ms )) $1")
    started_ms=0
    if [ "$2" -eq 0 ]; then
        passed=$((passed + 1))
    else
        failed=$((failed + 1))
        failures+=("$1${3:+
$3}")
    fi
}

# The lines of a test's output that say what failed (Check's "file:line:F:"
# and ":E:" lines, at most 10), repeated in the summary: a CI log is often
# read from its end only.
failure_lines() {   # failure_lines OUTPUT_FILE
    grep -E '^[^ ]+:[0-9]+:[FE]:' "$1" 2>/dev/null | head -n 10 | sed 's/^/    /'
}

# A test that cannot run a check here (io_uring refused) appends a line
# "NAME: why" to $TAGPROXY_SKIP_FILE and passes; the summary counts them.
skip_file=$(mktemp "${TMPDIR:-/tmp}/tagproxy-skips.XXXXXX")
trap 'rm -f "$skip_file"' EXIT

summary() {
    local f skipped
    skipped=$(grep -c . "$skip_file" 2>/dev/null || true)
    if [ ${#timings[@]} -gt 0 ]; then
        echo "slowest:"
        printf '%s\n' "${timings[@]}" | sort -rn | head -n 10 |
            awk '{ ms = $1; $1 = ""; printf "  %7.1f s %s\n", ms / 1000, $0 }'
    fi
    sed 's/^/SKIPPED: /' "$skip_file" 2>/dev/null
    for f in "${failures[@]}"; do echo "FAILED: $f"; done
    echo "tests: $passed passed, $failed failed, ${skipped:-0} skipped"
    rm -f "$skip_file"
}

# The proxy and the tests must not pick up directives from the caller's
# environment (TAGPROXY_LISTEN, TAGPROXY_REQUIREPASS, ...). TAGPROXY_*_SEED
# (TAGPROXY_STORM_SEED, TAGPROXY_DIFF_SEED, ...) is no directive but a random
# test's input, given to replay a failure: it stays.
clean_env=()
for v in $(compgen -e | grep '^TAGPROXY_' | grep -v '^TAGPROXY_[A-Z0-9]*_SEED$' || true); do
    clean_env+=(-u "$v")
done
clean_env+=(TAGPROXY_SKIP_FILE="$skip_file")

only=(${TESTS:-})
# A name that is no test is an error, not an empty run.
for name in "${only[@]}"; do
    if [ "$name" != chaos ] && [ "$name" != soak ] && [ ! -f "tests/integration/test_$name.c" ]; then
        log "no integration test named '$name' (tests/integration/test_$name.c)"
        record "TESTS=$name" 1 "    no such test"
    fi
done
[ "$failed" -gt 0 ] && { summary; exit 1; }
want_chaos=$(( ${#only[@]} == 0 )) want_soak=$(( ${#only[@]} == 0 ))
for own in chaos soak; do
    if printf '%s\n' "${only[@]}" | grep -qx $own; then
        eval "want_$own=1"
        only=($(printf '%s\n' "${only[@]}" | grep -vx $own || true))
        [ ${#only[@]} -eq 0 ] && unit_only=1 units=()
    fi
done
# The suites with a cluster of their own: the fault suite's short form and
# the two-minute soak.
run_chaos() {
    if [ "$want_chaos" = 1 ]; then
        begin "== chaos: build/tests/chaos/chaos --short"
        env "${clean_env[@]}" build/tests/chaos/chaos --short
        record "build/tests/chaos/chaos --short" $?
    fi
    if [ "$want_soak" = 1 ]; then
        begin "== soak: SOAK_MINUTES=2 build/tests/soak/soak"
        env "${clean_env[@]}" SOAK_MINUTES=2 build/tests/soak/soak
        record "build/tests/soak/soak (2 minutes)" $?
    fi
}
[ ${#only[@]} -gt 0 ] && units=()
for u in "${units[@]}"; do
    begin "== unit: $u"
    env "${clean_env[@]}" "$u"
    record "$u" $?
done
if [ ${#only[@]} -eq 0 ]; then
    begin "== docs: scripts/check-docs.py"
    python3 scripts/check-docs.py
    record "scripts/check-docs.py" $?
    begin "== layers: scripts/check-layers.py"
    python3 scripts/check-layers.py
    record "scripts/check-layers.py" $?
fi

if [ "$unit_only" = 1 ]; then
    [ ${#units[@]} -eq 0 ] && run_chaos
    summary
    [ "$failed" -eq 0 ]
    exit
fi

bin=$PWD/build/tagproxy
dir= proxy_pid= proxy_port= admin_port= base=

# Processes started by tests (extra proxies) have their output in $dir:
# whatever still writes there at the end is ours to stop.
stop_leftovers() {
    local fd pid target
    [ -n "$dir" ] && [ -d "$dir" ] || return 0
    for fd in /proc/[0-9]*/fd/1; do
        target=$(readlink "$fd" 2>/dev/null) || continue
        case $target in
            "$dir"/*)
                pid=${fd#/proc/}; pid=${pid%%/*}
                if pid_matches "$pid" tagproxy; then
                    log "stopping leftover proxy $pid"
                    stop_pid "$pid" 3 || true
                fi
                ;;
        esac
    done
}

# Stops the proxy, what tests left running and the cluster; removes the folder.
stop_pass() {
    if [ -n "$proxy_pid" ]; then stop_pid "$proxy_pid" 5 || true; fi
    stop_leftovers
    if [ -n "$dir" ] && [ -d "$dir" ]; then
        scripts/cluster.sh stop --dir "$dir" >/dev/null 2>&1 || true
        rm -rf "$dir"
    fi
    proxy_pid= dir=
}

cleanup() {
    trap - EXIT INT TERM
    stop_pass
    rm -f "$skip_file"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# A base port whose 6 ports and their bus ports (+10000) are free. Bases
# whose bus ports stay below the kernel's ephemeral range are preferred, so
# that no outgoing connection can take one meanwhile.
pick_base() {
    local b i ok lo hi=28990
    lo=$(awk '{ print $1 }' /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)
    [ $((lo - 10006)) -gt 20100 ] && hi=$((lo - 10006))
    [ "$hi" -gt 28990 ] && hi=28990
    for ((i = 0; i < 200; i++)); do
        b=$((20000 + RANDOM % (hi - 20000)))
        ok=1
        for ((p = b; p < b + 6; p++)); do
            ports_free "$p" $((p + 10000)) || { ok=0; break; }
        done
        [ "$ok" = 1 ] && { echo "$b"; return 0; }
    done
    return 1
}

pick_proxy_port() {
    local p i
    for ((i = 0; i < 200; i++)); do
        p=$((20000 + RANDOM % 9000))
        if [ "$p" -ge "$base" ] && [ "$p" -lt $((base + 6)) ]; then continue; fi
        ports_free "$p" && { echo "$p"; return 0; }
    done
    return 1
}

start_cluster() {   # start_cluster SERVER (redis-server, valkey-server)
    local attempt
    for attempt in 1 2 3; do
        base=$(pick_base) || { log "no free base port"; return 1; }
        dir=$(mktemp -d "${TMPDIR:-/tmp}/tagproxy-test.XXXXXX")
        echo "== cluster: $1 on 127.0.0.1:$base-$((base + 5)) in $dir"
        # a long cluster-node-timeout: test_pause freezes a master for seconds
        # and must not cause a failover
        if scripts/cluster.sh start --base-port "$base" --dir "$dir" --node-timeout 30000 \
               --server "$1" >/dev/null; then
            nodes=""
            for ((i = 0; i < 6; i++)); do nodes+="${nodes:+ }127.0.0.1:$((base + i))"; done
            return 0
        fi
        rm -rf "$dir"   # (cluster.sh already stopped what it started)
        dir=
        log "cluster start failed (attempt $attempt)"
    done
    return 1
}

# GLIDE's core makes its socket in /tmp (glide-socket-PID-UUID.sock) whatever
# TMPDIR says, and leaves it: the ones a run made, whose process has ended,
# are removed after it.
glide_sockets() {
    ls /tmp/glide-socket-*.sock 2>/dev/null | sort
}

glide_sockets_remove_new() {   # glide_sockets_remove_new BEFORE
    local s pid
    for s in $(comm -13 <(printf '%s\n' "$1") <(glide_sockets)); do
        pid=${s#/tmp/glide-socket-}
        pid=${pid%%-*}
        [ -S "$s" ] && ! kill -0 "$pid" 2>/dev/null && rm -f "$s"
    done
    return 0
}

proxy_log_tail() {
    [ -f "$dir/proxy.log" ] || return 0
    echo "--- last lines of the proxy's log ($dir/proxy.log):"
    tail -n 40 "$dir/proxy.log"
    echo "---"
}

start_proxy() {
    local i seeds=()
    for ((i = 0; i < 6; i++)); do seeds+=("127.0.0.1:$((base + i))"); done
    proxy_port=$(pick_proxy_port) || { log "no free proxy port"; return 1; }
    for ((i = 0; i < 20; i++)); do
        admin_port=$(pick_proxy_port) || { log "no free admin port"; return 1; }
        [ "$admin_port" != "$proxy_port" ] && break
    done
    echo "== proxy: $bin on 127.0.0.1:$proxy_port (admin 127.0.0.1:$admin_port)"
    env "${clean_env[@]}" "$bin" --listen "127.0.0.1:$proxy_port" --cluster "${seeds[@]}" \
        --admin-listen "127.0.0.1:$admin_port" --unixsocket "$dir/tagproxy.sock" \
        "${proxy_args[@]}" >> "$dir/proxy.log" 2>&1 &
    proxy_pid=$!
    for ((i = 0; i < 200; i++)); do
        redis_ping "$proxy_port" && return 0
        pid_alive "$proxy_pid" || break
        sleep 0.1
    done
    log "the proxy does not answer PING"
    proxy_log_tail
    stop_pid "$proxy_pid" 3 || true
    proxy_pid=
    return 1
}

if [ ! -x "$bin" ]; then
    log "$bin is missing; run make"
    record "build/tagproxy" 1
    summary
    exit 1
fi
if ! start_cluster redis-server; then
    record "cluster start" 1
    summary
    exit 1
fi

proxy_args=() proxy_env=()

set_test_env() {
    test_env=("${clean_env[@]}" "${proxy_env[@]}" TAGPROXY_TEST_PROXY="127.0.0.1:$proxy_port"
              TAGPROXY_TEST_NODES="$nodes" TAGPROXY_TEST_BIN="$bin" TAGPROXY_TEST_DIR="$dir"
              TAGPROXY_TEST_ADMIN="127.0.0.1:$admin_port" TAGPROXY_ADMIN_LISTEN=off)
}

# The deployment files against the binary and the release build, which
# also runs against the cluster (no container engine needed).
begin "== deploy: scripts/check-deploy.py"
env "${clean_env[@]}" python3 scripts/check-deploy.py "$PWD/build/tagproxy" "127.0.0.1:$base"
record "scripts/check-deploy.py" $?

# run_integration LABEL TEST...: each test binary against the running proxy
# (restarted when a test leaves it dead).
run_integration() {
    local label=$1 t rc
    shift
    for t in "$@"; do
        [ -x "$t" ] && [ -f "$t" ] || continue
        case ${t##*/} in *.*) continue ;; esac
        begin "== integration$label: $t"
        env "${test_env[@]}" "$t" 2>&1 | tee "$dir/test-output"
        rc=${PIPESTATUS[0]}
        if ! pid_alive "$proxy_pid"; then
            echo "the proxy exited during $t"
            rc=1
        fi
        [ "$rc" -ne 0 ] && proxy_log_tail
        record "$t$label" "$rc" "$(failure_lines "$dir/test-output")"
        if ! pid_alive "$proxy_pid"; then
            start_proxy || return 1
            set_test_env
        fi
    done
}

# The socket layer without io_uring (io-uring no: one read and one write call
# per socket, as where the kernel or a seccomp profile refuses io_uring),
# for the tests that lean on it hardest.
FALLBACK_TESTS=(pipeline protocol backpressure batching storm multikey blocking pubsub tls hostile_args)

if start_proxy; then
    set_test_env
    if [ ${#only[@]} -gt 0 ]; then
        run_integration "" "${only[@]/#/build/tests/integration/test_}"
        FALLBACK_TESTS=($(printf '%s\n' "${FALLBACK_TESTS[@]}" | grep -xF "${only[@]/#/-e}" || true))
    else
        run_integration "" build/tests/integration/test_*
    fi

    if [ -f tests/e2e/package.json ] && [ ${#only[@]} -eq 0 ]; then
        begin "== e2e: node --test in tests/e2e"
        if [ ! -d tests/e2e/node_modules ]; then
            log "tests/e2e/node_modules is missing; run make deps"
            rc=1
        else
            glide_before=$(glide_sockets)
            (cd tests/e2e && env "${test_env[@]}" REDIS_URL="redis://127.0.0.1:$proxy_port" \
                 REDIS_UNIX_SOCKET="$dir/tagproxy.sock" node --test)
            rc=$?
            glide_sockets_remove_new "$glide_before"
        fi
        [ "$rc" -ne 0 ] && proxy_log_tail
        record "tests/e2e" "$rc"
    fi

    stop_pid "$proxy_pid" 5 || true
    proxy_pid=
    proxy_args=(--io-uring no) proxy_env=(TAGPROXY_IO_URING=no)
    if [ ${#FALLBACK_TESTS[@]} -eq 0 ]; then
        :
    elif start_proxy; then
        set_test_env
        run_integration " (io-uring no)" "${FALLBACK_TESTS[@]/#/build/tests/integration/test_}"
    else
        record "proxy start (io-uring no)" 1
    fi
else
    record "proxy start" 1
fi
stop_pass

# The Valkey pass: the tests of commands and the handshake again on a
# cluster of valkey-server (Valkey 8: Redis 7.2's commands and Valkey's
# own), their standalone server to compare with a valkey-server too
# (TAGPROXY_TEST_SERVER, tests/integration/harness.h).
VALKEY_TESTS=(every_command commands differential resp3 local tx layout layout_session tracking read_from)
if [ ${#only[@]} -gt 0 ]; then
    VALKEY_TESTS=($(printf '%s\n' "${VALKEY_TESTS[@]}" | grep -xF "${only[@]/#/-e}" || true))
fi
if [ ${#VALKEY_TESTS[@]} -gt 0 ]; then
    if ! command -v valkey-server >/dev/null; then
        log "valkey-server is missing; run make deps"
        record "valkey-server" 1
    elif ! start_cluster valkey-server; then
        record "cluster start (valkey)" 1
    else
        proxy_args=() proxy_env=(TAGPROXY_TEST_SERVER=valkey-server)
        if start_proxy; then
            set_test_env
            run_integration " (valkey)" "${VALKEY_TESTS[@]/#/build/tests/integration/test_}"
        else
            record "proxy start (valkey)" 1
        fi
    fi
    stop_pass
fi

# The fault suite's short form (tests/chaos; make chaos runs it whole), on
# a cluster of its own once the one above is gone: one repetition of each
# fault under a smaller verified workload; then the two-minute soak.
run_chaos
summary
[ "$failed" -eq 0 ]
