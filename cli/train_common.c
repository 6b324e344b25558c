/*
 * train_common.c — the flags, replicas, --out directories and model directories the training and
 * inference subcommands share (train_common.h), each error printed naming the flag or the file.
 */
#include "train_common.h"

#include <sys/stat.h>

#include "cli.h"

/* ------------------------------------------------------------------ options */

cli_device_opts cli_dev;

int cli_load_flags(int strict) {
    return (strict ? TS_LOAD_STRICT : 0) | (cli_dev.allow_nonfinite ? TS_LOAD_ALLOW_NONFINITE : 0);
}

/* --threads at most ts_max_threads(), and --device-profile read into cli_dev (options.h). */
int cli_opts_check_shared(const char *cmd, const cli_optset *s) {
    const cli_opt *th = cli_opts_find(s, "threads");
    if (th && th->kind == CLI_INT && *(int *)th->ptr > ts_max_threads()) {
        fprintf(stderr, "tessera %s: --threads %d: at most %d (4 x the %d online CPUs)\n", cmd, *(int *)th->ptr,
                ts_max_threads(), ts_max_threads() / 4);
        return 2;
    }
    static ts_device_profile profile;
    if (cli_opts_find(s, "device-profile") && cli_dev.profile) {
        if (cli_dev.memory_gib > 0) {
            fprintf(stderr, "tessera %s: --device-memory and --device-profile exclude each other (both set the "
                            "memory a program may take)\n", cmd);
            return 2;
        }
        if (cli_device_profile_load(cmd, cli_dev.profile, &cli_dev.memory_gib, &profile)) return 2;
        cli_dev.device_profile = &profile;
    }
    return 0;
}

void cli_train_suggest(const char *cmd) {
    ts_plan_request rq;
    ts_bert_config cfg;
    static ts_stage_plan pp; /* cfg points into it */
    if (!cli_dev.device_profile || !ts_train_refused_layout(&rq, &cfg, &pp)) return;
    rq.device = cli_dev.device_profile;
    cli_plan_suggest(cmd, cli_dev.profile, &rq, &pp);
}

cli_replicas cli_rep = {.size = 1};

/* The world and the replica flags: 0, or prints the error and returns 2. Prints a line describing
 * several replicas; when several ranks share this host and *threads is 0, it becomes their share. */
static int replicas_setup(const char *cmd, int *threads) {
    cli_rep.comm = ts_comm_world();
    if (!cli_rep.comm) {
        fprintf(stderr, "tessera %s: %s\n", cmd, cli_error());
        return 2;
    }
    cli_rep.rank = ts_comm_rank(cli_rep.comm);
    cli_rep.size = ts_comm_size(cli_rep.comm);
    if (cli_rep.comm_timeout > 0) ts_comm_set_timeout(cli_rep.comm, cli_rep.comm_timeout);
    if (cli_rep.shard_optimizer && cli_rep.size < 2) {
        fprintf(stderr, "tessera %s: --shard-optimizer shares the optimizer state among replicas: start %s with mpirun "
                        "-np R (R >= 2)\n", cmd, cmd);
        return 2;
    }
    if (cli_rep.size > 1)
        printf("tessera %s: %d replicas (mpirun ranks), gradients summed over them (all-reduce in %s buckets)%s\n", cmd,
               cli_rep.size, "25 MiB", cli_rep.shard_optimizer ? ", optimizer state sharded (ZeRO-1)" : "");
    /* ranks sharing this host share its cores, as torchrun's OMP_NUM_THREADS does (--threads overrides) */
    const char *ls = getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
    int local = ls ? atoi(ls) : 1, cpus = ts_max_threads() / 4;
    if (threads && *threads == 0 && local > 1) {
        *threads = cpus / local > 0 ? cpus / local : 1;
        printf("tessera %s: %d ranks on this host of %d CPUs: %d thread%s each (--threads N to choose)\n", cmd, local,
               cpus, *threads, *threads == 1 ? "" : "s");
    }
    return 0;
}

