/*
 * train_common.h — what `tessera pretrain`, `finetune`, `eval` and `predict` share: their flags
 * (read by cli_opts_parse) and the settings they share, the BERT programs, and model directories
 * (config.json + model.safetensors + vocab.txt) read back, each with its error printed.
 */
#ifndef CLI_TRAIN_COMMON_H
#define CLI_TRAIN_COMMON_H

#include <stdint.h>
#include <stdio.h>

#include "options.h"
#include "tessera_apps.h"

/* ------------------------------------------------------------------ options */

/* The option tables are cli_opt (options.h: cli_opts_parse, which also reads --device-profile
 * into cli_dev and checks --threads). */

/* Settings that every program a command compiles, and every model it loads, follows: flags that
 * the subcommands share, listed in an option table with CLI_DEVICE_OPTS (and CLI_LOAD_OPTS where
 * a model is loaded). One command runs per process, so they live here once. */
typedef struct cli_device_opts {
    double memory_gib;   /* --device-memory GIB: the memory a program may take (0: the device's) */
    int allow_nonfinite; /* --allow-nonfinite: load weights that hold NaN or inf */
    const char *sizes_from; /* where the model's sizes came from, for an out-of-memory message
                               ("--hidden, --layers, ..." or "DIR/config.json") */
    const char *profile;    /* --device-profile PROFILE: the memory limit is its device's, and a
                               program refused for memory gets the planner's suggestion */
    const ts_device_profile *device_profile; /* that profile, read by cli_opts_parse */
    int quantize;           /* the inference programs' ts_compile_opts.quantize: set by
                               cli_model_dir_program from the model directory's config */
    const ts_quant_scale *quant_scales; /* with quantize TS_QUANT_STATIC: the scales (idem) */
    int nquant_scales;
    const char *device;     /* eval / predict --device DEV: the device their programs run on
                               (NULL: the CPU) */
} cli_device_opts;
extern cli_device_opts cli_dev;
#define CLI_DEVICE_OPTS                                                                                 \
    {"device-memory", CLI_FLOAT, &cli_dev.memory_gib, 0, "GIB",                                         \
     "memory a compiled program may take (default: the device's, for the CPU\n"                        \
     "its physical memory); a larger program is refused before it allocates"},                          \
    {"device-profile", CLI_STR, &cli_dev.profile, 0, "P",                                               \
     "the memory of a device of profile P (a name, `tessera profile-device\n"                          \
     "--list`, or a .json path) instead; a program larger is refused before\n"                         \
     "it allocates, with the planner's layout that fits (tessera plan)"}
#define CLI_LOAD_OPTS                                                                                   \
    {"allow-nonfinite", CLI_FLAG, &cli_dev.allow_nonfinite, 0, NULL,                                    \
     "load a model whose weights hold NaN or inf (refused by default)"}
/* --device DEV of the inference subcommands (eval, predict): one device. */
#define CLI_INFER_DEVICE_OPT                                                                            \
    {"device", CLI_STR, &cli_dev.device, 0, "DEV",                                                      \
     "the device the model runs on (default cpu; e.g. opencl:0, or a plugin's)", "devices"}
/* ts_program_load's flags for a model (TS_LOAD_STRICT when strict) under these settings. */
int cli_load_flags(int strict);

/* ------------------------------------------------------------------ replicas (cli/replicas.c) */

/* `mpirun -np R tessera pretrain|finetune ...`: each rank is a replica of the run (with --devices
 * a whole pipeline); the global batch is --batch x --accumulation (or --micro-batches) x R, and
 * rank r trains on micro-batches r, r + R, ... of what one process would read (so R ranks give
 * the losses and parameters of one process with R times the accumulation). Rank 0 alone prints,
 * writes metrics.jsonl and the model, and takes the --out lock; checkpoints are written by every
 * rank together (ts_program_save_state_parts). One command runs per process, so this lives here. */
