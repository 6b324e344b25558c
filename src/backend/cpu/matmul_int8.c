/*
 * matmul_int8.c — the CPU backend's matmul_i8dyn (dynamic int8 matmul; the math is stated in
 * src/ops/matmul_int8.c): oneDNN 2.6's int8 matmul primitive, s8 activations x s8 weights, int32
 * sums, f32 output.
 *
 *   a [R, K] (a's batch dims folded into the rows R), w [K, N] (stored [N, K] when trans_b),
 *   bias [N] optional, y [R, N]
 *
 * prepare() (at compile time) checks that oneDNN has the primitive and sizes its buffers:
 *  - src s8 [R, K] plain; weights s8 with format "any" (oneDNN picks its blocked layout, with the
 *    s8 x s8 compensation its VNNI kernel needs appended, made by the reorder); dst f32 [R, N].
 *  - scratchpad mode USER: the scratchpad, the quantized activations qa [R, K] s8 and the run's
 *    scale numbers live in the runtime's workspace (kargs->scratch), in that order, 64-byte aligned.
 * Two forms of the epilogue y = act(acc * (alpha sa) sw[n] + bias[n]):
 *  - baked (the usual one: weights fixed between runs, ts_plan.param_gen): c[n] = alpha sw[n] as
 *    oneDNN's constant per-channel output scales, sa as post-op 0, a binary multiply by a [1, 1]
 *    tensor (absent when sa is a fixed, calibrated a_scale: then folded into c), the bias as the
 *    primitive's bias input, which oneDNN 2.x adds before the scales, so it is given divided by
 *    them: b'[n] = bias[n] / (sa c[n]), and y = act(sa c[n] (acc + b'[n])). sa and c[n] of 0 are
 *    taken as 1 there: they multiply zero sums (all activations or all of channel n's weights 0).
 *    Constant scales are known only once the weights are quantized, so the primitive is made on
 *    the first run and again whenever the weights were quantized anew (about 1.6 ms per node).
 *    Where a b'[n] overflows (sa c[n] below about |bias| / 3e38: denormal-sized activations and
 *    weights) that run takes the reference kernel.
 *  - per run (weights that may change during a run, no param_gen): as before the baked form, a
 *    binary multiply by scale [1, N] (scale[n] = (alpha sa) sw[n], written every run) and a binary
 *    add of the bias, made at prepare().
 *  (int8_epilogue.c computes c, sa and b' for both this kernel and conv_int8.c.)
 *  Both end with the activation as an eltwise post-op (dnnl_eltwise_gelu_erf / gelu_tanh / relu;
 *  not bit-equal to tessera's GELU, a few ulps: see matmul_dnnl.c).
 *  Measured (oneDNN 2.6.3 on this machine's 2-core AVX-512 VNNI AMD EPYC, [1024, 768] x [768, 768],
 *  s8 in, GOP/s): no epilogue 1745; binary multiply [1, N] 1512; that and a binary add [1, N] 1350
 *  (the per-run form); constant scales, bias input and a binary multiply [1, 1] 1648 (the baked
 *  form); constant scales and bias only 1666. Not oneDNN's runtime output scales
 *  (DNNL_RUNTIME_F32_VAL, the way to give a scale that changes every run): they make oneDNN 2.6
 *  fall back from its brgemm VNNI kernel (brg:avx512_core_vnni) to gemm:jit (1488, with s8 or u8
 *  activations alike).
 * Weights: quantized per output channel (ts_quant_weights_s8, the op's own code, so the two
 * kernels quantize bit-identically) into a plain s8 copy, reordered into a buffer in oneDNN's
 * layout, on the first run and again on the first run after a weight was written
 * (ts_plan.param_gen moved: ts_weight_stamp); sw [N] kept after them in the same copy. The copy is
 * shared by the int8 matmuls that read the same weight buffer the same way
 * (backend/cpu/weight_copy.c, as matmul_dnnl.c's prepacked weights): programs that share their
 * parameters (ts_program_share_params: tessera serve's programs per batch size and sequence
 * bucket) hold one copy, not one each; it is taken anew when the weight buffer moved. A node
 * remembers which quantization (copy and stamp) its baked primitive was made for. Without
 * param_gen (weights that could change during a run) a node has a copy of its own, quantized on
 * every run.
 * The kept bytes (the packed weights and sw) count in ts_memory.weight_copies, per node.
 * Activations: one sweep for max |a| (sa), one that quantizes a into qa (ops/matmul_int8.c,
 * vectorised for the CPU it runs on, chunks shared by the threads); with a fixed scale (the
 * attribute a_scale > 0: static quantization) only the second.
 * s8 rather than u8 activations: symmetric, no zero point; oneDNN's VNNI instruction multiplies
 * u8 x s8, so for s8 x s8 its kernel adds 128 to the activations and subtracts the weights'
 * compensation (made once, by the reorder). The u8 variant (an asymmetric zero point) was not
 * measured; the lead's bench run of bench/matmul.c can compare (it prints oneDNN's own u8 x s8).
 * If oneDNN cannot make the primitive, the node has no state and run() calls the reference kernel.
 */
