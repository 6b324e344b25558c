/*
 * test_packing.c — packed sequences (issue 39, part 2): the packer (ts_pack_sequences) and the
 * packed BERT (ts_bert_config.max_sequences_per_pack), on a tiny f32 BERT without dropout.
 *  - packer: every sequence placed once, no row over T nor over S sequences, the efficiency
 *    computed from the placement, SPFHP's placement of small histograms, bad input refused;
 *  - exactness: five sequences packed into two rows of 16 tokens compute what they compute
 *    unpacked, one per row (pre-training: MLM + NSP losses, logits, every parameter's gradient;
 *    classification: the same) or alone at their own length (QA: per-sequence losses, logits,
 *    and the gradient of the mean of those losses), within 2e-6 of each tensor's largest value (float
 *    rounding: the fused attention sums a packed row's keys in another order than a row alone's;
 *    1.2e-6 measured in the ASan build, which vectorises differently);
 *  - leak: the same packed rows fed with a mask that lets the sequences of a row see each other
 *    (attention_mask 1 on every real token, the unpacked meaning) differ by far more than that:
 *    the comparison catches a mask that leaks;
 *  - the packed readers: the pre-training reader and text classification rows (packed batches
 *    hold every sequence once, marks consistent) and the buffers' feed.
 */
#include "test_util.h"

#include <string.h>

#include "tessera_apps.h"

enum { V = 40, T = 16, S = 3, N = 5, L = 3 };
static const int LENS[N] = {9, 4, 6, 3, 7};

/* ------------------------------------------------------------------ the packer */

/* Checks the invariants of a packing of lengths[n] and returns its row count. */
static int64_t check_packing(const int *lengths, int64_t n, int row_len, int per_row) {
    int64_t *order = malloc(sizeof(int64_t) * (size_t)(n + 1)), *start = malloc(sizeof(int64_t) * (size_t)(n + 1));
    int64_t rows = -1, real = 0;
    double eff = -1;
    if (CHECK_OK(ts_pack_sequences(lengths, n, row_len, per_row, order, start, &rows, &eff))) goto out;
    char *seen = calloc((size_t)n + 1, 1);
    CHECK(start[0] == 0 && start[rows] == n, "rows cover %lld .. %lld of %lld", (long long)start[0],
          (long long)start[rows], (long long)n);
    for (int64_t r = 0; r < rows; r++) {
        int64_t used = 0;
        CHECK(start[r + 1] > start[r] && start[r + 1] - start[r] <= per_row, "row %lld holds %lld sequences",
              (long long)r, (long long)(start[r + 1] - start[r]));
        for (int64_t k = start[r]; k < start[r + 1]; k++) {
            CHECK(order[k] >= 0 && order[k] < n && !seen[order[k]], "sequence %lld placed twice or out of range",
                  (long long)order[k]);
            if (order[k] >= 0 && order[k] < n) seen[order[k]] = 1, used += lengths[order[k]];
        }
        CHECK(used <= row_len, "row %lld holds %lld tokens, above %d", (long long)r, (long long)used, row_len);
        real += used;
    }
    for (int64_t i = 0; i < n; i++) CHECK(seen[i], "sequence %lld not placed", (long long)i);
    CHECK(fabs(eff - (double)real / ((double)rows * row_len)) < 1e-12, "efficiency %g, placed %g", eff,
          (double)real / ((double)rows * row_len));
    free(seen);
out:
    free(order);
    free(start);
    return rows;
}

