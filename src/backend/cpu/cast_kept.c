/*
 * cast_kept.c — the CPU backend's cast: the op's own kernel (src/ops/elementwise.c), except for a
 * kept cast of a weight (ts_plan.kept in backend/backend.h: e.g. autocast's bf16 copy of an f32
 * parameter in an inference program, whose weights change only between runs).
 * Such a cast's output has a buffer of its own that keeps it across runs (runtime/compile.c), so
 * the kernel casts on the first run and then only when the plan's param_gen has moved since
 * (a ts_program_set_param, ts_program_load, ...), and otherwise does nothing.
 * Measured (2 cores of an AMD EPYC with AVX-512 BF16, BERT-Base bf16 batch-1 forward,
 * bench/bert --only latency_bf16_b1 --profile): the casts were 17% of the kernel time, nearly all
 * of it the 85M weights cast to bf16 on every run.
 */
#include "backend/cpu/cpu.h"

static ts_status kept_prepare(ts_cpu_dev *dev, const ts_plan *plan, const ts_node *n, void **state, size_t *scratch) {
    (void)dev;
    *scratch = 0;
    *state = NULL;
    if (!plan->param_gen || !plan->kept || !plan->kept[n->out[0]]) return TS_OK; /* an ordinary cast */
    if (!(*state = calloc(1, sizeof(ts_weight_stamp)))) return ts_err(TS_ERR_NOMEM, "op cast: out of memory");
    return TS_OK;
}

static ts_status kept_run(const ts_kargs *k) {
    ts_weight_stamp *s = k->state;
    if (s && !ts_weight_stale(s, k->param_gen)) return TS_OK; /* the kept output is current */
    ts_status st = ts_op_get(TS_OP_CAST)->kernel(k);
    if (s && st == TS_OK) ts_weight_made(s, k->param_gen);
    return st;
}

static void kept_release(void *state) { free(state); }

const ts_cpu_kernel ts_cpu_cast_kept = {TS_OP_CAST, kept_prepare, kept_run, kept_release, NULL, NULL};
