/*
 * export_pb.c — the ModelProto builder of the ONNX exporter (export_pb.h): messages, strings and
 * tensors allocated in an arena the builder frees at the end, graph lists grown as nodes are
 * appended, and the packed model written atomically.
 */
#include "onnx/export/export_pb.h"
#include "onnx/onnx_imp.h" /* onnx_type_of */

#include <stdio.h>

/* ------------------------------------------------------------------ arena */

/* calloc'd memory owned by the builder; NULL (and b->oom) when memory runs out. */
static void *own(ts_ox *b, size_t bytes) {
    if (b->oom) return NULL;
    if (b->nowned == b->cap_owned) {
        size_t cap = b->cap_owned ? 2 * b->cap_owned : 256;
        void **p = realloc(b->owned, cap * sizeof *p);
        if (!p) return b->oom = 1, NULL;
        b->owned = p;
        b->cap_owned = cap;
    }
    void *m = calloc(1, bytes ? bytes : 1);
    if (!m) return b->oom = 1, NULL;
    return b->owned[b->nowned++] = m;
}

/* Append item to a growable array of pointers. 0, or -1 when memory runs out. */
static int push(ts_ox *b, void ***arr, size_t *n, size_t *cap, void *item) {
    if (b->oom || !item) return b->oom = 1, -1;
    if (*n == *cap) {
        size_t c = *cap ? 2 * *cap : 64;
        void **p = realloc(*arr, c * sizeof *p);
        if (!p) return b->oom = 1, -1;
        *arr = p;
        *cap = c;
    }
    (*arr)[(*n)++] = item;
    return 0;
}
#define PUSH(b, field, item) push(b, (void ***)&(b)->field, &(b)->n##field, &(b)->cap_##field, item)

void ts_ox_init(ts_ox *b, const ts_graph *g) {
    memset(b, 0, sizeof *b);
    b->g = g;
}

void ts_ox_free(ts_ox *b) {
    for (size_t i = 0; i < b->nowned; i++) free(b->owned[i]);
    for (size_t i = 0; i < b->ntensors; i++) ts_tensor_free(b->tensors[i]);
    free(b->owned);
    free(b->tensors);
    free(b->nodes);
    free(b->inits);
    free(b->inputs);
    free(b->outputs);
    free(b->fbits);
    free(b->fnames);
    memset(b, 0, sizeof *b);
}

char *ts_ox_str(ts_ox *b, const char *s) {
    size_t n = strlen(s);
    char *c = own(b, n + 1);
    if (c) memcpy(c, s, n + 1);
    return c;
}

char *ts_ox_fresh(ts_ox *b, const char *stem) {
    char buf[160];
    do snprintf(buf, sizeof buf, "_ts_%s_%u", stem, b->fresh++);
    while (b->g && ts_lookup(b->g, buf) != TS_NONE);
    return ts_ox_str(b, buf);
}

/* ------------------------------------------------------------------ nodes and attributes */

Onnx__NodeProto *ts_ox_node(ts_ox *b, const char *op_type, int nin, const char *const *in, int nout,
                            const char *const *out) {
    Onnx__NodeProto *n = own(b, sizeof *n);
    char **ins = own(b, sizeof(char *) * (size_t)(nin > 0 ? nin : 1));
    char **outs = own(b, sizeof(char *) * (size_t)(nout > 0 ? nout : 1));
    if (!n || !ins || !outs) return NULL;
    onnx__node_proto__init(n);
    for (int i = 0; i < nin; i++) ins[i] = ts_ox_str(b, in[i] ? in[i] : "");
    for (int i = 0; i < nout; i++) outs[i] = ts_ox_str(b, out[i]);
    n->n_input = (size_t)nin;
    n->input = ins;
    n->n_output = (size_t)nout;
    n->output = outs;
    n->op_type = ts_ox_str(b, op_type);
    n->name = nout > 0 ? outs[0] : n->op_type;
    if (b->oom || PUSH(b, nodes, n)) return NULL;
    return n;
}

Onnx__NodeProto *ts_ox_node1(ts_ox *b, const char *op_type, const char *x, const char *out) {
    return ts_ox_node(b, op_type, 1, &x, 1, &out);
}

Onnx__NodeProto *ts_ox_node2(ts_ox *b, const char *op_type, const char *x, const char *y, const char *out) {
    const char *in[2] = {x, y};
    return ts_ox_node(b, op_type, 2, in, 1, &out);
}

