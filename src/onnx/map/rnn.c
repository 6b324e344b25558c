/*
 * rnn.c — ONNX mappings of RNN, GRU and LSTM, unrolled over the (import-time) sequence
 * length into tessera ops on f32: one matmul of the whole input by W for all steps, then per step
 * a matmul of the hidden state by R and the gates, exactly as the ONNX definitions read
 * (X [T, B, I]; W [D, G H, I]; R [D, G H, H]; B [D, 2 G H] = Wb then Rb; "(.)" is elementwise):
 *   RNN (G = 1):  H_t = f(X_t W^T + H_{t-1} R^T + Wb + Rb)                       f = Tanh
 *   GRU (G = 3, gates z r h):  z = f(X_t Wz^T + H_{t-1} Rz^T + Wbz + Rbz), r likewise,
 *       linear_before_reset 0: h = g(X_t Wh^T + (r (.) H_{t-1}) Rh^T + Rbh + Wbh)
 *       linear_before_reset 1: h = g(X_t Wh^T + r (.) (H_{t-1} Rh^T + Rbh) + Wbh)
 *       H_t = (1 - z) (.) h + z (.) H_{t-1}                                       f = Sigmoid, g = Tanh
 *   LSTM (G = 4, gates i o f c; peepholes P [D, 3 H] = Pi Po Pf):
 *       i = f(X_t Wi^T + H_{t-1} Ri^T + Pi (.) C_{t-1} + Wbi + Rbi), f likewise with Pf,
 *       c = g(X_t Wc^T + H_{t-1} Rc^T + Wbc + Rbc), C_t = f (.) C_{t-1} + i (.) c,
 *       o = f(X_t Wo^T + H_{t-1} Ro^T + Po (.) C_t + Wbo + Rbo), H_t = o (.) h(C_t)
 *                                                                                 f = Sigmoid, g = h = Tanh
 * clip bounds every gate's input to [-clip, clip]. direction forward, reverse (t from T - 1 down)
 * or bidirectional (both, D = 2). With sequence_lens, steps t >= len[b] keep batch b's state and
 * give zeros in Y. Outputs Y [T, D, B, H], Y_h [D, B, H] (and LSTM's Y_c); layout 1 puts the batch
 * first (X [B, T, I], Y [B, T, D, H], Y_h [B, D, H]). Activations: the defaults, or any of
 * Sigmoid, Tanh, Relu, LeakyRelu, ThresholdedRelu, Elu, Softsign, Softplus, HardSigmoid, Affine,
 * ScaledTanh (with activation_alpha / activation_beta consumed in order).
 */
#include "onnx/map/map.h"

typedef enum { K_RNN, K_GRU, K_LSTM } rnn_kind;

typedef struct {
    enum {
        A_SIGMOID,
        A_TANH,
        A_RELU,
        A_LEAKY,
        A_THRESH,
        A_ELU,
        A_SOFTSIGN,
        A_SOFTPLUS,
        A_HARDSIG,
        A_AFFINE,
        A_STANH
    } f;
    float a, b;
} act;

static const struct {
    const char *name;
    int f, nalpha, nbeta;
    float a, b;
} act_table[] = {
    {"Sigmoid", A_SIGMOID, 0, 0, 0, 0}, {"Tanh", A_TANH, 0, 0, 0, 0}, {"Relu", A_RELU, 0, 0, 0, 0},
    {"LeakyRelu", A_LEAKY, 1, 0, 0.01f, 0}, {"ThresholdedRelu", A_THRESH, 1, 0, 1.f, 0}, {"Elu", A_ELU, 1, 0, 1.f, 0},
    {"Softsign", A_SOFTSIGN, 0, 0, 0, 0}, {"Softplus", A_SOFTPLUS, 0, 0, 0, 0},
    {"HardSigmoid", A_HARDSIG, 1, 1, 0.2f, 0.5f}, {"Affine", A_AFFINE, 1, 1, 1.f, 0.f},
    {"ScaledTanh", A_STANH, 1, 1, 1.f, 1.f},
};

