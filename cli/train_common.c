/*
 * train_common.c — what the training subcommands share (see train_common.h): their flags through
 * cli_opts_parse (options.c), the BERT programs with the out-of-memory hint and the planner's
 * suggestion, model directories, each with the error printed.
 */
#include "train_common.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

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

/* ------------------------------------------------------------------ BERT programs and batches */

int cli_deterministic_setup(const char *cmd, int *threads, double max_minutes) {
    if (max_minutes > 0) {
        fprintf(stderr, "tessera %s: --max-minutes makes the run depend on the clock; it cannot be used with "
                        "--deterministic (use --max-steps)\n", cmd);
        return 2;
    }
    if (*threads <= 0) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        *threads = n > 0 ? (int)n : 1;
    }
    printf("tessera %s: deterministic: %d thread%s, fixed for the run and its resumes\n", cmd, *threads,
           *threads == 1 ? "" : "s");
    return 0;
}

int cli_optimizer_parse(const char *cmd, const char *name) {
    int k = ts_optim_kind_parse(name);
    if (k < 0) fprintf(stderr, "tessera %s: --optimizer %s: the optimizers are adamw, lamb and sgd\n", cmd, name);
    return k;
}

void cli_bert_suggest(const char *cmd, const ts_bert_config *cfg, ts_bert_head head, int batch, int seq, int train,
                    int kind, int micro, const ts_stage_plan *pp) {
    int D = pp ? pp->ndev : 1, R = cli_rep.size > 1 ? cli_rep.size : 1;
    ts_plan_request rq;
    ts_plan_request_defaults(&rq);
    rq.cfg = cfg, rq.batch = batch, rq.seq_len = seq, rq.dtype = cfg->compute_dtype;
    rq.task = !train ? TS_PLAN_INFER : head == TS_BERT_PRETRAINING ? TS_PLAN_PRETRAIN : TS_PLAN_FINETUNE;
    rq.max_predictions = cfg->max_predictions_per_seq;
    rq.optimizer = kind == TS_OPTIM_LAMB ? TS_OPTIM_LAMB : TS_OPTIM_ADAMW;
    rq.device = cli_dev.device_profile, rq.count = D * R, rq.replicas = R, rq.micro_batches = micro;
    rq.recompute = cfg->recompute != 0, rq.shard_state = R > 1 && cli_rep.shard_optimizer;
    cli_plan_suggest(cmd, cli_dev.profile, &rq, pp);
}

int cli_bert_programs(const char *cmd, const ts_bert_config *cfg, ts_bert_head head, int batch, int seq,
                     uint64_t seed, int threads, int train, float wd, const char *const *train_fetches,
                     int ntrain_fetches, ts_program **train_p, const char *const *infer_fetches,
                     int ninfer_fetches, ts_program **infer_p, const cli_train_loop *loop) {
    int kind = loop && loop->optimizer ? cli_optimizer_parse(cmd, loop->optimizer) : TS_OPTIM_ADAMW;
    if (kind < 0) return 1;
    int N = loop && loop->accumulation > 1 ? loop->accumulation : 1;
    int S = loop && loop->device_iterations > 1 ? loop->device_iterations : 1;
    const ts_stage_plan *pp = loop ? loop->pipe : NULL;
    ts_bert_config c = *cfg;
    if (pp) ts_stage_plan_apply(pp, &c);
    ts_bert_train_opts o = {.struct_size = sizeof o, .cfg = &c, .head = head, .batch = batch, .seq = seq,
                            .seed = seed, .threads = pp ? 0 : threads, .infer_threads = threads,
                            .optimizer = (ts_optim_kind)kind, .weight_decay = wd,
                            .max_grad_norm = loop ? loop->max_grad_norm : 0, .momentum = loop ? loop->momentum : 0,
                            .accumulation = N, .steps_per_call = S / N,
                            .memory_limit = (size_t)(cli_dev.memory_gib * 1073741824.0),
                            .stage_devices = pp ? pp->stage_name : NULL, .nstage_devices = pp ? pp->nstages : 0,
                            .train_fetches = train_fetches, .ntrain_fetches = ntrain_fetches,
                            .infer_fetches = infer_fetches, .ninfer_fetches = ninfer_fetches,
                            .comm = cli_rep.size > 1 ? cli_rep.comm : NULL,
                            .shard_state = cli_rep.shard_optimizer,
                            .skip_param_init = !train, /* train == 0: the model is loaded next */
                            .profile = train && loop && loop->profile, .quantize = cli_dev.quantize,
                            .quant_scales = cli_dev.quant_scales, .nquant_scales = cli_dev.nquant_scales,
                            .device = loop && !pp && loop->device ? loop->device : cli_dev.device};
    if (pp && threads > 0) o.threads = threads; /* --threads: per device */
    if (ts_bert_train_programs(&o, train ? train_p : NULL, infer_p) == TS_OK) return 0;
    fprintf(stderr, "tessera %s: %s\n", cmd, cli_error());
    if (ts_last_status() == TS_ERR_NOMEM) /* say which of the user's numbers make it that large */
        fprintf(stderr, "tessera %s: the parameters grow with the model's sizes (vocab_size %d, hidden_size %d, "
                        "num_hidden_layers %d, intermediate_size %d, max_position_embeddings %d%s%s), the "
                        "activations with the batch (%d sequences of %d tokens; --batch%s)%s\n",
                cmd, cfg->vocab_size, cfg->hidden_size, cfg->num_hidden_layers, cfg->intermediate_size,
                cfg->max_position_embeddings, cli_dev.sizes_from ? ": from " : "",
                cli_dev.sizes_from ? cli_dev.sizes_from : "", batch, seq,
                S > 1 ? ", and --device-iterations x --accumulation inputs" : "",
                cli_dev.device_profile ? "; the limit is --device-profile's"
                : cli_dev.memory_gib > 0 ? "; the limit is --device-memory" : "; --device-memory GIB sets the limit");
    if (ts_last_status() == TS_ERR_NOMEM && cli_dev.device_profile) cli_bert_suggest(cmd, &c, head, batch, seq, train, kind, N, pp);
    return 1;
}

