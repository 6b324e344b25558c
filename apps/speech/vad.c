/*
 * vad.c — Silero VAD v5 streaming (ts_vad_*), as Silero's OnnxWrapper runs it at 16 kHz: each
 * chunk of 512 samples goes in with the 64 samples before it ([1, 576]; zeros before the first
 * chunk), the model's `sr` input fixed to 16000 for the session (so its If on the rate keeps the
 * 16 kHz branch alone, folded at import), and its LSTM state carried by binding output `stateN`
 * to input `state` (zeros at the start and after ts_vad_reset). One compiled program serves
 * every chunk. Samples are taken as given in [-1, 1] (the model's scale, unlike openWakeWord's).
 */
#include <stdlib.h>
#include <string.h>

#include "common/app.h"
#include "speech/speech_impl.h"

#define CONTEXT 64

struct ts_vad {
    char *path;
    ts_onnx *model;
    ts_onnx_session *session;
    int in_x, in_state, in_sr, nin, out_p, nout;
    float buf[CONTEXT + TS_VAD_CHUNK];  /* context, then the chunk being gathered */
    int npend;
    float *probs;
    int64_t nprobs, cap;
    int threads;  /* the session's (speech_threads) */
};

void ts_vad_free(ts_vad *v) {
    if (!v) return;
    ts_onnx_session_free(v->session);
    ts_onnx_free(v->model);
    free(v->path);
    free(v->probs);
    free(v);
}

void ts_vad_reset(ts_vad *v) {
    if (!v) return;
    memset(v->buf, 0, sizeof v->buf);
    v->npend = 0;
    ts_onnx_session_reset(v->session);
}

/* Index of the model's input (or output) named name; -1 when none. */
static int find_io(const ts_onnx *m, const char *name, int output) {
    int n = output ? ts_onnx_num_outputs(m) : ts_onnx_num_inputs(m);
    for (int i = 0; i < n; i++)
        if (!strcmp(output ? ts_onnx_output_name(m, i) : ts_onnx_input_name(m, i), name)) return i;
    return -1;
}

static ts_status setup(ts_vad *v) {
    v->in_x = find_io(v->model, "input", 0), v->in_state = find_io(v->model, "state", 0);
    v->in_sr = find_io(v->model, "sr", 0), v->out_p = find_io(v->model, "output", 1);
    v->nin = ts_onnx_num_inputs(v->model), v->nout = ts_onnx_num_outputs(v->model);
    if (v->in_x < 0 || v->in_state < 0 || v->in_sr < 0 || v->out_p < 0 || find_io(v->model, "stateN", 1) < 0 ||
        v->nin != 3 || v->nout > 8)
        return ts_set_error(TS_ERR_ARG, "%s: not Silero VAD v5 (inputs input, state, sr; outputs output, stateN)",
                            v->path);
    ts_tensor *sr = ts_tensor_new(TS_I64, 0, NULL);
    if (!sr) return ts_last_status();
    *(int64_t *)ts_tensor_data(sr) = 16000;
    ts_status s = ts_onnx_session_fix(v->session, "sr", sr);
    ts_tensor_free(sr);
    if (!s) s = ts_onnx_session_bind(v->session, "stateN", "state");
    return s ? kws_err_in(v->path) : TS_OK;
}

int ts_vad_threads(const ts_vad *v) { return v ? v->threads : -1; }

ts_vad *ts_vad_new(const ts_vad_opts *opts) {
    ts_vad_opts o;
    if (TS_STRUCT_READ(&o, opts, ts_vad_opts, "ts_vad_new")) return NULL;
    if (!o.model || o.num_threads < 0 || o.num_threads > ts_max_threads()) {
        ts_set_error(TS_ERR_ARG, "vad: %s", o.model ? "threads out of range" : "no model given");
        return NULL;
    }
    ts_vad *v = calloc(1, sizeof *v);
    if (!v) {
        ts_set_error(TS_ERR_NOMEM, "vad: out of memory");
        return NULL;
    }
    if (!(v->path = strdup(o.model ? o.model : ""))) {
        ts_vad_free(v);
        ts_set_error(TS_ERR_NOMEM, "vad: out of memory");
        return NULL;
    }
    /* a run: one chunk with its context, [1, 576], and the state [2, 1, 128] */
    v->threads = speech_threads(o.num_threads, CONTEXT + TS_VAD_CHUNK + 2 * 128);
    ts_compile_opts copts = {.struct_size = sizeof copts, .num_threads = v->threads, .inference = 1};
    if (!(v->model = ts_onnx_load(v->path)) || !(v->session = ts_onnx_session_new(v->model, &copts)) || setup(v)) {
        ts_vad_free(v);
        return NULL;
    }
    ts_vad_reset(v);
    return v;
}

/* The chunk in buf (context + 512 samples) through the model: one probability appended. */
static ts_status run_chunk(ts_vad *v) {
    if (v->nprobs == v->cap) {
        int64_t cap = v->cap ? 2 * v->cap : 64;
        float *p = realloc(v->probs, (size_t)cap * sizeof *p);
        if (!p) return ts_set_error(TS_ERR_NOMEM, "vad: out of memory");
        v->probs = p, v->cap = cap;
    }
    ts_tensor *x = ts_tensor_from(TS_F32, 2, (int64_t[]){1, CONTEXT + TS_VAD_CHUNK}, v->buf);
    if (!x) return ts_last_status();
    const ts_tensor *in[3] = {NULL, NULL, NULL};
    ts_tensor *out[8] = {NULL};
    in[v->in_x] = x;
    ts_status s = ts_onnx_session_run(v->session, in, out);
    ts_tensor_free(x);
    if (!s) v->probs[v->nprobs++] = *(const float *)ts_tensor_data(out[v->out_p]);
    for (int j = 0; j < v->nout; j++) ts_tensor_free(out[j]);
    if (s) return kws_err_in(v->path);
    memmove(v->buf, v->buf + TS_VAD_CHUNK, CONTEXT * sizeof(float));
    v->npend = 0;
    return TS_OK;
}

ts_status ts_vad_feed(ts_vad *v, const float *x, int64_t n, const float **probs, int64_t *nchunks) {
    if (!v || (!x && n) || n < 0 || !probs || !nchunks) return ts_set_error(TS_ERR_ARG, "ts_vad_feed: bad arguments");
    v->nprobs = 0;
    *probs = NULL, *nchunks = 0;
    while (n > 0) {
        int take = TS_VAD_CHUNK - v->npend;
        if (take > n) take = (int)n;
        memcpy(v->buf + CONTEXT + v->npend, x, (size_t)take * sizeof(float));
        v->npend += take, x += take, n -= take;
        if (v->npend == TS_VAD_CHUNK && run_chunk(v)) return ts_last_status();
    }
    *probs = v->probs, *nchunks = v->nprobs;
    return TS_OK;
}

ts_status ts_vad_finish(ts_vad *v, const float **probs, int64_t *nchunks) {
    if (!v || !probs || !nchunks) return ts_set_error(TS_ERR_ARG, "ts_vad_finish: bad arguments");
    v->nprobs = 0;
    *probs = NULL, *nchunks = 0;
    if (v->npend) {
        memset(v->buf + CONTEXT + v->npend, 0, (size_t)(TS_VAD_CHUNK - v->npend) * sizeof(float));
        if (run_chunk(v)) return ts_last_status();
    }
    *probs = v->probs, *nchunks = v->nprobs;
    return TS_OK;
}
