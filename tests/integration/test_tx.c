/*
 * Transactions through the proxy against the real cluster: MULTI/EXEC
 * queued by the proxy and run as one block on the keys' master, WATCH on a
 * pinned connection (a balance transfer that retries after a concurrent
 * change), CROSSSLOT with nothing run, EXECABORT and Redis's own errors,
 * and a block resent whole after a MOVED.
 */
#include "harness.h"

#define CROSSSLOT "CROSSSLOT Keys in request don't hash to the same slot"

/* GET key on its master, directly; NULL-safe copy of the value or NULL. */
static char *owner_get(const struct h_topo *t, const char *key)
{
    redisContext *c = h_connect_owner(t, key);
    redisReply *r = h_cmd(c, "GET %s", key);
    char *v = r->type == REDIS_REPLY_STRING ? strdup(r->str) : NULL;
    ck_assert_msg(r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_NIL,
                  "GET %s on its master: %s", key, h_show(r));
    freeReplyObject(r);
    redisFree(c);
    return v;
}

static void expect_owner_value(const struct h_topo *t, const char *key, const char *want)
{
    char *v = owner_get(t, key);
    if (want == NULL)
        ck_assert_msg(v == NULL, "%s should not exist, holds '%s'", key, v);
    else
        ck_assert_msg(v && strcmp(v, want) == 0, "%s: want '%s', have '%s'", key, want,
                      v ? v : "(nil)");
    free(v);
}

/* One try of a transfer of amount from a to b: WATCH, read, MULTI/EXEC.
 * meddle (may be NULL) runs between the read and the EXEC. 1: done, 0: EXEC
 * answered null (a watched key changed). */
static int transfer_once(redisContext *p, const char *from, const char *to, int amount,
                         void (*meddle)(void))
{
    redisReply *r = h_cmd(p, "WATCH %s", from);
    H_EXPECT_STATUS(r, "OK");
    freeReplyObject(r);
    r = h_cmd(p, "GET %s", from);
    H_EXPECT_TYPE(r, REDIS_REPLY_STRING);
    long balance = atol(r->str);
    freeReplyObject(r);
    ck_assert_int_ge(balance, amount);
    if (meddle)
        meddle();
    r = h_cmd(p, "MULTI");
    H_EXPECT_STATUS(r, "OK");
    freeReplyObject(r);
    H_STATUS(p, "QUEUED", "DECRBY %s %d", from, amount);
    H_STATUS(p, "QUEUED", "INCRBY %s %d", to, amount);
    r = h_cmd(p, "EXEC");
    if (r->type == REDIS_REPLY_NIL) {
        freeReplyObject(r);
        return 0;
    }
    H_EXPECT_TYPE(r, REDIS_REPLY_ARRAY);
    ck_assert_uint_eq(r->elements, 2);
    H_EXPECT_INT(r->element[0], balance - amount);
    freeReplyObject(r);
    return 1;
}

static char meddle_key[128];

/* A second client changes the watched key between WATCH and EXEC. */
static void meddle_incr(void)
{
    redisContext *other = h_connect_proxy();
    redisReply *r = h_cmd(other, "INCRBY %s 5", meddle_key);
    H_EXPECT_INT(r, 105);
    freeReplyObject(r);
    redisFree(other);
}

