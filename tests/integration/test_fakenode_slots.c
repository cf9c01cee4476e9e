/*
 * The proxy's topology read (CLUSTER SLOTS on the control thread) against a
 * fake node (fakenode.h) whose reply announces more than it sends: an array
 * header of 300,000,002 elements (the reproducer fuzz_slots found, which
 * hiredis's reader answers with a 2.4 GB calloc at the header) or a bulk of
 * a billion bytes, each followed by a long stream of bytes that fits the
 * header. The first seed is that node, the second a healthy one: the proxy
 * logs the first seed's address and why its read failed, starts from the
 * second, and its peak virtual memory and peak RSS stay small.
 *
 * The proxy runs under `ulimit -v` (a wrapper script in the log folder), so
 * that a proxy without the bound fails an allocation past it instead of
 * taking the machine's memory.
 */
#include <limits.h>

#include "harness.h"
#include "fakenode.h"

#define PROXY_VMEM_KB (3L * 1024 * 1024)    /* the proxy's ulimit -v */
#define PEAK_VM_KB   (1024L * 1024)         /* its VmPeak must stay under this */
/* AddressSanitizer reserves terabytes of shadow memory at start, so a
 * sanitized proxy runs without ulimit -v and only its peak RSS is checked
 * (its redzones and quarantine make that larger too). */
#ifdef __SANITIZE_ADDRESS__
#define VMEM_LIMITED 0
#define PEAK_RSS_KB  (128L * 1024)
#else
#define VMEM_LIMITED 1
#define PEAK_RSS_KB  (48L * 1024)           /* and its VmHWM under this */
#endif

/* The reproducer: a CLUSTER SLOTS reply of two ranges, the second announced
 * as an array of 300,000,002 elements. */
static const char REPRO_B64[] =
    "KjINCiozDQo6MA0KOjEwMA0KKjMNCiQ4DQoxMC4wLjAuMQ0KOjcwMDANCiQ0MA0KMDAwMDAwMDAw"
    "MDAwMDAwMDAwMPrjMQTQYgAAMDAwMDAwMDAwMDAwMQ0KKjMwMDAwMDAwMg0K";

static struct {
    struct fake_node a, b;
    struct h_proxy proxy;
} W;

/* What the hostile node answers to CLUSTER SLOTS: head, then filler
 * repeated up to g_stream_len bytes, then it closes. */
static char g_head[256];
static size_t g_head_len;
static const char *g_filler;
static long g_stream_len;

static int b64_value(char ch)
{
    static const char set[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    const char *p = strchr(set, ch);
    return ch != '\0' && p != NULL ? (int)(p - set) : -1;
}

static size_t b64_decode(const char *in, char *out, size_t size)
{
    size_t n = 0;
    unsigned acc = 0;
    int bits = 0;

    for (; *in != '\0' && *in != '='; in++) {
        int v = b64_value(*in);
        ck_assert_msg(v >= 0, "bad base64");
        acc = (acc << 6) | (unsigned)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            ck_assert_msg(n < size, "base64 input too long");
            out[n++] = (char)((acc >> bits) & 0xff);
        }
    }
    return n;
}

static int hostile_filter(struct fn_conn *c, int *rc)
{
    char chunk[65536];
    size_t flen = strlen(g_filler), fill = 0;

    if (strcasecmp(c->argv[0], "CLUSTER") != 0)
        return 0;
    while (fill + flen <= sizeof(chunk)) {
        memcpy(chunk + fill, g_filler, flen);
        fill += flen;
    }
    *rc = -1;
    if (fn_write(c, g_head, g_head_len) < 0)
        return 1;
    for (long sent = 0; sent < g_stream_len; sent += (long)fill)
        if (fn_write(c, chunk, fill) < 0)
            break;
    return 1;
}

static void teardown(void)
{
    h_proxy_stop(&W.proxy);
    fn_stop(&W.a);
    fn_stop(&W.b);
}

/* The whole file at path into buf, NUL-terminated. */
static void read_file(const char *path, char *buf, size_t size)
{
    FILE *f = fopen(path, "r");
    size_t n = 0;

    if (f != NULL) {
        n = fread(buf, 1, size - 1, f);
        fclose(f);
    }
    buf[n] = '\0';
}

/* The field of /proc/pid/status ("VmHWM:", "VmPeak:"), in kB; -1 when
 * unknown. */
static long status_kb(pid_t pid, const char *field)
{
    char path[64], status[8192];
    const char *p;

    snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
    read_file(path, status, sizeof(status));
    p = strstr(status, field);
    return p != NULL ? atol(p + strlen(field)) : -1;
}

