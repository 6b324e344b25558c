/*
 * backend_ops_cases.h — the cases of tests/test_backend_ops.c: one builder per op family (what a
 * case's shapes a, b and parameters i[], f[] mean is said above each builder) and the table
 * bo_cases, one or more rows per op of src/graph/ops.def. No case has an empty (0) dim: tessera refuses
 * one where a tensor enters a graph (ts_input, ts_param, ts_constant; a slice that would be empty).
 * The gradient ops (unary_grad, softmax_grad, conv2d_grad_weight, ...) are not listed: they are the nodes of the gradient
 * variants (grad = 1) of their forward ops, which test_backend_ops' coverage check finds there.
 * Included once, by test_backend_ops.c, after its bo_ctx helpers.
 */
#ifndef BACKEND_OPS_CASES_H
#define BACKEND_OPS_CASES_H

/* ---------------------------------------------------------------- builders */

/* add sub mul div pow: i[0] = op id; x0 [a] op x1 [b] (broadcast). */
static void b_arith(bo_ctx *c, const bo_case *k) {
    int op = (int)k->i[0];
    ts_value a = bo_x(c, k->a, op == TS_OP_POW ? 0.5 : -2, 2);
    ts_value b = bo_x(c, k->b, op == TS_OP_DIV ? 0.5 : op == TS_OP_POW ? -1.5 : -2, op == TS_OP_POW ? 1.5 : 2);
    ts_value (*f)(ts_graph *, ts_value, ts_value) = op == TS_OP_ADD ? ts_add : op == TS_OP_SUB ? ts_sub
                                                    : op == TS_OP_MUL ? ts_mul : op == TS_OP_DIV ? ts_div : ts_pow;
    bo_out(c, f(c->g, a, b));
}

/* scale sqrt exp log relu tanh sigmoid gelu: i[0] = op id, i[1] = gelu's tanh form; f = scale's
 * alpha, beta. */
static void b_unary(bo_ctx *c, const bo_case *k) {
    int op = (int)k->i[0];
    ts_value x = bo_x(c, k->a, op == TS_OP_SQRT || op == TS_OP_LOG ? 0.5 : -3, op == TS_OP_SQRT || op == TS_OP_LOG ? 2 : 3);
    ts_graph *g = c->g;
    bo_out(c, op == TS_OP_SCALE ? ts_scale(g, x, k->f[0], k->f[1]) : op == TS_OP_SQRT ? ts_sqrt(g, x)
              : op == TS_OP_EXP ? ts_exp(g, x) : op == TS_OP_LOG ? ts_log(g, x) : op == TS_OP_RELU ? ts_relu(g, x)
              : op == TS_OP_TANH ? ts_tanh(g, x) : op == TS_OP_SIGMOID ? ts_sigmoid(g, x)
              : ts_gelu(g, x, (int)k->i[1]));
}

/* A chain the fusion pass makes one fused_elementwise of: tanh(exp(scale(x))) and a sigmoid(gelu). */
static void b_fused(bo_ctx *c, const bo_case *k) {
    ts_value x = bo_x(c, k->a, -1, 1);
    bo_out(c, ts_tanh(c->g, ts_exp(c->g, ts_scale(c->g, x, 0.5f, 0.1f))));
    bo_out(c, ts_sigmoid(c->g, ts_gelu(c->g, ts_sqrt(c->g, ts_scale(c->g, x, 1.f, 2.f)), 1)));
}

/* where(cond u8 [a], x [a], y [b]). */
static void b_where(bo_ctx *c, const bo_case *k) {
    ts_value cond = bo_int(c, TS_U8, k->a, 0, 2);
    ts_value a = bo_x(c, k->a, -2, 2), b = bo_x(c, k->b, -2, 2);
    bo_out(c, ts_where(c->g, cond, a, b));
}

/* cast x [a] to dtype i[0]; x of the case's dtype, or of integer dtype i[1] when i[1] >= 0. */
static void b_cast(bo_ctx *c, const bo_case *k) {
    ts_value x = k->i[1] >= 0 ? bo_int(c, (ts_dtype)k->i[1], k->a, -40, 40) : bo_x(c, k->a, -300, 300);
    bo_out(c, ts_cast(c->g, x, (ts_dtype)k->i[0]));
}

/* x [a] read by a cast to 16 bits (dtype i[0]) and a sum over its leading dims down to shape b
 * (the bias gradient's sum_to): the fusion pass makes one cast_sum_to of the two (rule 8 of
 * graph/passes/fuse.c). The shape b comes from an input nothing reads. */
static void b_cast_sum(bo_ctx *c, const bo_case *k) {
    ts_value x = bo_x(c, k->a, -2, 2);
    bo_out(c, ts_cast(c->g, x, (ts_dtype)k->i[0]));
    bo_out(c, ts_sum_to(c->g, x, bo_x(c, k->b, 0, 1)));
}

/* expand x [a] to shape b. */
static void b_expand(bo_ctx *c, const bo_case *k) {
    bo_out(c, ts_expand(c->g, bo_x(c, k->a, -2, 2), k->b.nd, k->b.d));
}

/* reshape x [a] to shape b (one -1 allowed). */
static void b_reshape(bo_ctx *c, const bo_case *k) {
    ts_value y = ts_reshape(c->g, bo_x(c, k->a, -2, 2), k->b.nd, k->b.d);
    bo_out(c, y);
}

/* transpose x [a] by perm i[0 .. nd) (i[5] = 1: NULL, the last two swapped). */
static void b_transpose(bo_ctx *c, const bo_case *k) {
    int perm[TS_MAX_DIMS];
    for (int j = 0; j < k->a.nd && j < 5; j++) perm[j] = (int)k->i[j];
    bo_out(c, ts_transpose(c->g, bo_x(c, k->a, -2, 2), k->i[5] ? NULL : perm));
}

/* slice x [a] along axis i[0] from i[1] to i[2]. */
static void b_slice(bo_ctx *c, const bo_case *k) {
    bo_out(c, ts_slice(c->g, bo_x(c, k->a, -2, 2), (int)k->i[0], k->i[1], k->i[2]));
}

/* concat x0 [a], x1 [b], x2 [a] along axis i[0]. */
static void b_concat(bo_ctx *c, const bo_case *k) {
    ts_value xs[3] = {bo_x(c, k->a, -2, 2), bo_x(c, k->b, -2, 2), bo_x(c, k->a, -2, 2)};
    bo_out(c, ts_concat(c->g, 3, xs, (int)k->i[0]));
}

/* gather rows of table [a] (f32) at indices [b] of dtype i[0]. */
static void b_gather(bo_ctx *c, const bo_case *k) {
    ts_value t = bo_f32(c, k->a, -2, 2, 1);
    bo_out(c, ts_gather(c->g, t, bo_int(c, (ts_dtype)k->i[0], k->b, 0, k->a.d[0])));
}

/* reduce x [a]: i[0] = 0 sum, 1 mean, 2 max, 3 min, 4 prod; i[1] = keepdims; i[2] = naxes,
 * axes i[3 ..]. */
static void b_reduce(bo_ctx *c, const bo_case *k) {
    int axes[3] = {(int)k->i[3], (int)k->i[4], (int)k->i[5]}, n = (int)k->i[2], keep = (int)k->i[1];
    ts_value x = bo_f32(c, k->a, k->i[0] == 4 ? 0.5 : -2, 2, 1);
    ts_value (*f[5])(ts_graph *, ts_value, int, const int *, int) = {ts_reduce_sum, ts_reduce_mean, ts_reduce_max,
                                                                    ts_reduce_min, ts_reduce_prod};
    bo_out(c, f[k->i[0]](c->g, x, n, axes, keep));
}

