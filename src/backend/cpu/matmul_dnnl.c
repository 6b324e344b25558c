/*
 * matmul_dnnl.c — the CPU backend's matmul: oneDNN's matmul primitive (oneDNN 2.6 C API).
 *
 * Math (as the op defines it, src/ops/matmul.c):
 *   out[p, m, n] = act(alpha * sum_k op(a)[p, m, k] op(b)[p, k, n] + bias[n])
 * act: the fused activation of attr i[2] (none, gelu erf, gelu tanh, relu; set by the fusion pass).
 * a [..., M, K] (stored [..., K, M] when trans_a), b [..., K, N] (stored [..., N, K] when
 * trans_b), bias [N] optional, out [..., M, N]; batch dims broadcast.
 *
 * prepare() (at compile time) builds one primitive per node (a linear layer's backward products
 * get oneDNN's inner product instead where it is faster: ip_form below):
 *  - memory descriptors by strides on the tensors as they are stored: a transpose is a swap of
 *    the last two strides, a broadcast batch dim is a dim of size 1 (oneDNN matmul broadcasts
 *    those); every descriptor has the output's rank. When b has no batch and a is a contiguous
 *    batch (no trans_a, not broadcast), the batch is folded into the rows: one [B*M, K] x [K, N]
 *    product instead of B small ones.
 *  - alpha through the output-scales attribute. oneDNN 2.6 applies that scale after its bias
 *    (measured here: dst = scale * (acc + bias)), so when alpha != 1 and there is a bias, the
 *    bias goes in as a binary-add post-op ([1, .., 1, N], broadcast) instead of the bias input.
 *  - the activation as an eltwise post-op appended last (after that binary add), so oneDNN
 *    computes act(alpha * acc + bias): dnnl_eltwise_gelu_erf / gelu_tanh / relu. oneDNN's
 *    gelu is not bit-equal to tessera's GELU (ts_unary_f32). Measured once (2 cores of an AMD
 *    EPYC, oneDNN 2.6.3, f32), fused against matmul + bias then tessera's GELU op, BERT-Base's
 *    FFN [1024, 768] x [3072, 768]^T + b, x ~ U(-1, 1), b ~ N(0, 0.1^2), W ~ N(0, 0.02^2) (out
 *    up to 1.6) and N(0, 0.1^2) (out up to 7.8): max |fused - unfused| = 1.8e-7 / 4.8e-7 for
 *    gelu_erf, 1.2e-7 / 4.8e-7 for gelu_tanh, i.e. <= 2.4e-7 * max(1, |y|): a few ulps.
 *    The 16-bit-through-f32 path below applies it in f32, before the rounding to bf16 / f16.
 *  - scratchpad mode USER: the primitive's scratchpad size is reported as the node's scratch
 *    bytes, so it runs in the runtime's shared workspace (kargs->scratch), not a private buffer.
 *  - dnnl_memory objects are created once with DNNL_MEMORY_NONE; run() only sets their data
 *    handles to this run's buffers and executes.
 * bf16 and f16 through f32: oneDNN 2.6 has no f16 matmul on CPUs without AVX512_FP16 (checked:
 * primitive creation returns "unimplemented" on AVX512_BF16 hardware), and no bf16 matmul on CPUs
 * without AVX-512 (checked on an AVX2-only AMD EPYC: "unimplemented" for every bf16 case, with or
 * without transposes and bias). A 16-bit primitive whose implementation is a reference one
 * (dnnl_query_impl_info_str contains "ref": plain loops) counts as none. There the node gets an
 * f32 primitive on f32 copies of the operands: run() widens a, b (and a bias of their dtype)
 * exactly into the workspace (bf16 -> f32 is a shift by 16 bits), multiplies in f32 and rounds the
 * f32 result once to the operands' dtype, to nearest even (ts_f32_to_bf16 / ts_f32_to_f16; f16:
 * inf beyond +-65504) — the numbers of a native 16-bit matmul with f32 accumulation (up to the
 * order of the sums), at f32 speed plus the conversions. The copies live after the scratchpad in
 * the node's scratch bytes. Measured for bf16 (2 cores of an AVX2-only AMD EPYC, oneDNN 2.6.3,
 * 2026-12-03, medians of 3 runs, other load at times): [1024, 768] x [768, 3072]
 * (bench/matmul 0.5) went from 10.2 GFLOP/s on the reference kernel to 69.0 GFLOP/s (oneDNN's
 * f32 primitive alone on the same values: 72.5; the conversions cost ~5%); BERT-Base batch-1
 * forward in bf16 (bench/bert --only latency --no-peers) from 1550 ms to 435 ms (f32: 364 ms; the
 * difference is the casts of the f32 weights to bf16 and the widening back, both memory-bound).
 * If oneDNN cannot make a primitive for a case (an unusual stride pattern, a dtype mix), the
 * node has no state and run() calls the reference kernel of src/ops/matmul.c.
 * Each CPU device has its own engine and stream (made on first use, kept while the device is
 * open): a primitive is made on its device's engine and executed on its stream, in the thread
 * that runs the device, with that thread's OpenMP team.
 *
 * Weight layout: plain (the tensor's own row-major layout, described by strides) where weights
 * change every step; prepacked where they change only between runs (below).
 * Checked once on this machine (2 cores of an AMD EPYC with AVX-512 BF16, oneDNN 2.6.3, brgemm
 * kernels; M = 1024 and 256, K, N in {768, 3072}; medians of 15, other load present):
 *  - With dnnl_format_tag_any oneDNN picks a blocked weights format: BA16a64b for f32,
 *    BA16a64b2a for bf16. On pre-blocked weights the matmul alone is 7-11% faster in bf16 and
 *    4-30% faster in f32 (30% for f32 [3072, 3072] with trans_b = 0).
 *  - A training weight changes every step, so the blocked copy would have to be re-made by a
 *    reorder on every run. Reorder + blocked matmul against plain matmul (negative = faster):
 *      f32,  b [K, N]:  M = 1024: +3.5% (768x768), -11%, -14%, -27% (3072x3072)
 *                       M = 256:  +5% .. -17%
 *      f32,  b [N, K] (trans_b, the [out, in] layout): M = 256: +8% .. +21%; M = 1024: -4% .. +11%
 *      bf16, b [K, N]:  M = 1024: -2% .. -6%;  M = 256: +10% .. +20%
 *      bf16, b [N, K]:  M = 1024: -4% .. +5%;  M = 256: -1% .. +37%
 *    The kernels copy plain weights into blocks in their scratchpad as they go; an explicit
 *    reorder replaces that copy and pays where the copy is dear (f32 untransposed weights with
 *    many rows), is about break-even for bf16 at M = 1024, and loses at M = 256 and for
 *    transposed f32 weights. So a weight that changes every step stays plain.
 *  - Prepacked weights: where the weights change only between runs (ts_plan.param_gen is set: no
 *    node of the program writes a parameter, e.g. an inference program), a matmul whose b is a
 *    parameter or constant without batch dims (or a kept cast of one, cast_kept.c: autocast's
 *    bf16 weights) gets a primitive with format "any" for b, a weight-sized buffer of its own in
 *    the layout oneDNN chose, and a reorder that fills it on the first run and again on the first
 *    run after any ts_value_write (ts_program_set_param, ts_program_load, ...) moved param_gen.
 *    The copy is made on first use and shared by every matmul that packs the same weight buffer
 *    into the same layout (backend/cpu/weight_copy.c): programs that share their parameters
 *    (ts_program_share_params: tessera serve's programs per batch size) hold one copy, not one
 *    each. A stamp is a param_gen, unique across programs (runtime/exec.h), so a copy is current
 *    for whichever program reads the buffer at that generation.
 *    Measured (2 cores of an AMD EPYC with AVX-512, oneDNN 2.6.3, f32, b stored [N, K]; medians
 *    of 30): M = 128 (a batch-1 BERT forward) 0.722 -> 0.653 ms (768 x 768), 3.00 -> 2.67
 *    (768 -> 3072), 2.86 -> 2.66 (3072 -> 768); M = 1024: 2-6% faster. Only where oneDNN runs a brgemm kernel (AVX-512): its gemm:jit kernel
 *    (AVX2; checked with ONEDNN_MAX_CPU_ISA=AVX2 on the same machine) has no blocked layout, and
 *    the plain layout it picks instead of b's own ran M = 128, 768 -> 3072 at half speed (5.78 vs
 *    3.12 ms), so there b stays as stored — except through f32 (below), where the copy is the
 *    widening of b, made once. The cost is memory: a second copy of every such weight (BERT-Base
 *    f32: 340 MB) for the life of the program. The device's option "matmul_weights" "plain"
 *    (ts_device_set_option), when the program is compiled, turns it off.
 */