START_TEST(test_watch_transfer_retries_after_concurrent_change)
{
    struct h_topo t;
    char from[128], to[128];
    redisContext *p = h_connect_proxy();
    redisReply *r;

    h_topo_load(&t);
    H_FMT(from, sizeof from, "%s:{acct}:balance:alice", h_prefix());
    H_FMT(to, sizeof to, "%s:{acct}:balance:bob", h_prefix());
    snprintf(meddle_key, sizeof meddle_key, "%s", from);
    r = h_cmd(p, "MSET %s 100 %s 0", from, to);
    H_EXPECT_STATUS(r, "OK");
    freeReplyObject(r);

    /* first try: a concurrent deposit makes EXEC null, nothing ran */
    ck_assert_int_eq(transfer_once(p, from, to, 30, meddle_incr), 0);
    expect_owner_value(&t, from, "105");
    expect_owner_value(&t, to, "0");
    /* the retry sees the new balance and succeeds */
    ck_assert_int_eq(transfer_once(p, from, to, 30, NULL), 1);
    expect_owner_value(&t, from, "75");
    expect_owner_value(&t, to, "30");

    /* the client's own write after WATCH also counts, as on one server */
    r = h_cmd(p, "WATCH %s", from);
    H_EXPECT_STATUS(r, "OK");
    freeReplyObject(r);
    r = h_cmd(p, "SET %s 75", from);
    H_EXPECT_STATUS(r, "OK");
    freeReplyObject(r);
    H_OK(p, "MULTI");
    H_STATUS(p, "QUEUED", "INCR %s", to);
    r = h_cmd(p, "EXEC");
    H_EXPECT_NIL(r);
    freeReplyObject(r);
    expect_owner_value(&t, to, "30");

    /* UNWATCH and DISCARD end the watch: a later change is not seen */
    r = h_cmd(p, "WATCH %s", from);
    freeReplyObject(r);
    r = h_cmd(p, "UNWATCH");
    H_EXPECT_STATUS(r, "OK");
    freeReplyObject(r);
    {
        redisContext *other = h_connect_proxy();
        r = h_cmd(other, "INCRBY %s 1", from);
        H_EXPECT_INT(r, 76);
        freeReplyObject(r);
        redisFree(other);
    }
    H_OK(p, "MULTI");
    r = h_cmd(p, "INCR %s", to);
    freeReplyObject(r);
    r = h_cmd(p, "EXEC");
    H_EXPECT_TYPE(r, REDIS_REPLY_ARRAY);
    H_EXPECT_INT(r->element[0], 31);
    freeReplyObject(r);
    r = h_cmd(p, "WATCH %s", from);
    freeReplyObject(r);
    H_OK(p, "MULTI");
    r = h_cmd(p, "DISCARD");
    H_EXPECT_STATUS(r, "OK");
    freeReplyObject(r);
    r = h_cmd(p, "EXEC");
    H_EXPECT_ERR(r, "ERR EXEC without MULTI");
    freeReplyObject(r);
    redisFree(p);
}
END_TEST

/* Keys of two masters in one transaction: refused at EXEC, nothing ran. */
START_TEST(test_transaction_across_slots_refused_nothing_runs)
{
    struct h_topo t;
    char prefix[128], k0[128], k1[128];
    redisContext *p = h_connect_proxy();
    redisReply *r;

    h_topo_load(&t);
    H_FMT(prefix, sizeof prefix, "%s:txcross", h_prefix());
    h_key_on_master(&t, 0, prefix, 0, k0, sizeof k0);
    h_key_on_master(&t, 1, prefix, 0, k1, sizeof k1);
    H_OK(p, "MULTI");
    H_STATUS(p, "QUEUED", "SET %s one", k0);
    H_STATUS(p, "QUEUED", "SET %s two", k1);
    r = h_cmd(p, "EXEC");
    H_EXPECT_ERR(r, CROSSSLOT);
    ck_assert_msg(strstr(r->str, "nothing ran") && strstr(r->str, "one slot"),
                  "the error should say why: %s", r->str);
    freeReplyObject(r);
    expect_owner_value(&t, k0, NULL);
    expect_owner_value(&t, k1, NULL);

    /* one multi-key command naming both: the same */
    H_OK(p, "MULTI");
    H_STATUS(p, "QUEUED", "MSET %s one %s two", k0, k1);
    r = h_cmd(p, "EXEC");
    H_EXPECT_ERR(r, CROSSSLOT);
    freeReplyObject(r);
    expect_owner_value(&t, k0, NULL);
    expect_owner_value(&t, k1, NULL);

    /* the client is out of MULTI and served normally */
    r = h_cmd(p, "SET %s after", k0);
    H_EXPECT_STATUS(r, "OK");
    freeReplyObject(r);
    expect_owner_value(&t, k0, "after");

    /* WATCH of keys of two slots */
    r = h_cmd(p, "WATCH %s %s", k0, k1);
    H_EXPECT_ERR(r, CROSSSLOT);
    freeReplyObject(r);
    redisFree(p);
}
END_TEST

/* An arity error inside MULTI: EXECABORT, nothing ran. And Redis's other
 * transaction errors, word for word. */
