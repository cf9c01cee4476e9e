# Shared helpers for scripts/*.sh. Source it; it defines functions (and the
# state of pick_port: the ports it handed out).
# Needs bash and redis-cli; reads /proc, so Linux only.

log() { printf '%s: %s\n' "${0##*/}" "$*" >&2; }
die() { log "$*"; exit 1; }

# port_busy PORT: true if some TCP socket (IPv4 or IPv6) has PORT as its
# local port: a listener, or a connection using it as its ephemeral port
# (bind fails on those too). TIME_WAIT does not count: redis-server binds
# with SO_REUSEADDR. Read from /proc so that nothing else need be installed.
port_busy() {
    local hex f
    hex=$(printf '%04X' "$1")
    for f in /proc/net/tcp /proc/net/tcp6; do
        [ -r "$f" ] || continue
        # local_address is field 2 (ADDR:PORT in hex), st is field 4; 06 = TIME_WAIT
        if awk -v p="$hex" 'NR > 1 { n = split($2, a, ":"); if (a[n] == p && $4 != "06") f = 1 }
                            END { exit !f }' "$f"; then
            return 0
        fi
    done
    return 1
}

# ports_free PORT...: true if none of the ports is busy.
ports_free() {
    local p
    for p in "$@"; do
        port_busy "$p" && return 1
    done
    return 0
}

# redis_ping PORT: true if 127.0.0.1:PORT answers PING with PONG.
redis_ping() {
    [ "$(redis-cli -h 127.0.0.1 -p "$1" ping 2>/dev/null)" = PONG ]
}

# pid_alive PID: true if PID runs (and is not a zombie).
pid_alive() {
    local state
    [ -n "$1" ] && [ -r "/proc/$1/stat" ] || return 1
    state=$(awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null) || return 1
    [ -n "$state" ] && [ "$state" != Z ]
}

# pid_matches PID WORD: true if PID runs and its command line contains WORD.
# Guards every kill against a PID reused by some unrelated process.
pid_matches() {
    pid_alive "$1" || return 1
    tr '\0' ' ' < "/proc/$1/cmdline" 2>/dev/null | grep -qF -- "$2"
}

# stop_pid PID [WAIT_S]: SIGTERM, then SIGKILL if still alive after WAIT_S
# seconds (default 5). Returns once the process is gone.
stop_pid() {
    local pid=$1 wait_s=${2:-5} i
    pid_alive "$pid" || return 0
    kill -TERM "$pid" 2>/dev/null || true
    for ((i = 0; i < wait_s * 10; i++)); do
        pid_alive "$pid" || return 0
        sleep 0.1
    done
    kill -KILL "$pid" 2>/dev/null || true
    for ((i = 0; i < 50; i++)); do
        pid_alive "$pid" || return 0
        sleep 0.1
    done
    log "process $pid did not exit"
    return 1
}

# ---- free ports for the scripts' own servers --------------------------------

reserved=" "
# Ports and their +10000 cluster-bus ports are taken below the kernel's
# ephemeral range, where an outgoing connection may hold a port that has no
# listener and make a bind fail.
ephemeral_low=$(awk '{ print $1 }' /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)
port_span=$((ephemeral_low - 10000 - 10 - 10000))
[ "$port_span" -gt 100 ] || port_span=10000

# pick_port VAR [COUNT]: COUNT consecutive free ports (and their +10000
# cluster-bus ports), none handed out before in this run; the first in VAR.
pick_port() {
    local var=$1 count=${2:-1} try p i q ok
    for ((try = 0; try < 500; try++)); do
        p=$((10000 + RANDOM % port_span))
        ok=1
        for ((i = 0; i < count; i++)); do
            q=$((p + i))
            case $reserved in *" $q "* | *" $((q + 10000)) "*) ok=0 ;; esac
            if [ $ok = 0 ] || ! ports_free "$q" $((q + 10000)); then ok=0; break; fi
        done
        if [ $ok = 1 ]; then
            for ((i = 0; i < count; i++)); do
                reserved+="$((p + i)) $((p + i + 10000)) "
            done
            printf -v "$var" %s "$p"
            return 0
        fi
    done
    die "no free ports found"
}

# wait_ready PORT PID SECONDS: true once PORT answers PING with PONG, false if
# PID exits or SECONDS pass first.
wait_ready() {
    local port=$1 pid=$2 i
    for ((i = 0; i < $3 * 10; i++)); do
        redis_ping "$port" && return 0
        pid_alive "$pid" || return 1
        sleep 0.1
    done
    return 1
}

