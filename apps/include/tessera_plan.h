/*
 * tessera_plan.h — planning a run before it is made (apps/plan/): device profiles (what a device
 * has: memory, peak FLOP/s per dtype, bandwidths, links, each figure with its source), a cost
 * model on the compiled graph (time per node from its FLOPs and bytes, memory per stage from the
 * compiler's own plan, the pipeline's bubble, the replicas' all-reduce), and the search for the
 * layout — stages, replicas, micro-batches, recomputation, optimizer sharding — that fits every
 * device and trains fastest. What `tessera plan` and `tessera profile-device` do. The model and
 * its calibration are written down in docs/cost-model.md.
 */
#ifndef TESSERA_PLAN_H
#define TESSERA_PLAN_H

#include "tessera_bert.h"
#include "tessera_core.h"
#include "tessera_train.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- device profiles (apps/plan/profile*.c) */

#define TS_PROFILE_MAX_GEMM 48

/* One measured GEMM: C[m, n] = A[m, k] B[k, n] in dtype, at `flops` FLOP/s (2 m n k / seconds). */
typedef struct ts_gemm_point {
    int64_t m, n, k;
    ts_dtype dtype;
    double flops;
} ts_gemm_point;

/* A device, as the planner sees it. Figures are per device; 0 means "none" or "not known" as
 * each field says. Written as JSON (ts_device_profile_save; the keys are the field names), with
 * "sources": {"field": "where the figure came from", ...} for every figure. */
typedef struct ts_device_profile {
    size_t struct_size;        /* sizeof(ts_device_profile) */
    char name[64];             /* "cpu", "opencl:0", "ipu-mk2", "ipu-bow", "h200" */
    char description[256];
    int measured;              /* 1: measured on this machine (ts_device_profile_measure) */
    double memory_bytes;       /* memory of one device (an IPU's in-processor memory) */
    double streaming_bytes;    /* memory beside each device where optimizer state may live (the
                                  IPU's streaming memory); 0: none */
    double streaming_bw;       /* bytes/s between the device and that memory */
    double peak_flops[3];      /* dense FLOP/s for f32, bf16, f16 (indexed by ts_dtype); 0: the
                                  device does not compute in that dtype */
    double mem_bw;             /* bytes/s of the device's memory */
    double link_bw;            /* bytes/s each way between two devices of one host */
    double link_latency;       /* seconds per transfer between two devices of one host */
    double host_bw;            /* bytes/s each way between hosts */
    double host_latency;       /* seconds per transfer between hosts */
    int devices_per_host;      /* devices on one host (replicas beyond it cross host_bw) */
    /* Calibration (each with its source): */
    double eff_matmul[3];      /* fraction of peak_flops[dtype] a large matmul or conv reaches (with
                                  measured gemm points: a factor on their rates, 1 as measured) */
    double eff_mem;            /* fraction of mem_bw a memory-bound kernel reaches */
    double node_overhead;      /* seconds per scheduled node (a kernel launch, a sync) */
    int ngemm;                 /* measured GEMM rates (a measured profile), used before peak x eff */
    ts_gemm_point gemm[TS_PROFILE_MAX_GEMM];
    char sources[4096];        /* one line per figure: "field: source" */
    double mem_bw_thread;      /* bytes/s one thread reaches on a memory-bound kernel (a measured
                                  CPU profile: devices sharing a host's cores get a few threads
                                  each); 0: unknown, a device of its own */
    double attention_fwd_flops[3]; /* the fused attention op (ts_attention) as it runs, per compute
                                  dtype: FLOP/s of its forward's products (4 B H T S D FLOPs) at
                                  BERT-Base's heads, 8 x 128 tokens; the cost model prices an
                                  attention node at it; 0: not measured (its products priced as
                                  GEMMs of [T, D] x [D, S]) */
    double attention_bwd_flops[3]; /* the same of its backward (10 B H T S D FLOPs: the scores
                                  recomputed and the four gradient products) */
} ts_device_profile;

/* Read a profile: `name_or_path` with a '/' or ending in ".json" is a file; otherwise a name looked
 * up in order in $TESSERA_PROFILE_PATH (':'-separated folders), the cache of measured profiles
 * ($XDG_CACHE_HOME/tessera/profiles, else ~/.cache/tessera/profiles), and the installed profiles
 * (<datadir>/tessera/profiles, then the source tree's profiles/ for a build not installed). The
 * name of a device this machine has ("cpu", "opencl:0") that has no cached profile is measured
 * (ts_device_profile_measure, about 10 s) and cached. Errors name the file and the field: a file
 * that is not JSON, a missing or negative figure, an unknown name (listing the known ones). out is
 * filled as tessera.h says: set out->struct_size first (sizeof, or 0 for the base layout). */
