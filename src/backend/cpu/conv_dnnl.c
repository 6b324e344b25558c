/*
 * conv_dnnl.c — the CPU backend's convolutions: oneDNN primitives for conv2d (convolution
 * forward), conv_transpose2d (deconvolution forward) and conv2d_grad_weight (convolution
 * backward weights), and a direct NCHW kernel for depthwise conv2d; for the ops of
 * src/ops/conv.c.
 *
 * Each node gets, at compile time (prepare):
 *  - its primitive, built from the node's geometry: strides, dilation as oneDNN counts it
 *    (d - 1: the cells skipped between taps), padding_l = {top, left}, padding_r = {bottom,
 *    right} (asymmetric pads as they are), groups as 5-D weights [G, O/G, C/G, KH, KW];
 *  - the memory descriptors of tessera's tensors ("user" layouts: NCHW activations, OIHW
 *    weights; conv_transpose2d's [C, O/G, KH, KW] weights seen as oneDNN's
 *    [G, O/G, C/G, KH, KW] through strides);
 *  - where the primitive wants another layout (see "Layouts" below), a reorder primitive and a
 *    buffer in the workspace: inputs are reordered in before the primitive, the output out
 *    after it;
 *  - scratchpad mode USER: the primitive's and the reorders' scratchpads share one region at the
 *    start of the node's scratch bytes, so everything runs in the runtime's shared workspace;
 *  - memory objects made once without data; run() sets their handles and executes;
 *  - where weights change only between runs (ts_plan.param_gen set: an inference program) and
 *    the weight is a parameter or a constant, its reordered copy is not in the workspace but in
 *    a buffer of the node's own, made on the first run and again after param_gen moves (as
 *    matmul_dnnl.c prepacks): a small convolution (Silero VAD's, batch 1) otherwise spends
 *    most of its time reordering its weights every run. Reported as weight_copies.
 * conv2d's fused epilogue (activation, clamp; src/ops/conv.c) runs as oneDNN eltwise post-ops
 * (on the primitive only: the reorders around it take none), and in the depthwise kernel on each
 * plane as it is finished.
 * If oneDNN has no implementation for a case, or a layout it asks for cannot be reordered (or
 * the device's option "conv_algorithm" is "reference" when the program is compiled, for tests of
 * the reference kernels: ts_device_set_option), the node has no state and run() calls the op's
 * reference kernel (src/ops/conv.c).
 *
 * Layouts (choose_layout). oneDNN's fast kernels want blocked activations (nChw8c on AVX2,
 * nChw16c on AVX-512); on plain NCHW it runs im2col + sgemm per group ("gemm:jit"), for
 * depthwise convolutions 4-10x slower than its jit_dw kernel. But tessera's tensors are NCHW
 * between ops, so a blocked primitive costs a reorder in and one out, each a pass over the
 * activation. Measured here (oneDNN 2.6.3, AVX2, 1 thread, CPU time, best of 7-15; shapes of a
 * 960x960 OCR detector; bench/conv.c times the same with wall clocks), blocked-with-reorders vs
 * plain:
 *   dense 3x3 32ch 240^2: 31 vs 43 ms; 96ch 120^2: 64 vs 102; 3->16 s2 960^2: 10 vs 16
 *   1x1 64->128 240^2: 37 vs 32 ms; 16->32 480^2: 19 vs 14; 192ch 60^2: 8.2 vs 7.8
 *   depthwise 3x3 64ch 240^2: 9.8 vs 29 ms; s2: 6.1 vs 16; 5x5 128ch 120^2: 6.5 vs 65
 * so 1x1 stride-1 unpadded convolutions (a plain matrix product per image) stay plain and the
 * other convolutions go blocked, except depthwise conv2d (groups = C = O), which runs the direct
 * NCHW kernel below (dw_forward: no reorders, no workspace): 7.6, 4.2 and 7.6 ms on those three.
 * conv_transpose2d stays plain: its output is stride^2 times its input, and a blocked output pads
 * O to 16 (the OCR detector's last one has O = 1). bench/conv.c's part 3 (2026-12-07, AVX-512, 2
 * threads, medians), blocked-with-reorders vs plain: 2x2 s2 24->1 480^2 32.9 vs 3.3 ms, 24->24
 * 240^2 18.2 vs 10.4, 64->64 120^2 10.7 vs 7.4, 512->256 16^2 2.2 vs 1.5; 4x4 s2 256->128 32^2
 * 5.3 vs 5.2; 3x3 s2 64->32 120^2 6.4 vs 6.3 (best-of-15 timings elsewhere the same day: blocked
 * ahead there by 3%, level or behind everywhere else). The PP-OCRv4 detector: 11% faster.
 * A MobileNet-like stack of 24 convolutions on a 960x960 image (bench/conv.c): 214 ms with this
 * choice, 236 all blocked, 406 all plain (same conditions).
 * The device's option "conv_layout" "plain" or "blocked" (ts_device_set_option; read at compile
 * time) forces one layout for every convolution, depthwise ones included, on oneDNN
 * (bench/conv.c compares).
 */
#include "backend/cpu/cpu.h"
#include "graph/op_attrs.h"

#include <oneapi/dnnl/dnnl.h>
#include <oneapi/dnnl/dnnl_debug.h>
#include <stdio.h>

/* The convolution geometry of a node (src [N, C, H, W], weights [O, C/G, KH, KW], dst
 * [N, O, OH, OW]; see src/ops/conv.c) and where its tensors are in the kernel arguments. */
