/*
 * table.c — the importer's op table: the mapping files' tables (core, shape, vision, extra) read as one
 * list, first match wins; and the public listing of it (ts_onnx_num_ops / ts_onnx_op_info) that
 * `tessera onnx-ops` prints into README's table.
 */
#include "onnx/onnx_imp.h"

typedef struct {
    const ts_onnx_op *ops;
    const int *n;
} table_ref;

static const table_ref tables[] = {
    {ts_onnx_ops_core, &ts_onnx_ops_core_n},
    {ts_onnx_ops_shape, &ts_onnx_ops_shape_n},
    {ts_onnx_ops_vision, &ts_onnx_ops_vision_n},
    {ts_onnx_ops_extra, &ts_onnx_ops_extra_n},
};
#define NTABLES ((int)(sizeof tables / sizeof *tables))

/* Entry i of the concatenated tables, or NULL past the end. */
static const ts_onnx_op *entry(int i) {
    if (i < 0) return NULL;
    for (int t = 0; t < NTABLES; t++) {
        if (i < *tables[t].n) return &tables[t].ops[i];
        i -= *tables[t].n;
    }
    return NULL;
}

const ts_onnx_op *onnx_find_op(const char *op_type, int opset) {
    const ts_onnx_op *e;
    for (int i = 0; (e = entry(i)); i++)
        if (e->op_type && !strcmp(e->op_type, op_type) && e->since <= opset && opset <= e->until) return e;
    return NULL;
}

int onnx_known_op_type(const char *op_type) {
    const ts_onnx_op *e;
    for (int i = 0; (e = entry(i)); i++)
        if (e->op_type && !strcmp(e->op_type, op_type)) return 1;
    return 0;
}

int ts_onnx_num_ops(void) {
    int n = 0;
    for (int t = 0; t < NTABLES; t++) n += *tables[t].n;
    return n;
}

const char *ts_onnx_op_info(int i, int *since_opset, int *until_opset) {
    const ts_onnx_op *e = entry(i);
    if (!e) {
        ts_err(TS_ERR_ARG, "ts_onnx_op_info: entry %d is outside 0..%d", i, ts_onnx_num_ops() - 1);
        return NULL;
    }
    if (since_opset) *since_opset = e->since;
    if (until_opset) *until_opset = e->until;
    return e->op_type;
}
