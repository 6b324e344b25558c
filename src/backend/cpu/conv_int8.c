/*
 * conv_int8.c — the CPU backend's conv2d_i8 (int8 convolution; the math is stated in
 * src/ops/conv_int8.c): oneDNN 2.6's int8 convolution primitive, s8 activations x s8 weights,
 * int32 sums, f32 output; depthwise and grouped convolutions through its groups.
 *
 *   x [N, C, H, W] f32, w [O, C/G, KH, KW] f32, bias [O] optional, y [N, O, OH, OW] f32
 *
 * prepare() (at compile time) builds one primitive per node:
 *  - src s8 and dst f32 with format "any": oneDNN's int8 kernels choose channels last (nhwc),
 *    depthwise ones too; weights s8 "any" (its blocked layout, with the s8 x s8 compensation
 *    appended, made by the reorder, as in backend/cpu/matmul_int8.c). DNNL_VERBOSE=1 on this
 *    machine's AVX-512 VNNI CPU (tests/test_quant_conv.c's cases, the PP-OCRv4 detector): dense,
 *    strided, dilated and depthwise convolutions run jit_int8:avx512_core_vnni, 1 x 1 ones
 *    brgconv_1x1:avx512_core_vnni, wider ones brgconv:avx512_core_vnni; a grouped convolution of
 *    a few channels per group gemm_s8s8s32:jit. A dst forced to NCHW (tried) ran the detector
 *    16x slower, hence the reorder back;
 *  - the epilogue y = act(acc sa sw[o] + bias[o]), in one of two forms, as backend/cpu/
 *    matmul_int8.c's (which says why; oneDNN's runtime output scales push its int8 kernels off
 *    their jit paths):
 *    baked (weights fixed between runs): sw[o] as constant per-channel output scales (1 where sw[o]
 *    is 0), the primitive made on the first run and again after a weight was written; sa a post-op
 *    multiply by a [1, 1, 1, 1] tensor (folded into the scales when a_scale fixes it); the bias the
 *    convolution's bias input, which oneDNN adds before the scales, so given as b'[o] = bias[o] /
 *    (sa c[o]); a run where that overflows takes the reference kernel;
 *    per run (weights that may change during a run): a binary multiply by scale [1, O, 1, 1]
 *    (scale[o] = sa sw[o], written every run), the bias as a binary add;
 *    then conv2d's epilogue as eltwise post-ops (relu or leaky relu, clip). On the PP-OCRv4
 *    detector (960 x 960, 2 threads) the two [1, O, 1, 1] post-ops cost about 10 ms of 147.
 *  - around it: the activations are quantized (ops/conv_int8.c's helpers) into s8 NCHW and
 *    reordered by oneDNN into the primitive's layout (a pass over a quarter of the f32 bytes); its
 *    f32 output reordered back to NCHW. Either reorder is skipped where the layouts agree.
 *  - scratchpad mode USER for the primitive; the workspace (kargs->scratch) holds, 64-byte aligned
 *    and in this order: the scratchpad, qx [N, C, H, W] s8, qx in the primitive's layout, the f32
 *    output in the primitive's layout, scale [O].
 * s8 rather than u8 activations: symmetric, no zero point; oneDNN 2.6's x86 int8 convolutions take
 * s8 src on their jit paths above (the VNNI instruction multiplies u8 x s8: the kernel adds 128 to
 * the activations and subtracts the weights' compensation, made once by the reorder), so no shift
 * to u8 is needed.
 * Weights: quantized per output channel (ts_quant_weights_s8 on w seen as [O, C/G KH KW], the
 * op's own code, so the two kernels quantize bit-identically) into a plain s8 copy, reordered
 * into the node's own buffer in oneDNN's layout on the first run and again on the first run
 * after a weight was written (ts_plan.param_gen moved: ts_weight_stamp); sw [O] kept beside it.
 * A weight that is not fixed (not a parameter or constant, or no param_gen) is quantized on
 * every run. The kept bytes count in ts_memory.weight_copies.
 * If oneDNN cannot make the primitive, the node has no state and run() calls the reference kernel.
 *
 * Which kernel. Where the int8 kernel's extra passes (max |x|, quantization, the reorders to and
 * from channels-last) cost more than its arithmetic saves (small convolutions, 1 x 1 and
 * depthwise ones that conv_dnnl.c runs on NCHW without reorders: the PP-OCRv4 detector's), the
 * f32 convolution is faster. So, as TensorRT's builder times a layer's kernels and may keep it in
 * higher precision, a node with fixed weights whose attribute choose is 1 (the quantization pass
 * sets it; a conv2d_i8 built with 0 asked for int8 math) also prepares conv_dnnl.c's f32 kernel for itself
 * (same node: conv2d_i8's attributes are conv2d's) and its first run times the two (choose()):
 * each once untimed, then CHOOSE_ROUNDS times each, alternating; the best times decide, for the
 * program's life, and the run's output is the kept kernel's. The profile names the kept kernel
 * (ci8_variant: "conv2d_i8 (int8)" / "(f32)"). The device option "conv_int8" "always" (read at
 * compile) prepares no f32 kernel. Both kernels keep their weight copies (kept_bytes counts both).
 */
