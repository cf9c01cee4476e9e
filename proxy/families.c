/*
 * families: every command family registers its routes. See families.h.
 */
#include "proxy/families.h"

#include "proxy/clientcmd.h"
#include "proxy/clustercmd.h"
#include "proxy/commandcmd.h"
#include "proxy/dedicated.h"
#include "proxy/index.h"
#include "proxy/info.h"
#include "proxy/listing.h"
#include "proxy/local.h"
#include "proxy/monitor.h"
#include "proxy/pubsub.h"
#include "proxy/route.h"
#include "proxy/router.h"
#include "proxy/scriptcmd.h"
#include "proxy/tx.h"

int families_init(void)
{
    if (route_init() < 0)
        return -1;
    router_init();
    local_register();
    clientcmd_register();
    commandcmd_register();
    clustercmd_register();
    info_register();
    monitor_register();     /* before pubsub: a closing client stops monitoring first */
    tx_register();
    pubsub_register();
    scriptcmd_register();
    dedicated_register();
    listing_register();
    index_init();
    return 0;
}
