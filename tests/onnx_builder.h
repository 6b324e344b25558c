/*
 * onnx_builder.h — small ONNX models written as protobuf bytes inside a test, for the importer's
 * tests that need shapes no fixture file has (an If's branches, state carried across runs):
 * a growable byte buffer with the protobuf wire format's varints and length-delimited fields,
 * and one builder per ONNX message the tests use (ModelProto, GraphProto, NodeProto,
 * AttributeProto, TensorProto, ValueInfoProto), by the field numbers of onnx.proto.
 * Each builder returns a new buffer; ob_msg appends one as a field and frees it.
 * Everything is static: each test is one translation unit.
 */
#ifndef ONNX_BUILDER_H
#define ONNX_BUILDER_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct ob {
    uint8_t *b;
    size_t n, cap;
} ob;

enum { OB_FLOAT = 1, OB_INT32 = 6, OB_INT64 = 7, OB_BOOL = 9 }; /* TensorProto.DataType */

static void ob_raw(ob *p, const void *d, size_t n) {
    if (p->n + n > p->cap) {
        p->cap = (p->n + n) * 2 + 64;
        p->b = realloc(p->b, p->cap);
    }
    if (n) memcpy(p->b + p->n, d, n);
    p->n += n;
}

static void ob_varint(ob *p, uint64_t v) {
    uint8_t t[10];
    int k = 0;
    do t[k++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0)), v >>= 7; while (v);
    ob_raw(p, t, (size_t)k);
}

/* Field `f` as a varint / bytes / a string / a nested message (sub is freed). */
static void ob_int(ob *p, int f, int64_t v) { ob_varint(p, (uint64_t)f << 3), ob_varint(p, (uint64_t)v); }
static void ob_bytes(ob *p, int f, const void *d, size_t n) {
    ob_varint(p, (uint64_t)f << 3 | 2);
    ob_varint(p, n);
    ob_raw(p, d, n);
}
static void ob_str(ob *p, int f, const char *s) { ob_bytes(p, f, s, strlen(s)); }
static void ob_msg(ob *p, int f, ob sub) {
    ob_bytes(p, f, sub.b, sub.n);
    free(sub.b);
}

/* TensorProto: dims 1, data_type 2, name 8, raw_data 9 (data: numel elements, little endian). */
static ob ob_tensor(const char *name, int type, int nd, const int64_t *dims, const void *data) {
    ob t = {0};
    int64_t n = 1;
    for (int d = 0; d < nd; d++) ob_int(&t, 1, dims[d]), n *= dims[d];
    ob_int(&t, 2, type);
    if (name) ob_str(&t, 8, name);
    size_t es = type == OB_FLOAT || type == OB_INT32 ? 4 : type == OB_BOOL ? 1 : 8;
    ob_bytes(&t, 9, data, (size_t)n * es);
    return t;
}

/* ValueInfoProto: name 1, type 2 = TypeProto{tensor_type 1 = {elem_type 1, shape 2 = {dim 1 =
 * {dim_value 1 | dim_param 2}}}}; a dim < 0 is the symbolic "N". */
static ob ob_value(const char *name, int type, int nd, const int64_t *dims) {
    ob shape = {0}, tt = {0}, tp = {0}, v = {0};
    for (int d = 0; d < nd; d++) {
        ob dim = {0};
        if (dims[d] >= 0) ob_int(&dim, 1, dims[d]);
        else ob_str(&dim, 2, "N");
        ob_msg(&shape, 1, dim);
    }
    ob_int(&tt, 1, type);
    if (nd >= 0) ob_msg(&tt, 2, shape);
    else free(shape.b);
    ob_msg(&tp, 1, tt);
    ob_str(&v, 1, name);
    ob_msg(&v, 2, tp);
    return v;
}

/* AttributeProto: name 1, t 5, g 6, type 20 (TENSOR 4, GRAPH 5). */
static ob ob_attr_graph(const char *name, ob g) {
    ob a = {0};
    ob_str(&a, 1, name);
    ob_msg(&a, 6, g);
    ob_int(&a, 20, 5);
    return a;
}
static ob ob_attr_tensor(const char *name, ob t) {
    ob a = {0};
    ob_str(&a, 1, name);
    ob_msg(&a, 5, t);
    ob_int(&a, 20, 4);
    return a;
}

/* NodeProto: input 1, output 2, name 3, op_type 4, attribute 5. ins / outs: comma-separated
 * names ("" for none); up to two attributes (their .b NULL: none). */
static void ob_names(ob *p, int f, const char *list) {
    char buf[256];
    snprintf(buf, sizeof buf, "%s", list);
    for (char *s = buf, *e; *s; s = e) {
        e = strchr(s, ',');
        if (e) *e++ = 0;
        else e = s + strlen(s);
        ob_str(p, f, s);
    }
}
static ob ob_node(const char *op, const char *name, const char *ins, const char *outs, ob a1, ob a2) {
    ob n = {0};
    ob_names(&n, 1, ins);
    ob_names(&n, 2, outs);
    ob_str(&n, 3, name);
    ob_str(&n, 4, op);
    if (a1.b) ob_msg(&n, 5, a1);
    if (a2.b) ob_msg(&n, 5, a2);
    return n;
}
#define OB_NONE ((ob){0})
/* A Constant node: output = the tensor given. */
static ob ob_const(const char *out, int type, int nd, const int64_t *dims, const void *data) {
    return ob_node("Constant", out, "", out, ob_attr_tensor("value", ob_tensor(NULL, type, nd, dims, data)), OB_NONE);
}

/* GraphProto: node 1, name 2, initializer 5, input 11, output 12. nodes / inputs / outputs:
 * arrays of nn / ni / no buffers, freed. */
static ob ob_graph(const char *name, ob *nodes, int nn, ob *inputs, int ni, ob *outputs, int no) {
    ob g = {0};
    for (int i = 0; i < nn; i++) ob_msg(&g, 1, nodes[i]);
    ob_str(&g, 2, name);
    for (int i = 0; i < ni; i++) ob_msg(&g, 11, inputs[i]);
    for (int i = 0; i < no; i++) ob_msg(&g, 12, outputs[i]);
    return g;
}

/* ModelProto: ir_version 1, graph 7, opset_import 8 = {domain 1, version 2}. */
static ob ob_model(int opset, ob graph) {
    ob m = {0}, os = {0};
    ob_int(&m, 1, 8);
    ob_str(&os, 1, "");
    ob_int(&os, 2, opset);
    ob_msg(&m, 8, os);
    ob_msg(&m, 7, graph);
    return m;
}

#endif
