/* op_registry.c — the op table: op id -> definition (defined by the op family files of src/ops/),
 * built from ops.def. */
#include "graph/opdef.h"

static const ts_op_def *const table[TS_OP_COUNT] = {
#define TS_OP(ID, name) [TS_OP_##ID] = &ts_opdef_##name,
#include "graph/ops.def"
#undef TS_OP
};

const ts_op_def *ts_op_get(int op) {
    if (op < 0 || op >= TS_OP_COUNT) return NULL;
    return table[op];
}

int ts_op_find(const char *name) {
    for (int op = 0; name && op < TS_OP_COUNT; op++)
        if (!strcmp(table[op]->name, name)) return op;
    return -1;
}
