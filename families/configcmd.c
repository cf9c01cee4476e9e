/*
 * configcmd: CONFIG SET. See configcmd.h.
 */
#include "families/configcmd.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "core/request.h"
#include "families/aclcmd.h"
#include "proto/resp.h"
#include "core/route.h"
#include "core/router.h"
#include "core/worker.h"

/* Redis's settings whose meaning, through the proxy, is the proxy's: what
 * it checks and limits for its own clients, and how they reach it; the
 * directive of the proxy's config that says it (NULL: the proxy has none),
 * and whether a change of it needs a restart. */
static const struct {
    const char *setting, *directive;
    int restart;
} proxy_settings[] = {
    { "maxclients", "max-clients", 0 },
    { "timeout", NULL, 0 },
    { "tcp-keepalive", NULL, 0 },
    { "client-output-buffer-limit", "client-output-buffer-limit", 0 },
    { "client-query-buffer-limit", "client-query-buffer-limit", 0 },
    { "proto-max-bulk-len", "proto-max-bulk-len", 0 },
    { "maxmemory-clients", "maxmemory-clients", 0 },
    { "port", "listen", 1 },
    { "bind", "listen", 1 },
    { "unixsocket", "unixsocket", 1 },
    { "unixsocketperm", "unixsocketperm", 1 },
};

/* CONFIG SET requirepass pass: the proxy's default user's password, as
 * Redis sets it; alone (its password never reaches the nodes). */
static void set_requirepass(struct request *r)
{
    size_t len;
    const char *pass = request_arg(r, 3, &len);
    if (r->argc != 4) {
        request_fail(r, "ERR CONFIG SET requirepass through the proxy sets the proxy's own "
                        "password (the nodes' would lock the proxy out of its cluster): set "
                        "it alone, in a CONFIG SET of its own");
        return;
    }
    if (memchr(pass, '\0', len)) {
        request_fail(r, "ERR CONFIG SET failed (possibly related to argument 'requirepass') - "
                        "the password may not hold a NUL byte");
        return;
    }
    if (aclcmd_set_requirepass(r, pass, len) == 0) {
        resp_add_simple(request_out(r), "OK");
        request_finish(r);
    }
}

/* CONFIG SET setting value [setting value ...]: requirepass is the
 * proxy's own; refused whole when another setting is the proxy's (as Redis
 * refuses a whole CONFIG SET with a bad one), else to every master. */
static void config_set(struct request *r)
{
    char msg[500], where[160];
    if (!r->worker->cfg->enable_dangerous_commands) {
        router_plan_dangerous(r, 1);        /* refused, saying why */
        return;
    }
    for (int i = 2; i < r->argc; i += 2)
        if (request_arg_is(r, i, "requirepass")) {
            set_requirepass(r);
            return;
        }
    for (int i = 2; i < r->argc; i += 2)
        for (size_t k = 0; k < sizeof proxy_settings / sizeof proxy_settings[0]; k++) {
            if (!request_arg_is(r, i, proxy_settings[k].setting))
                continue;
            const char *directive = proxy_settings[k].directive;
            if (directive)
                snprintf(where, sizeof where, "set %s in the proxy's config and %s", directive,
                         proxy_settings[k].restart ? "restart it" : "reload it (SIGHUP)");
            else
                snprintf(where, sizeof where, "the proxy has no such setting");
            snprintf(msg, sizeof msg, "ERR CONFIG SET %s is refused through the proxy: the proxy "
                     "serves its clients itself, and on the cluster's nodes it would apply to "
                     "the proxy's own connections; %s, and the nodes' own on the nodes",
                     proxy_settings[k].setting, where);
            request_fail(r, msg);
            return;
        }
    router_plan_dangerous(r, 1);
}

static const struct route_entry configcmd_routes[] = {
    { "config|set", { .plan = ROUTE_FAMILY, .run = config_set, .in_multi = TXC_OTHER,
                      .keyless = 1 } },
};

void configcmd_register(void)
{
    route_register(configcmd_routes, (int)(sizeof configcmd_routes / sizeof configcmd_routes[0]));
}