START_TEST(test_execabort_and_redis_errors)
{
    struct h_topo t;
    char k[128];
    redisContext *p = h_connect_proxy();
    redisReply *r;

    h_topo_load(&t);
    H_FMT(k, sizeof k, "%s:{abort}:k", h_prefix());
    H_OK(p, "MULTI");
    H_STATUS(p, "QUEUED", "SET %s v", k);
    r = h_cmd(p, "GET");
    H_EXPECT_ERR(r, "ERR wrong number of arguments for 'get' command");
    freeReplyObject(r);
    H_STATUS(p, "QUEUED", "INCR %s:{abort}:n", h_prefix());
    r = h_cmd(p, "EXEC");
    H_EXPECT_ERR(r, "EXECABORT Transaction discarded because of previous errors.");
    freeReplyObject(r);
    expect_owner_value(&t, k, NULL);

    /* an unknown command does the same */
    H_OK(p, "MULTI");
    r = h_cmd(p, "NOSUCHCOMMAND x");
    H_EXPECT_ERR(r, "ERR unknown command 'NOSUCHCOMMAND'");
    freeReplyObject(r);
    r = h_cmd(p, "EXEC");
    H_EXPECT_ERR(r, "EXECABORT");
    freeReplyObject(r);

    r = h_cmd(p, "EXEC");
    H_EXPECT_ERR(r, "ERR EXEC without MULTI");
    freeReplyObject(r);
    r = h_cmd(p, "DISCARD");
    H_EXPECT_ERR(r, "ERR DISCARD without MULTI");
    freeReplyObject(r);
    H_OK(p, "MULTI");
    r = h_cmd(p, "MULTI");
    if (h_server_is_valkey()) {
        /* Valkey 8 flags both no-multi: refused as any such command, which
         * aborts the transaction */
        H_EXPECT_ERR(r, "ERR Command not allowed inside a transaction");
        freeReplyObject(r);
        r = h_cmd(p, "WATCH %s", k);
        H_EXPECT_ERR(r, "ERR Command not allowed inside a transaction");
        freeReplyObject(r);
        r = h_cmd(p, "EXEC");
        H_EXPECT_ERR(r, "EXECABORT");
        freeReplyObject(r);
        H_OK(p, "MULTI");
    } else {
        H_EXPECT_ERR(r, "ERR MULTI calls can not be nested");
        freeReplyObject(r);
        r = h_cmd(p, "WATCH %s", k);
        H_EXPECT_ERR(r, "ERR WATCH inside MULTI is not allowed");
        freeReplyObject(r);
        /* neither aborts the transaction (as in Redis 7.0) */
    }
    H_STATUS(p, "QUEUED", "SET %s v2", k);
    /* a command that needs every master's own answer cannot be queued:
     * refused, aborts */
    r = h_cmd(p, "SCRIPT EXISTS 0000000000000000000000000000000000000000");
    H_EXPECT_ERR(r, "ERR Command not allowed inside a transaction");
    freeReplyObject(r);
    r = h_cmd(p, "EXEC");
    H_EXPECT_ERR(r, "EXECABORT");
    freeReplyObject(r);
    expect_owner_value(&t, k, NULL);
    redisFree(p);
}
END_TEST

static void expect_name(redisContext *p, const char *name)
{
    redisReply *r = h_cmd(p, "CLIENT GETNAME");
    H_EXPECT_BULK(r, name);
    freeReplyObject(r);
}

/* What the proxy answers itself (CLIENT, SELECT, CLUSTER KEYSLOT, ...) is
 * queued and run at EXEC, each reply in its place among the node's: a name
 * set inside MULTI is seen by a GETNAME after it in the same block, and is
 * not set at all after DISCARD or a failed WATCH. */