typedef struct cli_replicas {
    ts_comm *comm;        /* the world (one rank without mpirun) */
    int rank, size;
    int shard_optimizer;  /* --shard-optimizer: ZeRO-1 */
    double comm_timeout;  /* --comm-timeout SECONDS (0: the default, 60) */
} cli_replicas;
extern cli_replicas cli_rep;
#define CLI_REPLICA_OPTS                                                                                \
    {NULL, CLI_TEXT, NULL, 0, NULL,                                                                     \
     "  Replicas: mpirun -np R tessera ... runs R data-parallel replicas (each with its --devices);\n"  \
     "            the global batch is R times one process's, the gradients summed over the ranks\n"    \
     "            (one machine: mpirun --oversubscribe -np R; hosts: mpirun --host a:1,b:1 -np 2)\n"}, \
    {"shard-optimizer", CLI_FLAG, &cli_rep.shard_optimizer, 0, NULL,                                    \
     "each rank keeps and updates 1/R of the optimizer state (ZeRO-1)"},                               \
    {"comm-timeout", CLI_FLOAT, &cli_rep.comm_timeout, 0, "S",                                         \
     "a rank that waits S seconds (default 60) for the others stops the\n"                            \
     "job, naming the ranks that did not arrive"}
/* The world and the flags above: 0, or prints the error and returns 2. Prints one line describing
 * the replicas when there are several. When several ranks share this host and *threads is 0 (all
 * CPUs), it becomes their share of the CPUs. */
int cli_replicas_setup(const char *cmd, int *threads);
/* ------------------------------------------------------------------ deterministic runs */

/* --deterministic: the same seed and thread count give bit-identical losses and parameters run
 * to run. tessera's kernels already compute the same bits at a fixed thread count (static
 * OpenMP schedules, no atomics, OpenMP's dynamic adjustment off), so the flag pins the thread
 * count (*threads, or every online CPU when it is 0) and refuses what would depend on the clock
 * (--max-minutes). Checkpoints record the count and --resume refuses another. Returns 0, or
 * prints the error naming the flags and returns 2. */
int cli_deterministic_setup(const char *cmd, int *threads, double max_minutes);

/* ------------------------------------------------------------------ model directories */

/* --truncate VALUE: the TS_TRUNC_* named value, or -1 after printing "tessera CMD: --truncate
 * VALUE: ..." (nothing when cmd is NULL). */
int cli_trunc_parse(const char *cmd, const char *value);

/* mkdir -p; 0 on success, else prints "tessera CMD: DIR: reason". */
int cli_make_dir(const char *cmd, const char *dir);
/* Make output directory DIR (cli_make_dir) and lock it for this run: an exclusive flock on
 * DIR/.tessera.lock, which holds the pid, kept until the process exits. A second run on the same
 * DIR is refused at start, naming the directory and the other run's pid, instead of the two
 * deleting each other's temporary files. 0, 1 (cannot create it), or 2 (in use). */
int cli_out_lock(const char *cmd, const char *dir);
/* The end of the run (out_dir.c), rc its exit code: after a failure the output directory
 * cli_out_lock made for it (none when DIR was there before) is removed, so a failure leaves no
 * half-made model directory behind, unless it holds a checkpoint (DIR/checkpoints/, what
 * --resume continues from), which is kept and said. Until then a fatal signal removes it the
 * same way before the process dies. */
void cli_out_finish(const char *cmd, int rc);

/* Read DIR/config.json into cfg and meta, and load DIR/vocab.txt. Prints the error (naming the
 * file) and returns NULL on failure. */
ts_tokenizer *cli_model_dir_open(const char *cmd, const char *dir, ts_bert_config *cfg, ts_model_meta *meta);

/* How the training program runs its steps (NULL: one batch per step and per call, no clipping).
 *   accumulation       micro-batches per optimizer step (ts_optim_opts.accumulation_steps)
 *   device_iterations  runs per ts_program_run (ts_compile_opts.device_iterations): every input,
 *                      "lr" too, is then fed [device_iterations, ...]
 *   max_grad_norm      clip the gradients to this global norm (0: no clipping, as PyTorch
 *                      without clip_grad_norm_); BERT's recipe and Hugging Face's Trainer use 1.0
 * With cfg->compute_dtype TS_F16 the training program also scales the loss dynamically
 * (ts_backward_scaled, GradScaler's defaults), as fp16 training needs. */
