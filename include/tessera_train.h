/*
 * tessera_train.h — training: the backward pass, recomputation and pipeline stages on a graph,
 * loss scaling, optimizers, learning-rate schedules, and the loop of a training run.
 * Part of the public API; include "tessera.h", which includes every part. */
#ifndef TESSERA_TRAIN_H
#define TESSERA_TRAIN_H

#include "tessera_core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- training */


/* Append the backward pass of scalar `loss` to the graph: afterwards every trainable parameter
 * that loss depends on has a gradient value named "<param>@GRAD" (see ts_grad). Once per graph. */
TS_API ts_status ts_backward(ts_graph *g, ts_value loss);
/* The gradient of a parameter after ts_backward, or TS_NONE. */
TS_API ts_value ts_grad(const ts_graph *g, ts_value param);

/* Parameters kept in 16 bits (dtype TS_BF16 or TS_F16), as model.to(torch.bfloat16) or Paddle's
 * amp.decorate(level="O2") on a model built in f32: every f32 parameter of g becomes dtype (same
 * value, name and initializer; its initial value is rounded to nearest), and the nodes that read it
 * read one cast of it to f32 instead, made just before the first of them (on that node's pipeline
 * stage and in its recompute segment), so the model computes what it computed. Call it after
 * building the model and before ts_backward: each parameter's gradient "<p>@GRAD" is then of
 * dtype, and ts_optimizer keeps the parameter's state in 16 bits and rounds every update of the
 * parameter and of its state stochastically (see ts_optim_opts.round_nearest). A parameter made
 * after the call stays as made. TS_ERR_DTYPE for another dtype, TS_ERR_ARG after ts_backward. */
TS_API ts_status ts_graph_store_params(ts_graph *g, ts_dtype dtype);

/* Recomputation (activation checkpointing). Ops built between ts_graph_recompute_begin and
 * ts_graph_recompute_end form a segment whose intermediates are not kept for the backward pass:
 * ts_backward recomputes the segment's forward (clones of its ops, appended where the backward
 * reaches the segment) and differentiates the segment from those, so the forward's intermediates
 * die as soon as the forward is done with them. What stays alive is what the segment reads from
 * outside it (its input, the checkpoint) and what later ops read from it (its output). Typically
 * one segment per layer: memory for one layer's activations plus one checkpoint per layer,
 * against every layer's activations, at the cost of a second forward of each segment.
 * The clones compute what the originals did (a cloned dropout draws the same mask), so the
 * gradients are bit for bit those without segments (tests/test_recompute.c checks BERT, f32
 * and bf16). Ops with side effects are not recomputed; inference programs are unchanged.
 * Segments do not nest; begin only before ts_backward, and end each one before it (else
 * TS_ERR_ARG, recorded in the graph like a builder error). */
TS_API ts_status ts_graph_recompute_begin(ts_graph *g);
TS_API ts_status ts_graph_recompute_end(ts_graph *g);
/* Recompute GELU outputs (call before ts_backward): where the backward reads a GELU's output (or
 * a cast of it: BERT's FFN input to its second product, for that product's weight gradient), it
 * reads a clone of the GELU (and the cast) appended there instead, computed from the GELU's
 * input, which the backward keeps anyway for the GELU's own gradient. The forward's output then
 * dies in the forward: BERT-Base keeps one [B, T, 3072] activation less per layer, for one GELU
 * pass per layer more. Same bits. GELUs inside recompute segments, on another pipeline stage than
 * the reader, or not differentiated are left alone. TS_ERR_ARG after ts_backward. */
TS_API ts_status ts_graph_recompute_gelu(ts_graph *g);
/* Recompute parameters' casts (call before ts_backward): where the backward reads a cast of a
 * parameter (autocast's bf16 or f16 copy of a weight, which a product's input gradient reads), it
 * reads a clone of the cast appended there instead, so the forward's copy dies after its forward
 * use. BERT-Base in bf16 keeps its 16-bit weight copies (about 210 MiB) out of the arena's peak at
 * the start of the backward, for one more pass over those weights a step. Same bits. Casts inside
 * recompute segments or on another pipeline stage than the reader are left alone; with
 * updates_in_backward a parameter's update still waits for the clone's read. TS_ERR_ARG after
 * ts_backward. */
TS_API ts_status ts_graph_recompute_casts(ts_graph *g);

