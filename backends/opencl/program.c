/*
 * program.c — the OpenCL program of a device: every kernels/NAME.cl file, embedded at build time as
 * ts_ocl_source, built once per device at its first compile (PoCL and most drivers keep their
 * own disk cache of binaries), and kernel objects made from it on first use, cached by name.
 * The kernels are built with the op ids and sub-function numbers they switch on defined from
 * tessera_ops.h (build_options), so they name them as the host does (OP_GELU, TS_MATH_ERF).
 * Also the launch helpers: arguments set one by one, a 1-D range rounded up to whole groups.
 */
#include "ocl.h"

#include <stdio.h>
#include <stdlib.h>

extern const char ts_ocl_source[];

#define OCL_STR_(x) #x
#define OCL_STR(x) OCL_STR_(x)
/* -DOP_<NAME>=<id>: an op id the kernels switch on (00_common.cl's unary_f, vision.cl's hard_act),
 * this build's TS_OPID_<NAME> of tessera_ops.h, the value attributes that name an op hold. */
#define OCL_OPID(NAME) " -DOP_" #NAME "=" OCL_STR(TS_OPID_##NAME)

/* OpenCL C 1.2 and the op ids the kernels switch on. */
static const char opid_options[] = "-cl-std=CL1.2" OCL_OPID(SCALE) OCL_OPID(SQRT) OCL_OPID(EXP) OCL_OPID(LOG)
    OCL_OPID(RELU) OCL_OPID(TANH) OCL_OPID(SIGMOID) OCL_OPID(GELU) OCL_OPID(CLIP) OCL_OPID(HARD_SIGMOID)
    OCL_OPID(HARD_SWISH);

/* The sub-function sets the kernels switch on, each by the prefix of its constants and
 * tessera_ops.h's function naming its numbers: the kernels see TS_MATH_ERF, TS_BIN_FMOD, ... as
 * the host does (the prefix and the upper-cased name make the constant's name). */
static const struct {
    const char *prefix;
    const char *(*name)(int64_t v);
} subfns[] = {
    {"TS_MATH_", ts_ops_math_fn_name},         {"TS_BIN_", ts_ops_binop_name},
    {"TS_PRED_", ts_ops_predicate_fn_name},    {"TS_MATMUL_ACT_", ts_ops_matmul_act_name},
    {"TS_SCATTER_", ts_ops_scatter_reduce_name}, {"TS_REDUCE_", ts_ops_reduction_name},
    {"TS_PAD_", ts_ops_pad_mode_name},         {"TS_GRID_", ts_ops_grid_mode_name},
    {"TS_GRID_", ts_ops_grid_padding_name},    {"TS_TFIDF_", ts_ops_tfidf_mode_name},
};

/* The kernels' build options: opid_options and -D<prefix><NAME>=<v> for every sub-function;
 * NULL when out of memory (the caller frees it). */
static char *build_options(void) {
    size_t cap = sizeof opid_options + 4096, len = sizeof opid_options - 1;
    char *o = malloc(cap);
    if (!o) return NULL;
    memcpy(o, opid_options, sizeof opid_options);
    for (size_t k = 0; k < sizeof subfns / sizeof subfns[0]; k++)
        for (int64_t v = 0; subfns[k].name(v); v++) {
            char def[96];
            int n = snprintf(def, sizeof def, " -D%s%s=%d", subfns[k].prefix, subfns[k].name(v), (int)v);
            if (n < 0 || (size_t)n >= sizeof def || len + (size_t)n >= cap) {
                free(o);
                return NULL;
            }
            for (char *c = def; *c; c++) *c = *c >= 'a' && *c <= 'z' ? (char)(*c - 32) : *c;
            memcpy(o + len, def, (size_t)n + 1);
            len += (size_t)n;
        }
    return o;
}

ts_status ocl_build(ocl_dev *d) {
    if (d->prog) return TS_OK;
    cl_int e;
    const char *src = ts_ocl_source;
    cl_program p = clCreateProgramWithSource(d->ctx, 1, &src, NULL, &e);
    if (e != CL_SUCCESS)
        return OCL_ERR(TS_ERR_RUNTIME, "opencl:%d: clCreateProgramWithSource failed: %s", d->index, ocl_errname(e));
    char *opts = build_options();
    if (!opts) {
        clReleaseProgram(p);
        return OCL_ERR(TS_ERR_NOMEM, "opencl:%d: out of host memory for the build options", d->index);
    }
    e = clBuildProgram(p, 1, &d->id, opts, NULL, NULL);
    free(opts);
    if (e != CL_SUCCESS) {
        char log[2048] = "";
        clGetProgramBuildInfo(p, d->id, CL_PROGRAM_BUILD_LOG, sizeof log - 1, log, NULL);
        clReleaseProgram(p);
        return OCL_ERR(TS_ERR_RUNTIME, "opencl:%d (%s): building the kernels failed: %s\n%s", d->index, d->name,
                       ocl_errname(e), log);
    }
    d->prog = p;
    return TS_OK;
}

cl_kernel ocl_kernel(ocl_dev *d, const char *name) {
    for (int i = 0; i < d->nkernels; i++)
        if (strcmp(d->knames[i], name) == 0) return d->kernels[i];
    if (!d->prog && ocl_build(d)) return NULL;
    if (d->nkernels == OCL_MAX_KERNELS) {
        OCL_ERR(TS_ERR_RUNTIME, "opencl:%d: more than %d kernels", d->index, OCL_MAX_KERNELS);
        return NULL;
    }
    cl_int e;
    cl_kernel k = clCreateKernel(d->prog, name, &e);
    if (e != CL_SUCCESS) {
        OCL_ERR(TS_ERR_RUNTIME, "opencl:%d: no kernel %s: %s", d->index, name, ocl_errname(e));
        return NULL;
    }
    d->knames[d->nkernels] = name;
    d->kernels[d->nkernels++] = k;
    return k;
}

void ocl_arg(ocl_args *a, size_t size, const void *p) {
    if (a->st != CL_SUCCESS) return;
    a->st = clSetKernelArg(a->k, (cl_uint)a->i, size, p);
    a->i++;
}

void ocl_arg_buf(ocl_args *a, ts_buffer b) {
    cl_mem m = (cl_mem)b.mem;
    cl_ulong off = b.offset;
    ocl_arg(a, sizeof m, m ? (const void *)&m : NULL);
    OCL_ARG(a, off);
}

ts_status ocl_launch(ocl_dev *d, ocl_args *a, int64_t n) {
    if (a->st != CL_SUCCESS)
        return OCL_ERR(TS_ERR_RUNTIME, "opencl:%d: op %s: setting argument %d failed: %s", d->index, a->what,
                       a->i - 1, ocl_errname(a->st));
    if (n <= 0) return TS_OK;
    size_t local = 64, global = (size_t)((n + 63) / 64 * 64);
    cl_int e = clEnqueueNDRangeKernel(d->queue, a->k, 1, NULL, &global, &local, 0, NULL, NULL);
    if (e == CL_INVALID_WORK_GROUP_SIZE) /* a device or kernel with groups under 64: its own choice */
        e = clEnqueueNDRangeKernel(d->queue, a->k, 1, NULL, &global, NULL, 0, NULL, NULL);
    if (e != CL_SUCCESS)
        return OCL_ERR(TS_ERR_RUNTIME, "opencl:%d: op %s: enqueueing its kernel failed: %s", d->index, a->what,
                       ocl_errname(e));
    return TS_OK;
}
