/*
 * bert.c — BERT as Hugging Face transformers builds it: config.json reading, then the graph,
 * top to bottom: embeddings, attention, FFN, layer, pooler, heads. Parameter names are
 * transformers' state-dict names, so checkpoints load by name (tessera.h, "BERT").
 *
 * Shapes: B batch, T sequence, C hidden, H heads of D = C / H, F intermediate, V vocabulary.
 *
 *   x      = dropout(LN(word[input_ids] + position[0:T] + token_type[token_type_ids]))  [B, T, C]
 *   mask   = (1 - attention_mask) * -10000                                           [B, 1, 1, T]
 *   per layer (post-LN):
 *     q, k, v = x Wq^T + bq, ...              [B, T, C] -> [B, H, T, D]
 *     p       = dropout(softmax(q k^T / sqrt(D) + mask))                            [B, H, T, T]
 *     a       = p v                           [B, H, T, D] -> [B, T, C]
 *     h       = LN(dropout(a Wo^T + bo) + x)
 *     x       = LN(dropout(act(h W1^T + b1) W2^T + b2) + h)                          W1 [F, C]
 *   pooler = tanh(x[:, 0] Wp^T + bp)                                                      [B, C]
 * Packed rows (max_sequences_per_pack S > 1; tessera_bert.h): positions per sequence, gathered
 * (position[position_ids]); mask[b, i, j] = 0 if seq[b, i] == seq[b, j] > 0 else -10000
 * [B, 1, T, T], seq the attention_mask's sequence indices; pooler on x[b, cls_positions[b, s]]
 * [B S, C].
 *   MLM    = LN(act(x Wt^T + bt)) E^T + bias, E the word embeddings (tied)            [B, T, V]
 *
 * Every product above (the Linears, q k^T, p v, the MLM decoder) goes through bert_matmul, which
 * with compute_dtype bf16 or f16 multiplies in that dtype (autocast style); everything else
 * stays f32.
 */
#include "models/bert.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json_type.h"

/* ================================================================== configuration */

/* Every field of this library's ts_bert_config at its default. */
static void config_defaults(ts_bert_config *c) {
    memset(c, 0, sizeof *c);
    c->struct_size = sizeof *c;
    c->vocab_size = 30522;
    c->hidden_size = 768;
    c->num_hidden_layers = 12;
    c->num_attention_heads = 12;
    c->intermediate_size = 3072;
    c->max_position_embeddings = 512;
    c->type_vocab_size = 2;
    c->hidden_act = TS_BERT_GELU;
    c->hidden_dropout_prob = 0.1f;
    c->attention_probs_dropout_prob = 0.1f;
    c->classifier_dropout = -1.f;
    c->layer_norm_eps = 1e-12f;
    c->initializer_range = 0.02f;
    c->num_labels = 2;
    c->head = TS_BERT_MODEL;
    c->attention_mask_dtype = TS_I32;
    c->compute_dtype = TS_F32;
}

void ts_bert_config_default(ts_bert_config *cfg) {
    if (!cfg) return;
    ts_bert_config c;
    config_defaults(&c);
    cfg->struct_size = 0; /* a struct not set up yet: its base layout (tessera.h) */
    TS_STRUCT_WRITE(cfg, &c, ts_bert_config, "ts_bert_config_default");
}

static const struct {
    const char *name;
    ts_bert_act act;
} ACTS[] = {
    {"gelu", TS_BERT_GELU},           {"gelu_python", TS_BERT_GELU},
    {"gelu_new", TS_BERT_GELU_TANH},  {"gelu_pytorch_tanh", TS_BERT_GELU_TANH},
    {"gelu_fast", TS_BERT_GELU_TANH}, {"relu", TS_BERT_RELU},
};

static const struct {
    const char *name;
    ts_bert_head head;
} HEADS[] = {
    {"BertModel", TS_BERT_MODEL},
    {"BertForPreTraining", TS_BERT_PRETRAINING},
    {"BertForMaskedLM", TS_BERT_MASKED_LM},
    {"BertForSequenceClassification", TS_BERT_SEQ_CLASSIFICATION},
    {"BertForQuestionAnswering", TS_BERT_QUESTION_ANSWERING},
};