#include "backend/cpu/cpu.h"
#include "backend/cpu/weight_copy.h"
#include "graph/op_attrs.h"

#include <oneapi/dnnl/dnnl.h>
#include <oneapi/dnnl/dnnl_debug.h>

int ts_cpu_dnnl_ready(ts_cpu_dev *d) {
#pragma omp critical(ts_dnnl_init)
    {
        if (!d->dnnl_ready) {
            dnnl_engine_t e;
            dnnl_stream_t st;
            d->dnnl_ready = -1;
            if (dnnl_engine_create(&e, dnnl_cpu, 0) == dnnl_success) {
                if (dnnl_stream_create(&st, e, dnnl_stream_default_flags) == dnnl_success) {
                    d->dnnl_engine = e, d->dnnl_stream = st;
                    d->dnnl_ready = 1;
                } else {
                    dnnl_engine_destroy(e);
                }
            }
        }
    }
    return d->dnnl_ready > 0;
}

void ts_cpu_dev_release(ts_cpu_dev *d) {
    if (d->dnnl_ready > 0) {
        dnnl_stream_destroy(d->dnnl_stream);
        dnnl_engine_destroy(d->dnnl_engine);
    }
    d->dnnl_ready = 0;
}

enum { ARG_SRC, ARG_WEI, ARG_BIAS, ARG_DST, ARG_SCRATCH, NARG };

typedef struct mm_dnnl {
    dnnl_primitive_t prim;
    dnnl_memory_t mem[NARG];   /* NULL where unused */
    dnnl_exec_arg_t args[NARG];
    int nargs;
    size_t scratch_bytes;      /* oneDNN's scratchpad */
    /* 16-bit through f32: widen is the operands' dtype (TS_F16 or TS_BF16), 0 for a native
     * primitive. f32 copies of a, b, a bias of that dtype and the output in the workspace, at
     * byte offsets off[] after the scratchpad; numel[k] == 0 where there is no copy. */
    ts_dtype widen;
    int ip;                    /* an inner product primitive: ip_form's form; IP_NONE (0): none */
    size_t off[4], total_bytes;
    int64_t numel[4];
    /* Prepacked weights (see "Weight layout" above): b, read as smd describes it, in the
     * primitive's blocked layout (pmd, packed_bytes), in the shared copy pc of b's buffer (taken
     * at run), remade by the reorder from b's own buffer (wuser) whenever its stamp is stale;
     * packed 0: b is read as stored. */
    int packed;
    size_t packed_bytes;
    dnnl_memory_desc_t smd, pmd;
    ts_weight_copy *pc;
    dnnl_primitive_t reorder;
    dnnl_memory_t wuser;
} mm_dnnl;