#include "backend/cpu/cpu.h"
#include "graph/op_attrs.h"

#include <oneapi/dnnl/dnnl.h>
#include <oneapi/dnnl/dnnl_debug.h>

/* The primitive's arguments (NULL memory where unused). */
enum { Q_SRC, Q_WEI, Q_SCALES, Q_BIAS, Q_DST, Q_SCRATCH, Q_NARG };

typedef struct ci8_state {
    dnnl_primitive_t prim, wreorder, src_reorder, dst_reorder; /* a reorder NULL when not needed */
    dnnl_memory_t mem[Q_NARG];
    dnnl_memory_t wuser, src_user, dst_user; /* plain s8 weights, plain s8 qx, plain f32 y */
    dnnl_exec_arg_t args[Q_NARG];
    int nargs;
    int64_t N, C, H, W, O, Kw; /* Kw = C/G KH KW */
    size_t scratch_bytes, qx_off, src_off, dst_off, scale_off, total_bytes;
    void *packed;              /* the weights in oneDNN's layout (owned) */
    size_t packed_bytes;
    float *sw;                 /* [O] the weights' per-channel scales (owned) */
    int fixed;                 /* weights change only between runs: the baked form */
    ts_weight_stamp stamp;
    float a_scale;             /* > 0: the activations' fixed scale */
    float *c;                  /* the baked form: [O] the constant scales its prim holds */
    int baked;                 /* the baked form: prim is made for the current sw */
    void *f32;                 /* conv_dnnl.c's f32 kernel for this node (see "Which kernel"), or NULL */
    int choice;                /* CI8_* */
} ci8_state;

/* Which kernel a node with both runs: not yet timed (its first run times them), int8, f32. */
enum { CI8_UNDECIDED, CI8_INT8, CI8_F32 };
enum { CHOOSE_ROUNDS = 2 };
extern const ts_cpu_kernel ts_cpu_conv2d_dnnl; /* conv_dnnl.c */

static void ci8_release(void *state) {
    ci8_state *s = state;
    if (!s) return;
    for (int i = 0; i < Q_NARG; i++)
        if (s->mem[i]) dnnl_memory_destroy(s->mem[i]);
    dnnl_memory_t users[3] = {s->wuser, s->src_user, s->dst_user};
    for (int i = 0; i < 3; i++)
        if (users[i]) dnnl_memory_destroy(users[i]);
    dnnl_primitive_t prims[4] = {s->prim, s->wreorder, s->src_reorder, s->dst_reorder};
    for (int i = 0; i < 4; i++)
        if (prims[i]) dnnl_primitive_destroy(prims[i]);
    ts_free(s->packed);
    free(s->sw);
    free(s->c);
    if (s->f32) ts_cpu_conv2d_dnnl.release(s->f32);
    free(s);
}

