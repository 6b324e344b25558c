/*
 * model.c — a served model: a fine-tuned BERT directory (classifier or question answering, as
 * `tessera predict` takes it) loaded once, compiled at start into one inference program per
 * sequence-length bucket (16, 32, 64, ... up to the model's length) and batch size (1, 2, 4, ...
 * up to --max-batch), so nothing compiles on the request path; the programs read one copy of the
 * weights (ts_program_share_params). One batch of jobs runs through the smallest bucket that
 * holds its longest row and the smallest batch size that holds its rows, or in parts (9 rows as
 * 8 + 1) where the programs' run times, measured at start, make that a fifth cheaper or more. A
 * directory from tessera quantize (config.json's "quantization" record, ts_quant_record_load) is
 * compiled int8 as tessera run compiles it: dynamic, or static with its calibrated scales; the
 * programs share one int8 copy of each weight as they share the f32 one. An ONNX file (NAME=FILE.onnx) is onnx_model.c's; a folder of
 * PaddleOCR's models (as tessera ocr reads) takes image uploads, one at a time.
 */
#include "common/app.h" /* ts_path_join */
#include "serve/serve.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The error that just failed, prefixed "model DIR: WHAT" (its status kept). */
static ts_status fail(const char *what, const char *dir) {
    ts_status st = ts_last_status();
    return ts_set_error(st ? st : TS_ERR_RUNTIME, "model %s: %s%s", dir, what, ts_last_error());
}

/* The buckets for rows of at most max_seq tokens: 16, 32, ... below it, then max_seq. */
static void make_buckets(serve_model *m, int max_seq) {
    m->nbuckets = 0;
    for (int b = 16; b < max_seq && m->nbuckets < SERVE_MAX_BUCKETS - 1; b *= 2) m->bucket[m->nbuckets++] = b;
    m->bucket[m->nbuckets++] = max_seq;
}

/* The batch sizes: 1, 2, 4, ... below max_batch, then max_batch. */
static void make_batches(serve_model *m, int max_batch) {
    m->nbatches = 0;
    for (int b = 1; b < max_batch && m->nbatches < SERVE_MAX_BATCHES - 1; b *= 2) m->batch[m->nbatches++] = b;
    m->batch[m->nbatches++] = max_batch;
}

/* The inference program of m's model for batch x seq, its parameters neither drawn nor loaded
 * (they are shared from the first program next). NULL with the error set. */
static ts_program *compile_shape(const serve_model *m, const serve_opts *o, const ts_quant_record *q, int batch,
                                 int seq) {
    ts_graph *g = ts_graph_new();
    ts_bert_outputs out;
    const char *fetch[7];
    ts_program *p = NULL;
    ts_bert_config c = m->cfg; /* the library's own whole struct; attention unfused off the CPU */
    c.struct_size = sizeof c;
    c.eager_attention |= !app_fuses_attention(o->device);
    if (g && ts_bert_build(g, &c, c.head, batch, seq, &out) == TS_OK) {
        int nf = ts_bert_output_names(&out, fetch);
        p = ts_compile(g, &(ts_compile_opts){.struct_size = sizeof(ts_compile_opts),
                                             .device = o->device ? o->device : "cpu", .num_threads = o->threads,
                                             .nfetch = nf, .fetches = fetch, .inference = 1, .skip_param_init = 1,
                                             .quantize = q->mode, .quant_scales = q->scales,
                                             .nquant_scales = q->nscales});
    }
    ts_graph_free(g);
    return p;
}

/* Program (bucket i, batch k) of m compiled, sharing the weights of the largest (lb, lk), and
 * its batch buffer. TS_OK or the error (ts_set_error). */
static ts_status compile_one(serve_model *m, const char *dir, const serve_opts *o, const ts_quant_record *q, int i,
                             int k, int lb, int lk) {
    if (!m->prog[i][k] && !(m->prog[i][k] = compile_shape(m, o, q, m->batch[k], m->bucket[i])))
        return fail("compiling: ", dir);
    if (m->prog[i][k] != m->prog[lb][lk] && ts_program_share_params(m->prog[i][k], m->prog[lb][lk]) < 0)
        return fail("sharing the weights: ", dir);
    if (!ts_batch_buf_init(&m->bb[i][k], m->batch[k], m->bucket[i], 0))
        return ts_set_error(TS_ERR_NOMEM, "model %s: out of memory", dir);
    return TS_OK;
}

