/*
 * train_common.h — what pretrain, finetune, eval, predict and export share: flags and settings, --out
 * directories, model directories read back, each error printed (train_common.c).
 */
#ifndef CLI_TRAIN_COMMON_H
#define CLI_TRAIN_COMMON_H

#include "options.h"
#include "tessera_apps.h"

/* The settings every program a command compiles, and every model it loads, follows: the flags of
 * CLI_DEVICE_OPTS (and CLI_LOAD_OPTS, CLI_INFER_DEVICE_OPT), once per process. */
typedef struct cli_device_opts {
    double memory_gib;   /* --device-memory GIB: the memory a program may take (0: the device's) */
    int allow_nonfinite; /* --allow-nonfinite: load weights that hold NaN or inf */
    const char *profile;    /* --device-profile PROFILE: its device's memory is the limit, and a
                               program refused for memory gets the planner's suggestion */
    const ts_device_profile *device_profile; /* that profile, read by cli_opts_parse */
    const char *device;     /* --device DEV (NULL: the CPU); pretrain and finetune: cli_train_start's */
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
#define CLI_INFER_DEVICE_OPT                                                                            \
    {"device", CLI_STR, &cli_dev.device, 0, "DEV",                                                      \
     "the device the model runs on (default cpu; e.g. opencl:0, or a plugin's)", "devices"}
/* ts_program_load's flags for a model (TS_LOAD_STRICT when strict) under these settings. */
int cli_load_flags(int strict);

/* The flags pretrain and finetune share, into the fields of the same names of their options `o`
 * (ts_pretrain_job_opts, ts_finetune_run_opts); --device into cli_dev.device (cli_train_start). */
#define CLI_TRAIN_OPTS(o)                                                                               \
    {"optimizer", CLI_STR, &(o).optimizer, 0, "adamw|lamb|sgd",                                         \
     "default adamw; lamb: layer-wise trust ratios, as BERT's large-batch\n"                            \
     "recipe, biases and LayerNorm weights without weight decay or trust ratio;\n"                      \
     "sgd: with --momentum; recorded in checkpoints"},                                                  \
    {"momentum", CLI_FLOAT, &(o).momentum, 0, "M", "sgd's momentum (default 0)"},                       \
    {"weight-decay", CLI_FLOAT, &(o).weight_decay, 0, "X",                                              \
     "decoupled weight decay (default 0.01; not on biases and LayerNorm)"},                             \
    {"max-grad-norm", CLI_FLOAT, &(o).max_grad_norm, 0, "X",                                            \
     "clip the gradients to global norm X, as BERT's recipe and Hugging Face's\n"                       \
     "Trainer with 1.0 (default 0: no clipping)"},                                                      \
    {"pack", CLI_INT, &(o).pack, 0, "S", "up to S sequences a row (packed, exact; finetune: classify)"},   \
    {"accumulation", CLI_INT, &(o).accumulation, 1, "N",                                                \
     "micro-batches of --batch per optimizer step (default 1: the effective\n"                          \
     "batch is batch x N; --max-steps counts optimizer steps)"},                                        \
    {"device-iterations", CLI_INT, &(o).device_iterations, 1, "K",                                      \
     "optimizer steps per call into the compiled program (default 1; --max-steps,\n"                    \
     "--save-every, --stop-after and pretrain's --eval-every: multiples of K;\n"                        \
     "finetune leaves out the rows of an epoch that do not fill a call)"},                              \
    {NULL, CLI_TEXT, NULL, 0, NULL, "  Devices and pipelines:\n"},                                      \
    {"device", CLI_STR, &cli_dev.device, 0, "DEV", "one program on device DEV (opencl:0, a plugin's; default cpu)"}, \
    {"devices", CLI_STR, &(o).devices, 0, "LIST",                                                       \
     "cpu:0,cpu:1,...: run the model as a pipeline over these devices (the\n"                           \
     "cores shared among them; more devices than cores oversubscribe), stages\n"                        \
     "in 1F1B order (one device: as --device)"},                                                        \
    {"stages", CLI_STR, &(o).stages, 0, "SPEC|auto",                                                    \
     "which device runs what: \"0:emb,heads 1:0-3 2:4-7 3:8-11\" (device\n"                             \
     "index: emb, heads, layers N or A-B; the seed system's layout for 12\n"                            \
     "layers), or auto (default: time each part, then balance the layers)"},                            \
    {"micro-batches", CLI_INT, &(o).micro_batches, 1, "M",                                              \
     "micro-batches of --batch per step (a pipeline: default 2 x devices;\n"                            \
     "the effective batch is batch x M; the same as --accumulation)"},                                  \
    {"threads", CLI_INT, &(o).threads, 0, "N", "CPU threads (default: all)"},                           \
    {"bf16", CLI_FLAG, &(o).bf16, 0, NULL, "bf16 matrix products, f32 master weights"},                 \
    {"fp16", CLI_FLAG, &(o).fp16, 0, NULL, "fp16 matrix products with dynamic loss scaling, f32 master weights"}, \
    {"precision", CLI_STR, &(o).precision, 0, "MODE",                                                   \
     "f32 (default), bf16 / fp16 (as the flags), bf16-sr / fp16-sr: weights,\n"                        \
     "gradients and optimizer state in 16 bits, updates rounded stochastically"},                       \
    {"round-nearest", CLI_FLAG, &(o).round_nearest, 0, NULL, "-sr: round updates to nearest (the ablation)"}, \
    {"recompute", CLI_FLAG, &(o).recompute, 0, NULL,                                                    \
     "recompute each layer's forward in the backward: less memory, same result"},                       \
    {"deterministic", CLI_FLAG, &(o).deterministic, 0, NULL,                                            \
     "bit-identical runs for a seed: pins --threads (default all CPUs) and\n"                           \
     "refuses --max-minutes"},                                                                          \
    {"profile", CLI_FLAG, &(o).profile, 0, NULL,                                                        \
     "print to stdout, at the end, where the training step's time went: the\n"                        \
     "share outside kernels, then time per op type, per layer and per shape\n"                        \
     "(see ts_program_profile_report); the first step is a warm-up, left out"},                         \
    {NULL, CLI_TEXT, NULL, 0, NULL, "  Checkpoints and resume:\n"},                                     \
    {"max-minutes", CLI_FLOAT, &(o).max_minutes, 0, "M", "stop training after M minutes, then save (0: no limit)"}, \
    {"save-every", CLI_INT, &(o).save_every, 0, "N",                                                    \
     "write --out every N steps (default: only at the end), and a full-state\n"                         \
     "checkpoint OUT/checkpoints/step-NNNNNN (parameters, optimizer state, step\n"                      \
     "and dropout seed, the data's position), atomically"},                                             \
    {"keep", CLI_INT, &(o).keep, 1, "N", "checkpoints kept, the newest (default 3)"},                   \
    {"resume", CLI_STR, &(o).resume, 0, "DIR",                                                          \
     "continue from the newest valid checkpoint of an earlier run's --out DIR\n"                        \
     "(or from DIR itself when it is one checkpoint; --out defaults to DIR); a\n"                       \
     "newer checkpoint cut short or corrupt is skipped with a message naming it.\n"                     \
     "Give the same options and data (pretrain's --max-steps may change): the\n"                        \
     "result is the same, bit for bit, as one uninterrupted run (unless\n"                              \
     "--max-minutes stops or shapes it)"},                                                              \
    {"stop-after", CLI_INT, &(o).stop_after, 1, "N",                                                    \
     "end this invocation after step N, with a checkpoint there, keeping the\n"                         \
     "schedule of --max-steps (to train in pieces)"}

/* A training run refused for memory (ts_train_refused_layout) under --device-profile: the planner's
 * layout that fits (cli_plan_suggest). */
void cli_train_suggest(const char *cmd);

/* After pretrain's or finetune's parse: *out_dir defaulting to --resume's run directory, --device as
 * the one device of *devices, the replicas (*threads their share), then --out locked until the
 * process exits (a second run on it is refused). 0, or the exit code after printing the error. */
int cli_train_start(const char *cmd, const char **out_dir, const char *resume, const char **devices, int *threads);

/* `mpirun -np R tessera pretrain|finetune ...`: each rank a replica of the run, the
 * gradients summed; rank 0 alone prints, writes the model and takes the --out lock. */
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

/* The end of the run, rc its exit code: after a failure the directory cli_train_start made is
 * removed unless it holds checkpoints, and what happened said (a fatal signal removes it too). */
void cli_out_finish(const char *cmd, int rc);

/* Read DIR/config.json into cfg and meta, and load DIR/vocab.txt. Prints the error (naming the
 * file) and returns NULL on failure. */
ts_tokenizer *cli_model_dir_open(const char *cmd, const char *dir, ts_bert_config *cfg, ts_model_meta *meta);
/* The inference program of model directory dir (config cfg) for batch x seq, fetching `fetches`, under
 * these settings (ts_model_dir_program). NULL after printing the error (and for memory why, with the
 * planner's suggestion under --device-profile). */
ts_program *cli_model_dir_program(const char *cmd, const char *dir, const ts_bert_config *cfg, int batch, int seq,
                                  int threads, const char *const *fetches, int nfetch);

/* What a fine-tuned model does: --task classify or --task qa (ts_finetune_kind less 1). */
typedef enum { CLI_TASK_CLASSIFY = 0, CLI_TASK_QA } cli_task;
/* The task of model directory dir (eval, predict; ts_model_task), checked against --task when given
 * (task_flag may be NULL). Prints the error and returns -1 when they disagree or the model is neither. */
int cli_task_of_model(const char *cmd, const char *task_flag, const char *dir, const ts_bert_config *cfg,
                      const ts_model_meta *meta);
/* Parse a --task value ("classify" or "qa"); -1 with a message on anything else. */
int cli_task_parse(const char *cmd, const char *value);

#endif