static void test_packer(void) {
    /* SPFHP on a small histogram: longest first, best fit */
    int h1[] = {6, 2, 6, 4, 2, 4}; /* T 8: 6+2, 6+2, 4+4: perfect */
    int64_t order[8], start[8], rows = 0;
    double eff = 0;
    CHECK_OK(ts_pack_sequences(h1, 6, 8, 3, order, start, &rows, &eff));
    CHECK(rows == 3 && eff == 1.0, "6 6 4 4 2 2 in rows of 8: %lld rows, efficiency %g (want 3, 1)", (long long)rows,
          eff);
    int64_t want1[] = {0, 1, 2, 4, 3, 5}; /* rows opened by 6 (0), 6 (2), 4 (3); the 2s fill the 6s' rows */
    CHECK(!memcmp(order, want1, sizeof want1) && start[1] == 2 && start[2] == 4, "order %lld %lld %lld %lld %lld %lld",
          (long long)order[0], (long long)order[1], (long long)order[2], (long long)order[3], (long long)order[4],
          (long long)order[5]);
    /* T 8, S 2: 5 opens a row, 3 fills it, 1 opens another (the first is full) */
    int h2[] = {3, 1, 5};
    CHECK_OK(ts_pack_sequences(h2, 3, 8, 2, order, start, &rows, &eff));
    CHECK(rows == 2 && order[0] == 2 && order[1] == 0 && order[2] == 1, "3 1 5: %lld rows, order %lld %lld %lld",
          (long long)rows, (long long)order[0], (long long)order[1], (long long)order[2]);
    /* max_per_row caps a row: eight 1-token sequences, S 2 -> 4 rows */
    int h3[] = {1, 1, 1, 1, 1, 1, 1, 1};
    CHECK_OK(ts_pack_sequences(h3, 8, 8, 2, order, start, &rows, &eff));
    CHECK(rows == 4 && fabs(eff - 0.25) < 1e-12, "eight 1s, S 2: %lld rows, efficiency %g", (long long)rows, eff);
    /* invariants on a random histogram */
    tu_rng r = tu_rng_seed(7);
    int big[3000];
    for (int i = 0; i < 3000; i++) big[i] = 1 + (int)tu_randint(&r, tu_unif(&r) < 0.7 ? 40 : 128);
    int64_t nr = check_packing(big, 3000, 128, 4);
    CHECK(nr > 0 && nr < 3000 / 2, "3000 sequences in %lld rows", (long long)nr);
    check_packing(LENS, N, T, S);
    /* bad input */
    int bad[] = {4, 0};
    CHECK_STATUS(ts_pack_sequences(bad, 2, 8, 2, order, start, &rows, NULL), TS_ERR_ARG);
    CHECK_ERRMSG("lengths[1] = 0");
    int longer[] = {9};
    CHECK_STATUS(ts_pack_sequences(longer, 1, 8, 2, order, start, &rows, NULL), TS_ERR_ARG);
    CHECK_ERRMSG("row_len 8");
    CHECK_STATUS(ts_pack_sequences(h1, 6, 8, 0, order, start, &rows, NULL), TS_ERR_ARG);
    CHECK_ERRMSG("max_per_row 0");
}

/* ------------------------------------------------------------------ the model: packed = alone */

typedef struct seqdata {
    int len;
    int32_t ids[T], types[T], mlm[T]; /* mlm: the label of a masked position, -100 elsewhere */
    int32_t label, start, end;        /* NSP / class label; QA answer span (positions in the sequence) */
} seqdata;

static seqdata SEQ[N];

static void make_data(void) {
    tu_rng r = tu_rng_seed(39);
    for (int i = 0; i < N; i++) {
        seqdata *q = &SEQ[i];
        q->len = LENS[i];
        for (int t = 0; t < q->len; t++) {
            q->ids[t] = t == 0 ? 2 : 5 + (int32_t)tu_randint(&r, V - 5);
            q->types[t] = t > q->len / 2;
            q->mlm[t] = t > 0 && tu_unif(&r) < 0.4 ? 5 + (int32_t)tu_randint(&r, V - 5) : -100;
        }
        q->mlm[1] = 7; /* at least one masked position each */
        q->label = (int32_t)tu_randint(&r, 2);
        q->start = 1 + (int32_t)tu_randint(&r, q->len - 1);
        q->end = q->start + (int32_t)tu_randint(&r, q->len - q->start);
    }
}

static ts_bert_config tiny_config(int per_pack) {
    ts_bert_config c;
    ts_bert_config_default(&c);
    c.struct_size = sizeof c;
    c.vocab_size = V, c.hidden_size = 16, c.num_hidden_layers = 2, c.num_attention_heads = 2;
    c.intermediate_size = 32, c.max_position_embeddings = 32, c.num_labels = L;
    c.hidden_dropout_prob = c.attention_probs_dropout_prob = 0.f;
    c.initializer_range = 0.2f; /* sharper attention than BERT's 0.02: a leak shows more */
    c.max_sequences_per_pack = per_pack;
    return c;
}

#define MAXF 96
typedef struct prog {
    ts_program *p;
    const char *names[MAXF]; /* fetches: the outputs, then "<param>@GRAD" */
    char grads[MAXF][128];
    int nout, nf;
} prog;