#include "backend/cpu/cpu.h"
#include "backend/cpu/weight_copy.h"
#include "graph/op_attrs.h"

#include <oneapi/dnnl/dnnl.h>
#include <oneapi/dnnl/dnnl_debug.h>

/* The primitive's arguments. Q_SCALES: the per-run form's scale [1, N], the baked form's sa [1, 1];
 * Q_BIAS: the per-run form's post-op bias [1, N], the baked form's bias input b' [1, N]. */
enum { Q_SRC, Q_WEI, Q_SCALES, Q_BIAS, Q_DST, Q_SCRATCH, Q_NARG };

typedef struct i8_state {
    dnnl_primitive_t prim, reorder;
    dnnl_memory_t mem[Q_NARG]; /* NULL where unused */
    dnnl_memory_t wuser;       /* the plain s8 weights, the reorder's source */
    dnnl_exec_arg_t args[Q_NARG];
    int nargs;
    int64_t R, K, N;
    int trans_b, has_bias;
    int64_t act;
    float alpha;
    float a_scale;       /* > 0: the activations' fixed scale (static quantization); 0: per run */
    size_t scratch_bytes, qa_off, scale_off, total_bytes;
    dnnl_memory_desc_t smd, wmd; /* the plain s8 weights as read (trans_b), and oneDNN's layout */
    size_t packed_bytes;
    ts_weight_copy *copy;   /* the packed weights, then sw [N] (at sw_off); taken on the first run */
    size_t sw_off;
    int fixed;           /* the plan has param_gen: weights change only between runs (the baked form) */
    const ts_weight_copy *baked_copy; /* the baked form: the copy and quantization its prim was made */
    ts_weight_stamp baked_stamp;      /* for (prim NULL until the first run) */
    float *c;            /* the baked form: the constant scales c [N] its prim holds */
} i8_state;

static void i8_release(void *state) {
    i8_state *s = state;
    if (!s) return;
    for (int i = 0; i < Q_NARG; i++)
        if (s->mem[i]) dnnl_memory_destroy(s->mem[i]);
    if (s->wuser) dnnl_memory_destroy(s->wuser);
    if (s->prim) dnnl_primitive_destroy(s->prim);
    if (s->reorder) dnnl_primitive_destroy(s->reorder);
    ts_weight_copy_release(s->copy);
    free(s->c);
    free(s);
}

/* The primitive descriptor: s8 [R, K] x s8 [K, N] ("any") -> f32 [R, N]. c NULL: the per-run
 * form (post-ops: times scale [1, N], plus bias [1, N], the activation); else the baked form
 * (output scales c [N], bias input [1, N], post-ops: times sa [1, 1] unless a_scale is fixed, the
 * activation). NULL when oneDNN has no implementation. */