static void mm_release(void *state) {
    mm_dnnl *s = state;
    if (!s) return;
    for (int i = 0; i < NARG; i++)
        if (s->mem[i]) dnnl_memory_destroy(s->mem[i]);
    if (s->prim) dnnl_primitive_destroy(s->prim);
    if (s->wuser) dnnl_memory_destroy(s->wuser);
    if (s->reorder) dnnl_primitive_destroy(s->reorder);
    ts_weight_copy_release(s->pc);
    free(s);
}

/* bf16 and f16 ask oneDNN for a primitive of that dtype; where it has none, or only a reference
 * one, build() leaves no primitive and mm_prepare() tries again through f32 (above). */
static dnnl_data_type_t dnnl_dt(ts_dtype t) {
    return t == TS_BF16 ? dnnl_bf16 : t == TS_F16 ? dnnl_f16 : dnnl_f32;
}

/* Descriptor of operand x (rank r, stored row-major) seen as [nd-2 batch dims, rows, cols] of
 * the product: leading 1s pad it to rank nd, and trans swaps the last two dims and strides. */
static dnnl_status_t operand_md(dnnl_memory_desc_t *md, const ts_val *x, int nd, int trans) {
    dnnl_dims_t dims, strides;
    int off = nd - x->ndim;
    int64_t s = 1;
    for (int d = nd - 1; d >= 0; d--) {
        dims[d] = d >= off ? x->shape[d - off] : 1;
        strides[d] = s;
        s *= dims[d];
    }
    if (trans) {
        dnnl_dim_t t = dims[nd - 1];
        dims[nd - 1] = dims[nd - 2];
        dims[nd - 2] = t;
        t = strides[nd - 1];
        strides[nd - 1] = strides[nd - 2];
        strides[nd - 2] = t;
    }
    return dnnl_memory_desc_init_by_strides(md, nd, dims, dnnl_dt(x->dtype), strides);
}

/* A row-major descriptor of the given dims. */
static dnnl_status_t plain_md(dnnl_memory_desc_t *md, int nd, const dnnl_dims_t dims, ts_dtype dt) {
    dnnl_dims_t strides;
    int64_t s = 1;
    for (int d = nd - 1; d >= 0; d--) {
        strides[d] = s;
        s *= dims[d];
    }
    return dnnl_memory_desc_init_by_strides(md, nd, dims, dnnl_dt(dt), strides);
}

static int is16(ts_dtype t) { return t == TS_BF16 || t == TS_F16; }

/* The product as build() describes it to oneDNN: the operands' descriptors (a, b, the bias c
 * when has_c, the output o) after any folding of the batch into the rows, and what the
 * primitive's attributes need. */
typedef struct {
    dnnl_memory_desc_t a, b, c, o;
    int has_c, bias_postop; /* a bias; added as a post-op (alpha != 1 scales the product only) */
    float alpha;
    int64_t b_batch;        /* b's batch elements (1: a matrix shared by the batch) */
} mm_desc;

/* Describe node n's operands into *d (widen: every operand and the output as f32). */
static dnnl_status_t describe(const ts_graph *g, const ts_node *n, int widen, mm_desc *d) {
    const ts_val *a = &g->vals[n->in[0]], *b = &g->vals[n->in[1]], *o = &g->vals[n->out[0]];
    const ts_val *c = n->nin > 2 && n->in[2] >= 0 ? &g->vals[n->in[2]] : NULL;
    ts_val w[4];
    if (widen) {
        const ts_val *src[4] = {a, b, c, o};
        for (int k = 0; k < 4; k++) {
            if (!src[k]) continue;
            w[k] = *src[k];
            w[k].dtype = TS_F32;
        }
        a = &w[0], b = &w[1], c = c ? &w[2] : NULL, o = &w[3];
    }
    ts_attrs_matmul at = TS_NODE_ATTRS(matmul, n);
    int ta = at.trans_a != 0, tb = at.trans_b != 0;
    d->alpha = at.alpha;
    d->has_c = c != NULL;
    d->bias_postop = c && d->alpha != 1.f;
    int nd = o->ndim;
    int64_t M = o->shape[nd - 2], N = o->shape[nd - 1], K = ta ? a->shape[a->ndim - 2] : a->shape[a->ndim - 1];
    int64_t out_batch = ts_numel(nd - 2, o->shape), a_batch = ts_numel(a->ndim - 2, a->shape);
    d->b_batch = ts_numel(b->ndim - 2, b->shape);

    dnnl_status_t st;
    if (!ta && d->b_batch == 1 && a_batch == out_batch && nd > 2) {
        /* fold the batch into the rows: a [B, .., M, K] is one [B*..*M, K] matrix. Also for a
         * batch of 1 ([1, 128, 768] at batch-1 inference): oneDNN 2.6's brgemm ran the 3-D
         * [1, M, K] x [1, K, N] form 15-20% slower than the same product in 2-D. */
        dnnl_dims_t ad = {out_batch * M, K}, od = {out_batch * M, N};
        const ts_val b2 = {.dtype = b->dtype, .ndim = 2, .shape = {b->shape[b->ndim - 2], b->shape[b->ndim - 1]}};
        nd = 2;
        st = plain_md(&d->a, 2, ad, a->dtype);
        if (st == dnnl_success) st = operand_md(&d->b, &b2, 2, tb);
        if (st == dnnl_success) st = plain_md(&d->o, 2, od, o->dtype);
    } else {
        dnnl_dims_t od;
        for (int k = 0; k < nd; k++) od[k] = o->shape[k];
        st = operand_md(&d->a, a, nd, ta);
        if (st == dnnl_success) st = operand_md(&d->b, b, nd, tb);
        if (st == dnnl_success) st = plain_md(&d->o, nd, od, o->dtype);
    }
    if (st == dnnl_success && c) {
        dnnl_dims_t cd;
        for (int k = 0; k < nd; k++) cd[k] = 1;
        cd[nd - 1] = N;
        st = plain_md(&d->c, nd, cd, c->dtype);
    }
    return st;
}