typedef struct cgeom {
    int64_t N, C, H, W, O, OH, OW, KH, KW, G;
    int64_t stride[2], dil[2], pad_l[2], pad_r[2];
} cgeom;

/* A forward convolution: conv2d, or conv2d_i8 (conv_int8.c runs an int8 convolution through this
 * f32 kernel where that is faster; its attributes are conv2d's at the same indices). */
static int conv_forward(const ts_node *n) { return n->op == TS_OP_CONV2D || n->op == TS_OP_CONV2D_I8; }

static void node_geom(const ts_graph *g, const ts_node *n, cgeom *q) {
    const ts_val *a = &g->vals[n->in[0]], *b = &g->vals[n->in[1]], *o = &g->vals[n->out[0]];
    const ts_val *src = a, *dst = o, *w = b;
    if (n->op == TS_OP_CONV_TRANSPOSE2D) src = o, dst = a;
    if (n->op == TS_OP_CONV2D_GRAD_WEIGHT) src = a, dst = b, w = o;
    q->N = src->shape[0], q->C = src->shape[1], q->H = src->shape[2], q->W = src->shape[3];
    q->O = dst->shape[1], q->OH = dst->shape[2], q->OW = dst->shape[3];
    q->KH = w->shape[2], q->KW = w->shape[3];
    ts_attrs_conv2d at = TS_NODE_ATTRS(conv2d, n); /* the three ops share conv2d's i[0..8] */
    q->stride[0] = at.stride_h, q->stride[1] = at.stride_w;
    q->pad_l[0] = at.pad_top, q->pad_l[1] = at.pad_left, q->pad_r[0] = at.pad_bottom, q->pad_r[1] = at.pad_right;
    q->dil[0] = at.dilation_h - 1, q->dil[1] = at.dilation_w - 1;
    q->G = at.groups;
}

/* One tensor argument of the primitive. */
typedef struct carg {
    int kind;                  /* DNNL_ARG_SRC, ... */
    int slot;                  /* kargs: 0..2 = in[slot], 3 = out[0] */
    dnnl_memory_t user;        /* tessera's layout; its handle is the tensor */
    dnnl_memory_t inner;       /* the primitive's layout in the workspace; NULL: none needed */
    dnnl_primitive_t reorder;  /* user -> inner (inputs) or inner -> user (the output) */
    size_t off;                /* byte offset of inner in the workspace */
    void *kept;                /* the weights only: inner lives here, across runs (see conv_run) */
} carg;

enum { MAXARG = 4 };

typedef struct conv_dnnl {
    int depthwise;         /* 1: the direct NCHW depthwise kernel runs, no primitive */
    dnnl_primitive_t prim;
    carg a[MAXARG];
    int na;
    dnnl_memory_t scratch; /* the shared scratchpad region, NULL when none is needed */
    size_t scratch_bytes;  /* its size: the largest of the primitive's and the reorders' */
    size_t total_bytes;    /* scratchpad + reorder buffers */
    dnnl_exec_arg_t args[MAXARG + 1];
    int nargs;
    size_t kept_bytes;     /* the weights' blocked copy, when kept across runs */
    ts_weight_stamp stamp; /* when it was made */
} conv_dnnl;

static void conv_release(void *state) {
    conv_dnnl *s = state;
    if (!s) return;
    for (int i = 0; i < s->na; i++) {
        if (s->a[i].reorder) dnnl_primitive_destroy(s->a[i].reorder);
        if (s->a[i].inner) dnnl_memory_destroy(s->a[i].inner);
        if (s->a[i].user) dnnl_memory_destroy(s->a[i].user);
        free(s->a[i].kept);
    }
    if (s->scratch) dnnl_memory_destroy(s->scratch);
    if (s->prim) dnnl_primitive_destroy(s->prim);
    free(s);
}

/* Descriptors. `any` asks oneDNN to choose the layout. */
static dnnl_status_t md_tag(dnnl_memory_desc_t *md, int nd, const int64_t *dims, int any) {
    dnnl_dims_t d;
    for (int i = 0; i < nd; i++) d[i] = dims[i];
    static const dnnl_format_tag_t plain[] = {dnnl_format_tag_undef, dnnl_a, dnnl_ab, dnnl_abc, dnnl_abcd, dnnl_abcde};
    return dnnl_memory_desc_init_by_tag(md, nd, d, dnnl_f32, any ? dnnl_format_tag_any : plain[nd]);
}
static dnnl_status_t md_strides(dnnl_memory_desc_t *md, int nd, const int64_t *dims, const int64_t *strides) {
    dnnl_dims_t d, s;
    for (int i = 0; i < nd; i++) d[i] = dims[i], s[i] = strides[i];
    return dnnl_memory_desc_init_by_strides(md, nd, d, dnnl_f32, s);
}

/* Weights [O, C/G, KH, KW] (row-major) as oneDNN's [O, C, KH, KW] or [G, O/G, C/G, KH, KW]. */
static dnnl_status_t md_weights(dnnl_memory_desc_t *md, const cgeom *q, int any) {
    if (q->G == 1) return md_tag(md, 4, (int64_t[]){q->O, q->C, q->KH, q->KW}, any);
    return md_tag(md, 5, (int64_t[]){q->G, q->O / q->G, q->C / q->G, q->KH, q->KW}, any);
}

/* conv_transpose2d's weights: tessera's [Cx, Oy/G, KH, KW] (Cx = q->O, Oy = q->C) as oneDNN
 * deconvolution weights [G, Oy/G, Cx/G, KH, KW] (dims: group, output, input channel). */