static ts_value apply(ts_graph *g, const act *f, ts_value x) {
    switch (f->f) {
    case A_SIGMOID: return ts_sigmoid(g, x);
    case A_TANH: return ts_tanh(g, x);
    case A_RELU: return ts_relu(g, x);
    case A_LEAKY: return ts_math(g, TS_MATH_LEAKY_RELU, x, f->a, 0);
    case A_THRESH: return ts_math(g, TS_MATH_THRESHOLDED_RELU, x, f->a, 0);
    case A_ELU: return ts_math(g, TS_MATH_ELU, x, f->a, 0);
    case A_SOFTSIGN: return ts_math(g, TS_MATH_SOFTSIGN, x, 0, 0);
    case A_SOFTPLUS: return ts_math(g, TS_MATH_SOFTPLUS, x, 0, 0);
    case A_HARDSIG: return ts_hard_sigmoid(g, x, f->a, f->b);
    case A_AFFINE: return ts_scale(g, x, f->a, f->b);
    default: return ts_scale(g, ts_tanh(g, ts_scale(g, x, f->b, 0)), f->a, 0); /* ScaledTanh */
    }
}

/* The node's activations for D directions of nf functions each (acts[d * nf + k]); -1 after
 * refusing. */
static int read_acts(ts_onnx_ctx *cx, const ts_onnx_node *n, rnn_kind kind, int D, act *acts) {
    static const int defaults[3][3] = {{A_TANH}, {A_SIGMOID, A_TANH}, {A_SIGMOID, A_TANH, A_TANH}};
    int nf = kind == K_RNN ? 1 : kind == K_GRU ? 2 : 3;
    float alpha[8], beta[8];
    int na = onnx_attr_floats(cx, n, "activation_alpha", alpha, 8),
        nb = onnx_attr_floats(cx, n, "activation_beta", beta, 8);
    int ia = 0, ib = 0;
    if (!onnx_attr_has(cx, n, "activations")) {
        for (int i = 0; i < D * nf; i++) acts[i] = (act){defaults[kind][i % nf], 0, 0};
        return cx->node_refused ? -1 : 0;
    }
    const Onnx__AttributeProto *at = NULL;
    for (size_t i = 0; i < n->n_attribute; i++)
        if (!strcmp(n->attribute[i]->name, "activations")) at = n->attribute[i];
    if ((int)at->n_strings != D * nf)
        return onnx_invalid(cx, n, "%d activations for %d directions", (int)at->n_strings, D), -1;
    for (int i = 0; i < D * nf; i++) {
        char name[32];
        snprintf(name, sizeof name, "%.*s", (int)at->strings[i].len, (const char *)at->strings[i].data);
        size_t k = 0;
        while (k < sizeof act_table / sizeof *act_table && strcmp(act_table[k].name, name)) k++;
        if (k == sizeof act_table / sizeof *act_table) return onnx_unsupported(cx, n, "activation '%s'", name), -1;
        acts[i] = (act){act_table[k].f, act_table[k].a, act_table[k].b};
        if (act_table[k].nalpha && ia < na) acts[i].a = alpha[ia++];
        if (act_table[k].nbeta && ib < nb) acts[i].b = beta[ib++];
    }
    return cx->node_refused ? -1 : 0;
}

/* rows [lo, hi) of a [rows, cols] value as a new value (a slice along axis 0). */
static ts_value rows_of(ts_graph *g, ts_value v, int64_t lo, int64_t hi) { return ts_slice(g, v, 0, lo, hi); }

/* elements [lo, hi) of the last axis of a [B, n] value */
static ts_value cols_of(ts_graph *g, ts_value v, int64_t lo, int64_t hi) { return ts_slice(g, v, 1, lo, hi); }

static ts_value clipped(ts_graph *g, ts_value x, float clip) {
    if (clip <= 0) return x;
    return ts_binary(g, TS_BIN_MIN, ts_binary(g, TS_BIN_MAX, x, map_scalar(g, TS_F32, -clip)),
                     map_scalar(g, TS_F32, clip));
}

/* The node's attributes and shapes, as rnn_read checked them. */
typedef struct {
    rnn_kind kind;
    int G, nf;          /* gates, activations per direction */
    int D, reverse;     /* directions (2: bidirectional); one direction run backwards */
    int layout, lbr;    /* batch first; GRU's linear_before_reset */
    int nstate;         /* states: H (and LSTM's C) */
    float clip;         /* > 0: every gate's input clipped to [-clip, clip] */
    int64_t T, B, I, Hs, GH;
} rnn_geom;