/* A script in the log folder that runs the proxy under ulimit -v. */
static void write_wrapper(char *path, size_t size)
{
    char bin[PATH_MAX];
    FILE *f;

    ck_assert_msg(realpath(fn_proxy_bin(), bin) != NULL, "realpath %s", fn_proxy_bin());
    snprintf(path, size, "%s/%sproxy-vmem.sh", fn_dir, fn_log_prefix);
    f = fopen(path, "w");
    ck_assert_msg(f != NULL, "cannot write %s", path);
    if (VMEM_LIMITED)
        fprintf(f, "#!/bin/sh\nulimit -v %ld || exit 97\nexec '%s' \"$@\"\n", PROXY_VMEM_KB, bin);
    else
        fprintf(f, "#!/bin/sh\nexec '%s' \"$@\"\n", bin);
    fclose(f);
    chmod(path, 0755);
}

/* Seeds: the hostile node A, then the healthy B. The proxy must start from
 * B, log A's address and want in its log, and keep its RSS small. */
static void hostile_first_seed(const char *name, const char *want)
{
    static const char *const one_thread[] = { "--threads", "1", NULL };
    char wrapper[PATH_MAX], seed_a[64], seed_b[64], log[65536], addr[80];
    long peak, vm;

    fn_start(&W.a, 'A', NULL, 0);
    W.a.filter = hostile_filter;
    fn_start(&W.b, 'B', NULL, 0);
    fn_own_all_slots(&W.b);
    snprintf(seed_a, sizeof(seed_a), "127.0.0.1:%d", W.a.port);
    snprintf(seed_b, sizeof(seed_b), "127.0.0.1:%d", W.b.port);
    write_wrapper(wrapper, sizeof(wrapper));
    {
        const char *const args[] = { "--cluster", seed_a, seed_b, NULL };
        h_proxy_place(&W.proxy);
        H_FMT(W.proxy.log, sizeof(W.proxy.log), "%s/%s%s.log", fn_dir, fn_log_prefix, name);
        h_proxy_launch(&W.proxy, wrapper, NULL, one_thread, args, SIGKILL);
    }
    h_spawn_wait(&W.proxy, h_pings, 20000, name);

    ck_assert_int_ge(fn_count(&W.a, "CLUSTER SLOTS"), 1);
    ck_assert_int_ge(fn_count(&W.b, "CLUSTER SLOTS"), 1);
    /* the seeds are asked at once: B's map may win while A's ask still
     * reads; A's failure is logged when that ask ends */
    snprintf(addr, sizeof(addr), "node 127.0.0.1:%d: ", W.a.port);
    for (long long deadline = h_now_ms() + 10000; h_now_ms() < deadline; h_sleep_ms(50)) {
        read_file(W.proxy.log, log, sizeof(log));
        if (strstr(log, addr) != NULL && strstr(log, want) != NULL)
            break;
    }
    peak = status_kb(W.proxy.pid, "VmHWM:");
    vm = status_kb(W.proxy.pid, "VmPeak:");
    ck_assert_msg(vm > 0 && (!VMEM_LIMITED || vm < PEAK_VM_KB),
                  "proxy peak virtual memory %ld kB, want under %ld kB", vm, PEAK_VM_KB);
    ck_assert_msg(peak > 0 && peak < PEAK_RSS_KB, "proxy peak RSS %ld kB, want under %ld kB",
                  peak, PEAK_RSS_KB);
    ck_assert_msg(strstr(log, addr) != NULL && strstr(log, want) != NULL,
                  "the log does not say that %s failed with \"%s\":\n%s", seed_a, want, log);
}

/* The reproducer, then integers that fit its array until the node stops. */
START_TEST(test_slots_huge_array_header)
{
    g_head_len = b64_decode(REPRO_B64, g_head, sizeof(g_head));
    g_filler = ":0\r\n";
    g_stream_len = 16L * 1024 * 1024;
    hostile_first_seed("huge-array", "reply larger than 8388608 bytes");
}
END_TEST

/* A bulk of a billion bytes announced, then bytes of it until the node stops. */
START_TEST(test_slots_huge_bulk_header)
{
    g_head_len = (size_t)snprintf(g_head, sizeof(g_head), "*1\r\n$1000000000\r\n");
    g_filler = "xxxxxxxx";
    g_stream_len = 64L * 1024 * 1024;
    hostile_first_seed("huge-bulk", "reply larger than 8388608 bytes");
}
END_TEST

/* Not RESP2 in the middle of the reply: the read fails as malformed. */
START_TEST(test_slots_malformed)
{
    g_head_len = (size_t)snprintf(g_head, sizeof(g_head), "*2\r\n:0\r\n?garbage\r\n");
    g_filler = "x";
    g_stream_len = 65536;
    hostile_first_seed("malformed", "malformed reply");
}
END_TEST

static Suite *slots_suite(void)
{
    Suite *s = suite_create("fakenode_slots");
    TCase *tc = tcase_create("bounded");

    tcase_set_timeout(tc, 60);
    tcase_add_checked_fixture(tc, NULL, teardown);
    tcase_add_test(tc, test_slots_huge_array_header);
    tcase_add_test(tc, test_slots_huge_bulk_header);
    tcase_add_test(tc, test_slots_malformed);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return fn_main(slots_suite, "fakenode-slots-", "fakenode-slots");
}