const char *bert_config_problem(const ts_bert_config *c, char *buf, size_t cap) {
    /* the bounds: far above any real BERT (bert-large: V 30522, C 1024, 24 layers, FFN 4096, 512
     * positions; multilingual vocabularies ~250k), far below what would overflow a size or take
     * minutes to build before the memory check could refuse it */
    const struct {
        const char *name;
        int v, max;
    } sizes[] = {
        {"vocab_size", c->vocab_size, TS_BERT_MAX_VOCAB},
        {"hidden_size", c->hidden_size, TS_BERT_MAX_HIDDEN},
        {"num_hidden_layers", c->num_hidden_layers, TS_BERT_MAX_LAYERS},
        {"num_attention_heads", c->num_attention_heads, TS_BERT_MAX_HIDDEN},
        {"intermediate_size", c->intermediate_size, TS_BERT_MAX_INTERMEDIATE},
        {"max_position_embeddings", c->max_position_embeddings, TS_BERT_MAX_POSITIONS},
        {"type_vocab_size", c->type_vocab_size, TS_BERT_MAX_TYPES},
        {"num_labels", c->num_labels, TS_BERT_MAX_LABELS},
    };
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        if (sizes[i].v <= 0)
            return snprintf(buf, cap, "field \"%s\" must be positive, got %d", sizes[i].name, sizes[i].v),
                   buf;
        if (sizes[i].v > sizes[i].max)
            return snprintf(buf, cap, "field \"%s\" is %d, above tessera's bound of %d for it", sizes[i].name,
                            sizes[i].v, sizes[i].max),
                   buf;
    }
    if (c->hidden_size % c->num_attention_heads != 0)
        return snprintf(buf, cap, "field \"hidden_size\" %d is not divisible by \"num_attention_heads\" %d",
                        c->hidden_size, c->num_attention_heads), buf;
    const struct {
        const char *name;
        float p;
    } probs[] = {
        {"hidden_dropout_prob", c->hidden_dropout_prob},
        {"attention_probs_dropout_prob", c->attention_probs_dropout_prob},
    };
    for (size_t i = 0; i < 2; i++)
        if (!(probs[i].p >= 0.f && probs[i].p < 1.f))
            return snprintf(buf, cap, "field \"%s\" must be in [0, 1), got %g", probs[i].name,
                            (double)probs[i].p), buf;
    if (!(c->classifier_dropout < 1.f)) /* < 0 means "use hidden_dropout_prob" */
        return snprintf(buf, cap, "field \"classifier_dropout\" must be below 1, got %g",
                        (double)c->classifier_dropout), buf;
    if (!(c->layer_norm_eps > 0.f) || isinf(c->layer_norm_eps))
        return snprintf(buf, cap, "field \"layer_norm_eps\" must be positive, got %g",
                        (double)c->layer_norm_eps), buf;
    if (!(c->initializer_range >= 0.f) || isinf(c->initializer_range))
        return snprintf(buf, cap, "field \"initializer_range\" must be >= 0, got %g",
                        (double)c->initializer_range), buf;
    if ((unsigned)c->hidden_act > TS_BERT_RELU)
        return snprintf(buf, cap, "field \"hidden_act\" has no activation %d", (int)c->hidden_act), buf;
    if (c->attention_mask_dtype != TS_I32 && c->attention_mask_dtype != TS_F32)
        return snprintf(buf, cap, "attention_mask_dtype must be i32 or f32, got %s",
                        ts_dtype_name(c->attention_mask_dtype)), buf;
    if (c->compute_dtype != TS_F32 && c->compute_dtype != TS_BF16 && c->compute_dtype != TS_F16)
        return snprintf(buf, cap, "compute_dtype must be f32, bf16 or f16, got %s",
                        ts_dtype_name(c->compute_dtype)), buf;
    return NULL;
}

ts_status ts_bert_config_check(const ts_bert_config *cfg) {
    char why[256];
    if (!cfg) return ts_set_error(TS_ERR_ARG, "ts_bert_config_check: cfg is NULL");
    ts_bert_config c;
    if (TS_STRUCT_READ(&c, cfg, ts_bert_config, "ts_bert_config_check")) return TS_ERR_ARG;
    if (bert_config_problem(&c, why, sizeof why)) return ts_set_error(TS_ERR_ARG, "%s", why);
    return TS_OK;
}

/* config.json reading. Each reader returns TS_OK, leaves *out alone when the key is absent and
 * not required, and otherwise records an error naming the file and the key. */

#define CFG_ERR(code, ...) ts_set_error(code, "ts_bert_config_load: " __VA_ARGS__)

static ts_status read_int(const cJSON *root, const char *path, const char *key, int required, int *out) {
    const cJSON *j = cJSON_GetObjectItemCaseSensitive(root, key);
    if (!j) return required ? CFG_ERR(TS_ERR_ARG, "%s: field \"%s\" is missing", path, key) : TS_OK;
    if (!cJSON_IsNumber(j))
        return CFG_ERR(TS_ERR_ARG, "%s: field \"%s\" must be an integer, got %s", path, key, ts_json_type(j));
    double v = j->valuedouble;
    if (v != floor(v) || v < -2147483647.0 || v > 2147483647.0)
        return CFG_ERR(TS_ERR_ARG, "%s: field \"%s\" must be an integer, got %g", path, key, v);
    if (v <= 0) return CFG_ERR(TS_ERR_ARG, "%s: field \"%s\" must be positive, got %g", path, key, v);
    *out = (int)v;
    return TS_OK;
}

/* A number in [lo, hi); null_value, when not NULL, is what a JSON null gives. */
static ts_status read_float(const cJSON *root, const char *path, const char *key, double lo, double hi,
                            const float *null_value, float *out) {
    const cJSON *j = cJSON_GetObjectItemCaseSensitive(root, key);
    if (!j) return TS_OK;
    if (cJSON_IsNull(j) && null_value) return *out = *null_value, TS_OK;
    if (!cJSON_IsNumber(j))
        return CFG_ERR(TS_ERR_ARG, "%s: field \"%s\" must be a number%s, got %s", path, key,
                       null_value ? " or null" : "", ts_json_type(j));
    double v = j->valuedouble;
    if (!(v >= lo && v < hi))
        return CFG_ERR(TS_ERR_ARG, "%s: field \"%s\" must be in [%g, %g), got %g", path, key, lo, hi, v);
    *out = (float)v;
    return TS_OK;
}

static ts_status read_string(const cJSON *root, const char *path, const char *key, const char **out) {
    const cJSON *j = cJSON_GetObjectItemCaseSensitive(root, key);
    if (!j) return TS_OK;
    if (!cJSON_IsString(j))
        return CFG_ERR(TS_ERR_ARG, "%s: field \"%s\" must be a string, got %s", path, key, ts_json_type(j));
    *out = j->valuestring;
    return TS_OK;
}

/* A key that must be false / absent for this implementation (decoders, cross-attention). */
static ts_status read_false(const cJSON *root, const char *path, const char *key) {
    const cJSON *j = cJSON_GetObjectItemCaseSensitive(root, key);
    if (!j || cJSON_IsFalse(j) || cJSON_IsNull(j)) return TS_OK;
    if (!cJSON_IsBool(j))
        return CFG_ERR(TS_ERR_ARG, "%s: field \"%s\" must be a boolean, got %s", path, key, ts_json_type(j));
    return CFG_ERR(TS_ERR_UNSUPPORTED, "%s: field \"%s\" is true; only the BERT encoder is supported", path,
                   key);
}