/* Every program of m: the largest (max_batch x max_seq) loads the weights, the others share
 * them; a phase's progress over them (ts_phase_*). TS_OK or the error (ts_set_error). */
static ts_status compile_all(serve_model *m, const char *dir, const serve_opts *o, const ts_quant_record *q) {
    char weights[4200];
    if (ts_path_join(weights, sizeof weights, dir, "model.safetensors")) return fail("", dir);
    const int lb = m->nbuckets - 1, lk = m->nbatches - 1;
    const char *fetch[7];
    int nfetch = 0;
    ts_bert_infer_opts bo = {.struct_size = sizeof bo, .cfg = &m->cfg, .batch = m->batch[lk],
                             .seq = m->bucket[lb], .device = o->device ? o->device : "cpu",
                             .threads = o->threads, .weights = weights, .name = "tessera serve",
                             .config_path = dir, .inputs = "requests", .quantize = q->mode,
                             .quant_scales = q->scales, .nquant_scales = q->nscales};
    ts_phase ph;
    ts_phase_begin(&ph, "compiling", "programs", (int64_t)m->nbuckets * m->nbatches);
    ts_status st = ts_bert_infer_build(&bo, &m->prog[lb][lk], fetch, &nfetch, NULL) == TS_OK
                       ? TS_OK : fail("compiling: ", dir);
    for (int i = 0; st == TS_OK && i < m->nbuckets; i++)
        for (int k = 0; st == TS_OK && k < m->nbatches; k++) {
            st = compile_one(m, dir, o, q, i, k, lb, lk);
            ts_phase_step(&ph, (int64_t)i * m->nbatches + k + 1);
        }
    ts_phase_end(&ph);
    return st;
}

static void fill(serve_model *m, int b, int k0, serve_job **jobs, int n, int r0, int nrows);

/* Each program's seconds a run on padding rows, for choosing how to run a batch (first_part):
 * one run where it takes over 0.1 s (the first program's second: its first makes the shared
 * prepacked weights), else the least of 3 after one. TS_OK or the error (ts_set_error). */
static ts_status time_programs(serve_model *m) {
    for (int i = m->nbuckets - 1; i >= 0; i--)
        for (int k = m->nbatches - 1; k >= 0; k--) {
            ts_program *p = m->prog[i][k];
            fill(m, i, k, NULL, 0, 0, 0);
            ts_status st = ts_batch_buf_feed(&m->bb[i][k], p, 0);
            int first = i == m->nbuckets - 1 && k == m->nbatches - 1;
            double t = 0, best = -1;
            for (int run = 0; st == TS_OK && run < 4; run++) {
                t = ts_seconds();
                st = ts_program_run(p);
                t = ts_seconds() - t;
                if (run == 0 && first) continue;
                if (run > 0 || t > 0.1) best = best < 0 || t < best ? t : best;
                if (best > 0.1 && run <= first) break; /* a slow program: its first counted run */
            }
            m->cost[i][k] = best;
            if (st != TS_OK) return ts_set_error(st, "model %s: running: %s", m->dir, ts_last_error());
        }
    /* A program of fewer rows never costs more than one of more: a timing that says so was slowed by
     * something else (this machine's other tenants), and believing it would run one row through a
     * larger program. */
    for (int i = 0; i < m->nbuckets; i++)
        for (int k = m->nbatches - 2; k >= 0; k--)
            if (m->cost[i][k + 1] >= 0 && m->cost[i][k] > m->cost[i][k + 1]) m->cost[i][k] = m->cost[i][k + 1];
    return TS_OK;
}

/* A folder of PaddleOCR's models (its detector there)? */
static int is_ocr_dir(const char *dir) {
    char path[4200];
    if (ts_path_join(path, sizeof path, dir, "ch_PP-OCRv4_det_infer.onnx")) return 0;
    FILE *f = fopen(path, "rb");
    if (f) fclose(f);
    return f != NULL;
}