static Onnx__AttributeProto *attr(ts_ox *b, Onnx__NodeProto *n, const char *name,
                                  Onnx__AttributeProto__AttributeType type) {
    if (!n) return NULL;
    Onnx__AttributeProto *a = own(b, sizeof *a);
    Onnx__AttributeProto **list = own(b, sizeof *list * (n->n_attribute + 1));
    if (!a || !list) return NULL;
    onnx__attribute_proto__init(a);
    a->name = ts_ox_str(b, name);
    a->has_type = 1;
    a->type = type;
    if (n->n_attribute) memcpy(list, n->attribute, sizeof *list * n->n_attribute);
    list[n->n_attribute++] = a; /* the old list stays in the arena until the end */
    n->attribute = list;
    return a;
}

void ts_ox_attr_int(ts_ox *b, Onnx__NodeProto *n, const char *name, int64_t v) {
    Onnx__AttributeProto *a = attr(b, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
    if (a) a->has_i = 1, a->i = v;
}

void ts_ox_attr_float(ts_ox *b, Onnx__NodeProto *n, const char *name, float v) {
    Onnx__AttributeProto *a = attr(b, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT);
    if (a) a->has_f = 1, a->f = v;
}

void ts_ox_attr_ints(ts_ox *b, Onnx__NodeProto *n, const char *name, int count, const int64_t *v) {
    Onnx__AttributeProto *a = attr(b, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
    int64_t *copy = own(b, sizeof(int64_t) * (size_t)(count > 0 ? count : 1));
    if (!a || !copy) return;
    if (count) memcpy(copy, v, sizeof(int64_t) * (size_t)count);
    a->n_ints = (size_t)count;
    a->ints = copy;
}

/* ------------------------------------------------------------------ initializers */

/* A TensorProto named `name` of this dtype and shape whose raw_data is `data` (not copied). */
/* An initializer of ONNX data type `type` (elements of `esize` bytes) whose raw data is `data`. */
static void add_init_raw(ts_ox *b, const char *name, int32_t type, size_t esize, int ndim, const int64_t *shape,
                         const void *data) {
    Onnx__TensorProto *t = own(b, sizeof *t);
    int64_t *dims = own(b, sizeof(int64_t) * (size_t)(ndim > 0 ? ndim : 1));
    if (!t || !dims) return;
    onnx__tensor_proto__init(t);
    if (ndim > 0) memcpy(dims, shape, sizeof(int64_t) * (size_t)ndim);
    t->n_dims = (size_t)ndim;
    t->dims = dims;
    t->has_data_type = 1;
    t->data_type = type;
    t->name = ts_ox_str(b, name);
    t->has_raw_data = 1;
    t->raw_data.len = (size_t)ts_numel(ndim, shape) * esize;
    t->raw_data.data = (uint8_t *)data;
    PUSH(b, inits, t);
}

static void add_init(ts_ox *b, const char *name, ts_dtype dtype, int ndim, const int64_t *shape, const void *data) {
    add_init_raw(b, name, onnx_type_of(dtype), ts_dtype_size(dtype), ndim, shape, data);
}

void ts_ox_init_copy(ts_ox *b, const char *name, ts_dtype dtype, int ndim, const int64_t *shape, const void *data) {
    size_t bytes = (size_t)ts_numel(ndim, shape) * ts_dtype_size(dtype);
    void *copy = own(b, bytes);
    if (!copy) return;
    if (bytes) memcpy(copy, data, bytes);
    add_init(b, name, dtype, ndim, shape, copy);
}

void ts_ox_init_i8(ts_ox *b, const char *name, int ndim, const int64_t *shape, const int8_t *data) {
    size_t bytes = (size_t)ts_numel(ndim, shape);
    void *copy = own(b, bytes ? bytes : 1);
    if (!copy) return;
    if (bytes) memcpy(copy, data, bytes);
    add_init_raw(b, name, ONNX__TENSOR_PROTO__DATA_TYPE__INT8, 1, ndim, shape, copy);
}

void ts_ox_init_take(ts_ox *b, const char *name, ts_tensor *t) {
    if (PUSH(b, tensors, t)) { /* not taken: out of memory */
        ts_tensor_free(t);
        return;
    }
    add_init(b, name, t->dtype, t->ndim, t->shape, t->data);
}

const char *ts_ox_const_f32(ts_ox *b, float v) {
    uint32_t bits;
    memcpy(&bits, &v, 4);
    for (size_t i = 0; i < b->nf; i++)
        if (b->fbits[i] == bits) return b->fnames[i];
    if (b->oom) return NULL;
    if (b->nf == b->cap_f) {
        size_t cap = b->cap_f ? 2 * b->cap_f : 16;
        uint32_t *nb = realloc(b->fbits, cap * sizeof *nb);
        if (nb) b->fbits = nb;
        char **nn = realloc(b->fnames, cap * sizeof *nn);
        if (nn) b->fnames = nn;
        if (!nb || !nn) return b->oom = 1, NULL;
        b->cap_f = cap;
    }
    char *name = ts_ox_fresh(b, "const");
    if (!name) return NULL;
    ts_ox_init_copy(b, name, TS_F32, 0, NULL, &v);
    b->fbits[b->nf] = bits;
    b->fnames[b->nf++] = name;
    return name;
}

const char *ts_ox_const_i64s(ts_ox *b, int n, const int64_t *v) {
    char *name = ts_ox_fresh(b, "ints");
    if (name) ts_ox_init_copy(b, name, TS_I64, 1, (int64_t[]){n}, v);
    return name;
}

/* ------------------------------------------------------------------ inputs and outputs */

static Onnx__ValueInfoProto *value_info(ts_ox *b, const char *name, ts_dtype dtype, int ndim, const int64_t *shape) {
    Onnx__ValueInfoProto *vi = own(b, sizeof *vi);
    Onnx__TypeProto *tp = own(b, sizeof *tp);
    Onnx__TypeProto__Tensor *tt = own(b, sizeof *tt);
    Onnx__TensorShapeProto *sp = own(b, sizeof *sp);
    Onnx__TensorShapeProto__Dimension **dims = own(b, sizeof *dims * (size_t)(ndim > 0 ? ndim : 1));
    if (!vi || !tp || !tt || !sp || !dims) return NULL;
    onnx__value_info_proto__init(vi);
    onnx__type_proto__init(tp);
    onnx__type_proto__tensor__init(tt);
    onnx__tensor_shape_proto__init(sp);
    for (int i = 0; i < ndim; i++) {
        Onnx__TensorShapeProto__Dimension *d = own(b, sizeof *d);
        if (!d) return NULL;
        onnx__tensor_shape_proto__dimension__init(d);
        if (shape[i] < 0) { /* a dynamic dim: the first one is the batch (ts_onnx_export_opts.dynamic_batch) */
            d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
            d->dim_param = ts_ox_str(b, i == 0 ? "batch" : "dim");
        } else {
            d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
            d->dim_value = shape[i];
        }
        dims[i] = d;
    }
    sp->n_dim = (size_t)ndim;
    sp->dim = dims;
    tt->has_elem_type = 1;
    tt->elem_type = onnx_type_of(dtype);
    tt->shape = sp;
    tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    tp->tensor_type = tt;
    vi->name = ts_ox_str(b, name);
    vi->type = tp;
    return vi;
}

void ts_ox_input(ts_ox *b, const char *name, ts_dtype dtype, int ndim, const int64_t *shape) {
    PUSH(b, inputs, value_info(b, name, dtype, ndim, shape));
}

void ts_ox_output(ts_ox *b, const char *name, ts_dtype dtype, int ndim, const int64_t *shape) {
    PUSH(b, outputs, value_info(b, name, dtype, ndim, shape));
}

/* ------------------------------------------------------------------ the file */

ts_status ts_ox_write(ts_ox *b, int opset, const char *path) {
    Onnx__ModelProto model;
    Onnx__GraphProto graph;
    Onnx__OperatorSetIdProto op;
    Onnx__OperatorSetIdProto *ops[1] = {&op};
    onnx__model_proto__init(&model);
    onnx__graph_proto__init(&graph);
    onnx__operator_set_id_proto__init(&op);
    op.domain = ts_ox_str(b, "");
    op.has_version = 1;
    op.version = opset;
    graph.name = ts_ox_str(b, "tessera");
    model.producer_name = ts_ox_str(b, "tessera");
    model.producer_version = ts_ox_str(b, "0.1.0");
    if (b->oom) return ts_err(TS_ERR_NOMEM, "ts_onnx_export: %s: out of memory building the model", path);
    graph.n_node = b->nnodes;
    graph.node = b->nodes;
    graph.n_initializer = b->ninits;
    graph.initializer = b->inits;
    graph.n_input = b->ninputs;
    graph.input = b->inputs;
    graph.n_output = b->noutputs;
    graph.output = b->outputs;
    model.has_ir_version = 1;
    model.ir_version = 8; /* the IR version of opset 17 (ONNX 1.12) */
    model.n_opset_import = 1;
    model.opset_import = ops;
    model.graph = &graph;
    size_t n = onnx__model_proto__get_packed_size(&model);
    if (n > (size_t)INT32_MAX)
        return ts_err(TS_ERR_UNSUPPORTED, "ts_onnx_export: %s: the model is %zu bytes, above protobuf's 2 GB limit "
                      "for one file (external data is not supported)", path, n);
    uint8_t *buf = malloc(n ? n : 1);
    if (!buf) return ts_err(TS_ERR_NOMEM, "ts_onnx_export: %s: out of memory for %zu bytes", path, n);
    onnx__model_proto__pack(&model, buf);
    ts_status s = ts_write_atomic(path, buf, n);
    free(buf);
    return s;
}
