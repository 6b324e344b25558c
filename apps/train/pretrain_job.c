/*
 * pretrain_job.c — a whole pretraining job as one library call (tessera_tasks.h: ts_pretrain_job),
 * what `tessera pretrain` does between its flags and its exit: the options checked (each message
 * naming the field), the vocabulary read, the model's config made, the pipeline placed, the
 * programs compiled, then the run (ts_pretrain_run, pretrain_run.c).
 */
#include "train/train_setup.h"

#include <errno.h>
#include <math.h>
#include <unistd.h>

void ts_pretrain_job_defaults(ts_pretrain_job_opts *o) {
    if (!o) return;
    *o = (ts_pretrain_job_opts){.struct_size = sizeof *o, .layers = 4, .hidden = 256, .heads = 4,
                                .intermediate = 1024, .max_len = 128, .dropout = 0.1, .optimizer = "adamw",
                                .lr = 5e-4, .warmup = 0.05, .weight_decay = 0.01, .batch = 32, .max_steps = 1000,
                                .mask_prob = 0.15, .max_predictions = -1, .accumulation = 1, .device_iterations = 1,
                                .eval_every = 100, .eval_batches = 4, .keep = 3};
}

/* The fields the model's sizes come from, as its messages name them (with their values), into buf. */
static const char *sizes_from(const ts_pretrain_job_opts *o, char *buf, size_t cap) {
    snprintf(buf, cap, "the vocabulary's size and hidden %d, layers %d, heads %d, intermediate %d, max_len %d",
             o->hidden, o->layers, o->heads, o->intermediate, o->max_len);
    return buf;
}

/* A job: the options as read, and what it has made. */
typedef struct pj_job {
    ts_pretrain_job_opts o;
    tr_setup s;         /* the checks shared with fine-tuning, and what they settled */
    ts_tokenizer *tok;
    ts_bert_config cfg;
    ts_stage_plan pipe; /* with s.piped */
    ts_program *tp, *ip;
} pj_job;

/* Each field on its own: present, within its range. */
static ts_status check_ranges(pj_job *J) {
    const ts_pretrain_job_opts *o = &J->o;
    const char *name = J->s.name;
    if (!o->vocab || !o->corpus || o->ncorpus < 1 || !o->out_dir)
        return tr_fail(o->err, o->err_ctx, 1, "%s: vocab, corpus (ncorpus >= 1) and out_dir are needed\n", name);
    const tr_int_field ints[] = {{"layers", o->layers, 1}, {"hidden", o->hidden, 1}, {"heads", o->heads, 1},
                {"intermediate", o->intermediate, 1}, {"max_len", o->max_len, 8}, {"batch", o->batch, 1},
                {"max_steps", o->max_steps, 1}, {"seed", o->seed, 0}, {"max_predictions", o->max_predictions, 0},
                {"accumulation", o->accumulation, 1}, {"micro_batches", o->micro_batches, 0},
                {"device_iterations", o->device_iterations, 1}, {"save_every", o->save_every, 0},
                {"keep", o->keep, 1}, {"eval_every", o->eval_every, 1}, {"eval_batches", o->eval_batches, 0},
                {"stop_after", o->stop_after, 0}, {"threads", o->threads, 0}, {"pack", o->pack, 0}};
    const tr_real_field reals[] = {{"lr", o->lr}, {"warmup", o->warmup}, {"weight_decay", o->weight_decay},
                 {"max_grad_norm", o->max_grad_norm}, {"momentum", o->momentum}, {"max_minutes", o->max_minutes},
                 {"dropout", o->dropout}, {"mask_prob", o->mask_prob}};
    ts_status st = tr_check_ints(o->err, o->err_ctx, name, ints, (int)(sizeof ints / sizeof *ints));
    if (!st) st = tr_check_reals(o->err, o->err_ctx, name, reals, (int)(sizeof reals / sizeof *reals));
    if (st) return st;
    if (o->warmup > 1)
        return tr_fail(o->err, o->err_ctx, 1, "%s: warmup %g is a fraction of the steps, at most 1\n", name, o->warmup);
    if (o->dropout >= 1)
        return tr_fail(o->err, o->err_ctx, 1, "%s: dropout %g: a probability below 1\n", name, o->dropout);
    if (o->mask_prob <= 0 || o->mask_prob >= 1)
        return tr_fail(o->err, o->err_ctx, 1, "%s: mask_prob %g: a share in (0, 1)\n", name, o->mask_prob);
    if (o->pack > o->max_len / 4)
        return tr_fail(o->err, o->err_ctx, 1, "%s: pack %d: at most max_len / 4 = %d pairs a row (a pair takes 4 "
                       "tokens or more)\n", name, o->pack, o->max_len / 4);
    if (o->max_predictions > o->max_len)
        return tr_fail(o->err, o->err_ctx, 1, "%s: max_predictions %d is more than max_len %d\n", name,
                       o->max_predictions, o->max_len);
    return TS_OK;
}