/* The whole file as a NUL-terminated string in *text (free it), its length in *n. */
static ts_status read_text(const char *path, char **text, size_t *n) {
    *text = ts_read_file(path, n);
    return *text ? TS_OK : CFG_ERR(ts_last_status(), "%s", ts_last_error());
}

static ts_status parse_config(const cJSON *root, const char *path, ts_bert_config *c) {
    ts_status s = TS_OK;
    if (!cJSON_IsObject(root))
        return CFG_ERR(TS_ERR_IO, "%s: expected a JSON object, got %s", path, ts_json_type(root));
    static const char *const required[] = {"vocab_size", "hidden_size", "num_hidden_layers",
                                           "num_attention_heads", "intermediate_size",
                                           "max_position_embeddings", "type_vocab_size"};
    int *const dst[] = {&c->vocab_size, &c->hidden_size, &c->num_hidden_layers, &c->num_attention_heads,
                        &c->intermediate_size, &c->max_position_embeddings, &c->type_vocab_size};
    for (int i = 0; i < 7; i++)
        if ((s = read_int(root, path, required[i], 1, dst[i]))) return s;

    const char *act = NULL;
    if ((s = read_string(root, path, "hidden_act", &act))) return s;
    if (act) {
        size_t i = 0;
        while (i < sizeof ACTS / sizeof *ACTS && strcmp(ACTS[i].name, act) != 0) i++;
        if (i == sizeof ACTS / sizeof *ACTS)
            return CFG_ERR(TS_ERR_UNSUPPORTED, "%s: field \"hidden_act\" is \"%s\"; supported: gelu, "
                           "gelu_python, gelu_new, gelu_pytorch_tanh, gelu_fast, relu", path, act);
        c->hidden_act = ACTS[i].act;
    }
    const float unset = -1.f;
    if ((s = read_float(root, path, "hidden_dropout_prob", 0, 1, NULL, &c->hidden_dropout_prob)) ||
        (s = read_float(root, path, "attention_probs_dropout_prob", 0, 1, NULL,
                        &c->attention_probs_dropout_prob)) ||
        (s = read_float(root, path, "classifier_dropout", 0, 1, &unset, &c->classifier_dropout)) ||
        (s = read_float(root, path, "layer_norm_eps", 0, 1, NULL, &c->layer_norm_eps)) ||
        (s = read_float(root, path, "initializer_range", 0, HUGE_VAL, NULL, &c->initializer_range)))
        return s;

    const char *pos = NULL;
    if ((s = read_string(root, path, "position_embedding_type", &pos))) return s;
    if (pos && strcmp(pos, "absolute") != 0)
        return CFG_ERR(TS_ERR_UNSUPPORTED, "%s: field \"position_embedding_type\" is \"%s\"; only "
                       "\"absolute\" is supported", path, pos);
    const cJSON *tie = cJSON_GetObjectItemCaseSensitive(root, "tie_word_embeddings");
    if (tie && !cJSON_IsBool(tie))
        return CFG_ERR(TS_ERR_ARG, "%s: field \"tie_word_embeddings\" must be a boolean, got %s", path, ts_json_type(tie));
    c->untie_word_embeddings = tie && cJSON_IsFalse(tie);
    if ((s = read_false(root, path, "is_decoder")) || (s = read_false(root, path, "add_cross_attention")))
        return s;

    const cJSON *arch = cJSON_GetObjectItemCaseSensitive(root, "architectures");
    if (arch && !cJSON_IsNull(arch)) {
        if (!cJSON_IsArray(arch))
            return CFG_ERR(TS_ERR_ARG, "%s: field \"architectures\" must be an array of strings, got %s",
                           path, ts_json_type(arch));
        const cJSON *a0 = cJSON_GetArrayItem(arch, 0);
        if (a0 && !cJSON_IsString(a0))
            return CFG_ERR(TS_ERR_ARG, "%s: field \"architectures\" must be an array of strings, has %s",
                           path, ts_json_type(a0));
        if (a0) {
            snprintf(c->architecture, sizeof c->architecture, "%s", a0->valuestring);
            for (size_t i = 0; i < sizeof HEADS / sizeof *HEADS; i++)
                if (strcmp(HEADS[i].name, a0->valuestring) == 0) c->head = HEADS[i].head;
        }
    }

    /* num_labels: id2label's entry count when present (what transformers saves), else
     * num_labels, else 2; when both are present they must agree. */
    int from_key = 0;
    if ((s = read_int(root, path, "num_labels", 0, &from_key))) return s;
    const cJSON *id2label = cJSON_GetObjectItemCaseSensitive(root, "id2label");
    if (id2label && !cJSON_IsNull(id2label)) {
        if (!cJSON_IsObject(id2label))
            return CFG_ERR(TS_ERR_ARG, "%s: field \"id2label\" must be an object, got %s", path,
                           ts_json_type(id2label));
        int n = cJSON_GetArraySize(id2label);
        if (n <= 0) return CFG_ERR(TS_ERR_ARG, "%s: field \"id2label\" is empty", path);
        if (from_key && from_key != n)
            return CFG_ERR(TS_ERR_ARG, "%s: field \"num_labels\" is %d but \"id2label\" has %d entries",
                           path, from_key, n);
        c->num_labels = n;
    } else if (from_key) {
        c->num_labels = from_key;
    }

    char why[256];
    if (bert_config_problem(c, why, sizeof why)) return CFG_ERR(TS_ERR_ARG, "%s: %s", path, why);
    return TS_OK;
}