static dnnl_status_t md_deconv_weights(dnnl_memory_desc_t *md, const cgeom *q) {
    int64_t G = q->G, OCg = q->C / G, ICg = q->O / G, K = q->KH * q->KW;
    if (G == 1) return md_strides(md, 4, (int64_t[]){OCg, ICg, q->KH, q->KW}, (int64_t[]){K, OCg * K, q->KW, 1});
    return md_strides(md, 5, (int64_t[]){G, OCg, ICg, q->KH, q->KW},
                      (int64_t[]){ICg * OCg * K, K, OCg * K, q->KW, 1});
}

/* Layouts for the activations of node n's primitive: 1 = oneDNN's choice (blocked) with
 * reorders, 0 = plain NCHW (see "Layouts" at the top of the file); forced: the device's
 * conv_layout (TS_CPU_LAYOUT_*). */
static int choose_layout(const ts_node *n, const cgeom *q, int forced) {
    if (forced == TS_CPU_LAYOUT_PLAIN) return 0;
    if (forced == TS_CPU_LAYOUT_BLOCKED) return 1;
    if (n->op == TS_OP_CONV_TRANSPOSE2D) return 0; /* its output, stride^2 x its input, reordered costs more */
    int pointwise = q->KH == 1 && q->KW == 1 && q->stride[0] == 1 && q->stride[1] == 1 && q->pad_l[0] == 0 &&
                    q->pad_l[1] == 0 && q->pad_r[0] == 0 && q->pad_r[1] == 0 && q->G == 1;
    return !(pointwise && n->op != TS_OP_CONV2D_GRAD_WEIGHT);
}

/* The descriptors build() gives oneDNN: src, dst and weights in the layout the primitive may
 * choose (_any; src and dst plain unless blocked) and as tessera stores them (_user), the bias
 * (has_bias), and the window's strides, dilations and pads. */
typedef struct {
    dnnl_memory_desc_t src_any, dst_any, wei_any, bias_md, src_user, dst_user, wei_user;
    int has_bias;
    dnnl_dims_t strides, dil, pl, pr;
} conv_mds;

/* One argument the primitive takes: its kind, kargs slot, tessera's descriptor (user), and the
 * query (q, idx) that gives the descriptor the primitive chose. */
typedef struct {
    int kind, slot;
    const dnnl_memory_desc_t *user;
    dnnl_query_t q;
    int idx;
} conv_want;

/* Node n's descriptors (geometry q) into *m. */
static dnnl_status_t describe(const ts_node *n, const cgeom *q, int blocked, conv_mds *m) {
    int64_t sdims[4] = {q->N, q->C, q->H, q->W}, ddims[4] = {q->N, q->O, q->OH, q->OW};
    m->has_bias = n->nin > 2 && n->in[2] >= 0;
    memset(m->strides, 0, sizeof m->strides), memset(m->dil, 0, sizeof m->dil);
    memset(m->pl, 0, sizeof m->pl), memset(m->pr, 0, sizeof m->pr);
    for (int i = 0; i < 2; i++) {
        m->strides[i] = q->stride[i], m->dil[i] = q->dil[i];
        m->pl[i] = q->pad_l[i], m->pr[i] = q->pad_r[i];
    }
    dnnl_status_t st = md_tag(&m->src_any, 4, sdims, blocked);
    if (st == dnnl_success) st = md_tag(&m->dst_any, 4, ddims, blocked);
    if (st == dnnl_success) st = md_tag(&m->src_user, 4, sdims, 0);
    if (st == dnnl_success) st = md_tag(&m->dst_user, 4, ddims, 0);
    if (st == dnnl_success) st = md_weights(&m->wei_any, q, 1);
    if (st == dnnl_success)
        st = n->op == TS_OP_CONV_TRANSPOSE2D ? md_deconv_weights(&m->wei_user, q) : md_weights(&m->wei_user, q, 0);
    if (st == dnnl_success && m->has_bias)
        st = md_tag(&m->bias_md, 1, (int64_t[]){n->op == TS_OP_CONV_TRANSPOSE2D ? q->C : q->O}, 0);
    return st;
}

/* The primitive descriptor of node n (a convolution, a deconvolution, or a convolution's weight
 * gradient) into *pd, and the arguments it takes into want[0 .. *nw). */