/* The descriptors of node n: src, dst and weights in the layout oneDNN chooses (any) or as
 * tessera stores them (user), the per-channel post-op operand [1, O, 1, 1], the window. */
typedef struct {
    dnnl_memory_desc_t src_any, dst_any, wei_any, src_user, dst_user, wei_user, chan, one, bias;
    dnnl_dims_t strides, dil, pl, pr;
} ci8_mds;

static dnnl_status_t describe(const ts_graph *g, const ts_node *n, ci8_mds *m) {
    const ts_val *x = &g->vals[n->in[0]], *w = &g->vals[n->in[1]], *y = &g->vals[n->out[0]];
    ts_attrs_conv2d_i8 at = TS_NODE_ATTRS(conv2d_i8, n);
    int64_t G = at.groups, O = w->shape[0];
    dnnl_dims_t sd = {x->shape[0], x->shape[1], x->shape[2], x->shape[3]};
    dnnl_dims_t dd = {y->shape[0], y->shape[1], y->shape[2], y->shape[3]}, cd = {1, O, 1, 1}, d1 = {1, 1, 1, 1},
                bd = {O};
    dnnl_dims_t wd = {O, w->shape[1], w->shape[2], w->shape[3]};
    dnnl_dims_t gd = {G, O / G, w->shape[1], w->shape[2], w->shape[3]};
    m->strides[0] = at.stride_h, m->strides[1] = at.stride_w;
    m->dil[0] = at.dilation_h - 1, m->dil[1] = at.dilation_w - 1;
    m->pl[0] = at.pad_top, m->pl[1] = at.pad_left, m->pr[0] = at.pad_bottom, m->pr[1] = at.pad_right;
    dnnl_status_t st = dnnl_memory_desc_init_by_tag(&m->src_any, 4, sd, dnnl_s8, dnnl_format_tag_any);
    if (st == dnnl_success) st = dnnl_memory_desc_init_by_tag(&m->src_user, 4, sd, dnnl_s8, dnnl_abcd);
    if (st == dnnl_success) st = dnnl_memory_desc_init_by_tag(&m->dst_any, 4, dd, dnnl_f32, dnnl_format_tag_any);
    if (st == dnnl_success) st = dnnl_memory_desc_init_by_tag(&m->dst_user, 4, dd, dnnl_f32, dnnl_abcd);
    if (st == dnnl_success) st = dnnl_memory_desc_init_by_tag(&m->chan, 4, cd, dnnl_f32, dnnl_abcd);
    if (st == dnnl_success) st = dnnl_memory_desc_init_by_tag(&m->one, 4, d1, dnnl_f32, dnnl_abcd);
    if (st == dnnl_success) st = dnnl_memory_desc_init_by_tag(&m->bias, 1, bd, dnnl_f32, dnnl_a);
    if (st == dnnl_success)
        st = G == 1 ? dnnl_memory_desc_init_by_tag(&m->wei_any, 4, wd, dnnl_s8, dnnl_format_tag_any)
                    : dnnl_memory_desc_init_by_tag(&m->wei_any, 5, gd, dnnl_s8, dnnl_format_tag_any);
    if (st == dnnl_success)
        st = G == 1 ? dnnl_memory_desc_init_by_tag(&m->wei_user, 4, wd, dnnl_s8, dnnl_abcd)
                    : dnnl_memory_desc_init_by_tag(&m->wei_user, 5, gd, dnnl_s8, dnnl_abcde);
    return st;
}

/* The primitive descriptor: the convolution with its epilogue, the per-run form when c is NULL
 * (post-ops: times scale, plus bias), else the baked form (output scales c [O], the bias input,
 * post-op: times sa unless a_scale is fixed); then the activation. NULL when oneDNN has no
 * implementation. */
