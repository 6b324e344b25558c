/*
 * bow.c — a bag-of-words logistic-regression text classifier (tessera_tasks.h), the baseline
 * `tessera bow` prints beside fine-tuned BERT models. A text's WordPiece ids (the whole text, no
 * truncation; [PAD] [CLS] [SEP] [MASK] dropped, [UNK] a feature like any token) give its counts
 * c_v; its features are x_v = log(1 + c_v) for its first max_tokens distinct tokens. The model:
 * logits = W^T x + b with W [V, C] and b [C] (zero-initialised), the mean softmax cross-entropy
 * minimised by AdamW at a constant learning rate. In the graph a text is its distinct ids [B, L]
 * and their values x [B, L] (0 on padding), so W^T x is gather(W, ids) [B, L, C] times
 * x[..., None], summed over L.
 */
#include "common/app.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The features of a file's rows: row i holds ids[off[i] .. off[i + 1]) with values val[...]. */
struct ts_bow_features {
    int64_t n, *off;
    int32_t *ids;
    float *val;
    int longest; /* most distinct tokens of a row */
};

void ts_bow_features_free(ts_bow_features *f) {
    if (!f) return;
    free(f->off), free(f->ids), free(f->val);
    free(f);
}

int ts_bow_longest(const ts_bow_features *f) { return f ? f->longest : 0; }

ts_bow_features *ts_bow_featurize(const ts_text_dataset *d, const ts_tokenizer *tok, int max_tokens) {
    ts_bow_features *f = calloc(1, sizeof *f);
    if (!f) return ts_set_error(TS_ERR_NOMEM, "out of memory"), NULL;
    int V = ts_tokenizer_vocab_size(tok), cap = 1024, rc = 1;
    if (max_tokens > V) max_tokens = V; /* no text has more distinct tokens */
    int32_t special[4] = {ts_token_to_id(tok, "[PAD]"), ts_token_to_id(tok, "[CLS]"), ts_token_to_id(tok, "[SEP]"),
                          ts_token_to_id(tok, "[MASK]")};
    int32_t *buf = malloc((size_t)cap * sizeof *buf), *slot = malloc((size_t)V * sizeof *slot);
    int *count = malloc((size_t)max_tokens * sizeof *count);
    int64_t room = 1 << 16, used = 0;
    f->n = ts_text_dataset_size(d);
    f->off = malloc((size_t)(f->n + 1) * sizeof *f->off);
    f->ids = malloc((size_t)room * sizeof *f->ids);
    f->val = malloc((size_t)room * sizeof *f->val);
    if (!buf || !slot || !count || !f->off || !f->ids || !f->val) goto oom;
    for (int v = 0; v < V; v++) slot[v] = -1;
    for (int s = 0; s < 4; s++)
        if (special[s] >= 0) slot[special[s]] = -2; /* never a feature */
    for (int64_t i = 0; i < f->n; i++) {
        const char *text;
        int n = 0;
        ts_text_dataset_get(d, i, &text, NULL, NULL);
        ts_status st = ts_tokenize(tok, text, buf, cap, &n);
        if (st == TS_ERR_SHAPE) { /* a longer text than any before: grow the buffer */
            int32_t *b = realloc(buf, (size_t)n * sizeof *b);
            if (!b) goto oom;
            buf = b, cap = n;
            st = ts_tokenize(tok, text, buf, cap, &n);
        }
        if (st != TS_OK) {
            ts_set_error(st, "tokenizing row %lld: %s", (long long)i + 1, ts_last_error());
            goto done;
        }
        int64_t need = used + (n < max_tokens ? n : max_tokens);
        if (need > room) {
            room = 2 * room > need ? 2 * room : need;
            int32_t *ni = realloc(f->ids, (size_t)room * sizeof *ni);
            if (ni) f->ids = ni;
            float *nv = realloc(f->val, (size_t)room * sizeof *nv);
            if (nv) f->val = nv;
            if (!ni || !nv) goto oom;
        }
        int32_t *ids = f->ids + used;
        int nd = 0;
        for (int k = 0; k < n; k++) {
            int32_t v = buf[k];
            if (v < 0 || v >= V || slot[v] == -2) continue;
            if (slot[v] >= 0) count[slot[v]]++;
            else if (nd < max_tokens) slot[v] = nd, ids[nd] = v, count[nd++] = 1;
        }
        for (int k = 0; k < nd; k++) {
            f->val[used + k] = log1pf((float)count[k]);
            slot[ids[k]] = -1;
        }
        f->off[i] = used;
        used += nd;
        if (nd > f->longest) f->longest = nd;
    }
    f->off[f->n] = used;
    rc = 0;
    goto done;
oom:
    ts_set_error(TS_ERR_NOMEM, "out of memory");
done:
    free(buf), free(slot), free(count);
    if (rc) ts_bow_features_free(f), f = NULL;
    return f;
}