START_TEST(test_proxy_answered_commands_queued)
{
    redisContext *p = h_connect_proxy();
    redisContext *other = h_connect_proxy();
    redisReply *r;
    char k[128];

    H_FMT(k, sizeof k, "%s:{local}:k", h_prefix());
    H_OK(p, "CLIENT SETNAME before");
    H_OK(p, "MULTI");
    H_STATUS(p, "QUEUED", "SELECT 0");
    H_STATUS(p, "QUEUED", "SET %s v", k);
    H_STATUS(p, "QUEUED", "CLIENT SETNAME inside");
    H_STATUS(p, "QUEUED", "CLIENT GETNAME");
    H_STATUS(p, "QUEUED", "GET %s", k);
    H_STATUS(p, "QUEUED", "CLUSTER KEYSLOT %s", k);
    H_STATUS(p, "QUEUED", "SELECT 1");
    H_STATUS(p, "QUEUED", "CLIENT SETNAME %s", "no spaces");
    r = h_cmd(p, "EXEC");
    H_EXPECT_TYPE(r, REDIS_REPLY_ARRAY);
    ck_assert_uint_eq(r->elements, 8);
    H_EXPECT_STATUS(r->element[0], "OK");
    H_EXPECT_STATUS(r->element[1], "OK");
    H_EXPECT_STATUS(r->element[2], "OK");
    H_EXPECT_BULK(r->element[3], "inside");
    H_EXPECT_BULK(r->element[4], "v");
    H_EXPECT_INT(r->element[5], h_slot(k));
    H_EXPECT_ERR(r->element[6], "ERR SELECT is not allowed in cluster mode");
    H_EXPECT_ERR(r->element[7], "ERR Client names cannot contain spaces");
    freeReplyObject(r);
    expect_name(p, "inside");

    /* DISCARD: nothing ran */
    H_OK(p, "MULTI");
    H_STATUS(p, "QUEUED", "CLIENT SETNAME discarded");
    H_OK(p, "DISCARD");
    expect_name(p, "inside");

    /* a failed WATCH: nothing ran either */
    H_OK(p, "WATCH %s", k);
    H_OK(other, "SET %s changed", k);
    H_OK(p, "MULTI");
    H_STATUS(p, "QUEUED", "CLIENT SETNAME unwatched");
    H_STATUS(p, "QUEUED", "GET %s", k);
    r = h_cmd(p, "EXEC");
    H_EXPECT_TYPE(r, REDIS_REPLY_NIL);
    freeReplyObject(r);
    expect_name(p, "inside");

    /* only commands the proxy answers: an empty block on the node */
    H_OK(p, "MULTI");
    H_STATUS(p, "QUEUED", "CLIENT SETNAME alone");
    H_STATUS(p, "QUEUED", "CLIENT GETNAME");
    H_STATUS(p, "QUEUED", "AUTH nopass");
    H_STATUS(p, "QUEUED", "HELLO 2");
    r = h_cmd(p, "EXEC");
    H_EXPECT_TYPE(r, REDIS_REPLY_ARRAY);
    ck_assert_uint_eq(r->elements, 4);
    H_EXPECT_STATUS(r->element[0], "OK");
    H_EXPECT_BULK(r->element[1], "alone");
    H_EXPECT_ERR(r->element[2], "ERR AUTH <password> called without any password configured");
    H_EXPECT_TYPE(r->element[3], REDIS_REPLY_ARRAY);       /* HELLO's map, as an array */
    H_EXPECT_BULK(r->element[3]->element[0], "server");
    freeReplyObject(r);

    /* subcommands named like a refused command (INFO) are queued too */
    H_OK(p, "MULTI");
    H_STATUS(p, "QUEUED", "CLIENT INFO");
    H_STATUS(p, "QUEUED", "CLUSTER INFO");
    H_STATUS(p, "QUEUED", "COMMAND INFO get");
    H_STATUS(p, "QUEUED", "CLIENT NO-EVICT on");
    r = h_cmd(p, "EXEC");
    H_EXPECT_TYPE(r, REDIS_REPLY_ARRAY);
    ck_assert_uint_eq(r->elements, 4);
    H_EXPECT_TYPE(r->element[0], REDIS_REPLY_STRING);
    ck_assert_msg(strstr(r->element[0]->str, "name=alone") != NULL, "CLIENT INFO: %s",
                  r->element[0]->str);
    H_EXPECT_TYPE(r->element[1], REDIS_REPLY_STRING);
    ck_assert_msg(strncmp(r->element[1]->str, "cluster_state:ok", 16) == 0, "CLUSTER INFO: %s",
                  r->element[1]->str);
    H_EXPECT_TYPE(r->element[2], REDIS_REPLY_ARRAY);
    H_EXPECT_STATUS(r->element[3], "OK");
    freeReplyObject(r);

    /* CLIENT REPLY is refused, and aborts: it would take replies out of
     * EXEC's array (Redis sends a broken one) */
    H_OK(p, "MULTI");
    H_ERR(p, "ERR Command not allowed inside a transaction", "CLIENT REPLY OFF");
    H_ERR(p, "EXECABORT", "EXEC");
    H_STATUS(p, "PONG", "PING");
    redisFree(other);
    redisFree(p);
}
END_TEST

/* The proxy's commands that ask every master (KEYS, DBSIZE, SCAN, INFO,
 * RANDOMKEY) are queued too: they run once the block has, each reply in its
 * place; a write queued after one is refused (it would run too early); and
 * what the client pipelines after EXEC waits for them. */
