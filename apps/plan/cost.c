/*
 * cost.c — the cost model (docs/cost-model.md "The cost model"): a scheduled kernel's time on a
 * device profile as node_overhead + max(compute, memory), from its FLOPs and bytes as the core
 * reports them (ts_program_stage_work, tessera_core.h), and a compiled program's stages' times per
 * phase (forward and backward per micro-batch, the update per step) with what each stage sends
 * (ts_program_stage_traffic). Reads programs through the public API only.
 */
#include "plan/cost.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* FLOP/s of a product in dtype on p; a dtype the profile has no rate for runs at f32's. The fused
 * attention op at the rate measured of it (its forward or backward), where the profile has one:
 * its products run in its own kernel, not as the GEMMs of [T, D] x [D, S] its shape names. */
static double gemm_rate(const ts_device_profile *p, const ts_node_work *w) {
    int fwd = w->op && !strcmp(w->op, "attention"), bwd = w->op && !strcmp(w->op, "attention_grad");
    if ((fwd || bwd) && (unsigned)w->dtype < 3) {
        double a = (fwd ? p->attention_fwd_flops : p->attention_bwd_flops)[w->dtype];
        if (a > 0) return a;
    }
    double r = ts_profile_gemm_flops(p, w->m, w->n, w->k, w->dtype);
    if (r <= 0 && w->dtype != TS_F32) r = ts_profile_gemm_flops(p, w->m, w->n, w->k, TS_F32);
    return r;
}

/* Kernel w's compute and memory times on p (both 0 for one that computes and moves nothing;
 * returns 0 then, 1 for a kernel). Products run in gemm_dtype (-1: w's dtype). */
static int work_times(const ts_node_work *work, const ts_device_profile *p, int gemm_dtype, double *compute,
                      double *memory) {
    ts_node_work w = *work;
    if (gemm_dtype >= 0 && w.flops > 0) w.dtype = (ts_dtype)gemm_dtype;
    *compute = *memory = 0;
    if (w.bytes == 0 && w.flops == 0) return 0;
    double bw = ts_profile_mem_bw(p), rate = w.flops > 0 ? gemm_rate(p, &w) : 0;
    *compute = w.flops > 0 && rate > 0 ? w.flops / rate : 0;
    *memory = bw > 0 ? w.bytes / bw : 0;
    return 1;
}

double ts_cost_work(const ts_node_work *w, const ts_device_profile *p, int gemm_dtype) {
    double compute, memory;
    if (!work_times(w, p, gemm_dtype, &compute, &memory)) return 0;
    return p->node_overhead + (compute > memory ? compute : memory);
}

double ts_phase_time(const ts_phase_split *x, double k, double q) {
    return x->ovh + fmax(x->cb_c * k, x->cb_m * q) + fmax(x->mb_c * k, x->mb_m * q);
}

/* Add a node's times to its phase's parts. */
static void split_add(ts_phase_split *x, double compute, double memory, double overhead) {
    if (compute > memory) x->cb_c += compute, x->cb_m += memory;
    else x->mb_c += compute, x->mb_m += memory;
    x->ovh += overhead;
}

/* Add kernel w's time on p to its phase's (w->phase: 0 forward, 1 backward, 2 the update). */
static void cost_add(const ts_node_work *w, const ts_device_profile *p, int gemm_dtype, ts_stage_cost *c) {
    double compute, memory;
    if (!work_times(w, p, gemm_dtype, &compute, &memory)) return;
    double t = p->node_overhead + fmax(compute, memory);
    if (w->phase == 0) c->fwd_s += t, c->fwd_flops += w->flops;
    else if (w->phase == 1) c->bwd_s += t, c->bwd_flops += w->flops;
    else c->upd_s += t;
    split_add(w->phase == 0 ? &c->fwd_x : w->phase == 1 ? &c->bwd_x : &c->upd_x, compute, memory, p->node_overhead);
}

/* Stage s of prog costed on p into *c (zeroed by the caller): its kernels' times by phase and
 * what it sends. TS_OK, or the error of the core's calls (TS_ERR_NOMEM: the kernels' list). */
static ts_status cost_stage(const ts_program *prog, int s, const ts_device_profile *p, int gemm_dtype,
                            ts_stage_cost *c) {
    int n = ts_program_stage_work(prog, s, NULL, 0);
    if (n < 0) return ts_last_status();
    ts_node_work *w = malloc(sizeof *w * (size_t)(n > 0 ? n : 1));
    if (!w) return ts_set_error(TS_ERR_NOMEM, "ts_cost_program: out of memory (%d kernels of stage %d)", n, s);
    n = ts_program_stage_work(prog, s, w, n);
    for (int i = 0; i < n; i++) cost_add(&w[i], p, gemm_dtype, c);
    free(w);
    if (n < 0) return ts_last_status();
    return ts_program_stage_traffic(prog, s, &c->send_bytes, &c->nsend, &c->shared_bytes);
}

int ts_cost_program(const ts_program *prog, const ts_device_profile *p, int gemm_dtype, ts_stage_cost *c, int cap) {
    int S = ts_program_num_stages(prog);
    if (S > cap) S = cap;
    memset(c, 0, sizeof *c * (size_t)(S > 0 ? S : 0));
    for (int s = 0; s < S; s++)
        if (cost_stage(prog, s, p, gemm_dtype, &c[s]) != TS_OK) return -1;
    return S;
}