/* i[0] = 0: softmax(x [a] + mask [b], b rank 0: no mask); 1: log_softmax(x). */
static void b_softmax(bo_ctx *c, const bo_case *k) {
    ts_value x = bo_f32(c, k->a, -3, 3, 1);
    if (k->i[0]) bo_out(c, ts_log_softmax(c->g, x));
    else bo_out(c, ts_softmax(c->g, x, k->b.nd ? bo_f32(c, k->b, -2, 0, 0) : TS_NONE));
}

/* cross_entropy(logits [a], labels [b] of dtype i[0] in [-1, C), ignore_index -1). */
static void b_xent(bo_ctx *c, const bo_case *k) {
    ts_value x = bo_f32(c, k->a, -3, 3, 1);
    bo_out(c, ts_cross_entropy(c->g, x, bo_int(c, (ts_dtype)k->i[0], k->b, -1, k->a.d[k->a.nd - 1]), -1));
}

/* layer_norm(x [a], gamma [C] when i[0], beta [C] when i[1], eps 1e-5). */
static void b_layernorm(bo_ctx *c, const bo_case *k) {
    bo_shape cs = {1, {k->a.d[k->a.nd - 1]}};
    ts_value x = bo_f32(c, k->a, -2, 2, 1);
    ts_value gm = k->i[0] ? bo_f32(c, cs, 0.5, 1.5, 1) : TS_NONE, bt = k->i[1] ? bo_f32(c, cs, -1, 1, 1) : TS_NONE;
    bo_out(c, ts_layer_norm(c->g, x, gm, bt, 1e-5f));
}

/* dropout(x [a], p f[0]) in a training program (the mask is a function of seed, node, step). */
static void b_dropout(bo_ctx *c, const bo_case *k) {
    bo_out(c, ts_dropout(c->g, bo_f32(c, k->a, -2, 2, 1), k->f[0]));
}

/* attention(q [a], k and v [b], mask, 1 / sqrt(D), dropout p f[0], layout i[0], compute dtype i[2]): q, k,
 * v f32 in the layout's order ([B, H, T|S, D] or [B, T|S, H, D]); i[1] = 0 no mask, 1 a padding mask
 * [B, 1, 1, S], 2 a full one [B, H, T, S] (additive, an f32 input in [-3, 0)). */
static void b_attention(bo_ctx *c, const bo_case *k) {
    int bthd = k->i[0] == TS_ATTN_BTHD;
    int64_t B = k->a.d[0], H = k->a.d[bthd ? 2 : 1], T = k->a.d[bthd ? 1 : 2], S = k->b.d[bthd ? 1 : 2];
    ts_value q = bo_f32(c, k->a, -2, 2, 1), kk = bo_f32(c, k->b, -2, 2, 1), v = bo_f32(c, k->b, -1, 1, 1);
    bo_shape ms = k->i[1] == 1 ? (bo_shape)SH(B, 1, 1, S) : (bo_shape)SH(B, H, T, S);
    ts_value m = k->i[1] ? bo_f32(c, ms, -3, 0, 0) : TS_NONE;
    float scale = 1.f / sqrtf((float)k->a.d[3]);
    bo_out(c, ts_attention(c->g, q, kk, v, m, scale, k->f[0], (int)k->i[0], (ts_dtype)k->i[2]));
}

/* matmul(x0 [a], x1 [b], trans_a i[0], trans_b i[1]); i[2] = 1: + bias [N], then gelu (in
 * inference the fusion pass makes one matmul with a bias and an activation of it); i[2] = 2: the
 * bf16 product cast to f32 (fused into a matmul with an f32 output); i[3] = 1: x1 is a weight. */
static void b_matmul(bo_ctx *c, const bo_case *k) {
    ts_value a = bo_x(c, k->a, -1, 1), b = k->i[3] ? bo_w(c, k->b, -1, 1) : bo_x(c, k->b, -1, 1);
    ts_value y = ts_matmul(c->g, a, b, (int)k->i[0], (int)k->i[1]);
    if (k->i[2] == 1) {
        int64_t sh[TS_MAX_DIMS];
        int nd = ts_value_shape(c->g, y, sh);
        bo_shape bs = {1, {nd > 0 ? sh[nd - 1] : 1}};
        ts_value bias = bo_x(c, bs, -1, 1);
        y = ts_gelu(c->g, ts_add(c->g, bo_dt(c, k) == TS_F32 ? y : ts_cast(c->g, y, TS_F32),
                                 c->dt == TS_F32 ? bias : ts_cast(c->g, bias, TS_F32)), 0);
    } else if (k->i[2] == 2) {
        y = ts_cast(c->g, y, TS_F32);
    }
    bo_out(c, y);
}

/* matmul_i8dyn(x0 [a], w [b], bias [N] when i[2]): w a weight, stored [N, K] when i[0] (trans_b),
 * activation i[1]; the node the quantization pass makes (ts_compile_opts.quantize), built directly.
 * Forward only (the op has no gradient). */
static void b_matmul_i8(bo_ctx *c, const bo_case *k) {
    ts_value a = bo_x(c, k->a, -1, 1), w = bo_w(c, k->b, -1, 1);
    bo_shape bs = {1, {k->i[0] ? k->b.d[0] : k->b.d[1]}};
    ts_value bias = k->i[2] ? bo_x(c, bs, -1, 1) : TS_NONE;
    ts_attrs at = {0};
    at.i[0] = k->i[0], at.i[1] = k->i[1], at.ni = 2;
    int in[3] = {a, w, bias};
    bo_out(c, ts_node_add(c->g, TS_OP_MATMUL_I8DYN, bias == TS_NONE ? 2 : 3, in, &at, NULL));
}

/* A training step: x [a] (fed) @ w [b] + bias, tanh, mean; ts_backward (i[3] = 1: scaled, fp16's
 * dynamic loss scaling) and ts_optimizer of kind i[0]; i[1] = clipping by global norm 0.5;
 * i[2] = accumulation steps; i[4] = 1: a linear warmup schedule for lr; i[5]: SGD momentum
 * (1: 0.9, 2: 0.9 nesterov, 3: 0.9 dampening 0.1); i[6]: the parameters stored in that dtype
 * (ts_graph_store_params: bf16 / f16 weights, updates rounded stochastically, written back by assign). */
static void b_step(bo_ctx *c, const bo_case *k) {
    ts_graph *g = c->g;
    ts_value x = bo_f32(c, k->a, -1, 1, 0), w = bo_f32(c, k->b, -1, 1, 1);
    bo_shape bs = {1, {k->b.d[1]}};
    ts_value bias = bo_f32(c, bs, -1, 1, 1);
    ts_value y = ts_tanh(g, ts_add(g, ts_matmul(g, x, w, 0, 0), bias));
    ts_value loss = ts_reduce_mean(g, ts_mul(g, y, y), 0, NULL, 0);
    if (k->i[6]) ts_graph_store_params(g, (ts_dtype)k->i[6]); /* 16-bit weights: casts, rounding, assign */
    if (k->i[3]) ts_backward_scaled(g, loss, NULL);
    else ts_backward(g, loss);
    ts_optim_opts o = ts_optim_defaults((ts_optim_kind)k->i[0]);
    o.max_grad_norm = k->i[1] ? 0.5f : 0.f;
    o.accumulation_steps = (int)k->i[2];
    o.weight_decay = 0.01f;
    if (k->i[5]) o.momentum = 0.9f, o.nesterov = k->i[5] == 2, o.dampening = k->i[5] == 3 ? 0.1f : 0.f;
    ts_value lr = ts_scalar(g, 0.05f);
    if (k->i[4]) {
        ts_lr_schedule_opts so = {.struct_size = sizeof so, .kind = TS_LR_LINEAR, .lr = 0.05f, .warmup_steps = 1,
                                  .total_steps = 10};
        lr = ts_lr_schedule(g, &so);
    }
    ts_status s = ts_optimizer(g, lr, &o);
    if (s && !ts_graph_status(g)) ts_graph_fail(g, s, "%s", ts_last_error());
    bo_out(c, loss);
}

