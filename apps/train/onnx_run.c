/*
 * onnx_run.c — one inference of an ONNX model file on tensors read from a safetensors file
 * (tessera_tasks.h: ts_onnx_run_file, what `tessera run` does with an ONNX model): the inputs read
 * by the model's input names and converted to the declared dtype where no value changes meaning
 * (ts_tensor_convert_exact), one-element integer inputs fixed for the import
 * (ts_onnx_session_fix, so an If on them is folded), the model run `repeat` times, and every
 * output written by name to a safetensors file. The report keeps the outputs for the caller.
 */
#include "common/app.h"

#include <stdio.h>
#include <sys/stat.h>

/* The state of one run: what it holds until it ends. */
typedef struct onnx_run {
    const ts_onnx_run_opts *o;
    ts_onnx_run_report *r;
    ts_onnx *m;
    ts_onnx_session *s;
    ts_tensor **in;
    int nin;
} onnx_run;

/* Fail at stage `at` with the status already recorded (ts_last_status). */
static ts_status fail_at(onnx_run *x, int at) {
    x->r->failed_at = at;
    return ts_last_status() != TS_OK ? ts_last_status() : TS_ERR_RUNTIME;
}

/* "IN: no tensor "NAME" (the model M has the inputs A B)". */
static ts_status no_tensor(onnx_run *x, const char *name) {
    char list[1024] = "";
    size_t n = 0;
    for (int k = 0; k < x->nin && n < sizeof list; k++)
        n += (size_t)snprintf(list + n, sizeof list - n, " %s", ts_onnx_input_name(x->m, k));
    ts_set_error(TS_ERR_NOT_FOUND, "%s: no tensor \"%s\" (the model %s has the input%s%s)", x->o->inputs, name,
                 x->o->model, x->nin == 1 ? "" : "s", list);
    return fail_at(x, TS_ONNX_RUN_AT_INPUTS);
}

/* The model's inputs from o->inputs into x->in, each in its declared dtype. */
static ts_status read_inputs(onnx_run *x) {
    ts_safetensors *st = ts_safetensors_open(x->o->inputs);
    if (!st) return fail_at(x, TS_ONNX_RUN_AT_INPUTS_FILE);
    ts_status rc = TS_OK;
    for (int i = 0; i < x->nin && rc == TS_OK; i++) {
        const char *name = ts_onnx_input_name(x->m, i);
        ts_dtype want;
        ts_onnx_input_shape(x->m, i, &want, NULL);
        ts_tensor *t = NULL;
        ts_status g = ts_safetensors_get(st, name, &t);
        if (g == TS_ERR_NOT_FOUND) rc = no_tensor(x, name);
        else if (g != TS_OK) rc = fail_at(x, TS_ONNX_RUN_AT_INPUTS);
        if (rc != TS_OK) break;
        ts_tensor *c = ts_tensor_convert_exact(t, want);
        if (c != t) ts_tensor_free(t);
        if (!c) {
            ts_set_error(ts_last_status() != TS_OK ? ts_last_status() : TS_ERR_DTYPE, "%s: tensor \"%s\" %s",
                         x->o->inputs, name, ts_last_error());
            rc = fail_at(x, TS_ONNX_RUN_AT_INPUTS);
        }
        x->in[i] = c;
    }
    ts_safetensors_close(st);
    return rc;
}

/* The session compiled, its one-element integer inputs fixed. */
static ts_status open_session(onnx_run *x) {
    const ts_onnx_run_opts *o = x->o;
    x->s = ts_onnx_session_new(x->m, &(ts_compile_opts){.struct_size = sizeof(ts_compile_opts), .device = o->device,
                                                        .num_threads = o->threads, .memory_limit = o->memory_limit,
                                                        .quantize = o->quantize, .profile = o->profile != NULL});
    if (!x->s) return fail_at(x, TS_ONNX_RUN_AT_COMPILE);
    for (int i = 0; i < x->nin; i++) {
        ts_dtype dt = ts_tensor_dtype(x->in[i]);
        if (ts_tensor_numel(x->in[i]) == 1 && dt != TS_F32 && dt != TS_F16 && dt != TS_BF16 &&
            ts_onnx_session_fix(x->s, ts_onnx_input_name(x->m, i), x->in[i]) != TS_OK)
            return fail_at(x, TS_ONNX_RUN_AT_INPUTS);
    }
    return TS_OK;
}