/* The model for head with the outputs outs and every parameter's gradient fetched. */
static int build(prog *pr, int per_pack, ts_bert_head head, int B, int len, const char *const *outs, int nout) {
    ts_bert_config c = tiny_config(per_pack);
    memset(pr, 0, sizeof *pr);
    ts_graph *g = ts_graph_new();
    ts_bert_outputs o;
    CHECK_OK(ts_bert_build(g, &c, head, B, len, &o));
    ts_program *names = ts_compile(g, &(ts_compile_opts){.struct_size = sizeof(ts_compile_opts), .nfetch = nout,
                                                         .fetches = outs, .inference = 1});
    ts_graph_free(g);
    CHECK(names != NULL, "compile: %s", ts_last_error());
    if (!names) return 0;
    for (int i = 0; i < nout; i++) pr->names[pr->nf++] = outs[i];
    for (int i = 0; i < ts_program_num_params(names) && pr->nf < MAXF; i++) {
        snprintf(pr->grads[i], sizeof pr->grads[i], "%s@GRAD", ts_program_param_name(names, i));
        pr->names[pr->nf++] = pr->grads[i];
    }
    ts_program_free(names);
    pr->nout = nout;
    g = ts_graph_new();
    CHECK_OK(ts_bert_build(g, &c, head, B, len, &o));
    CHECK_OK(ts_backward(g, o.loss));
    pr->p = ts_compile(g, &(ts_compile_opts){.struct_size = sizeof(ts_compile_opts), .nfetch = pr->nf,
                                             .fetches = pr->names});
    ts_graph_free(g);
    CHECK(pr->p != NULL, "compile: %s", ts_last_error());
    return pr->p != NULL;
}

/* Host arrays of one batch, packed or not. */
typedef struct batch {
    int B, len;
    int32_t *ids, *types, *mask, *pos, *cls, *mlm, *label, *start, *end;
} batch;

static void batch_alloc(batch *b, int B, int len, int per_row) {
    b->B = B, b->len = len;
    size_t bt = (size_t)B * len, bs = (size_t)B * per_row;
    b->ids = calloc(bt, 4), b->types = calloc(bt, 4), b->mask = calloc(bt, 4), b->pos = calloc(bt, 4);
    b->mlm = malloc(bt * 4), b->cls = calloc(bs, 4), b->label = malloc(bs * 4), b->start = malloc(bs * 4);
    b->end = malloc(bs * 4);
    for (size_t i = 0; i < bt; i++) b->mlm[i] = -100;
    for (size_t i = 0; i < bs; i++) b->label[i] = -100, b->start[i] = b->end[i] = len;
}

static void batch_free(batch *b) {
    free(b->ids), free(b->types), free(b->mask), free(b->pos), free(b->mlm), free(b->cls), free(b->label);
    free(b->start), free(b->end);
}

/* Sequence i at row `row`, offset off, slot k (of per_row): mask value k + 1 when packed, else 1. */
static void put(batch *b, int row, int off, int k, int per_row, int i, int packed) {
    const seqdata *q = &SEQ[i];
    size_t o = (size_t)row * b->len + off;
    for (int t = 0; t < q->len; t++) {
        b->ids[o + t] = q->ids[t], b->types[o + t] = q->types[t], b->mlm[o + t] = q->mlm[t];
        b->mask[o + t] = packed ? k + 1 : 1, b->pos[o + t] = t;
    }
    size_t s = (size_t)row * per_row + k;
    b->cls[s] = off, b->label[s] = q->label, b->start[s] = off + q->start, b->end[s] = off + q->end;
}

/* The five sequences packed (as ts_pack_sequences places them) into *rows rows; slot of each. */
static void packed_batch(batch *b, int *slot_row, int *slot_k, int *slot_off) {
    int64_t order[N], start[N + 1], rows = 0;
    CHECK_OK(ts_pack_sequences(LENS, N, T, S, order, start, &rows, NULL));
    batch_alloc(b, (int)rows, T, S);
    for (int64_t r = 0; r < rows; r++)
        for (int64_t k = start[r], off = 0; k < start[r + 1]; off += LENS[order[k]], k++) {
            int i = (int)order[k];
            put(b, (int)r, (int)off, (int)(k - start[r]), S, i, 1);
            slot_row[i] = (int)r, slot_k[i] = (int)(k - start[r]), slot_off[i] = (int)off;
        }
}