START_TEST(test_commands_asking_masters_queued)
{
    redisContext *p = h_connect_proxy();
    redisReply *r;
    char k1[128], k2[128], k3[128], pattern[128];

    H_FMT(k1, sizeof k1, "%s:{ask}:k1", h_prefix());
    H_FMT(k2, sizeof k2, "%s:{ask}:k2", h_prefix());
    H_FMT(k3, sizeof k3, "%s:{ask}:k3", h_prefix());
    /* a glob in the tag: the names of several slots, every master asked */
    H_FMT(pattern, sizeof pattern, "%s:{as?}:*", h_prefix());
    H_OK(p, "MULTI");
    H_STATUS(p, "QUEUED", "SET %s a", k1);
    H_STATUS(p, "QUEUED", "KEYS %s", pattern);
    H_STATUS(p, "QUEUED", "GET %s", k1);
    H_ERR(p, "ERR Command not allowed inside a transaction", "SET %s b", k2);
    H_ERR(p, "EXECABORT", "EXEC");
    r = h_cmd(p, "EXISTS %s", k1);
    H_EXPECT_INT(r, 0);
    freeReplyObject(r);

    H_OK(p, "MULTI");
    H_STATUS(p, "QUEUED", "SET %s a", k1);
    H_STATUS(p, "QUEUED", "SET %s b", k2);
    H_STATUS(p, "QUEUED", "DBSIZE");
    H_STATUS(p, "QUEUED", "KEYS %s", pattern);
    H_STATUS(p, "QUEUED", "GET %s", k2);
    H_STATUS(p, "QUEUED", "INFO keyspace");
    H_STATUS(p, "QUEUED", "RANDOMKEY");
    H_STATUS(p, "QUEUED", "SCAN 0 MATCH %s COUNT 100000", pattern);
    r = h_cmd(p, "EXEC");
    H_EXPECT_TYPE(r, REDIS_REPLY_ARRAY);
    ck_assert_uint_eq(r->elements, 8);
    H_EXPECT_STATUS(r->element[0], "OK");
    H_EXPECT_STATUS(r->element[1], "OK");
    H_EXPECT_TYPE(r->element[2], REDIS_REPLY_INTEGER);
    ck_assert_msg(r->element[2]->integer >= 2, "DBSIZE in EXEC: %lld", r->element[2]->integer);
    H_EXPECT_TYPE(r->element[3], REDIS_REPLY_ARRAY);
    ck_assert_uint_eq(r->element[3]->elements, 2);
    ck_assert_msg((strcmp(r->element[3]->element[0]->str, k1) == 0 &&
                   strcmp(r->element[3]->element[1]->str, k2) == 0) ||
                  (strcmp(r->element[3]->element[0]->str, k2) == 0 &&
                   strcmp(r->element[3]->element[1]->str, k1) == 0), "KEYS in EXEC: %s",
                  h_show(r->element[3]));
    H_EXPECT_BULK(r->element[4], "b");
    H_EXPECT_TYPE(r->element[5], REDIS_REPLY_STRING);
    ck_assert_msg(strncmp(r->element[5]->str, "# Keyspace", 10) == 0, "INFO: %s", r->element[5]->str);
    H_EXPECT_TYPE(r->element[6], REDIS_REPLY_STRING);
    H_EXPECT_TYPE(r->element[7], REDIS_REPLY_ARRAY);
    ck_assert_uint_eq(r->element[7]->elements, 2);          /* cursor, keys */
    freeReplyObject(r);

    /* pipelined: what follows EXEC runs after the commands in it */
    redisAppendCommand(p, "MULTI");
    redisAppendCommand(p, "CLIENT SETNAME piped");
    redisAppendCommand(p, "KEYS %s", pattern);
    redisAppendCommand(p, "EXEC");
    redisAppendCommand(p, "CLIENT GETNAME");
    redisAppendCommand(p, "DEL %s %s", k1, k2);
    redisAppendCommand(p, "SET %s c", k3);
    redisAppendCommand(p, "KEYS %s", pattern);
    for (int i = 0; i < 3; i++)
        freeReplyObject(h_get_reply(p));
    r = h_get_reply(p);
    H_EXPECT_TYPE(r, REDIS_REPLY_ARRAY);
    ck_assert_uint_eq(r->elements, 2);
    H_EXPECT_STATUS(r->element[0], "OK");
    ck_assert_msg(r->element[1]->type == REDIS_REPLY_ARRAY && r->element[1]->elements == 2,
                  "KEYS in the pipelined EXEC saw the writes after it: %s", h_show(r->element[1]));
    freeReplyObject(r);
    r = h_get_reply(p);
    H_EXPECT_BULK(r, "piped");
    freeReplyObject(r);
    r = h_get_reply(p);
    H_EXPECT_INT(r, 2);
    freeReplyObject(r);
    r = h_get_reply(p);
    H_EXPECT_STATUS(r, "OK");
    freeReplyObject(r);
    r = h_get_reply(p);
    H_EXPECT_TYPE(r, REDIS_REPLY_ARRAY);
    ck_assert_uint_eq(r->elements, 1);
    H_EXPECT_BULK(r->element[0], k3);
    freeReplyObject(r);
    freeReplyObject(h_cmd(p, "DEL %s", k3));
    redisFree(p);
}
END_TEST

/* Pipelined: the block's replies come back as EXEC's array, in order with
 * what surrounds it; PING/ECHO inside run on the node. */
