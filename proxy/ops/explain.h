/*
 * explain: `tagproxy layout explain`, for users writing their own rules:
 * what the key layout does with each name given, offline (no cluster).
 *
 *   tagproxy layout explain [--layout-rules FILE [P ...]]... [--layout-prefix P ...]
 *                           [-c CONFIG] [--] KEY...
 *
 * The layout is the one the proxy would build: CONFIG (if given) and the
 * environment, then these options, as the command line of a start. An
 * option's words end at the first word that is no valid prefix (a key
 * holds ':'); `--` ends the options (for a key with no ':'). One block per
 * key, a blank line between blocks:
 *
 *   bot:chat:tg:42
 *     rule     chat (conf/layouts/botmesh-v1.rules:45)
 *     legacy   bot:chat:tg:42
 *     cluster  bot:{ch:16}:r:tg%3A42
 *     slot     2378
 *     index    bot:{ch:16}:idx
 *     member   tg:42
 *
 * A name read as a cluster name mapped back gives the same lines; a keep
 * gives `keep PATTERN (FILE:LINE)` and the same name twice; an index key
 * `index of   RULE (FILE:LINE)`; a name nothing matches `no rule: passes
 * through` and its slot. Exit 0; 1 on a config or rules error (`FILE:LINE:
 * what is wrong` on stderr); 2 on a usage error.
 */
#ifndef TAGPROXY_EXPLAIN_H
#define TAGPROXY_EXPLAIN_H

#include <stdio.h>

/* argv: the words after `layout explain`. The report goes to out. */
int explain_main(int argc, char **argv, char **envp, FILE *out);

#endif
