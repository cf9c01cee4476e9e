/*
 * families: every command family registers its routes. See families.h.
 */
#include "families/families.h"

#include "core/route.h"
#include "core/router.h"
#include "families/aclcmd.h"
#include "families/clientcmd.h"
#include "families/clustercmd.h"
#include "families/commandcmd.h"
#include "families/dedicated.h"
#include "families/index.h"
#include "families/configcmd.h"
#include "families/info.h"
#include "families/listing.h"
#include "families/local.h"
#include "families/monitor.h"
#include "families/pubsub.h"
#include "families/scriptcmd.h"
#include "families/slowlogcmd.h"
#include "families/tx.h"

int families_init(void)
{
    if (route_init() < 0)
        return -1;
    router_init();
    local_register();
    clientcmd_register();
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
