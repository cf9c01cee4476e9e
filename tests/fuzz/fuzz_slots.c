/*
 * libFuzzer harness for the slot map builder (cluster/topology.c,
 * topology_from_reply): the bytes a node answers to CLUSTER SLOTS.
 *
 * Input: a byte stream read with syncconn's bounded reader (the reply
 * scanner frames each reply before hiredis parses it), as syncconn reads it;
 * every complete array reply is built into a topology, with an address-map
 * entry so that the mapped path runs too. A built map must be consistent:
 * at least one node, every slot unowned or owned by an existing node,
 * covered equal to the owned slots, every address NUL-terminated in its
 * buffer and found again by topology_find at its own index. Node addresses
 * are resolved as numeric ones only (fuzz_getaddrinfo below), so that no
 * input makes a DNS query and each run is deterministic.
 */
#include <netdb.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int fuzz_getaddrinfo(const char *node, const char *service,
                            const struct addrinfo *hints, struct addrinfo **res)
{
    struct addrinfo h = *hints;
    h.ai_flags |= AI_NUMERICHOST | AI_NUMERICSERV;
    return getaddrinfo(node, service, &h, res);
}

#define getaddrinfo fuzz_getaddrinfo
#include "cluster/topology.c"
#undef getaddrinfo

static void check(const struct topology *t)
{
    int owned = 0;
    if (t->nnodes < 1 || t->refs != 1)
        abort();
    for (int s = 0; s < SLOT_COUNT; s++) {
        if (t->slot_node[s] < -1 || t->slot_node[s] >= t->nnodes)
            abort();
        owned += t->slot_node[s] >= 0;
    }
    if (owned != t->covered)
        abort();
    for (int i = 0; i < t->nnodes; i++) {
        const struct topology_node *n = &t->nodes[i];
        if (strnlen(n->announced, sizeof n->announced) == sizeof n->announced ||
            strnlen(n->target, sizeof n->target) == sizeof n->target ||
            strnlen(n->id, sizeof n->id) == sizeof n->id)
            abort();
        if (topology_find(t, n->announced) != i)
            abort();
        if (n->salen == 0 || n->salen > sizeof n->sa)
            abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const from[] = { "10.0.0.1:7000" }, *const to[] = { "127.0.0.1:7000" };
    const struct topology_source src = { .map_from = from, .map_to = to, .nmap = 1 };
    struct syncconn_reader rd;
    char why[300];
    if (syncconn_reader_init(&rd, SYNCCONN_REPLY_MAX) < 0)
        return 0;
    if (syncconn_reader_feed(&rd, (const char *)data, size, why, sizeof why) < 0) {
        syncconn_reader_free(&rd);
        return 0;
    }
    redisReply *r;
    while (syncconn_reader_next(&rd, &r, why, sizeof why) == 1) {
        why[0] = '\0';
        if (r->type == REDIS_REPLY_ARRAY) {
            struct topology *t = topology_from_reply(&src, "127.0.0.1", r, why, sizeof why);
            if (t)
                check(t);
            else if (strnlen(why, sizeof why) == 0 || strnlen(why, sizeof why) == sizeof why)
                abort();        /* a refused map always says why */
            topology_unref(t);
        }
        freeReplyObject(r);
    }
    syncconn_reader_free(&rd);
    return 0;
}
