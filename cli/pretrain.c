/*
 * pretrain.c — `tessera pretrain`: pretrain a BERT (BertForPreTraining: masked LM + next
 * sentence prediction) from scratch on plain-text files, with the data pipeline's examples
 * (src/data: sentence pairs, 80/10/10 dynamic masking). A few documents of the corpus are held
 * out (every 50th, split off into a temporary file beside the output) and a fixed set of batches
 * drawn from them measures MLM and NSP accuracy every --eval-every steps. Prints a progress line
 * on a terminal, appends every step to DIR/metrics.jsonl, and writes config.json +
 * model.safetensors + vocab.txt to --out (each file atomically) at the end and every
 * --save-every steps, together with a full-state checkpoint (ts_pretrain_ckpt_save) from which
 * --resume continues the run exactly. --profile prints, at the end, where the training step's
 * time went (ts_program_profile_report; the first step, a warm-up, left out).
 */
#include <math.h>
#include <unistd.h>

#include "cli.h"
#include "pipeline_opts.h"
#include "train_common.h"

static const char *USAGE =
    "usage: tessera pretrain --vocab vocab.txt --corpus FILE... --out DIR [options]\n"
    "  Pretrains a BERT on text files: one sentence a line, a blank line between documents.\n"
    "  Model:    --layers 4  --hidden 256  --heads 4  --intermediate 1024  --max-len 128  --dropout 0.1\n"
    "  Training: --batch 32  --max-steps N (default 1000)  --max-minutes M (stop by time; 0: none)\n"
    "            --lr 5e-4 (peak; linear warm-up over --warmup 0.05 of the run, then linear decay)\n"
    "            --optimizer adamw|lamb|sgd (default adamw; lamb: layer-wise trust ratios, as BERT's\n"
    "            large-batch recipe, biases and LayerNorm weights without weight decay or trust ratio;\n"
    "            sgd: --momentum M, default 0)\n"
    "            --weight-decay 0.01 (not on biases and LayerNorm weights)  --max-grad-norm X (clip\n"
    "            the gradients to global norm X, as BERT's recipe with 1.0; default 0: no clipping)\n"
    "            --seed 0  --wwm (whole-word masking)  --mask-prob 0.15\n"
    "            --untie-embeddings (the MLM decoder gets a weight of its own instead of the word\n"
    "            embeddings', written as tie_word_embeddings false: a short pretraining then leaves\n"
    "            the input embeddings to the encoder's gradient alone)\n"
    "            --cased (keep case and accents, for a vocabulary from tessera vocab --cased;\n"
    "            default uncased; remembered as do_lower_case in config.json)\n"
    "            --max-predictions P (masked positions per sequence, at most; the MLM head runs on\n"
    "            those only, as Google's run_pretraining; default ceil(max-len x mask-prob), 20\n"
    "            for 128; 0: no cap, the head on every position)\n"
    "            --threads N  --bf16 (bf16 matrix products, f32 master weights)\n"
    "            --fp16 (fp16 matrix products with dynamic loss scaling, f32 master weights)\n"
    "            --accumulation N (micro-batches of --batch per optimizer step, default 1: the\n"
    "            effective batch is batch x N; --max-steps counts optimizer steps)\n"
    "            --device-iterations K (optimizer steps per call into the compiled program,\n"
    "            default 1; --max-steps, --save-every, --eval-every, --stop-after: multiples of K)\n"
    "            --recompute (recompute each layer's forward in the backward: less memory, same result)\n"
    "  Pipeline: --devices cpu:0,cpu:1,...  run the model as a pipeline over these devices (the cores\n"
    "            shared among them; more devices than cores oversubscribe), stages in 1F1B order\n"
    "            --stages SPEC|auto  which device runs what: \"0:emb,heads 1:0-3 2:4-7 3:8-11\" (device\n"
    "            index: emb, heads, layers N or A-B; the seed system's layout for 12 layers), or auto\n"
    "            (default: time each part, then balance the layers over the devices)\n"
    "            --micro-batches M  micro-batches of --batch per step (default 2 x devices; the\n"
    "            effective batch is batch x M; the same as --accumulation)\n"
    "            --deterministic (bit-identical runs for a seed: pins --threads, default all CPUs,\n"
    "            and refuses --max-minutes)\n"
    "  Output:   --save-every N (steps; default only at the end)  --eval-every K (default 100)\n"
    "            --eval-batches N (held-out batches, default 4)\n"
    "            --profile (print to stdout, at the end, where the training step's time went: the share\n"
    "            outside kernels, then time per op type, per layer and per shape, see\n"
    "            ts_program_profile_report; the first step, a warm-up, is left out; not with --devices)\n"
    "  Resume:   --save-every N also writes a full-state checkpoint DIR/checkpoints/step-NNNNNN\n"
    "            (parameters, AdamW state, step and dropout seed, the data reader's position),\n"
    "            atomically; --keep N keeps the newest N (default 3).\n"
    "            --resume DIR continues from the newest valid checkpoint of an earlier run's --out\n"
    "            DIR (or from DIR itself when it is one checkpoint; --out defaults to DIR); a\n"
    "            newer checkpoint that is cut short or corrupt is skipped with a message naming it.\n"
    "            Give the same options and corpus (--max-steps may change): the result is the same,\n"
    "            bit for bit, as one uninterrupted run (unless --max-minutes stops or shapes it).\n"
    "            --stop-after N ends this invocation after step N, with a checkpoint there, keeping\n"
    "            the schedule of --max-steps (to train in pieces).\n"
    CLI_REPLICA_USAGE
    CLI_DEVICE_USAGE
    "  --config FILE  a JSON object of these options, keys without '--' (flags override it)\n";

