/*
 * cli: --help, --version and --dump-config (cli.h).
 */
#include <event2/event.h>
#include <hiredis/hiredis.h>
#include <openssl/crypto.h>
#include <stdlib.h>
#include <string.h>

#include "lib/base/version.h"
#include "proxy/config/config.h"
#include "proxy/config/dump.h"
#include "proxy/ops/cli.h"

static void help(FILE *out)
{
    fputs("usage: tagproxy [CONF-FILE] [--DIRECTIVE VALUE ...]     run the proxy\n"
          "       tagproxy -t [CONF-FILE] [--DIRECTIVE VALUE ...]  check the config, exit\n"
          "       tagproxy [CONF-FILE] [--DIRECTIVE VALUE ...] --dump-config\n"
          "                                     print the merged config, secrets redacted\n"
          "       tagproxy layout explain [options] KEY...   what the key layout does\n"
          "       tagproxy migrate [inspect] --source URL --prefix P ...\n"
          "                                     move a keyspace into the cluster layout\n"
          "       tagproxy --version | --help\n"
          "\n"
          "Every directive is read from CONF-FILE (conf/tagproxy.conf documents each),\n"
          "then TAGPROXY_NAME in the environment, then --name on the command line;\n"
          "the later wins. SIGHUP reloads them; SIGTERM drains and stops.\n"
          "\n", out);
    config_help(out);
}

static void version(FILE *out)
{
    fprintf(out, "tagproxy %s (revision %s), speaks Redis %s (RESP2 and RESP3)\n",
            TAGPROXY_VERSION, tagproxy_revision, REDIS_SPOKEN_VERSION);
    fprintf(out, "libevent %s, hiredis %d.%d.%d, %s, liburing %s\n", event_get_version(),
            HIREDIS_MAJOR, HIREDIS_MINOR, HIREDIS_PATCH, OpenSSL_version(OPENSSL_VERSION),
            tagproxy_liburing_version);
}

/* argv without its --dump-config: the config loaded and written back. */
static int dump_config(int argc, char **argv, char **envp)
{
    struct config *c = calloc(1, sizeof *c);
    char err[1024];
    if (!c || config_load_main(c, argc, argv, envp, err, sizeof err) < 0) {
        fprintf(stderr, "%s\n", c ? err : "out of memory");
        free(c);
        return 1;
    }
    printf("# tagproxy %s: the merged config of %s, the environment and the command line;\n"
           "# secrets are written %s\n\n", TAGPROXY_VERSION, c->path ? c->path : "no file",
           CONFIG_REDACTED);
    config_dump(c, stdout);
    config_free(c);
    free(c);
    return 0;
}

int cli_answer(int argc, char **argv, char **envp, int *rc)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            help(stdout);
            *rc = 0;
            return 1;
        }
        if (strcmp(argv[i], "--version") == 0 || strcmp(argv[i], "-v") == 0) {
            version(stdout);
            *rc = 0;
            return 1;
        }
    }
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--dump-config") == 0) {
            memmove(argv + i, argv + i + 1, (size_t)(argc - i) * sizeof *argv);
            *rc = dump_config(argc - 1, argv, envp);
            return 1;
        }
    return 0;
}