START_TEST(test_pipelined_transaction)
{
    struct h_topo t;
    char k[128];
    redisContext *p = h_connect_proxy();
    redisReply *r;

    h_topo_load(&t);
    H_FMT(k, sizeof k, "%s:{pipe}:ctr", h_prefix());
    redisAppendCommand(p, "SET %s 10", k);
    redisAppendCommand(p, "MULTI");
    redisAppendCommand(p, "INCR %s", k);
    redisAppendCommand(p, "PING");
    redisAppendCommand(p, "ECHO hello");
    redisAppendCommand(p, "INCRBY %s 5", k);
    redisAppendCommand(p, "EXEC");
    redisAppendCommand(p, "GET %s", k);
    redisAppendCommand(p, "MULTI");
    redisAppendCommand(p, "EXEC");
    r = h_get_reply(p);
    H_EXPECT_STATUS(r, "OK");
    freeReplyObject(r);
    r = h_get_reply(p);
    H_EXPECT_STATUS(r, "OK");
    freeReplyObject(r);
    for (int i = 0; i < 4; i++) {
        r = h_get_reply(p);
        H_EXPECT_STATUS(r, "QUEUED");
        freeReplyObject(r);
    }
    r = h_get_reply(p);
    H_EXPECT_TYPE(r, REDIS_REPLY_ARRAY);
    ck_assert_uint_eq(r->elements, 4);
    H_EXPECT_INT(r->element[0], 11);
    H_EXPECT_STATUS(r->element[1], "PONG");
    H_EXPECT_BULK(r->element[2], "hello");
    H_EXPECT_INT(r->element[3], 16);
    freeReplyObject(r);
    r = h_get_reply(p);
    H_EXPECT_BULK(r, "16");
    freeReplyObject(r);
    r = h_get_reply(p);
    H_EXPECT_STATUS(r, "OK");
    freeReplyObject(r);
    r = h_get_reply(p);
    H_EXPECT_TYPE(r, REDIS_REPLY_ARRAY);
    ck_assert_uint_eq(r->elements, 0);
    freeReplyObject(r);
    expect_owner_value(&t, k, "16");
    redisFree(p);
}
END_TEST

static void setslot_everywhere(const struct h_topo *t, int slot, int to)
{
    for (int m = 0; m < t->nmasters; m++) {
        redisContext *c = h_connect_node(&t->masters[m]);
        redisReply *r = h_cmd(c, "CLUSTER SETSLOT %d NODE %s", slot, t->master_id[to]);
        H_EXPECT_STATUS(r, "OK");
        freeReplyObject(r);
        redisFree(c);
    }
}

/* A slot of master 0 (node: a connection to it) that holds no key, found
 * among the slots of keys named after prefix: only an empty slot can be
 * reassigned or migrated without moving keys. */
static int empty_slot_of_master0(struct h_topo *t, redisContext *node, const char *prefix)
{
    char probe[128];
    int slot = -1;

    for (int nth = 0; slot < 0 && nth < 200; nth++) {
        h_key_on_master(t, 0, prefix, nth, probe, sizeof probe);
        redisReply *r = h_cmd(node, "CLUSTER COUNTKEYSINSLOT %d", h_slot(probe));
        H_EXPECT_TYPE(r, REDIS_REPLY_INTEGER);
        if (r->integer == 0)
            slot = h_slot(probe);
        freeReplyObject(r);
    }
    ck_assert_int_ge(slot, 0);
    return slot;
}

/* A slot moves after the proxy read the map: the node answers MOVED to the
 * queued command and EXECABORT; the proxy resends the whole block to the
 * new owner, where it runs once. */