static void feed_i32(ts_program *p, const char *name, int nd, const int64_t *sh, const int32_t *data) {
    CHECK_OK(ts_program_feed_data(p, name, TS_I32, nd, sh, data));
}

/* Feed b to p for head (per_row > 1: the packed inputs too). */
static void feed(ts_program *p, const batch *b, ts_bert_head head, int per_row) {
    int64_t bt[2] = {b->B, b->len}, bs[2] = {b->B, per_row};
    int nd_seq = per_row > 1 ? 2 : 1;
    feed_i32(p, "input_ids", 2, bt, b->ids);
    feed_i32(p, "token_type_ids", 2, bt, b->types);
    feed_i32(p, "attention_mask", 2, bt, b->mask);
    if (per_row > 1) feed_i32(p, "position_ids", 2, bt, b->pos);
    if (per_row > 1 && head != TS_BERT_QUESTION_ANSWERING) feed_i32(p, "cls_positions", 2, bs, b->cls);
    if (head == TS_BERT_PRETRAINING) {
        feed_i32(p, "labels", 2, bt, b->mlm);
        feed_i32(p, "next_sentence_label", nd_seq, bs, b->label);
    } else if (head == TS_BERT_SEQ_CLASSIFICATION) {
        feed_i32(p, "labels", nd_seq, bs, b->label);
    } else {
        feed_i32(p, "start_positions", nd_seq, bs, b->start);
        feed_i32(p, "end_positions", nd_seq, bs, b->end);
    }
}

/* max |a - b| / max |b| over n values */
static double rel_diff(const float *a, const float *b, int64_t n) {
    double d = 0, m = 1e-30;
    for (int64_t i = 0; i < n; i++) d = fmax(d, fabs((double)a[i] - b[i])), m = fmax(m, fabs((double)b[i]));
    return d / m;
}

/* The largest |a - b| over every gradient of a against b's (scaled by `scale`, summed over nb
 * programs); *gmax the largest |b|. Absolute: some gradients are 0 in exact arithmetic (the key
 * bias: softmax ignores a shift of a row), their values float noise, so relative to themselves
 * they would compare noise with noise. */
static double grads_diff(prog *a, prog *b, int nb, const double *scale, double *gmax) {
    double worst = 0;
    *gmax = 0;
    for (int f = a->nout; f < a->nf; f++) {
        ts_tensor *x = TU_FETCH(a->p, a->names[f]);
        if (!x) return INFINITY;
        int64_t n = ts_tensor_numel(x);
        float *sum = calloc((size_t)n, sizeof *sum);
        for (int j = 0; j < nb; j++) {
            ts_tensor *y = TU_FETCH(b[j].p, a->names[f]);
            for (int64_t e = 0; y && e < n; e++) sum[e] += (float)(scale[j] * tu_f32(y)[e]);
            ts_tensor_free(y);
        }
        double d = 0;
        for (int64_t e = 0; e < n; e++)
            d = fmax(d, fabs((double)tu_f32(x)[e] - sum[e])), *gmax = fmax(*gmax, fabs(sum[e]));
        if (getenv("TS_TEST_VERBOSE")) printf("    %-60s %.2e\n", a->names[f], d);
        worst = fmax(worst, d);
        free(sum);
        ts_tensor_free(x);
    }
    return worst;
}

/* The first outputs' scalar values. */
static double scalar_of(ts_program *p, const char *name) {
    ts_tensor *t = TU_FETCH(p, name);
    double v = t ? tu_f32(t)[0] : NAN;
    ts_tensor_free(t);
    return v;
}

/* Per-sequence logits [rows, per_row, K] (packed) against [N, K] (unpacked, one a row). */
static double per_seq_diff(ts_program *pk, ts_program *up, const char *name, int K, const int *srow,
                           const int *sk) {
    ts_tensor *a = TU_FETCH(pk, name), *b = TU_FETCH(up, name);
    double worst = a && b ? 0 : INFINITY;
    for (int i = 0; a && b && i < N; i++)
        worst = fmax(worst, rel_diff(tu_f32(a) + ((size_t)srow[i] * S + sk[i]) * K, tu_f32(b) + (size_t)i * K, K));
    ts_tensor_free(a);
    ts_tensor_free(b);
    return worst;
}