static dnnl_primitive_desc_t make_pd(dnnl_engine_t eng, const ts_node *n, const ci8_mds *m, const float *c) {
    ts_attrs_conv2d_i8 at = TS_NODE_ATTRS(conv2d_i8, n);
    int has_bias = n->nin > 2 && n->in[2] >= 0;
    dnnl_convolution_desc_t d;
    dnnl_status_t st = dnnl_dilated_convolution_forward_desc_init(&d, dnnl_forward_inference, dnnl_convolution_direct,
                                                                  &m->src_any, &m->wei_any,
                                                                  c && has_bias ? &m->bias : NULL, &m->dst_any,
                                                                  m->strides, m->dil, m->pl, m->pr);
    if (st != dnnl_success) return NULL;
    dnnl_primitive_attr_t attr = NULL;
    dnnl_post_ops_t po = NULL;
    dnnl_primitive_desc_t pd = NULL;
    st = dnnl_primitive_attr_create(&attr);
    if (st == dnnl_success) st = dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user);
    if (st == dnnl_success && c) st = dnnl_primitive_attr_set_output_scales(attr, m->chan.dims[1], 2, c);
    if (st == dnnl_success) st = dnnl_post_ops_create(&po);
    /* the scale is post-op 0, the per-run form's bias post-op 1: their arguments
     * DNNL_ARG_ATTR_MULTIPLE_POST_OP(0 / 1) */
    if (st == dnnl_success && !c) st = dnnl_post_ops_append_binary(po, dnnl_binary_mul, &m->chan);
    if (st == dnnl_success && !c && has_bias) st = dnnl_post_ops_append_binary(po, dnnl_binary_add, &m->chan);
    if (st == dnnl_success && c && !(at.a_scale > 0.f)) st = dnnl_post_ops_append_binary(po, dnnl_binary_mul, &m->one);
    if (st == dnnl_success && at.act != TS_CONV_ACT_NONE)
        st = dnnl_post_ops_append_eltwise(po, 1.f, dnnl_eltwise_relu,
                                          at.act == TS_CONV_ACT_LEAKY_RELU ? at.act_alpha : 0.f, 0.f);
    if (st == dnnl_success && at.clamp) st = dnnl_post_ops_append_eltwise(po, 1.f, dnnl_eltwise_clip, at.lo, at.hi);
    if (st == dnnl_success) st = dnnl_primitive_attr_set_post_ops(attr, po);
    if (st == dnnl_success) st = dnnl_primitive_desc_create(&pd, &d, attr, eng, NULL);
    if (st != dnnl_success) pd = NULL;
    if (po) dnnl_post_ops_destroy(po);
    if (attr) dnnl_primitive_attr_destroy(attr);
    return pd;
}

/* A reorder from `from` to `to` into *r (NULL when the two agree). */
static dnnl_status_t make_reorder(dnnl_engine_t eng, const dnnl_memory_desc_t *from, const dnnl_memory_desc_t *to,
                                  dnnl_primitive_t *r) {
    *r = NULL;
    if (dnnl_memory_desc_equal(from, to)) return dnnl_success;
    dnnl_primitive_desc_t rpd = NULL;
    dnnl_status_t st = dnnl_reorder_primitive_desc_create(&rpd, from, eng, to, eng, NULL);
    if (st == dnnl_success) st = dnnl_primitive_create(r, rpd);
    if (st != dnnl_success) *r = NULL;
    if (rpd) dnnl_primitive_desc_destroy(rpd);
    return st;
}

/* The primitive, its reorders, the kept weights' buffer, the memory objects (run() sets their
 * data), the execution arguments and the workspace offsets. */