ts_status ts_bert_config_load(const char *path, ts_bert_config *cfg) {
    if (!path || !cfg) return CFG_ERR(TS_ERR_ARG, "%s is NULL", path ? "cfg" : "path");
    size_t n = 0;
    char *text = NULL;
    ts_status s = read_text(path, &text, &n);
    if (s) return s;
    cJSON *root = cJSON_ParseWithLength(text, n);
    if (!root) {
        const char *at = cJSON_GetErrorPtr();
        if (!at || at < text || at > text + n) at = text + n;
        long line = 1, col = 1;
        for (const char *q = text; q < at; q++) col = *q == '\n' ? (line++, 1) : col + 1;
        s = CFG_ERR(TS_ERR_IO, "%s: invalid JSON at line %ld, column %ld (byte %ld)", path, line, col,
                    (long)(at - text));
    } else {
        ts_bert_config c;
        config_defaults(&c);
        s = parse_config(root, path, &c);
        if (s == TS_OK) s = TS_STRUCT_WRITE(cfg, &c, ts_bert_config, "ts_bert_config_load");
    }
    cJSON_Delete(root);
    free(text);
    return s;
}

/* ================================================================== building blocks */

/* prefix + suffix into buf[256] (a parameter name's stem): returns buf. */
static const char *join(char *buf, const char *prefix, const char *suffix) {
    snprintf(buf, 256, "%s%s", prefix, suffix);
    return buf;
}

/* dropout(x), or x itself when p == 0 (so an inference-only config adds no nodes). */
static ts_value dropout(ts_graph *g, ts_value x, float p) { return p > 0.f ? ts_dropout(g, x, p) : x; }

/* a b in compute dtype dt: f32 as is; bf16 or f16 as autocast does it: each operand cast to dt
 * here (a cast per use, so no 16-bit value has two consumers whose gradients would need a 16-bit
 * add), the 16-bit product (f32 accumulation), cast back to f32. */
static ts_value matmul_in(ts_graph *g, ts_dtype dt, ts_value a, ts_value b, int ta, int tb) {
    if (dt == TS_F32) return ts_matmul(g, a, b, ta, tb);
    return ts_cast(g, ts_matmul(g, ts_cast(g, a, dt), ts_cast(g, b, dt), ta, tb), TS_F32);
}

ts_value bert_matmul(ts_graph *g, const ts_bert_config *cfg, ts_value a, ts_value b, int trans_a,
                     int trans_b) {
    return matmul_in(g, cfg->compute_dtype, a, b, trans_a, trans_b);
}

static ts_value linear_in(ts_graph *g, ts_dtype dt, const char *name, ts_value x, int in, int out,
                          float std) {
    char wn[256], bn[256];
    snprintf(wn, sizeof wn, "%s.weight", name);
    snprintf(bn, sizeof bn, "%s.bias", name);
    ts_value w = ts_param(g, wn, TS_F32, 2, (int64_t[]){out, in}, ts_init_normal(std));
    ts_value b = ts_param(g, bn, TS_F32, 1, (int64_t[]){out}, ts_init_zeros());
    return ts_add(g, matmul_in(g, dt, x, w, 0, 1), b);
}

ts_value bert_linear(ts_graph *g, const char *name, ts_value x, int in, int out, float std) {
    return linear_in(g, TS_F32, name, x, in, out, std);
}

ts_value bert_dense(ts_graph *g, const ts_bert_config *cfg, const char *name, ts_value x, int in, int out) {
    return linear_in(g, cfg->compute_dtype, name, x, in, out, cfg->initializer_range);
}

ts_value bert_layer_norm(ts_graph *g, const char *name, ts_value x, int C, float eps) {
    char wn[256], bn[256];
    snprintf(wn, sizeof wn, "%s.weight", name);
    snprintf(bn, sizeof bn, "%s.bias", name);
    ts_value gamma = ts_param(g, wn, TS_F32, 1, (int64_t[]){C}, ts_init_ones());
    ts_value beta = ts_param(g, bn, TS_F32, 1, (int64_t[]){C}, ts_init_zeros());
    return ts_layer_norm(g, x, gamma, beta, eps);
}

ts_value bert_act(ts_graph *g, const ts_bert_config *cfg, ts_value x) {
    switch (cfg->hidden_act) {
    case TS_BERT_GELU_TANH: return ts_gelu(g, x, 1);
    case TS_BERT_RELU: return ts_relu(g, x);
    default: return ts_gelu(g, x, 0);
    }
}

/* ------------------------------------------------------------------ embeddings */

ts_value bert_embeddings(ts_graph *g, const ts_bert_config *cfg, ts_value input_ids,
                         ts_value token_type_ids, ts_value position_ids, int T) {
    int C = cfg->hidden_size;
    ts_init w = ts_init_normal(cfg->initializer_range);
    ts_value word = ts_param(g, "bert.embeddings.word_embeddings.weight", TS_F32, 2,
                             (int64_t[]){cfg->vocab_size, C}, w);
    ts_value pos = ts_param(g, "bert.embeddings.position_embeddings.weight", TS_F32, 2,
                            (int64_t[]){cfg->max_position_embeddings, C}, w);
    ts_value type = ts_param(g, "bert.embeddings.token_type_embeddings.weight", TS_F32, 2,
                             (int64_t[]){cfg->type_vocab_size, C}, w);
    ts_value x = ts_gather(g, word, input_ids);                /* [B, T, C] */
    if (position_ids == TS_NONE) x = ts_add(g, x, ts_slice(g, pos, 0, 0, T)); /* + [T, C]: 0 .. T-1 */
    else x = ts_add(g, x, ts_gather(g, pos, position_ids));   /* + [B, T, C]: packed, per sequence */
    x = ts_add(g, x, ts_gather(g, type, token_type_ids));      /* + [B, T, C] */
    x = bert_layer_norm(g, "bert.embeddings.LayerNorm", x, C, cfg->layer_norm_eps);
    return dropout(g, x, cfg->hidden_dropout_prob);
}

ts_value bert_extended_mask(ts_graph *g, ts_value attention_mask, int B, int T) {
    ts_value m = attention_mask;
    if (ts_value_dtype(g, m) != TS_F32) m = ts_cast(g, m, TS_F32);
    m = ts_reshape(g, m, 4, (int64_t[]){B, 1, 1, T});
    return ts_scale(g, m, 10000.f, -10000.f); /* (1 - m) * -10000 */
}