/* Run repeat times (the first's seconds, the best of the others'), then write the outputs. */
static ts_status run_and_write(onnx_run *x) {
    ts_onnx_run_report *r = x->r;
    int repeat = x->o->repeat > 0 ? x->o->repeat : 1;
    for (int k = 0; k < repeat; k++) {
        for (int j = 0; j < r->noutputs; j++) ts_tensor_free(r->outputs[j]), r->outputs[j] = NULL;
        double r0 = ts_seconds();
        if (ts_onnx_session_run(x->s, (const ts_tensor *const *)x->in, r->outputs) != TS_OK)
            return fail_at(x, TS_ONNX_RUN_AT_RUN);
        double dt = ts_seconds() - r0;
        if (k == 0 && repeat > 1 && x->o->profile) ts_program_profile_reset(ts_onnx_session_program(x->s));
        if (k == 0) r->first_seconds = dt;
        else if (k == 1 || dt < r->best_seconds) r->best_seconds = dt;
    }
    if (x->o->profile &&
        ts_program_profile_report(ts_onnx_session_program(x->s), x->o->profile, x->o->profile_ctx) != TS_OK)
        return fail_at(x, TS_ONNX_RUN_AT_RUN);
    if (ts_safetensors_save(x->o->outputs, r->noutputs, (const char *const *)r->output_names,
                            (const ts_tensor *const *)r->outputs, "{\"format\": \"pt\"}") != TS_OK)
        return fail_at(x, TS_ONNX_RUN_AT_OUTPUTS);
    return TS_OK;
}

/* The model loaded and the report's arrays made. */
static ts_status load_model(onnx_run *x) {
    ts_onnx_run_report *r = x->r;
    double t0 = ts_seconds();
    x->m = ts_onnx_load(x->o->model);
    if (!x->m) return fail_at(x, TS_ONNX_RUN_AT_MODEL);
    r->load_seconds = ts_seconds() - t0;
    r->opset = ts_onnx_opset(x->m);
    x->nin = r->ninputs = ts_onnx_num_inputs(x->m);
    r->noutputs = ts_onnx_num_outputs(x->m);
    x->in = calloc((size_t)x->nin + 1, sizeof *x->in);
    r->outputs = calloc((size_t)r->noutputs + 1, sizeof *r->outputs);
    r->output_names = calloc((size_t)r->noutputs + 1, sizeof *r->output_names);
    for (int j = 0; r->output_names && j < r->noutputs; j++)
        if (!(r->output_names[j] = strdup(ts_onnx_output_name(x->m, j)))) {
            free(r->outputs), r->outputs = NULL;
            break;
        }
    if (!x->in || !r->outputs || !r->output_names) {
        ts_set_error(TS_ERR_NOMEM, "out of memory");
        return fail_at(x, TS_ONNX_RUN_AT_COMPILE);
    }
    return TS_OK;
}

int ts_onnx_model_path(const char *path) {
    struct stat st;
    size_t n = path ? strlen(path) : 0;
    if (n > 5 && !strcmp(path + n - 5, ".onnx")) return 1;
    return n && stat(path, &st) == 0 && !S_ISDIR(st.st_mode);
}

ts_status ts_onnx_run_file(const ts_onnx_run_opts *opts, ts_onnx_run_report *report) {
    if (!report) return ts_set_error(TS_ERR_ARG, "ts_onnx_run_file: report is NULL");
    ts_onnx_run_opts o;
    if (TS_STRUCT_READ(&o, opts, ts_onnx_run_opts, "ts_onnx_run_file")) return TS_ERR_ARG;
    if (!o.model || !o.inputs || !o.outputs)
        return ts_set_error(TS_ERR_ARG, "ts_onnx_run_file: model, inputs and outputs are required");
    ts_onnx_run_report r = {.struct_size = sizeof r};
    if (TS_STRUCT_WRITE(report, &r, ts_onnx_run_report, "ts_onnx_run_file")) return TS_ERR_ARG;
    onnx_run x = {.o = &o, .r = &r};
    ts_status st = load_model(&x);
    if (st == TS_OK) st = read_inputs(&x);
    if (st == TS_OK) st = open_session(&x);
    if (st == TS_OK) st = run_and_write(&x);
    ts_onnx_session_free(x.s);
    for (int i = 0; x.in && i < x.nin; i++) ts_tensor_free(x.in[i]);
    free(x.in);
    ts_onnx_free(x.m);
    TS_STRUCT_WRITE(report, &r, ts_onnx_run_report, "ts_onnx_run_file");
    return st;
}

void ts_onnx_run_report_free(ts_onnx_run_report *r) {
    if (!r) return;
    for (int j = 0; j < r->noutputs; j++) {
        if (r->outputs) ts_tensor_free(r->outputs[j]);
        if (r->output_names) free(r->output_names[j]);
    }
    free(r->outputs);
    free(r->output_names);
    r->outputs = NULL, r->output_names = NULL, r->noutputs = 0;
}