/* The primitive (into s->prim) and its descriptor, or NULL with s->prim NULL when oneDNN has no
 * implementation, or (refuse_ref) only a reference one. *prepack in: ask for oneDNN's layout of
 * b ("any"); out: whether the primitive kept it (brgemm kernels only). */
static dnnl_primitive_desc_t make_primitive(dnnl_engine_t engine, const ts_node *n, const mm_desc *d, int refuse_ref,
                                            int *prepack, mm_dnnl *s) {
    const dnnl_memory_desc_t *md_c = d->has_c && !d->bias_postop ? &d->c : NULL;
    dnnl_memory_desc_t md_b_any;
    if (*prepack && dnnl_memory_desc_init_by_tag(&md_b_any, d->b.ndims, d->b.dims, d->b.data_type,
                                                 dnnl_format_tag_any) != dnnl_success)
        *prepack = 0;

    int64_t act = TS_NODE_ATTRS(matmul, n).act;
    dnnl_alg_kind_t act_alg = (dnnl_alg_kind_t)ts_cpu_matmul_act_alg(act);
    dnnl_matmul_desc_t desc;
    if (dnnl_matmul_desc_init(&desc, &d->a, *prepack ? &md_b_any : &d->b, md_c, &d->o) != dnnl_success) return NULL;
    dnnl_primitive_attr_t attr = NULL;
    dnnl_post_ops_t po = NULL;
    dnnl_primitive_desc_t pd = NULL;
    dnnl_status_t st = dnnl_primitive_attr_create(&attr);
    if (st == dnnl_success) st = dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user);
    if (st == dnnl_success && d->alpha != 1.f) st = dnnl_primitive_attr_set_output_scales(attr, 1, 0, &d->alpha);
    if (st == dnnl_success && (d->bias_postop || act)) {
        st = dnnl_post_ops_create(&po);
        /* the binary add stays post-op 0: its argument is DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) below */
        if (st == dnnl_success && d->bias_postop) st = dnnl_post_ops_append_binary(po, dnnl_binary_add, &d->c);
        if (st == dnnl_success && act) st = dnnl_post_ops_append_eltwise(po, 1.f, act_alg, 0.f, 0.f);
        if (st == dnnl_success) st = dnnl_primitive_attr_set_post_ops(attr, po);
    }
    if (st == dnnl_success) st = dnnl_primitive_desc_create(&pd, &desc, attr, engine, NULL);
    if (*prepack) { /* only for brgemm kernels; others (gemm:jit) get b as stored (see the header) */
        const char *impl = NULL;
        if (st != dnnl_success || dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) != dnnl_success ||
            !impl || !strstr(impl, "brg")) {
            if (pd) dnnl_primitive_desc_destroy(pd);
            pd = NULL;
            *prepack = 0;
            st = dnnl_matmul_desc_init(&desc, &d->a, &d->b, md_c, &d->o);
            if (st == dnnl_success && attr) st = dnnl_primitive_desc_create(&pd, &desc, attr, engine, NULL);
        }
    }
    if (st == dnnl_success && refuse_ref) {
        const char *impl = NULL;
        if (dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) != dnnl_success || !impl ||
            strstr(impl, "ref"))
            st = dnnl_unimplemented;
    }
    if (st == dnnl_success) st = dnnl_primitive_create(&s->prim, pd);
    if (st != dnnl_success) s->prim = NULL;
    if (po) dnnl_post_ops_destroy(po);
    if (attr) dnnl_primitive_attr_destroy(attr);
    if (!s->prim) {
        if (pd) dnnl_primitive_desc_destroy(pd);
        return NULL;
    }
    return pd;
}

/* The layout of the blocked copy of b (s->packed) and the reorder that makes it, when the primitive pd chose a
 * layout other than b's own (it may not: then b is read as stored, as without prepacking);
 * *md_w the weights' descriptor the primitive reads. */