/* seq [B, T] sequence indices (1 .. S, 0 padding) -> additive mask [B, 1, T, T]:
 *   mask[b, 0, i, j] = 0 if seq[b, i] == seq[b, j] > 0, else -10000. */
ts_value bert_pack_mask(ts_graph *g, ts_value seq, int B, int T) {
    if (ts_value_dtype(g, seq) != TS_I32) seq = ts_cast(g, seq, TS_I32);
    ts_value qi = ts_reshape(g, seq, 4, (int64_t[]){B, 1, T, 1}), kj = ts_reshape(g, seq, 4, (int64_t[]){B, 1, 1, T});
    ts_tensor *zero = ts_tensor_new(TS_I32, 4, (int64_t[]){1, 1, 1, 1});
    if (zero) *(int32_t *)ts_tensor_data(zero) = 0;
    ts_value real = ts_binary(g, TS_BIN_GREATER, kj, ts_constant(g, zero)); /* key j is no padding */
    ts_tensor_free(zero);
    ts_value keep = ts_binary(g, TS_BIN_AND, ts_binary(g, TS_BIN_EQUAL, qi, kj), real); /* u8 [B, 1, T, T] */
    return ts_where(g, keep, ts_scalar(g, 0.f), ts_scalar(g, -10000.f));
}

/* ------------------------------------------------------------------ attention */

/* [B, T, C] -> [B, H, T, D] */
static ts_value split_heads(ts_graph *g, ts_value x, int B, int T, int H, int D) {
    ts_value r = ts_reshape(g, x, 4, (int64_t[]){B, T, H, D});
    return ts_transpose(g, r, (int[]){0, 2, 1, 3});
}

/* Self-attention and its output block: h = LN(dropout(Attn(x) Wo^T + bo) + x). */
static ts_value bert_attention(ts_graph *g, const ts_bert_config *cfg, const char *prefix, ts_value x,
                               ts_value mask, int B, int T) {
    int C = cfg->hidden_size, H = cfg->num_attention_heads, D = C / H;
    char n[256];
    ts_value q = bert_dense(g, cfg, join(n, prefix, "attention.self.query"), x, C, C); /* [B, T, C] */
    ts_value k = bert_dense(g, cfg, join(n, prefix, "attention.self.key"), x, C, C);
    ts_value v = bert_dense(g, cfg, join(n, prefix, "attention.self.value"), x, C, C);
    q = split_heads(g, q, B, T, H, D); /* [B, H, T, D] */
    k = split_heads(g, k, B, T, H, D);
    v = split_heads(g, v, B, T, H, D);
    ts_value scores = ts_scale(g, bert_matmul(g, cfg, q, k, 0, 1), 1.f / sqrtf((float)D), 0.f);
    /* scores [B, H, T, T] */
    ts_value probs = dropout(g, ts_softmax(g, scores, mask), cfg->attention_probs_dropout_prob);
    ts_value ctx = ts_transpose(g, bert_matmul(g, cfg, probs, v, 0, 0), (int[]){0, 2, 1, 3});
    /* ctx [B, T, H, D] */
    ctx = ts_reshape(g, ctx, 3, (int64_t[]){B, T, C});
    ts_value o = dropout(g, bert_dense(g, cfg, join(n, prefix, "attention.output.dense"), ctx, C, C),
                         cfg->hidden_dropout_prob);
    return bert_layer_norm(g, join(n, prefix, "attention.output.LayerNorm"), ts_add(g, o, x), C,
                           cfg->layer_norm_eps);
}

/* ------------------------------------------------------------------ feed-forward */

/* x = LN(dropout(act(h W1^T + b1) W2^T + b2) + h), W1 [F, C], W2 [C, F]. */
static ts_value bert_ffn(ts_graph *g, const ts_bert_config *cfg, const char *prefix, ts_value h) {
    int C = cfg->hidden_size, F = cfg->intermediate_size;
    char n[256];
    ts_value f = bert_dense(g, cfg, join(n, prefix, "intermediate.dense"), h, C, F); /* [B, T, F] */
    f = bert_act(g, cfg, f);
    f = dropout(g, bert_dense(g, cfg, join(n, prefix, "output.dense"), f, F, C), cfg->hidden_dropout_prob);
    return bert_layer_norm(g, join(n, prefix, "output.LayerNorm"), ts_add(g, f, h), C, cfg->layer_norm_eps);
}

/* ------------------------------------------------------------------ layer */

ts_value bert_layer(ts_graph *g, const ts_bert_config *cfg, int layer, ts_value x, ts_value mask,
                    int B, int T) {
    char prefix[64];
    snprintf(prefix, sizeof prefix, "bert.encoder.layer.%d.", layer);
    ts_value h = bert_attention(g, cfg, prefix, x, mask, B, T);
    return bert_ffn(g, cfg, prefix, h);
}

/* ------------------------------------------------------------------ pooler */

ts_value bert_pooler(ts_graph *g, const ts_bert_config *cfg, ts_value x, int B) {
    int C = cfg->hidden_size;
    ts_value first = ts_reshape(g, ts_slice(g, x, 1, 0, 1), 2, (int64_t[]){B, C}); /* x[:, 0] */
    return bert_pooler_rows(g, cfg, first);
}

ts_value bert_pooler_rows(ts_graph *g, const ts_bert_config *cfg, ts_value first) {
    int C = cfg->hidden_size;
    return ts_tanh(g, bert_dense(g, cfg, "bert.pooler.dense", first, C, C));
}

/* ------------------------------------------------------------------ heads */

