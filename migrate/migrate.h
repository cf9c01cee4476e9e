/*
 * migrate: `tagproxy migrate`, the tool that moves a bot's keyspace between
 * the legacy layout and the cluster layout (LAYOUT.md "Migration"), with
 * the rules a proxy serves (keylayout/).
 *
 *   tagproxy migrate inspect --source URL --prefix P [--layout-rules FILE]
 *                            [TLS options]
 *   tagproxy migrate --source URL [--target URL | --target-cluster H:P]
 *                    --prefix P [--layout-rules FILE] [--dry-run]
 *                    [--overwrite] [--allow-live] [--include F,...]
 *                    [--delete-source] [--report FILE.json]
 *                    [--direction legacy-to-cluster|cluster-to-legacy]
 *                    [--mirror yes|no] [TLS options]
 *
 * inspect (inspect.h) prints what the prefix holds: per family, names in
 * each layout and index sets; names with a TTL; live bots; the marker.
 * The copy (copy.h) goes either way; without a target, in place. URLs:
 * lib/base/url.h. TLS options, for rediss:// URLs:
 * --tls-ca-cert-file, --tls-cert-file, --tls-key-file, --tls-server-name,
 * --tls-insecure. Exit 0; 1 when the source or the rules fail (the reason
 * on stderr, never a password); 2 on a usage error.
 */
#ifndef TAGPROXY_MIGRATE_H
#define TAGPROXY_MIGRATE_H

#include <stdio.h>

/* argv: the words after `migrate`. Reports go to out. */
int migrate_main(int argc, char **argv, FILE *out);

#endif
