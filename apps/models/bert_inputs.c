/*
 * bert_inputs.c — a BERT run on stored tensors (tessera_tasks.h): its three [B, T] inputs read
 * from a safetensors file (checked against the config's ranges, the optional two filled in), and
 * its weights loaded strictly, also from a bare BertModel checkpoint (names without "bert.").
 */
#include "common/app.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

/* The named [B, T] integer input as a new i32 tensor; *shape (when it holds a B > 0) must match.
 * TS_ERR_NOT_FOUND (no message) when absent. Values must lie in [lo, hi). */
static ts_status read_ids(ts_safetensors *in, const char *path, const char *name, int64_t shape[2], int64_t lo,
                          int64_t hi, const char *range_what, ts_tensor **out) {
    ts_dtype dt;
    int nd;
    int64_t sh[TS_MAX_DIMS];
    *out = NULL;
    ts_status s = ts_safetensors_info(in, name, &dt, &nd, sh);
    if (s != TS_OK) return s;
    if (dt != TS_I32 && dt != TS_I64)
        return ts_set_error(TS_ERR_DTYPE, "%s: tensor \"%s\" is %s; it must be i32 or i64", path, name,
                            ts_dtype_name(dt));
    if (nd != 2 || sh[0] <= 0 || sh[1] <= 0) {
        char dims[256] = "";
        for (int i = 0, o = 0; i < nd && o < (int)sizeof dims; i++)
            o += snprintf(dims + o, sizeof dims - (size_t)o, "%s%lld", i ? ", " : " [", (long long)sh[i]);
        return ts_set_error(TS_ERR_SHAPE, "%s: tensor \"%s\" must be [batch, seq] with both positive, got rank %d%s%s",
                            path, name, nd, dims, nd ? "]" : "");
    }
    if (shape[0] > 0 && (sh[0] != shape[0] || sh[1] != shape[1]))
        return ts_set_error(TS_ERR_SHAPE, "%s: tensor \"%s\" is [%lld, %lld] but input_ids is [%lld, %lld]", path,
                            name, (long long)sh[0], (long long)sh[1], (long long)shape[0], (long long)shape[1]);
    if (sh[0] > INT_MAX || sh[1] > INT_MAX)
        return ts_set_error(TS_ERR_SHAPE, "%s: tensor \"%s\" is too large", path, name);
    ts_tensor *raw = NULL;
    if ((s = ts_safetensors_get(in, name, &raw)) != TS_OK) return s;
    ts_tensor *ids = dt == TS_I32 ? raw : ts_tensor_new(TS_I32, 2, sh);
    if (!ids) {
        ts_tensor_free(raw);
        return ts_last_status();
    }
    int32_t *o = ts_tensor_data(ids);
    const void *src = ts_tensor_data(raw);
    for (int64_t i = 0, n = sh[0] * sh[1]; i < n; i++) {
        int64_t v = dt == TS_I32 ? ((const int32_t *)src)[i] : ((const int64_t *)src)[i];
        if (v < lo || v >= hi) {
            ts_set_error(TS_ERR_RUNTIME, "%s: %s[%lld, %lld] = %lld is outside [%lld, %lld) (%s)", path, name,
                         (long long)(i / sh[1]), (long long)(i % sh[1]), (long long)v, (long long)lo, (long long)hi,
                         range_what);
            if (ids != raw) ts_tensor_free(ids);
            ts_tensor_free(raw);
            return TS_ERR_RUNTIME;
        }
        o[i] = (int32_t)v;
    }
    if (ids != raw) ts_tensor_free(raw);
    shape[0] = sh[0], shape[1] = sh[1];
    *out = ids;
    return TS_OK;
}

/* A [B, T] i32 tensor filled with v. */
static ts_tensor *filled_ids(const int64_t shape[2], int32_t v) {
    ts_tensor *t = ts_tensor_new(TS_I32, 2, shape);
    if (t)
        for (int64_t i = 0; i < shape[0] * shape[1]; i++) ((int32_t *)ts_tensor_data(t))[i] = v;
    return t;
}

ts_status ts_bert_read_inputs(ts_safetensors *in, const char *path, const ts_bert_config *cfg, ts_tensor *feeds[3],
                              int64_t shape[2]) {
    ts_bert_config c;
    shape[0] = shape[1] = 0;
    feeds[0] = feeds[1] = feeds[2] = NULL;
    if (TS_STRUCT_READ(&c, cfg, ts_bert_config, "ts_bert_read_inputs")) return TS_ERR_ARG;
    cfg = &c;
    ts_status s = read_ids(in, path, "input_ids", shape, 0, cfg->vocab_size, "vocab_size", &feeds[0]);
    if (s == TS_ERR_NOT_FOUND)
        return ts_set_error(s, "%s: no tensor \"input_ids\" (required; token_type_ids and attention_mask are "
                               "optional)", path);
    if (s == TS_OK) s = read_ids(in, path, "token_type_ids", shape, 0, cfg->type_vocab_size, "type_vocab_size", &feeds[1]);
    if (s == TS_ERR_NOT_FOUND) s = (feeds[1] = filled_ids(shape, 0)) ? TS_OK : ts_last_status();
    if (s == TS_OK) s = read_ids(in, path, "attention_mask", shape, 0, 2, "1 keep, 0 padding", &feeds[2]);
    if (s == TS_ERR_NOT_FOUND) s = (feeds[2] = filled_ids(shape, 1)) ? TS_OK : ts_last_status();
    if (s != TS_OK)
        for (int i = 0; i < 3; i++) ts_tensor_free(feeds[i]), feeds[i] = NULL;
    return s;
}

