/*
 * save.c — ts_onnx_save_with_params: the loaded model written again with the values of the
 * parameters a program trained (initializers imported with trainable = 1) in place of the
 * file's. Each such initializer gets raw_data holding the parameter's bytes (its typed fields
 * cleared); the rest of the model is packed as it was read. Written atomically: a temporary file
 * in the same directory, flushed, then renamed over the path.
 */
#include "onnx/onnx_imp.h"

#include <stdio.h>

/* An initializer's data fields, saved to be put back after packing (m stays as loaded). */
typedef struct {
    Onnx__TensorProto *tp;
    Onnx__TensorProto saved;
    ts_tensor *value;
} swap;

ts_status ts_onnx_save_with_params(const ts_onnx *m, const ts_program *p, const char *path) {
    if (!m || !p || !path)
        return ts_err(TS_ERR_ARG, "ts_onnx_save_with_params: %s is NULL", !m ? "the model" : !p ? "the program" : "path");
    Onnx__GraphProto *gp = m->model->graph;
    swap *sw = calloc(gp->n_initializer + 1, sizeof *sw);
    if (!sw) return ts_err(TS_ERR_NOMEM, "%s: out of memory", path);
    int nsw = 0;
    ts_status s = TS_OK;
    for (size_t i = 0; i < gp->n_initializer && s == TS_OK; i++) {
        Onnx__TensorProto *tp = gp->initializer[i];
        ts_tensor *t = NULL;
        int is_param = 0;
        for (int k = 0, np = ts_program_num_params(p); k < np && !is_param; k++)
            is_param = !strcmp(ts_program_param_name(p, k), tp->name);
        if (!is_param) continue;
        if ((s = ts_program_get_param(p, tp->name, &t)) != TS_OK) break;
        sw[nsw] = (swap){.tp = tp, .saved = *tp, .value = t};
        nsw++;
        tp->has_raw_data = 1;
        tp->raw_data.data = t->data;
        tp->raw_data.len = ts_tensor_nbytes(t);
        tp->has_data_type = 1;
        tp->data_type = onnx_type_of(t->dtype);
        tp->n_float_data = tp->n_int32_data = tp->n_int64_data = tp->n_double_data = tp->n_uint64_data = 0;
    }
    uint8_t *buf = NULL;
    size_t len = 0;
    if (s == TS_OK) {
        len = onnx__model_proto__get_packed_size(m->model);
        buf = malloc(len ? len : 1);
        if (!buf) s = ts_err(TS_ERR_NOMEM, "%s: out of memory packing %zu bytes", path, len);
        else if (onnx__model_proto__pack(m->model, buf) != len) s = ts_err(TS_ERR_IO, "%s: packing the model failed", path);
    }
    for (int k = 0; k < nsw; k++) { /* m as it was */
        *sw[k].tp = sw[k].saved;
        ts_tensor_free(sw[k].value);
    }
    free(sw);
    if (s == TS_OK) s = ts_write_atomic(path, buf, len);
    free(buf);
    return s;
}