/* Pipeline stages (model parallelism, as Paddle's ipu_shard_guard(index, stage)). Ops built between
 * ts_graph_stage_begin(g, k) and ts_graph_stage_end(g) are placed on pipeline stage k (0 ..
 * TS_MAX_STAGES - 1); stages run in order in the forward pass and in reverse in the backward.
 * ts_backward places each gradient op on the stage of the forward op it differentiates (a
 * recomputed segment's clones too); ts_optimizer places each parameter's accumulation and update
 * on its stage (the stage of the first op that reads it) and its global parts (sum of squares,
 * clipping coefficient, counters) where they are needed. Ops built outside any stage go where
 * their inputs are. A graph compiled for one device ignores the stages; compiled with
 * ts_compile_opts.stage_devices it runs as a pipeline (see there). Begin only before
 * ts_backward; stages do not nest (TS_ERR_ARG, recorded in the graph like a builder error). */
#define TS_MAX_STAGES 64
TS_API ts_status ts_graph_stage_begin(ts_graph *g, int stage);
TS_API ts_status ts_graph_stage_end(ts_graph *g);
/* 1 + the highest stage placed so far (0 when none). */
TS_API int ts_graph_num_stages(const ts_graph *g);

/* Dynamic loss scaling for fp16 training, as torch.cuda.amp.GradScaler: the backward pass starts
 * from d loss = scale instead of 1, so small gradients stay above fp16's underflow; the optimizer
 * (ts_optimizer, added after) divides the gradients by the scale again before its updates, and
 * at the end of each step (each optimizer step with gradient accumulation):
 *  - when any gradient holds an inf or NaN (the sum of their squares is not finite), the update
 *    is skipped — parameters, moments and step counters unchanged, the lr schedule's counter
 *    too — the scale is multiplied by backoff_factor and "optimizer@SKIPPED_STEPS" grows by one;
 *  - otherwise, after growth_interval such clean steps in a row, the scale is multiplied by
 *    growth_factor.
 * State, rank-0 f32 values saved and restored with the optimizer state (ts_program_save_state):
 * the scale "optimizer@LOSS_SCALE" (0 until the first run ends: init_scale is then in effect),
 * the clean steps since it last changed "optimizer@LOSS_SCALE_CLEAN_STEPS", and the skipped
 * steps "optimizer@SKIPPED_STEPS"; fetch them by name to log them. A sum of squares beyond
 * f32's range (a global norm of the scaled gradients above about 1.8e19) counts as an overflow. */
typedef struct ts_loss_scale_opts {
    size_t struct_size; /* sizeof(ts_loss_scale_opts) (0: the 0.1.0 layout; see tessera.h) */
    float init_scale;     /* finite, > 0 */
    float growth_factor;  /* finite, > 1 */
    float backoff_factor; /* in (0, 1) */
    int growth_interval;  /* >= 1 */
} ts_loss_scale_opts;

/* torch.cuda.amp.GradScaler's defaults: init_scale 65536 (2^16), growth_factor 2,
 * backoff_factor 0.5, growth_interval 2000. */
TS_API ts_loss_scale_opts ts_loss_scale_defaults(void);

/* ts_backward with dynamic loss scaling (opts NULL: ts_loss_scale_defaults()). The gradients
 * "<param>@GRAD" are then scaled; ts_optimizer unscales what it uses. TS_ERR_ARG, naming the
 * option, for one out of range; otherwise ts_backward's errors. */
TS_API ts_status ts_backward_scaled(ts_graph *g, ts_value loss, const ts_loss_scale_opts *opts);

/* Append in-place updates of every parameter that has a gradient, run at the end of each step.
 * lr is a scalar f32 value: a ts_scalar constant, an input fed each step, or ts_lr_schedule's.
 * SGD (PyTorch semantics): g += wd * p; m = momentum * m + g; p -= lr * m. Both are ts_optimizer
 * (below) with these options and the others at their defaults. */
TS_API ts_status ts_sgd(ts_graph *g, ts_value lr, float momentum, float weight_decay);
/* AdamW (PyTorch semantics, bias-corrected, decoupled weight decay). */
TS_API ts_status ts_adamw(ts_graph *g, ts_value lr, float beta1, float beta2, float eps, float weight_decay);