/* comm_start / comm_wait (all-reduce, i[0] = 0; broadcast from rank 0, 1) of a parameter [a] on
 * the world communicator (one rank here: the collectives copy). */
static void b_comm(bo_ctx *c, const bo_case *k) {
    ts_value p = bo_f32(c, k->a, -1, 1, 1);
    ts_comm *w = ts_comm_world();
    if (!w || ts_comm_channels(w, 2)) {
        ts_graph_fail(c->g, ts_last_status(), "no world communicator with a channel 1: %s", ts_last_error());
        return;
    }
    ts_attrs at = {.i = {0, 1, k->i[0], 0, 1, 0}, .ni = 6};
    ts_node_add(c->g, TS_OP_COMM_START, 1, &p, &at, NULL);
    ts_node_add(c->g, TS_OP_COMM_WAIT, 1, &p, &at, NULL);
}

/* conv2d(x [a], w [b], bias [O] when i[4]): stride i[0], pad i[1] (all sides), dilation i[2],
 * groups i[3]; i[5] = 1: w is a weight. */
static void b_conv(bo_ctx *c, const bo_case *k) {
    ts_value x = bo_f32(c, k->a, -1, 1, 1), w = bo_input_add(c, TS_F32, k->b, -1, 1, BO_UNIF, k->i[5] ? 2 : 1);
    bo_shape bs = {1, {k->b.d[0]}};
    ts_value bias = k->i[4] ? bo_f32(c, bs, -1, 1, 1) : TS_NONE;
    int s = (int)k->i[0], p = (int)k->i[1], d = (int)k->i[2];
    ts_conv_opts o = {.stride = {s, s}, .pad = {p, p, p, p}, .dilation = {d, d}, .groups = (int)k->i[3]};
    bo_out(c, ts_conv2d(c->g, x, w, bias, &o));
}

/* conv2d_i8(x [a], w [b] a weight, bias [O] when i[4]): stride i[0], pad i[1] (all sides), dilation
 * i[2], groups i[3], the fused relu when i[5]; the node the quantization pass makes
 * (ts_compile_opts.quantize), built directly. Forward only (the op has no gradient). */
static void b_conv_i8(bo_ctx *c, const bo_case *k) {
    ts_value x = bo_x(c, k->a, -1, 1), w = bo_w(c, k->b, -1, 1);
    bo_shape bs = {1, {k->b.d[0]}};
    ts_value bias = k->i[4] ? bo_x(c, bs, -1, 1) : TS_NONE;
    int64_t s = k->i[0], p = k->i[1], d = k->i[2];
    ts_attrs at = {.i = {s, s, p, p, p, p, d, d, k->i[3], k->i[5] ? 1 : 0, 0}, .ni = 11}; /* i[9] 1: relu */
    int in[3] = {x, w, bias};
    bo_out(c, ts_node_add(c->g, TS_OP_CONV2D_I8, bias == TS_NONE ? 2 : 3, in, &at, NULL));
}

/* conv_transpose2d(x [a], w [b], bias [O] when i[4]): stride i[0], pad i[1], out_pad i[2],
 * groups i[3]. */
static void b_convt(bo_ctx *c, const bo_case *k) {
    ts_value x = bo_f32(c, k->a, -1, 1, 1), w = bo_f32(c, k->b, -1, 1, 1);
    bo_shape bs = {1, {k->b.d[1] * (k->i[3] ? k->i[3] : 1)}};
    ts_value bias = k->i[4] ? bo_f32(c, bs, -1, 1, 1) : TS_NONE;
    int s = (int)k->i[0], p = (int)k->i[1];
    ts_conv_opts o = {.stride = {s, s}, .pad = {p, p, p, p}, .groups = (int)k->i[3]};
    int op[2] = {(int)k->i[2], (int)k->i[2]};
    bo_out(c, ts_conv_transpose2d(c->g, x, w, bias, &o, op));
}

/* i[0] = 0 max_pool2d, 1 avg_pool2d of x [a]: kernel i[1], stride i[2], pad i[3], ceil_mode
 * i[4], count_include_pad i[5]. */
static void b_pool(bo_ctx *c, const bo_case *k) {
    ts_value x = bo_f32(c, k->a, -2, 2, 1);
    int kk = (int)k->i[1], s = (int)k->i[2], p = (int)k->i[3];
    ts_pool_opts o = {.kernel = {kk, kk}, .stride = {s, s}, .pad = {p, p, p, p}, .ceil_mode = (int)k->i[4],
                      .count_include_pad = (int)k->i[5]};
    bo_out(c, k->i[0] ? ts_avg_pool2d(c->g, x, &o) : ts_max_pool2d(c->g, x, &o));
}

/* resize2d(x [a]) to b.d[0] x b.d[1]: mode i[0], coordinates i[1], rounding i[2]. */
static void b_resize(bo_ctx *c, const bo_case *k) {
    ts_resize_opts o = {.mode = (ts_resize_mode)k->i[0], .coord = (ts_resize_coord)k->i[1],
                        .round = (ts_resize_round)k->i[2]};
    bo_out(c, ts_resize2d(c->g, bo_f32(c, k->a, -2, 2, 1), k->b.d[0], k->b.d[1], &o));
}

/* i[0] = 0 clip(x, f[0], f[1]), 1 hard_sigmoid(x, f[0], f[1]), 2 hard_swish(x); x [a]. */
static void b_hard(bo_ctx *c, const bo_case *k) {
    ts_value x = bo_f32(c, k->a, -4, 4, 1);
    bo_out(c, k->i[0] == 0 ? ts_clip(c->g, x, k->f[0], k->f[1])
              : k->i[0] == 1 ? ts_hard_sigmoid(c->g, x, k->f[0], k->f[1]) : ts_hard_swish(c->g, x));
}

/* math fn i[0] of x [a] (drawn inside the function's domain), alpha f[0], beta f[1]. */
static void b_math(bo_ctx *c, const bo_case *k) {
    int fn = (int)k->i[0];
    double lo = -2, hi = 2;
    if (fn == TS_MATH_ASIN || fn == TS_MATH_ACOS || fn == TS_MATH_ATANH) lo = -0.9, hi = 0.9;
    if (fn == TS_MATH_ACOSH) lo = 1.1, hi = 3;
    if (fn == TS_MATH_TAN) lo = -1.2, hi = 1.2;
    if (fn == TS_MATH_RECIPROCAL) lo = 0.5, hi = 2;
    bo_out(c, ts_math(c->g, (ts_math_fn)fn, bo_f32(c, k->a, lo, hi, 1), k->f[0], k->f[1]));
}

/* binary op i[0] of x0 [a] and x1 [b], both of dtype i[1] (divisors and shifts drawn in range). */
static void b_binop(bo_ctx *c, const bo_case *k) {
    int op = (int)k->i[0];
    ts_dtype dt = (ts_dtype)k->i[1];
    ts_value a, b;
    if (dt == TS_F32) {
        int pos = op == TS_BIN_MOD || op == TS_BIN_FMOD || op == TS_BIN_DIV;
        a = bo_f32(c, k->a, -3, 3, 1);
        b = bo_f32(c, k->b, pos ? 0.5 : -3, 3, 1);
    } else if (dt == TS_U8) {
        a = bo_int(c, dt, k->a, 0, 3);
        b = bo_int(c, dt, k->b, 0, 3);
    } else {
        int div = op == TS_BIN_MOD || op == TS_BIN_FMOD || op == TS_BIN_DIV, sh = op == TS_BIN_SHL || op == TS_BIN_SHR;
        a = bo_int(c, dt, k->a, sh ? 0 : -50, 50);
        b = bo_int(c, dt, k->b, sh ? 0 : div ? 1 : -50, sh ? 40 : 50);
    }
    bo_out(c, ts_binary(c->g, (ts_binop)op, a, b));
}

