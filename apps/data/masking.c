/*
 * masking.c — BERT's masked-LM corruption of one sequence (Google's create_masked_lm_predictions,
 * drawn afresh each time a sequence is served: dynamic masking), and the masked-LM accuracy of
 * model outputs.
 *
 * Candidates are every token except [PAD] [CLS] [SEP] [MASK]; with whole-word masking a
 * candidate is a word: a token with the "##" pieces that follow it. The candidates are shuffled
 * and taken in order while they fit into round(prob * maskable tokens) (at least 1, at most
 * max_predictions); each chosen token independently becomes [MASK] (80%), a random token (10%,
 * drawn from the vocabulary less its special tokens) or stays itself (10%).
 */
#include "data/data.h"

#include <math.h>

enum {
    KIND_NOMASK = 1,   /* [PAD] [CLS] [SEP] [MASK]: never chosen */
    KIND_SPECIAL = 2,  /* the five special tokens: never a random replacement */
    KIND_CONT = 4,     /* a "##" piece */
};

ts_status ts_masker_init(ts_masker *m, const ts_tokenizer *tok, double prob, int max_predictions,
                         int whole_word) {
    memset(m, 0, sizeof *m);
    int32_t v = ts_tokenizer_vocab_size(tok);
    m->prob = prob;
    m->max_predictions = max_predictions;
    m->whole_word = whole_word;
    m->vocab = v;
    m->mask_id = ts_token_to_id(tok, "[MASK]");
    if (m->mask_id < 0) return ts_set_error(TS_ERR_ARG, "masking needs a [MASK] token, the vocabulary has none");
    m->kind = calloc((size_t)v, 1);
    m->random_ids = malloc((size_t)v * sizeof *m->random_ids);
    if (!m->kind || !m->random_ids) {
        ts_masker_free(m);
        return ts_set_error(TS_ERR_NOMEM, "masking: out of memory");
    }
    static const char *const specials[] = {"[PAD]", "[CLS]", "[SEP]", "[MASK]", "[UNK]"};
    for (int k = 0; k < 5; k++) {
        int32_t id = ts_token_to_id(tok, specials[k]);
        if (id >= 0) m->kind[id] |= KIND_SPECIAL | (k < 4 ? KIND_NOMASK : 0);
    }
    for (int32_t id = 0; id < v; id++) {
        const char *t = ts_id_to_token(tok, id);
        if (t && strncmp(t, "##", 2) == 0) m->kind[id] |= KIND_CONT;
        if (!(m->kind[id] & KIND_SPECIAL)) m->random_ids[m->nrandom++] = id;
    }
    if (m->nrandom == 0) {
        ts_masker_free(m);
        return ts_set_error(TS_ERR_ARG, "masking: the vocabulary has only special tokens");
    }
    return TS_OK;
}

void ts_masker_free(ts_masker *m) {
    free(m->kind);
    free(m->random_ids);
    m->kind = NULL;
    m->random_ids = NULL;
}

/* [UNK] is a special token of the tokenizer but a word like any other for masking. */
static int maskable(const ts_masker *m, int32_t id) {
    return id >= 0 && id < m->vocab && !(m->kind[id] & KIND_NOMASK);
}

int ts_masker_apply(const ts_masker *m, ts_drng *rng, int32_t *ids, int32_t *labels, int n,
                    int32_t *scratch) {
    int32_t *gstart = scratch, *glen = scratch + n, *order = scratch + 2 * n;
    int ng = 0, ncand = 0;
    for (int i = 0; i < n; i++) {
        labels[i] = TS_IGNORE_INDEX;
        if (!maskable(m, ids[i])) continue;
        ncand++;
        if (m->whole_word && ng > 0 && (m->kind[ids[i]] & KIND_CONT) && gstart[ng - 1] + glen[ng - 1] == i) {
            glen[ng - 1]++;
            continue;
        }
        gstart[ng] = i;
        glen[ng] = 1;
        ng++;
    }
    if (ncand == 0) return 0;
    long want = lround(m->prob * ncand);
    if (want < 1) want = 1;
    if (m->max_predictions > 0 && want > m->max_predictions) want = m->max_predictions;

    for (int g = 0; g < ng; g++) order[g] = g;
    for (int g = ng - 1; g > 0; g--) {
        int j = (int)ts_drng_below(rng, (uint64_t)g + 1), t = order[g];
        order[g] = order[j];
        order[j] = t;
    }
    int chosen = 0;
    for (int k = 0; k < ng && chosen < want; k++) {
        int g = order[k];
        if (chosen + glen[g] > want) continue;
        for (int i = gstart[g]; i < gstart[g] + glen[g]; i++) {
            labels[i] = ids[i];
            double u = ts_drng_unif(rng);
            if (u < 0.8) ids[i] = m->mask_id;
            else if (u >= 0.9) ids[i] = m->random_ids[ts_drng_below(rng, (uint64_t)m->nrandom)];
            chosen++;
        }
    }
    return chosen;
}

ts_status ts_mlm_accuracy(const ts_tensor *logits, const int32_t *labels, int64_t *correct, int64_t *total) {
    if (!logits || !labels || !correct || !total)
        return ts_set_error(TS_ERR_ARG, "ts_mlm_accuracy: NULL logits, labels, correct or total");
    int nd = ts_tensor_ndim(logits);
    ts_dtype dt = ts_tensor_dtype(logits);
    const int64_t *shape = ts_tensor_shape(logits);
    const void *data = ts_tensor_data((ts_tensor *)logits);
    if (nd < 1 || (dt != TS_F32 && dt != TS_BF16))
        return ts_set_error(TS_ERR_DTYPE, "ts_mlm_accuracy: logits must be f32 or bf16 [..., V], got %s of rank %d",
                            ts_dtype_name(dt), nd);
    int64_t v = shape[nd - 1];
    if (v <= 0) return ts_set_error(TS_ERR_SHAPE, "ts_mlm_accuracy: logits have an empty last axis");
    int64_t rows = ts_numel(nd - 1, shape);
    int64_t c = 0, t = 0;
    for (int64_t r = 0; r < rows; r++) {
        int32_t y = labels[r];
        if (y == TS_IGNORE_INDEX) continue;
        if (y < 0 || y >= v)
            return ts_set_error(TS_ERR_RUNTIME, "ts_mlm_accuracy: label %d at position %lld is outside [0, %lld)",
                                (int)y, (long long)r, (long long)v);
        int64_t best = 0;
        if (dt == TS_F32) {
            const float *x = (const float *)data + r * v;
            for (int64_t k = 1; k < v; k++)
                if (x[k] > x[best]) best = k;
        } else {
            const uint16_t *x = (const uint16_t *)data + r * v;
            float bv = ts_bf16_f32(x[0]);
            for (int64_t k = 1; k < v; k++) {
                float xv = ts_bf16_f32(x[k]);
                if (xv > bv) bv = xv, best = k;
            }
        }
        t++;
        c += best == y;
    }
    *correct += c;
    *total += t;
    return TS_OK;
}