/* The vocabulary, the corpus files there, and the model's config from the fields. */
static ts_status make_model(pj_job *J) {
    const ts_pretrain_job_opts *o = &J->o;
    const char *name = J->s.name;
    if (!(J->tok = ts_tokenizer_load(o->vocab, !o->cased)))
        return tr_fail(o->err, o->err_ctx, 1, "%s: vocab %s: %s\n", name, o->vocab, ts_last_error());
    if (ts_token_to_id(J->tok, "[MASK]") < 0)
        return tr_fail(o->err, o->err_ctx, 1, "%s: vocab %s: no [MASK] token\n", name, o->vocab);
    for (int i = 0; i < o->ncorpus; i++)
        if (access(o->corpus[i], R_OK) != 0)
            return tr_fail(o->err, o->err_ctx, 1, "%s: corpus %s: %s\n", name, o->corpus[i], strerror(errno));
    ts_bert_config *cfg = &J->cfg;
    ts_bert_config_default(cfg);
    cfg->vocab_size = ts_tokenizer_vocab_size(J->tok);
    cfg->hidden_size = o->hidden, cfg->num_hidden_layers = o->layers, cfg->num_attention_heads = o->heads;
    cfg->intermediate_size = o->intermediate, cfg->max_position_embeddings = o->max_len;
    cfg->hidden_dropout_prob = cfg->attention_probs_dropout_prob = (float)o->dropout;
    cfg->head = TS_BERT_PRETRAINING;
    cfg->compute_dtype = o->bf16 ? TS_BF16 : o->fp16 ? TS_F16 : cfg->compute_dtype;
    cfg->recompute = o->recompute;
    cfg->max_predictions_per_seq = o->max_predictions;
    cfg->untie_word_embeddings = o->untie;
    if (o->hidden % o->heads)
        return tr_fail(o->err, o->err_ctx, 1, "%s: hidden %d is not a multiple of heads %d\n", name, o->hidden,
                       o->heads);
    char from[256];
    if (ts_bert_config_check(cfg) != TS_OK)
        return tr_fail(o->err, o->err_ctx, 1, "%s: the model's config (from %s): %s\n", name,
                       sizes_from(o, from, sizeof from), ts_last_error());
    return TS_OK;
}

/* The programs (a model or batch too large for the device is refused before the corpus is read;
 * the inference program scores the held-out set), the pipeline described. */
static ts_status make_programs(pj_job *J) {
    const ts_pretrain_job_opts *o = &J->o;
    static const char *const train_f[] = {"loss", "mlm_loss", "nsp_loss"};
    static const char *const infer_f[] = {"prediction_logits", "seq_relationship_logits", "mlm_loss"};
    int ranks = o->comm ? ts_comm_size(o->comm) : 1;
    ts_bert_train_opts bo = {
        .struct_size = sizeof bo, .cfg = &J->cfg, .head = TS_BERT_PRETRAINING, .batch = o->batch, .seq = o->max_len,
        .seed = (uint64_t)o->seed, .threads = J->s.threads, .infer_threads = J->s.threads,
        .optimizer = (ts_optim_kind)ts_optim_kind_parse(o->optimizer), .weight_decay = (float)o->weight_decay,
        .max_grad_norm = (float)o->max_grad_norm, .momentum = (float)o->momentum, .accumulation = J->s.accumulation,
        .steps_per_call = o->device_iterations, .memory_limit = o->memory_limit, .train_fetches = train_f,
        .ntrain_fetches = 3, .infer_fetches = infer_f, .ninfer_fetches = 3, .comm = ranks > 1 ? o->comm : NULL,
        .shard_state = o->shard, .profile = o->profile, .device = o->devices};
    const ts_stage_plan *pp = J->s.piped ? &J->pipe : NULL;
    char from[256];
    ts_status st;
    if (o->pack > 1) { /* packed rows to train on; the held-out set scored a pair a row */
        ts_bert_config packed = J->cfg;
        packed.struct_size = sizeof packed; /* ts_bert_config_default set the base layout's size */
        packed.max_sequences_per_pack = o->pack;
        packed.max_predictions_per_seq = ts_pretrain_packed_predictions(o->max_predictions, o->max_len, o->pack);
        bo.cfg = &packed;
        st = tr_setup_programs(&J->s, &bo, pp, sizes_from(o, from, sizeof from), &J->tp, NULL);
        bo.cfg = &J->cfg;
        if (!st) st = tr_setup_programs(&J->s, &bo, pp, from, NULL, &J->ip);
    } else {
        st = tr_setup_programs(&J->s, &bo, pp, sizes_from(o, from, sizeof from), &J->tp, &J->ip);
    }
    if (!st && pp) ts_stage_plan_describe(pp, J->tp, J->s.accumulation, J->s.name, o->out, o->out_ctx, 0);
    return st;
}