static dnnl_status_t primitive_desc(dnnl_engine_t eng, const ts_node *n, const cgeom *q, const conv_mds *m,
                                    dnnl_primitive_attr_t attr, dnnl_primitive_desc_t *pd, conv_want *want, int *nw) {
    const dnnl_memory_desc_t *bias = m->has_bias ? &m->bias_md : NULL;
    dnnl_primitive_desc_t hint = NULL;
    dnnl_status_t st;
    if (conv_forward(n)) {
        dnnl_convolution_desc_t d;
        st = dnnl_dilated_convolution_forward_desc_init(&d, dnnl_forward_training, dnnl_convolution_direct,
                                                         &m->src_any, &m->wei_any, bias, &m->dst_any, m->strides,
                                                         m->dil, m->pl, m->pr);
        if (st == dnnl_success) st = dnnl_primitive_desc_create(pd, &d, attr, eng, NULL);
        want[(*nw)++] = (conv_want){DNNL_ARG_SRC, 0, &m->src_user, dnnl_query_src_md, 0};
        want[(*nw)++] = (conv_want){DNNL_ARG_WEIGHTS, 1, &m->wei_user, dnnl_query_weights_md, 0};
        if (m->has_bias) want[(*nw)++] = (conv_want){DNNL_ARG_BIAS, 2, &m->bias_md, dnnl_query_weights_md, 1};
        want[(*nw)++] = (conv_want){DNNL_ARG_DST, 3, &m->dst_user, dnnl_query_dst_md, 0};
    } else if (n->op == TS_OP_CONV_TRANSPOSE2D) {
        /* deconvolution: its src is the convolution's dst (x), its dst the convolution's src */
        dnnl_deconvolution_desc_t d;
        dnnl_memory_desc_t wa; /* deconvolution weights are [G, OC/G, IC/G, ..], OC its output (= q->C) */
        st = q->G == 1 ? md_tag(&wa, 4, (int64_t[]){q->C, q->O, q->KH, q->KW}, 1)
                       : md_tag(&wa, 5, (int64_t[]){q->G, q->C / q->G, q->O / q->G, q->KH, q->KW}, 1);
        if (st == dnnl_success)
            st = dnnl_dilated_deconvolution_forward_desc_init(&d, dnnl_forward_training, dnnl_deconvolution_direct,
                                                               &m->dst_any, &wa, bias, &m->src_any, m->strides, m->dil,
                                                               m->pl, m->pr);
        if (st == dnnl_success) st = dnnl_primitive_desc_create(pd, &d, attr, eng, NULL);
        want[(*nw)++] = (conv_want){DNNL_ARG_SRC, 0, &m->dst_user, dnnl_query_src_md, 0};
        want[(*nw)++] = (conv_want){DNNL_ARG_WEIGHTS, 1, &m->wei_user, dnnl_query_weights_md, 0};
        if (m->has_bias) want[(*nw)++] = (conv_want){DNNL_ARG_BIAS, 2, &m->bias_md, dnnl_query_weights_md, 1};
        want[(*nw)++] = (conv_want){DNNL_ARG_DST, 3, &m->src_user, dnnl_query_dst_md, 0};
    } else {
        /* weight gradient: needs a forward primitive descriptor as a hint */
        dnnl_convolution_desc_t f, d;
        st = dnnl_dilated_convolution_forward_desc_init(&f, dnnl_forward_training, dnnl_convolution_direct,
                                                         &m->src_any, &m->wei_any, NULL, &m->dst_any, m->strides,
                                                         m->dil, m->pl, m->pr);
        if (st == dnnl_success) st = dnnl_primitive_desc_create(&hint, &f, NULL, eng, NULL);
        if (st == dnnl_success)
            st = dnnl_dilated_convolution_backward_weights_desc_init(&d, dnnl_convolution_direct, &m->src_any,
                                                                      &m->wei_any, NULL, &m->dst_any, m->strides,
                                                                      m->dil, m->pl, m->pr);
        if (st == dnnl_success) st = dnnl_primitive_desc_create(pd, &d, attr, eng, hint);
        want[(*nw)++] = (conv_want){DNNL_ARG_SRC, 0, &m->src_user, dnnl_query_src_md, 0};
        want[(*nw)++] = (conv_want){DNNL_ARG_DIFF_DST, 1, &m->dst_user, dnnl_query_diff_dst_md, 0};
        want[(*nw)++] = (conv_want){DNNL_ARG_DIFF_WEIGHTS, 3, &m->wei_user, dnnl_query_diff_weights_md, 0};
    }
    if (hint) dnnl_primitive_desc_destroy(hint);
    return st;
}

/* The arguments' memory objects (s->a): tessera's layout, and where the primitive pd chose
 * another, a buffer in the workspace (at *bufs, which grows) and the reorder to or from it;
 * *scratch grows to the largest scratchpad a reorder needs. */
static dnnl_status_t make_args(dnnl_engine_t eng, dnnl_primitive_desc_t pd, dnnl_primitive_attr_t attr,
                               const conv_want *want, int nw, int keep_weights, conv_dnnl *s, size_t *scratch,
                               size_t *bufs) {
    dnnl_status_t st = dnnl_success;
    for (int i = 0; i < nw && st == dnnl_success; i++) {
        carg *c = &s->a[s->na++];
        c->kind = want[i].kind;
        c->slot = want[i].slot;
        const dnnl_memory_desc_t *pmd = dnnl_primitive_desc_query_md(pd, want[i].q, want[i].idx);
        st = dnnl_memory_create(&c->user, want[i].user, eng, DNNL_MEMORY_NONE);
        if (st != dnnl_success) { c->user = NULL; break; }
        if (!pmd || dnnl_memory_desc_equal(pmd, want[i].user)) continue;
        size_t bytes = dnnl_memory_desc_get_size(pmd);
        if (keep_weights && c->kind == DNNL_ARG_WEIGHTS) {
            if (posix_memalign(&c->kept, 64, bytes ? bytes : 64)) { c->kept = NULL; st = dnnl_out_of_memory; break; }
            s->kept_bytes += bytes;
        }
        st = dnnl_memory_create(&c->inner, pmd, eng, c->kept ? c->kept : DNNL_MEMORY_NONE);
        if (st != dnnl_success) { c->inner = NULL; break; }
        c->off = *bufs;
        if (!c->kept) *bufs += ts_align64(bytes);
        int out = c->slot == 3;
        dnnl_primitive_desc_t rpd = NULL;
        st = dnnl_reorder_primitive_desc_create(&rpd, out ? pmd : want[i].user, eng, out ? want[i].user : pmd, eng,
                                                attr);
        if (st == dnnl_success) {
            const dnnl_memory_desc_t *rs = dnnl_primitive_desc_query_md(rpd, dnnl_query_scratchpad_md, 0);
            size_t rb = rs ? dnnl_memory_desc_get_size(rs) : 0;
            if (rb > *scratch) *scratch = rb;
            st = dnnl_primitive_create(&c->reorder, rpd);
            if (st != dnnl_success) c->reorder = NULL;
        }
        if (rpd) dnnl_primitive_desc_destroy(rpd);
    }
    return st;
}

