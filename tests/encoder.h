/*
 * encoder.h — a post-LN BERT encoder layer built from public ops, shared by test_grad_block.c
 * (finite-difference check of a small block) and test_memplan.c (a BERT-Base-sized stack).
 *
 * One layer, x [B, T, C], H heads of D = C / H, FFN width F, parameters named like Hugging
 * Face's BertLayer ("<prefix>attention.self.query.weight", Linear weights [out, in]):
 *   q, k, v  = x Wq^T + bq, ...          -> [B, T, H, D] -> [B, H, T, D]
 *   probs    = dropout(softmax(q k^T / sqrt(D) + mask))      mask [B, 1, 1, T], additive
 *   ctx      = probs v                   -> [B, T, H, D] -> [B, T, C]
 *   h        = layer_norm(dropout(ctx Wo^T + bo) + x)
 *   out      = layer_norm(dropout(gelu(h W1^T + b1) W2^T + b2) + h)
 */
#ifndef TESTS_ENCODER_H
#define TESTS_ENCODER_H

#include <math.h>
#include <stdio.h>

#include "tessera.h"

typedef struct enc_cfg {
    int B, T, C, H, F;
    float dropout;     /* hidden and attention-probability dropout */
    float ln_eps;      /* 1e-12 in BERT */
    ts_init w_init;    /* Linear weights; biases start at 0, LayerNorm at (1, 0) */
    int tanh_gelu;     /* 0: erf GELU (BERT) */
} enc_cfg;

/* y = x W^T + b with W [out, in] named "<prefix><name>.weight" and b "<prefix><name>.bias". */
static inline ts_value enc_linear(ts_graph *g, const char *prefix, const char *name, ts_value x, int in,
                                  int out, ts_init w_init) {
    char wn[256], bn[256];
    snprintf(wn, sizeof wn, "%s%s.weight", prefix, name);
    snprintf(bn, sizeof bn, "%s%s.bias", prefix, name);
    ts_value w = ts_param(g, wn, TS_F32, 2, (int64_t[]){out, in}, w_init);
    ts_value b = ts_param(g, bn, TS_F32, 1, (int64_t[]){out}, ts_init_zeros());
    return ts_add(g, ts_matmul(g, x, w, 0, 1), b);
}

static inline ts_value enc_layer_norm(ts_graph *g, const char *prefix, const char *name, ts_value x, int C,
                                      float eps) {
    char wn[256], bn[256];
    snprintf(wn, sizeof wn, "%s%s.weight", prefix, name);
    snprintf(bn, sizeof bn, "%s%s.bias", prefix, name);
    ts_value gm = ts_param(g, wn, TS_F32, 1, (int64_t[]){C}, ts_init_ones());
    ts_value bt = ts_param(g, bn, TS_F32, 1, (int64_t[]){C}, ts_init_zeros());
    return ts_layer_norm(g, x, gm, bt, eps);
}

/* The additive attention mask [B, 1, 1, T] from a padding mask [B, T] (1 keep, 0 pad):
 * (mask - 1) * 10000. */
static inline ts_value enc_additive_mask(ts_graph *g, ts_value pad, int B, int T) {
    ts_value m = ts_reshape(g, pad, 4, (int64_t[]){B, 1, 1, T});
    return ts_scale(g, m, 10000.f, -10000.f);
}

/* [B, T, C] -> [B, H, T, D] */
static inline ts_value enc_heads(ts_graph *g, ts_value x, const enc_cfg *c) {
    ts_value r = ts_reshape(g, x, 4, (int64_t[]){c->B, c->T, c->H, c->C / c->H});
    return ts_transpose(g, r, (int[]){0, 2, 1, 3});
}

/* One post-LN encoder layer; prefix like "encoder.layer.0.". */
static inline ts_value enc_layer(ts_graph *g, const enc_cfg *c, const char *prefix, ts_value x, ts_value mask) {
    int C = c->C, D = c->C / c->H;
    ts_value q = enc_heads(g, enc_linear(g, prefix, "attention.self.query", x, C, C, c->w_init), c);
    ts_value k = enc_heads(g, enc_linear(g, prefix, "attention.self.key", x, C, C, c->w_init), c);
    ts_value v = enc_heads(g, enc_linear(g, prefix, "attention.self.value", x, C, C, c->w_init), c);
    ts_value scores = ts_scale(g, ts_matmul(g, q, k, 0, 1), 1.f / sqrtf((float)D), 0.f);
    ts_value probs = ts_dropout(g, ts_softmax(g, scores, mask), c->dropout);
    ts_value ctx = ts_transpose(g, ts_matmul(g, probs, v, 0, 0), (int[]){0, 2, 1, 3});
    ctx = ts_reshape(g, ctx, 3, (int64_t[]){c->B, c->T, C});
    ts_value attn = ts_dropout(g, enc_linear(g, prefix, "attention.output.dense", ctx, C, C, c->w_init), c->dropout);
    ts_value h = enc_layer_norm(g, prefix, "attention.output.LayerNorm", ts_add(g, attn, x), C, c->ln_eps);
    ts_value f = ts_gelu(g, enc_linear(g, prefix, "intermediate.dense", h, C, c->F, c->w_init), c->tanh_gelu);
    f = ts_dropout(g, enc_linear(g, prefix, "output.dense", f, c->F, C, c->w_init), c->dropout);
    return enc_layer_norm(g, prefix, "output.LayerNorm", ts_add(g, f, h), C, c->ln_eps);
}

/* `layers` layers named "encoder.layer.<i>."; mask is the additive [B, 1, 1, T] mask (or TS_NONE). */
static inline ts_value enc_stack(ts_graph *g, const enc_cfg *c, int layers, ts_value x, ts_value mask) {
    char prefix[64];
    for (int i = 0; i < layers; i++) {
        snprintf(prefix, sizeof prefix, "encoder.layer.%d.", i);
        x = enc_layer(g, c, prefix, x, mask);
    }
    return x;
}

#endif /* TESTS_ENCODER_H */
