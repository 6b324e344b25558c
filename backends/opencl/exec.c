/*
 * exec.c — supports, compile and execute of the OpenCL plugin. The op table is the union of the
 * families' tables (op_*.c), looked up by the node's op name. Compile builds the device's
 * program (first time only), checks every node against its op's supports and runs its prep
 * (parameters from shapes and attributes, kept in the executable); execute runs every node's
 * enqueue in order, reading buffers from plan->values each time. Kernels that can find bad data
 * (an index out of range) record it in the device's error slot, read back once per execute.
 */
#include "ocl.h"

#include <stdlib.h>

static const ocl_op *const *families(void) {
    static const ocl_op *const f[] = {ocl_ops_elementwise, ocl_ops_matmul, ocl_ops_shape, ocl_ops_rows,
                                      ocl_ops_reduce, ocl_ops_optim, ocl_ops_conv,
                                      ocl_ops_vision, ocl_ops_layout, ocl_ops_index, ocl_ops_linalg,
                                      NULL};
    return f;
}

static const ocl_op *find_op(const char *name) {
    for (const ocl_op *const *f = families(); *f; f++)
        for (const ocl_op *o = *f; o->name; o++)
            if (strcmp(o->name, name) == 0) return o;
    return NULL;
}

int ocl_is(const ts_abi_node *n, const ts_abi_value *v, int k, ts_dtype t) {
    return k < n->nin && n->in[k] >= 0 && v[n->in[k]].dtype == t;
}

int ocl_all_f32(const ts_abi_node *n, const ts_abi_value *v) {
    for (int k = 0; k < n->nin; k++)
        if (n->in[k] >= 0 && v[n->in[k]].dtype != TS_F32) return 0;
    for (int k = 0; k < n->nout; k++)
        if (n->out[k] >= 0 && v[n->out[k]].dtype != TS_F32) return 0;
    return 1;
}

int64_t ocl_numel(const ts_abi_value *v) {
    int64_t n = 1;
    for (int i = 0; i < v->ndim; i++) n *= v->shape[i];
    return n;
}

size_t ocl_dtype_size(ts_dtype t) {
    switch (t) {
    case TS_F32: case TS_I32: return 4;
    case TS_BF16: case TS_F16: return 2;
    case TS_I64: return 8;
    case TS_U8: return 1;
    default: return 0;
    }
}

int ocl_same_shape(const ts_abi_value *a, const ts_abi_value *b) {
    return a->ndim == b->ndim && memcmp(a->shape, b->shape, sizeof(int64_t) * (size_t)a->ndim) == 0;
}

void ocl_bc_init(ocl_bc *b, const ts_abi_value *out, int nops, const ts_abi_value *const *ops) {
    memset(b, 0, sizeof *b);
    b->nd = out->ndim ? out->ndim : 1;
    for (int i = 0; i < b->nd; i++) b->shape[i] = out->ndim ? out->shape[i] : 1;
    b->n = ocl_numel(out);
    for (int k = 0; k < nops; k++) {
        int64_t s = 1;
        for (int i = b->nd - 1; i >= 0; i--) {
            int j = i - (b->nd - ops[k]->ndim);
            int64_t dk = j >= 0 ? ops[k]->shape[j] : 1;
            b->st[k][i] = dk == 1 ? 0 : s;
            s *= dk;
        }
    }
}

int ocl_supports(void *dev, const ts_abi_node *node, const ts_abi_value *values) {
    const ocl_op *o = find_op(node->op);
    return o && o->supports(node, values);
}

typedef struct ocl_exe {
    int nnodes;
    const ocl_op **ops;
    unsigned char *params; /* OCL_PARAM_BYTES per node */
} ocl_exe;

void ocl_release(void *dev, void *exe) {
    ocl_exe *x = exe;
    if (!x) return;
    free(x->ops);
    free(x->params);
    free(x);
}