TS_API ts_status ts_device_profile_load(const char *name_or_path, ts_device_profile *out);
/* Write p as JSON to path, atomically (the folders of path made when missing). */
TS_API ts_status ts_device_profile_save(const char *path, const ts_device_profile *p);
/* Measure device `device` ("cpu", "opencl:0", any registered device) in about `seconds` (0: 10):
 * GEMM per dtype the device runs, at several shapes, through the backend (ts_compile + run);
 * memory bandwidth (a large elementwise op); copy bandwidth host <-> device; the time of an empty
 * node. Fills out with measured = 1 and each source "measured by tessera profile-device on
 * <date>" (out->struct_size set first, as for ts_device_profile_load). */
TS_API ts_status ts_device_profile_measure(const char *device, double seconds, ts_device_profile *out);
/* ts_device_profile_measure, then ts_device_profile_save to path, or with path NULL to the cache
 * (ts_device_profile_cache_path); the path written in written[cap]. Their errors (an unknown
 * device: TS_ERR_NOT_FOUND or TS_ERR_ARG). */
TS_API ts_status ts_device_profile_measure_save(const char *device, double seconds, const char *path,
                                                ts_device_profile *out, char *written, size_t cap);
/* The path a measured profile of `device` is cached at (see ts_device_profile_load). */
TS_API ts_status ts_device_profile_cache_path(const char *device, char *path, size_t cap);
/* Write profile p as `tessera profile-device` shows it: each figure with its unit, the measured
 * GEMMs, the source of each figure. TS_ERR_ARG for a NULL p or write; TS_ERR_NOMEM. */
TS_API ts_status ts_device_profile_print(const ts_device_profile *p, ts_write_fn write, void *ctx);
/* Write the profiles found (name, memory, peak FLOP/s per dtype, description, where it was found),
 * one a line after a heading, the first of each name only; then the devices of this build not
 * measured yet. */
TS_API ts_status ts_device_profile_list(ts_write_fn write, void *ctx);

/* ---------------------------------------------------------------- the cost model and the planner (apps/plan/) */

typedef enum ts_plan_task { TS_PLAN_PRETRAIN = 0, TS_PLAN_FINETUNE, TS_PLAN_INFER } ts_plan_task;

/* What to plan: a BERT (cfg), a task, shapes and dtype, on `count` devices of one profile. The
 * layout fields are fixed where set and searched where left at their "search" value. */