/* An OCR model: its image uploads are read one at a time (each image's size is its own). */
static ts_status load_ocr(serve_model *m, const char *dir, const serve_opts *o) {
    ts_ocr_opts oo = {.struct_size = sizeof oo, .models_dir = dir, .num_threads = o->threads, .device = o->device};
    if (!(m->ocr = ts_ocr_new(&oo))) return fail("", dir);
    m->one_job = 1;
    m->sig = (serve_sig){.max_batch = 1};
    return TS_OK;
}

ts_status serve_model_load(serve_model *m, const char *name, const char *dir, const serve_opts *o) {
    snprintf(m->name, sizeof m->name, "%s", name);
    snprintf(m->dir, sizeof m->dir, "%s", dir);
    m->max_delay_ms = o->max_delay_ms;
    m->queue_cap = o->queue_cap;
    size_t len = strlen(dir);
    if (len > 5 && !strcmp(dir + len - 5, ".onnx")) return serve_onnx_load(m, dir, o);
    if (is_ocr_dir(dir)) return load_ocr(m, dir, o);
    m->cfg.struct_size = sizeof m->cfg;
    if (!(m->tok = ts_model_load_dir(dir, &m->cfg, &m->meta))) return fail("", dir);
    int qa = m->cfg.head == TS_BERT_QUESTION_ANSWERING;
    if (!qa && !(m->cfg.head == TS_BERT_SEQ_CLASSIFICATION && m->meta.nlabels > 0))
        return ts_set_error(TS_ERR_ARG,
                            "model %s: not a fine-tuned model (architecture '%s'; a sequence classifier or a "
                            "question-answering model from tessera finetune)",
                            dir, m->cfg.architecture);
    ts_bert_config_inference(&m->cfg, TS_F32);
    int max_seq = m->meta.max_len > 0 ? m->meta.max_len : m->cfg.max_position_embeddings;
    m->sig = (serve_sig){.max_batch = o->max_batch, .max_seq = max_seq, .vocab = m->cfg.vocab_size,
                         .type_vocab = m->cfg.type_vocab_size, .qa = qa, .pairs = m->meta.text_b_column != NULL};
    make_buckets(m, max_seq);
    make_batches(m, o->max_batch);
    ts_quant_record q;
    if (ts_quant_record_load(dir, &q) != TS_OK) return fail("", dir);
    ts_status rc = compile_all(m, dir, o, &q);
    ts_memory mem = {.struct_size = sizeof mem};
    m->quant_mode = q.mode;
    if (!rc && ts_program_memory(m->prog[m->nbuckets - 1][m->nbatches - 1], &mem) == TS_OK) m->quant_ops = mem.quantized;
    ts_quant_record_free(&q);
    if (!rc) rc = time_programs(m);
    if (rc) return rc;
    m->max_delay_ms = o->max_delay_ms;
    m->queue_cap = o->queue_cap;
    return TS_OK;
}

void serve_model_free(serve_model *m) {
    if (m->onnx) serve_onnx_free(m);
    ts_ocr_free(m->ocr);
    for (int i = 0; i < m->nbuckets; i++)
        for (int k = 0; k < m->nbatches; k++) {
            ts_program_free(m->prog[i][k]);
            ts_batch_buf_free(&m->bb[i][k]);
        }
    ts_tokenizer_free(m->tok);
    ts_model_meta_free(&m->meta);
    memset(m, 0, sizeof *m);
}

ts_status serve_texts_encode(const serve_model *m, const serve_texts *t, serve_tensors *out) {
    const int S = m->sig.max_seq, n = t->n;
    memset(out, 0, sizeof *out);
    int32_t *ids = malloc((size_t)n * S * sizeof *ids), *types = malloc((size_t)n * S * sizeof *types);
    int32_t *mask = malloc((size_t)n * S * sizeof *mask);
    int T = 1;
    ts_status rc = TS_OK;
    for (int i = 0; ids && types && mask && i < n && !rc; i++) {
        size_t o = (size_t)i * S;
        if (ts_encode(m->tok, t->text[i], t->text_b[i], S, ids + o, types + o, mask + o, NULL) != TS_OK)
            rc = ts_set_error(TS_ERR_ARG, "instance %d: %s", i, ts_last_error());
        for (int k = 0; k < S; k++)
            if (mask[o + k] && k + 1 > T) T = k + 1;
    }
    if (!ids || !types || !mask) rc = ts_set_error(TS_ERR_NOMEM, "out of memory");
    if (!rc) { /* [n, S] -> [n, T]: the rows cut to the longest encoding */
        for (int i = 1; i < n; i++) {
            memmove(ids + (size_t)i * T, ids + (size_t)i * S, (size_t)T * sizeof *ids);
            memmove(types + (size_t)i * T, types + (size_t)i * S, (size_t)T * sizeof *ids);
            memmove(mask + (size_t)i * T, mask + (size_t)i * S, (size_t)T * sizeof *ids);
        }
        *out = (serve_tensors){.rows = n, .T = T, .ids = ids, .types = types, .mask = mask};
        return TS_OK;
    }
    free(ids), free(types), free(mask);
    return rc;
}