/* conv2d's fused epilogue (src/ops/conv.c: act, then clamp) as eltwise post-ops of attr:
 * relu with slope 0 or alpha (leaky), then clip(lo, hi). */
static dnnl_status_t epilogue_post_ops(const ts_node *n, dnnl_primitive_attr_t attr) {
    ts_attrs_conv2d at = TS_NODE_ATTRS(conv2d, n);
    dnnl_post_ops_t po = NULL;
    dnnl_status_t st = dnnl_post_ops_create(&po);
    if (st == dnnl_success && at.act != TS_CONV_ACT_NONE)
        st = dnnl_post_ops_append_eltwise(po, 1.f, dnnl_eltwise_relu,
                                          at.act == TS_CONV_ACT_LEAKY_RELU ? at.act_alpha : 0.f, 0.f);
    if (st == dnnl_success && at.clamp) st = dnnl_post_ops_append_eltwise(po, 1.f, dnnl_eltwise_clip, at.lo, at.hi);
    if (st == dnnl_success) st = dnnl_primitive_attr_set_post_ops(attr, po);
    if (po) dnnl_post_ops_destroy(po);
    return st;
}

/* Build the primitive of node n with activations in the chosen layout; leaves s->prim NULL
 * when oneDNN has none for it. */
static ts_status build(dnnl_engine_t eng, const ts_graph *g, const ts_node *n, conv_dnnl *s, int blocked,
                       int keep_weights) {
    cgeom q;
    node_geom(g, n, &q);
    conv_mds m;
    if (describe(n, &q, blocked, &m) != dnnl_success) return TS_OK;

    /* attr: the reorders' (scratchpad); pattr: the primitive's (that, and the epilogue) */
    dnnl_primitive_attr_t attr = NULL, pattr = NULL;
    dnnl_primitive_desc_t pd = NULL;
    dnnl_status_t st = dnnl_primitive_attr_create(&attr);
    if (st == dnnl_success) st = dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user);
    if (st == dnnl_success) st = dnnl_primitive_attr_clone(&pattr, attr);
    if (st == dnnl_success && ts_conv_has_epilogue(n)) st = epilogue_post_ops(n, pattr);
    if (st != dnnl_success) {
        if (attr) dnnl_primitive_attr_destroy(attr);
        if (pattr) dnnl_primitive_attr_destroy(pattr);
        return ts_err(TS_ERR_NOMEM, "op %s: oneDNN attributes: %s", ts_op_get(n->op)->name, dnnl_status2str(st));
    }
    conv_want want[MAXARG];
    int nw = 0;
    st = primitive_desc(eng, n, &q, &m, pattr, &pd, want, &nw);
    dnnl_primitive_attr_destroy(pattr);
    if (st == dnnl_success) st = dnnl_primitive_create(&s->prim, pd);
    if (st != dnnl_success) {
        s->prim = NULL;
        if (pd) dnnl_primitive_desc_destroy(pd);
        dnnl_primitive_attr_destroy(attr);
        return TS_OK; /* no implementation: the reference kernel runs */
    }

    const dnnl_memory_desc_t *smd = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
    size_t scratch = smd ? dnnl_memory_desc_get_size(smd) : 0, bufs = 0;
    st = make_args(eng, pd, attr, want, nw, keep_weights, s, &scratch, &bufs);
    dnnl_primitive_desc_destroy(pd);
    dnnl_primitive_attr_destroy(attr);
    if (st == dnnl_success && scratch) {
        dnnl_memory_desc_t bmd;
        st = dnnl_memory_desc_init_by_tag(&bmd, 1, (dnnl_dims_t){(dnnl_dim_t)scratch}, dnnl_u8, dnnl_a);
        if (st == dnnl_success) st = dnnl_memory_create(&s->scratch, &bmd, eng, DNNL_MEMORY_NONE);
        if (st != dnnl_success) s->scratch = NULL;
    }
    if (st != dnnl_success) { /* no memory object or reorder for a layout: the reference kernel runs */
        dnnl_primitive_destroy(s->prim);
        s->prim = NULL;
        return TS_OK;
    }
    s->scratch_bytes = ts_align64(scratch);
    for (int i = 0; i < s->na; i++) s->a[i].off += s->scratch_bytes;
    s->total_bytes = s->scratch_bytes + bufs;
    s->nargs = 0;
    for (int i = 0; i < s->na; i++)
        s->args[s->nargs++] = (dnnl_exec_arg_t){s->a[i].kind, s->a[i].inner ? s->a[i].inner : s->a[i].user};
    if (s->scratch) s->args[s->nargs++] = (dnnl_exec_arg_t){DNNL_ARG_SCRATCHPAD, s->scratch};
    return TS_OK;
}

/* ------------------------------------------------------------------ depthwise, direct NCHW */

typedef float v8 __attribute__((vector_size(32))); /* 8 floats: one AVX register, two SSE ones */
typedef int32_t v8i __attribute__((vector_size(32)));

/* 8 floats from p (unaligned), and a in every lane; macros, so that no function passes a vector
 * by value (which would depend on the ABI of the target it is compiled for) */
