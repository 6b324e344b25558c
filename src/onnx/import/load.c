/*
 * load.c — reading an ONNX model: the file's bytes parsed by protobuf-c's generated code, then
 * checked before anything is built: an IR version with opset imports (3 or later), the default
 * domain's opset within 9..17, a graph, every node's op type in the importer's table at that
 * opset and in the default domain (all refused nodes listed in one message), no sparse
 * initializers, and the graph inputs (those that are not initializers) with a tensor type
 * tessera has a dtype for and their declared shapes (dim_param or unknown dims as -1).
 */
#include "onnx/onnx_imp.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/stat.h>

/* The largest model read: protobuf's own limit for one message is 2 GiB. */
#define MAX_MODEL_BYTES ((size_t)2 << 30)

/* A growing "; "-joined list of messages, of which the first MAX_LISTED are kept. */
typedef struct {
    char *s;
    size_t len, cap;
    int n;
} msg_list;
#define MAX_LISTED 24

static void list_add(msg_list *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void list_add(msg_list *l, const char *fmt, ...) {
    if (l->n++ >= MAX_LISTED) return;
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    size_t add = strlen(buf) + 2;
    if (l->len + add + 1 > l->cap) {
        char *s = realloc(l->s, (l->len + add + 1) * 2);
        if (!s) return; /* out of memory: the list stops here (the count still counts it) */
        l->s = s, l->cap = (l->len + add + 1) * 2;
    }
    l->len += (size_t)snprintf(l->s + l->len, l->cap - l->len, "%s%s", l->len ? "; " : "", buf);
}

void ts_onnx_free(ts_onnx *m) {
    if (!m) return;
    if (m->model) onnx__model_proto__free_unpacked(m->model, NULL);
    free(m->what);
    free(m->inputs);
    free(m->in_dtype);
    free(m->in_ndim);
    free(m->in_shape);
    free(m->outputs);
    free(m);
}

static int is_default_domain(const char *d) { return !d || !*d || !strcmp(d, "ai.onnx"); }

/* The ai.onnx opset, or -1 (message recorded). */
static int find_opset(const Onnx__ModelProto *mp, const char *what) {
    int64_t v = -1;
    for (size_t i = 0; i < mp->n_opset_import; i++) {
        const Onnx__OperatorSetIdProto *o = mp->opset_import[i];
        if (is_default_domain(o->domain)) v = o->has_version ? o->version : -1;
    }
    if (v < 0 && mp->n_opset_import) { /* a model of other domains only (training ops, ML ops, ...) */
        char doms[256] = "";
        for (size_t i = 0; i < mp->n_opset_import && strlen(doms) < 200; i++)
            snprintf(doms + strlen(doms), sizeof doms - strlen(doms), "%s'%s'", i ? ", " : "",
                     mp->opset_import[i]->domain ? mp->opset_import[i]->domain : "");
        ts_err(TS_ERR_UNSUPPORTED, "%s: imports only the domains %s; tessera takes the default ONNX domain "
               "(ai.onnx)", what, doms);
        return -1;
    }
    if (v < 0) {
        ts_err(TS_ERR_IO, "%s: no opset_import for the default ONNX domain (ai.onnx)", what);
        return -1;
    }
    if (v < TS_ONNX_MIN_OPSET || v > TS_ONNX_MAX_OPSET) {
        ts_err(TS_ERR_UNSUPPORTED, "%s: opset %lld of ai.onnx; tessera imports opsets %d to %d (convert the model "
               "with onnx.version_converter)", what, (long long)v, TS_ONNX_MIN_OPSET, TS_ONNX_MAX_OPSET);
        return -1;
    }
    return (int)v;
}

/* Fill m->inputs / outputs and the inputs' declared types; 0, or -1 (message recorded). */
static int read_io(ts_onnx *m) {
    const Onnx__GraphProto *gp = m->model->graph;
    m->inputs = calloc(gp->n_input + 1, sizeof *m->inputs);
    m->in_dtype = calloc(gp->n_input + 1, sizeof *m->in_dtype);
    m->in_ndim = calloc(gp->n_input + 1, sizeof *m->in_ndim);
    m->in_shape = calloc(gp->n_input + 1, sizeof *m->in_shape);
    m->outputs = calloc(gp->n_output + 1, sizeof *m->outputs);
    if (!m->inputs || !m->in_dtype || !m->in_ndim || !m->in_shape || !m->outputs) {
        ts_err(TS_ERR_NOMEM, "%s: out of memory", m->what);
        return -1;
    }
    for (size_t i = 0; i < gp->n_input; i++) {
        const Onnx__ValueInfoProto *vi = gp->input[i];
        if (!vi->name || !*vi->name) {
            ts_err(TS_ERR_IO, "%s: graph input %zu has no name", m->what, i);
            return -1;
        }
        int is_init = 0;
        for (size_t j = 0; j < gp->n_initializer && !is_init; j++)
            is_init = gp->initializer[j]->name && !strcmp(gp->initializer[j]->name, vi->name);
        if (is_init) continue; /* IR < 4 lists initializers among the inputs too */
        const Onnx__TypeProto *tp = vi->type;
        if (!tp || tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !tp->tensor_type) {
            ts_err(TS_ERR_UNSUPPORTED, "%s: graph input '%s' is not a tensor (sequences, maps and optional "
                   "values are not supported)", m->what, vi->name);
            return -1;
        }
        const Onnx__TypeProto__Tensor *tt = tp->tensor_type;
        int32_t et = tt->has_elem_type ? tt->elem_type : 0;
        int k = m->ninputs;
        if (!onnx_dtype(et, &m->in_dtype[k])) {
            ts_err(TS_ERR_UNSUPPORTED, "%s: graph input '%s' has element type %s, which tessera has no dtype for",
                   m->what, vi->name, onnx_type_name(et));
            return -1;
        }
        if (!tt->shape) {
            m->in_ndim[k] = -1; /* rank unknown: shapes must be given at import */
        } else {
            if (tt->shape->n_dim > TS_MAX_DIMS) {
                ts_err(TS_ERR_UNSUPPORTED, "%s: graph input '%s' has rank %zu; tessera takes at most %d dims",
                       m->what, vi->name, tt->shape->n_dim, TS_MAX_DIMS);
                return -1;
            }
            m->in_ndim[k] = (int)tt->shape->n_dim;
            for (size_t d = 0; d < tt->shape->n_dim; d++) {
                const Onnx__TensorShapeProto__Dimension *dm = tt->shape->dim[d];
                int64_t v = dm->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE ? dm->dim_value : -1;
                m->in_shape[k][d] = v > 0 ? v : -1;
            }
        }
        m->inputs[m->ninputs++] = vi;
    }
    for (size_t i = 0; i < gp->n_output; i++) {
        if (!gp->output[i]->name || !*gp->output[i]->name) {
            ts_err(TS_ERR_IO, "%s: graph output %zu has no name", m->what, i);
            return -1;
        }
        m->outputs[m->noutputs++] = gp->output[i];
    }
    if (m->noutputs == 0) {
        ts_err(TS_ERR_IO, "%s: the graph has no outputs", m->what);
        return -1;
    }
    return 0;
}

/* Every node of graph gp and of its nodes' subgraphs (an If's branches) with an op known at the
 * opset and in the default domain, else listed in l; -1 for a malformed node (error set). */
static int check_graph(ts_onnx *m, const Onnx__GraphProto *gp, msg_list *l, int depth) {
    for (size_t i = 0; i < gp->n_node; i++) {
        const Onnx__NodeProto *n = gp->node[i];
        char d[300];
        if (!n->op_type || !*n->op_type) return ts_err(TS_ERR_IO, "%s: node %zu has no op_type", m->what, i), -1;
        onnx_node_desc(n, depth ? -1 : (int)i, d, sizeof d);
        for (size_t a = 0; a < n->n_attribute; a++)
            if (!n->attribute[a]->name || !*n->attribute[a]->name)
                return ts_err(TS_ERR_IO, "%s: %s has an attribute without a name", m->what, d), -1;
        if (!is_default_domain(n->domain))
            list_add(l, "%s: domain '%s' is not supported (only the default ai.onnx domain)", d, n->domain);
        else if (!onnx_find_op(n->op_type, m->opset))
            list_add(l, "%s: %s", d, onnx_known_op_type(n->op_type) ? "not supported at this opset" : "op not supported");
        for (size_t a = 0; a < n->n_attribute && depth < 64; a++)
            if (n->attribute[a]->g && check_graph(m, n->attribute[a]->g, l, depth + 1)) return -1;
    }
    return 0;
}

/* Every node's op known at the opset and in the default domain; 0, or -1 listing them all. */
static int check_nodes(ts_onnx *m) {
    msg_list l = {0};
    if (check_graph(m, m->model->graph, &l, 0)) {
        free(l.s);
        return -1;
    }
    if (l.n) {
        ts_err(TS_ERR_UNSUPPORTED, "%s (opset %d): %d node%s unsupported: %s%s", m->what, m->opset, l.n,
               l.n == 1 ? "" : "s", l.s ? l.s : "(out of memory listing them)", l.n > MAX_LISTED ? "; ..." : "");
        free(l.s);
        return -1;
    }
    return 0;
}

/* protobuf-c's allocations, with a note of one that failed: a message that does not parse for
 * want of memory is TS_ERR_NOMEM, not a malformed model. malloc / free: what
 * onnx__model_proto__free_unpacked(m, NULL) frees with. */
static void *pb_alloc(void *failed, size_t size) {
    void *p = malloc(size);
    if (!p) *(int *)failed = 1;
    return p;
}
static void pb_free(void *failed, void *p) {
    (void)failed;
    free(p);
}

ts_onnx *ts_onnx_load_bytes(const void *data, size_t n, const char *what) {
    if (!what) what = "ONNX model";
    if (!data && n) {
        ts_err(TS_ERR_ARG, "ts_onnx_load_bytes: data is NULL");
        return NULL;
    }
    if (n > MAX_MODEL_BYTES) {
        ts_err(TS_ERR_IO, "%s: %zu bytes; an ONNX model (a protobuf message) is at most 2 GiB", what, n);
        return NULL;
    }
    if (n == 0) {
        ts_err(TS_ERR_IO, "%s: empty, not an ONNX model", what);
        return NULL;
    }
    ts_onnx *m = calloc(1, sizeof *m);
    if (!m) {
        ts_err(TS_ERR_NOMEM, "%s: out of memory", what);
        return NULL;
    }
    if (!(m->what = strdup(what ? what : ""))) {
        ts_err(TS_ERR_NOMEM, "%s: out of memory", what);
        goto fail;
    }
    m->nbytes = n;
    if (!onnx_nesting_ok(data, n)) {
        ts_err(TS_ERR_IO, "%s: its graphs, attributes or types nest more than 64 levels deep; refused before "
               "parsing (not a model tessera reads)", what);
        goto fail;
    }
    int pb_failed = 0;
    ProtobufCAllocator pb = {pb_alloc, pb_free, &pb_failed};
    m->model = onnx__model_proto__unpack(&pb, n, data);
    if (!m->model && pb_failed) {
        ts_err(TS_ERR_NOMEM, "%s: out of memory parsing the model (%zu bytes)", what, n);
        goto fail;
    }
    if (!m->model) {
        ts_err(TS_ERR_IO, "%s: not an ONNX model (the protobuf message does not parse: truncated or not "
               "ONNX)", what);
        goto fail;
    }
    if (!m->model->has_ir_version || m->model->ir_version < 3) {
        ts_err(TS_ERR_IO, "%s: %s; tessera reads models of IR version 3 or later (with opset imports)", what,
               m->model->has_ir_version ? "IR version below 3" : "no IR version: not an ONNX model");
        goto fail;
    }
    if (!m->model->graph) {
        ts_err(TS_ERR_IO, "%s: no graph", what);
        goto fail;
    }
    if ((m->opset = find_opset(m->model, what)) < 0) goto fail;
    if (m->model->graph->n_sparse_initializer) {
        ts_err(TS_ERR_UNSUPPORTED, "%s: sparse initializers are not supported", what);
        goto fail;
    }
    for (size_t i = 0; i < m->model->graph->n_initializer; i++)
        if (!m->model->graph->initializer[i]->name || !*m->model->graph->initializer[i]->name) {
            ts_err(TS_ERR_IO, "%s: initializer %zu has no name", what, i);
            goto fail;
        }
    if (check_nodes(m) || read_io(m)) goto fail;
    return m;
fail:
    ts_onnx_free(m);
    return NULL;
}

ts_onnx *ts_onnx_load(const char *path) {
    if (!path) {
        ts_err(TS_ERR_ARG, "ts_onnx_load: path is NULL");
        return NULL;
    }
    struct stat st; /* a directory, a device, a pipe: refused before reading */
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
        ts_err(TS_ERR_IO, "%s: not a regular file", path);
        return NULL;
    }
    size_t n = 0;
    char *buf = ts_read_file_max(path, MAX_MODEL_BYTES, &n);
    if (!buf) {
        if (errno == EFBIG)
            ts_err(TS_ERR_IO, "%s: %lld bytes; an ONNX model (a protobuf message) is at most 2 GiB", path,
                   stat(path, &st) == 0 ? (long long)st.st_size : (long long)MAX_MODEL_BYTES + 1);
        return NULL;
    }
    ts_onnx *m = ts_onnx_load_bytes(buf, n, path);
    free(buf);
    return m;
}