ts_value bert_mlm_logits(ts_graph *g, const ts_bert_config *cfg, ts_value x) {
    int C = cfg->hidden_size;
    ts_value t = bert_act(g, cfg, bert_dense(g, cfg, "cls.predictions.transform.dense", x, C, C));
    t = bert_layer_norm(g, "cls.predictions.transform.LayerNorm", t, C, cfg->layer_norm_eps);
    ts_value word = cfg->untie_word_embeddings
                        ? ts_param(g, "cls.predictions.decoder.weight", TS_F32, 2, (int64_t[]){cfg->vocab_size, C},
                                   ts_init_normal(cfg->initializer_range))
                        : ts_lookup(g, "bert.embeddings.word_embeddings.weight"); /* tied decoder */
    ts_value bias = ts_param(g, "cls.predictions.bias", TS_F32, 1, (int64_t[]){cfg->vocab_size},
                             ts_init_zeros());
    return ts_add(g, bert_matmul(g, cfg, t, word, 0, 1), bias); /* [B, T, V] */
}

static ts_value labels_input(ts_graph *g, const char *name, ts_dtype dt, int B, int T) {
    return T > 0 ? ts_input(g, name, dt, 2, (int64_t[]){B, T}) : ts_input(g, name, dt, 1, (int64_t[]){B});
}

/* A per-sequence label input: [B] unpacked (S == 1), [B, S] packed. */
static ts_value seq_labels_input(ts_graph *g, const char *name, ts_dtype dt, int B, int S) {
    return labels_input(g, name, dt, B, S > 1 ? S : 0);
}

/* Per-sequence logits [B S, K] as [B, S, K] when packed (S > 1); unchanged [B, K] otherwise. */
static ts_value per_seq(ts_graph *g, ts_value logits, int B, int S, int K) {
    return S > 1 ? ts_reshape(g, logits, 3, (int64_t[]){B, S, K}) : logits;
}

/* The rows of x [B, T, C] at masked_lm_positions [B, P]: x.reshape(B T, C)[pos + b T] -> [B, P, C].
 * The flat row index is computed in f32 (exact below 2^24) as the elementwise ops take f32. */
static ts_value gather_positions(ts_graph *g, const ts_bert_config *cfg, ts_value x, ts_value pos, int B, int T) {
    int C = cfg->hidden_size;
    ts_tensor *off = ts_tensor_new(TS_F32, 2, (int64_t[]){B, 1});
    for (int b = 0; off && b < B; b++) ((float *)ts_tensor_data(off))[b] = (float)b * (float)T;
    ts_value rows = ts_cast(g, ts_add(g, ts_cast(g, pos, TS_F32), ts_constant(g, off)), TS_I32);
    ts_tensor_free(off);
    return ts_gather(g, ts_reshape(g, x, 2, (int64_t[]){(int64_t)B * T, C}), rows);
}

/* BertForPreTraining: MLM and NSP logits, loss = CE(MLM, ignore -100) + CE(NSP). */
static void head_pretraining(ts_graph *g, const ts_bert_config *cfg, ts_value x, ts_value pooled, int B,
                             int T, int S, ts_bert_outputs *o) {
    int P = cfg->max_predictions_per_seq;
    if (P > 0) { /* the MLM head on the P gathered positions only */
        o->masked_lm_positions = ts_input(g, "masked_lm_positions", TS_I32, 2, (int64_t[]){B, P});
        x = gather_positions(g, cfg, x, o->masked_lm_positions, B, T);
    }
    o->prediction_logits = ts_name(g, bert_mlm_logits(g, cfg, x), "prediction_logits");
    o->seq_relationship_logits = ts_name(
        g, per_seq(g, bert_dense(g, cfg, "cls.seq_relationship", pooled, cfg->hidden_size, 2), B, S, 2),
        "seq_relationship_logits"); /* [B, 2], packed [B, S, 2] */
    o->labels = labels_input(g, "labels", TS_I32, B, P > 0 ? P : T);
    o->next_sentence_label = seq_labels_input(g, "next_sentence_label", TS_I32, B, S);
    o->mlm_loss = ts_name(g, ts_cross_entropy(g, o->prediction_logits, o->labels, -100), "mlm_loss");
    o->nsp_loss = ts_name(g, ts_cross_entropy(g, o->seq_relationship_logits, o->next_sentence_label, -100),
                          "nsp_loss");
    o->loss = ts_name(g, ts_add(g, o->mlm_loss, o->nsp_loss), "loss");
}

/* BertForMaskedLM: logits [B, T, V], loss = CE(ignore -100). */
static void head_masked_lm(ts_graph *g, const ts_bert_config *cfg, ts_value x, int B, int T,
                           ts_bert_outputs *o) {
    o->logits = ts_name(g, bert_mlm_logits(g, cfg, x), "logits");
    o->labels = labels_input(g, "labels", TS_I32, B, T);
    o->loss = ts_name(g, ts_cross_entropy(g, o->logits, o->labels, -100), "loss");
}

/* BertForSequenceClassification: logits [B, L] from the pooled output; CE, or MSE for L == 1. */
static void head_seq_classification(ts_graph *g, const ts_bert_config *cfg, ts_value pooled, int B, int S,
                                    ts_bert_outputs *o) {
    int L = cfg->num_labels;
    float p = cfg->classifier_dropout >= 0.f ? cfg->classifier_dropout : cfg->hidden_dropout_prob;
    ts_value logits = bert_dense(g, cfg, "classifier", dropout(g, pooled, p), cfg->hidden_size, L);
    o->logits = ts_name(g, per_seq(g, logits, B, S, L), "logits"); /* [B, L], packed [B, S, L] */
    if (S > 1) { /* packed: one class label per sequence, TS_IGNORE_INDEX on empty slots */
        o->labels = seq_labels_input(g, "labels", TS_I32, B, S);
        o->loss = ts_name(g, ts_cross_entropy(g, o->logits, o->labels, -100), "loss");
        return;
    }
    if (L == 1) { /* regression: mean((logits[:, 0] - labels)^2) */
        o->labels = labels_input(g, "labels", TS_F32, B, 0);
        ts_value d = ts_sub(g, ts_reshape(g, logits, 1, (int64_t[]){B}), o->labels);
        o->loss = ts_name(g, ts_reduce_mean(g, ts_mul(g, d, d), 0, NULL, 0), "loss");
    } else {
        o->labels = labels_input(g, "labels", TS_I32, B, 0);
        o->loss = ts_name(g, ts_cross_entropy(g, logits, o->labels, -100), "loss");
    }
}

