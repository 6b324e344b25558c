/*
 * optim_names.c — the optimizers by the names the tessera command's --optimizer takes
 * (tessera_tasks.h): "sgd", "adamw", "lamb".
 */
#include "common/app.h"

#include <string.h>

static const char *const optim_names[] = {[TS_OPTIM_SGD] = "sgd", [TS_OPTIM_ADAMW] = "adamw", [TS_OPTIM_LAMB] = "lamb"};

const char *ts_optim_kind_name(ts_optim_kind k) { return (unsigned)k < 3 ? optim_names[k] : "?"; }

int ts_optim_kind_parse(const char *name) {
    for (int k = 0; k < 3; k++)
        if (name && !strcmp(name, optim_names[k])) return k;
    ts_set_error(TS_ERR_ARG, "unknown optimizer '%s' (the optimizers are adamw, lamb and sgd)", name ? name : "");
    return -1;
}