typedef struct pt_opts {
    const char *vocab, *out;
    ts_strlist corpus;
    int layers, hidden, heads, inter, max_len, batch, max_steps, seed, save_every, eval_every, eval_batches;
    int threads, wwm, bf16, keep, stop_after, recompute, deterministic, untie;
    int fp16, accumulation, device_iterations, max_predictions, cased, profile;
    const char *resume, *optimizer, *devices, *stages;
    int micro_batches;
    double max_minutes, lr, warmup, wd, dropout, mask_prob, max_grad_norm, momentum;
} pt_opts;

/* A run: what it holds, between ts_train's hooks. */
typedef struct pt_run {
    const pt_opts *o;
    ts_tokenizer *tok;
    ts_bert_config cfg;
    cli_train_loop loop;
    ts_program *tp, *ip;
    ts_pretrain_reader *reader;
    ts_batch_buf bb;
    ts_pretrain_heldout *held;
    int nheld;         /* held-out batches */
    FILE *metrics;
    ts_pretrain_shape shape;
    ts_model_meta meta;
    cli_progress pr;
    double sum, sum_mlm, sum_nsp, acc, nacc, eloss;
    int64_t n_sum;
    int no_pairs;      /* the corpus holds no sentence pair */
    int timed;         /* the pipeline's stages were reported */
    const ts_stage_plan *pipe; /* --devices */
    int64_t step0, step, prof_from; /* --profile: where this run began; where the counters start (-1: not yet) */
    char train_path[4200], held_path[4200];
} pt_run;

static int pt_fill(void *ctx, int64_t step, int micro, int slice, int *rows) {
    pt_run *R = ctx;
    (void)step, (void)micro;
    ts_batch_buf_slice(&R->bb, slice);
    ts_status st = ts_pretrain_next(R->reader, &R->bb.b, rows);
    if (st == TS_OK && R->bb.predictions) ts_batch_buf_compact(&R->bb, slice); /* the masker caps at P */
    ts_batch_buf_slice(&R->bb, 0);
    if (st != TS_OK && strstr(ts_last_error(), "no sentence pair")) R->no_pairs = 1;
    return st == TS_OK ? 0 : -1;
}

static ts_status pt_feed(void *ctx, ts_program *p) { return ts_batch_buf_feed(&((pt_run *)ctx)->bb, p, 1); }

static void pt_step(void *ctx, const ts_train_step_report *r) {
    pt_run *R = ctx;
    if (isfinite(r->losses[0])) R->sum += r->losses[0], R->sum_mlm += r->losses[1], R->sum_nsp += r->losses[2], R->n_sum++;
    cli_progress_step(&R->pr, r->step, r->losses[0], r->seq_per_s);
}