typedef struct ts_plan_request {
    size_t struct_size;           /* sizeof(ts_plan_request) */
    const ts_bert_config *cfg;    /* the model (its compute_dtype and recompute are ignored: dtype
                                     and recompute below) */
    ts_plan_task task;            /* pretrain (MLM + NSP), finetune (sequence classifier), infer */
    int batch;                    /* sequences of one micro-batch (pretrain's --batch) */
    int seq_len;
    int max_predictions;          /* pretrain: masked positions per sequence (0: all seq_len) */
    ts_dtype dtype;               /* compute dtype: TS_F32, TS_BF16, TS_F16 */
    ts_optim_kind optimizer;      /* TS_OPTIM_ADAMW or TS_OPTIM_LAMB */
    const ts_device_profile *device;
    int count;                    /* devices in all (stages x replicas, or fewer stages sharing) */
    /* The layout: */
    const char *stages;           /* a stage spec as pretrain's --stages (ts_stage_plan_parse, the
                                     devices numbered 0 .. count/replicas - 1); NULL: searched */
    int replicas;                 /* 0: searched */
    int micro_batches;            /* gradient accumulation, micro-batches per step; 0: searched */
    int recompute;                /* -1: searched, 0: off, 1: each encoder layer recomputed */
    int shard_state;              /* -1: searched, 0: off, 1: optimizer state sharded over the
                                     replicas (ZeRO-1) */
    int stream_state;             /* 1: optimizer state may live in streaming memory when the
                                     profile has some (as Graphcore's BERT keeps it) */
    /* Added since the base layout (which ends at stream_state): */
    ts_dtype weight_dtype;        /* how parameters, gradients, gradient accumulators and optimizer
                                     state are stored: TS_F32 (f32 master weights; the precision modes
                                     "f32", "bf16", "fp16" of ts_precision_parse), or dtype itself,
                                     TS_BF16 or TS_F16 ("bf16-sr", "fp16-sr": 16-bit storage with
                                     stochastic rounding): 2 bytes each instead of 4 */
    int global_batch;             /* sequences per optimizer step, replicas x micro_batches x batch:
                                     the search keeps only layouts that make it; 0: any */
    double sequences_per_row;     /* packed rows (ts_bert_config.max_sequences_per_pack): the real
                                     sequences a row holds on average (the packer's sequences / rows,
                                     about the packed efficiency / the padded one); seq_per_s counts
                                     them: rows a second x this. 0 or 1: a sequence a row. The row's
                                     cost is costed as one sequence's (the block-diagonal mask's
                                     extra bytes are [T, T] per row, small beside the layers') */
    int split_batch;              /* 1, with global_batch: the search keeps global_batch with any
                                     micro-batch size up to batch, b = global_batch / (replicas x
                                     micro_batches) (so batch is the largest tried, and the layouts
                                     of one device count as well as a pod's); each layout's b is its
                                     ts_plan_layout.batch. 0: every layout's micro-batch is batch */
    double max_grad_norm;         /* the global-norm clipping the run will do (pretrain's
                                     --max-grad-norm); 0: none. Without clipping, accumulation,
                                     replicas, pipeline stages or fp16's loss scaling, a step's
                                     updates run inside its backward pass (ts_optim_opts.
                                     updates_in_backward) and the gradients' memory is reused:
                                     such a layout plans no gradients kept (ts_stage_memory.grads
                                     0; each is an activation while it lives) */
} ts_plan_request;
/* Defaults: BERT-Base (ts_bert_config_default), pretrain, batch 8, seq_len 128, max_predictions
 * 20, f32, AdamW, count 1, everything of the layout searched, stream_state 1, weight_dtype TS_F32,
 * global_batch 0, split_batch 0, max_grad_norm 0. rq need not be set up: its base layout is
 * filled, struct_size included (tessera.h); a caller of this header then sets struct_size =
 * sizeof(ts_plan_request) and the fields added since (their zero values, TS_F32 and 0, are the
 * defaults). */
TS_API void ts_plan_request_defaults(ts_plan_request *rq);

/* One stage of a layout. Parts: 0 the embeddings, 1 .. L the encoder layers, L + 1 the heads. */
typedef struct ts_plan_stage {
    int device;                   /* index of its device within a replica */
    int first, last;              /* parts */
    ts_stage_memory mem;          /* its program's memory, from the compiler's plan */
    double need_bytes;            /* on the device: the sum of the six below */
    /* What the device holds, in bytes: mem as the layout changes it (a weight shared with another
     * stage of the device counted once; with micro-batches or replicas the gradient accumulators,
     * and the all-reduce's buckets; the optimizer state sharded over the replicas, less what is
     * streamed; activations in the compute dtype on a device of published figures): */
    double dev_params, dev_grads, dev_accumulators, dev_optimizer_state, dev_activations;
    double dev_other;             /* kernels' workspace and kept weight copies */
    double streamed_bytes;        /* optimizer state placed in streaming memory */
    double fwd_s, bwd_s;          /* one micro-batch's forward and backward */
    double update_s;              /* the step's update of its parameters */
    double send_s;                /* its transfers to the next stages, per micro-batch */
    int fits;                     /* need_bytes <= the profile's memory_bytes */
} ts_plan_stage;

/* A layout and its estimate. */
typedef struct ts_plan_layout {
    size_t struct_size;           /* sizeof(ts_plan_layout) */
    int nstages, ndevices;        /* stages and devices of one replica */
    int replicas, micro_batches, recompute, shard_state;
    char stages[256];             /* its stage spec (pretrain's --stages) */
    ts_plan_stage st[TS_MAX_STAGES];
    double step_s;                /* one optimizer step, all replicas */
    double bubble;                /* share of the devices' time idle in the pipeline */
    double allreduce_s;           /* the gradients' all-reduce across replicas */
    double allreduce_hidden_s;    /* ... of which overlapped with the backward */
    double seq_per_s;             /* replicas x micro_batches x batch / step_s (x sequences_per_row
                                     when packed) */
    int fits;                     /* every stage fits */
    char why[512];                /* what does not fit, or why it lost to the best */
    char command[1024];           /* left empty by the planner: a caller may put here the command that
                                     runs the layout (the tessera command does), which the printers show */
    int64_t batch;                /* sequences of one micro-batch: the request's batch, or with
                                     split_batch the one this layout takes (64 bits: an int would sit
                                     in the base layout's tail padding, where the struct_size rule
                                     cannot tell it from the base) */
} ts_plan_layout;

