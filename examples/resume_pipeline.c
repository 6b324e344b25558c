/*
 * resume_pipeline.c — what `tessera pretrain --resume` and `--stages auto` do, through tessera.h
 * alone: pretrain a tiny BERT on a tiny generated corpus, interrupt the run halfway (a
 * checkpoint, then everything freed), resume it from the checkpoint, and check that it ends with
 * the parameters of one uninterrupted run, bit for bit; then balance the model over a pipeline of
 * two devices by measurement and compile its training program on them. Runs in a few seconds.
 *
 *   build/examples/resume_pipeline [WORKDIR]   (default: a new directory under /tmp)
 *
 * Exits 0 when the resumed run matches and the pipelined program compiled, 1 otherwise.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tessera_apps.h"

#define STEPS 6   /* the whole run */
#define BREAK 3   /* where the first piece stops */
#define BATCH 4
#define SEQ 32

/* One piece of a run: the program, the data reader and its batches, between ts_train's hooks. */
typedef struct run {
    ts_program *tp;
    ts_pretrain_reader *reader;
    ts_batch_buf bb;
    const char *out, *corpus;
    ts_pretrain_shape shape;
} run;

static int fill(void *ctx, int64_t step, int micro, int slice, int *rows) {
    run *r = ctx;
    (void)step, (void)micro, (void)slice;
    if (ts_pretrain_next(r->reader, &r->bb.b, rows) != TS_OK) return -1;
    if (r->bb.predictions) ts_batch_buf_compact(&r->bb, 0); /* the masked positions only */
    return 0;
}

static ts_status feed(void *ctx, ts_program *p) { return ts_batch_buf_feed(&((run *)ctx)->bb, p, 1); }

/* The resume file: program state, reader position and the run's shape, in OUT/checkpoints. */
static ts_status checkpoint(void *ctx, int64_t step) {
    run *r = ctx;
    return ts_pretrain_ckpt_save(r->out, step, r->tp, r->reader, &r->shape, &r->corpus, 1, 2);
}

/* A tiny corpus: 12 documents of 5 sentences about animals, blank lines between them. */
static int write_corpus(const char *path) {
    static const char *a[] = {"cat", "dog", "bird", "fish", "horse", "mouse"};
    static const char *b[] = {"runs", "sleeps", "eats", "jumps", "swims", "sings"};
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    for (int d = 0; d < 12; d++) {
        for (int s = 0; s < 5; s++)
            fprintf(f, "the %s %s and the %s %s.\n", a[(d + s) % 6], b[(d * 5 + s) % 6], a[(s * 7 + d) % 6], b[s % 6]);
        fputc('\n', f);
    }
    return fclose(f);
}

/* A BERT of 2 layers x 32 hidden for the vocabulary. */
static ts_bert_config tiny_config(const ts_tokenizer *tok) {
    ts_bert_config c;
    ts_bert_config_default(&c);
    c.vocab_size = ts_tokenizer_vocab_size(tok);
    c.hidden_size = 32, c.num_hidden_layers = 2, c.num_attention_heads = 2, c.intermediate_size = 64;
    c.max_position_embeddings = SEQ;
    c.head = TS_BERT_PRETRAINING;
    c.max_predictions_per_seq = 5;
    return c;
}

/* Run steps [from checkpoint or 0, until) of the pretraining, writing a checkpoint at `until`.
 * The final parameters go into *params (a copy of "bert.embeddings.word_embeddings.weight"). */
static int pretrain(const ts_tokenizer *tok, const ts_bert_config *cfg, const char *corpus, const char *out,
                    int resume, int64_t until, ts_tensor **params) {
    run r = {.out = out, .corpus = corpus,
             .shape = {.layers = cfg->num_hidden_layers, .hidden = cfg->hidden_size, .heads = 2, .inter = 64,
                       .max_len = SEQ, .batch = BATCH, .vocab_size = cfg->vocab_size, .max_steps = STEPS,
                       .accumulation = 1, .max_predictions = 5, .optimizer = TS_OPTIM_ADAMW, .ranks = 1,
                       .lr = 1e-3, .mask_prob = 0.15}};
    ts_bert_train_opts o = {.struct_size = sizeof o, .cfg = cfg, .head = TS_BERT_PRETRAINING, .batch = BATCH,
                            .seq = SEQ, .seed = 7, .threads = 1, .optimizer = TS_OPTIM_ADAMW, .accumulation = 1,
                            .steps_per_call = 1, .train_fetches = (const char *[]){"loss"}, .ntrain_fetches = 1};
    ts_pretrain_opts po = ts_pretrain_defaults();
    po.files = &corpus, po.nfiles = 1, po.batch_size = BATCH, po.max_len = SEQ, po.max_predictions = 5;
    int64_t step = 0;
    char path[4096];
    int ok = ts_bert_train_programs(&o, &r.tp, NULL) == TS_OK && (r.reader = ts_pretrain_open(tok, &po)) &&
             ts_batch_buf_init_slices(&r.bb, BATCH, SEQ, 2, 1, 5);
    if (ok && resume) { /* the newest valid checkpoint of the run, checked against this run's shape */
        ok = ts_train_checkpoint_find(out, path, sizeof path) == TS_OK &&
             ts_pretrain_ckpt_load(path, r.tp, r.reader, &r.shape, &corpus, 1, &step, NULL) == TS_OK;
        if (ok) printf("resumed from %s at step %lld\n", path, (long long)step);
    }
    ts_train_spec spec = {.struct_size = sizeof spec, .program = r.tp, .micro_batches = 1, .steps_per_call = 1,
                          .lr = 1e-3f, .warmup = 0.1, .total_steps = STEPS, .stop_after = until < STEPS ? until : 0};
    ts_train_hooks hooks = {.ctx = &r, .fill = fill, .feed = feed, .checkpoint = checkpoint};
    ts_train_result res;
    ok = ok && ts_train(&spec, &hooks, step, &res) == TS_OK &&
         ts_program_get_param(r.tp, "bert.embeddings.word_embeddings.weight", params) == TS_OK;
    if (ok) printf("trained steps %lld to %lld\n", (long long)res.start_step + 1, (long long)res.step);
    else fprintf(stderr, "resume_pipeline: %s\n", ts_last_error());
    ts_batch_buf_free(&r.bb);
    ts_pretrain_close(r.reader);
    ts_program_free(r.tp);
    return ok ? 0 : 1;
}

