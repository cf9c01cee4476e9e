#include "cluster/backoff.h"

int backoff_delay_ms(int attempt, int base_ms, int max_ms)
{
    long delay = base_ms > 0 ? base_ms : 0;
    for (int i = 0; i < attempt && delay < max_ms; i++)
        delay *= 2;
    return (int)(delay < max_ms ? delay : max_ms);
}

long backoff_total_ms(int attempts, int base_ms, int max_ms)
{
    long total = 0;
    for (int i = 0; i < attempts; i++)
        total += backoff_delay_ms(i, base_ms, max_ms);
    return total;
}