int ts_onnx_opset(const ts_onnx *m) { return m ? m->opset : -1; }
int ts_onnx_num_inputs(const ts_onnx *m) { return m ? m->ninputs : 0; }
int ts_onnx_num_outputs(const ts_onnx *m) { return m ? m->noutputs : 0; }

const char *ts_onnx_input_name(const ts_onnx *m, int i) {
    return m && i >= 0 && i < m->ninputs ? m->inputs[i]->name : NULL;
}
const char *ts_onnx_output_name(const ts_onnx *m, int i) {
    return m && i >= 0 && i < m->noutputs ? m->outputs[i]->name : NULL;
}

int ts_onnx_input_shape(const ts_onnx *m, int i, ts_dtype *dtype, int64_t shape[TS_MAX_DIMS]) {
    if (!m || i < 0 || i >= m->ninputs) return -1;
    if (dtype) *dtype = m->in_dtype[i];
    if (shape) memcpy(shape, m->in_shape[i], sizeof(int64_t) * TS_MAX_DIMS);
    return m->in_ndim[i];
}

int ts_onnx_output_shape(const ts_onnx *m, int j, int *onnx_type, int64_t shape[TS_MAX_DIMS]) {
    if (onnx_type) *onnx_type = 0;
    if (!m || j < 0 || j >= m->noutputs) return -1;
    const Onnx__TypeProto *tp = m->outputs[j]->type;
    if (!tp || tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !tp->tensor_type) return -1;
    const Onnx__TypeProto__Tensor *tt = tp->tensor_type;
    if (onnx_type) *onnx_type = tt->has_elem_type ? tt->elem_type : 0;
    if (!tt->shape || tt->shape->n_dim > TS_MAX_DIMS) return -1;
    for (size_t d = 0; d < tt->shape->n_dim && shape; d++) {
        const Onnx__TensorShapeProto__Dimension *dm = tt->shape->dim[d];
        int64_t v = dm->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE ? dm->dim_value : -1;
        shape[d] = v > 0 ? v : -1;
    }
    return (int)tt->shape->n_dim;
}

int onnx_num_nodes(const ts_onnx *m) { return m ? (int)m->model->graph->n_node : 0; }
const char *onnx_node_op_type(const ts_onnx *m, int i) {
    return m && i >= 0 && (size_t)i < m->model->graph->n_node ? m->model->graph->node[i]->op_type : NULL;
}