static dnnl_status_t pack_weights(dnnl_engine_t engine, const ts_graph *g, const ts_node *n, dnnl_primitive_desc_t pd,
                                  const mm_desc *d, int widen, mm_dnnl *s, const dnnl_memory_desc_t **md_w) {
    /* through f32 (widen) the copy is also the widening of b, made once instead of every run:
     * the reorder reads b as stored, in its 16-bit dtype */
    const dnnl_memory_desc_t *chosen = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
    dnnl_memory_desc_t md_src = d->b;
    if (widen) md_src.data_type = dnnl_dt(g->vals[n->in[1]].dtype);
    if (!chosen || !(widen || !dnnl_memory_desc_equal(chosen, &d->b))) return dnnl_success;
    dnnl_primitive_desc_t rpd = NULL;
    dnnl_status_t st = dnnl_reorder_primitive_desc_create(&rpd, &md_src, engine, chosen, engine, NULL);
    if (st == dnnl_success) st = dnnl_primitive_create(&s->reorder, rpd);
    if (rpd) dnnl_primitive_desc_destroy(rpd);
    if (st == dnnl_success) st = dnnl_memory_create(&s->wuser, &md_src, engine, DNNL_MEMORY_NONE);
    s->packed_bytes = dnnl_memory_desc_get_size(chosen);
    if (st == dnnl_success) *md_w = chosen, s->smd = md_src, s->pmd = *chosen, s->packed = 1;
    return st;
}

/* The memory objects of the slots (a, b, bias, out as mds[0 .. 3] describe them, NULL: unused;
 * the scratchpad's from pd), without data (run() sets the handles; a packed b's when it takes its
 * copy), and the execution arguments that name them, slot i as kinds[i]. */
static dnnl_status_t memories_of(dnnl_engine_t engine, dnnl_primitive_desc_t pd, const dnnl_memory_desc_t *const in[4],
                                 const int kinds[NARG], mm_dnnl *s) {
    const dnnl_memory_desc_t *scratch_md = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
    s->scratch_bytes = scratch_md ? dnnl_memory_desc_get_size(scratch_md) : 0;
    const dnnl_memory_desc_t *mds[NARG] = {in[0], in[1], in[2], in[3], s->scratch_bytes ? scratch_md : NULL};
    dnnl_status_t st = dnnl_success;
    for (int i = 0; i < NARG && st == dnnl_success; i++) {
        if (!mds[i]) continue;
        st = dnnl_memory_create(&s->mem[i], mds[i], engine, DNNL_MEMORY_NONE);
        if (st != dnnl_success) s->mem[i] = NULL;
    }
    if (st != dnnl_success) return st;
    s->nargs = 0;
    for (int i = 0; i < NARG; i++)
        if (s->mem[i]) s->args[s->nargs++] = (dnnl_exec_arg_t){kinds[i], s->mem[i]};
    return dnnl_success;
}

/* The matmul primitive's memories: a as its source, b as its weights (md_w), the bias (or the
 * binary post-op's operand), the output as its destination. */
static dnnl_status_t make_memories(dnnl_engine_t engine, dnnl_primitive_desc_t pd, const mm_desc *d,
                                   const dnnl_memory_desc_t *md_w, mm_dnnl *s) {
    const dnnl_memory_desc_t *const mds[4] = {&d->a, md_w, d->has_c ? &d->c : NULL, &d->o};
    const int kinds[NARG] = {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS,
                             d->bias_postop ? (DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1) : DNNL_ARG_BIAS,
                             DNNL_ARG_DST, DNNL_ARG_SCRATCHPAD};
    return memories_of(engine, pd, mds, kinds, s);
}

/* A linear layer's two backward products as oneDNN's inner product (W stored [out, in], the rows
 * of the batch as its minibatch mb; all plain, no bias, activation or scale, f32 out):
 *   IP_WEIGHT_GRAD  (bf16) out [M, N] = a^T b, a stored [K, M], b [K, N], matrices: dW = dY^T X,
 *                   the inner product's backward-weights, diff_weights[oc, ic] = sum_mb
 *                   diff_dst[mb, oc] src[mb, ic] (diff_dst = a, src = b, diff_weights = out)
 *   IP_BACKWARD_DATA  (f32 or bf16) out [.., M, N] = a [.., M, K] b, b [K, N] plain, at least
 *                   IP_MIN_ROWS rows: dX = dY W, backward-data, diff_src[mb, ic] = sum_oc
 *                   diff_dst[mb, oc] W[oc, ic] (diff_dst = a with its batch folded into the rows,
 *                   W = b, diff_src = out)
 * Their kernel (gemm:jit) ran these forms faster than the matmul primitive's brgemm, which copies
 * a transposed a in blocks (weight gradients) or b in blocks (backward-data). Measured alone on 2
 * cores of an AMD EPYC with AVX512_BF16, oneDNN 2.6.3, best of 18 runs:
 *  - weight gradients, bf16, 10-20%: 1024 rows [3072, 768] 7.55 -> 6.32 ms, [768, 3072] 7.52 ->
 *    6.46, [768, 768] 1.73 -> 1.56; 4096 rows 31.8 -> 25.8, 30.4 -> 26.7, 8.39 -> 6.60; the tied
 *    decoder's [30522, 768] at 160 rows 11.9 -> 10.3. In f32 the transposed a cost the matmul
 *    nothing: f32 weight gradients stay with it.
 *  - backward-data at 1024 rows and more, f32 0-18% ([1024, 3072] x [3072, 768] 14.5 -> 12.1 ms,
 *    [1024, 768] x [768, 3072] 13.5 -> 12.3, [4096, 3072] x [3072, 768] 60.1 -> 49.7; 768 x 768
 *    level), bf16 3-10%. Below, mixed: [256, 768] x [768, 3072] 9-12% slower, so IP_MIN_ROWS.
 * In the step (BERT-Base 8 x 128, three interleaved pairs of --profile runs each): the bf16 weight
 * gradients' three shapes took 15-30% less, about 4% of the step; backward-data then took the f32
 * step 4.3% less (5,276 against 5,501 ms for 3 runs) and the bf16 step 3.9% less (2,972 against
 * 3,093). The forward as the inner product's forward was 5-10% faster alone in bf16 but not in the
 * step (the same time with it, three pairs), and inference with it in place of the prepacked
 * weights took 8-12% longer: the forward stays with the matmul primitive. A b that is prepacked
 * (a weight of a program whose weights change only between runs) keeps that instead of
 * backward-data. The numbers are the same products summed in another order. */
