/*
 * dump: the directives described and shown, for the command line.
 *
 *   config_help()   every directive, grouped as conf/tagproxy.conf groups
 *                   them, one line each: its arguments and what it does
 *                   (tagproxy --help);
 *   config_dump()   a loaded config (file, then environment, then command
 *                   line, merged) written back as a conf file that loads
 *                   to the same config, but for the secrets: requirepass,
 *                   cluster-password and the users' passwords are written
 *                   as <redacted> (tagproxy --dump-config).
 *
 * Both read the one table of directives (directives.h).
 */
#ifndef TAGPROXY_DUMP_H
#define TAGPROXY_DUMP_H

#include <stddef.h>
#include <stdio.h>

#include "proxy/config/config.h"

void config_help(FILE *out);
void config_dump(const struct config *c, FILE *out);

#endif