/* BertForQuestionAnswering: [B, T, 2] -> start, end [B, T]; loss = (CE(start) + CE(end)) / 2,
 * position T ignored. */
/* Packed QA: logits [B, T] -> [B, S, T], slot s keeping the tokens of sequence s + 1 (seq [B, T]
 * its index per token) and the others' at logit - 10000, so each sequence's softmax is over its
 * own tokens. */
static ts_value qa_per_seq(ts_graph *g, ts_value logits, ts_value seq, int B, int T, int S) {
    if (ts_value_dtype(g, seq) != TS_I32) seq = ts_cast(g, seq, TS_I32);
    ts_tensor *ids = ts_tensor_new(TS_I32, 3, (int64_t[]){1, S, 1});
    for (int s = 0; ids && s < S; s++) ((int32_t *)ts_tensor_data(ids))[s] = s + 1;
    ts_value mine = ts_binary(g, TS_BIN_EQUAL, ts_reshape(g, seq, 3, (int64_t[]){B, 1, T}), ts_constant(g, ids));
    ts_tensor_free(ids);
    ts_value mask = ts_where(g, mine, ts_scalar(g, 0.f), ts_scalar(g, -10000.f)); /* [B, S, T] */
    return ts_add(g, ts_reshape(g, logits, 3, (int64_t[]){B, 1, T}), mask);
}

static void head_question_answering(ts_graph *g, const ts_bert_config *cfg, ts_value x, ts_value seq, int B,
                                    int T, int S, ts_bert_outputs *o) {
    ts_value se = bert_dense(g, cfg, "qa_outputs", x, cfg->hidden_size, 2);
    ts_value start = ts_reshape(g, ts_slice(g, se, 2, 0, 1), 2, (int64_t[]){B, T});
    ts_value end = ts_reshape(g, ts_slice(g, se, 2, 1, 2), 2, (int64_t[]){B, T});
    o->start_logits = ts_name(g, start, "start_logits");
    o->end_logits = ts_name(g, end, "end_logits");
    o->start_positions = seq_labels_input(g, "start_positions", TS_I32, B, S);
    o->end_positions = seq_labels_input(g, "end_positions", TS_I32, B, S);
    if (S > 1) start = qa_per_seq(g, start, seq, B, T, S), end = qa_per_seq(g, end, seq, B, T, S);
    ts_value ls = ts_cross_entropy(g, start, o->start_positions, T);
    ts_value le = ts_cross_entropy(g, end, o->end_positions, T);
    o->loss = ts_name(g, ts_scale(g, ts_add(g, ls, le), 0.5f, 0.f), "loss");
}

/* ================================================================== the model */