/* i[0] = 0 isnan, 1 isinf(detect_pos i[1], detect_neg i[2]) of f32 x [a] with NaN and infs in
 * it; 2 not of u8 x [a]. */
static void b_pred(bo_ctx *c, const bo_case *k) {
    if (k->i[0] == 2) {
        bo_out(c, ts_not(c->g, bo_int(c, TS_U8, k->a, 0, 3)));
        return;
    }
    ts_value x = bo_input_add(c, TS_F32, k->a, -2, 2, BO_SPECIAL, 0);
    bo_out(c, k->i[0] ? ts_isinf(c->g, x, (int)k->i[1], (int)k->i[2]) : ts_isnan(c->g, x));
}

/* select(cond u8 [a], x0 [a], x1 [b]) of dtype i[0] (-1: the case's float dtype). */
static void b_select(bo_ctx *c, const bo_case *k) {
    ts_value cond = bo_int(c, TS_U8, k->a, 0, 2), a, b;
    if (k->i[0] < 0) a = bo_x(c, k->a, -2, 2), b = bo_x(c, k->b, -2, 2);
    else a = bo_int(c, (ts_dtype)k->i[0], k->a, -9, 9), b = bo_int(c, (ts_dtype)k->i[0], k->b, -9, 9);
    bo_out(c, ts_select(c->g, cond, a, b));
}

/* i[0] = 0 argmax, 1 argmin of f32 x [a] along axis i[1], keepdims i[2], select_last i[3];
 * i[4] = 1: small integers (ties). */
static void b_argreduce(bo_ctx *c, const bo_case *k) {
    ts_value x = bo_input_add(c, TS_F32, k->a, k->i[4] ? -2 : -3, 3, k->i[4] ? BO_INT : BO_UNIF, 0);
    bo_out(c, (k->i[0] ? ts_argmin : ts_argmax)(c->g, x, (int)k->i[1], (int)k->i[2], (int)k->i[3]));
}

/* trilu(x [a], upper i[0], k i[1]); i[2] = 1: k fed at run time (ts_trilu_k). */
static void b_trilu(bo_ctx *c, const bo_case *k) {
    ts_value x = bo_x(c, k->a, -2, 2);
    if (k->i[2]) bo_out(c, ts_trilu_k(c->g, x, (int)k->i[0], bo_int(c, TS_I64, (bo_shape)SH(1), k->i[1], k->i[1] + 1)));
    else bo_out(c, ts_trilu(c->g, x, (int)k->i[0], k->i[1]));
}

/* gather_elements(data [a], indices [b] of dtype i[1] in [-n, n), axis i[0]). */
static void b_gather_el(bo_ctx *c, const bo_case *k) {
    int ax = (int)k->i[0];
    ts_value d = bo_x(c, k->a, -2, 2);
    bo_out(c, ts_gather_elements(c->g, d, bo_int(c, (ts_dtype)k->i[1], k->b, -k->a.d[ax], k->a.d[ax]), ax));
}

/* scatter_elements(data [a], indices [b] in [0, n), updates [b], axis i[0], reduction i[1]). */
static void b_scatter(bo_ctx *c, const bo_case *k) {
    int ax = (int)k->i[0];
    ts_value d = bo_f32(c, k->a, -2, 2, 1), ix = bo_int(c, TS_I64, k->b, 0, k->a.d[ax]);
    ts_value u = bo_f32(c, k->b, -2, 2, 1);
    bo_out(c, ts_scatter_elements(c->g, d, ix, u, ax, (ts_scatter_reduce)k->i[1]));
}

/* nll_loss(input [a] (log-probabilities), target [b] of dtype i[2] in [-1, C), weight [C] when
 * i[1], ignore_index -1, reduction i[0]). */
static void b_nll(bo_ctx *c, const bo_case *k) {
    bo_shape cs = {1, {k->a.d[1]}};
    ts_value x = bo_f32(c, k->a, -3, 0, 1), t = bo_int(c, (ts_dtype)k->i[2], k->b, -1, k->a.d[1]);
    ts_value w = k->i[1] ? bo_f32(c, cs, 0.5, 1.5, 0) : TS_NONE;
    bo_out(c, ts_nll_loss(c->g, x, t, w, -1, (ts_reduction)k->i[0]));
}

/* tile(x [a], repeats i[0 .. nd)) of the case's dtype, or of dtype i[5] - 1 when i[5] > 0. */
static void b_tile(bo_ctx *c, const bo_case *k) {
    ts_value x = k->i[5] ? bo_int(c, (ts_dtype)(k->i[5] - 1), k->a, -9, 9) : bo_x(c, k->a, -2, 2);
    bo_out(c, ts_tile(c->g, x, k->i));
}

/* pad(x [a] (rank 2), pads i[0 .. 4), mode i[4], value f[0]); dtype i[5] - 1 when i[5] > 0. */
static void b_pad(bo_ctx *c, const bo_case *k) {
    ts_value x = k->i[5] ? bo_int(c, (ts_dtype)(k->i[5] - 1), k->a, -9, 9) : bo_x(c, k->a, -2, 2);
    bo_out(c, ts_pad(c->g, x, k->i, (ts_pad_mode)k->i[4], k->f[0]));
}

/* topk(x [a], k i[0], axis i[1], largest i[2]): values and indices. */
static void b_topk(bo_ctx *c, const bo_case *k) {
    ts_value o[2] = {TS_NONE, TS_NONE};
    ts_topk(c->g, bo_f32(c, k->a, -2, 2, 1), k->i[0], (int)k->i[1], (int)k->i[2], o);
    bo_out(c, o[0]);
    bo_out(c, o[1]);
}

/* grid_sample(x [a], grid [b] in [-1.2, 1.2), mode i[0], padding i[1], align_corners i[2]). */
static void b_grid(bo_ctx *c, const bo_case *k) {
    ts_value x = bo_f32(c, k->a, -2, 2, 0), gr = bo_f32(c, k->b, -1.2, 1.2, 0);
    bo_out(c, ts_grid_sample(c->g, x, gr, (ts_grid_mode)k->i[0], (ts_grid_padding)k->i[1], (int)k->i[2]));
}

/* det(x [a]). */
static void b_det(bo_ctx *c, const bo_case *k) { bo_out(c, ts_det(c->g, bo_f32(c, k->a, -1, 1, 0))); }

/* tfidf of x [a] (dtype i[0], tokens 0..4) against unigrams {1, 3} and bigrams {(2, 1), (0, 4)},
 * mode i[1], max_skip i[2], min_gram i[3], weights. */
static void b_tfidf(bo_ctx *c, const bo_case *k) {
    static const int64_t pool[] = {1, 3, 2, 1, 0, 4}, counts[] = {0, 2}, idx[] = {0, 1, 2, 3};
    static const float wts[] = {0.5f, 2.f, 1.5f, 0.25f};
    ts_tfidf_opts o = {.min_gram = (int)k->i[3], .max_gram = 2, .max_skip = (int)k->i[2],
                       .mode = (ts_tfidf_mode)k->i[1], .pool = pool, .npool = 6, .ngram_counts = counts, .ncounts = 2,
                       .ngram_indexes = idx, .nindexes = 4, .weights = wts};
    bo_out(c, ts_tfidf(c->g, bo_int(c, (ts_dtype)k->i[0], k->a, 0, 5), &o));
}

/* roi_align(x [a], rois [R, 4] (R = b.d[0]) in [0, 6), batch_indices [R] i64): out i[0] x i[1],
 * sampling_ratio i[2], spatial_scale f[0], half_pixel i[3]. */