/* One direction's weights (W, R [G H, ..]), X W^T plus biases for all steps (XW [T B, G H]), R's
 * bias Rb [G H] (TS_NONE without B), LSTM's peepholes Pv (TS_NONE without P), and its state H, C
 * [B, H] as the steps advance it. */
typedef struct {
    ts_value W, R, XW, Rb, Pv[3], H, C;
} rnn_dir;

/* Read node n's attributes and check its inputs' shapes and dtypes into *p and acts: TS_OK, or
 * the status of the refusal. */
static ts_status rnn_read(ts_onnx_ctx *cx, const ts_onnx_node *n, rnn_kind kind, rnn_geom *p, act *acts) {
    int G = kind == K_RNN ? 1 : kind == K_GRU ? 3 : 4, nf = kind == K_RNN ? 1 : kind == K_GRU ? 2 : 3;
    int64_t xs[TS_MAX_DIMS], ws[TS_MAX_DIMS], rs[TS_MAX_DIMS], s[TS_MAX_DIMS];
    int rx = onnx_in_shape(cx, n, 0, xs), rw = onnx_in_shape(cx, n, 1, ws), rr = onnx_in_shape(cx, n, 2, rs);
    const char *dir = onnx_attr_string(cx, n, "direction", "forward");
    int64_t Hs = onnx_attr_int(cx, n, "hidden_size", rr == 3 ? rs[2] : 0);
    float clip = onnx_attr_has(cx, n, "clip") ? onnx_attr_float(cx, n, "clip", 0) : 0;
    int layout = cx->opset >= 14 ? (int)onnx_attr_int(cx, n, "layout", 0) : 0;
    int lbr = kind == K_GRU ? onnx_attr_int(cx, n, "linear_before_reset", 0) != 0 : 0;
    if (kind == K_LSTM && onnx_attr_int(cx, n, "input_forget", 0)) return onnx_unsupported(cx, n, "input_forget 1");
    int D = !strcmp(dir, "bidirectional") ? 2 : 1, reverse = !strcmp(dir, "reverse");
    if (D == 1 && !reverse && strcmp(dir, "forward")) return onnx_invalid(cx, n, "direction '%s'", dir);
    if (cx->node_refused || read_acts(cx, n, kind, D, acts)) return TS_ERR_UNSUPPORTED;
    if (rx != 3 || rw != 3 || rr != 3) return onnx_invalid(cx, n, "X, W and R must be 3-D");
    int64_t T = layout ? xs[1] : xs[0], B = layout ? xs[0] : xs[1], I = xs[2], GH = G * Hs;
    if (Hs < 1 || ws[0] != D || ws[1] != GH || ws[2] != I || rs[0] != D || rs[1] != GH || rs[2] != Hs)
        return onnx_invalid(cx, n, "W / R do not match %d direction(s), hidden_size %lld and input size %lld", D,
                            (long long)Hs, (long long)I);
    if (onnx_has_in(n, 3) && (onnx_in_shape(cx, n, 3, s) != 2 || s[0] != D || s[1] != 2 * GH))
        return onnx_invalid(cx, n, "B must be [%d, %lld]", D, (long long)(2 * GH));
    int nstate = kind == K_LSTM ? 2 : 1;
    for (int k = 5; k < 5 + nstate; k++)
        if (onnx_has_in(n, k) &&
            (onnx_in_shape(cx, n, k, s) != 3 || s[layout ? 1 : 0] != D || s[layout ? 0 : 1] != B || s[2] != Hs))
            return onnx_invalid(cx, n, "input %d (an initial state) does not match", k);
    if (kind == K_LSTM && onnx_has_in(n, 7) && (onnx_in_shape(cx, n, 7, s) != 2 || s[0] != D || s[1] != 3 * Hs))
        return onnx_invalid(cx, n, "P must be [%d, %lld]", D, (long long)(3 * Hs));
    if (onnx_has_in(n, 4) && (onnx_in_shape(cx, n, 4, s) != 1 || s[0] != B))
        return onnx_invalid(cx, n, "sequence_lens must be [B]");
    for (int k = 0; k < 8; k++)
        if (k != 4 && onnx_has_in(n, k) && onnx_need_f32(cx, n, k, k)) return TS_ERR_UNSUPPORTED;
    if (onnx_has_in(n, 4) && onnx_need_dtype(cx, n, 4, (const ts_dtype[]){TS_I32, TS_I64}, 2))
        return TS_ERR_UNSUPPORTED;
    if (map_need_nonempty(cx, n, 0)) return TS_ERR_UNSUPPORTED;
    if (T * D > 4096) return onnx_unsupported(cx, n, "%lld steps (unrolled: at most 4096)", (long long)(T * D));
    *p = (rnn_geom){.kind = kind, .G = G, .nf = nf, .D = D, .reverse = reverse, .layout = layout, .lbr = lbr,
                    .nstate = nstate, .clip = clip, .T = T, .B = B, .I = I, .Hs = Hs, .GH = GH};
    return TS_OK;
}