static dnnl_status_t build(dnnl_engine_t eng, dnnl_primitive_desc_t pd, const ci8_mds *m, int has_bias,
                           ci8_state *s) {
    const dnnl_memory_desc_t *src = dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0);
    const dnnl_memory_desc_t *wei = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
    const dnnl_memory_desc_t *dst = dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0);
    const dnnl_memory_desc_t *scr = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
    if (!src || !wei || !dst) return dnnl_unimplemented;
    dnnl_status_t st = s->fixed ? dnnl_success : dnnl_primitive_create(&s->prim, pd); /* baked: on the first run */
    if (st != dnnl_success) s->prim = NULL;
    if (st == dnnl_success) st = make_reorder(eng, &m->wei_user, wei, &s->wreorder);
    if (st == dnnl_success) st = make_reorder(eng, &m->src_user, src, &s->src_reorder);
    if (st == dnnl_success) st = make_reorder(eng, dst, &m->dst_user, &s->dst_reorder);
    if (st != dnnl_success) return st;
    if (!s->wreorder) return dnnl_unimplemented; /* oneDNN's int8 weights carry a compensation */
    s->packed_bytes = dnnl_memory_desc_get_size(wei);
    s->packed = ts_alloc(s->packed_bytes, 0);
    s->sw = malloc(sizeof(float) * (size_t)s->O);
    s->c = s->fixed ? malloc(sizeof(float) * (size_t)s->O) : NULL;
    if (!s->packed || !s->sw || (s->fixed && !s->c)) return dnnl_out_of_memory;
    s->scratch_bytes = scr ? dnnl_memory_desc_get_size(scr) : 0;
    s->qx_off = ts_align64(s->scratch_bytes);
    s->src_off = s->qx_off + ts_align64((size_t)(s->N * s->C * s->H * s->W));
    s->dst_off = s->src_off + (s->src_reorder ? ts_align64(dnnl_memory_desc_get_size(src)) : 0);
    s->scale_off = s->dst_off + (s->dst_reorder ? ts_align64(dnnl_memory_desc_get_size(dst)) : 0);
    s->total_bytes = s->scale_off + ts_align64(sizeof(float) * (size_t)s->O) + 64; /* scale [O] or b' [O]; sa */
    int baked = s->fixed, sa_arg = !baked || !(s->a_scale > 0.f);
    const dnnl_memory_desc_t *mds[Q_NARG] = {src, wei, sa_arg ? (baked ? &m->one : &m->chan) : NULL,
                                             has_bias ? (baked ? &m->bias : &m->chan) : NULL, dst,
                                             s->scratch_bytes ? scr : NULL};
    const int kinds[Q_NARG] = {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1,
                               baked ? DNNL_ARG_BIAS : DNNL_ARG_ATTR_MULTIPLE_POST_OP(1) | DNNL_ARG_SRC_1,
                               DNNL_ARG_DST, DNNL_ARG_SCRATCHPAD};
    for (int i = 0; i < Q_NARG && st == dnnl_success; i++) {
        if (!mds[i]) continue;
        st = dnnl_memory_create(&s->mem[i], mds[i], eng, i == Q_WEI ? s->packed : DNNL_MEMORY_NONE);
        if (st != dnnl_success) s->mem[i] = NULL;
        else s->args[s->nargs++] = (dnnl_exec_arg_t){kinds[i], s->mem[i]};
    }
    if (st == dnnl_success) st = dnnl_memory_create(&s->wuser, &m->wei_user, eng, DNNL_MEMORY_NONE);
    if (st != dnnl_success) s->wuser = NULL;
    if (st == dnnl_success) st = dnnl_memory_create(&s->src_user, &m->src_user, eng, DNNL_MEMORY_NONE);
    if (st != dnnl_success) s->src_user = NULL;
    if (st == dnnl_success) st = dnnl_memory_create(&s->dst_user, &m->dst_user, eng, DNNL_MEMORY_NONE);
    if (st != dnnl_success) s->dst_user = NULL;
    return st;
}