typedef struct cli_train_loop {
    int accumulation, device_iterations;
    float max_grad_norm;
    const char *optimizer; /* --optimizer: "adamw" (also NULL), "lamb" or "sgd" */
    float momentum;        /* SGD's --momentum */
    const ts_stage_plan *pipe; /* --devices / --stages: a pipeline (NULL: one device) */
    const char *device;    /* --devices naming one device, without --stages: it (NULL: the CPU) */
    int profile;           /* --profile: compile the training program with ts_compile_opts.profile */
} cli_train_loop;

/* --optimizer NAME: "adamw" (the default), "lamb" or "sgd". Returns the kind, or -1 after printing
 * the error. AdamW and LAMB leave biases and LayerNorm weights out of weight decay, as BERT's
 * recipes do; LAMB also gives them trust ratio 1 (TensorFlow's exclude_from_layer_adaptation,
 * set like its weight-decay exclusions in BERT's LAMB recipe); SGD (PyTorch's) leaves them out
 * of weight decay too. */
int cli_optimizer_parse(const char *cmd, const char *name);

/* Build BERT with a head for batch x seq into a new graph; when `train`, add backward and the
 * optimizer of loop (AdamW when loop is NULL; lr fed as the input "lr", weight decay wd except
 * on biases and LayerNorm weights, as BERT's and Hugging Face's recipes do; AdamW and LAMB with
 * eps 1e-6) and compile a training program fetching
 * train_fetches (run as `loop` says), else leave *train_p NULL. An inference program fetching
 * infer_fetches is always compiled (into *infer_p, which may be NULL to skip it). Prints the
 * error and returns nonzero on failure. */
int cli_bert_programs(const char *cmd, const ts_bert_config *cfg, ts_bert_head head, int batch, int seq,
                     uint64_t seed, int threads, int train, float wd, const char *const *train_fetches,
                     int ntrain_fetches, ts_program **train_p, const char *const *infer_fetches,
                     int ninfer_fetches, ts_program **infer_p,
                     const cli_train_loop *loop);

/* A program refused for memory under --device-profile: print the planner's suggestion
 * (cli_plan_suggest) for the same model (cfg, with the pipeline pp's stages applied; pp NULL: one
 * device), batch x seq, dtype, optimizer kind and `micro` micro-batches a step, on as many devices. */
void cli_bert_suggest(const char *cmd, const ts_bert_config *cfg, ts_bert_head head, int batch, int seq, int train,
                      int kind, int micro, const ts_stage_plan *pp);

/* --profile (pretrain, finetune): the training program is compiled with profiling on
 * (cli_train_loop.profile; a pipeline, --devices, is refused); the run prints its report
 * (ts_train_profile_print), the first call left out as a warm-up. */
#define CLI_PROFILE_OPT(ptr)                                                                            \
    {"profile", CLI_FLAG, ptr, 0, NULL,                                                                 \
     "print to stdout, at the end, where the training step's time went: the\n"                        \
     "share outside kernels, then time per op type, per layer and per shape\n"                        \
     "(see ts_program_profile_report); the first step is a warm-up, left out"}

/* The inference program of model directory dir (its config in cfg, head cfg->head) for batch x
 * seq, fetching `fetches`, with DIR/model.safetensors loaded strictly. NULL after printing the
 * error ("tessera CMD: ...") on failure. */
ts_program *cli_model_dir_program(const char *cmd, const char *dir, const ts_bert_config *cfg, int batch, int seq,
                                 int threads, const char *const *fetches, int nfetch);

/* ------------------------------------------------------------------ tasks */

/* What a fine-tuned model does: --task classify (BertForSequenceClassification) or --task qa
 * (BertForQuestionAnswering). */
typedef enum { CLI_TASK_CLASSIFY = 0, CLI_TASK_QA } cli_task;

/* The task of `tessera eval` / `predict`: from the model directory's architecture, checked
 * against --task when it is given (task_flag may be NULL). Prints the error naming the flag or
 * the directory and returns -1 when they disagree or the model is neither. */
int cli_task_of_model(const char *cmd, const char *task_flag, const char *dir, const ts_bert_config *cfg,
                     const ts_model_meta *meta);
/* Parse a --task value ("classify" or "qa"); -1 with a message on anything else. */
int cli_task_parse(const char *cmd, const char *value);

#endif
