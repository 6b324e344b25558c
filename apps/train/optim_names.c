/*
 * optim_names.c — the optimizers and precision modes by the names the tessera command's
 * --optimizer and --precision take (tessera_tasks.h): "sgd", "adamw", "lamb"; "f32", "bf16",
 * "fp16", "bf16-sr", "fp16-sr".
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

static const struct {
    const char *name;
    ts_dtype compute, weights;
} precisions[] = {{"f32", TS_F32, TS_F32},     {"bf16", TS_BF16, TS_F32},     {"fp16", TS_F16, TS_F32},
                  {"bf16-sr", TS_BF16, TS_BF16}, {"fp16-sr", TS_F16, TS_F16}};

ts_status ts_precision_parse(const char *mode, ts_dtype *compute, ts_dtype *weights) {
    for (size_t k = 0; k < sizeof precisions / sizeof *precisions; k++)
        if (mode && !strcmp(mode, precisions[k].name)) {
            if (compute) *compute = precisions[k].compute;
            if (weights) *weights = precisions[k].weights;
            return TS_OK;
        }
    return ts_set_error(TS_ERR_ARG, "unknown precision '%s' (the precisions are f32, bf16, fp16, bf16-sr and fp16-sr)",
                        mode ? mode : "");
}

const char *ts_precision_name(ts_dtype compute, ts_dtype weights) {
    for (size_t k = 0; k < sizeof precisions / sizeof *precisions; k++)
        if (precisions[k].compute == compute && precisions[k].weights == weights) return precisions[k].name;
    return "?";
}