/* A pipeline's stages: how long they ran, and the bubble; printed and logged once, after the
 * first evaluation (or the end). */
static void report_stages(pt_run *R) {
    if (!R->pipe || R->timed) return;
    R->timed = 1;
    char line[2048];
    cli_pipe_report(R->pipe, R->tp, R->o->accumulation, line, sizeof line, R->metrics);
    cli_progress_print(&R->pr, "tessera pretrain: %s\n", line);
}

static ts_status pt_after(void *ctx, int64_t step, int last) {
    pt_run *R = ctx;
    const pt_opts *o = R->o;
    if (o->profile) cli_profile_after_call(R->tp, R->step0, step, last, &R->prof_from);
    if (!R->nheld || !(step % o->eval_every == 0 || last)) {
        if (last) report_stages(R);
        return TS_OK;
    }
    if (ts_program_copy_params(R->ip, R->tp) < 0 ||
        ts_pretrain_heldout_eval(R->ip, R->held, &R->acc, &R->nacc, &R->eloss) != TS_OK)
        return ts_set_error(ts_last_status() ? ts_last_status() : TS_ERR_RUNTIME, "evaluating: %s", ts_last_error());
    double ns = R->n_sum ? (double)R->n_sum : NAN;
    cli_progress_print(&R->pr,
                      "step %lld: train loss %.4f (mlm %.4f, nsp %.4f); held-out MLM accuracy %.2f%%, "
                      "MLM loss %.4f, NSP accuracy %.2f%%; %.0f s\n",
                      (long long)step, R->sum / ns, R->sum_mlm / ns, R->sum_nsp / ns, 100 * R->acc, R->eloss,
                      100 * R->nacc, cli_now() - R->pr.t0);
    cli_metrics_write(R->metrics,
                     "\"step\": %lld, \"heldout_mlm_accuracy\": %.6f, \"heldout_mlm_loss\": %.6f, "
                     "\"heldout_nsp_accuracy\": %.6f",
                     (long long)step, R->acc, R->eloss, R->nacc);
    R->sum = R->sum_mlm = R->sum_nsp = 0, R->n_sum = 0;
    report_stages(R);
    return TS_OK;
}

static ts_status pt_checkpoint(void *ctx, int64_t step) {
    pt_run *R = ctx;
    const pt_opts *o = R->o;
    if (o->save_every && step % o->save_every == 0 && step < o->max_steps &&
        cli_model_dir_save("pretrain", o->out, R->tp, &R->cfg, "BertForPreTraining", o->vocab, &R->meta))
        return ts_set_error(TS_ERR_IO, "saving the model at step %lld", (long long)step);
    if (ts_pretrain_ckpt_save(o->out, step, R->tp, R->reader, &R->shape, o->corpus.v, o->corpus.n, o->keep)) {
        fprintf(stderr, "\ntessera pretrain: %s\n", ts_last_error());
        return ts_set_error(TS_ERR_IO, "saving a checkpoint at step %lld", (long long)step);
    }
    return TS_OK;
}

/* The vocabulary and the model's config from the flags (and with --devices its stages). 0 or
 * the exit code, with the message printed. */