static dnnl_primitive_desc_t make_pd(dnnl_engine_t engine, const i8_state *s, const float *c) {
    dnnl_memory_desc_t md_a, md_w, md_o, md_n, md_1;
    dnnl_dims_t ad = {s->R, s->K}, wd = {s->K, s->N}, od = {s->R, s->N}, nd = {1, s->N}, d1 = {1, 1};
    dnnl_status_t st = dnnl_memory_desc_init_by_tag(&md_a, 2, ad, dnnl_s8, dnnl_ab);
    if (st == dnnl_success) st = dnnl_memory_desc_init_by_tag(&md_w, 2, wd, dnnl_s8, dnnl_format_tag_any);
    if (st == dnnl_success) st = dnnl_memory_desc_init_by_tag(&md_o, 2, od, dnnl_f32, dnnl_ab);
    if (st == dnnl_success) st = dnnl_memory_desc_init_by_tag(&md_n, 2, nd, dnnl_f32, dnnl_ab);
    if (st == dnnl_success) st = dnnl_memory_desc_init_by_tag(&md_1, 2, d1, dnnl_f32, dnnl_ab);
    dnnl_matmul_desc_t desc;
    if (st == dnnl_success) st = dnnl_matmul_desc_init(&desc, &md_a, &md_w, c && s->has_bias ? &md_n : NULL, &md_o);
    if (st != dnnl_success) return NULL;
    dnnl_primitive_attr_t attr = NULL;
    dnnl_post_ops_t po = NULL;
    dnnl_primitive_desc_t pd = NULL;
    dnnl_alg_kind_t act_alg = (dnnl_alg_kind_t)ts_cpu_matmul_act_alg(s->act);
    st = dnnl_primitive_attr_create(&attr);
    if (st == dnnl_success) st = dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user);
    if (st == dnnl_success && c) st = dnnl_primitive_attr_set_output_scales(attr, s->N, 2, c);
    if (st == dnnl_success) {
        st = dnnl_post_ops_create(&po);
        /* the scale is post-op 0, the per-run form's bias post-op 1: their arguments
         * DNNL_ARG_ATTR_MULTIPLE_POST_OP(0 / 1) */
        if (st == dnnl_success && !c) st = dnnl_post_ops_append_binary(po, dnnl_binary_mul, &md_n);
        if (st == dnnl_success && !c && s->has_bias) st = dnnl_post_ops_append_binary(po, dnnl_binary_add, &md_n);
        if (st == dnnl_success && c && !(s->a_scale > 0.f)) st = dnnl_post_ops_append_binary(po, dnnl_binary_mul, &md_1);
        if (st == dnnl_success && s->act) st = dnnl_post_ops_append_eltwise(po, 1.f, act_alg, 0.f, 0.f);
        if (st == dnnl_success) st = dnnl_primitive_attr_set_post_ops(attr, po);
    }
    if (st == dnnl_success) st = dnnl_primitive_desc_create(&pd, &desc, attr, engine, NULL);
    if (st != dnnl_success) pd = NULL;
    if (po) dnnl_post_ops_destroy(po);
    if (attr) dnnl_primitive_attr_destroy(attr);
    return pd;
}

/* The weights' buffer in the layout pd chose and the reorder that fills it, the memory objects
 * (run() sets their data) and the execution arguments; the per-run form's primitive. */