/* The smallest batch size that holds rows (rows <= max_batch). */
static int batch_for(const serve_model *m, int rows) {
    int k = 0;
    while (k + 1 < m->nbatches && m->batch[k] < rows) k++;
    return k;
}

/* A question-answering job from /v1: every window of its questions, at most max_batch at a time
 * (fewer windows: the smallest batch size that holds them). */
static int run_squad(serve_model *m, serve_job *j, int *ran) {
    int last = m->nbuckets - 1, F = (int)ts_squad_num_features(j->squad);
    int k = batch_for(m, F < m->sig.max_batch ? F : m->sig.max_batch), B = m->batch[k];
    *ran = (F + B - 1) / B * B;
    if (ts_squad_logits(m->prog[last][k], j->squad, B, m->bucket[last], &j->out[0], &j->out[1]) != TS_OK) {
        j->code = 500;
        snprintf(j->err, sizeof j->err, "running the model: %s", ts_last_error());
        return 0;
    }
    j->ncols = m->bucket[last];
    return F;
}

/* Copy rows [r0, r0 + nrows) of the jobs (their rows in order) into the batch buffer of bucket b
 * and batch size k0, padding each row to its length and the batch to batch[k0] rows (a padding
 * row is [CLS] alone). */
static void fill(serve_model *m, int b, int k0, serve_job **jobs, int n, int r0, int nrows) {
    const int Tb = m->bucket[b], B = m->batch[k0];
    ts_batch *bt = &m->bb[b][k0].b;
    memset(bt->input_ids, 0, (size_t)B * Tb * sizeof(int32_t));
    memset(bt->token_type_ids, 0, (size_t)B * Tb * sizeof(int32_t));
    memset(bt->attention_mask, 0, (size_t)B * Tb * sizeof(int32_t));
    for (int k = 0, r = 0; k < n; k++) {
        const serve_tensors *in = &jobs[k]->in;
        for (int i = 0; i < in->rows; i++, r++) {
            if (r < r0 || r >= r0 + nrows) continue;
            size_t o = (size_t)(r - r0) * Tb, s = (size_t)i * in->T;
            memcpy(bt->input_ids + o, in->ids + s, (size_t)in->T * sizeof(int32_t));
            memcpy(bt->token_type_ids + o, in->types + s, (size_t)in->T * sizeof(int32_t));
            memcpy(bt->attention_mask + o, in->mask + s, (size_t)in->T * sizeof(int32_t));
        }
    }
    for (int r = nrows; r < B; r++) bt->attention_mask[(size_t)r * Tb] = 1;
}

/* Output `name` of the run ([B, C] or [B, Tb]) holding rows [r0, r0 + nrows) of the jobs into
 * each job's out[k] (made on its first rows): its rows, C or its T columns. */
static ts_status take_output(ts_program *p, serve_model *m, const char *name, int k, serve_job **jobs, int n, int r0,
                             int nrows) {
    ts_tensor *t = NULL;
    ts_status st = ts_program_fetch(p, name, &t);
    if (st != TS_OK) return st;
    const float *v = ts_tensor_data(t);
    int width = (int)ts_tensor_shape(t)[1];
    for (int q = 0, r = 0; q < n && st == TS_OK; r += jobs[q++]->in.rows) {
        serve_job *j = jobs[q];
        if (r + j->in.rows <= r0 || r >= r0 + nrows) continue;
        int cols = m->sig.qa ? j->in.T : width;
        j->ncols = cols;
        if (!j->out[k] && !(j->out[k] = malloc((size_t)j->in.rows * cols * sizeof(float)))) {
            st = ts_set_error(TS_ERR_NOMEM, "out of memory");
            break;
        }
        for (int i = 0; i < j->in.rows; i++)
            if (r + i >= r0 && r + i < r0 + nrows)
                memcpy(j->out[k] + (size_t)i * cols, v + (size_t)(r + i - r0) * width, (size_t)cols * sizeof(float));
    }
    ts_tensor_free(t);
    return st;
}