/* The optimizers, with every option (ts_sgd and ts_adamw are ts_optimizer with defaults).
 * Per parameter p with gradient g (after clipping), state zero-initialised and kept across runs:
 *  SGD   (torch.optim.SGD):   d = g + wd p; with momentum: buf = d on the first step, else
 *        buf = momentum buf + (1 - dampening) d; d = nesterov ? d + momentum buf : buf;
 *        p -= lr d.   State "<p>@MOMENTUM" (and "<p>@STEP" when dampening != 0).
 *  ADAMW (torch.optim.AdamW): t += 1; p *= 1 - lr wd; m = b1 m + (1 - b1) g;
 *        v = b2 v + (1 - b2) g^2; p -= lr / (1 - b1^t) m / (sqrt(v) / sqrt(1 - b2^t) + eps).
 *  LAMB  (You et al. 2019, bias-corrected Adam moments as NVIDIA's and pytorch-optimizer's):
 *        t += 1, m and v as AdamW; r = (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps) + wd p;
 *        trust = ||p|| / ||r|| (1 when either norm is 0, norms over the whole tensor);
 *        p -= lr trust r (trust 1 for a parameter matching no_trust).   ADAMW and LAMB state:
 *        "<p>@MOMENT1", "<p>@MOMENT2", "<p>@STEP".
 * Gradient clipping (max_grad_norm > 0, torch.nn.utils.clip_grad_norm_): before any update,
 * norm = sqrt(sum over every trained parameter of sum(g^2)), and each g is scaled by
 * min(1, max_norm / (norm + 1e-6)). The norm is the value named "optimizer@GRAD_NORM" (fetch it
 * to log it).
 * Gradient accumulation (accumulation_steps N > 1): each run — one micro-batch — adds the
 * parameters' gradients into f32 accumulators "<p>@ACCUM" (state; the first micro-batch of a
 * step overwrites them), and only every N-th run updates, with g = the accumulated sum / N:
 * the mean gradient, which matches a batch N times larger when the loss is a mean over its
 * micro-batch. Clipping then takes the norm of that mean; the optimizer's step counters and the
 * lr schedule's count optimizer steps, not runs. The rank-0 state "optimizer@MICRO_STEP" holds
 * the micro-batches summed so far in the current step (0 .. N - 1), so a checkpoint taken
 * between any two runs resumes exactly. "optimizer@GRAD_NORM" (there with clipping or loss
 * scaling) is the norm of the mean, unscaled gradient at the N-th run.
 * With loss scaling (ts_backward_scaled) the gradients are also divided by the scale.
 * Weight-decay exclusions: a parameter whose name matches one of no_decay gets wd 0. A pattern
 * holding * ? or [ is an fnmatch glob on the whole name ("*.bias"); any other is a substring
 * ("bias", "LayerNorm.weight": Hugging Face's convention). */
typedef enum ts_optim_kind { TS_OPTIM_SGD = 0, TS_OPTIM_ADAMW, TS_OPTIM_LAMB } ts_optim_kind;

