/*
 * registry.c — the importer's one op registry: the families' tables (map/<family>.c) read as one
 * list in which each ONNX op type is registered exactly once (an op whose mapping changes with
 * the opset dispatches on cx->opset itself, as Resize does); the lookup the importer makes per
 * node (onnx_find_op), the check that no op type is registered twice (onnx_registry_duplicate,
 * run by test_onnx_registry), and the public listing (ts_onnx_num_ops / ts_onnx_op_info) that
 * `tessera onnx-ops` prints into docs/onnx.md's table.
 *
 * Adding an op touches at most two places: its import function and its table entry go in its
 * family's file; a new family is a new file map/<family>.c plus its name in FAMILIES below.
 */
#include "onnx/map/map.h"
#include "onnx/onnx_testing.h"

/* The families, in the order ts_onnx_op_info lists them. */
#define FAMILIES(X) X(unary) X(binary) X(reduce) X(linalg) X(conv) X(resize) X(norm) X(shape) X(index) X(value) X(rnn) X(quant) X(loss) X(control)

#define DECLARE(f) extern const onnx_family onnx_family_##f;
FAMILIES(DECLARE)
#define REF(f) &onnx_family_##f,
static const onnx_family *const families[] = {FAMILIES(REF)};
#define NFAMILIES ((int)(sizeof families / sizeof *families))

/* Entry i of the families' tables read as one list, or NULL past the end. */
static const ts_onnx_op *entry(int i) {
    if (i < 0) return NULL;
    for (int f = 0; f < NFAMILIES; f++) {
        if (i < families[f]->n) return &families[f]->ops[i];
        i -= families[f]->n;
    }
    return NULL;
}

const ts_onnx_op *onnx_find_op(const char *op_type, int opset) {
    const ts_onnx_op *e;
    for (int i = 0; (e = entry(i)); i++)
        if (!strcmp(e->op_type, op_type) && e->since <= opset && opset <= e->until) return e;
    return NULL;
}

int onnx_known_op_type(const char *op_type) {
    const ts_onnx_op *e;
    for (int i = 0; (e = entry(i)); i++)
        if (!strcmp(e->op_type, op_type)) return 1;
    return 0;
}

const char *onnx_op_types_duplicate(const char *const *op_types, int n) {
    for (int i = 1; i < n; i++)
        for (int j = 0; j < i; j++)
            if (!strcmp(op_types[i], op_types[j])) return op_types[i];
    return NULL;
}

const char *onnx_registry_duplicate(void) {
    int n = ts_onnx_num_ops();
    const char *names[n > 0 ? n : 1];
    for (int i = 0; i < n; i++) names[i] = entry(i)->op_type;
    return onnx_op_types_duplicate(names, n);
}

int ts_onnx_num_ops(void) {
    int n = 0;
    for (int f = 0; f < NFAMILIES; f++) n += families[f]->n;
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