ts_status ocl_compile(void *dev, const ts_abi_plan *plan, size_t *workspace, void **exe) {
    ocl_dev *d = dev;
    ts_status s = ocl_build(d);
    if (s) return s;
    ocl_exe *x = calloc(1, sizeof *x);
    if (x) x->ops = calloc((size_t)plan->nnodes + 1, sizeof *x->ops);
    if (x) x->params = calloc((size_t)plan->nnodes + 1, OCL_PARAM_BYTES);
    if (!x || !x->ops || !x->params) {
        ocl_release(d, x);
        return OCL_ERR(TS_ERR_NOMEM, "opencl: out of memory compiling a plan of %d nodes", plan->nnodes);
    }
    x->nnodes = plan->nnodes;
    size_t ws = 0;
    for (int i = 0; i < plan->nnodes; i++) {
        const ts_abi_node *n = &plan->nodes[i];
        const ocl_op *o = find_op(n->op);
        if (!o || !o->supports(n, plan->values)) {
            ocl_release(d, x);
            return OCL_ERR(TS_ERR_UNSUPPORTED, "opencl:%d: node %d, op %s: %s", d->index, i, n->op,
                           o ? "this case (dtypes, attributes or shapes) has no OpenCL kernel" : "no OpenCL kernel");
        }
        x->ops[i] = o;
        size_t w = o->workspace ? o->workspace(n, plan->values) : 0;
        ws = w > ws ? w : ws;
        s = o->prep ? o->prep(d, n, plan->values, x->params + (size_t)i * OCL_PARAM_BYTES) : TS_OK;
        if (s) {
            ocl_release(d, x);
            return s;
        }
    }
    *workspace = ws;
    *exe = x;
    return TS_OK;
}

/* The error slot: zeroed before a run, read after it; a kernel that found bad data wrote the
 * node's index + 1, where and what. */
static ts_status check_err(ocl_dev *d, const ts_abi_plan *plan) {
    cl_int e[4] = {0};
    cl_int st = clEnqueueReadBuffer(d->queue, d->err, CL_TRUE, 0, sizeof e, e, 0, NULL, NULL);
    if (st != CL_SUCCESS) return OCL_ERR(TS_ERR_RUNTIME, "opencl:%d: reading the error slot: %s", d->index, ocl_errname(st));
    if (!e[0]) return TS_OK;
    int ni = e[0] - 1;
    const char *op = ni >= 0 && ni < plan->nnodes ? plan->nodes[ni].op : "?";
    return OCL_ERR(TS_ERR_RUNTIME, "op %s (node %d): index %d at position %d is out of range", op, ni, e[2], e[1]);
}

ts_status ocl_execute(void *dev, void *exe, const ts_abi_plan *plan, ts_buffer workspace, uint64_t step) {
    ocl_dev *d = dev;
    ocl_exe *x = exe;
    static const cl_int zero[4] = {0};
    cl_int e = clEnqueueWriteBuffer(d->queue, d->err, CL_TRUE, 0, sizeof zero, zero, 0, NULL, NULL);
    if (e != CL_SUCCESS) return OCL_ERR(TS_ERR_RUNTIME, "opencl:%d: clearing the error slot: %s", d->index, ocl_errname(e));
    for (int i = 0; i < x->nnodes && i < plan->nnodes; i++) {
        ocl_node_ctx c = {d, plan, &plan->nodes[i], x->params + (size_t)i * OCL_PARAM_BYTES, step, workspace};
        uint64_t t0 = 0;
        if (plan->prof_ns) {
            clFinish(d->queue);
            t0 = ocl_host->now_ns();
        }
        ts_status s = x->ops[i]->run(&c);
        if (s) return s;
        if (plan->prof_ns) {
            clFinish(d->queue);
            plan->prof_ns[i] += ocl_host->now_ns() - t0;
            if (plan->prof_calls) plan->prof_calls[i]++;
        }
    }
    return check_err(d, plan);
}