static int pt_model(const pt_opts *o, pt_run *R) {
    if (!(R->tok = ts_tokenizer_load(o->vocab, !o->cased))) {
        fprintf(stderr, "tessera pretrain: --vocab %s: %s\n", o->vocab, ts_last_error());
        return 2;
    }
    if (ts_token_to_id(R->tok, "[MASK]") < 0) {
        fprintf(stderr, "tessera pretrain: --vocab %s has no [MASK] token\n", o->vocab);
        return 2;
    }
    for (int i = 0; i < o->corpus.n; i++)
        if (access(o->corpus.v[i], R_OK) != 0) {
            fprintf(stderr, "tessera pretrain: --corpus %s: %s\n", o->corpus.v[i], strerror(errno));
            return 2;
        }
    ts_bert_config *cfg = &R->cfg;
    ts_bert_config_default(cfg);
    cfg->vocab_size = ts_tokenizer_vocab_size(R->tok);
    cfg->hidden_size = o->hidden;
    cfg->num_hidden_layers = o->layers;
    cfg->num_attention_heads = o->heads;
    cfg->intermediate_size = o->inter;
    cfg->max_position_embeddings = o->max_len;
    cfg->hidden_dropout_prob = cfg->attention_probs_dropout_prob = (float)o->dropout;
    cfg->head = TS_BERT_PRETRAINING;
    if (o->bf16) cfg->compute_dtype = TS_BF16;
    if (o->fp16) cfg->compute_dtype = TS_F16;
    cfg->recompute = o->recompute;
    cfg->max_predictions_per_seq = o->max_predictions;
    cfg->untie_word_embeddings = o->untie;
    const int N = o->accumulation, S = N * o->device_iterations; /* S batches per call */
    R->loop = (cli_train_loop){.accumulation = N, .device_iterations = S, .max_grad_norm = (float)o->max_grad_norm,
                               .optimizer = o->optimizer, .momentum = (float)o->momentum, .profile = o->profile};
    static ts_stage_plan pp; /* --devices: the pipeline (cfg points into it) */
    if (o->devices) {
        int rc;
        if (cli_pipe_parse("pretrain", o->devices, o->stages, o->layers, &pp)) return 2;
        if (pp.automatic && (rc = cli_pipe_measure("pretrain", cfg, TS_BERT_PRETRAINING, o->batch, o->max_len, N, &pp)))
            return rc;
        R->loop.pipe = R->pipe = &pp;
    }
    if (o->hidden % o->heads) {
        fprintf(stderr, "tessera pretrain: --hidden %d is not a multiple of --heads %d\n", o->hidden, o->heads);
        return 2;
    }
    if (ts_bert_config_check(cfg) != TS_OK) { /* the flags are the config's fields */
        fprintf(stderr, "tessera pretrain: the model's config (from --vocab, --hidden, --layers, --heads, "
                        "--intermediate, --max-len): %s\n", ts_last_error());
        return 2;
    }
    cli_dev.sizes_from = "--vocab's size, --hidden, --layers, --intermediate, --max-len";
    return 0;
}

/* The programs (first: a model or batch too large for the device is refused before the corpus
 * is read; the inference program scores the held-out set, freed when there is none), the corpus
 * split, its reader and the held-out batches. 0 or the exit code, with the message printed. */
static int pt_data(const pt_opts *o, pt_run *R) {
    int rc;
    snprintf(R->train_path, sizeof R->train_path, "%s/.pretrain-train.%ld.txt", o->out, (long)getpid());
    snprintf(R->held_path, sizeof R->held_path, "%s/.pretrain-heldout.%ld.txt", o->out, (long)getpid());
    if ((rc = cli_out_lock("pretrain", o->out))) return rc;
    if (cli_bert_programs("pretrain", &R->cfg, TS_BERT_PRETRAINING, o->batch, o->max_len, (uint64_t)o->seed,
                          o->threads, 1, (float)o->wd, (const char *[]){"loss", "mlm_loss", "nsp_loss"}, 3, &R->tp,
                          (const char *[]){"prediction_logits", "seq_relationship_logits", "mlm_loss"}, 3, &R->ip,
                          &R->loop))
        return 1;
    if (o->devices) cli_pipe_describe("pretrain", R->tp, R->pipe, o->accumulation, NULL);
    int64_t ndocs, nheld;
    double t_split = cli_now();
    ts_status st = ts_pretrain_split_holdout(o->corpus.v, o->corpus.n, R->train_path, R->held_path, &ndocs, &nheld);
    if (st != TS_OK) {
        fprintf(stderr, "tessera pretrain: %s%s\n", st == TS_ERR_ARG ? "--corpus " : "", ts_last_error());
        return st == TS_ERR_ARG ? 2 : 1;
    }
    printf("tessera pretrain: %d file%s, %lld documents: %lld held out for evaluation (%.1f s)\n", o->corpus.n,
           o->corpus.n == 1 ? "" : "s", (long long)ndocs, (long long)nheld, cli_now() - t_split);
    if (ndocs == 0) {
        fprintf(stderr, "tessera pretrain: the corpus files hold no text\n");
        return 2;
    }
    ts_pretrain_opts po = ts_pretrain_defaults();
    po.files = (const char *const[]){R->train_path};
    po.nfiles = 1;
    po.batch_size = o->batch;
    po.max_len = o->max_len;
    po.mask_prob = o->mask_prob;
    po.whole_word = o->wwm;
    po.max_predictions = o->max_predictions;
    po.seed = (uint64_t)o->seed;
    po.shard = cli_rep.rank, po.num_shards = cli_rep.size; /* replicas: batches dealt round-robin */
    if (!(R->reader = ts_pretrain_open(R->tok, &po))) {
        fprintf(stderr, "tessera pretrain: %s\n", ts_last_error());
        return 2;
    }
    if (nheld && !(R->held = ts_pretrain_heldout_read(R->tok, R->held_path, &po, o->eval_batches))) {
        fprintf(stderr, "tessera pretrain: %s\n", ts_last_error());
        return 1;
    }
    if (!(R->nheld = ts_pretrain_heldout_batches(R->held))) ts_program_free(R->ip), R->ip = NULL;
    return 0;
}

