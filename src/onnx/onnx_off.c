/*
 * onnx_off.c — the ONNX API (tessera_onnx.h) in a libtessera built without ONNX
 * (-DTS_WITH_ONNX=OFF, or AUTO without protoc-c, libprotobuf-c or onnx.proto): compiled instead
 * of the rest of src/onnx/, so that the library exports the same functions. Each one that could
 * do something fails with TS_ERR_UNSUPPORTED naming the option and the Debian packages; no model
 * or session can exist, so the queries answer as for NULL and the frees do nothing.
 */
#include "core/core.h"

#define ONNX_OFF "this libtessera was built without ONNX (configure with -DTS_WITH_ONNX=ON; needs " \
                 "protobuf-c-compiler libprotobuf-c-dev libonnx-dev)"

static ts_status off(const char *fn) { return ts_err(TS_ERR_UNSUPPORTED, "%s: " ONNX_OFF, fn); }

ts_onnx *ts_onnx_load(const char *path) {
    ts_err(TS_ERR_UNSUPPORTED, "ts_onnx_load: %s: " ONNX_OFF, path ? path : "(NULL)");
    return NULL;
}

ts_onnx *ts_onnx_load_bytes(const void *data, size_t n, const char *what) {
    (void)data, (void)n;
    ts_err(TS_ERR_UNSUPPORTED, "ts_onnx_load_bytes: %s: " ONNX_OFF, what ? what : "ONNX model");
    return NULL;
}

void ts_onnx_free(ts_onnx *m) { (void)m; }
int ts_onnx_opset(const ts_onnx *m) { return (void)m, -1; }
int ts_onnx_num_inputs(const ts_onnx *m) { return (void)m, 0; }
const char *ts_onnx_input_name(const ts_onnx *m, int i) { return (void)m, (void)i, NULL; }
int ts_onnx_input_shape(const ts_onnx *m, int i, ts_dtype *dtype, int64_t shape[TS_MAX_DIMS]) {
    (void)m, (void)i, (void)dtype, (void)shape;
    return -1;
}
int ts_onnx_num_outputs(const ts_onnx *m) { return (void)m, 0; }
const char *ts_onnx_output_name(const ts_onnx *m, int i) { return (void)m, (void)i, NULL; }
int ts_onnx_output_shape(const ts_onnx *m, int j, int *onnx_type, int64_t shape[TS_MAX_DIMS]) {
    if (onnx_type) *onnx_type = 0;
    return (void)m, (void)j, (void)shape, -1;
}

ts_status ts_onnx_import(const ts_onnx *m, ts_graph *g, const int *ndims, const int64_t *const *shapes,
                         const ts_onnx_import_opts *opts, ts_value *outs) {
    (void)m, (void)g, (void)ndims, (void)shapes, (void)opts, (void)outs;
    return off("ts_onnx_import");
}

ts_status ts_onnx_load_params(const ts_onnx *m, ts_program *p) { return (void)m, (void)p, off("ts_onnx_load_params"); }

ts_status ts_onnx_save_with_params(const ts_onnx *m, const ts_program *p, const char *path) {
    (void)m, (void)p, (void)path;
    return off("ts_onnx_save_with_params");
}

ts_onnx_session *ts_onnx_session_new(const ts_onnx *m, const ts_compile_opts *opts) {
    (void)m, (void)opts;
    off("ts_onnx_session_new");
    return NULL;
}

ts_status ts_onnx_session_run(ts_onnx_session *s, const ts_tensor *const *inputs, ts_tensor **outputs) {
    (void)s, (void)inputs, (void)outputs;
    return off("ts_onnx_session_run");
}

void ts_onnx_session_free(ts_onnx_session *s) { (void)s; }

ts_status ts_onnx_session_fix(ts_onnx_session *s, const char *input, const ts_tensor *value) {
    (void)s, (void)input, (void)value;
    return off("ts_onnx_session_fix");
}

ts_status ts_onnx_session_bind(ts_onnx_session *s, const char *output, const char *input) {
    (void)s, (void)output, (void)input;
    return off("ts_onnx_session_bind");
}

void ts_onnx_session_reset(ts_onnx_session *s) { (void)s; }

ts_program *ts_onnx_session_program(const ts_onnx_session *s) {
    (void)s;
    return NULL;
}

/* No importer: an empty op table. */
int ts_onnx_num_ops(void) { return 0; }

const char *ts_onnx_op_info(int i, int *since_opset, int *until_opset) {
    (void)since_opset, (void)until_opset;
    ts_err(TS_ERR_ARG, "ts_onnx_op_info: entry %d: the table is empty (" ONNX_OFF ")", i);
    return NULL;
}

ts_status ts_onnx_export(const ts_graph *g, const ts_program *p, int noutputs, const ts_value *outputs,
                         const char *path) {
    (void)g, (void)p, (void)noutputs, (void)outputs, (void)path;
    return off("ts_onnx_export");
}

ts_status ts_onnx_export_qdq(const ts_graph *g, const ts_program *p, int noutputs, const ts_value *outputs,
                             const ts_quant_scale *scales, int nscales, const char *path) {
    (void)g, (void)p, (void)noutputs, (void)outputs, (void)scales, (void)nscales, (void)path;
    return off("ts_onnx_export_qdq");
}

ts_status ts_onnx_export_dynamic_int8(const ts_graph *g, const ts_program *p, int noutputs,
                                      const ts_value *outputs, const char *path) {
    (void)g, (void)p, (void)noutputs, (void)outputs, (void)path;
    return off("ts_onnx_export_dynamic_int8");
}

ts_status ts_onnx_export_with(const ts_graph *g, const ts_program *p, int noutputs, const ts_value *outputs,
                              const ts_onnx_export_opts *opts, const char *path) {
    (void)g, (void)p, (void)noutputs, (void)outputs, (void)opts, (void)path;
    return off("ts_onnx_export_with");
}