/* ------------------------------------------------------------------ --profile */

/* ------------------------------------------------------------------ model directories */

int cli_trunc_parse(const char *cmd, const char *value) {
    int t = ts_truncation_parse(value);
    if (t < 0 && cmd) fprintf(stderr, "tessera %s: --truncate %s: expected head, tail or head+tail\n", cmd, value);
    return t;
}

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
    int have = cfg->head == TS_BERT_QUESTION_ANSWERING                       ? CLI_TASK_QA
               : cfg->head == TS_BERT_SEQ_CLASSIFICATION && meta->nlabels > 0 ? CLI_TASK_CLASSIFY
                                                                              : -1;
    if (have < 0) {
        fprintf(stderr, "tessera %s: %s is not a fine-tuned model (architecture '%s'; a sequence classifier or a "
                        "question-answering model from tessera finetune)\n",
                cmd, dir, cfg->architecture[0] ? cfg->architecture : "none");
        return -1;
    }
    if (want >= 0 && want != have) {
        fprintf(stderr, "tessera %s: --task %s, but %s is a %s model (%s)\n", cmd, task_flag, dir,
                have == CLI_TASK_QA ? "qa" : "classify", cfg->architecture);
        return -1;
    }
    return have;
}

int cli_make_dir(const char *cmd, const char *dir) {
    if (ts_make_dirs(dir) == TS_OK) return 0;
    fprintf(stderr, "tessera %s: %s\n", cmd, cli_error());
    return 1;
}

ts_tokenizer *cli_model_dir_open(const char *cmd, const char *dir, ts_bert_config *cfg, ts_model_meta *meta) {
    static char sizes_from[4200]; /* for the out-of-memory message of cli_bert_programs */
    cli_dev.sizes_from = cli_path_join(sizes_from, sizeof sizes_from, dir, "config.json") ? sizes_from : dir;
    cfg->struct_size = sizeof *cfg; /* filled whole */
    ts_tokenizer *tok = ts_model_load_dir(dir, cfg, meta);
    if (!tok) fprintf(stderr, "tessera %s: --model %s: %s\n", cmd, dir, cli_error());
    return tok;
}

ts_program *cli_model_dir_program(const char *cmd, const char *dir, const ts_bert_config *cfg, int batch, int seq,
                                 int threads, const char *const *fetches, int nfetch) {
    ts_program *p = NULL;
    ts_quant_record rec = {0};
    if (!cli_dev.quantize && cli_model_quant_load(cmd, dir, &rec)) return NULL; /* tessera quantize's: int8 */
    if (rec.mode) cli_dev.quantize = rec.mode, cli_dev.quant_scales = rec.scales, cli_dev.nquant_scales = rec.nscales;
    int rc = cli_bert_programs(cmd, cfg, cfg->head, batch, seq, 0, threads, 0, 0, NULL, 0, NULL, fetches, nfetch, &p,
                               NULL);
    if (rec.mode) cli_dev.quantize = 0, cli_dev.quant_scales = NULL, cli_dev.nquant_scales = 0;
    ts_quant_record_free(&rec);
    if (rc) return NULL;
    char path[4200];
    if (!cli_path_join(path, sizeof path, dir, "model.safetensors") ||
        ts_program_load(p, path, cli_load_flags(1), NULL) != TS_OK) {
        fprintf(stderr, "tessera %s: %s\n", cmd, cli_error());
        ts_program_free(p);
        return NULL;
    }
    return p;
}