/* Copy a stored float tensor (f32 / bf16 / f16) into f32 parameter `pname`. */
static ts_status set_param_from(ts_program *p, ts_safetensors *st, const char *path, const char *pname,
                                const char *sname, int allow_nonfinite) {
    ts_tensor *t = NULL, *cur = NULL;
    ts_status s;
    if ((s = ts_safetensors_get(st, sname, &t)) != TS_OK || (s = ts_program_get_param(p, pname, &cur)) != TS_OK) {
        ts_tensor_free(t);
        return s;
    }
    int same = ts_tensor_ndim(t) == ts_tensor_ndim(cur) &&
               !memcmp(ts_tensor_shape(t), ts_tensor_shape(cur), sizeof(int64_t) * (size_t)ts_tensor_ndim(t));
    ts_dtype dt = ts_tensor_dtype(t);
    if (!same) {
        s = ts_set_error(TS_ERR_SHAPE, "%s: tensor \"%s\" has a shape other than parameter %s's", path, sname, pname);
    } else if (dt != TS_F32 && dt != TS_BF16 && dt != TS_F16) {
        s = ts_set_error(TS_ERR_DTYPE, "%s: tensor \"%s\" is %s, not a float type", path, sname, ts_dtype_name(dt));
    } else {
        float *d = ts_tensor_data(cur);
        size_t n = (size_t)ts_tensor_numel(t), bad = 0, first = 0;
        if (dt == TS_F32) memcpy(d, ts_tensor_data(t), n * sizeof(float));
        else if (dt == TS_BF16) ts_bf16_to_f32(ts_tensor_data(t), d, n);
        else ts_f16_to_f32(ts_tensor_data(t), d, n);
        for (size_t i = 0; i < n && !allow_nonfinite; i++)
            if (!isfinite(d[i]) && !bad++) first = i;
        if (bad)
            s = ts_set_error(TS_ERR_RUNTIME, "%s: tensor \"%s\" holds %zu non-finite value%s of %zu (the first at "
                             "element %zu); a model with NaN or inf weights computes NaN; TS_LOAD_ALLOW_NONFINITE loads it "
                             "anyway", path, sname, bad, bad == 1 ? "" : "s", n, first);
        else s = ts_program_set_param(p, pname, cur);
    }
    ts_tensor_free(t);
    ts_tensor_free(cur);
    return s;
}

ts_status ts_bert_load_weights(ts_program *p, const char *path, int flags) {
    ts_status s = ts_program_load(p, path, flags | TS_LOAD_STRICT, NULL);
    if (s == TS_OK) return s;
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", ts_last_error());
    ts_safetensors *st = s == TS_ERR_NOT_FOUND ? ts_safetensors_open(path) : NULL;
    int bare = st && ts_safetensors_info(st, "embeddings.word_embeddings.weight", NULL, NULL, NULL) == TS_OK &&
               ts_safetensors_info(st, "bert.embeddings.word_embeddings.weight", NULL, NULL, NULL) != TS_OK;
    if (!bare) {
        ts_safetensors_close(st);
        return ts_set_error(s, "%s", msg);
    }
    int np = ts_program_num_params(p);
    s = TS_OK;
    for (int i = 0; i < np && s == TS_OK; i++) { /* everything present before anything is copied */
        const char *pn = ts_program_param_name(p, i);
        const char *sn = strncmp(pn, "bert.", 5) == 0 ? pn + 5 : pn;
        if (ts_safetensors_info(st, sn, NULL, NULL, NULL) != TS_OK)
            s = ts_set_error(TS_ERR_NOT_FOUND, "%s: no tensor \"%s\" (parameter %s; read as a bare BertModel "
                                               "checkpoint, names without \"bert.\")", path, sn, pn);
    }
    for (int i = 0; i < np && s == TS_OK; i++) {
        const char *pn = ts_program_param_name(p, i);
        s = set_param_from(p, st, path, pn, strncmp(pn, "bert.", 5) == 0 ? pn + 5 : pn,
                           (flags & TS_LOAD_ALLOW_NONFINITE) != 0);
    }
    ts_safetensors_close(st);
    return s;
}
