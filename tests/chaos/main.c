/*
 * build/tests/chaos/chaos [--short] [FAULT...]: the fault suite (chaos.h).
 *
 * Without FAULT, every fault in turn. --short is make test's form: one
 * repetition of each, a smaller workload, and no latency bound asserted.
 * Prints one table row per fault; exits 1 if any fault broke a promise.
 * Run from the repository's root (it runs scripts/cluster.sh and
 * build/tagproxy).
 */
#include "tests/chaos/chaos.h"

#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
    static struct chaos ch;     /* chaos_cleanup runs after main returns */
    const char *names[32];
    int n = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--short") == 0)
            ch.short_form = 1;
        else if (argv[i][0] == '-' || n == 32) {
            fprintf(stderr, "usage: %s [--short] [FAULT...]\n", argv[0]);
            return 2;
        } else
            names[n++] = argv[i];
    }
    chaos_setup(&ch);
    proxy_spawn(&ch, &ch.proxy, NULL, 1);
    int failed = faults_run(&ch, names, n);
    return failed ? 1 : 0;
}
