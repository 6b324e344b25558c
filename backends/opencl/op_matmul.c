/*
 * op_matmul.c — the matmul op (src/ops/matmul.c: batched, numpy-broadcast batch dims, transposes,
 * alpha, bias input 2, a fused activation; read through tessera_ops.h's ts_attrs_matmul and
 * ts_matmul_geom, as the CPU's kernel reads them) on CLBlast: one CLBlastSgemm for a single
 * product, CLBlastSgemmBatched with per-matrix offsets for a batch (which covers every broadcast
 * of the batch dims), then kernels/matmul.cl's bias_act when there is a bias or an activation.
 * bf16 / f16 operands are widened to f32 in the workspace and the product rounded once to the
 * output's dtype (the CPU's numbers: f32 accumulation, one rounding).
 */
#include "ocl.h"

#include <clblast_c.h>
#include <stdlib.h>

/* The node's attributes and its operands' geometry (tessera_ops.h), kept from prep to run. */
typedef struct mm_geom {
    ts_attrs_matmul at;
    ts_matmul_geom g;
    int64_t lda, ldb; /* the stored row lengths of a and b */
} mm_geom;
_Static_assert(sizeof(mm_geom) <= OCL_PARAM_BYTES, "matmul's parameters fit a node's");

static void geom(mm_geom *q, const ts_abi_node *n, const ts_abi_value *a, const ts_abi_value *b) {
    q->at = ts_attrs_matmul_of(n);
    q->g = ts_matmul_geom_of(a->ndim, a->shape, b->ndim, b->shape, q->at.trans_a != 0, q->at.trans_b != 0);
    q->lda = a->shape[a->ndim - 1];
    q->ldb = b->shape[b->ndim - 1];
}

static int is16(ts_dtype t) { return t == TS_BF16 || t == TS_F16; }

/* a, b both f32, both bf16 or both f16; out their dtype, or f32 for bf16 with i[3] = 1; the bias
 * f32 or the operands' dtype */
static int sup_matmul(const ts_abi_node *n, const ts_abi_value *v) {
    if (n->nin < 2 || n->nout != 1 || n->in[0] < 0 || n->in[1] < 0) return 0;
    ts_attrs_matmul at = ts_attrs_matmul_of(n);
    if (at.act < 0 || at.act >= TS_OPS_MATMUL_ACT_COUNT) return 0;
    const ts_abi_value *a = &v[n->in[0]], *b = &v[n->in[1]];
    ts_dtype t = a->dtype, ot = v[n->out[0]].dtype;
    if (b->dtype != t || (t != TS_F32 && !is16(t))) return 0;
    if (at.f32_out ? t != TS_BF16 || ot != TS_F32 : ot != t) return 0;
    if (n->nin > 2 && n->in[2] >= 0 && v[n->in[2]].dtype != TS_F32 && v[n->in[2]].dtype != t) return 0;
    if (a->ndim < 2 || b->ndim < 2) return 0;
    mm_geom q;
    geom(&q, n, a, b);
    if (!q.g.ok || q.g.K != q.g.Kb) return 0;
    if (n->nin > 2 && n->in[2] >= 0) {
        const ts_abi_value *c = &v[n->in[2]];
        if (c->ndim < 1 || c->shape[c->ndim - 1] != q.g.N || ocl_numel(c) != q.g.N) return 0;
    }
    return 1;
}

static ts_status prep_matmul(ocl_dev *d, const ts_abi_node *n, const ts_abi_value *v, void *p) {
    geom(p, n, &v[n->in[0]], &v[n->in[1]]);
    return TS_OK;
}

static ts_status gemm(ocl_node_ctx *c, const mm_geom *mq, ts_buffer A, ts_buffer B, ts_buffer O) {
    const ts_matmul_geom *q = &mq->g;
    float alpha = mq->at.alpha;
    CLBlastTranspose ta = mq->at.trans_a ? CLBlastTransposeYes : CLBlastTransposeNo;
    CLBlastTranspose tb = mq->at.trans_b ? CLBlastTransposeYes : CLBlastTransposeNo;
    CLBlastStatusCode st;
    if (q->batch == 1) {
        st = CLBlastSgemm(CLBlastLayoutRowMajor, ta, tb, (size_t)q->M, (size_t)q->N, (size_t)q->K, alpha,
                          (cl_mem)A.mem, A.offset / 4, (size_t)mq->lda, (cl_mem)B.mem, B.offset / 4, (size_t)mq->ldb,
                          0.f, (cl_mem)O.mem, O.offset / 4, (size_t)q->N, &c->d->queue, NULL);
    } else {
        size_t nb = (size_t)q->batch, *offs = malloc(3 * nb * sizeof *offs);
        float *ab = malloc(2 * nb * sizeof *ab);
        if (!offs || !ab) {
            free(offs);
            free(ab);
            return OCL_ERR(TS_ERR_NOMEM, "op matmul: out of host memory for %zu batch offsets", nb);
        }
        for (size_t p = 0; p < nb; p++) {
            offs[p] = A.offset / 4 + (size_t)ts_matmul_batch_offset(q, q->sa, (int64_t)p);
            offs[nb + p] = B.offset / 4 + (size_t)ts_matmul_batch_offset(q, q->sb, (int64_t)p);
            offs[2 * nb + p] = O.offset / 4 + p * (size_t)(q->M * q->N);
            ab[p] = alpha;
            ab[nb + p] = 0.f;
        }
        st = CLBlastSgemmBatched(CLBlastLayoutRowMajor, ta, tb, (size_t)q->M, (size_t)q->N, (size_t)q->K, ab,
                                 (cl_mem)A.mem, offs, (size_t)mq->lda, (cl_mem)B.mem, offs + nb, (size_t)mq->ldb,
                                 ab + nb, (cl_mem)O.mem, offs + 2 * nb, (size_t)q->N, nb, &c->d->queue, NULL);
        free(offs);
        free(ab);
    }
    if (st != CLBlastSuccess)
        return OCL_ERR(TS_ERR_RUNTIME, "opencl:%d: op matmul [%lld x %lld x %lld, batch %lld]: CLBlast error %d",
                       c->d->index, (long long)q->M, (long long)q->N, (long long)q->K, (long long)q->batch, (int)st);
    return TS_OK;
}

