/*
 * onnx_model.c — a served ONNX model: its inputs read from the file (each [batch, d1, ...], the
 * dims after the first fixed; a dynamic first dim becomes --max-batch), a session compiled at
 * start by one run on zeros of that shape (the only shape it is ever run with, so nothing
 * compiles on the request path), and a batch of jobs run as one: their rows stacked, padded with
 * zero rows to the batch, each output's rows handed back to the job they came from. A model with
 * an output whose first dim is not the batch runs one request at a time.
 */
#include "serve/serve.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Zero inputs of the model's full batch shape (new tensors into t). 0 or -1. */
static int zeros(const serve_model *m, ts_tensor **t) {
    for (int k = 0; k < m->osig.nin; k++) {
        int64_t dims[TS_MAX_DIMS];
        memcpy(dims, m->osig.in[k].shape, sizeof dims);
        dims[0] = m->osig.batch;
        if (!(t[k] = ts_tensor_new(m->osig.in[k].dtype, m->osig.in[k].ndim, dims))) return -1;
    }
    return 0;
}

static void free_all(ts_tensor **t, int n) {
    for (int k = 0; k < n; k++) ts_tensor_free(t[k]), t[k] = NULL;
}

/* The inputs' signature from the file. TS_OK or TS_ERR_ARG with the reason. */
static ts_status read_sig(serve_model *m, const char *path, int max_batch) {
    int nin = ts_onnx_num_inputs(m->onnx), batch = 0;
    if (nin < 1 || nin > SERVE_MAX_IO || ts_onnx_num_outputs(m->onnx) > SERVE_MAX_IO)
        return ts_set_error(TS_ERR_ARG, "model %s: %d inputs; tessera serve takes 1 to %d", path, nin, SERVE_MAX_IO);
    for (int k = 0; k < nin; k++) {
        serve_io *io = &m->osig.in[k];
        snprintf(io->name, sizeof io->name, "%s", ts_onnx_input_name(m->onnx, k));
        io->ndim = ts_onnx_input_shape(m->onnx, k, &io->dtype, io->shape);
        int ok = io->ndim >= 1;
        for (int d = 1; ok && d < io->ndim; d++) ok = io->shape[d] >= 1;
        if (!ok)
            return ts_set_error(TS_ERR_ARG,
                                "model %s: input %s is not [batch, fixed dims...] (a dynamic dim after the "
                                "first, or no declared rank): tessera serve compiles each model once, at start",
                                path, io->name);
        int b = io->shape[0] >= 1 ? (int)io->shape[0] : max_batch;
        if (batch && b != batch)
            return ts_set_error(TS_ERR_ARG, "model %s: the inputs' first dims differ (%d, %d)", path, batch, b);
        batch = b;
    }
    m->osig.nin = nin, m->osig.batch = batch;
    return TS_OK;
}

/* The error that just failed, prefixed "model PATH: WHAT" (its status kept). */
static ts_status fail(const char *what, const char *path) {
    ts_status st = ts_last_status();
    return ts_set_error(st ? st : TS_ERR_RUNTIME, "model %s: %s%s", path, what, ts_last_error());
}

ts_status serve_onnx_load(serve_model *m, const char *path, const serve_opts *o) {
    if (!(m->onnx = ts_onnx_load(path))) return fail("", path);
    ts_status rc = read_sig(m, path, o->max_batch);
    if (rc) return rc;
    ts_compile_opts co = {.struct_size = sizeof co, .device = o->device, .num_threads = o->threads};
    if (!(m->sess = ts_onnx_session_new(m->onnx, &co))) return fail("", path);
    m->nout = ts_onnx_num_outputs(m->onnx);
    ts_tensor *in[SERVE_MAX_IO] = {0}, *out[SERVE_MAX_IO] = {0};
    if (zeros(m, in)) rc = ts_set_error(TS_ERR_NOMEM, "model %s: out of memory", path);
    if (!rc && ts_onnx_session_run(m->sess, (const ts_tensor *const *)in, out) != TS_OK) {
        char what[64];
        snprintf(what, sizeof what, "compiling for [%d, ...]: ", m->osig.batch);
        rc = fail(what, path);
    }
    for (int j = 0; !rc && j < m->nout; j++) {
        snprintf(m->out_name[j], sizeof m->out_name[j], "%s", ts_onnx_output_name(m->onnx, j));
        if (ts_tensor_ndim(out[j]) < 1 || ts_tensor_shape(out[j])[0] != m->osig.batch) m->one_job = 1;
    }
    free_all(in, m->osig.nin);
    free_all(out, m->nout);
    m->sig = (serve_sig){.max_batch = m->osig.batch};
    return rc;
}

void serve_onnx_free(serve_model *m) {
    ts_onnx_session_free(m->sess);
    ts_onnx_free(m->onnx);
}

/* Output o's rows [r0, r0 + rows) (or all of it, for a model run one job at a time) as a new tensor. */
static ts_tensor *rows_of(ts_tensor *o, int r0, int rows, int whole) {
    int nd = ts_tensor_ndim(o);
    int64_t dims[TS_MAX_DIMS];
    memcpy(dims, ts_tensor_shape(o), (size_t)nd * sizeof *dims);
    if (whole) return ts_tensor_from(ts_tensor_dtype(o), nd, dims, ts_tensor_data(o));
    size_t row = ts_tensor_nbytes(o) / (size_t)dims[0];
    dims[0] = rows;
    return ts_tensor_from(ts_tensor_dtype(o), nd, dims, (char *)ts_tensor_data(o) + row * (size_t)r0);
}

int serve_onnx_run(serve_model *m, serve_job **jobs, int n, int *ran) {
    ts_tensor *in[SERVE_MAX_IO] = {0}, *out[SERVE_MAX_IO] = {0};
    *ran = m->osig.batch;
    int rows = 0, fail = zeros(m, in);
    for (int q = 0; q < n && !fail; q++) { /* stack the jobs' rows */
        for (int k = 0; k < m->osig.nin; k++) {
            size_t row = ts_tensor_nbytes(in[k]) / (size_t)m->osig.batch;
            memcpy((char *)ts_tensor_data(in[k]) + row * (size_t)rows, ts_tensor_data(jobs[q]->tin[k]),
                   ts_tensor_nbytes(jobs[q]->tin[k]));
        }
        rows += jobs[q]->in.rows;
    }
    if (!fail) fail = ts_onnx_session_run(m->sess, (const ts_tensor *const *)in, out) != TS_OK;
    for (int q = 0, r = 0; q < n && !fail; r += jobs[q++]->in.rows)
        for (int j = 0; j < m->nout && !fail; j++)
            fail = !(jobs[q]->tout[j] = rows_of(out[j], r, jobs[q]->in.rows, m->one_job));
    for (int q = 0; q < n && fail; q++) {
        jobs[q]->code = 500;
        snprintf(jobs[q]->err, sizeof jobs[q]->err, "running the model: %s", ts_last_error());
    }
    free_all(in, m->osig.nin);
    free_all(out, m->nout);
    return rows;
}
