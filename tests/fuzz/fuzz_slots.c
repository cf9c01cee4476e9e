/*
 * libFuzzer harness for the slot map builder (cluster/topology.c,
 * topology_from_reply): the bytes a node answers to CLUSTER SLOTS.
 *
 * Input: a byte stream read with hiredis's reader, as syncconn reads it;
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

/*
 * hiredis's reader allocates an array's element pointers when it reads the
 * header, before the elements arrive, so "*300000000" alone is a 2.4 GB
 * calloc on the control thread. That bound is the reader's (see the
 * README's Fuzzing section), not the builder's: inputs that announce more
 * elements than they have bytes are left out here.
 */
static int announces_more_than(const uint8_t *data, size_t size)
{
    for (size_t i = 0; i < size; i++) {
        if (data[i] != '*')
            continue;
        unsigned long long n = 0;
        for (size_t j = i + 1; j < size && data[j] >= '0' && data[j] <= '9'; j++)
            if ((n = n * 10 + (data[j] - '0')) > size)
                return 1;
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const from[] = { "10.0.0.1:7000" }, *const to[] = { "127.0.0.1:7000" };
    const struct topology_source src = { .map_from = from, .map_to = to, .nmap = 1 };
    if (announces_more_than(data, size))
        return 0;
    redisReader *rd = redisReaderCreate();
    if (!rd)
        return 0;
    if (redisReaderFeed(rd, (const char *)data, size) != REDIS_OK) {
        redisReaderFree(rd);
        return 0;
    }
    void *reply;
    while (redisReaderGetReply(rd, &reply) == REDIS_OK && reply) {
        redisReply *r = reply;
        char why[300];
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
    redisReaderFree(rd);
    return 0;
}
