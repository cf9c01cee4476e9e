#!/usr/bin/env bash
# tagproxy-healthcheck [HOST:PORT]: exit 0 when GET /healthz on the admin
# listener answers 200, else 1. The address defaults to $TAGPROXY_ADMIN_LISTEN
# (a wildcard host asked on 127.0.0.1), else 127.0.0.1:8380. Needs only bash
# (its /dev/tcp), so it runs in the slim runtime image, which has no curl:
# docker/Dockerfile's HEALTHCHECK. Gives up after 2 seconds.
addr=${1:-${TAGPROXY_ADMIN_LISTEN:-127.0.0.1:8380}}
host=${addr%:*} port=${addr##*:}
host=${host#[} host=${host%]}
case $host in 0.0.0.0|"") host=127.0.0.1 ;; ::) host=::1 ;; esac
{ exec 3<>"/dev/tcp/$host/$port"; } 2>/dev/null || exit 1
printf 'GET /healthz HTTP/1.0\r\nHost: %s\r\n\r\n' "$host" >&3
IFS= read -r -t 2 status <&3 || exit 1
case $status in
    "HTTP/1."?" 200 "*) exit 0 ;;
    *) exit 1 ;;
esac