static void b_roi(bo_ctx *c, const bo_case *k) {
    bo_shape rs = {2, {k->b.d[0], 4}}, bs = {1, {k->b.d[0]}};
    ts_value x = bo_f32(c, k->a, -2, 2, 0), r = bo_f32(c, rs, 0, 6, 0), bi = bo_int(c, TS_I64, bs, 0, k->a.d[0]);
    bo_out(c, ts_roi_align(c->g, x, r, bi, (int)k->i[0], (int)k->i[1], (int)k->i[2], k->f[0], (int)k->i[3]));
}

/* dft(x [a], axis i[0], inverse i[1], onesided i[2], length i[3]). */
static void b_dft(bo_ctx *c, const bo_case *k) {
    bo_out(c, ts_dft(c->g, bo_f32(c, k->a, -1, 1, 0), (int)k->i[0], (int)k->i[1], (int)k->i[2], k->i[3]));
}

/* cast_stochastic(x [a] f32, step [1] of dtype i[1] in [0, 1000)) to dtype i[0], seed 7, the key of "x0". */
static void b_cast_sr(bo_ctx *c, const bo_case *k) {
    ts_value x = bo_f32(c, k->a, -3, 3, 1);
    ts_value s = bo_input_add(c, (ts_dtype)k->i[1], (bo_shape)SH(1), 0, 1000, BO_INT, 0);
    bo_out(c, ts_cast_stochastic(c->g, x, s, (ts_dtype)k->i[0], 7, ts_cast_stochastic_key("x0")));
}

/* ---------------------------------------------------------------- the table */

#define ARITH(NAME, OP, A, B) {#NAME, b_arith, A, B, {TS_OP_##OP}, .grad = 1}
#define UNARY(NAME, OP, A, ...) {#NAME, b_unary, A, SH0, {TS_OP_##OP, __VA_ARGS__}, .grad = 1}
#define MATH(FN, ...) {"math", b_math, SH(7, 13), SH0, {TS_MATH_##FN}, __VA_ARGS__}
#define BINOP(OP, DT, A, B, G) {"binary", b_binop, A, B, {TS_BIN_##OP, DT}, .grad = G}