/* Per-token outputs [rows, T, K] at each sequence's tokens against [N, T, K]. */
static double per_token_diff(ts_program *pk, ts_program *up, const char *name, int K, const int *srow,
                             const int *soff) {
    ts_tensor *a = TU_FETCH(pk, name), *b = TU_FETCH(up, name);
    double worst = a && b ? 0 : INFINITY;
    for (int i = 0; a && b && i < N; i++)
        worst = fmax(worst, rel_diff(tu_f32(a) + ((size_t)srow[i] * T + soff[i]) * K, tu_f32(b) + (size_t)i * T * K,
                                     (int64_t)LENS[i] * K));
    ts_tensor_free(a);
    ts_tensor_free(b);
    return worst;
}

#define TOL 2e-6

/* Pre-training or classification: packed rows against the same sequences one a row. */
static void packed_vs_unpacked(ts_bert_head head, const char *const *outs, int nout, const char *logits, int K) {
    make_data();
    prog pk, up;
    if (!build(&pk, S, head, 2, T, outs, nout) || !build(&up, 0, head, N, T, outs, nout)) return;
    CHECK(ts_program_copy_params(up.p, pk.p) > 0, "copy params: %s", ts_last_error());
    int srow[N], sk[N], soff[N];
    batch bp, bu;
    packed_batch(&bp, srow, sk, soff);
    CHECK(bp.B == 2, "five sequences in %d rows (want 2)", bp.B);
    batch_alloc(&bu, N, T, 1);
    for (int i = 0; i < N; i++) put(&bu, i, 0, 0, 1, i, 0);
    feed(pk.p, &bp, head, S);
    feed(up.p, &bu, head, 1);
    CHECK_OK(ts_program_run(pk.p));
    CHECK_OK(ts_program_run(up.p));
    double worst = 0;
    for (int f = 0; f < nout; f++)
        if (!strstr(outs[f], "logits")) {
            double a = scalar_of(pk.p, outs[f]), b = scalar_of(up.p, outs[f]);
            printf("  %-24s packed %.9f unpacked %.9f\n", outs[f], a, b);
            worst = fmax(worst, fabs(a - b) / fabs(b));
        }
    double gmax = 0, dl = per_seq_diff(pk.p, up.p, logits, K, srow, sk);
    double dg = grads_diff(&pk, &up, 1, (double[]){1}, &gmax);
    double dt = head == TS_BERT_PRETRAINING ? per_token_diff(pk.p, up.p, "prediction_logits", V, srow, soff) : 0;
    printf("  max relative differences: losses %.2e, %s %.2e, prediction_logits %.2e; %d gradients: max |difference| "
           "%.2e (largest gradient %.2e)\n", worst, logits, dl, dt, pk.nf - pk.nout, dg, gmax);
    CHECK(worst <= TOL && dl <= TOL && dt <= TOL && dg <= TOL, "packed differs from unpacked: losses %.2e, logits "
          "%.2e / %.2e, gradients %.2e (tolerance %g)", worst, dl, dt, dg, TOL);

    /* the same rows with a mask that lets a row's sequences see each other: caught */
    for (int64_t e = 0; e < (int64_t)bp.B * T; e++) bp.mask[e] = bp.mask[e] > 0;
    feed(pk.p, &bp, head, S);
    CHECK_OK(ts_program_run(pk.p));
    double leak = per_seq_diff(pk.p, up.p, logits, K, srow, sk), leak_g = grads_diff(&pk, &up, 1, (double[]){1}, &gmax);
    printf("  leaking mask (1 on every real token): %s differ by %.2e, gradients by %.2e\n", logits, leak, leak_g);
    CHECK(leak > 100 * TOL && leak_g > 100 * TOL, "a mask that leaks across sequences went unnoticed: %.2e, %.2e",
          leak, leak_g);
    batch_free(&bp);
    batch_free(&bu);
    ts_program_free(pk.p);
    ts_program_free(up.p);
}

static void test_pretraining_exact(void) {
    static const char *const outs[] = {"loss", "mlm_loss", "nsp_loss", "seq_relationship_logits",
                                       "prediction_logits"};
    packed_vs_unpacked(TS_BERT_PRETRAINING, outs, 5, "seq_relationship_logits", 2);
}

