/*
 * clustercmd: CLUSTER INFO, SLOTS, SHARDS, NODES, MYID, KEYSLOT and HELP,
 * answered as a one-node cluster that owns every slot. See clustercmd.h.
 */
#include "proxy/families/clustercmd.h"

#include <event2/buffer.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cluster/slot.h"
#include "cluster/topology.h"
#include "proxy/core/client.h"
#include "proxy/core/proxy.h"
#include "proxy/core/request.h"
#include "proxy/core/route.h"
#include "proxy/core/worker.h"
#include "proxy/families/txclass.h"
#include "lib/proto/resp.h"

static void local_endpoint(struct request *r, char *ip, size_t iplen, int *port)
{
    const char *la = r->client->laddr;
    const char *colon = strrchr(la, ':');
    size_t n = colon ? (size_t)(colon - la) : 0;
    if (n >= 2 && la[0] == '[') {
        la++;
        n -= 2;
    }
    snprintf(ip, iplen, "%.*s", (int)n, la);
    *port = colon ? atoi(colon + 1) : 0;
}

static void cluster_slots(struct request *r)
{
    struct evbuffer *b = request_out(r);
    char ip[64];
    int port;
    local_endpoint(r, ip, sizeof ip, &port);
    resp_add_array(b, 1);
    resp_add_array(b, 3);
    resp_add_integer(b, 0);
    resp_add_integer(b, SLOT_COUNT - 1);
    resp_add_array(b, 4);
    resp_add_bulk_str(b, ip);
    resp_add_integer(b, port);
    resp_add_bulk_str(b, r->worker->proxy->id);
    resp_add_array(b, 0);
    request_finish(r);
}

static void cluster_shards(struct request *r)
{
    struct evbuffer *b = request_out(r);
    char ip[64];
    int port;
    local_endpoint(r, ip, sizeof ip, &port);
    resp_add_array(b, 1);
    resp_add_map(b, request_resp(r), 2);
    resp_add_bulk_str(b, "slots");
    resp_add_array(b, 2);
    resp_add_integer(b, 0);
    resp_add_integer(b, SLOT_COUNT - 1);
    resp_add_bulk_str(b, "nodes");
    resp_add_array(b, 1);
    resp_add_map(b, request_resp(r), 7);
    resp_add_bulk_str(b, "id");
    resp_add_bulk_str(b, r->worker->proxy->id);
    resp_add_bulk_str(b, "port");
    resp_add_integer(b, port);
    resp_add_bulk_str(b, "ip");
    resp_add_bulk_str(b, ip);
    resp_add_bulk_str(b, "endpoint");
    resp_add_bulk_str(b, ip);
    resp_add_bulk_str(b, "role");
    resp_add_bulk_str(b, "master");
    resp_add_bulk_str(b, "replication-offset");
    resp_add_integer(b, 0);
    resp_add_bulk_str(b, "health");
    resp_add_bulk_str(b, "online");
    request_finish(r);
}

static void cluster_keyslot(struct request *r)
{
    size_t len;
    const char *key = request_arg(r, 2, &len);
    resp_add_integer(request_out(r), slot_of(key, len));
    request_finish(r);
}

static void cluster_myid(struct request *r)
{
    resp_add_bulk_str(request_out(r), r->worker->proxy->id);
    request_finish(r);
}

/* CLUSTER MYSHARDID (Redis 7.2): the one node's shard is named as it is. */
static void cluster_myshardid(struct request *r)
{
    resp_add_bulk_str(request_out(r), r->worker->proxy->id);
    request_finish(r);
}

static void cluster_nodes(struct request *r)
{
    char text[1024], ip[64];
    int port;
    local_endpoint(r, ip, sizeof ip, &port);
    snprintf(text, sizeof text, "%s %s:%d@0 myself,master - 0 0 1 connected 0-%d\n",
             r->worker->proxy->id, ip, port, SLOT_COUNT - 1);
    resp_add_verbatim(request_out(r), request_resp(r), text, strlen(text));
    request_finish(r);
}

static void cluster_info(struct request *r)
{
    char text[1024];
    int ok = r->worker->topo->covered == SLOT_COUNT;
    snprintf(text, sizeof text,
             "cluster_state:%s\r\ncluster_slots_assigned:%d\r\ncluster_slots_ok:%d\r\n"
             "cluster_slots_pfail:0\r\ncluster_slots_fail:0\r\ncluster_known_nodes:1\r\n"
             "cluster_size:1\r\ncluster_current_epoch:1\r\ncluster_my_epoch:1\r\n"
             "cluster_stats_messages_sent:0\r\ncluster_stats_messages_received:0\r\n"
             "total_cluster_links_buffer_limit_exceeded:0\r\n",
             ok ? "ok" : "fail", SLOT_COUNT, SLOT_COUNT);
    resp_add_verbatim(request_out(r), request_resp(r), text, strlen(text));
    request_finish(r);
}

static void cluster_help(struct request *r)
{
    resp_add_array(request_out(r), 1);
    resp_add_simple(request_out(r), "CLUSTER INFO|SLOTS|SHARDS|NODES|MYID|KEYSLOT: answered by the "
                            "proxy as a one-node cluster that owns every slot.");
    request_finish(r);
}


/* ---- routes ---- */

static const struct route_entry clustercmd_routes[] = {
    ROUTE_LOCAL("cluster|info", cluster_info, TXC_PROXY),
    ROUTE_LOCAL("cluster|slots", cluster_slots, TXC_PROXY),
    ROUTE_LOCAL("cluster|shards", cluster_shards, TXC_PROXY),
    ROUTE_LOCAL("cluster|nodes", cluster_nodes, TXC_PROXY),
    ROUTE_LOCAL("cluster|myid", cluster_myid, TXC_PROXY),
    ROUTE_LOCAL("cluster|myshardid", cluster_myshardid, TXC_PROXY),    /* when learned */
    ROUTE_LOCAL("cluster|keyslot", cluster_keyslot, TXC_PROXY),
    ROUTE_LOCAL("cluster|help", cluster_help, TXC_PROXY),
};

void clustercmd_register(void)
{
    route_register(clustercmd_routes, (int)(sizeof clustercmd_routes / sizeof clustercmd_routes[0]));
}