static ts_status ci8_prepare(ts_cpu_dev *dev, const ts_plan *plan, const ts_node *n, void **state, size_t *scratch) {
    const ts_graph *g = plan->g;
    const ts_val *x = &g->vals[n->in[0]], *w = &g->vals[n->in[1]];
    *state = NULL;
    *scratch = 0;
    if (dev->conv_reference || !ts_cpu_dnnl_ready(dev)) return TS_OK; /* reference kernel */
    ci8_state *s = calloc(1, sizeof *s);
    if (!s) return ts_err(TS_ERR_NOMEM, "op conv2d_i8: out of memory");
    s->N = x->shape[0], s->C = x->shape[1], s->H = x->shape[2], s->W = x->shape[3];
    s->O = w->shape[0], s->Kw = w->shape[1] * w->shape[2] * w->shape[3];
    s->fixed = plan->param_gen != NULL && ts_fixed_weight(g, n->in[1]);
    s->a_scale = TS_NODE_ATTRS(conv2d_i8, n).a_scale;
    ci8_mds m;
    float *ones = s->fixed ? malloc(sizeof(float) * (size_t)(s->O ? s->O : 1)) : NULL;
    for (int64_t i = 0; ones && i < s->O; i++) ones[i] = 1.f; /* the baked form's scales: a probe */
    dnnl_primitive_desc_t pd = describe(g, n, &m) == dnnl_success && (ones || !s->fixed)
                                   ? make_pd(dev->dnnl_engine, n, &m, ones) : NULL;
    free(ones);
    if (!pd) { /* no implementation: the reference kernel */
        free(s);
        return TS_OK;
    }
    dnnl_status_t st = build(dev->dnnl_engine, pd, &m, n->nin > 2 && n->in[2] >= 0, s);
    dnnl_primitive_desc_destroy(pd);
    if (st != dnnl_success) {
        ci8_release(s);
        if (st == dnnl_out_of_memory) return ts_err(TS_ERR_NOMEM, "op conv2d_i8: out of memory for the int8 weights");
        return TS_OK; /* the reference kernel */
    }
    *state = s;
    *scratch = s->total_bytes;
    s->choice = CI8_INT8;
    if (s->fixed && TS_NODE_ATTRS(conv2d_i8, n).choose && !dev->conv_int8_always) { /* see "Which kernel" */
        size_t need = 0;
        ts_status ps = ts_cpu_conv2d_dnnl.prepare(dev, plan, n, &s->f32, &need);
        if (ps != TS_OK) return ps; /* s is released with the plan */
        if (s->f32) {
            s->choice = CI8_UNDECIDED;
            if (need > *scratch) *scratch = need;
        }
    }
    return TS_OK;
}

static ts_status dnnl_fail(const char *what, dnnl_status_t st) {
    return ts_err(TS_ERR_RUNTIME, "op conv2d_i8: oneDNN %s: %s", what, dnnl_status2str(st));
}

/* Quantize the weights (w: the f32 parameter's bytes) into s->sw and the packed buffer. */
static ts_status requantize(ci8_state *s, const float *w, dnnl_stream_t stream) {
    int8_t *qw = malloc((size_t)(s->O * s->Kw));
    if (!qw) return ts_err(TS_ERR_NOMEM, "op conv2d_i8: out of memory quantizing the weights");
    ts_status ts = ts_quant_weights_s8(w, s->Kw, s->O, 1, qw, s->sw);
    dnnl_exec_arg_t ra[2] = {{DNNL_ARG_FROM, s->wuser}, {DNNL_ARG_TO, s->mem[Q_WEI]}};
    dnnl_status_t st = ts == TS_OK ? dnnl_memory_set_data_handle(s->wuser, qw) : dnnl_success;
    if (ts == TS_OK && st == dnnl_success) st = dnnl_primitive_execute(s->wreorder, stream, 2, ra);
    if (ts == TS_OK && st == dnnl_success) st = dnnl_stream_wait(stream);
    free(qw);
    if (ts != TS_OK) return ts;
    return st == dnnl_success ? TS_OK : dnnl_fail("reordering the int8 weights", st);
}

/* Run reorder r from memory a to memory b. */
static dnnl_status_t reorder(dnnl_primitive_t r, dnnl_memory_t a, dnnl_memory_t b, dnnl_stream_t stream) {
    dnnl_exec_arg_t ra[2] = {{DNNL_ARG_FROM, a}, {DNNL_ARG_TO, b}};
    return dnnl_primitive_execute(r, stream, 2, ra);
}

