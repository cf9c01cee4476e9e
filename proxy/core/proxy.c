/*
 * proxy: the process's shared state. See proxy.h.
 */
#include "proxy/core/proxy.h"

#include <event2/event.h>

struct proxy *proxy_instance;

void proxy_want_refresh(struct proxy *p)
{
    event_active(p->refresh_event, EV_TIMEOUT, 0);
}

int proxy_draining(void)
{
    return proxy_instance && __atomic_load_n(&proxy_instance->draining, __ATOMIC_RELAXED);
}