#define LD8(p) ({ v8 v_; memcpy(&v_, (p), sizeof v_); v_; })
#define SPLAT8(a) ({ float a_ = (a); (v8){a_, a_, a_, a_, a_, a_, a_, a_}; })

enum { DW_MAXK = 16, DW_MAXTAP = 256 }; /* the direct kernel: kernels up to 16 wide, 256 taps */

/* The direct kernel reads each plane from a padded copy split into sw phases: phase p, row r,
 * column j holds x[r - pt, j sw + p - pl] (0 outside the image), r < Hp, j < Wq. Then tap
 * (kh, kw) of output (oh, ow) is element ow + (kw dw) / sw of row oh sh + kh dh of phase
 * (kw dw) mod sw: every tap of every output is a contiguous, unchecked load. */
typedef struct dw_geom {
    int64_t Hp, Wq;            /* rows and columns of a phase */
    int64_t ph[DW_MAXK], of[DW_MAXK]; /* phase and column offset of tap column kw */
} dw_geom;

static void dw_geometry(const cgeom *q, dw_geom *d) {
    int64_t sw = q->stride[1], dw = q->dil[1] + 1;
    d->Hp = (q->OH - 1) * q->stride[0] + q->dil[0] * (q->KH - 1) + q->KH;
    d->Wq = q->OW + (q->KW - 1) * dw / sw + 1;
    for (int64_t kw = 0; kw < q->KW; kw++) d->ph[kw] = kw * dw % sw, d->of[kw] = kw * dw / sw;
}

/* NV vectors of 8 outputs of one row from ow on: y[ow ..] = b + sum_t w[t] tap[t][ow ..], the
 * NV accumulators independent (one alone would wait on each FMA's latency). */
#define DW_BLOCK(NV, ow)                                                                           \
    do {                                                                                           \
        v8 acc_[NV];                                                                               \
        _Pragma("GCC unroll 8") for (int u_ = 0; u_ < (NV); u_++) acc_[u_] = SPLAT8(b);            \
        for (int64_t t_ = 0; t_ < ntap; t_++) {                                                    \
            const float *p_ = tap[t_] + (ow);                                                      \
            v8 w_ = SPLAT8(w[t_]);                                                                 \
            _Pragma("GCC unroll 8") for (int u_ = 0; u_ < (NV); u_++) acc_[u_] += w_ * LD8(p_ + 8 * u_); \
        }                                                                                          \
        memcpy(yr + (ow), acc_, sizeof acc_);                                                      \
    } while (0)

/* One image plane of a depthwise convolution (groups = C = O):
 *   y[oh, ow] = b + sum_{kh, kw} x[oh sh - pt + kh dh, ow sw - pl + kw dw] w[kh, kw]
 * First the plane's padded phases (dw_geom) in the per-thread buffer buf, one pass; then per
 * output row, blocks of 64 outputs (32, 8 for short rows) summed over all taps in registers, the
 * last block of a row shifted back to end at the row's end (it recomputes, and stores again, a
 * few outputs with the same values). Rows of fewer than 8 outputs one output at a time. Compiled
 * three times below (AVX-512, AVX2 + FMA, baseline) and picked by the CPU's features
 * (dw_plane). */