typedef struct ts_optim_opts {
    size_t struct_size; /* sizeof(ts_optim_opts) (0: the 0.1.0 layout; see tessera.h) */
    ts_optim_kind kind;
    float weight_decay;           /* >= 0 */
    float momentum, dampening;    /* SGD: >= 0; dampening <= 1 */
    int nesterov;                 /* SGD: needs momentum > 0 and dampening 0 (as PyTorch) */
    float beta1, beta2, eps;      /* ADAMW / LAMB: betas in [0, 1), eps >= 0 */
    const char *const *no_decay;  /* weight-decay exclusions (may be NULL) */
    int nno_decay;
    float max_grad_norm;          /* > 0: clip gradients by global norm; 0: no clipping */
    int accumulation_steps;       /* micro-batches per optimizer step, <= 2^24; 0 or 1: none */
    const char *const *no_trust;  /* LAMB: parameters (patterns as no_decay) that take Adam's
                                     step unscaled, trust ratio 1: TensorFlow's LAMB
                                     exclude_from_layer_adaptation, which BERT's LAMB recipe
                                     sets like its weight-decay exclusions (may be NULL) */
    int nno_trust;
    /* Replicas (data parallelism, "Replicas" below): with comm of R > 1 ranks, each rank runs
     * this graph on its own micro-batches and the gradients are summed over the ranks before
     * any update. The accumulators "<p>@ACCUM" (made for every trained parameter, also without
     * accumulation) are laid out in contiguous buckets of about bucket_bytes, in the order the
     * backward pass completes them; each bucket's all-reduce (op comm_start) is posted as soon as
     * its last gradient is accumulated at the step's last micro-batch and runs on a progress
     * thread while the backward pass goes on; the updates wait for it (op comm_wait). The mean
     * then divides by N x R, so R ranks of N micro-batches each compute the step of one process
     * with N x R, and clipping, loss-scale skips and LAMB's trust ratios all see the global
     * gradient: every rank takes the same decision. With pipeline stages each stage's buckets
     * are reduced on a channel of their own, among the same stage of every rank.
     * shard_state (ZeRO stage 1): each trained parameter is given to one rank (balanced by size,
     * within each stage), only that rank keeps its optimizer state ("<p>@MOMENT1", ...) and
     * updates it, and then broadcasts it to the others; the optimizer state per rank is about
     * 1/R of the total. The results are those without sharding. */
    ts_comm *comm;                /* NULL or one rank: no replicas */
    size_t bucket_bytes;          /* 0: 25 MiB (PyTorch DistributedDataParallel's default) */
    int shard_state;              /* ZeRO-1: shard the optimizer state over the ranks */
    /* 16-bit parameters (ts_graph_store_params): their state ("<p>@MOMENT1", "<p>@MOMENT2",
     * "<p>@MOMENTUM") is kept in bf16 (also for f16 parameters: the moments need f32's range, an
     * f16 second moment underflows), the step counters and accumulators in f32; each
     * update runs on f32 copies of the parameter, its gradient and its state, and writes them back
     * rounded stochastically (ts_cast_stochastic: seed rounding_seed, step "<p>@STEP" after the
     * update — SGD then has a step counter too — key ts_cast_stochastic_key of the value's name),
     * so a resumed run, a pipeline and replicas round alike. round_nearest: to nearest even
     * instead (the ablation stochastic rounding is measured against). rounding_seed: the seed of
     * stochastic rounding (0: the graph's, ts_graph_set_seed). */
    int round_nearest;
    uint64_t rounding_seed;
    /* 1: each parameter's update runs inside the backward pass, as soon as its gradient is
     * complete and the step's last use of the parameter has run (PyTorch's optimizer-in-backward
     * hooks), and a gradient's memory is reused once its update has read it, instead of being
     * kept to the end of the step: ts_program_memory reports grads 0 and the arena holds them.
     * The numbers are the same bits as updates at the end. A gradient is then not kept after the
     * run unless it is a fetch named at compile. Not with max_grad_norm, accumulation_steps > 1,
     * replicas, loss scaling or pipeline stages (each needs every gradient before any update):
     * TS_ERR_ARG naming which. 2: the same where none of those is in use, and the updates at the
     * end otherwise (what tessera pretrain and finetune ask for). 0: at the end. */
    int updates_in_backward;
} ts_optim_opts;

/* PyTorch's defaults for a kind: SGD momentum 0; AdamW betas 0.9 / 0.999, eps 1e-8, wd 0.01;
 * LAMB betas 0.9 / 0.999, eps 1e-6, wd 0.01; no exclusions, no clipping. An unknown kind gives
 * an SGD struct with kind left as given (ts_optimizer then refuses it). */
TS_API ts_optim_opts ts_optim_defaults(ts_optim_kind kind);

/* Append the updates of every parameter that has a gradient (once per graph, after
 * ts_backward), and the clipping ops when asked. lr is a rank-0 f32 value (a constant, a fed
 * input or ts_lr_schedule's value); a constant lr must be finite and >= 0, a fed or scheduled
 * one that is not fails the run with TS_ERR_RUNTIME before any parameter changes.
 * TS_ERR_ARG on an unknown kind, an option out of range, no backward pass, no parameter with a
 * gradient, or updates already present. */
TS_API ts_status ts_optimizer(ts_graph *g, ts_value lr, const ts_optim_opts *o);

/* SGD with every option: ts_optimizer with kind SGD and these fields (wd exclusions none). */
typedef struct ts_sgd_opts {
    size_t struct_size; /* sizeof(ts_sgd_opts) (0: the 0.1.0 layout; see tessera.h) */
    float momentum, dampening, weight_decay;
    int nesterov;
} ts_sgd_opts;
TS_API ts_status ts_sgd_ex(ts_graph *g, ts_value lr, const ts_sgd_opts *o);