/* --resume: the newest checkpoint, checked against this run's shape and restored. 0 or the exit
 * code, with the message printed. */
static int pt_resume(const pt_opts *o, pt_run *R) {
    char ckpt[4300];
    int rc, planned;
    if ((rc = cli_ckpt_find("pretrain", o->resume, ckpt, sizeof ckpt))) return rc;
    planned = o->max_steps;
    ts_status st = ts_pretrain_ckpt_load(ckpt, R->tp, R->reader, &R->shape, o->corpus.v, o->corpus.n, &R->step,
                                         &planned);
    if (planned != o->max_steps)
        printf("tessera pretrain: the checkpoint's run planned %g steps; the schedule now ends at %g\n",
               (double)planned, (double)o->max_steps);
    if (st != TS_OK) {
        fprintf(stderr, "tessera pretrain: %s\n", ts_last_error());
        return 2;
    }
    printf("tessera pretrain: resuming from %s at step %lld\n", ckpt, (long long)R->step);
    if (R->step % o->device_iterations) {
        fprintf(stderr, "tessera pretrain: --resume at step %lld: not a multiple of --device-iterations %d\n",
                (long long)R->step, o->device_iterations);
        return 2;
    }
    return 0;
}

/* The metrics log, the batch buffers and the lines that describe the run. 0 or 1. */
static int pt_start(const pt_opts *o, pt_run *R) {
    const int N = o->accumulation, K = o->device_iterations, RN = cli_rep.size;
    if (cli_replicas_check_params("pretrain", R->tp, o->resume ? "after resuming" : "at the start")) return 1;
    if (!(R->metrics = o->resume ? cli_metrics_append(o->out, "pretrain") : cli_metrics_open(o->out, "pretrain")))
        return 1;
    if (o->devices) cli_pipe_describe("pretrain", R->tp, R->pipe, N, R->metrics);
    cli_replicas_describe("pretrain", R->tp, R->metrics);
    if (!ts_batch_buf_init_slices(&R->bb, o->batch, o->max_len, 2, N * K, o->max_predictions)) {
        fprintf(stderr, "tessera pretrain: out of memory\n");
        return 1;
    }
    ts_memory mem;
    ts_program_memory(R->tp, &mem);
    printf("tessera pretrain: BERT %d layers x %d hidden, %d heads, FFN %d, vocab %d, %.1f M parameters; "
           "batch %d x %d tokens, up to %d steps%s, %s, lr %g%s\n",
           o->layers, o->hidden, o->heads, o->inter, R->cfg.vocab_size, mem.params / 4e6, o->batch, o->max_len,
           o->max_steps, o->max_minutes > 0 ? " or the time limit" : "", o->optimizer, o->lr,
           o->bf16 ? ", bf16 compute" : o->fp16 ? ", fp16 compute with loss scaling" : "");
    if (N > 1 || K > 1 || RN > 1)
        printf("tessera pretrain: %d micro-batch%s of %d per step%s (effective batch %d), %d step%s per program call\n",
               N, N == 1 ? "" : "es", o->batch, RN > 1 ? " on each replica" : "", N * o->batch * RN, K,
               K == 1 ? "" : "s");
    printf("tessera pretrain: held-out set: %d batches of %d sequences\n", R->nheld, o->batch);
    return 0;
}