/* Balance the model over two devices by measurement, then compile the pipelined training program. */
static int pipeline(const ts_bert_config *cfg) {
    ts_stage_plan pp;
    if (ts_stage_plan_parse("cpu:0,cpu:1", "auto", cfg->num_hidden_layers, &pp) != TS_OK ||
        ts_stage_plan_measure(cfg, TS_BERT_PRETRAINING, BATCH, SEQ, 2, NULL, &pp) != TS_OK) {
        fprintf(stderr, "resume_pipeline: %s\n", ts_last_error());
        return 1;
    }
    for (int s = 0; s < pp.nstages; s++) printf("stage %d on %s: %s\n", s, pp.stage_name[s], pp.what[s]);
    ts_bert_config c = *cfg;
    ts_stage_plan_apply(&pp, &c);
    ts_bert_train_opts o = {.struct_size = sizeof o, .cfg = &c, .head = TS_BERT_PRETRAINING, .batch = BATCH,
                            .seq = SEQ, .optimizer = TS_OPTIM_ADAMW, .accumulation = 2, .steps_per_call = 1,
                            .stage_devices = pp.stage_name, .nstage_devices = pp.nstages,
                            .train_fetches = (const char *[]){"loss"}, .ntrain_fetches = 1};
    ts_program *p = NULL;
    if (ts_bert_train_programs(&o, &p, NULL) != TS_OK) {
        fprintf(stderr, "resume_pipeline: %s\n", ts_last_error());
        return 1;
    }
    printf("a pipeline of %d stages\n", ts_program_num_stages(p));
    ts_program_free(p);
    return 0;
}

int main(int argc, char **argv) {
    char dir[256] = "/tmp/tessera-resume-XXXXXX", corpus[512], vocab[512], out[512], whole[512];
    if (argc > 1) snprintf(dir, sizeof dir, "%s", argv[1]);
    if (argc > 1 ? ts_make_dirs(dir) != TS_OK : !mkdtemp(dir))
        return fprintf(stderr, "resume_pipeline: %s: %s\n", dir, argc > 1 ? ts_last_error() : "mkdtemp failed"), 1;
    snprintf(corpus, sizeof corpus, "%s/corpus.txt", dir);
    snprintf(vocab, sizeof vocab, "%s/vocab.txt", dir);
    snprintf(out, sizeof out, "%s/run", dir);
    snprintf(whole, sizeof whole, "%s/whole", dir);
    const char *files[] = {corpus};
    ts_tokenizer *tok = NULL;
    if (write_corpus(corpus) || ts_vocab_build(files, 1, 100, 1, vocab) != TS_OK ||
        !(tok = ts_tokenizer_load(vocab, 1))) {
        fprintf(stderr, "resume_pipeline: the corpus or vocabulary: %s\n", ts_last_error());
        return 1;
    }
    ts_bert_config cfg = tiny_config(tok);
    ts_tensor *a = NULL, *b = NULL, *c = NULL;
    /* the run in two pieces (interrupted at BREAK, resumed), then in one */
    int rc = pretrain(tok, &cfg, corpus, out, 0, BREAK, &a) || pretrain(tok, &cfg, corpus, out, 1, STEPS, &b) ||
             pretrain(tok, &cfg, corpus, whole, 0, STEPS, &c);
    if (!rc) {
        int same = !memcmp(ts_tensor_data(b), ts_tensor_data(c), (size_t)ts_tensor_numel(b) * sizeof(float));
        printf("resumed run %s the uninterrupted one\n", same ? "matches" : "DIFFERS FROM");
        rc = !same || pipeline(&cfg);
    }
    ts_tensor_free(a), ts_tensor_free(b), ts_tensor_free(c);
    ts_tokenizer_free(tok);
    printf("%s\n", rc ? "FAILED" : "ok");
    return rc;
}
