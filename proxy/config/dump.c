/*
 * dump: the directives described (config_help) and a config written back
 * as a conf file (config_dump), both from directives.h's table. See dump.h.
 */
#include "proxy/config/dump.h"

#include <string.h>

void config_help(FILE *out)
{
    const struct directive *d;
    for (size_t i = 0; (d = directive_at(i)) != NULL; i++) {
        char left[64];
        if (d->group)
            fprintf(out, "%s%s:\n", i ? "\n" : "", d->group);
        snprintf(left, sizeof left, "--%s %s", d->name, d->args);
        if (strlen(left) > 44)      /* the help on a line of its own */
            fprintf(out, "  %s\n  %-44s %s\n", left, "", d->help);
        else
            fprintf(out, "  %-44s %s\n", left, d->help);
    }
}

void config_dump(const struct config *c, FILE *out)
{
    const struct directive *d;
    for (size_t i = 0; (d = directive_at(i)) != NULL; i++) {
        if (d->group)
            fprintf(out, "%s# %s\n", i ? "\n" : "", d->group);
        directive_show(c, d, out);
    }
}