static void test_classification_exact(void) {
    static const char *const outs[] = {"loss", "logits"};
    packed_vs_unpacked(TS_BERT_SEQ_CLASSIFICATION, outs, 2, "logits", L);
}

/* QA: the packed loss is the mean of the sequences' losses alone (each at its own length, so its
 * softmax spans its own tokens), the logits per token those alone, the gradients their mean. */
static void test_qa_exact(void) {
    static const char *const outs[] = {"loss", "start_logits", "end_logits"};
    make_data();
    prog pk, alone[N];
    if (!build(&pk, S, TS_BERT_QUESTION_ANSWERING, 2, T, outs, 3)) return;
    int srow[N], sk[N], soff[N];
    batch bp;
    packed_batch(&bp, srow, sk, soff);
    feed(pk.p, &bp, TS_BERT_QUESTION_ANSWERING, S);
    CHECK_OK(ts_program_run(pk.p));
    ts_tensor *ps = TU_FETCH(pk.p, "start_logits"), *pe = TU_FETCH(pk.p, "end_logits");
    double mean = 0, dlog = 0, scale[N];
    for (int i = 0; i < N; i++) {
        scale[i] = 1.0 / N;
        if (!build(&alone[i], 0, TS_BERT_QUESTION_ANSWERING, 1, LENS[i], outs, 3)) return;
        ts_program_copy_params(alone[i].p, pk.p);
        batch b;
        batch_alloc(&b, 1, LENS[i], 1);
        put(&b, 0, 0, 0, 1, i, 0);
        feed(alone[i].p, &b, TS_BERT_QUESTION_ANSWERING, 1);
        CHECK_OK(ts_program_run(alone[i].p));
        mean += scalar_of(alone[i].p, "loss") / N;
        ts_tensor *as = TU_FETCH(alone[i].p, "start_logits"), *ae = TU_FETCH(alone[i].p, "end_logits");
        if (ps && pe && as && ae) {
            size_t o = (size_t)srow[i] * T + soff[i];
            dlog = fmax(dlog, fmax(rel_diff(tu_f32(ps) + o, tu_f32(as), LENS[i]),
                                   rel_diff(tu_f32(pe) + o, tu_f32(ae), LENS[i])));
        }
        ts_tensor_free(as), ts_tensor_free(ae);
        batch_free(&b);
    }
    double loss = scalar_of(pk.p, "loss"), dl = fabs(loss - mean) / fabs(mean);
    double gmax = 0, dg = grads_diff(&pk, alone, N, scale, &gmax);
    printf("  qa loss packed %.9f, mean alone %.9f; max relative differences: loss %.2e, logits %.2e; %d gradients: "
           "max |difference| %.2e (largest gradient %.2e)\n", loss, mean, dl, dlog, pk.nf - pk.nout, dg, gmax);
    CHECK(dl <= TOL && dlog <= TOL && dg <= TOL, "packed QA differs from alone: %.2e %.2e %.2e", dl, dlog, dg);
    ts_tensor_free(ps), ts_tensor_free(pe);
    for (int i = 0; i < N; i++) ts_program_free(alone[i].p);
    ts_program_free(pk.p);
    batch_free(&bp);
}

/* A packed config the model cannot take is refused, naming the field. */
static void test_packed_config_errors(void) {
    ts_bert_config c = tiny_config(T + 1);
    ts_graph *g = ts_graph_new();
    CHECK_STATUS(ts_bert_build(g, &c, TS_BERT_PRETRAINING, 2, T, NULL), TS_ERR_ARG);
    CHECK_ERRMSG("max_sequences_per_pack 17");
    ts_graph_free(g);
    c = tiny_config(S);
    c.num_labels = 1;
    g = ts_graph_new();
    CHECK_STATUS(ts_bert_build(g, &c, TS_BERT_SEQ_CLASSIFICATION, 2, T, NULL), TS_ERR_ARG);
    CHECK_ERRMSG("regression");
    ts_graph_free(g);
}

int main(int argc, char **argv) {
    tu_args(argc, argv);
    RUN(test_packer);
    RUN(test_pretraining_exact);
    RUN(test_classification_exact);
    RUN(test_qa_exact);
    RUN(test_packed_config_errors);
    return tu_finish("packing");
}
