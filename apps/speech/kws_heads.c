/*
 * kws_heads.c — openWakeWord's keyword heads: each a small ONNX classifier (Gemm, ReLU,
 * LayerNorm, Sigmoid or Softmax) over the last `len` speech embeddings [1, len, 96], len read
 * from the model's declared input (16 for most, weather 22, timer 34). A head with one output
 * gives the keyword's score; a multi-class head (timer_v0.1) gives a softmax whose class 0 is
 * "no keyword" and whose other classes are named by the model's output name, a JSON object such
 * as {"1": "1_minute_timer", ...}, as openWakeWord reads it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/app.h"
#include "speech/speech_impl.h"

ts_status kws_err_in(const char *path) {
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", ts_last_error());
    return ts_set_error(ts_last_status(), "%s: %s", path, msg);
}

/* Is keyword among the comma-separated TS_KWS_KEYWORDS? */
static int known_keyword(const char *keyword) {
    const char *p = TS_KWS_KEYWORDS;
    size_t n = strlen(keyword);
    while (*p) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == n && !strncmp(p, keyword, n)) return 1;
        p += len + (e ? 1 : 0);
    }
    return 0;
}

/* dir/keyword_v0.1.onnx when it exists, else dir/keyword.onnx (malloc'ed). */
static char *head_path(const char *dir, const char *keyword) {
    size_t n = strlen(dir) + strlen(keyword) + 16;
    char *p = malloc(n);
    if (!p) return NULL;
    snprintf(p, n, "%s/%s_v0.1.onnx", dir, keyword);
    if (!access(p, R_OK)) return p;
    snprintf(p, n, "%s/%s.onnx", dir, keyword);
    return p;
}

static ts_status check_head(kws_head *h) {
    ts_dtype dt;
    int64_t sh[TS_MAX_DIMS];
    int nd = ts_onnx_num_inputs(h->model) == 1 && ts_onnx_num_outputs(h->model) == 1
                 ? ts_onnx_input_shape(h->model, 0, &dt, sh)
                 : -1;
    if (nd != 3 || dt != TS_F32 || sh[0] != 1 || sh[1] < 1 || sh[1] > 1000 || sh[2] != KWS_EMB)
        return ts_set_error(TS_ERR_ARG,
                            "%s: a keyword head should take one f32 input [1, N, 96] (the last N speech "
                            "embeddings) and give one output",
                            h->path);
    h->len = (int)sh[1];
    return TS_OK;
}

ts_status kws_head_open(kws_head *h, const char *dir, const char *keyword, const ts_compile_opts *copts) {
    memset(h, 0, sizeof *h);
    if (!keyword || !*keyword || strchr(keyword, '/'))
        return ts_set_error(TS_ERR_ARG, "kws: '%s' is not a keyword name (known: %s)", keyword ? keyword : "(null)",
                            TS_KWS_KEYWORDS);
    h->keyword = strdup(keyword);
    h->path = head_path(dir, keyword);
    if (!h->keyword || !h->path) return ts_set_error(TS_ERR_NOMEM, "kws: out of memory");
    if (access(h->path, R_OK) && !known_keyword(keyword))
        return ts_set_error(TS_ERR_ARG, "kws: unknown keyword '%s' (known: %s; or a head %s/%s.onnx)", keyword,
                            TS_KWS_KEYWORDS, dir, keyword);
    h->model = ts_onnx_load(h->path);
    if (!h->model || check_head(h)) return ts_last_status();
    ts_compile_opts own = *copts; /* its threads from its run: [1, len, 96] */
    own.num_threads = h->threads = speech_threads(copts->num_threads, (int64_t)h->len * KWS_EMB);
    h->session = ts_onnx_session_new(h->model, &own);
    if (!h->session) return ts_last_status();
    /* one run on zeros compiles the program and tells the number of classes */
    ts_tensor *in = ts_tensor_new(TS_F32, 3, (int64_t[]){1, h->len, KWS_EMB}), *out = NULL;
    if (!in) return ts_last_status();
    memset(ts_tensor_data(in), 0, ts_tensor_nbytes(in));
    ts_status s = ts_onnx_session_run(h->session, (const ts_tensor *const[]){in}, &out);
    ts_tensor_free(in);
    if (s) return kws_err_in(h->path);
    int64_t n = ts_tensor_numel(out);
    ts_tensor_free(out);
    if (n < 1 || n > 1000)
        return ts_set_error(TS_ERR_ARG,
                            "%s: a keyword head should give 1 score or a few classes, this one "
                            "gives %lld values",
                            h->path, (long long)n);
    h->nclasses = (int)n;
    return TS_OK;
}

void kws_head_close(kws_head *h) {
    ts_onnx_session_free(h->session);
    ts_onnx_free(h->model);
    free(h->path);
    free(h->keyword);
    memset(h, 0, sizeof *h);
}

int kws_head_nlabels(const kws_head *h) { return h->nclasses > 1 ? h->nclasses - 1 : 1; }

char *kws_head_label(const kws_head *h, int j) {
    if (h->nclasses == 1) return strdup(h->keyword); /* NULL: out of memory, the caller says so */
    char key[32], *name = NULL;
    snprintf(key, sizeof key, "\"%d\"", j + 1);
    const char *map = ts_onnx_output_name(h->model, 0), *p = map ? strstr(map, key) : NULL;
    if (p) {
        p += strlen(key);
        while (*p == ' ' || *p == ':') p++;
        const char *e = *p == '"' ? strchr(p + 1, '"') : NULL;
        if (e && e > p + 1) name = strndup(p + 1, (size_t)(e - p - 1));
    }
    if (!name) {
        size_t n = strlen(h->keyword) + 16;
        name = malloc(n);
        if (name) snprintf(name, n, "%s_%d", h->keyword, j + 1);
    }
    return name;
}

ts_status kws_head_score(kws_head *h, const float *emb, float *out) {
    ts_tensor *in = ts_tensor_from(TS_F32, 3, (int64_t[]){1, h->len, KWS_EMB}, emb), *res = NULL;
    if (!in) return ts_last_status();
    ts_status s = ts_onnx_session_run(h->session, (const ts_tensor *const[]){in}, &res);
    ts_tensor_free(in);
    if (s) return kws_err_in(h->path);
    const float *p = ts_tensor_data(res);
    if (h->nclasses == 1) out[0] = p[0];
    else
        for (int j = 1; j < h->nclasses; j++) out[j - 1] = p[j];
    ts_tensor_free(res);
    return TS_OK;
}