START_TEST(test_moved_during_transaction_resends_block)
{
    struct h_topo t;
    struct h_proxy extra;
    char tag[32], k[128], prefix[128];
    static const char *const args[] = { "--topology-refresh-ms", "0", NULL };
    redisReply *r;

    h_topo_load(&t);
    /* an empty slot of master 0 (a slot with keys cannot be reassigned
     * without moving them) */
    H_FMT(prefix, sizeof prefix, "%s:moved", h_prefix());
    redisContext *owner = h_connect_node(&t.masters[0]);
    int slot = empty_slot_of_master0(&t, owner, prefix);
    redisFree(owner);
    h_tag_for_slot(slot, tag, sizeof tag);
    H_FMT(k, sizeof k, "%s:{%s}:k", h_prefix(), tag);
    ck_assert_int_eq(h_slot(k), slot);

    h_proxy_start(&extra, args);
    redisContext *p = h_connect_extra(&extra);
    long long moved0 = h_info_field(p, "cluster_moved");
    setslot_everywhere(&t, slot, 1);

    H_OK(p, "MULTI");
    H_STATUS(p, "QUEUED", "SET %s moved-once", k);
    H_STATUS(p, "QUEUED", "INCR %s:{%s}:n", h_prefix(), tag);
    r = h_cmd(p, "EXEC");
    H_EXPECT_TYPE(r, REDIS_REPLY_ARRAY);
    ck_assert_uint_eq(r->elements, 2);
    H_EXPECT_STATUS(r->element[0], "OK");
    H_EXPECT_INT(r->element[1], 1);
    freeReplyObject(r);
    ck_assert_int_gt(h_info_field(p, "cluster_moved"), moved0);

    redisContext *n1 = h_connect_node(&t.masters[1]);
    r = h_cmd(n1, "GET %s", k);
    H_EXPECT_BULK(r, "moved-once");
    freeReplyObject(r);
    r = h_cmd(n1, "DEL %s %s:{%s}:n", k, h_prefix(), tag);
    freeReplyObject(r);
    redisFree(n1);
    setslot_everywhere(&t, slot, 0);
    redisFree(p);
    h_proxy_stop(&extra);
}
END_TEST

/* A slot half migrated: the source answers ASK to the queued command of a
 * key it no longer has, then EXECABORT; the proxy sends ASKING and the whole
 * block to the importing node (ASKING holds through MULTI), once. */
START_TEST(test_ask_during_transaction_resends_block)
{
    struct h_topo t;
    struct h_proxy extra;
    char tag[32], k[128], prefix[128];
    static const char *const args[] = { "--topology-refresh-ms", "0", NULL };
    redisReply *r;

    h_topo_load(&t);
    H_FMT(prefix, sizeof prefix, "%s:ask", h_prefix());
    redisContext *src = h_connect_node(&t.masters[0]);
    redisContext *dst = h_connect_node(&t.masters[1]);
    int slot = empty_slot_of_master0(&t, src, prefix);
    h_tag_for_slot(slot, tag, sizeof tag);
    H_FMT(k, sizeof k, "%s:{%s}:k", h_prefix(), tag);

    h_proxy_start(&extra, args);
    redisContext *p = h_connect_extra(&extra);
    long long ask0 = h_info_field(p, "cluster_ask");
    H_OK(dst, "CLUSTER SETSLOT %d IMPORTING %s", slot, t.master_id[0]);
    H_OK(src, "CLUSTER SETSLOT %d MIGRATING %s", slot, t.master_id[1]);

    H_OK(p, "MULTI");
    H_STATUS(p, "QUEUED", "SET %s asked", k);
    r = h_cmd(p, "EXEC");
    H_EXPECT_TYPE(r, REDIS_REPLY_ARRAY);
    ck_assert_uint_eq(r->elements, 1);
    H_EXPECT_STATUS(r->element[0], "OK");
    freeReplyObject(r);
    ck_assert_int_gt(h_info_field(p, "cluster_ask"), ask0);

    /* it ran on the importing node, once, and not on the source */
    H_OK(dst, "ASKING");
    r = h_cmd(dst, "GET %s", k);
    H_EXPECT_BULK(r, "asked");
    freeReplyObject(r);
    r = h_cmd(src, "CLUSTER COUNTKEYSINSLOT %d", slot);
    H_EXPECT_INT(r, 0);
    freeReplyObject(r);
    H_OK(dst, "ASKING");
    r = h_cmd(dst, "DEL %s", k);
    H_EXPECT_INT(r, 1);
    freeReplyObject(r);
    H_OK(src, "CLUSTER SETSLOT %d STABLE", slot);
    H_OK(dst, "CLUSTER SETSLOT %d STABLE", slot);
    redisFree(src);
    redisFree(dst);
    redisFree(p);
    h_proxy_stop(&extra);
}
END_TEST

/* With a key layout and indexed families, writes queued in MULTI (and
 * written on the WATCH connection) keep the indexes exact: KEYS, answered
 * from the indexes, lists them. Scripts flushed on the masters first: the
 * block loads the index script itself (a NOSCRIPT inside EXEC could not be
 * recovered). */