static inline __attribute__((always_inline)) void dw_plane_body(const cgeom *q, const dw_geom *d, const float *x,
                                                                const float *w, float b, float *y, float *buf) {
    int64_t sh = q->stride[0], sw = q->stride[1], dh = q->dil[0] + 1, KH = q->KH, KW = q->KW, W = q->W;
    int64_t Hp = d->Hp, Wq = d->Wq, OW = q->OW, pl = q->pad_l[1], ntap = KH * KW;
    /* the padded phases: zeros, then the image's columns j sw + p - pl in [0, W) */
    for (int64_t r = 0; r < Hp; r++) {
        int64_t ir = r - q->pad_l[0];
        int inside = ir >= 0 && ir < q->H;
        const float *xr = x + (inside ? ir : 0) * W;
        int64_t jv0 = 0, jv1 = 0; /* stride 2: both phases of columns [jv0, jv1) in vectors */
        if (sw == 2 && inside) {
            jv0 = (pl + 1) / 2, jv1 = (W + pl) / 2; /* 2j - pl >= 0 and 2j + 1 - pl < W */
            if (jv1 > Wq) jv1 = Wq;
            if (jv1 < jv0) jv1 = jv0;
            float *e = buf + r * Wq, *o = buf + (Hp + r) * Wq;
            int64_t j = jv0;
            for (; j + 8 <= jv1; j += 8) {
                v8 lo = LD8(xr + 2 * j - pl), hi = LD8(xr + 2 * j - pl + 8);
#if defined(__clang__) /* the same even / odd lane picks, in clang's spelling */
                v8 ev = __builtin_shufflevector(lo, hi, 0, 2, 4, 6, 8, 10, 12, 14);
                v8 od = __builtin_shufflevector(lo, hi, 1, 3, 5, 7, 9, 11, 13, 15);
#else
                v8 ev = __builtin_shuffle(lo, hi, (v8i){0, 2, 4, 6, 8, 10, 12, 14});
                v8 od = __builtin_shuffle(lo, hi, (v8i){1, 3, 5, 7, 9, 11, 13, 15});
#endif
                memcpy(e + j, &ev, sizeof ev);
                memcpy(o + j, &od, sizeof od);
            }
            jv1 = j;
        }
        for (int64_t p = 0; p < sw; p++) {
            float *dst = buf + (p * Hp + r) * Wq;
            int64_t j0 = pl - p > 0 ? (pl - p + sw - 1) / sw : 0; /* first j with j sw + p - pl >= 0 */
            int64_t j1 = W - 1 + pl - p >= 0 ? (W - 1 + pl - p) / sw + 1 : 0; /* ... and < W */
            if (j1 > Wq) j1 = Wq;
            if (!inside || j1 <= j0) j0 = j1 = 0;
            for (int64_t j = 0; j < j0; j++) dst[j] = 0.f;
            if (sw == 1) {
                memcpy(dst + j0, xr + j0 - pl, sizeof(float) * (size_t)(j1 - j0));
            } else { /* the columns not done in vectors above */
                int64_t a = jv0 < j1 ? jv0 : j1, c = jv1 > j0 ? jv1 : j0;
                for (int64_t j = j0; j < a; j++) dst[j] = xr[j * sw + p - pl];
                for (int64_t j = c; j < j1; j++) dst[j] = xr[j * sw + p - pl];
            }
            for (int64_t j = j1; j < Wq; j++) dst[j] = 0.f;
        }
    }
    const float *tap[DW_MAXTAP];
    for (int64_t oh = 0; oh < q->OH; oh++) {
        float *yr = y + oh * OW;
        for (int64_t kh = 0; kh < KH; kh++)
            for (int64_t kw = 0; kw < KW; kw++)
                tap[kh * KW + kw] = buf + (d->ph[kw] * Hp + oh * sh + kh * dh) * Wq + d->of[kw];
        if (OW >= 64) {
            int64_t ow = 0;
            for (; ow + 64 <= OW; ow += 64) DW_BLOCK(8, ow);
            if (ow < OW && OW - ow > 32) DW_BLOCK(8, OW - 64);
            else if (ow < OW) DW_BLOCK(4, OW - 32);
        } else if (OW >= 32) {
            DW_BLOCK(4, 0);
            if (OW > 32) DW_BLOCK(4, OW - 32);
        } else if (OW >= 8) {
            int64_t ow = 0;
            for (; ow + 8 <= OW; ow += 8) DW_BLOCK(1, ow);
            if (ow < OW) DW_BLOCK(1, OW - 8);
        } else {
            for (int64_t ow = 0; ow < OW; ow++) {
                float acc = b;
                for (int64_t t = 0; t < ntap; t++) acc += w[t] * tap[t][ow];
                yr[ow] = acc;
            }
        }
    }
}
__attribute__((target("avx512f")))
static void dw_plane_avx512(const cgeom *q, const dw_geom *c, const float *x, const float *w, float b, float *y,
                            float *rows) {
    dw_plane_body(q, c, x, w, b, y, rows);
}
__attribute__((target("avx2,fma")))
static void dw_plane_avx2(const cgeom *q, const dw_geom *c, const float *x, const float *w, float b, float *y,
                          float *rows) {
    dw_plane_body(q, c, x, w, b, y, rows);
}
static void dw_plane_base(const cgeom *q, const dw_geom *c, const float *x, const float *w, float b, float *y,
                          float *rows) {
    dw_plane_body(q, c, x, w, b, y, rows);
}
typedef void (*dw_plane_fn)(const cgeom *, const dw_geom *, const float *, const float *, float, float *, float *);
static dw_plane_fn dw_plane(void) {
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) return dw_plane_avx512;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return dw_plane_avx2;
    return dw_plane_base;
}

/* Does node n take the direct depthwise kernel: a conv2d with groups = C = O, a kernel at most
 * DW_MAXK wide of at most DW_MAXTAP taps, and a stride of at most 4 across? */
static int dw_eligible(const ts_node *n, const cgeom *q) {
    return conv_forward(n) && q->G == q->C && q->O == q->C && q->KW <= DW_MAXK && q->KH * q->KW <= DW_MAXTAP &&
           q->stride[1] <= 4;
}

/* A depthwise conv2d node: one (n, c) plane per task, each thread with its own buffer for the
 * padded phases. */
static ts_status dw_forward(const ts_kargs *k) {
    cgeom q;
    node_geom(k->g, k->node, &q);
    dw_geom dg;
    dw_geometry(&q, &dg);
    const float *X = k->in[0], *Wt = k->in[1], *B = k->node->nin > 2 ? k->in[2] : NULL;
    float *Y = k->out[0];
    dw_plane_fn plane = dw_plane();
    size_t buf_bytes = sizeof(float) * (size_t)(q.stride[1] * dg.Hp * dg.Wq);
    int fail = 0;
#pragma omp parallel if (q.N * q.C * q.OH * q.OW * q.KH * q.KW > 32768)
    {
        float *buf = malloc(buf_bytes);
        if (!buf) {
#pragma omp atomic write
            fail = 1;
        }
#pragma omp for schedule(static)
        for (int64_t t = 0; t < q.N * q.C; t++) {
            if (!buf) continue;
            int64_t c = t % q.C;
            plane(&q, &dg, X + t * q.H * q.W, Wt + c * q.KH * q.KW, B ? B[c] : 0.f, Y + t * q.OH * q.OW, buf);
            ts_conv_epilogue(k->node, Y + t * q.OH * q.OW, q.OH * q.OW);
        }
        free(buf);
    }
    if (fail) return ts_err(TS_ERR_NOMEM, "op conv2d: out of memory for the depthwise kernel's plane buffers");
    return TS_OK;
}

/* ------------------------------------------------------------------ kernel entry points */