/* Direction d's weights, biases, peepholes and initial state (zeros [B, H] where not given);
 * X2 is X as [T B, I]. */
static rnn_dir rnn_weights(ts_onnx_ctx *cx, const ts_onnx_node *n, const rnn_geom *p, int d, ts_value X2,
                           ts_value zeros) {
    ts_graph *g = cx->g;
    int64_t GH = p->GH, Hs = p->Hs, I = p->I, B = p->B;
    rnn_dir w = {.Rb = TS_NONE, .Pv = {TS_NONE, TS_NONE, TS_NONE}};
    w.W = ts_reshape(g, ts_slice(g, onnx_in(cx, n, 1), 0, d, d + 1), 2, (int64_t[]){GH, I});
    w.R = ts_reshape(g, ts_slice(g, onnx_in(cx, n, 2), 0, d, d + 1), 2, (int64_t[]){GH, Hs});
    w.XW = ts_matmul(g, X2, w.W, 0, 1); /* [T B, G H] */
    if (onnx_has_in(n, 3)) {
        ts_value Bd = ts_reshape(g, ts_slice(g, onnx_in(cx, n, 3), 0, d, d + 1), 1, (int64_t[]){2 * GH});
        ts_value Wb = ts_slice(g, Bd, 0, 0, GH);
        w.Rb = ts_slice(g, Bd, 0, GH, 2 * GH);
        /* Wb joins X W^T for every gate; Rb too, except GRU's h gate, whose Rbh sits inside */
        w.XW = ts_add(g, w.XW, p->kind == K_GRU ? Wb : ts_add(g, Wb, w.Rb));
        if (p->kind == K_GRU) { /* Rbz, Rbr, then 0 for h */
            ts_value zero_h = ts_expand(g, map_scalar(g, TS_F32, 0), 1, &Hs);
            w.XW = ts_add(g, w.XW, ts_concat(g, 2, (ts_value[]){ts_slice(g, w.Rb, 0, 0, 2 * Hs), zero_h}, 0));
        }
    }
    if (p->kind == K_LSTM && onnx_has_in(n, 7)) {
        ts_value Pd = ts_reshape(g, ts_slice(g, onnx_in(cx, n, 7), 0, d, d + 1), 1, (int64_t[]){3 * Hs});
        for (int k = 0; k < 3; k++) w.Pv[k] = ts_slice(g, Pd, 0, k * Hs, (k + 1) * Hs);
    }
    w.H = zeros, w.C = zeros;
    for (int k = 5; k < 5 + p->nstate; k++) {
        if (!onnx_has_in(n, k)) continue;
        ts_value st = onnx_in(cx, n, k);
        st = p->layout ? ts_slice(g, st, 1, d, d + 1) : ts_slice(g, st, 0, d, d + 1);
        st = ts_reshape(g, st, 2, (int64_t[]){B, Hs});
        if (k == 5) w.H = st;
        else w.C = st;
    }
    return w;
}