/* 16-bit operands: widened to f32 in the workspace (a, then b, then the product, then the bias),
 * multiplied in f32 and rounded once to the output's dtype, as the CPU does. */
static size_t ws_matmul(const ts_abi_node *n, const ts_abi_value *v) {
    if (v[n->in[0]].dtype == TS_F32) return 0;
    int64_t nb = n->nin > 2 && n->in[2] >= 0 ? ocl_numel(&v[n->in[2]]) : 0;
    return (size_t)(ocl_numel(&v[n->in[0]]) + ocl_numel(&v[n->in[1]]) + ocl_numel(&v[n->out[0]]) + nb) * 4 + 64;
}

/* dst (f32 or 16-bit) = src (another dtype), n elements, by kernels/elementwise.cl's cast */
static ts_status convert(ocl_node_ctx *c, ts_buffer src, ts_dtype from, ts_buffer dst, ts_dtype to, int64_t n) {
    if (from == to) return ocl_copy(c->d, dst, src, (size_t)n * ocl_dtype_size(to));
    ocl_args a = {ocl_kernel(c->d, "cast"), 0, CL_SUCCESS, c->n->op};
    if (!a.k) return TS_ERR_RUNTIME;
    cl_long cnt = n;
    cl_int f = from, t = to;
    ocl_arg_buf(&a, src);
    ocl_arg_buf(&a, dst);
    OCL_ARG(&a, cnt);
    OCL_ARG(&a, f);
    OCL_ARG(&a, t);
    return ocl_launch(c->d, &a, n);
}

static ts_buffer at(ts_buffer b, int64_t floats) { return (ts_buffer){b.mem, b.offset + (uint64_t)floats * 4}; }

static ts_status run_matmul(ocl_node_ctx *c) {
    const mm_geom *mq = c->p;
    const ts_matmul_geom *q = &mq->g;
    int64_t cnt = q->batch * q->M * q->N;
    if (cnt == 0) return TS_OK;
    const ts_abi_value *av = ocl_in(c, 0), *bv = ocl_in(c, 1), *ov = ocl_out(c, 0);
    const ts_abi_value *cv = c->n->nin > 2 ? ocl_in(c, 2) : NULL;
    ts_buffer A = av->buf, B = bv->buf, O = ov->buf, bias = cv ? cv->buf : (ts_buffer){0};
    ts_status s = TS_OK;
    if (av->dtype != TS_F32) { /* widen into the workspace */
        int64_t na = ocl_numel(av), nb = ocl_numel(bv);
        A = c->workspace;
        B = at(A, na);
        s = convert(c, av->buf, av->dtype, A, TS_F32, na);
        if (!s) s = convert(c, bv->buf, bv->dtype, B, TS_F32, nb);
        if (ov->dtype != TS_F32) O = at(B, nb);
        if (!s && cv && cv->dtype != TS_F32) {
            bias = at(at(B, nb), cnt);
            s = convert(c, cv->buf, cv->dtype, bias, TS_F32, ocl_numel(cv));
        }
        if (s) return s;
    }
    s = q->K == 0 ? ocl_fill0(c->d, O, (size_t)cnt * 4) : gemm(c, mq, A, B, O);
    if (!s && (bias.mem || mq->at.act != TS_MATMUL_ACT_NONE)) {
        ocl_args a = {ocl_kernel(c->d, "bias_act"), 0, CL_SUCCESS, c->n->op};
        if (!a.k) return TS_ERR_RUNTIME;
        cl_long n = cnt, N = q->N;
        cl_int act = (cl_int)mq->at.act;
        ocl_arg_buf(&a, O);
        ocl_arg_buf(&a, bias);
        OCL_ARG(&a, n);
        OCL_ARG(&a, N);
        OCL_ARG(&a, act);
        s = ocl_launch(c->d, &a, cnt);
    }
    if (!s && ov->dtype != TS_F32) s = convert(c, O, TS_F32, ov->buf, ov->dtype, cnt);
    return s;
}

const ocl_op ocl_ops_matmul[] = {
    {"matmul", sup_matmul, prep_matmul, run_matmul, ws_matmul},
    {NULL, NULL, NULL, NULL, NULL},
};