/* Train to the end (ts_train with the hooks above), then write the model. The exit code. */
static int pt_train(const pt_opts *o, pt_run *R) {
    const int N = o->accumulation, RN = cli_rep.size;
    double max_s = o->max_minutes * 60;
    cli_progress_init(&R->pr, o->max_steps, max_s);
    static const char *const losses[] = {"loss", "mlm_loss", "nsp_loss"};
    static const char *const extra[] = {"optimizer@LOSS_SCALE", "optimizer@SKIPPED_STEPS"};
    static const char *const extra_keys[] = {"loss_scale", "skipped_steps"};
    ts_train_spec spec = {.struct_size = sizeof spec, .program = R->tp, .micro_batches = N,
                          .steps_per_call = o->device_iterations, .lr = (float)o->lr, .warmup = o->warmup,
                          .total_steps = o->max_steps, .max_seconds = max_s, .losses = losses, .nlosses = 3,
                          .extra = extra, .extra_keys = extra_keys, .nextra = o->fp16 ? 2 : 0,
                          .skip_nonfinite = o->fp16, .save_every = o->save_every, .stop_after = o->stop_after,
                          .metrics = ts_write_stdio, .metrics_ctx = R->metrics, .comm = RN > 1 ? cli_rep.comm : NULL};
    ts_train_hooks hooks = {.ctx = R, .fill = pt_fill, .feed = pt_feed, .on_step = pt_step, .after_call = pt_after,
                            .checkpoint = pt_checkpoint};
    ts_train_result res;
    ts_status tst = ts_train(&spec, &hooks, R->step, &res);
    int64_t step = res.step, step0 = R->step0;
    if (tst) {
        if (!R->no_pairs) {
            fprintf(stderr, "\ntessera pretrain: %s\n", ts_last_error());
            return 1;
        }
        fprintf(stderr, "tessera pretrain: the corpus (%s%s) holds no sentence pairs: it needs documents of two "
                        "or more sentences (one a line), or two or more documents (blank lines between)\n",
                o->corpus.v[0], o->corpus.n > 1 ? ", ..." : ""); /* name the user's files */
        return 2;
    }
    if (res.stopped) {
        cli_progress_print(&R->pr, "tessera pretrain: stopped after step %lld (--stop-after); continue with --resume %s\n",
                           (long long)step, o->out);
        return o->profile && cli_profile_print("pretrain", R->tp, step0, R->prof_from, step);
    }
    if (cli_replicas_check_params("pretrain", R->tp, "at the end")) return 1;
    if (cli_model_dir_save("pretrain", o->out, R->tp, &R->cfg, "BertForPreTraining", o->vocab, &R->meta)) return 1;
    double el = cli_now() - R->pr.t0;
    cli_progress_print(&R->pr, "tessera pretrain: %lld steps in %.0f s (%.1f seq/s)", (long long)(step - step0), el,
                       (double)(step - step0) * o->batch * N * RN / (el > 0 ? el : 1));
    if (step0) printf(", steps %lld to %lld", (long long)step0 + 1, (long long)step);
    if (R->acc >= 0) printf("; held-out MLM accuracy %.2f%%, NSP accuracy %.2f%%", 100 * R->acc, 100 * R->nacc);
    printf("; wrote %s\n", o->out);
    return o->profile && cli_profile_print("pretrain", R->tp, step0, R->prof_from, step);
}