enum { IP_NONE, IP_BACKWARD_DATA, IP_WEIGHT_GRAD, IP_MIN_ROWS = 1024 };

static int ip_form(const ts_graph *g, const ts_node *n, int prepacked) {
    const ts_val *a = &g->vals[n->in[0]], *b = &g->vals[n->in[1]], *o = &g->vals[n->out[0]];
    ts_attrs_matmul at = TS_NODE_ATTRS(matmul, n);
    if (b->dtype != a->dtype || (a->dtype != TS_F32 && a->dtype != TS_BF16) || o->dtype != TS_F32 || b->ndim != 2 ||
        at.trans_b || at.alpha != 1.f || at.act != TS_MATMUL_ACT_NONE || (n->nin > 2 && n->in[2] >= 0))
        return IP_NONE;
    if (at.trans_a) return a->dtype == TS_BF16 && a->ndim == 2 && o->ndim == 2 ? IP_WEIGHT_GRAD : IP_NONE;
    return !prepacked && b->shape[0] > 0 && ts_val_numel(a) / b->shape[0] >= IP_MIN_ROWS ? IP_BACKWARD_DATA : IP_NONE;
}

/* ip_form's primitive (form) and memories into s; s->prim NULL when oneDNN has none but a
 * reference one, or fails (the matmul primitive is tried then). */
static void build_ip(dnnl_engine_t engine, const ts_graph *g, const ts_node *n, int form, mm_dnnl *s) {
    const ts_val *a = &g->vals[n->in[0]], *b = &g->vals[n->in[1]];
    ts_dtype dt = a->dtype;
    /* the layer's input x [mb, ic], output y [mb, oc] and weights w [oc, ic]; the slots a, b, out
     * are y, x, w (weight gradient: w f32) or y, w, x (backward-data: x f32) */
    int wg = form == IP_WEIGHT_GRAD;
    int64_t oc = wg ? a->shape[1] : b->shape[0], ic = b->shape[1], mb = wg ? a->shape[0] : ts_val_numel(a) / oc;
    dnnl_dims_t xd = {mb, ic}, yd = {mb, oc}, wd = {oc, ic};
    dnnl_memory_desc_t md_x, md_y, md_w, hx, hw;
    dnnl_inner_product_desc_t fwd, bwd;
    dnnl_primitive_desc_t hint = NULL, pd = NULL;
    dnnl_primitive_attr_t attr = NULL;
    dnnl_status_t st = plain_md(&md_x, 2, xd, wg ? dt : TS_F32);
    if (st == dnnl_success) st = plain_md(&md_y, 2, yd, dt);
    if (st == dnnl_success) st = plain_md(&md_w, 2, wd, wg ? TS_F32 : dt);
    /* a backward primitive needs a forward one as its hint, in the operands' dtype */
    if (st == dnnl_success) st = plain_md(&hx, 2, xd, dt);
    if (st == dnnl_success) st = dnnl_memory_desc_init_by_tag(&hw, 2, wd, dnnl_dt(dt), dnnl_format_tag_any);
    if (st == dnnl_success)
        st = dnnl_inner_product_forward_desc_init(&fwd, dnnl_forward_training, &hx, &hw, NULL, &md_y);
    if (st == dnnl_success) st = dnnl_primitive_desc_create(&hint, &fwd, NULL, engine, NULL);
    if (st == dnnl_success)
        st = wg ? dnnl_inner_product_backward_weights_desc_init(&bwd, &md_x, &md_w, NULL, &md_y)
                : dnnl_inner_product_backward_data_desc_init(&bwd, &md_x, &md_w, &md_y);
    if (st == dnnl_success) st = dnnl_primitive_attr_create(&attr);
    if (st == dnnl_success) st = dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user);
    if (st == dnnl_success) st = dnnl_primitive_desc_create(&pd, &bwd, attr, engine, hint);
    const char *impl = NULL;
    if (st == dnnl_success && (dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) != dnnl_success ||
                               !impl || strstr(impl, "ref")))
        st = dnnl_unimplemented;
    if (st == dnnl_success) st = dnnl_primitive_create(&s->prim, pd);
    if (st == dnnl_success) {
        const dnnl_memory_desc_t *const mw[4] = {&md_y, &md_x, NULL, &md_w}, *const md[4] = {&md_y, &md_w, NULL, &md_x};
        const int kw[NARG] = {DNNL_ARG_DIFF_DST, DNNL_ARG_SRC, 0, DNNL_ARG_DIFF_WEIGHTS, DNNL_ARG_SCRATCHPAD};
        const int kd[NARG] = {DNNL_ARG_DIFF_DST, DNNL_ARG_WEIGHTS, 0, DNNL_ARG_DIFF_SRC, DNNL_ARG_SCRATCHPAD};
        st = wg ? memories_of(engine, pd, mw, kw, s) : memories_of(engine, pd, md, kd, s);
    }
    if (st != dnnl_success) {
        for (int i = 0; i < NARG; i++)
            if (s->mem[i]) dnnl_memory_destroy(s->mem[i]), s->mem[i] = NULL;
        if (s->prim) dnnl_primitive_destroy(s->prim);
        s->prim = NULL, s->nargs = 0, s->scratch_bytes = 0;
    }
    if (attr) dnnl_primitive_attr_destroy(attr);
    if (pd) dnnl_primitive_desc_destroy(pd);
    if (hint) dnnl_primitive_desc_destroy(hint);
}