/* Learning-rate schedules computed inside the graph, so the whole step stays one program, as
 * Hugging Face transformers' get_constant_schedule_with_warmup / get_linear_schedule_with_warmup
 * / get_cosine_schedule_with_warmup / get_polynomial_decay_schedule_with_warmup (with
 * torch's LambdaLR: the lr of step t, 0-based, is lr * lambda(t), as when scheduler.step() follows
 * optimizer.step()). W = warmup_steps, T = total_steps:
 *   t < W:        lambda = t / max(1, W)                          (every kind)
 *   CONSTANT:     1
 *   LINEAR:       max(0, (T - t) / max(1, T - W))
 *   COSINE:       max(0, (1 + cos(2 pi cycles (t - W) / max(1, T - W))) / 2)
 *   POLYNOMIAL:   t > T: lr_end / lr;  else ((lr - lr_end) (1 - (t - W) / (T - W))^power + lr_end) / lr
 * t is a rank-0 f32 state value named "lr_schedule@STEP" (zero-initialised; save and restore it
 * with the program to resume), advanced by one at the end of each optimizer step, after the
 * updates: every run, except that with gradient accumulation or loss scaling a run whose update
 * is skipped (a micro-batch before the last of its step, a step whose scaled gradients
 * overflowed) leaves it, as Hugging Face's Trainer does. One schedule per graph. */
/* ts_lr_kind: tessera_types.h (the op contract fixes its numbers). */

typedef struct ts_lr_schedule_opts {
    size_t struct_size; /* sizeof(ts_lr_schedule_opts) (0: the 0.1.0 layout; see tessera.h) */
    ts_lr_kind kind;
    float lr;              /* the peak (base) learning rate, finite and >= 0 */
    int64_t warmup_steps;  /* >= 0 */
    int64_t total_steps;   /* >= 0; POLYNOMIAL needs total_steps > warmup_steps */
    float lr_end;          /* POLYNOMIAL: final lr, < lr (Hugging Face's default is 1e-7) */
    float power;           /* POLYNOMIAL: exponent, > 0; 0 means 1 (linear) */
    float num_cycles;      /* COSINE: cosine waves over the decay, >= 0; 0 means 0.5 (half) */
} ts_lr_schedule_opts;

/* The scheduled lr as a rank-0 f32 value (pass it to ts_optimizer / ts_sgd / ts_adamw), or
 * TS_NONE after recording TS_ERR_ARG for a bad option or a second schedule in the graph. */
TS_API ts_value ts_lr_schedule(ts_graph *g, const ts_lr_schedule_opts *o);

/* ---------------------------------------------------------------- training runs (apps/train/trainer.c) */
/* The loop of a training run, the same for pre-training, fine-tuning and library users, on one
 * device or a pipeline: each call into the program (compiled with accumulation_steps N and
 * device_iterations N x K) takes K optimizer steps of N micro-batches, which the fill hook puts
 * into the feeds (slice k = micro-batch k % N of step k / N) and the feed hook feeds; "lr" is fed
 * beside them ([N x K], each step's lr on its micro-batches). The losses come back per
 * micro-batch; a step's is the mean over its micro-batches that held rows. A non-finite loss
 * ends the run (unless skip_nonfinite: fp16, where the step was skipped and the scale lowered).
 * Each step writes a metrics row {"step", "time_s", <losses>, "lr", "seq_per_s", <extras>}; seq_per_s
 * counts the rows next_batch reported a second (a row of packed sequences counts once). */
#define TS_TRAIN_MAX_LOSSES 8
typedef struct ts_train_spec {
    size_t struct_size;
    ts_program *program;
    int micro_batches;          /* N (accumulation) */
    int steps_per_call;         /* K (device iterations) */
    float lr;                   /* peak learning rate */
    double warmup;              /* fraction of the run spent warming up linearly, then linear decay
                                   to 0 at total_steps (with a time limit the run's fraction is the
                                   larger of steps done and time spent: whichever end is nearer) */
    int64_t total_steps;        /* the run ends here */
    double max_seconds;         /* > 0: a time limit */
    const char *const *losses;  /* per-micro-batch fetches, the loss first (NULL: "loss" alone) */
    int nlosses;
    const char *const *extra;   /* rank-0 values logged after each call (optimizer@LOSS_SCALE) */
    const char *const *extra_keys; /* their keys in the metrics (NULL: the names) */
    int nextra;
    int skip_nonfinite;
    int64_t save_every, stop_after; /* checkpoint hook at multiples of save_every and at stop_after,
                                       where the run then stops */
    ts_write_fn metrics;        /* receives each step's metrics row, one line of JSON (may be
                                   NULL); ts_write_stdio with a FILE * as metrics_ctx appends
                                   the rows to a metrics.jsonl */
    void *metrics_ctx;
    ts_comm *comm;              /* replicas (the program's optimizer sums over it; NULL: none):
                                   every rank runs ts_train in step; a step's losses and rows are
                                   those of every rank's micro-batches, the time limit is rank
                                   0's, and the data ends when every rank's fill came back empty */
} ts_train_spec;