/* GRU's new hidden state from xw [B, 3 H] (X_t W^T + Wb + Rbz, Rbr) and the state w->H. */
static ts_value gru_step(ts_graph *g, const rnn_geom *p, const act *f, const rnn_dir *w, ts_value xw) {
    int64_t Hs = p->Hs;
    float clip = p->clip;
    ts_value H = w->H, R = w->R, Rb = w->Rb;
    ts_value hr = ts_matmul(g, H, rows_of(g, R, 0, 2 * Hs), 0, 1); /* [B, 2H] */
    ts_value z = apply(g, &f[0], clipped(g, ts_add(g, cols_of(g, xw, 0, Hs), cols_of(g, hr, 0, Hs)), clip));
    ts_value r = apply(g, &f[0], clipped(g, ts_add(g, cols_of(g, xw, Hs, 2 * Hs), cols_of(g, hr, Hs, 2 * Hs)), clip));
    ts_value Rh = rows_of(g, R, 2 * Hs, 3 * Hs), Rbh = Rb == TS_NONE ? TS_NONE : ts_slice(g, Rb, 0, 2 * Hs, 3 * Hs);
    ts_value inner;
    if (p->lbr) {
        inner = ts_matmul(g, H, Rh, 0, 1);
        if (Rbh != TS_NONE) inner = ts_add(g, inner, Rbh);
        inner = ts_mul(g, r, inner);
    } else {
        inner = ts_matmul(g, ts_mul(g, r, H), Rh, 0, 1);
        if (Rbh != TS_NONE) inner = ts_add(g, inner, Rbh);
    }
    ts_value hh = apply(g, &f[1], clipped(g, ts_add(g, cols_of(g, xw, 2 * Hs, 3 * Hs), inner), clip));
    /* (1 - z) h + z H = h + z (H - h) */
    return ts_add(g, hh, ts_mul(g, z, ts_sub(g, H, hh)));
}

/* LSTM's new hidden state (returned) and cell state *cn from xw [B, 4 H] and the state w->H, w->C. */
static ts_value lstm_step(ts_graph *g, const rnn_geom *p, const act *f, const rnn_dir *w, ts_value xw, ts_value *cn) {
    int64_t Hs = p->Hs;
    float clip = p->clip;
    ts_value C = w->C;
    ts_value pre = ts_add(g, xw, ts_matmul(g, w->H, w->R, 0, 1)); /* gates i o f c */
    ts_value pi = cols_of(g, pre, 0, Hs), po = cols_of(g, pre, Hs, 2 * Hs);
    ts_value pf = cols_of(g, pre, 2 * Hs, 3 * Hs), pc = cols_of(g, pre, 3 * Hs, 4 * Hs);
    if (w->Pv[0] != TS_NONE) {
        pi = ts_add(g, pi, ts_mul(g, w->Pv[0], C));
        pf = ts_add(g, pf, ts_mul(g, w->Pv[2], C));
    }
    ts_value ig = apply(g, &f[0], clipped(g, pi, clip)), fg = apply(g, &f[0], clipped(g, pf, clip));
    ts_value cg = apply(g, &f[1], clipped(g, pc, clip));
    *cn = ts_add(g, ts_mul(g, fg, C), ts_mul(g, ig, cg));
    if (w->Pv[1] != TS_NONE) po = ts_add(g, po, ts_mul(g, w->Pv[1], *cn));
    ts_value og = apply(g, &f[0], clipped(g, po, clip));
    return ts_mul(g, og, apply(g, &f[2], *cn));
}

/* Direction d unrolled over the T steps: Y[t D + d] ([1, 1, B, H]) each step's output, w's state
 * advanced to the last step's. lens [B, 1] (dtype ld) or TS_NONE: sequence_lens. */
static void rnn_unroll(ts_graph *g, const rnn_geom *p, const act *f, int d, rnn_dir *w, ts_value lens, ts_dtype ld,
                       ts_value zeros, ts_value *Y) {
    int back = p->D == 2 ? d == 1 : p->reverse;
    int64_t T = p->T, B = p->B, Hs = p->Hs;
    for (int64_t s0 = 0; s0 < T; s0++) {
        int64_t t = back ? T - 1 - s0 : s0;
        ts_value xw = rows_of(g, w->XW, t * B, (t + 1) * B), hn, cn = TS_NONE;
        if (p->kind == K_RNN) hn = apply(g, &f[0], clipped(g, ts_add(g, xw, ts_matmul(g, w->H, w->R, 0, 1)), p->clip));
        else if (p->kind == K_GRU) hn = gru_step(g, p, f, w, xw);
        else hn = lstm_step(g, p, f, w, xw, &cn);
        ts_value y = hn;
        if (lens != TS_NONE) {
            ts_value live = ts_binary(g, TS_BIN_LESS, map_scalar(g, ld, (double)t), lens); /* [B, 1] */
            y = ts_where(g, live, hn, zeros);
            hn = ts_where(g, live, hn, w->H);
            if (cn != TS_NONE) cn = ts_where(g, live, cn, w->C);
        }
        w->H = hn;
        if (cn != TS_NONE) w->C = cn;
        Y[t * p->D + d] = ts_reshape(g, y, 4, (int64_t[]){1, 1, B, Hs});
    }
}