static dnnl_status_t build(dnnl_engine_t engine, dnnl_primitive_desc_t pd, i8_state *s) {
    const dnnl_memory_desc_t *chosen = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
    const dnnl_memory_desc_t *scratch_md = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
    dnnl_memory_desc_t md_user;
    dnnl_dims_t wd = {s->K, s->N}, wstr = {s->trans_b ? 1 : s->N, s->trans_b ? s->K : 1};
    dnnl_status_t st = chosen ? dnnl_success : dnnl_unimplemented;
    if (st == dnnl_success && !s->fixed) st = dnnl_primitive_create(&s->prim, pd);
    if (st != dnnl_success) s->prim = NULL;
    if (st == dnnl_success) st = dnnl_memory_desc_init_by_strides(&md_user, 2, wd, dnnl_s8, wstr);
    dnnl_primitive_desc_t rpd = NULL;
    if (st == dnnl_success) st = dnnl_reorder_primitive_desc_create(&rpd, &md_user, engine, chosen, engine, NULL);
    if (st == dnnl_success) st = dnnl_primitive_create(&s->reorder, rpd);
    if (st != dnnl_success) s->reorder = NULL;
    if (rpd) dnnl_primitive_desc_destroy(rpd);
    if (st == dnnl_success) st = dnnl_memory_create(&s->wuser, &md_user, engine, DNNL_MEMORY_NONE);
    if (st != dnnl_success) s->wuser = NULL;
    if (st != dnnl_success) return st;
    s->packed_bytes = dnnl_memory_desc_get_size(chosen);
    s->sw_off = ts_align64(s->packed_bytes);
    s->smd = md_user, s->wmd = *chosen;
    s->scratch_bytes = scratch_md ? dnnl_memory_desc_get_size(scratch_md) : 0;
    dnnl_memory_desc_t md_n, md_1, md_a, md_o;
    dnnl_dims_t nd = {1, s->N}, d1 = {1, 1}, ad = {s->R, s->K}, od = {s->R, s->N};
    dnnl_memory_desc_init_by_tag(&md_n, 2, nd, dnnl_f32, dnnl_ab);
    dnnl_memory_desc_init_by_tag(&md_1, 2, d1, dnnl_f32, dnnl_ab);
    dnnl_memory_desc_init_by_tag(&md_a, 2, ad, dnnl_s8, dnnl_ab);
    dnnl_memory_desc_init_by_tag(&md_o, 2, od, dnnl_f32, dnnl_ab);
    int baked = s->fixed, sa_arg = !baked || !(s->a_scale > 0.f);
    const dnnl_memory_desc_t *mds[Q_NARG] = {&md_a, chosen, sa_arg ? (baked ? &md_1 : &md_n) : NULL,
                                             s->has_bias ? &md_n : NULL, &md_o, s->scratch_bytes ? scratch_md : NULL};
    const int kinds[Q_NARG] = {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1,
                               baked ? DNNL_ARG_BIAS : DNNL_ARG_ATTR_MULTIPLE_POST_OP(1) | DNNL_ARG_SRC_1,
                               DNNL_ARG_DST, DNNL_ARG_SCRATCHPAD};
    for (int i = 0; i < Q_NARG && st == dnnl_success; i++) {
        if (!mds[i]) continue;
        st = dnnl_memory_create(&s->mem[i], mds[i], engine, DNNL_MEMORY_NONE);
        if (st != dnnl_success) s->mem[i] = NULL;
        else s->args[s->nargs++] = (dnnl_exec_arg_t){kinds[i], s->mem[i]};
    }
    if (st == dnnl_success && baked && !(s->c = malloc(sizeof(float) * (size_t)s->N))) st = dnnl_out_of_memory;
    return st;
}

static ts_status i8_prepare(ts_cpu_dev *dev, const ts_plan *plan, const ts_node *n, void **state, size_t *scratch) {
    const ts_graph *g = plan->g;
    const ts_val *a = &g->vals[n->in[0]], *w = &g->vals[n->in[1]];
    ts_attrs_matmul_i8dyn at = TS_NODE_ATTRS(matmul_i8dyn, n);
    *state = NULL;
    *scratch = 0;
    if (!ts_cpu_dnnl_ready(dev)) return TS_OK; /* reference kernel */
    i8_state *s = calloc(1, sizeof *s);
    if (!s) return ts_err(TS_ERR_NOMEM, "op matmul_i8dyn: out of memory");
    s->K = a->shape[a->ndim - 1];
    s->N = w->shape[at.trans_b ? 0 : 1];
    s->R = s->K ? ts_val_numel(a) / s->K : 0;
    s->trans_b = at.trans_b != 0, s->alpha = at.alpha, s->a_scale = at.a_scale, s->fixed = plan->param_gen != NULL;
    s->has_bias = n->nin > 2 && n->in[2] >= 0, s->act = at.act;
    float *ones = s->fixed ? malloc(sizeof(float) * (size_t)(s->N ? s->N : 1)) : NULL;
    for (int64_t i = 0; ones && i < s->N; i++) ones[i] = 1.f; /* the baked form's scales: a probe */
    dnnl_primitive_desc_t pd = s->R && s->K && s->N && (ones || !s->fixed) ? make_pd(dev->dnnl_engine, s, ones) : NULL;
    free(ones);
    if (!pd) { /* no implementation: the reference kernel */
        free(s);
        return TS_OK;
    }
    dnnl_status_t st = build(dev->dnnl_engine, pd, s);
    dnnl_primitive_desc_destroy(pd);
    if (st != dnnl_success) {
        i8_release(s);
        if (st == dnnl_out_of_memory) return ts_err(TS_ERR_NOMEM, "op matmul_i8dyn: out of memory for the int8 weights");
        return TS_OK; /* the reference kernel */
    }
    s->qa_off = ts_align64(s->scratch_bytes);
    s->scale_off = s->qa_off + ts_align64((size_t)(s->R * s->K));
    s->total_bytes = s->scale_off + ts_align64(sizeof(float) * (size_t)s->N) + (s->fixed ? 64 : 0);
    *state = s;
    *scratch = s->total_bytes;
    return TS_OK;
}