typedef struct ts_train_step_report {
    int64_t step;               /* 1-based: the step just done */
    double losses[TS_TRAIN_MAX_LOSSES];
    const char *const *names;
    int nlosses;
    double extra[TS_TRAIN_MAX_LOSSES];
    const char *const *extra_names;
    int nextra;
    float lr;
    double seq_per_s, elapsed;
    int64_t rows;
} ts_train_step_report;

typedef struct ts_train_hooks {
    void *ctx;
    /* Put micro-batch `micro` of optimizer step `step` (0-based) into slice `slice` of the
     * caller's batch buffers; *rows: rows filled (0: an empty micro-batch, padding only). 0, or -1
     * with the message in ts_last_error(). */
    int (*fill)(void *ctx, int64_t step, int micro, int slice, int *rows);
    /* Feed the filled slices to p. */
    ts_status (*feed)(void *ctx, ts_program *p);
    /* After each step (optional): progress. */
    void (*on_step)(void *ctx, const ts_train_step_report *r);
    /* Optional: more members of a step's metrics row, written into buf (cap bytes with the NUL)
     * as ", \"key\": value". */
    void (*metrics_extra)(void *ctx, char *buf, size_t cap);
    /* After each call (optional): evaluation, saving; `last` when the run ends with it. */
    ts_status (*after_call)(void *ctx, int64_t step, int last);
    /* Save a full-state checkpoint at step (optional). */
    ts_status (*checkpoint)(void *ctx, int64_t step);
} ts_train_hooks;

typedef struct ts_train_result {
    int64_t start_step, step;   /* where the run began and ended */
    double seconds;
    double loss_sum;            /* the finite steps' losses, for a mean */
    int64_t loss_n;
    int stopped, out_of_time, exhausted;
} ts_train_result;

/* The learning rate of step (0-based) after `elapsed` seconds under spec's schedule. */
TS_API float ts_train_lr(const ts_train_spec *spec, int64_t step, double elapsed);
/* Run from `step` (a resumed run's; a multiple of K) until total_steps, the time limit,
 * stop_after, or the data's end (a call whose micro-batches all came back empty). The message of
 * a failure names the step. */
TS_API ts_status ts_train(const ts_train_spec *spec, const ts_train_hooks *hooks, int64_t step, ts_train_result *result);

/* A training run's checkpoints: OUT/checkpoints/step-NNNNNN (step zero-padded to 6 digits),
 * written with ts_program_save_state (trainer_json as trainer.json) and rotated to the newest
 * `keep` (ts_checkpoint_rotate). */
#define TS_CKPT_DIR "checkpoints"
#define TS_CKPT_PREFIX "step-"
TS_API ts_status ts_train_checkpoint_save(const char *out, int64_t step, const ts_program *p, const char *trainer_json,
                                   int keep);
/* The same with this rank's JSON (ts_program_save_state_parts); with replicas a collective, and
 * rank 0 rotates. */
TS_API ts_status ts_train_checkpoint_save_parts(const char *out, int64_t step, const ts_program *p, const char *trainer_json,
                                         const char *rank_json, int keep);
/* The checkpoint to resume from: `resume` itself when it is one (holds trainer.json), else the
 * newest valid one in resume/checkpoints, else in resume (a newer invalid one is skipped, with a
 * line on stderr naming it). Writes its path to path[cap]. TS_ERR_NOT_FOUND when there is none. */
TS_API ts_status ts_train_checkpoint_find(const char *resume, char *path, size_t cap);

#ifdef __cplusplus
}
#endif
#endif /* TESSERA_TRAIN_H */