/* The model a plan is for, into cfg: read from model_dir's config.json, else from config_file (a
 * Hugging Face config.json), else BERT-Base (ts_bert_config_default); then layers, hidden, heads,
 * intermediate and vocab, each where > 0, over its num_hidden_layers, hidden_size,
 * num_attention_heads, intermediate_size and vocab_size (Graphcore's BERT used 30,400 tokens,
 * MLPerf's 30,912); then checked (ts_bert_config_check). The reading's error (naming the file), or
 * TS_ERR_ARG naming the field (also: model_dir and config_file both given). */
TS_API ts_status ts_plan_model_config(const char *model_dir, const char *config_file, int layers, int hidden, int heads,
                                      int intermediate, int vocab, ts_bert_config *cfg);
/* The request's named values, each into rq where not NULL: dtype "f32", "bf16" or "f16" ("fp16"
 * too), optimizer "adamw" or "lamb", task "pretrain", "finetune" or "infer" (the tessera command's
 * words). Nothing is set unless all are known: TS_ERR_ARG naming the field, the value and the
 * words ("ts_plan: dtype f64: expected f32, bf16 or f16"). */
TS_API ts_status ts_plan_request_names(ts_plan_request *rq, const char *dtype, const char *optimizer, const char *task);

/* Estimate one layout: rq with every layout field set (stages, replicas, micro_batches,
 * recompute 0/1, shard_state 0/1). The program of each stage is compiled for planning only
 * (ts_compile_opts.plan_only: the memory plan, nothing allocated) and costed node by node. out is
 * filled as tessera.h says: set out->struct_size first (sizeof, or 0 for the base layout). */
TS_API ts_status ts_plan_estimate(const ts_plan_request *rq, ts_plan_layout *out);
/* The first stage of rq's layout (ts_plan_estimate) that does not fit its device's memory, its
 * need in *need_bytes (may be NULL; 0 when none); -1 when every stage fits or the estimate cannot
 * be made (the error then set). */
TS_API int ts_plan_unfit_stage(const ts_plan_request *rq, double *need_bytes);
/* Search the layouts rq leaves open (a request the model cannot run is TS_ERR_ARG naming the
 * fields: seq_len above cfg's max_position_embeddings, a pretraining max_predictions above
 * seq_len, replicas that do not divide count, a global_batch no layout makes); micro-batches are
 * tried in powers of two from the devices of a replica to 4,096 (or the one global_batch leaves).
 * out (cap of them) receives the *n best, the best first: those that fit by estimated throughput;
 * then, when none fits, the closest by what a user would change first (docs/cost-model.md, "When
 * nothing fits": the fewest pipeline stages among those nearly as close, recomputation and the
 * optimizer state's streaming and sharding taken where they help), each with `why` naming the
 * device that overflows, by how much and with what. Set out[0].struct_size first: the array's
 * stride, each layout written with it (tessera.h). */
TS_API ts_status ts_plan_search(const ts_plan_request *rq, ts_plan_layout *out, int cap, int *n);
/* What the planner says of a run refused for memory: for the layout asked (asked, every layout
 * field set but stages, which are pp's: ts_stage_plan_spec), the first stage that does not fit
 * (ts_plan_unfit_stage, its need in *need_bytes, which may be NULL); then the search (ts_plan_search)
 * for the best layout of as many devices, asked's layout left open, into *best (its struct_size set
 * first), *found 1 when there is one (0: the search's error set). Returns that stage, or -1 when
 * every stage fits or the estimate cannot be made (also: asked, best or found NULL, out of memory). */
struct ts_stage_plan; /* tessera_tasks.h */
TS_API int ts_plan_suggest(const ts_plan_request *asked, const struct ts_stage_plan *pp, double *need_bytes,
                           ts_plan_layout *best, int *found);
/* Write layouts (the best first) as `tessera plan` prints them: per stage its device, parts,
 * memory breakdown and busy time; the bubble; the all-reduce and how much is hidden; seq/s; the
 * command. explain: also the next ones and why each lost. */
TS_API ts_status ts_plan_print(const ts_plan_request *rq, const ts_plan_layout *l, int n, int explain,
                               ts_write_fn write, void *ctx);
/* The same as one JSON object. */
TS_API ts_status ts_plan_print_json(const ts_plan_request *rq, const ts_plan_layout *l, int n, ts_write_fn write,
                                    void *ctx);

#ifdef __cplusplus
}
#endif
#endif /* TESSERA_PLAN_H */