/* The weights' per-channel scales sw [N], kept after the packed weights in the copy. */
static float *sw_of(const i8_state *s) { return (float *)((char *)s->copy->data + s->sw_off); }

/* Quantize the weights (w: the f32 parameter's bytes) into the copy's sw and packed buffer (which
 * s->mem[Q_WEI] points at). */
static ts_status requantize(i8_state *s, const float *w, dnnl_stream_t stream) {
    int8_t *qw = malloc((size_t)(s->K * s->N));
    if (!qw) return ts_err(TS_ERR_NOMEM, "op matmul_i8dyn: out of memory quantizing the weights");
    ts_status ts = ts_quant_weights_s8(w, s->K, s->N, s->trans_b, qw, sw_of(s));
    dnnl_exec_arg_t ra[2] = {{DNNL_ARG_FROM, s->wuser}, {DNNL_ARG_TO, s->mem[Q_WEI]}};
    dnnl_status_t st = ts == TS_OK ? dnnl_memory_set_data_handle(s->wuser, qw) : dnnl_success;
    if (ts == TS_OK && st == dnnl_success) st = dnnl_primitive_execute(s->reorder, stream, 2, ra);
    if (ts == TS_OK && st == dnnl_success) st = dnnl_stream_wait(stream);
    free(qw);
    if (ts != TS_OK) return ts;
    if (st != dnnl_success)
        return ts_err(TS_ERR_RUNTIME, "op matmul_i8dyn: reordering the int8 weights: %s", dnnl_status2str(st));
    return TS_OK;
}

/* The baked form's primitive for the copy's current quantization: c[n] = (alpha [a_scale]) sw[n],
 * 1 where sw[n] is 0 (channel n's weights all 0, its sums 0); its weights' layout and scratchpad
 * must be the probe's of prepare() (the copy was reordered into that layout), as conv_int8.c's. */
static ts_status bake(i8_state *s, dnnl_engine_t engine) {
    ts_cpu_i8_scales(sw_of(s), s->N, s->a_scale > 0.f ? s->alpha * s->a_scale : s->alpha, s->c);
    if (s->prim) dnnl_primitive_destroy(s->prim);
    s->prim = NULL;
    dnnl_primitive_desc_t pd = make_pd(engine, s, s->c);
    if (!pd) return ts_err(TS_ERR_RUNTIME, "op matmul_i8dyn: oneDNN made no int8 matmul for the weights' scales");
    const dnnl_memory_desc_t *smd = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
    const dnnl_memory_desc_t *wmd = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
    int same = (smd ? dnnl_memory_desc_get_size(smd) : 0) <= s->scratch_bytes && wmd && dnnl_memory_desc_equal(wmd, &s->wmd);
    dnnl_status_t st = same ? dnnl_primitive_create(&s->prim, pd) : dnnl_unimplemented;
    dnnl_primitive_desc_destroy(pd);
    if (st != dnnl_success) {
        s->prim = NULL;
        return ts_err(TS_ERR_RUNTIME, "op matmul_i8dyn: making the int8 matmul for the weights' scales: %s",
                      same ? dnnl_status2str(st) : "its weights' layout or scratchpad differ from the compiled ones");
    }
    s->baked_copy = s->copy, s->baked_stamp = s->copy->stamp;
    return TS_OK;
}

