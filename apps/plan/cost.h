/*
 * cost.h — the cost model on a compiled program (cost.c), shared by the estimate of one layout
 * (estimate.c) and the search over layouts (search.c): each scheduled kernel's time on a device
 * profile (its FLOPs and bytes from the core: ts_program_stage_work), and a stage's time per phase.
 */
#ifndef TS_PLAN_COST_H
#define TS_PLAN_COST_H

#include "plan/plan.h"

/* A kernel's time on p (its work w from ts_program_stage_work, tessera_core.h): node_overhead +
 * max(FLOPs / GEMM rate, bytes / memory rate); 0 for a kernel that moves and computes nothing.
 * Products run in gemm_dtype (-1: their operands' dtype). */
double ts_cost_work(const ts_node_work *w, const ts_device_profile *p, int gemm_dtype);

/* A phase's time kept in parts, for devices that share a host's cores and so run with fewer
 * threads than the profile was measured with (estimate.c): the nodes whose compute time is the
 * larger (their compute time cb_c and memory time cb_m), the others (mb_c, mb_m), and the node
 * overheads. At full speed the phase takes ovh + cb_c + mb_m. */
typedef struct ts_phase_split {
    double cb_c, cb_m, mb_c, mb_m, ovh;
} ts_phase_split;
/* The phase's time when compute runs k times slower and memory traffic q times (k >= q >= 1):
 * ovh + max(cb_c k, cb_m q) + max(mb_c k, mb_m q) — each group taken as a whole, so a node that
 * becomes compute-bound at a lower thread count is counted with the others of its group. */
double ts_phase_time(const ts_phase_split *x, double k, double q);

/* A stage's time on a profile: its forward and backward of one micro-batch, its update of a step;
 * and what it sends to other stages per micro-batch. */
typedef struct ts_stage_cost {
    double fwd_s, bwd_s, upd_s;
    ts_phase_split fwd_x, bwd_x, upd_x; /* the same times in parts */
    double fwd_flops, bwd_flops;
    double send_bytes;   /* per micro-batch */
    int nsend;           /* transfers per micro-batch */
    double shared_bytes; /* copies of persistent values whose master is on another stage of the
                            same device (one copy on a device: not counted twice) */
} ts_stage_cost;
/* The stages of program prog (compiled, plan_only or not) costed on p, cap at most; returns how
 * many (ts_program_num_stages), or -1 with the error set (out of memory). A program on
 * one device is one stage whose nodes fall in phases by their place in the graph
 * (ts_node_work.phase). gemm_dtype: as ts_cost_work. */
int ts_cost_program(const ts_program *prog, const ts_device_profile *p, int gemm_dtype, ts_stage_cost *c, int cap);

/* A layout's stages compiled for planning only (estimate.c), what the search caches: per stage
 * its device (within a replica), parts, memory plan and cost. */
typedef struct ts_plan_compiled {
    int nstages, ndevices, recompute;
    int stage_dev[TS_MAX_STAGES], first[TS_MAX_STAGES], last[TS_MAX_STAGES];
    ts_stage_memory mem[TS_MAX_STAGES];
    ts_stage_cost cost[TS_MAX_STAGES];
} ts_plan_compiled;
/* Compile rq's model over `ndevices` devices with stage spec `spec` (recompute 0/1) for planning
 * only, with micro_plan micro-batches (the memory a step of any M needs: the runtime's buffers of
 * a stage hold at most min(M, stages) micro-batches in flight), for `replicas` replicas (more
 * than 1: every gradient kept to the end of the step for the all-reduce), and cost it on rq->device. */
ts_status ts_plan_compile(const ts_plan_request *rq, const char *spec, int ndevices, int recompute, int micro_plan,
                          int replicas, ts_plan_compiled *out);
/* The estimate of a compiled layout with R replicas, M micro-batches, shard 0/1 (ts_plan_estimate's
 * figures): memory per device against the profile's, 1F1B step, bubble, all-reduce, seq/s, the
 * command. *overflow: the largest device need over its memory (<= 1: fits). */
void ts_plan_evaluate(const ts_plan_request *rq, const ts_plan_compiled *pc, const char *spec, int R, int M, int shard,
                      ts_plan_layout *out, double *overflow);

/* TS_OK when rq can be planned (a model, a device, positive shapes); estimate.c. */
ts_status ts_plan_check_request(const ts_plan_request *rq);

/* A caller's request read by the struct_size rule (tessera.h), its model and device with it:
 * c->rq points at c->cfg and c->dev. NULL pointers stay NULL (check_request refuses them). */
typedef struct ts_plan_request_copy {
    ts_plan_request rq;
    ts_bert_config cfg;
    ts_device_profile dev;
} ts_plan_request_copy;
ts_status ts_plan_request_read(ts_plan_request_copy *c, const ts_plan_request *rq, const char *fn);
/* n layouts of the caller's array l read by the struct_size rule (the stride: l[0].struct_size,
 * 0 the base layout's sizeof), malloc'd (free it; NULL for n 0, or on error); a layout without its
 * micro-batch size (batch 0: a caller of an older header) gets batch. */
ts_status ts_plan_layouts_read(const ts_plan_layout *l, int n, int batch, ts_plan_layout **out, const char *fn);
/* Layout i of the caller's array out (the stride: out[0].struct_size, which every element is
 * written with) filled from *l by ts_struct_write. */
ts_status ts_plan_layout_write(ts_plan_layout *out, int i, const ts_plan_layout *l, const char *fn);

#endif