static int run(const pt_opts *o) {
    pt_run *R = calloc(1, sizeof *R);
    if (!R) return 1;
    *R = (pt_run){.o = o, .acc = -1, .nacc = -1, .meta = {.max_len = o->max_len, .lowercase = !o->cased},
                  .prof_from = -1};
    int rc = pt_model(o, R);
    if (!rc && !(rc = pt_data(o, R))) {
        R->shape = (ts_pretrain_shape){
            .layers = o->layers, .hidden = o->hidden, .heads = o->heads, .inter = o->inter, .max_len = o->max_len,
            .batch = o->batch, .seed = o->seed, .wwm = o->wwm, .cased = o->cased, .bf16 = o->bf16,
            .vocab_size = R->cfg.vocab_size, .max_steps = o->max_steps, .lr = o->lr, .warmup = o->warmup,
            .wd = o->wd, .max_grad_norm = o->max_grad_norm, .dropout = o->dropout, .mask_prob = o->mask_prob,
            .deterministic = o->deterministic, .threads = o->deterministic ? o->threads : 0, .fp16 = o->fp16,
            .accumulation = o->accumulation, .max_predictions = o->max_predictions,
            .optimizer = ts_optim_kind_parse(o->optimizer), .momentum = o->momentum, .ranks = cli_rep.size,
            .shard = cli_rep.shard_optimizer};
        if (!(o->resume && (rc = pt_resume(o, R)))) {
            R->step0 = R->step;
            rc = pt_start(o, R);
            if (!rc) rc = pt_train(o, R);
        }
    }
    if (R->train_path[0]) unlink(R->train_path), unlink(R->held_path);
    if (R->metrics) fclose(R->metrics);
    ts_batch_buf_free(&R->bb);
    ts_pretrain_heldout_free(R->held);
    ts_program_free(R->tp);
    ts_program_free(R->ip);
    ts_pretrain_close(R->reader);
    ts_tokenizer_free(R->tok);
    free(R);
    return rc;
}