void ts_bow_fill(const ts_bow_features *f, const ts_text_dataset *d, const int64_t *rows, int n, int B, int L, int32_t *ids,
                 float *x, int32_t *y) {
    memset(ids, 0, (size_t)B * (size_t)L * sizeof *ids);
    memset(x, 0, (size_t)B * (size_t)L * sizeof *x);
    for (int r = 0; r < B; r++) {
        y[r] = TS_IGNORE_INDEX;
        if (r >= n) continue;
        int64_t i = rows[r], a = f->off[i], len = f->off[i + 1] - a;
        memcpy(ids + (size_t)r * L, f->ids + a, (size_t)len * sizeof *ids);
        memcpy(x + (size_t)r * L, f->val + a, (size_t)len * sizeof *x);
        ts_text_dataset_get(d, i, NULL, NULL, &y[r]);
    }
}

ts_status ts_bow_programs(int V, int C, int B, int L, float lr, float weight_decay, int threads, ts_program **train,
                          ts_program **infer) {
    *train = *infer = NULL;
    ts_graph *g = ts_graph_new();
    if (!g) return ts_set_error(TS_ERR_NOMEM, "out of memory");
    ts_value ids = ts_input(g, "ids", TS_I32, 2, (int64_t[]){B, L});
    ts_value x = ts_input(g, "x", TS_F32, 2, (int64_t[]){B, L});
    ts_value y = ts_input(g, "labels", TS_I32, 1, (int64_t[]){B});
    ts_value W = ts_param(g, "W", TS_F32, 2, (int64_t[]){V, C}, ts_init_zeros());
    ts_value b = ts_param(g, "b", TS_F32, 1, (int64_t[]){C}, ts_init_zeros());
    ts_value rows = ts_gather(g, W, ids); /* [B, L, C] */
    ts_value wx = ts_reduce_sum(g, ts_mul(g, rows, ts_reshape(g, x, 3, (int64_t[]){B, L, 1})), 1, (int[]){1}, 0);
    ts_value logits = ts_name(g, ts_add(g, wx, b), "logits");
    ts_value loss = ts_name(g, ts_cross_entropy(g, logits, y, TS_IGNORE_INDEX), "loss");
    ts_status st = ts_graph_status(g);
    if (st == TS_OK) st = ts_backward(g, loss);
    if (st == TS_OK) st = ts_adamw(g, ts_scalar(g, lr), 0.9f, 0.999f, 1e-8f, weight_decay);
    if (st == TS_OK) {
        *train = ts_compile(g, &(ts_compile_opts){.num_threads = threads, .nfetch = 1,
                                                  .fetches = (const char *[]){"loss"}});
        *infer = *train ? ts_compile(g, &(ts_compile_opts){.num_threads = threads, .nfetch = 1,
                                                           .fetches = (const char *[]){"logits"}, .inference = 1})
                        : NULL;
    }
    ts_graph_free(g);
    if (st == TS_OK && *train && *infer) return TS_OK;
    ts_program_free(*train), ts_program_free(*infer);
    *train = *infer = NULL;
    return ts_last_status() ? ts_last_status() : TS_ERR_RUNTIME;
}

