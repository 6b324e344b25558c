/*
 * ocl.h — what the files of the OpenCL plugin share (private to backends/opencl).
 *
 * The plugin (libtessera-opencl.so; exports only ts_backend_get_api, see exports.map):
 *   plugin.c    the entry, the ts_backend_api table, devices opencl:N (every OpenCL device of
 *               every platform, in order): one context and one in-order queue each
 *   memory.c    buffers (ts_buffer.mem is a cl_mem, offsets in bytes), blocking copies
 *   program.c   kernels/NAME.cl, embedded as one string at build time (embed.cmake), built once
 *               per device at its first compile with the op ids and sub-function numbers they
 *               switch on defined from tessera_ops.h; kernel objects cached by name; launch helpers
 *   exec.c      supports / compile / execute: the op table (the families' tables), per-node
 *               parameters made at compile, the run-time error slot read after each execute
 *   op_*.c      one family of ops each (elementwise, matmul on CLBlast, shape, rows, reduce,
 *               optim, conv, vision, layout, index, linalg): an ocl_op per op
 *   check_kernels.c  a tool (not installed): single-node plans through dlopen, by hand
 *
 * Adding an op: write its OpenCL C kernel in kernels/<family>.cl (a buffer is BUFARG(T, name): a
 * pointer and a byte offset; BUF(T, name) addresses it), and in op_<family>.c an ocl_op with
 * supports (1 only for the dtypes, attributes and shapes the kernel computes as the CPU does),
 * prep (optional: per-node parameters from shapes and attributes, once at compile), run (set the
 * arguments from plan->values' buffers, which may move between runs, and enqueue) and workspace
 * (optional: scratch bytes); list it in the family's table. Attributes are read only through
 * tessera_ops.h, the op contract: ts_attrs_<op>_of(node) decodes a node's i[] / f[] into named
 * fields, and the op ids (TS_OPID_*) and sub-functions (TS_MATH_*, ...) they hold are its
 * constants; never node->iattr[k] by index.
 */
#ifndef TS_OCL_H
#define TS_OCL_H

#include <CL/cl.h>
#include <stdint.h>
#include <string.h>

#include "tessera_ops.h" /* the op contract (includes tessera_plugin.h, the ABI) */

extern const ts_host_api *ocl_host;

#define OCL_MAX_KERNELS 128

/* One open device: its context, queue, the program built from the embedded kernels (at the first
 * compile), and the kernel objects made from it so far. */
typedef struct ocl_dev {
    int index;
    cl_platform_id platform;
    cl_device_id id;
    cl_context ctx;
    cl_command_queue queue;
    cl_program prog; /* NULL until the first compile */
    int nkernels;
    const char *knames[OCL_MAX_KERNELS];
    cl_kernel kernels[OCL_MAX_KERNELS];
    cl_mem err;      /* 4 ints: a kernel's run-time error (code, index, value, row) */
    char name[256];
    size_t global_mem, max_alloc;
} ocl_dev;

/* host->error with a printf format. */
#define OCL_ERR(code, ...) ts_host_errorf(ocl_host, (code), __VA_ARGS__)
/* A CL error code's name ("CL_OUT_OF_RESOURCES"). */
const char *ocl_errname(cl_int e);

/* plugin.c: the devices found across platforms. */
int ocl_find_devices(cl_platform_id *plat, cl_device_id *ids, int cap);

/* program.c */
ts_status ocl_build(ocl_dev *d);
/* The kernel called name (made on first use), NULL after an error naming it. */
cl_kernel ocl_kernel(ocl_dev *d, const char *name);

/* Argument helpers: each returns the next argument index, or -1 after the first failure (kept in
 * *st). A buffer is two arguments: the cl_mem (NULL allowed: an absent value) and its byte offset. */
typedef struct ocl_args {
    cl_kernel k;
    int i;
    cl_int st;
    const char *what;
} ocl_args;
void ocl_arg_buf(ocl_args *a, ts_buffer b);
void ocl_arg(ocl_args *a, size_t size, const void *p);
#define OCL_ARG(a, v) ocl_arg((a), sizeof(v), &(v))
/* Enqueue a 1-D launch of n work-items (n rounded up to the local size 64; kernels test their
 * global id against n). n == 0 does nothing. */
ts_status ocl_launch(ocl_dev *d, ocl_args *a, int64_t n);

/* The geometry of an elementwise op: up to 3 operands broadcast to out's shape (element strides,
 * 0 along broadcast dims), out contiguous. Same layout as kernels/common.cl's bc_t. */