static ts_status conv_prepare(ts_cpu_dev *dev, const ts_plan *plan, const ts_node *n, void **state, size_t *scratch) {
    const ts_graph *g = plan->g;
    *state = NULL;
    *scratch = 0;
    if (dev->conv_reference || !ts_cpu_dnnl_ready(dev)) return TS_OK; /* reference kernel */
    conv_dnnl *s = calloc(1, sizeof *s);
    if (!s) return ts_err(TS_ERR_NOMEM, "op %s: out of memory", ts_op_get(n->op)->name);
    cgeom q;
    node_geom(g, n, &q);
    if (dw_eligible(n, &q) && dev->conv_layout == TS_CPU_LAYOUT_AUTO) {
        s->depthwise = 1; /* the direct kernel: no primitive, no workspace */
        *state = s;
        return TS_OK;
    }
    /* weights that change only between runs (an inference program's parameters and constants):
     * their blocked copy is kept and remade only when param_gen moves, as matmul_dnnl.c does */
    int keep = plan->param_gen && n->op != TS_OP_CONV2D_GRAD_WEIGHT && ts_fixed_weight(g, n->in[1]);
    ts_status st = build(dev->dnnl_engine, g, n, s, choose_layout(n, &q, dev->conv_layout), keep);
    if (st != TS_OK || !s->prim) {
        conv_release(s);
        return st;
    }
    *state = s;
    *scratch = s->total_bytes;
    return TS_OK;
}

static ts_status exec(dnnl_primitive_t p, dnnl_stream_t stream, int nargs, const dnnl_exec_arg_t *args,
                      const ts_node *n) {
    dnnl_status_t st = dnnl_primitive_execute(p, stream, nargs, args);
    if (st != dnnl_success)
        return ts_err(TS_ERR_RUNTIME, "op %s: oneDNN execute: %s", ts_op_get(n->op)->name, dnnl_status2str(st));
    return TS_OK;
}

/* A reorder between c's two memories: user -> inner for inputs, inner -> user for the output. */
static ts_status run_reorder(const conv_dnnl *s, const carg *c, dnnl_stream_t stream, const ts_node *n) {
    int out = c->slot == 3;
    dnnl_exec_arg_t args[3] = {{DNNL_ARG_FROM, out ? c->inner : c->user}, {DNNL_ARG_TO, out ? c->user : c->inner},
                               {DNNL_ARG_SCRATCHPAD, s->scratch}};
    return exec(c->reorder, stream, s->scratch ? 3 : 2, args, n);
}

static ts_status conv_run(const ts_kargs *k) {
    conv_dnnl *s = k->state;
    const ts_node *n = k->node;
    if (!s) return ts_op_get(n->op)->kernel(k);
    if (s->depthwise) return dw_forward(k);
    if (s->total_bytes > k->scratch_bytes || (s->total_bytes && !k->scratch))
        return ts_err(TS_ERR_RUNTIME, "op %s: the workspace has %zu bytes, oneDNN needs %zu", ts_op_get(n->op)->name,
                      k->scratch_bytes, s->total_bytes);
    dnnl_status_t st = dnnl_success;
    for (int i = 0; i < s->na && st == dnnl_success; i++) {
        const carg *c = &s->a[i];
        st = dnnl_memory_set_data_handle(c->user, c->slot == 3 ? k->out[0] : k->in[c->slot]);
        if (st == dnnl_success && c->inner && !c->kept)
            st = dnnl_memory_set_data_handle(c->inner, (char *)k->scratch + c->off);
    }
    if (st == dnnl_success && s->scratch) st = dnnl_memory_set_data_handle(s->scratch, k->scratch);
    if (st != dnnl_success)
        return ts_err(TS_ERR_RUNTIME, "op %s: oneDNN set_data_handle: %s", ts_op_get(n->op)->name, dnnl_status2str(st));
    dnnl_stream_t stream = ((ts_cpu_dev *)k->device)->dnnl_stream;
    ts_status r = TS_OK;
    for (int i = 0; i < s->na && !r; i++) {
        const carg *c = &s->a[i];
        if (!c->reorder || c->slot == 3 || (c->kept && !ts_weight_stale(&s->stamp, k->param_gen))) continue;
        r = run_reorder(s, c, stream, n);
        if (!r && c->kept) ts_weight_made(&s->stamp, k->param_gen);
    }
    if (!r) r = exec(s->prim, stream, s->nargs, s->args, n);
    for (int i = 0; i < s->na && !r; i++)
        if (s->a[i].reorder && s->a[i].slot == 3) r = run_reorder(s, &s->a[i], stream, n);
    if (!r && dnnl_stream_wait(stream) != dnnl_success)
        r = ts_err(TS_ERR_RUNTIME, "op %s: oneDNN stream wait failed", ts_op_get(n->op)->name);
    return r;
}

static size_t conv_kept_bytes(const void *state) { return ((const conv_dnnl *)state)->kept_bytes; }

const ts_cpu_kernel ts_cpu_conv2d_dnnl = {TS_OP_CONV2D, conv_prepare, conv_run, conv_release, conv_kept_bytes,
                                         NULL};
const ts_cpu_kernel ts_cpu_conv_transpose2d_dnnl = {TS_OP_CONV_TRANSPOSE2D, conv_prepare, conv_run, conv_release,
                                                    conv_kept_bytes, NULL};
const ts_cpu_kernel ts_cpu_conv2d_grad_weight_dnnl = {TS_OP_CONV2D_GRAD_WEIGHT, conv_prepare, conv_run,
                                                      conv_release, NULL, NULL};