/* The run itself (ts_pretrain_run) on what the job made. */
static ts_status run(pj_job *J) {
    const ts_pretrain_job_opts *o = &J->o;
    const tr_setup *s = &J->s;
    ts_pretrain_shape shape = {
        .layers = o->layers, .hidden = o->hidden, .heads = o->heads, .inter = o->intermediate, .max_len = o->max_len,
        .batch = o->batch, .seed = o->seed, .wwm = o->wwm, .cased = o->cased, .bf16 = o->bf16,
        .vocab_size = J->cfg.vocab_size, .max_steps = o->max_steps, .lr = o->lr, .warmup = o->warmup,
        .wd = o->weight_decay, .max_grad_norm = o->max_grad_norm, .dropout = o->dropout, .mask_prob = o->mask_prob,
        .deterministic = o->deterministic, .threads = o->deterministic ? s->threads : 0, .fp16 = o->fp16,
        .accumulation = s->accumulation, .max_predictions = o->max_predictions,
        .optimizer = ts_optim_kind_parse(o->optimizer), .momentum = o->momentum,
        .ranks = o->comm ? ts_comm_size(o->comm) : 1, .shard = o->shard, .pack = o->pack > 1 ? o->pack : 0,
        .weights16 = o->precision && strstr(o->precision, "-sr") != NULL};
    ts_pretrain_run_opts ro = {
        .struct_size = sizeof ro, .name = s->name, .out = o->out, .out_ctx = o->out_ctx, .tty = o->tty,
        .err = o->err, .err_ctx = o->err_ctx, .tok = J->tok, .vocab = o->vocab, .cfg = &J->cfg, .train = J->tp,
        .infer = J->ip, .pipe = s->piped ? &J->pipe : NULL, .shape = &shape, .corpus = o->corpus,
        .ncorpus = o->ncorpus, .out_dir = o->out_dir, .resume = o->resume, .device_iterations = o->device_iterations,
        .eval_every = o->eval_every, .eval_batches = o->eval_batches, .save_every = o->save_every, .keep = o->keep,
        .stop_after = o->stop_after, .profile = o->profile, .max_minutes = o->max_minutes, .comm = o->comm};
    return ts_pretrain_run(&ro);
}

ts_status ts_pretrain_job(const ts_pretrain_job_opts *opts) {
    pj_job *J = calloc(1, sizeof *J);
    if (!J) return ts_set_error(TS_ERR_NOMEM, "ts_pretrain_job: out of memory");
    if (TS_STRUCT_READ(&J->o, opts, ts_pretrain_job_opts, "ts_pretrain_job")) {
        free(J);
        return TS_ERR_ARG;
    }
    ts_pretrain_job_opts *o = &J->o;
    if (!o->optimizer) o->optimizer = "adamw";
    if (o->max_predictions < 0) /* Google's max_predictions_per_seq: 20 for 128 tokens at 15% */
        o->max_predictions = (int)ceil(o->max_len * o->mask_prob);
    J->s = (tr_setup){.name = o->name ? o->name : "ts_pretrain_job", .out = o->out, .out_ctx = o->out_ctx,
                      .err = o->err, .err_ctx = o->err_ctx, .optimizer = o->optimizer, .devices = o->devices,
                      .stages = o->stages, .momentum = o->momentum, .max_minutes = o->max_minutes, .bf16 = o->bf16,
                      .fp16 = o->fp16, .profile = o->profile, .deterministic = o->deterministic,
                      .micro_batches = o->micro_batches, .device_iterations = o->device_iterations,
                      .max_steps = o->max_steps, .save_every = o->save_every, .stop_after = o->stop_after,
                      .eval_every = o->eval_every, .accumulation = o->accumulation, .threads = o->threads,
                      .precision = o->precision, .round_nearest = o->round_nearest};
    ts_status st = check_ranges(J);
    if (!st) st = tr_setup_check(&J->s);
    if (!st) o->bf16 = J->s.bf16, o->fp16 = J->s.fp16; /* as precision says */
    if (!st) st = make_model(J);
    if (!st && J->s.piped) st = tr_setup_place(&J->s, &J->cfg, o->batch, o->max_len, o->comm, &J->pipe);
    if (!st) st = make_programs(J);
    if (!st) st = run(J);
    ts_program_free(J->tp);
    ts_program_free(J->ip);
    ts_tokenizer_free(J->tok);
    free(J);
    return st;
}