/* Build the primitive; leaves s->prim NULL when oneDNN has no implementation for this case, or
 * for 16-bit operands only a reference one (a plain loop: slower than widening to f32).
 * widen: describe every 16-bit operand and the output as f32 (16-bit through f32, above). */
static ts_status build(ts_cpu_dev *dev, const ts_plan *plan, const ts_node *n, mm_dnnl *s, int widen) {
    const ts_graph *g = plan->g;
    dnnl_engine_t engine = dev->dnnl_engine;
    int refuse_ref = !widen && is16(g->vals[n->in[0]].dtype);
    /* b a weight without batch dims (a parameter, a constant, or a kept cast of one) of a plan
     * whose weights change only between runs: prepacked (oneDNN picks its layout) */
    const ts_val *vb = &g->vals[n->in[1]];
    int weight = vb->kind == TS_V_PARAM || vb->kind == TS_V_CONST || (plan->kept && plan->kept[n->in[1]]);
    int fixed_w = plan->param_gen && weight && !dev->matmul_plain;
    int form = widen ? IP_NONE : ip_form(g, n, fixed_w);
    if (form != IP_NONE) {
        build_ip(engine, g, n, form, s);
        if (s->prim) return s->ip = form, TS_OK;
    }
    mm_desc d;
    if (describe(g, n, widen, &d) != dnnl_success) return TS_OK;
    int fixed_b = fixed_w && d.b_batch == 1; /* may keep a copy */
    int prepack = fixed_b; /* ask for oneDNN's layout ("any"); dropped unless brgemm */
    dnnl_primitive_desc_t pd = make_primitive(engine, n, &d, refuse_ref, &prepack, s);
    if (!pd) return TS_OK;

    const dnnl_memory_desc_t *md_w = &d.b;
    dnnl_status_t st = fixed_b ? pack_weights(engine, g, n, pd, &d, widen, s, &md_w) : dnnl_success;
    if (st != dnnl_success) {
        dnnl_primitive_desc_destroy(pd);
        return ts_err(TS_ERR_NOMEM, "op matmul: prepacked weights %s: %s", ts_val_str(g, n->in[1], (char[256]){0}, 256),
                      dnnl_status2str(st));
    }
    st = make_memories(engine, pd, &d, md_w, s);
    dnnl_primitive_desc_destroy(pd);
    if (st != dnnl_success)
        return ts_err(TS_ERR_NOMEM, "op matmul: oneDNN memory objects: %s", dnnl_status2str(st));
    return TS_OK;
}

int ts_cpu_matmul_act_alg(int64_t act) {
    return act == TS_MATMUL_ACT_GELU_ERF    ? dnnl_eltwise_gelu_erf
           : act == TS_MATMUL_ACT_GELU_TANH ? dnnl_eltwise_gelu_tanh
                                            : dnnl_eltwise_relu;
}

/* Where the f32 copies of 16-bit through f32 go (after the scratchpad), and the total bytes. */
static void plan_copies(const ts_graph *g, const ts_node *n, mm_dnnl *s) {
    int vals[4] = {n->in[0], n->in[1], n->nin > 2 ? n->in[2] : -1, n->out[0]};
    size_t at = ts_align64(s->scratch_bytes);
    for (int k = 0; k < 4; k++) {
        s->numel[k] = vals[k] >= 0 && g->vals[vals[k]].dtype == s->widen && !(k == 1 && s->packed)
                          ? ts_val_numel(&g->vals[vals[k]]) : 0; /* a prepacked b is widened once, in its copy */
        s->off[k] = at;
        at += ts_align64(sizeof(float) * (size_t)s->numel[k]);
    }
    s->total_bytes = at;
}

static ts_status mm_prepare(ts_cpu_dev *dev, const ts_plan *plan, const ts_node *n, void **state, size_t *scratch) {
    const ts_graph *g = plan->g;
    *state = NULL;
    *scratch = 0;
    if (!ts_cpu_dnnl_ready(dev)) return TS_OK; /* reference kernel */
    mm_dnnl *s = calloc(1, sizeof *s);
    if (!s) return ts_err(TS_ERR_NOMEM, "op matmul: out of memory");
    ts_status st = build(dev, plan, n, s, 0);
    ts_dtype dt = g->vals[n->in[0]].dtype;
    if (st == TS_OK && !s->prim && is16(dt)) {
        mm_release(s);
        if (!(s = calloc(1, sizeof *s))) return ts_err(TS_ERR_NOMEM, "op matmul: out of memory");
        s->widen = dt;
        st = build(dev, plan, n, s, 1);
    }
    if (st != TS_OK || !s->prim) {
        mm_release(s);
        return st;
    }
    if (s->widen) plan_copies(g, n, s);
    else s->total_bytes = s->scratch_bytes;
    *state = s;
    *scratch = s->total_bytes;
    return TS_OK;
}

/* dt (f16 or bf16) -> f32, exact, and back, rounded to nearest even (f16: inf beyond +-65504),
 * n elements, in chunks shared by the threads. */