/* Make output directory DIR and lock it until the process exits. 0, 1 (cannot make it), or 2 (in use). */
static int out_lock(const char *cmd, const char *dir) {
    if (cli_rep.rank > 0) /* replicas: rank 0 holds the lock */
        return ts_make_dirs(dir) == TS_OK ? 0 : cli_fail(cmd, "", 1);
    struct stat sb;
    int existed = stat(dir, &sb) == 0;
    long other;
    ts_status s = ts_out_dir_lock(dir, &other);
    if (s == TS_OK && !existed) /* a path too long is left unguarded, as before */
        (void)ts_out_dir_guard(dir, 2, "tessera: the unfinished --out directory is removed\n");
    if (s == TS_OK) return 0;
    if (other)
        fprintf(stderr, "tessera %s: --out %s is being written by another run (pid %ld); wait for it to end, or give "
                        "another --out\n", cmd, dir, other);
    else
        fprintf(stderr, "tessera %s: --out %s: %s\n", cmd, dir, cli_error());
    return other ? 2 : 1;
}

void cli_out_finish(const char *cmd, int rc) {
    char dir[4200];
    int kept = ts_out_dir_done(rc != 0 && cli_rep.rank == 0, dir, sizeof dir);
    if (kept > 0)
        fprintf(stderr, "tessera %s: %s is kept: it holds %d checkpoint%s to --resume from\n", cmd, dir, kept,
                kept == 1 ? "" : "s");
    else if (kept < 0)
        fprintf(stderr, "tessera %s: removed the unfinished --out %s\n", cmd, dir);
}

int cli_train_start(const char *cmd, const char **out_dir, const char *resume, const char **devices, int *threads) {
    if (!(*out_dir = ts_train_out_dir(*out_dir, resume))) {
        fprintf(stderr, "tessera %s: --out DIR is required\n(tessera %s --help shows the usage)\n", cmd, cmd);
        return 2;
    }
    if (cli_dev.device && *devices) {
        fprintf(stderr, "tessera %s: --device %s and --devices %s exclude each other (--device is one device, "
                        "--devices a pipeline's list)\n", cmd, cli_dev.device, *devices);
        return 2;
    }
    if (cli_dev.device) *devices = cli_dev.device;
    return replicas_setup(cmd, threads) ? 2 : out_lock(cmd, *out_dir);
}

/* ------------------------------------------------------------------ model directories */

int cli_task_parse(const char *cmd, const char *value) {
    if (!strcmp(value, "classify")) return CLI_TASK_CLASSIFY;
    if (!strcmp(value, "qa")) return CLI_TASK_QA;
    fprintf(stderr, "tessera %s: --task %s: the tasks are classify and qa\n", cmd, value);
    return -1;
}

int cli_task_of_model(const char *cmd, const char *task_flag, const char *dir, const ts_bert_config *cfg,
                      const ts_model_meta *meta) {
    int want = task_flag ? cli_task_parse(cmd, task_flag) : -1;
    if (task_flag && want < 0) return -1;
    int have = ts_model_task(dir, cfg, meta, want < 0 ? TS_FINETUNE_AUTO : TS_FINETUNE_CLASSIFY + want);
    return have < 0 ? cli_fail(cmd, "", -1) : have == TS_FINETUNE_QA ? CLI_TASK_QA : CLI_TASK_CLASSIFY;
}

ts_tokenizer *cli_model_dir_open(const char *cmd, const char *dir, ts_bert_config *cfg, ts_model_meta *meta) {
    cfg->struct_size = sizeof *cfg; /* filled whole */
    ts_tokenizer *tok = ts_model_load_dir(dir, cfg, meta);
    if (!tok) fprintf(stderr, "tessera %s: --model %s: %s\n", cmd, dir, cli_error());
    return tok;
}

ts_program *cli_model_dir_program(const char *cmd, const char *dir, const ts_bert_config *cfg, int batch, int seq,
                                  int threads, const char *const *fetches, int nfetch) {
    char name[64];
    snprintf(name, sizeof name, "tessera %s", cmd);
    ts_model_program_opts o = {.struct_size = sizeof o, .batch = batch, .seq = seq, .threads = threads,
                               .memory_limit = (size_t)(cli_dev.memory_gib * 1073741824.0),
                               .load_flags = cli_load_flags(0), .device = cli_dev.device, .fetches = fetches,
                               .nfetch = nfetch, .name = name, .err = cli_write_err, .err_ctx = stderr};
    ts_program *p = ts_model_dir_program(dir, cfg, &o);
    if (!p && ts_last_status() == TS_ERR_NOMEM) cli_train_suggest(cmd);
    return p;
}