/* The batch size of the first run for `rows` rows of bucket b: the smallest that holds them,
 * unless running them in parts is cheaper by the programs' timed costs by a fifth or more (a
 * batch of 9 of a large model runs as 8 + 1 where 16 rows cost nearly twice 9). */
static int first_part(const serve_model *m, int b, int rows) {
    double best[rows + 1];
    int pick[rows + 1];
    best[0] = 0, pick[0] = 0;
    for (int r = 1; r <= rows; r++) {
        best[r] = -1;
        for (int k = 0; k < m->nbatches; k++) {
            double c = m->cost[b][k] + best[r > m->batch[k] ? r - m->batch[k] : 0];
            if (best[r] < 0 || c < best[r]) best[r] = c, pick[r] = k;
        }
    }
    int whole = batch_for(m, rows);
    return best[rows] < 0.8 * m->cost[b][whole] ? pick[rows] : whole;
}

/* Run rows [r0, r0 + nrows) of the jobs through program (b, k), into the jobs' outputs. */
static ts_status run_part(serve_model *m, int b, int k, serve_job **jobs, int n, int r0, int nrows) {
    ts_program *p = m->prog[b][k];
    fill(m, b, k, jobs, n, r0, nrows);
    ts_status st = ts_batch_buf_feed(&m->bb[b][k], p, 0);
    if (st == TS_OK) st = ts_program_run(p);
    if (st == TS_OK && m->sig.qa) {
        st = take_output(p, m, "start_logits", 0, jobs, n, r0, nrows);
        if (st == TS_OK) st = take_output(p, m, "end_logits", 1, jobs, n, r0, nrows);
    } else if (st == TS_OK) {
        st = take_output(p, m, "logits", 0, jobs, n, r0, nrows);
    }
    return st;
}

/* One device is driven from one thread at a time (tessera.h): the models' batchers take turns. */
static pthread_mutex_t run_lock = PTHREAD_MUTEX_INITIALIZER;

static int run_locked(serve_model *m, serve_job **jobs, int n, int *ran);

int serve_model_run(serve_model *m, serve_job **jobs, int n, int *ran) {
    pthread_mutex_lock(&run_lock);
    *ran = 1;
    int rows = run_locked(m, jobs, n, ran);
    pthread_mutex_unlock(&run_lock);
    return rows;
}

static int run_locked(serve_model *m, serve_job **jobs, int n, int *ran) {
    if (m->onnx) return serve_onnx_run(m, jobs, n, ran);
    if (m->ocr) {
        if (ts_ocr_run(m->ocr, jobs[0]->image, &jobs[0]->lines, &jobs[0]->nlines) != TS_OK) {
            jobs[0]->code = 500;
            snprintf(jobs[0]->err, sizeof jobs[0]->err, "reading the image: %s", ts_last_error());
        }
        return 1;
    }
    if (jobs[0]->squad) return run_squad(m, jobs[0], ran);
    int T = 1, rows = 0;
    for (int k = 0; k < n; k++) {
        if (jobs[k]->in.T > T) T = jobs[k]->in.T;
        rows += jobs[k]->in.rows;
    }
    int b = 0;
    while (m->bucket[b] < T) b++;
    ts_status st = TS_OK;
    *ran = 0;
    for (int r0 = 0; r0 < rows && st == TS_OK;) { /* in parts, the cheapest way (first_part) */
        int k = first_part(m, b, rows - r0), part = rows - r0 < m->batch[k] ? rows - r0 : m->batch[k];
        st = run_part(m, b, k, jobs, n, r0, part);
        *ran += m->batch[k], r0 += part;
    }
    for (int k = 0; k < n && st != TS_OK; k++) {
        jobs[k]->code = 500;
        snprintf(jobs[k]->err, sizeof jobs[k]->err, "running the model: %s", ts_last_error());
    }
    return rows;
}