int cli_pretrain(int argc, char **argv) {
    pt_opts o = {.layers = 4, .hidden = 256, .heads = 4, .inter = 1024, .max_len = 128, .batch = 32,
                 .max_steps = 1000, .eval_every = 100, .eval_batches = 4, .lr = 5e-4, .warmup = 0.05, .wd = 0.01,
                 .dropout = 0.1, .mask_prob = 0.15, .keep = 3, .accumulation = 1, .device_iterations = 1,
                 .max_predictions = -1, .optimizer = "adamw"};
    const ts_opt opts[] = {
        {"vocab", TS_OPT_STR, &o.vocab, 0},           {"corpus", TS_OPT_LIST, &o.corpus, 0},
        {"out", TS_OPT_STR, &o.out, 0},               {"layers", TS_OPT_INT, &o.layers, 1},
        {"hidden", TS_OPT_INT, &o.hidden, 1},         {"heads", TS_OPT_INT, &o.heads, 1},
        {"intermediate", TS_OPT_INT, &o.inter, 1},    {"max-len", TS_OPT_INT, &o.max_len, 8},
        {"batch", TS_OPT_INT, &o.batch, 1},           {"max-steps", TS_OPT_INT, &o.max_steps, 1},
        {"max-minutes", TS_OPT_FLOAT, &o.max_minutes, 0}, {"lr", TS_OPT_FLOAT, &o.lr, 0},
        {"warmup", TS_OPT_FLOAT, &o.warmup, 0},       {"weight-decay", TS_OPT_FLOAT, &o.wd, 0},
        {"max-grad-norm", TS_OPT_FLOAT, &o.max_grad_norm, 0},
        {"dropout", TS_OPT_FLOAT, &o.dropout, 0},     {"mask-prob", TS_OPT_FLOAT, &o.mask_prob, 0},
        {"seed", TS_OPT_INT, &o.seed, 0},             {"save-every", TS_OPT_INT, &o.save_every, 0},
        {"eval-every", TS_OPT_INT, &o.eval_every, 1}, {"eval-batches", TS_OPT_INT, &o.eval_batches, 0},
        {"threads", TS_OPT_INT, &o.threads, 0},       {"wwm", TS_OPT_FLAG, &o.wwm, 0}, {"untie-embeddings", TS_OPT_FLAG, &o.untie, 0},
        {"cased", TS_OPT_FLAG, &o.cased, 0},
        {"bf16", TS_OPT_FLAG, &o.bf16, 0},            {"keep", TS_OPT_INT, &o.keep, 1},
        {"resume", TS_OPT_STR, &o.resume, 0},         {"stop-after", TS_OPT_INT, &o.stop_after, 1},
        {"recompute", TS_OPT_FLAG, &o.recompute, 0},  {"deterministic", TS_OPT_FLAG, &o.deterministic, 0},
        {"fp16", TS_OPT_FLAG, &o.fp16, 0},            {"accumulation", TS_OPT_INT, &o.accumulation, 1},
        {"device-iterations", TS_OPT_INT, &o.device_iterations, 1},
        {"max-predictions", TS_OPT_INT, &o.max_predictions, 0},
        {"optimizer", TS_OPT_STR, &o.optimizer, 0}, {"momentum", TS_OPT_FLOAT, &o.momentum, 0},
        {"devices", TS_OPT_STR, &o.devices, 0},     {"stages", TS_OPT_STR, &o.stages, 0},
        {"micro-batches", TS_OPT_INT, &o.micro_batches, 2}, {"profile", TS_OPT_FLAG, &o.profile, 0},
        CLI_DEVICE_OPTS,                          CLI_REPLICA_OPTS,
    };
    ts_optset os;
    int rc = cli_opts_parse(&os, "pretrain", USAGE, opts, (int)(sizeof opts / sizeof *opts), argc, argv);
    if (rc == 1) {
        char probe[4300];
        if (o.max_predictions < 0) /* Google's max_predictions_per_seq: 20 for 128 tokens at 15% */
            o.max_predictions = (int)ceil(o.max_len * o.mask_prob);
        if (o.resume) snprintf(probe, sizeof probe, "%s/trainer.json", o.resume);
        if (!o.out && o.resume && access(probe, F_OK) != 0)
            o.out = o.resume; /* an earlier run's directory: continue in it */
        const char *missing = !o.vocab ? "--vocab FILE" : !o.corpus.n ? "--corpus FILE..." : !o.out ? "--out DIR" : NULL;
        rc = 2;
        if (missing)
            fprintf(stderr, "tessera pretrain: %s is required\n(tessera pretrain --help shows the usage)\n", missing);
        else if (o.warmup > 1 || o.dropout >= 1 || o.mask_prob <= 0 || o.mask_prob >= 1)
            fprintf(stderr, "tessera pretrain: --warmup must be at most 1, --dropout below 1, --mask-prob in (0, 1)\n");
        else if (o.max_predictions > o.max_len)
            fprintf(stderr, "tessera pretrain: --max-predictions %d is more than --max-len %d\n", o.max_predictions,
                    o.max_len);
        else if (o.bf16 && o.fp16)
            fprintf(stderr, "tessera pretrain: --bf16 and --fp16 exclude each other\n");
        else if (o.profile && o.devices)
            fprintf(stderr, "tessera pretrain: --profile is not supported with --devices (a pipelined program is not "
                            "profiled); profile the step on one device, without --devices\n");
        else if (cli_pipe_micro("pretrain", o.devices, o.stages, o.micro_batches, &o.accumulation, o.fp16))
            ;
        else if (cli_optimizer_parse("pretrain", o.optimizer) < 0)
            ;
        else if (o.momentum >= 1 || (o.momentum > 0 && strcmp(o.optimizer, "sgd")))
            fprintf(stderr, "tessera pretrain: --momentum %g: SGD's momentum, below 1 (with --optimizer sgd)\n",
                    o.momentum);
        else if (o.device_iterations > 64 || o.accumulation > 4096)
            fprintf(stderr, "tessera pretrain: --device-iterations %d is above 64 or --accumulation %d above 4096\n",
                    o.device_iterations, o.accumulation);
        else if (o.device_iterations > 1 &&
                 (o.max_steps % o.device_iterations || o.save_every % o.device_iterations ||
                  o.eval_every % o.device_iterations || o.stop_after % o.device_iterations))
            fprintf(stderr, "tessera pretrain: --max-steps %d, --save-every %d, --eval-every %d and --stop-after %d must "
                            "be multiples of --device-iterations %d (each call into the program runs that many steps)\n",
                    o.max_steps, o.save_every, o.eval_every, o.stop_after, o.device_iterations);
        else if (cli_replicas_setup("pretrain", &o.threads))
            ;
        else if (!o.deterministic || !(rc = cli_deterministic_setup("pretrain", &o.threads, o.max_minutes)))
            rc = run(&o);
    }
    ts_options_free(&os);
    return rc;
}