static void widen16(ts_dtype dt, const uint16_t *x, float *y, int64_t n) {
#pragma omp parallel for schedule(static) if (n > 65536)
    for (int64_t i = 0; i < n; i += 4096) {
        size_t len = (size_t)(n - i < 4096 ? n - i : 4096);
        if (dt == TS_BF16) ts_bf16_to_f32(x + i, y + i, len);
        else ts_f16_to_f32(x + i, y + i, len);
    }
}
static void narrow16(ts_dtype dt, const float *x, uint16_t *y, int64_t n) {
#pragma omp parallel for schedule(static) if (n > 65536)
    for (int64_t i = 0; i < n; i += 4096) {
        size_t len = (size_t)(n - i < 4096 ? n - i : 4096);
        if (dt == TS_BF16) ts_f32_to_bf16(x + i, y + i, len);
        else ts_f32_to_f16(x + i, y + i, len);
    }
}

/* Point the primitive's weights at the shared blocked copy of b's buffer (k->in[1]), taken anew
 * when b's buffer moved, and (re)make it by the reorder when it is stale for this param_gen. */
static ts_status use_packed(mm_dnnl *s, const ts_kargs *k, dnnl_stream_t stream) {
    if (!s->pc || s->pc->src != k->in[1]) {
        ts_weight_copy_release(s->pc);
        if (!(s->pc = ts_weight_copy_get(k->in[1], &s->smd, &s->pmd, s->packed_bytes)))
            return ts_err(TS_ERR_NOMEM, "op matmul: out of memory for prepacked weights (%zu bytes)", s->packed_bytes);
        dnnl_status_t st = dnnl_memory_set_data_handle(s->mem[ARG_WEI], s->pc->data);
        if (st != dnnl_success)
            return ts_err(TS_ERR_RUNTIME, "op matmul: oneDNN set_data_handle: %s", dnnl_status2str(st));
    }
    if (!ts_weight_stale(&s->pc->stamp, k->param_gen)) return TS_OK;
    dnnl_exec_arg_t ra[2] = {{DNNL_ARG_FROM, s->wuser}, {DNNL_ARG_TO, s->mem[ARG_WEI]}};
    dnnl_status_t st = dnnl_memory_set_data_handle(s->wuser, k->in[1]);
    if (st == dnnl_success) st = dnnl_primitive_execute(s->reorder, stream, 2, ra);
    if (st == dnnl_success) st = dnnl_stream_wait(stream);
    if (st != dnnl_success) return ts_err(TS_ERR_RUNTIME, "op matmul: reordering the weights: %s", dnnl_status2str(st));
    ts_weight_made(&s->pc->stamp, k->param_gen);
    return TS_OK;
}

static ts_status mm_run(const ts_kargs *k) {
    mm_dnnl *s = k->state;
    if (!s) return ts_op_get(TS_OP_MATMUL)->kernel(k);
    if (s->total_bytes > k->scratch_bytes || (s->total_bytes && !k->scratch))
        return ts_err(TS_ERR_RUNTIME, "op matmul: the workspace has %zu bytes, oneDNN needs %zu",
                      k->scratch_bytes, s->total_bytes);
    void *ptr[NARG] = {k->in[0], k->in[1], k->node->nin > 2 ? k->in[2] : NULL, k->out[0], k->scratch};
    for (int i = 0; s->widen && i < 4; i++) { /* 16-bit through f32: ARG_SRC .. ARG_DST are 0 .. 3 */
        if (!s->numel[i]) continue;
        ptr[i] = (char *)k->scratch + s->off[i];
        if (i < 3) widen16(s->widen, k->in[i], ptr[i], s->numel[i]);
    }
    dnnl_stream_t stream = ((ts_cpu_dev *)k->device)->dnnl_stream;
    if (s->packed) {
        ts_status ps = use_packed(s, k, stream);
        if (ps != TS_OK) return ps;
    }
    for (int i = 0; i < NARG; i++) {
        if (!s->mem[i] || (i == ARG_WEI && s->packed)) continue;
        dnnl_status_t st = dnnl_memory_set_data_handle(s->mem[i], ptr[i]);
        if (st != dnnl_success)
            return ts_err(TS_ERR_RUNTIME, "op matmul: oneDNN set_data_handle: %s", dnnl_status2str(st));
    }
    dnnl_status_t st = dnnl_primitive_execute(s->prim, stream, s->nargs, s->args);
    if (st == dnnl_success) st = dnnl_stream_wait(stream);
    if (st != dnnl_success) return ts_err(TS_ERR_RUNTIME, "op matmul: oneDNN execute: %s", dnnl_status2str(st));
    if (s->widen) narrow16(s->widen, ptr[ARG_DST], k->out[0], s->numel[3]);
    return TS_OK;
}

int ts_cpu_matmul_path(const void *state) {
    const mm_dnnl *s = state;
    return s->ip == IP_WEIGHT_GRAD     ? TS_CPU_MM_WEIGHT_GRAD
         : s->ip == IP_BACKWARD_DATA ? TS_CPU_MM_BACKWARD_DATA
         : s->widen                  ? TS_CPU_MM_WIDENED : TS_CPU_MM_PRIMITIVE;
}

static size_t mm_kept_bytes(const void *state) { return ((const mm_dnnl *)state)->packed_bytes; }

const ts_cpu_kernel ts_cpu_matmul_dnnl = {TS_OP_MATMUL, mm_prepare, mm_run, mm_release, mm_kept_bytes, NULL};
