/*
 * cpu.h — the CPU backend's insides: a device's context, and the kernels it has of its own for
 * ops where it has something faster than the reference kernel in src/ops (oneDNN primitives).
 */
#ifndef TS_CPU_H
#define TS_CPU_H

#include "backend/backend.h"

/* What the CPU kernels read of a plan: tessera's IR rebuilt from the public plan (cpu_view.c)
 * — the CPU backend gets nothing else from the runtime than any plugin does. */
typedef struct ts_plan {
    const ts_graph *g;    /* the plan's values (dtype, shape, kind) and nodes, ids as in the plan */
    const int *sched;     /* node ids in run order: 0 .. nsched - 1 */
    int nsched;
    ts_abi_value *values; /* the plan's value table (buffers live here) */
    uint64_t *prof_ns, *prof_calls; /* ts_abi_plan's: per node, NULL when not profiled */
    /* ts_abi_plan.param_gen: non-NULL when weights change only between runs, through the host,
     * which moves *param_gen. A kernel may keep something derived from a weight
     * (backend/cpu/matmul_dnnl.c: a blocked copy) and remake it when *param_gen moves. */
    const uint64_t *param_gen;
    /* Per value, 1 for a kept cast of a weight (ts_abi_value.kept): the CPU backend remakes it only
     * on the first run after a weight was written (backend/cpu/cast_kept.c). NULL: none. */
    const uint8_t *kept;
    /* ts_abi_plan.kernel_bytes: the backend adds the bytes its kernels keep across runs. */
    size_t *kernel_bytes;
    /* ts_abi_plan.prof_kernel (2.1; NULL from an older host, or not profiled): per node, the
     * kernel's variant (ts_cpu_kernel.variant), set at execute. */
    const char **prof_kernel;
} ts_plan;

/* The view of abi: a graph of its values and nodes (*g, freed with ts_cpu_view_free) and the plan
 * over it. TS_ERR_UNSUPPORTED naming an op this build does not know. */
ts_status ts_cpu_view(const ts_abi_plan *abi, ts_graph **g, ts_plan *plan);
void ts_cpu_view_free(ts_graph *g, ts_plan *plan);

/* A CPU device's context: its index and its oneDNN engine and stream, made on first use
 * (matmul_dnnl.c). */
typedef struct ts_cpu_dev {
    int index;
    int dnnl_ready;                    /* 0: not tried, 1: usable, -1: creation failed */
    void *dnnl_engine, *dnnl_stream;   /* dnnl_engine_t, dnnl_stream_t */
    /* the device's options (ts_device_set_option, cpu_backend.c), read by the kernels' prepare
     * when a program is compiled; 0 each is the default */
    int conv_reference;                /* "conv_algorithm" "reference": the ops' reference kernels */
    int conv_layout;                   /* "conv_layout": TS_CPU_LAYOUT_* */
    int matmul_plain;                  /* "matmul_weights" "plain": no prepacked weights */
    int conv_int8_always;              /* "conv_int8" "always": no f32 kernel timed against it */
} ts_cpu_dev;
/* ts_cpu_dev.conv_layout: chosen per convolution (conv_dnnl.c), or forced for every one. */
enum { TS_CPU_LAYOUT_AUTO, TS_CPU_LAYOUT_PLAIN, TS_CPU_LAYOUT_BLOCKED };
/* The device's oneDNN engine and stream, made on first use by whichever kernel asks first (under one
 * critical section); 1 when usable (matmul_dnnl.c). */
int ts_cpu_dnnl_ready(ts_cpu_dev *d);
/* Destroy what the device made (matmul_dnnl.c). */
void ts_cpu_dev_release(ts_cpu_dev *d);

/* When a kernel last made something it keeps from weights across runs (a kept cast, a prepacked
 * copy): stale until made, and again once the plan's param_gen (kargs->param_gen) has moved. */
typedef struct ts_weight_stamp {
    uint64_t gen; /* param_gen when it was made */
    int made;
} ts_weight_stamp;
static inline int ts_weight_stale(const ts_weight_stamp *s, uint64_t gen) { return !s->made || s->gen != gen; }
static inline void ts_weight_made(ts_weight_stamp *s, uint64_t gen) { s->gen = gen, s->made = 1; }

/* x rounded up to a multiple of 64 (a cache line: offsets of buffers in a kernel's workspace). */
static inline size_t ts_align64(size_t x) { return (x + 63) & ~(size_t)63; }

/* The oneDNN eltwise algorithm (a dnnl_alg_kind_t) of a matmul's fused activation
 * (TS_MATMUL_ACT_GELU_ERF / _GELU_TANH / _RELU), for the matmul kernels' post-ops (matmul_dnnl.c). */
int ts_cpu_matmul_act_alg(int64_t act);

/* How the matmul kernel's prepared state (its prepare()'s *state, not NULL) runs its node:
 * TS_CPU_MM_PRIMITIVE oneDNN's matmul primitive, TS_CPU_MM_WIDENED that on f32 copies of 16-bit
 * operands; oneDNN's inner product backward-weights (a bf16 weight gradient) or backward-data (a
 * linear layer's input gradient; matmul_dnnl.c ip_form). For the tests. */
enum { TS_CPU_MM_PRIMITIVE, TS_CPU_MM_WIDENED, TS_CPU_MM_WEIGHT_GRAD, TS_CPU_MM_BACKWARD_DATA };
int ts_cpu_matmul_path(const void *state);

/* The int8 kernels' baked epilogue (int8_epilogue.c): the constant per-channel scales c[i] = m
 * sw[i] (1 where sw[i] is 0), and for one run the activation scale se the primitive multiplies by
 * (1 where sa is fixed into c or is 0) and the bias input b[i] = bias[i] / (se c[i]) (bias NULL:
 * none); ts_cpu_i8_bias_scaled returns 1 when a b[i] overflows where bias[i], se and c[i] are
 * finite (the kernel then runs the op's reference kernel), else 0. */
void ts_cpu_i8_scales(const float *sw, int64_t n, float m, float *c);
int ts_cpu_i8_bias_scaled(const float *bias, const float *c, int64_t n, float sa, int fixed, float *b, float *se);

/* The host address of a CPU buffer. */
static inline void *ts_cpu_ptr(ts_buffer b) { return (char *)b.mem + b.offset; }

typedef struct ts_cpu_kernel {
    int op;
    /* Called once at compile time on device dev for node n of plan: build per-node state and
     * report scratch bytes. Optional. */
    ts_status (*prepare)(ts_cpu_dev *dev, const ts_plan *plan, const ts_node *n, void **state, size_t *scratch);
    ts_status (*run)(const ts_kargs *a); /* a->device is the ts_cpu_dev */
    void (*release)(void *state);        /* optional */
    size_t (*kept_bytes)(const void *state); /* optional: memory the state holds across runs */
    /* optional: where the kernel chooses among several for a node, the one it runs now (a static
     * string, for the profile: ts_abi_plan.prof_kernel), else NULL */
    const char *(*variant)(const void *state);
} ts_cpu_kernel;

/* The kernel the CPU backend uses for op, or NULL for the reference one. */
const ts_cpu_kernel *ts_cpu_kernel_for(int op);

#endif