static ts_status i8_run(const ts_kargs *k) {
    i8_state *s = k->state;
    if (!s) return ts_op_get(TS_OP_MATMUL_I8DYN)->kernel(k);
    if (s->total_bytes > k->scratch_bytes || !k->scratch)
        return ts_err(TS_ERR_RUNTIME, "op matmul_i8dyn: the workspace has %zu bytes, the kernel needs %zu",
                      k->scratch_bytes, s->total_bytes);
    ts_cpu_dev *dev = k->device;
    dnnl_stream_t stream = dev->dnnl_stream;
    if (!s->copy || (s->fixed && s->copy->src != k->in[1])) { /* first run, or the weight buffer moved */
        ts_weight_copy_release(s->copy);
        s->baked_copy = NULL; /* a new copy may take the old one's address */
        if (!(s->copy = ts_weight_copy_get(s->fixed ? k->in[1] : NULL, &s->smd, &s->wmd,
                                           s->sw_off + sizeof(float) * (size_t)s->N)))
            return ts_err(TS_ERR_NOMEM, "op matmul_i8dyn: out of memory for the int8 weights");
        dnnl_status_t st = dnnl_memory_set_data_handle(s->mem[Q_WEI], s->copy->data);
        if (st != dnnl_success)
            return ts_err(TS_ERR_RUNTIME, "op matmul_i8dyn: oneDNN set_data_handle: %s", dnnl_status2str(st));
    }
    if (!s->fixed || ts_weight_stale(&s->copy->stamp, k->param_gen)) {
        ts_status ts = requantize(s, k->in[1], stream);
        if (ts != TS_OK) return ts;
        ts_weight_made(&s->copy->stamp, k->param_gen);
    }
    if (s->fixed && (!s->prim || s->baked_copy != s->copy || s->baked_stamp.made != s->copy->stamp.made ||
                     s->baked_stamp.gen != s->copy->stamp.gen)) {
        ts_status ts = bake(s, dev->dnnl_engine);
        if (ts != TS_OK) return ts;
    }
    int8_t *qa = (int8_t *)((char *)k->scratch + s->qa_off);
    float *num = (float *)((char *)k->scratch + s->scale_off); /* scale [N], or b' [N] then sa */
    float sa, ia;
    ts_quant_act_scale(k->in[0], s->R * s->K, s->a_scale, &sa, &ia);
    ts_quant_s8(k->in[0], s->R * s->K, ia, qa);
    const float *sw = sw_of(s), *bias = s->has_bias ? k->in[2] : NULL;
    void *scales = num, *biases = (void *)bias;
    if (!s->fixed) {
        for (int64_t n = 0; n < s->N; n++) num[n] = (s->alpha * sa) * sw[n];
    } else {
        float *sap = num + ts_align64(sizeof(float) * (size_t)s->N) / sizeof(float);
        if (ts_cpu_i8_bias_scaled(bias, s->c, s->N, sa, s->a_scale > 0.f, num, sap))
            return ts_op_get(TS_OP_MATMUL_I8DYN)->kernel(k); /* sa c[n] too small to divide by */
        scales = sap, biases = num;
    }
    void *ptr[Q_NARG] = {qa, NULL, scales, biases, k->out[0], k->scratch};
    for (int i = 0; i < Q_NARG; i++) {
        if (!s->mem[i] || i == Q_WEI) continue;
        dnnl_status_t st = dnnl_memory_set_data_handle(s->mem[i], ptr[i]);
        if (st != dnnl_success)
            return ts_err(TS_ERR_RUNTIME, "op matmul_i8dyn: oneDNN set_data_handle: %s", dnnl_status2str(st));
    }
    dnnl_status_t st = dnnl_primitive_execute(s->prim, stream, s->nargs, s->args);
    if (st == dnnl_success) st = dnnl_stream_wait(stream);
    if (st != dnnl_success) return ts_err(TS_ERR_RUNTIME, "op matmul_i8dyn: oneDNN execute: %s", dnnl_status2str(st));
    return TS_OK;
}

static size_t i8_kept_bytes(const void *state) {
    const i8_state *s = state;
    return s->packed_bytes + sizeof(float) * (size_t)s->N;
}

const ts_cpu_kernel ts_cpu_matmul_i8dyn = {TS_OP_MATMUL_I8DYN, i8_prepare, i8_run, i8_release, i8_kept_bytes,
                                          NULL};