typedef struct ocl_bc {
    int32_t nd, pad;
    int64_t n;
    int64_t shape[TS_MAX_DIMS];
    int64_t st[3][TS_MAX_DIMS];
} ocl_bc;
/* Operand k (0..nops-1) given as an abi value; out as an abi value. */
void ocl_bc_init(ocl_bc *b, const ts_abi_value *out, int nops, const ts_abi_value *const *ops);

int64_t ocl_numel(const ts_abi_value *v);
size_t ocl_dtype_size(ts_dtype t);
int ocl_same_shape(const ts_abi_value *a, const ts_abi_value *b);

/* One op the device runs: supports (values' buffers not set), prep (at compile: the node's
 * parameters into p, at most OCL_PARAM_BYTES), run (at execute). */
#define OCL_PARAM_BYTES 1024
typedef struct ocl_node_ctx {
    ocl_dev *d;
    const ts_abi_plan *plan;
    const ts_abi_node *n;
    void *p;          /* the node's parameters from prep */
    uint64_t step;
    ts_buffer workspace;
} ocl_node_ctx;
typedef struct ocl_op {
    const char *name;
    int (*supports)(const ts_abi_node *n, const ts_abi_value *v);
    ts_status (*prep)(ocl_dev *d, const ts_abi_node *n, const ts_abi_value *v, void *p);
    ts_status (*run)(ocl_node_ctx *c);
    size_t (*workspace)(const ts_abi_node *n, const ts_abi_value *v); /* optional: scratch bytes */
} ocl_op;

/* The value of input / output k of the node being run. */
static inline const ts_abi_value *ocl_in(const ocl_node_ctx *c, int k) {
    return c->n->in[k] >= 0 ? &c->plan->values[c->n->in[k]] : NULL;
}
static inline const ts_abi_value *ocl_out(const ocl_node_ctx *c, int k) {
    return &c->plan->values[c->n->out[k]];
}
static inline ts_buffer ocl_inbuf(const ocl_node_ctx *c, int k) {
    const ts_abi_value *v = k < c->n->nin ? ocl_in(c, k) : NULL;
    return v ? v->buf : (ts_buffer){0};
}
static inline ts_buffer ocl_outbuf(const ocl_node_ctx *c, int k) {
    return k < c->n->nout && c->n->out[k] >= 0 ? ocl_out(c, k)->buf : (ts_buffer){0};
}
/* Supports helpers: input k present and of dtype t; every input and output f32. */
int ocl_is(const ts_abi_node *n, const ts_abi_value *v, int k, ts_dtype t);
int ocl_all_f32(const ts_abi_node *n, const ts_abi_value *v);

/* The op tables of the families (op_*.c), NULL-name terminated. */
extern const ocl_op ocl_ops_elementwise[], ocl_ops_matmul[], ocl_ops_shape[], ocl_ops_rows[],
    ocl_ops_reduce[], ocl_ops_optim[], ocl_ops_conv[], ocl_ops_vision[],
    ocl_ops_layout[], ocl_ops_index[], ocl_ops_linalg[];

/* memory.c: zero / copy bytes on the device (enqueued). */
ts_status ocl_fill0(ocl_dev *d, ts_buffer b, size_t bytes);
ts_status ocl_copy(ocl_dev *d, ts_buffer dst, ts_buffer src, size_t bytes);
/* The plugin's memory entries (memory.c). */
size_t ocl_memory_bytes(void *dev);
size_t ocl_max_alloc(void *dev);
ts_status ocl_alloc(void *dev, size_t bytes, void **mem);
void ocl_free(void *dev, void *mem);
ts_status ocl_copy_to_device(void *dev, ts_buffer dst, const void *src, size_t bytes);
ts_status ocl_copy_to_host(void *dev, void *dst, ts_buffer src, size_t bytes);
ts_status ocl_copy_from_device(void *dev, ts_buffer dst, void *src_dev, ts_buffer src, size_t bytes);
ts_status ocl_synchronize(void *dev);
/* exec.c */
int ocl_supports(void *dev, const ts_abi_node *node, const ts_abi_value *values);
ts_status ocl_compile(void *dev, const ts_abi_plan *plan, size_t *workspace, void **exe);
ts_status ocl_execute(void *dev, void *exe, const ts_abi_plan *plan, ts_buffer workspace, uint64_t step);
void ocl_release(void *dev, void *exe);

#endif
