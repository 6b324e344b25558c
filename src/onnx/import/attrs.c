/*
 * attrs.c — a node's attributes for the op-mapping files: typed getters with defaults, each of
 * which marks the attribute read (the importer refuses a node that carries an attribute its
 * mapping never read), and a wrong type reported as an invalid node.
 */
#include "onnx/onnx_imp.h"

#include <stdio.h>

typedef Onnx__AttributeProto attr_t;

static const char *type_name(int t) {
    switch (t) {
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT: return "FLOAT";
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT: return "INT";
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING: return "STRING";
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR: return "TENSOR";
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH: return "GRAPH";
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS: return "FLOATS";
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS: return "INTS";
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS: return "STRINGS";
    default: return "another type";
    }
}

/* The attribute called name (marked read), or NULL. */
static const attr_t *find(ts_onnx_ctx *cx, const ts_onnx_node *n, const char *name) {
    for (size_t a = 0; a < n->n_attribute; a++)
        if (n->attribute[a]->name && !strcmp(n->attribute[a]->name, name)) {
            if (n == cx->node && a < 64) cx->attr_read |= (uint64_t)1 << a;
            return n->attribute[a];
        }
    return NULL;
}

/* The attribute when present with type `type` (ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__*); NULL
 * when absent, or after refusing the node when it has another type. Files of IR < 3 may leave
 * the type out: then the field that is set decides. */
static const attr_t *typed(ts_onnx_ctx *cx, const ts_onnx_node *n, const char *name, int type) {
    const attr_t *a = find(cx, n, name);
    if (!a) return NULL;
    if (!a->has_type || a->type == 0) return a;
    if ((int)a->type != type) {
        onnx_invalid(cx, n, "attribute '%s' is %s; it must be %s", name, type_name((int)a->type), type_name(type));
        return NULL;
    }
    return a;
}

int onnx_attr_has(ts_onnx_ctx *cx, const ts_onnx_node *n, const char *name) { return find(cx, n, name) != NULL; }

const Onnx__GraphProto *onnx_attr_graph(ts_onnx_ctx *cx, const ts_onnx_node *n, const char *name) {
    const attr_t *a = typed(cx, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH);
    return a ? a->g : NULL;
}

void onnx_attr_ignore(ts_onnx_ctx *cx, const ts_onnx_node *n, const char *name) { (void)find(cx, n, name); }

int64_t onnx_attr_int(ts_onnx_ctx *cx, const ts_onnx_node *n, const char *name, int64_t def) {
    const attr_t *a = typed(cx, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
    return a ? a->i : def;
}

float onnx_attr_float(ts_onnx_ctx *cx, const ts_onnx_node *n, const char *name, float def) {
    const attr_t *a = typed(cx, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT);
    return a ? a->f : def;
}

int onnx_attr_ints(ts_onnx_ctx *cx, const ts_onnx_node *n, const char *name, int64_t *out, int cap) {
    const attr_t *a = typed(cx, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
    if (!a) return -1;
    if (a->n_ints > (size_t)cap) {
        onnx_unsupported(cx, n, "attribute '%s' has %zu values; at most %d are supported", name, a->n_ints, cap);
        return -1;
    }
    for (size_t i = 0; i < a->n_ints; i++) out[i] = a->ints[i];
    return (int)a->n_ints;
}

int onnx_attr_floats(ts_onnx_ctx *cx, const ts_onnx_node *n, const char *name, float *out, int cap) {
    const attr_t *a = typed(cx, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS);
    if (!a) return -1;
    if (a->n_floats > (size_t)cap) {
        onnx_unsupported(cx, n, "attribute '%s' has %zu values; at most %d are supported", name, a->n_floats, cap);
        return -1;
    }
    for (size_t i = 0; i < a->n_floats; i++) out[i] = a->floats[i];
    return (int)a->n_floats;
}

const char *onnx_attr_string(ts_onnx_ctx *cx, const ts_onnx_node *n, const char *name, const char *def) {
    const attr_t *a = typed(cx, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);
    if (!a || !a->has_s) return def;
    char *s = onnx_own(cx, malloc(a->s.len + 1));
    if (!s) { /* out of memory (the context says so): the node is refused */
        onnx_unsupported(cx, n, "attribute '%s': out of memory", name);
        return def;
    }
    if (a->s.len) memcpy(s, a->s.data, a->s.len);
    s[a->s.len] = 0;
    if (strlen(s) != a->s.len) {
        onnx_invalid(cx, n, "attribute '%s' holds a NUL byte", name);
        return def;
    }
    return s;
}

const ts_tensor *onnx_attr_tensor(ts_onnx_ctx *cx, const ts_onnx_node *n, const char *name) {
    const attr_t *a = typed(cx, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR);
    if (!a) return NULL;
    if (!a->t) {
        onnx_invalid(cx, n, "attribute '%s' holds no tensor", name);
        return NULL;
    }
    char err[512];
    ts_tensor *t = onnx_tensor_decode(a->t, err, sizeof err);
    if (!t) {
        onnx_unsupported(cx, n, "attribute '%s': %s", name, err);
        return NULL;
    }
    return onnx_own_tensor(cx, t);
}

/* For the importer after a node: the first attribute the mapping never read, or NULL. */
const char *onnx_attr_unread(const ts_onnx_ctx *cx, const ts_onnx_node *n) {
    for (size_t a = 0; a < n->n_attribute; a++)
        if (a >= 64 || !(cx->attr_read >> a & 1)) return n->attribute[a]->name ? n->attribute[a]->name : "";
    return NULL;
}
