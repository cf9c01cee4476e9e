/*
 * families: every command family registers its routes. See families.h.
 */
#include "proxy/families/families.h"

#include "proxy/core/route.h"
#include "proxy/core/router.h"
#include "proxy/families/aclcmd.h"
#include "proxy/families/clientcmd.h"
#include "proxy/families/clustercmd.h"
#include "proxy/families/commandcmd.h"
#include "proxy/families/dedicated.h"
#include "proxy/families/index.h"
#include "proxy/families/configcmd.h"
#include "proxy/families/info.h"
#include "proxy/families/listing.h"
#include "proxy/families/local.h"
#include "proxy/families/monitor.h"
#include "proxy/families/pubsub.h"
#include "proxy/families/scriptcmd.h"
#include "proxy/families/slowlogcmd.h"
#include "proxy/families/tracking.h"
#include "proxy/families/tx.h"

int families_init(void)
{
    if (route_init() < 0)
        return -1;
    router_init();
    local_register();
    clientcmd_register();
    tracking_register();
    aclcmd_register();
    commandcmd_register();
    clustercmd_register();
    info_register();
    configcmd_register();
    slowlogcmd_register();
    monitor_register();     /* before pubsub: a closing client stops monitoring first */
    tx_register();
    pubsub_register();
    scriptcmd_register();
    dedicated_register();
    listing_register();
    index_init();
    return 0;
}