ts_status ts_bert_build(ts_graph *g, const ts_bert_config *cfg, ts_bert_head head, int batch, int seq,
                        ts_bert_outputs *out) {
    ts_bert_outputs o;
    ts_value *all = &o.input_ids; /* every field is a ts_value: start them all at TS_NONE */
    for (size_t i = 0; i < sizeof o / sizeof(ts_value); i++) all[i] = TS_NONE;
    if (out) *out = o;
    if (!g) return ts_set_error(TS_ERR_ARG, "ts_bert_build: graph is NULL");
    if (ts_graph_status(g) != TS_OK) return ts_graph_status(g);
    if (!cfg) return ts_graph_fail(g, TS_ERR_ARG, "ts_bert_build: cfg is NULL"), ts_graph_status(g);
    ts_bert_config cfg_read;
    if (TS_STRUCT_READ(&cfg_read, cfg, ts_bert_config, "ts_bert_build"))
        return ts_graph_fail(g, TS_ERR_ARG, "%s", ts_last_error()), ts_graph_status(g);
    cfg = &cfg_read;
    char why[256];
    if (bert_config_problem(cfg, why, sizeof why))
        return ts_graph_fail(g, TS_ERR_ARG, "ts_bert_build: config %s", why), ts_graph_status(g);
    if ((unsigned)head > TS_BERT_QUESTION_ANSWERING)
        return ts_graph_fail(g, TS_ERR_ARG, "ts_bert_build: unknown head %d", (int)head), ts_graph_status(g);
    if (batch <= 0 || seq <= 0)
        return ts_graph_fail(g, TS_ERR_ARG, "ts_bert_build: batch %d and seq %d must be positive", batch,
                             seq), ts_graph_status(g);
    if (seq > cfg->max_position_embeddings)
        return ts_graph_fail(g, TS_ERR_SHAPE, "ts_bert_build: seq %d is longer than "
                             "max_position_embeddings %d", seq, cfg->max_position_embeddings), ts_graph_status(g);
    if (cfg->max_predictions_per_seq < 0 || cfg->max_predictions_per_seq > seq)
        return ts_graph_fail(g, TS_ERR_ARG, "ts_bert_build: max_predictions_per_seq %d must be in [0, seq %d]",
                             cfg->max_predictions_per_seq, seq), ts_graph_status(g);
    if (cfg->layer_stages) { /* stages in forward order: embeddings <= layers <= heads */
        int prev = cfg->embedding_stage;
        for (int l = 0; l <= cfg->num_hidden_layers; l++) {
            int st = l < cfg->num_hidden_layers ? cfg->layer_stages[l] : cfg->head_stage;
            if (st < prev || st >= TS_MAX_STAGES || prev < 0)
                return ts_graph_fail(g, TS_ERR_ARG, "ts_bert_build: pipeline stages must not decrease from the "
                                     "embeddings (%d) through the layers to the heads (%d) and stay below %d: "
                                     "%s %d is on stage %d after stage %d", cfg->embedding_stage,
                                     cfg->head_stage, TS_MAX_STAGES, l < cfg->num_hidden_layers ? "layer" : "the heads, after layer",
                                     l < cfg->num_hidden_layers ? l : l - 1, st, prev), ts_graph_status(g);
            prev = st;
        }
    }
    if (head == TS_BERT_PRETRAINING && cfg->max_predictions_per_seq > 0 && (int64_t)batch * seq > (1 << 24))
        return ts_graph_fail(g, TS_ERR_ARG, "ts_bert_build: batch %d x seq %d is %lld rows; the masked-position MLM "
                             "head (max_predictions_per_seq) indexes at most 2^24 = 16777216 rows exactly",
                             batch, seq, (long long)batch * seq), ts_graph_status(g);
    int S = cfg->max_sequences_per_pack > 1 ? cfg->max_sequences_per_pack : 1; /* sequences per row */
    if (cfg->max_sequences_per_pack < 0 || S > seq)
        return ts_graph_fail(g, TS_ERR_ARG, "ts_bert_build: max_sequences_per_pack %d must be in [0, seq %d]",
                             cfg->max_sequences_per_pack, seq), ts_graph_status(g);
    if (S > 1 && (int64_t)batch * seq > (1 << 24))
        return ts_graph_fail(g, TS_ERR_ARG, "ts_bert_build: batch %d x seq %d is above 2^24 = 16777216 rows, the "
                             "most the packed [CLS] gather (max_sequences_per_pack) indexes exactly", batch, seq),
               ts_graph_status(g);
    if (S > 1 && head == TS_BERT_SEQ_CLASSIFICATION && cfg->num_labels == 1)
        return ts_graph_fail(g, TS_ERR_ARG, "ts_bert_build: max_sequences_per_pack %d: a regression classifier "
                             "(num_labels 1) is not packed", S), ts_graph_status(g);
    int B = batch, T = seq;

    o.input_ids = ts_input(g, "input_ids", TS_I32, 2, (int64_t[]){B, T});
    o.token_type_ids = ts_input(g, "token_type_ids", TS_I32, 2, (int64_t[]){B, T});
    o.attention_mask = ts_input(g, "attention_mask", cfg->attention_mask_dtype, 2, (int64_t[]){B, T});

    const int *ls = cfg->layer_stages; /* pipeline placement, when set */
    if (ls) ts_graph_stage_begin(g, cfg->embedding_stage);
    ts_value position_ids = S > 1 ? ts_input(g, "position_ids", TS_I32, 2, (int64_t[]){B, T}) : TS_NONE;
    ts_value x = bert_embeddings(g, cfg, o.input_ids, o.token_type_ids, position_ids, T); /* [B, T, C] */
    ts_value mask = S > 1 ? bert_pack_mask(g, o.attention_mask, B, T)       /* [B, 1, T, T] */
                          : bert_extended_mask(g, o.attention_mask, B, T);  /* [B, 1, 1, T] */
    for (int l = 0; l < cfg->num_hidden_layers; l++) {
        if (ls) ts_graph_stage_end(g), ts_graph_stage_begin(g, ls[l]);
        if (cfg->recompute) ts_graph_recompute_begin(g); /* recomputed in the backward */
        x = bert_layer(g, cfg, l, x, mask, B, T);
        if (cfg->recompute) ts_graph_recompute_end(g);
    }
    if (ls) ts_graph_stage_end(g), ts_graph_stage_begin(g, cfg->head_stage);
    o.last_hidden_state = ts_name(g, x, "last_hidden_state");

    int pooled = head == TS_BERT_MODEL || head == TS_BERT_PRETRAINING || head == TS_BERT_SEQ_CLASSIFICATION;
    ts_value pooled_rows = TS_NONE; /* [B, C], packed [B S, C]: one per sequence */
    if (pooled && S > 1) { /* each sequence's [CLS] row */
        ts_value cls = ts_input(g, "cls_positions", TS_I32, 2, (int64_t[]){B, S});
        ts_value first = ts_reshape(g, gather_positions(g, cfg, x, cls, B, T), 2,
                                    (int64_t[]){(int64_t)B * S, cfg->hidden_size});
        pooled_rows = bert_pooler_rows(g, cfg, first);
        o.pooler_output = ts_name(g, ts_reshape(g, pooled_rows, 3, (int64_t[]){B, S, cfg->hidden_size}),
                                  "pooler_output");
    } else if (pooled) {
        o.pooler_output = pooled_rows = ts_name(g, bert_pooler(g, cfg, x, B), "pooler_output");
    }

    switch (head) {
    case TS_BERT_MODEL: break;
    case TS_BERT_PRETRAINING: head_pretraining(g, cfg, x, pooled_rows, B, T, S, &o); break;
    case TS_BERT_MASKED_LM: head_masked_lm(g, cfg, x, B, T, &o); break;
    case TS_BERT_SEQ_CLASSIFICATION: head_seq_classification(g, cfg, pooled_rows, B, S, &o); break;
    case TS_BERT_QUESTION_ANSWERING: head_question_answering(g, cfg, x, o.attention_mask, B, T, S, &o); break;
    }
    if (ls) ts_graph_stage_end(g);
    /* one attention op per layer from the ops bert_attention built (the graph's other attention too) */
    if (!cfg->eager_attention && ts_graph_status(g) == TS_OK && ts_graph_fuse_attention(g) < 0)
        return ts_graph_fail(g, ts_last_status(), "ts_bert_build: %s", ts_last_error()), ts_graph_status(g);
    if (out) *out = o;
    return ts_graph_status(g);
}
