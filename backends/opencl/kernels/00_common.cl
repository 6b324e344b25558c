/*
 * 00_common.cl — what every kernel file uses (the files are concatenated in name order, this one
 * first): buffer addressing (a buffer is a pointer and a byte offset), the broadcast geometry
 * bc_t (ocl.h's ocl_bc), the unary functions by tessera op id, and the run-time error slot.
 */
#define F32(p, off) ((__global float *)((__global char *)(p) + (off)))
#define PTR(T, p, off) ((__global T *)((__global char *)(p) + (off)))
#define BUFARG(T, name) __global T *name##_p, ulong name##_o
#define BUF(T, name) PTR(T, name##_p, name##_o)

typedef struct bc_t {
    int nd, pad;
    long n;
    long shape[8];
    long st[3][8];
} bc_t;

/* Element offset of operand k for output element i (row-major over bc.shape). */
inline long bc_off(const bc_t *b, int k, long i) {
    long off = 0;
    for (int d = b->nd - 1; d >= 0; d--) {
        long s = b->shape[d];
        off += (i % s) * b->st[k][d];
        i /= s;
    }
    return off;
}

/* The tessera op ids of the unary ops, OP_SCALE .. OP_GELU (and vision.cl's OP_CLIP,
 * OP_HARD_SIGMOID, OP_HARD_SWISH), are defined by the build options (program.c) from
 * tessera_ops.h's TS_OPID_*: this build's ids, what unary_grad's and fused_elementwise's
 * attributes hold. So are the sub-function constants the kernels switch on, under their
 * tessera_ops.h names (TS_MATH_*, TS_BIN_*, TS_PRED_*, TS_MATMUL_ACT_*, TS_SCATTER_*,
 * TS_REDUCE_*, TS_PAD_*, TS_GRID_*, TS_TFIDF_*). */

#define SQRT_2_OVER_PI 0.7978845608028654f
#define INV_SQRT_2 0.7071067811865476f
#define INV_SQRT_2PI 0.3989422804014327f

inline float unary_f(int op, int tanh_form, float alpha, float beta, float v) {
    switch (op) {
    case OP_SCALE: return alpha * v + beta;
    case OP_SQRT: return sqrt(v);
    case OP_EXP: return exp(v);
    case OP_LOG: return log(v);
    case OP_RELU: return v > 0.f ? v : 0.f;
    case OP_TANH: return tanh(v);
    case OP_SIGMOID: return 1.f / (1.f + exp(-v));
    case OP_GELU:
        if (tanh_form) return 0.5f * v * (1.f + tanh(SQRT_2_OVER_PI * (v + 0.044715f * v * v * v)));
        return 0.5f * v * (1.f + erf(v * INV_SQRT_2));
    }
    return v;
}

/* Record the first run-time error (code, where, the bad value) in err[0..3]. */
inline void set_err(__global int *err, int code, long where, long value) {
    if (atomic_cmpxchg(err, 0, code) == 0) {
        err[1] = (int)where;
        err[2] = (int)value;
    }
}