/* The baked form's primitive for the current sw: c[o] = [a_scale] sw[o], 1 where sw[o] is 0 (channel
 * o's weights all 0, its sums 0); its layouts and scratchpad must be the probe's of prepare(). */
static ts_status bake(ci8_state *s, const ts_kargs *k) {
    ts_cpu_i8_scales(s->sw, s->O, s->a_scale > 0.f ? s->a_scale : 1.f, s->c);
    if (s->prim) dnnl_primitive_destroy(s->prim);
    s->prim = NULL, s->baked = 0;
    ci8_mds m;
    dnnl_engine_t eng = ((ts_cpu_dev *)k->device)->dnnl_engine;
    dnnl_primitive_desc_t pd = describe(k->g, k->node, &m) == dnnl_success ? make_pd(eng, k->node, &m, s->c) : NULL;
    if (!pd) return ts_err(TS_ERR_RUNTIME, "op conv2d_i8: oneDNN made no int8 convolution for the weights' scales");
    const dnnl_memory_desc_t *scr = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
    const dnnl_memory_desc_t *mine[3], *its[3] = {dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0),
                                                  dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0),
                                                  dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0)};
    int same = (scr ? dnnl_memory_desc_get_size(scr) : 0) <= s->scratch_bytes;
    const dnnl_memory_t mem[3] = {s->mem[Q_SRC], s->mem[Q_WEI], s->mem[Q_DST]};
    for (int i = 0; i < 3 && same; i++)
        same = dnnl_memory_get_memory_desc(mem[i], &mine[i]) == dnnl_success && its[i] &&
               dnnl_memory_desc_equal(mine[i], its[i]);
    dnnl_status_t st = same ? dnnl_primitive_create(&s->prim, pd) : dnnl_unimplemented;
    dnnl_primitive_desc_destroy(pd);
    if (st != dnnl_success) {
        s->prim = NULL;
        return ts_err(TS_ERR_RUNTIME, "op conv2d_i8: making the int8 convolution for the weights' scales: %s",
                      same ? dnnl_status2str(st) : "its layouts or scratchpad differ from the compiled ones");
    }
    s->baked = 1;
    return TS_OK;
}

/* The int8 kernel on node k (s its state). */
static ts_status run_int8(ci8_state *s, const ts_kargs *k) {
    if (s->total_bytes > k->scratch_bytes || !k->scratch)
        return ts_err(TS_ERR_RUNTIME, "op conv2d_i8: the workspace has %zu bytes, the kernel needs %zu",
                      k->scratch_bytes, s->total_bytes);
    dnnl_stream_t stream = ((ts_cpu_dev *)k->device)->dnnl_stream;
    if (!s->fixed || ts_weight_stale(&s->stamp, k->param_gen)) {
        ts_status ts = requantize(s, k->in[1], stream);
        if (ts != TS_OK) return ts;
        ts_weight_made(&s->stamp, k->param_gen);
        s->baked = 0;
    }
    if (s->fixed && !s->baked) {
        ts_status ts = bake(s, k);
        if (ts != TS_OK) return ts;
    }
    char *ws = k->scratch;
    int8_t *qx = (int8_t *)(ws + s->qx_off);
    float *num = (float *)(ws + s->scale_off); /* scale [O], or b' [O] then sa */
    int64_t nx = s->N * s->C * s->H * s->W;
    float ia, sa = ts_conv_i8_act_scale(k->node, k->in[0], nx, &ia);
    const float *bias = k->node->nin > 2 && k->node->in[2] >= 0 ? k->in[2] : NULL;
    void *scales = num, *biases = (void *)bias;
    if (!s->fixed) {
        for (int64_t o = 0; o < s->O; o++) num[o] = sa * s->sw[o];
    } else {
        float *sap = num + ts_align64(sizeof(float) * (size_t)s->O) / sizeof(float);
        if (ts_cpu_i8_bias_scaled(bias, s->c, s->O, sa, s->a_scale > 0.f, num, sap))
            return ts_op_get(TS_OP_CONV2D_I8)->kernel(k); /* sa c[o] too small to divide by */
        scales = sap, biases = num;
    }
    ts_quant_s8(k->in[0], nx, ia, qx);
    void *ptr[Q_NARG] = {s->src_reorder ? ws + s->src_off : (void *)qx, NULL, scales, biases,
                         s->dst_reorder ? ws + s->dst_off : k->out[0], ws};
    dnnl_status_t st = dnnl_success;
    for (int i = 0; i < Q_NARG && st == dnnl_success; i++)
        if (s->mem[i] && i != Q_WEI) st = dnnl_memory_set_data_handle(s->mem[i], ptr[i]);
    if (st == dnnl_success) st = dnnl_memory_set_data_handle(s->src_user, qx);
    if (st == dnnl_success) st = dnnl_memory_set_data_handle(s->dst_user, k->out[0]);
    if (st != dnnl_success) return dnnl_fail("set_data_handle", st);
    if (s->src_reorder) st = reorder(s->src_reorder, s->src_user, s->mem[Q_SRC], stream);
    if (st == dnnl_success) st = dnnl_primitive_execute(s->prim, stream, s->nargs, s->args);
    if (st == dnnl_success && s->dst_reorder) st = reorder(s->dst_reorder, s->mem[Q_DST], s->dst_user, stream);
    if (st == dnnl_success) st = dnnl_stream_wait(stream);
    return st == dnnl_success ? TS_OK : dnnl_fail("execute", st);
}