START_TEST(test_indexed_writes_in_transactions)
{
    struct h_topo t;
    struct h_proxy extra;
    char prefix[64], k1[128], k2[128], glob[128];
    redisReply *r;

    h_topo_load(&t);
    h_layout_proxy_start(&extra, "tx", prefix, sizeof prefix);
    for (int m = 0; m < t.nmasters; m++) {
        redisContext *n = h_connect_node(&t.masters[m]);
        H_OK(n, "SCRIPT FLUSH");
        redisFree(n);
    }
    H_FMT(k1, sizeof k1, "%s:chat:txm1", prefix);
    H_FMT(k2, sizeof k2, "%s:chat:txm2", prefix);
    H_FMT(glob, sizeof glob, "%s:chat:txm*", prefix);
    redisContext *p = h_connect_extra(&extra);
    H_OK(p, "MULTI");
    H_STATUS(p, "QUEUED", "SET %s v1", k1);
    H_STATUS(p, "QUEUED", "GET %s", k1);
    r = h_cmd(p, "EXEC");
    H_EXPECT_TYPE(r, REDIS_REPLY_ARRAY);
    ck_assert_uint_eq(r->elements, 2);
    H_EXPECT_STATUS(r->element[0], "OK");
    H_EXPECT_BULK(r->element[1], "v1");
    freeReplyObject(r);
    r = h_cmd(p, "KEYS %s", glob);
    H_EXPECT_TYPE(r, REDIS_REPLY_ARRAY);
    ck_assert_uint_eq(r->elements, 1);
    H_EXPECT_BULK(r->element[0], k1);
    freeReplyObject(r);

    r = h_cmd(p, "WATCH %s", k2);
    H_EXPECT_STATUS(r, "OK");
    freeReplyObject(r);
    H_OK(p, "SET %s v2", k2);
    H_OK(p, "UNWATCH");
    r = h_cmd(p, "KEYS %s", glob);
    H_EXPECT_TYPE(r, REDIS_REPLY_ARRAY);
    ck_assert_uint_eq(r->elements, 2);
    freeReplyObject(r);
    r = h_cmd(p, "DEL %s %s", k1, k2);
    H_EXPECT_INT(r, 2);
    freeReplyObject(r);
    redisFree(p);
    h_proxy_stop(&extra);
}
END_TEST

/* Scripts in MULTI: EVAL runs in the block; an EVALSHA the proxy knows is
 * sent as EVAL, so a master that lost its scripts still runs it (a NOSCRIPT
 * inside EXEC could not be recovered). */
START_TEST(test_scripts_in_transaction)
{
    struct h_topo t;
    char k[128];
    static const char body[] = "return redis.call('INCRBY', KEYS[1], ARGV[1])";
    redisContext *p = h_connect_proxy();
    redisReply *r;

    h_topo_load(&t);
    H_FMT(k, sizeof k, "%s:{txlua}:n", h_prefix());
    r = h_cmd(p, "SCRIPT LOAD %s", body);
    H_EXPECT_TYPE(r, REDIS_REPLY_STRING);
    char sha[64];
    snprintf(sha, sizeof sha, "%s", r->str);
    freeReplyObject(r);
    redisContext *owner = h_connect_owner(&t, k);
    H_OK(owner, "SCRIPT FLUSH");
    redisFree(owner);

    H_OK(p, "MULTI");
    H_STATUS(p, "QUEUED", "EVAL %s 1 %s 2", body, k);
    H_STATUS(p, "QUEUED", "EVALSHA %s 1 %s 5", sha, k);
    r = h_cmd(p, "EXEC");
    H_EXPECT_TYPE(r, REDIS_REPLY_ARRAY);
    ck_assert_uint_eq(r->elements, 2);
    H_EXPECT_INT(r->element[0], 2);
    H_EXPECT_INT(r->element[1], 7);
    freeReplyObject(r);
    /* SCRIPT subcommands cannot be queued: they go to every master */
    H_OK(p, "MULTI");
    r = h_cmd(p, "SCRIPT FLUSH");
    H_EXPECT_ERR(r, "ERR Command not allowed inside a transaction");
    freeReplyObject(r);
    r = h_cmd(p, "DISCARD");
    H_EXPECT_STATUS(r, "OK");
    freeReplyObject(r);
    expect_owner_value(&t, k, "7");
    redisFree(p);
}
END_TEST

static Suite *tx_suite(void)
{
    Suite *s = suite_create("tx");
    TCase *tc = tcase_create("tx");

    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_watch_transfer_retries_after_concurrent_change);
    tcase_add_test(tc, test_transaction_across_slots_refused_nothing_runs);
    tcase_add_test(tc, test_execabort_and_redis_errors);
    tcase_add_test(tc, test_pipelined_transaction);
    tcase_add_test(tc, test_proxy_answered_commands_queued);
    tcase_add_test(tc, test_commands_asking_masters_queued);
    tcase_add_test(tc, test_moved_during_transaction_resends_block);
    tcase_add_test(tc, test_ask_during_transaction_resends_block);
    tcase_add_test(tc, test_indexed_writes_in_transactions);
    tcase_add_test(tc, test_scripts_in_transaction);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return h_run(tx_suite());
}
