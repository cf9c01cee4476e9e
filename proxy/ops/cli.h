/*
 * cli: the command line's own answers, before any config is read.
 *
 *   tagproxy --help | -h        usage, subcommands, every directive
 *   tagproxy --version | -v     version, git revision, the libraries
 *   tagproxy [conf] [--name value ...] --dump-config
 *                               the merged config (file, environment,
 *                               command line) as a conf file, secrets
 *                               redacted (proxy/config/dump.h)
 */
#ifndef TAGPROXY_CLI_H
#define TAGPROXY_CLI_H

#include <stdio.h>

/* Whether argv asks for one of the above; if so, answers it and sets *rc
 * to the exit status. --dump-config may stand anywhere among the options;
 * --help and --version anywhere. */
int cli_answer(int argc, char **argv, char **envp, int *rc);

#endif
