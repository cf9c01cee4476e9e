/*
 * backoff: how long to wait before retry number n of a command that the
 * cluster answered with TRYAGAIN, CLUSTERDOWN or too many redirects.
 * Exponential from base_ms, doubling, capped at max_ms. With the defaults
 * (base 10, max 500, 10 attempts) the waits are 10 20 40 80 160 320 500 500
 * 500 500: 2630 ms in all.
 */
#ifndef TAGPROXY_BACKOFF_H
#define TAGPROXY_BACKOFF_H

/* Delay before retry `attempt` (0 for the first retry). */
int backoff_delay_ms(int attempt, int base_ms, int max_ms);

/* Sum of the delays of `attempts` retries. */
long backoff_total_ms(int attempts, int base_ms, int max_ms);

#endif