/* Rows name only the fields they set: the rest are 0. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#pragma GCC diagnostic ignored "-Wmissing-braces"
static const bo_case bo_cases[] = {
    /* elementwise.c */
    ARITH(add, ADD, SH(7, 13), SH(7, 13)), ARITH(add, ADD, SH(7, 13), SH(13)), ARITH(add, ADD, SH(2, 1, 5), SH(3, 1)),
    ARITH(add, ADD, SH(1), SH(1)), ARITH(add, ADD, SH(1, 13), SH(7, 1)), ARITH(add, ADD, SH0, SH(4, 3)),
    ARITH(sub, SUB, SH(7, 13), SH(13)), ARITH(sub, SUB, SH(3, 1), SH(1, 5)),
    ARITH(mul, MUL, SH(7, 13), SH(7, 1)), ARITH(mul, MUL, SH(2, 3, 4), SH(2, 3, 4)), ARITH(mul, MUL, SH(1, 3), SH(5, 1, 1)),
    ARITH(div, DIV, SH(7, 13), SH(13)), ARITH(div, DIV, SH(5), SH0),
    ARITH(pow, POW, SH(7, 13), SH(7, 13)), ARITH(pow, POW, SH(3, 5), SH0),
    UNARY(scale, SCALE, SH(7, 13), 0), {"scale", b_unary, SH(1, 5), SH0, {TS_OP_SCALE}, {2.f, -1.f}, .grad = 1},
    {"scale", b_unary, SH(1), SH0, {TS_OP_SCALE}, {-1.7f, 0.3f}, .grad = 1},
    UNARY(sqrt, SQRT, SH(7, 13), 0), UNARY(sqrt, SQRT, SH(1), 0), UNARY(exp, EXP, SH(7, 13), 0), UNARY(exp, EXP, SH(1), 0),
    UNARY(log, LOG, SH(7, 13), 0), UNARY(log, LOG, SH(3, 1, 5), 0), UNARY(relu, RELU, SH(7, 13), 0), UNARY(relu, RELU, SH(1, 1), 0),
    UNARY(tanh, TANH, SH(7, 13), 0), UNARY(tanh, TANH, SH(2, 1, 3), 0), UNARY(sigmoid, SIGMOID, SH(7, 13), 0), UNARY(sigmoid, SIGMOID, SH(1), 0),
    UNARY(gelu, GELU, SH(7, 13), 0), UNARY(gelu, GELU, SH(7, 13), 1), UNARY(gelu, GELU, SH(5), 1),
    {"fused_elementwise", b_fused, SH(7, 13), .fused = 1}, {"fused_elementwise", b_fused, SH(1), .fused = 1},
    {"where", b_where, SH(7, 13), SH(13), .grad = 1}, {"where", b_where, SH(3, 1), SH(1), .grad = 1},
    {"where", b_where, SH(1, 4), SH(1), .grad = 1},
    {"cast", b_cast, SH(7, 13), SH0, {TS_F32, -1}, BO_FLOATS, .grad = 1},
    {"cast", b_cast, SH(7, 13), SH0, {TS_BF16, -1}, BO_FLOATS, .grad = 1},
    {"cast", b_cast, SH(7, 13), SH0, {TS_F16, -1}, BO_FLOATS, .grad = 1},
    {"cast", b_cast, SH(7, 13), SH0, {TS_I32, -1}, BO_FLOATS}, {"cast", b_cast, SH(7, 13), SH0, {TS_I64, -1}},
    {"cast", b_cast, SH(7, 13), SH0, {TS_U8, -1}}, {"cast", b_cast, SH(7, 13), SH0, {TS_F32, TS_I32}},
    {"cast", b_cast, SH(7, 13), SH0, {TS_BF16, TS_I64}}, {"cast", b_cast, SH(1, 3), SH0, {TS_F16, -1}, BO_FLOATS},
    {"cast_sum_to", b_cast_sum, SH(7, 13), SH(13), {TS_BF16}, .fused = 1},
    {"cast_sum_to", b_cast_sum, SH(3, 70, 24), SH(24), {TS_BF16}, .fused = 1},
    {"cast_sum_to", b_cast_sum, SH(3, 70, 4, 6), SH(4, 6), {TS_F16}, .fused = 1},
    {"expand", b_expand, SH(3, 1, 5), SH(2, 3, 4, 5), .grad = 1},
    {"expand", b_expand, SH0, SH(3, 4), .grad = 1}, {"expand", b_expand, SH(1), SH(1, 7), .grad = 1},
    /* shape.c */
    {"reshape", b_reshape, SH(3, 5, 7), SH(5, -1), .grad = 1, .dtypes = BO_FLOATS},
    {"reshape", b_reshape, SH(3, 5, 7), SH(105), .grad = 1}, {"reshape", b_reshape, SH(1, 4), SH(4, 1, 1), .grad = 1},
    {"transpose", b_transpose, SH(3, 5, 7), SH0, {2, 0, 1}, .grad = 1, .dtypes = BO_FLOATS},
    {"transpose", b_transpose, SH(2, 3, 4, 5), SH0, {0, 2, 1, 3}, .grad = 1},
    {"transpose", b_transpose, SH(7, 13), SH0, {0, 0, 0, 0, 0, 1}, .grad = 1},
    {"transpose", b_transpose, SH(1, 2, 3), SH0, {2, 1, 0}, .grad = 1},
    {"slice", b_slice, SH(3, 7, 5), SH0, {1, 1, 4}, .grad = 1, .dtypes = BO_FLOATS},
    {"slice", b_slice, SH(7, 13), SH0, {-1, -4, -1}, .grad = 1}, {"slice", b_slice, SH(5, 3), SH0, {0, 2, 100}, .grad = 1},
    {"slice", b_slice, SH(5, 3), SH0, {0, 2, 3}, .grad = 1},
    {"concat", b_concat, SH(3, 5), SH(3, 2), {1}, .grad = 1, .dtypes = BO_FLOATS},
    {"concat", b_concat, SH(2, 3, 4), SH(1, 3, 4), {0}, .grad = 1}, {"concat", b_concat, SH(3, 5), SH(3, 1), {-1}, .grad = 1},
    /* gather.c */
    {"gather", b_gather, SH(11, 5), SH(7), {TS_I64}, .grad = 1}, {"gather", b_gather, SH(11, 2, 3), SH(2, 3), {TS_I32}, .grad = 1},
    {"gather", b_gather, SH(4, 5), SH(1), {TS_I64}, .grad = 1}, {"gather", b_gather, SH(1, 13), SH(5, 1), {TS_I64}, .grad = 1},
    /* reduce.c, reduce_prod.c */
    {"reduce_sum", b_reduce, SH(7, 13), SH0, {0, 0, 1, 1}, .grad = 1},
    {"reduce_sum", b_reduce, SH(3, 5, 7), SH0, {0, 1, 2, 0, 2}, .grad = 1},
    {"reduce_sum", b_reduce, SH(3, 5, 7), SH0, {0, 0, 0}, .grad = 1}, {"reduce_sum", b_reduce, SH(1, 5), SH0, {0, 0, 1, 0}, .grad = 1},
    {"reduce_mean", b_reduce, SH(7, 13), SH0, {1, 1, 1, -1}, .grad = 1},
    {"reduce_mean", b_reduce, SH(3, 5, 7), SH0, {1, 0, 2, 0, 1}, .grad = 1},
    {"reduce_max", b_reduce, SH(7, 13), SH0, {2, 0, 1, 1}, .grad = 1}, {"reduce_max", b_reduce, SH(3, 5, 7), SH0, {2, 1, 0}, .grad = 1},
    {"reduce_max", b_reduce, SH(3, 1, 7), SH0, {3, 0, 1, 1}, .grad = 1},
    {"reduce_prod", b_reduce, SH(7, 5), SH0, {4, 0, 1, 1}, .grad = 1}, {"reduce_prod", b_reduce, SH(3, 4, 2), SH0, {4, 1, 2, 0, 2}, .grad = 1},
    /* softmax.c */
    {"softmax", b_softmax, SH(7, 13), SH0, {0}, .grad = 1}, {"softmax", b_softmax, SH(2, 3, 13), SH(2, 1, 13), {0}, .grad = 1},
    {"softmax", b_softmax, SH(3, 1), SH0, {0}, .grad = 1}, {"softmax", b_softmax, SH(1, 1, 5), SH(5), {0}, .grad = 1},
    {"log_softmax", b_softmax, SH(7, 13), SH0, {1}, .grad = 1}, {"log_softmax", b_softmax, SH(2, 3, 5), SH0, {1}, .grad = 1},
    {"cross_entropy", b_xent, SH(7, 13), SH(7), {TS_I64}, .grad = 1},
    {"cross_entropy", b_xent, SH(2, 3, 5), SH(2, 3), {TS_I32}, .grad = 1},
    {"cross_entropy", b_xent, SH(1, 1), SH(1), {TS_I64}, .grad = 1},
    /* layernorm.c, dropout.c */
    {"layer_norm", b_layernorm, SH(7, 13), SH0, {1, 1}, .grad = 1}, {"layer_norm", b_layernorm, SH(2, 3, 5), SH0, {1, 0}, .grad = 1},
    {"layer_norm", b_layernorm, SH(4, 1), SH0, {0, 0}, .grad = 1}, {"layer_norm", b_layernorm, SH(1, 6), SH0, {0, 1}, .grad = 1},
    {"dropout", b_dropout, SH(7, 13), SH0, .f = {0.3f}, .grad = 1, .mode = BO_TRAIN_FWD},
    {"dropout", b_dropout, SH(3, 4, 5), SH0, .f = {0.5f}, .grad = 1, .mode = BO_TRAIN_FWD},
    /* attention.c: q [B, H, T, D] or [B, T, H, D], k and v of S keys; odd T, S, D; S past a 64-key
     * tile; bf16 compute; dropout in a training program (the gradient variants: attention_grad) */
    {"attention", b_attention, SH(2, 2, 5, 8), SH(2, 2, 7, 8), {TS_ATTN_BHTD, 0, TS_F32}, .grad = 1},
    {"attention", b_attention, SH(2, 5, 2, 24), SH(2, 9, 2, 24), {TS_ATTN_BTHD, 1, TS_F32}, .grad = 1},
    {"attention", b_attention, SH(1, 3, 4, 16), SH(1, 3, 70, 16), {TS_ATTN_BHTD, 2, TS_BF16}, .grad = 1},
    {"attention", b_attention, SH(1, 7, 2, 12), SH(1, 7, 2, 12), {TS_ATTN_BTHD, 0, TS_BF16}, .grad = 1},
    {"attention", b_attention, SH(2, 6, 2, 16), SH(2, 6, 2, 16), {TS_ATTN_BTHD, 1, TS_F32}, {0.2f}, .grad = 1,
     .mode = BO_TRAIN_FWD},
    /* matmul.c */
    {"matmul", b_matmul, SH(7, 13), SH(13, 5), .grad = 1, .dtypes = BO_FLOATS},
    {"matmul", b_matmul, SH(13, 7), SH(5, 13), {1, 1}, .grad = 1, .dtypes = BO_FLOATS},
    {"matmul", b_matmul, SH(2, 5, 7), SH(7, 3), {0, 1 - 1}, .grad = 1, .dtypes = BO_FLOATS},
    {"matmul", b_matmul, SH(2, 1, 5, 7), SH(3, 4, 7), {0, 1}, .grad = 1},
    {"matmul", b_matmul, SH(1, 13), SH(13, 1), .grad = 1}, {"matmul", b_matmul, SH(1, 1), SH(1, 3), .grad = 1},
    {"matmul", b_matmul, SH(7, 13), SH(13, 5), {0, 0, 1}, .dtypes = BO_FLOATS},
    {"matmul", b_matmul, SH(2, 7, 13), SH(5, 13), {0, 1, 2}, .dtypes = BO_BF16},
    {"matmul", b_matmul, SH(7, 13), SH(13, 5), {0, 0, 0, 1}, .dtypes = BO_FLOATS},
    {"matmul", b_matmul, SH(3, 7, 13), SH(5, 13), {0, 1, 1, 1}, .dtypes = BO_FLOATS},
    /* matmul_int8.c */
    {"matmul_i8dyn", b_matmul_i8, SH(2, 7, 13), SH(5, 13), {1, 1, 1}},
    {"matmul_i8dyn", b_matmul_i8, SH(7, 13), SH(13, 5)},
    /* optim.c, amp.c */
    {"sgd_update", b_step, SH(4, 7), SH(7, 5), {TS_OPTIM_SGD}, .mode = BO_STEP},
    /* assign.c: the write-back of 16-bit weights and state (ts_graph_store_params) */
    {"assign", b_step, SH(4, 7), SH(7, 5), {TS_OPTIM_ADAMW, 1, 2, 0, 0, 0, TS_BF16}, .mode = BO_STEP},
    {"assign", b_step, SH(4, 7), SH(7, 5), {TS_OPTIM_SGD, 0, 0, 1, 0, 1, TS_F16}, .mode = BO_STEP},
    {"sgd_update", b_step, SH(4, 7), SH(7, 5), {TS_OPTIM_SGD, 0, 0, 0, 0, 1}, .mode = BO_STEP},
    {"sgd_update", b_step, SH(4, 7), SH(7, 5), {TS_OPTIM_SGD, 0, 0, 0, 0, 2}, .mode = BO_STEP},
    {"sgd_update", b_step, SH(4, 7), SH(7, 5), {TS_OPTIM_SGD, 0, 0, 0, 0, 3}, .mode = BO_STEP},
    {"adamw_update", b_step, SH(4, 7), SH(7, 5), {TS_OPTIM_ADAMW}, .mode = BO_STEP},
    {"lamb_update", b_step, SH(4, 7), SH(7, 5), {TS_OPTIM_LAMB}, .mode = BO_STEP},
    {"grad_sumsq", b_step, SH(4, 7), SH(7, 5), {TS_OPTIM_ADAMW, 1}, .mode = BO_STEP},
    {"step_coef", b_step, SH(4, 7), SH(7, 5), {TS_OPTIM_SGD, 1, 2}, .mode = BO_STEP},
    {"lr_schedule", b_step, SH(4, 7), SH(7, 5), {TS_OPTIM_ADAMW, 0, 0, 0, 1}, .mode = BO_STEP},
    {"step_count", b_step, SH(4, 7), SH(7, 5), {TS_OPTIM_SGD, 0, 0, 0, 1}, .mode = BO_STEP},
    {"accum_grad", b_step, SH(4, 7), SH(7, 5), {TS_OPTIM_ADAMW, 0, 2}, .mode = BO_STEP},
    {"loss_scale", b_step, SH(4, 7), SH(7, 5), {TS_OPTIM_SGD, 0, 0, 1}, .mode = BO_STEP},
    {"loss_scale_update", b_step, SH(4, 7), SH(7, 5), {TS_OPTIM_LAMB, 1, 2, 1}, .mode = BO_STEP},
    /* collective.c */
    {"comm_start", b_comm, SH(5, 3), SH0, {0}, .mode = BO_STEP}, {"comm_wait", b_comm, SH(7), SH0, {1}, .mode = BO_STEP},
    /* conv.c */
    {"conv2d", b_conv, SH(2, 3, 7, 9), SH(4, 3, 3, 3), {1, 0, 1, 1, 1}, .grad = 1},
    {"conv2d", b_conv, SH(2, 3, 7, 9), SH(4, 3, 3, 3), {2, 1, 1, 1, 0}, .grad = 1},
    {"conv2d", b_conv, SH(1, 4, 7, 7), SH(4, 1, 3, 3), {1, 1, 1, 4, 1}, .grad = 1},
    {"conv2d", b_conv, SH(1, 4, 9, 8), SH(6, 2, 3, 2), {1, 2, 2, 2, 1}, .grad = 1},
    {"conv2d", b_conv, SH(1, 2, 1, 1), SH(3, 2, 1, 1), {1, 0, 1, 1, 1}, .grad = 1},
    {"conv2d", b_conv, SH(2, 3, 6, 5), SH(4, 3, 3, 3), {1, 1, 1, 1, 1, 1}},
    {"conv2d", b_conv, SH(1, 4, 6, 5), SH(4, 1, 3, 3), {1, 1, 1, 4, 0, 1}},
    /* conv_int8.c */
    {"conv2d_i8", b_conv_i8, SH(2, 3, 7, 9), SH(4, 3, 3, 3), {1, 1, 1, 1, 1, 1}},
    {"conv2d_i8", b_conv_i8, SH(1, 4, 7, 7), SH(4, 1, 3, 3), {2, 1, 1, 4, 0}},
    {"conv_transpose2d", b_convt, SH(2, 4, 5, 5), SH(4, 3, 3, 3), {2, 1, 1, 1, 1}, .grad = 1},
    {"conv_transpose2d", b_convt, SH(1, 4, 3, 4), SH(4, 2, 2, 2), {1, 0, 0, 2, 0}, .grad = 1},
    /* pool.c */
    {"max_pool2d", b_pool, SH(2, 3, 7, 9), SH0, {0, 3, 2, 1, 0, 0}, .grad = 1},
    {"max_pool2d", b_pool, SH(1, 2, 7, 7), SH0, {0, 2, 2, 0, 1, 0}, .grad = 1},
    {"avg_pool2d", b_pool, SH(2, 3, 7, 9), SH0, {1, 3, 2, 1, 0, 1}, .grad = 1},
    {"avg_pool2d", b_pool, SH(1, 2, 7, 7), SH0, {1, 3, 2, 1, 1, 0}, .grad = 1},
    /* resize.c */
    {"resize2d", b_resize, SH(2, 3, 5, 7), SH(9, 4), {TS_RESIZE_NEAREST, TS_COORD_HALF_PIXEL, TS_ROUND_PREFER_FLOOR}, .grad = 1},
    {"resize2d", b_resize, SH(2, 3, 5, 7), SH(9, 4), {TS_RESIZE_LINEAR, TS_COORD_HALF_PIXEL}, .grad = 1},
    {"resize2d", b_resize, SH(1, 2, 4, 4), SH(8, 8), {TS_RESIZE_LINEAR, TS_COORD_ALIGN_CORNERS}, .grad = 1},
    {"resize2d", b_resize, SH(3, 6), SH(1, 2), {TS_RESIZE_NEAREST, TS_COORD_ASYMMETRIC, TS_ROUND_FLOOR}, .grad = 1},
    /* hardact.c */
    {"clip", b_hard, SH(7, 13), SH0, {0}, {-1.f, 2.f}, .grad = 1}, {"clip", b_hard, SH(1, 1), SH0, {0}, {-1.f, 1.f}, .grad = 1},
    {"hard_sigmoid", b_hard, SH(7, 13), SH0, {1}, {0.2f, 0.5f}, .grad = 1},
    {"hard_swish", b_hard, SH(7, 13), SH0, {2}, .grad = 1},
    /* mathfn.c */
    MATH(ABS, .grad = 1), MATH(NEG, .grad = 1), MATH(FLOOR), MATH(CEIL), MATH(ROUND), MATH(SIGN),
    MATH(RECIPROCAL, .grad = 1), MATH(SIN, .grad = 1), MATH(COS, .grad = 1), MATH(TAN, .grad = 1),
    MATH(ASIN, .grad = 1), MATH(ACOS, .grad = 1), MATH(ATAN, .grad = 1), MATH(SINH, .grad = 1),
    MATH(COSH, .grad = 1), MATH(ASINH, .grad = 1), MATH(ACOSH, .grad = 1), MATH(ATANH, .grad = 1),
    MATH(ERF, .grad = 1), MATH(SOFTPLUS, .grad = 1), MATH(SOFTSIGN, .grad = 1), MATH(ELU, {1.f}, .grad = 1),
    MATH(SELU, {1.67326f, 1.0507f}, .grad = 1), MATH(CELU, {0.7f}, .grad = 1), MATH(LEAKY_RELU, {0.1f}, .grad = 1),
    MATH(THRESHOLDED_RELU, {0.5f}, .grad = 1), MATH(SHRINK, {0.5f, 0.2f}, .grad = 1),
    {"math", b_math, SH(1, 3), SH0, {TS_MATH_ABS}, .grad = 1}, {"math", b_math, SH(1), SH0, {TS_MATH_SIN}, .grad = 1},
    /* binary.c */
    BINOP(EQUAL, TS_I32, SH(7, 13), SH(13), 0), BINOP(LESS, TS_F32, SH(7, 13), SH(13), 0),
    BINOP(LESS_EQUAL, TS_I64, SH(3, 5), SH(3, 5), 0), BINOP(GREATER, TS_F32, SH(3, 5), SH(3, 1), 0),
    BINOP(GREATER_EQUAL, TS_I32, SH(3, 5), SH0, 0), BINOP(AND, TS_U8, SH(7, 13), SH(13), 0),
    BINOP(OR, TS_U8, SH(7, 13), SH(7, 13), 0), BINOP(XOR, TS_U8, SH(3, 1), SH(1, 4), 0),
    BINOP(MIN, TS_F32, SH(7, 13), SH(13), 1), BINOP(MAX, TS_F32, SH(7, 13), SH(7, 13), 1),
    BINOP(MAX, TS_I64, SH(1, 3), SH(3), 0), BINOP(MOD, TS_F32, SH(7, 13), SH(13), 0), BINOP(MOD, TS_I32, SH(7, 13), SH(13), 0),
    BINOP(FMOD, TS_F32, SH(7, 13), SH(7, 13), 0), BINOP(FMOD, TS_I64, SH(7, 13), SH(7, 13), 0),
    BINOP(ADD, TS_I32, SH(7, 13), SH(13), 0), BINOP(SUB, TS_I64, SH(7, 13), SH(7, 1), 0),
    BINOP(MUL, TS_I32, SH(7, 13), SH(7, 13), 0), BINOP(DIV, TS_I32, SH(7, 13), SH(13), 0),
    BINOP(SHL, TS_I32, SH(7, 13), SH(7, 13), 0),
    BINOP(SHR, TS_I64, SH(7, 13), SH(13), 0),
    /* predicate.c, select.c, argreduce.c */
    {"predicate", b_pred, SH(7, 13), SH0, {0}}, {"predicate", b_pred, SH(7, 13), SH0, {1, 1, 1}},
    {"predicate", b_pred, SH(7, 13), SH0, {1, 0, 1}}, {"predicate", b_pred, SH(1), SH0, {2}},
    {"predicate", b_pred, SH(7, 13), SH0, {2}},
    {"select", b_select, SH(7, 13), SH(13), {-1}, .grad = 1, .dtypes = BO_BF16 | BO_F16},
    {"select", b_select, SH(7, 13), SH(7, 13), {TS_I64}}, {"select", b_select, SH(3, 1), SH(1, 5), {TS_I32}},
    {"argreduce", b_argreduce, SH(7, 13), SH0, {0, 1, 0, 0}}, {"argreduce", b_argreduce, SH(7, 13), SH0, {1, 0, 1, 0}},
    {"argreduce", b_argreduce, SH(3, 5, 7), SH0, {0, -1, 1, 1, 1}}, {"argreduce", b_argreduce, SH(3, 5, 7), SH0, {1, 1, 0, 0, 1}},
    {"argreduce", b_argreduce, SH(1, 1), SH0, {0, 0, 0, 0}},
    /* trilu.c, elements.c, nll_loss.c, tile.c, pad.c, topk.c */
    {"trilu", b_trilu, SH(3, 5, 7), SH0, {1, 1}, .grad = 1, .dtypes = BO_FLOATS},
    {"trilu", b_trilu, SH(7, 5), SH0, {0, -1}, .grad = 1}, {"trilu", b_trilu, SH(4, 6), SH0, {1, -2, 1}, .grad = 1},
    {"trilu", b_trilu, SH(1, 1), SH0, {0, 0}, .grad = 1},
    {"gather_elements", b_gather_el, SH(5, 7), SH(3, 7), {0, TS_I64}, .grad = 1, .dtypes = BO_FLOATS},
    {"gather_elements", b_gather_el, SH(2, 3, 4), SH(2, 3, 6), {2, TS_I32}, .grad = 1},
    {"scatter_elements", b_scatter, SH(5, 7), SH(1, 7), {0, TS_SCATTER_NONE}, .grad = 1},
    {"scatter_elements", b_scatter, SH(5, 7), SH(4, 7), {0, TS_SCATTER_ADD}, .grad = 1},
    {"scatter_elements", b_scatter, SH(3, 6), SH(3, 4), {1, TS_SCATTER_MUL}},
    {"nll_loss", b_nll, SH(7, 5), SH(7), {TS_REDUCE_MEAN, 1, TS_I64}, .grad = 1},
    {"nll_loss", b_nll, SH(7, 5), SH(7), {TS_REDUCE_SUM, 0, TS_I32}, .grad = 1},
    {"nll_loss", b_nll, SH(2, 4, 3), SH(2, 3), {TS_REDUCE_NONE, 1, TS_I64}, .grad = 1},
    {"tile", b_tile, SH(2, 3), SH0, {2, 3}, .grad = 1, .dtypes = BO_FLOATS},
    {"tile", b_tile, SH(1, 3, 1), SH0, {3, 1, 2}, .grad = 1}, {"tile", b_tile, SH(2, 3), SH0, {1, 2, 0, 0, 0, 1 + TS_I32}},
    {"pad", b_pad, SH(5, 7), SH0, {1, 2, 0, 3, TS_PAD_CONSTANT}, {1.5f}, .grad = 1, .dtypes = BO_FLOATS},
    {"pad", b_pad, SH(5, 7), SH0, {2, 1, 1, 2, TS_PAD_REFLECT}, .grad = 1},
    {"pad", b_pad, SH(5, 7), SH0, {0, 3, 2, -1, TS_PAD_EDGE}, .grad = 1},
    {"pad", b_pad, SH(3, 4), SH0, {1, 1, 1, 1, TS_PAD_CONSTANT, 1 + TS_I64}, {-2.f}},
    {"topk", b_topk, SH(5, 9), SH0, {3, 1, 1}, .grad = 1}, {"topk", b_topk, SH(6, 4), SH0, {2, 0, 0}, .grad = 1},
    {"topk", b_topk, SH(3, 1), SH0, {1, 1, 1}, .grad = 1},
    /* grid_sample.c, det.c, tfidf.c, roi_align.c, dft.c */
    {"grid_sample", b_grid, SH(1, 2, 5, 6), SH(1, 3, 4, 2), {TS_GRID_BILINEAR, TS_GRID_ZEROS, 0}},
    {"grid_sample", b_grid, SH(2, 2, 5, 6), SH(2, 3, 4, 2), {TS_GRID_NEAREST, TS_GRID_BORDER, 1}},
    {"grid_sample", b_grid, SH(1, 3, 5, 6), SH(1, 4, 3, 2), {TS_GRID_BICUBIC, TS_GRID_REFLECTION, 0}},
    {"det", b_det, SH(3, 4, 4), SH0}, {"det", b_det, SH(2, 2)}, {"det", b_det, SH(1, 1)},
    {"tfidf", b_tfidf, SH(2, 9), SH0, {TS_I64, TS_TFIDF_TF, 0, 1}}, {"tfidf", b_tfidf, SH(11), SH0, {TS_I32, TS_TFIDF_TFIDF, 1, 1}},
    {"tfidf", b_tfidf, SH(3, 7), SH0, {TS_I64, TS_TFIDF_IDF, 2, 2}},
    {"roi_align", b_roi, SH(1, 2, 6, 7), SH(3), {2, 3, 2, 1}, {1.f}}, {"roi_align", b_roi, SH(2, 3, 8, 8), SH(4), {3, 3, 0, 0}, {0.5f}},
    {"dft", b_dft, SH(2, 8, 1), SH0, {1, 0, 0, 0}}, {"dft", b_dft, SH(2, 5, 2), SH0, {1, 1, 0, 0}},
    {"dft", b_dft, SH(7, 3, 1), SH0, {0, 0, 1, 0}}, {"dft", b_dft, SH(6, 2), SH0, {0, 0, 0, 9}},
    /* cast_stochastic.c (SH(130, 257): several chunks of the OpenMP loop) */
    {"cast_stochastic", b_cast_sr, SH(7, 13), SH0, {TS_BF16, TS_I64}, .grad = 1},
    {"cast_stochastic", b_cast_sr, SH(7, 13), SH0, {TS_F16, TS_I32}, .grad = 1},
    {"cast_stochastic", b_cast_sr, SH(1), SH0, {TS_F16, TS_F32}},
    {"cast_stochastic", b_cast_sr, SH(130, 257), SH0, {TS_BF16, TS_I64}},
};
#pragma GCC diagnostic pop

#undef ARITH
#undef UNARY
#undef MATH
#undef BINOP

#endif /* BACKEND_OPS_CASES_H */