/* The f32 kernel on node k. */
static ts_status run_f32(ci8_state *s, const ts_kargs *k) {
    ts_kargs kf = *k;
    kf.state = s->f32;
    return ts_cpu_conv2d_dnnl.run(&kf);
}

/* The first run of a node with both kernels: each run once untimed (the int8 one bakes its
 * primitive, the f32 one reorders its weights), then CHOOSE_ROUNDS times each, alternating; the
 * faster best time is kept, and the output is the kept kernel's. */
static ts_status choose(ci8_state *s, const ts_kargs *k) {
    ts_status r = run_int8(s, k);
    if (r == TS_OK) r = run_f32(s, k);
    uint64_t best[2] = {UINT64_MAX, UINT64_MAX};
    for (int round = 0; round < CHOOSE_ROUNDS && r == TS_OK; round++)
        for (int v = 0; v < 2 && r == TS_OK; v++) {
            uint64_t t0 = ts_now_ns();
            r = v ? run_f32(s, k) : run_int8(s, k);
            uint64_t dt = ts_now_ns() - t0;
            if (dt < best[v]) best[v] = dt;
        }
    if (r != TS_OK) return r;
    s->choice = best[1] < best[0] ? CI8_F32 : CI8_INT8;
    return s->choice == CI8_INT8 ? run_int8(s, k) : TS_OK; /* the last run was the f32 one */
}

static ts_status ci8_run(const ts_kargs *k) {
    ci8_state *s = k->state;
    if (!s) return ts_op_get(TS_OP_CONV2D_I8)->kernel(k);
    if (s->choice == CI8_UNDECIDED) return choose(s, k);
    return s->choice == CI8_F32 ? run_f32(s, k) : run_int8(s, k);
}

static size_t ci8_kept_bytes(const void *state) {
    const ci8_state *s = state;
    size_t f32 = s->f32 && ts_cpu_conv2d_dnnl.kept_bytes ? ts_cpu_conv2d_dnnl.kept_bytes(s->f32) : 0;
    return s->packed_bytes + sizeof(float) * (size_t)s->O + f32;
}

/* For the profile: which kernel the node runs, where it had two to choose from. */
static const char *ci8_variant(const void *state) {
    const ci8_state *s = state;
    if (!s->f32) return NULL;
    return s->choice == CI8_F32 ? "f32" : s->choice == CI8_INT8 ? "int8" : NULL;
}

const ts_cpu_kernel ts_cpu_conv2d_i8 = {TS_OP_CONV2D_I8, ci8_prepare, ci8_run, ci8_release, ci8_kept_bytes,
                                        ci8_variant};