/* Set the node's outputs: Y from the steps' outputs (T D of them), Y_h and Y_c from each
 * direction's last state (hlast, clast [1, B, H]). */
static ts_status rnn_outputs(ts_onnx_ctx *cx, const ts_onnx_node *n, const rnn_geom *p, ts_value *Y,
                             ts_value *hlast, ts_value *clast) {
    ts_graph *g = cx->g;
    int64_t T = p->T, B = p->B, Hs = p->Hs;
    int D = p->D;
    ts_status st = TS_OK;
    if (onnx_has_out(n, 0)) {
        ts_value y = ts_concat(g, (int)(T * D), Y, 0); /* [T D, 1, B, H] */
        y = ts_reshape(g, y, 4, (int64_t[]){T, D, B, Hs});
        if (p->layout) y = ts_transpose(g, y, (int[]){2, 0, 1, 3});
        st = onnx_set(cx, n, 0, y);
    }
    for (int o = 1; o <= p->nstate && st == TS_OK; o++) {
        if (!onnx_has_out(n, o)) continue;
        ts_value h = D == 1 ? (o == 1 ? hlast[0] : clast[0]) : ts_concat(g, 2, o == 1 ? hlast : clast, 0);
        if (p->layout) h = ts_transpose(g, h, (int[]){1, 0, 2});
        st = onnx_set(cx, n, o, h);
    }
    return st;
}

static ts_status rnn(ts_onnx_ctx *cx, const ts_onnx_node *n, rnn_kind kind) {
    rnn_geom p = {0};
    act acts[6];
    ts_status st = rnn_read(cx, n, kind, &p, acts);
    if (st) return st;
    ts_graph *g = cx->g;
    int64_t T = p.T, B = p.B, Hs = p.Hs;
    ts_value X = onnx_in(cx, n, 0);
    if (p.layout) X = ts_transpose(g, X, (int[]){1, 0, 2});
    ts_value X2 = ts_reshape(g, X, 2, (int64_t[]){T * B, p.I});
    /* per step and batch row: is t < len[b] ([B, 1] u8), when sequence_lens is given */
    ts_value lens = onnx_has_in(n, 4) ? ts_reshape(g, onnx_in(cx, n, 4), 2, (int64_t[]){B, 1}) : TS_NONE;
    ts_dtype ld = onnx_has_in(n, 4) ? onnx_in_dtype(cx, n, 4) : TS_I64;
    ts_value zeros = ts_expand(g, map_scalar(g, TS_F32, 0), 2, (int64_t[]){B, Hs});
    ts_value *Y = calloc((size_t)(T * p.D), sizeof *Y), hlast[2], clast[2];
    if (!Y) return onnx_unsupported(cx, n, "out of memory");
    for (int d = 0; d < p.D; d++) {
        rnn_dir w = rnn_weights(cx, n, &p, d, X2, zeros);
        rnn_unroll(g, &p, &acts[d * p.nf], d, &w, lens, ld, zeros, Y);
        hlast[d] = ts_reshape(g, w.H, 3, (int64_t[]){1, B, Hs});
        clast[d] = ts_reshape(g, w.C, 3, (int64_t[]){1, B, Hs});
    }
    st = rnn_outputs(cx, n, &p, Y, hlast, clast);
    free(Y);
    return st;
}

static ts_status imp_rnn(ts_onnx_ctx *cx, const ts_onnx_node *n) { return rnn(cx, n, K_RNN); }
static ts_status imp_gru(ts_onnx_ctx *cx, const ts_onnx_node *n) { return rnn(cx, n, K_GRU); }
static ts_status imp_lstm(ts_onnx_ctx *cx, const ts_onnx_node *n) { return rnn(cx, n, K_LSTM); }


/* ------------------------------------------------------------------ the family's table */

static const ts_onnx_op ops[] = {
    {"RNN", 9, 17, imp_rnn},
    {"GRU", 9, 17, imp_gru},
    {"LSTM", 9, 17, imp_lstm},
};
const onnx_family onnx_family_rnn = {"rnn", ops, (int)(sizeof ops / sizeof *ops)};
