/*
 * test_grad_block.c — finite-difference gradient check of a whole post-LN BERT encoder layer
 * (tests/encoder.h): x [B=2, T=5, C=8], 2 heads, Q/K/V projections with bias, an additive mask
 * from a padding mask [B, T] (batch 1 has 2 padded positions), softmax, dropout, output
 * projection, residual, layer_norm, a GELU FFN of width 16, residual, layer_norm.
 * loss = sum(out * R), R a fixed random constant.
 *
 * Every parameter (16 of them) and the input x (a parameter here, so that it has a gradient) is
 * checked on a random sample of up to 12 elements, all parameters set to random values (weights
 * uniform [-0.5, 0.5), biases [-0.1, 0.1), LayerNorm scales [0.5, 1.5)). Central differences,
 * eps = 3e-3, the loss recomputed on the host in double; tolerance max |num - ana| /
 * max(1, |ana|) <= 1e-2. Cases: the default compile (fusion on), fusion off, and dropout 0.1
 * with the run step pinned so every run draws the same mask.
 */
#include "encoder.h"
#include "fd_check.h"

enum { B = 2, T = 5, C = 8, H = 2, F = 16 };

typedef struct block_ctx {
    float dropout;
    int tanh_gelu;
} block_ctx;

static int build_block(ts_graph *g, const ts_value *p, ts_value *o, const void *ctx) {
    const block_ctx *bc = ctx;
    enc_cfg c = {B, T, C, H, F, bc->dropout, 1e-5f, ts_init_normal(0.02f), bc->tanh_gelu};
    /* padding mask: batch 0 keeps all 5 positions, batch 1 the first 3 */
    float pad[B * T] = {1, 1, 1, 1, 1, 1, 1, 1, 0, 0};
    ts_tensor *pt = ts_tensor_from(TS_F32, 2, (int64_t[]){B, T}, pad);
    ts_value mask = enc_additive_mask(g, ts_constant(g, pt), B, T);
    ts_tensor_free(pt);
    o[0] = enc_layer(g, &c, "encoder.layer.0.", p[0], mask);
    return 1;
}

static int block_gen(const char *name) {
    size_t n = strlen(name);
    if (strstr(name, "LayerNorm.weight")) return GEN_GAMMA;
    if (n >= 4 && strcmp(name + n - 4, "bias") == 0) return GEN_SMALL;
    if (n >= 6 && strcmp(name + n - 6, "weight") == 0) return GEN_WEIGHT;
    return GEN_UNIF;
}

static void block_case(const char *name, float dropout, int no_fusion, int tanh_gelu) {
    static block_ctx ctx;
    ctx.dropout = dropout;
    ctx.tanh_gelu = tanh_gelu;
    fd_spec s;
    fd_init(&s, name, build_block, &ctx);
    fd_param(&s, "x", GEN_UNIF, DIMS(B, T, C));
    s.gen_for = block_gen;
    s.eps = 3e-3;
    s.max_check = 12;
    s.fd_train = dropout > 0;
    s.no_fusion = no_fusion;
    s.per_param = 1;
    double e = fd_run(&s);
    CHECK(e >= 0, "%s did not run", name);
}

/* Every parameter of the layer must have been checked: the harness checks all program
 * parameters, so count them here against the 16 the layer declares (+ x). */
static void test_block_param_count(void) {
    ts_graph *g = ts_graph_new();
    ts_value x = ts_param(g, "x", TS_F32, DIMS(B, T, C), ts_init_uniform(-1, 1));
    block_ctx bc = {0, 0};
    ts_value out;
    build_block(g, &x, &out, &bc);
    ts_value loss = ts_reduce_mean(g, out, 0, NULL, 0);
    CHECK_OK(ts_backward(g, loss));
    ts_program *p = ts_compile(g, &(ts_compile_opts){0});
    CHECK(p != NULL, "compile: %s", ts_last_error());
    if (p) {
        CHECK(ts_program_num_params(p) == 17, "the layer has %d parameters (with x), expected 17",
              ts_program_num_params(p));
        int found = 0;
        for (int i = 0; i < ts_program_num_params(p); i++)
            found += strcmp(ts_program_param_name(p, i), "encoder.layer.0.attention.self.query.weight") == 0;
        CHECK(found == 1, "HF-style parameter name missing");
    }
    ts_program_free(p);
    ts_graph_free(g);
}

static void test_block(void) { block_case("encoder layer (fusion on)", 0.f, 0, 0); }
static void test_block_nofusion(void) { block_case("encoder layer (no_fusion)", 0.f, 1, 0); }
static void test_block_dropout(void) { block_case("encoder layer, dropout 0.1, tanh gelu", 0.1f, 0, 1); }

int main(int argc, char **argv) {
    tu_args(argc, argv);
    printf("finite-difference check of a BERT encoder layer; tolerance 1e-2\n");
    RUN(test_block_param_count);
    RUN(test_block);
    RUN(test_block_nofusion);
    RUN(test_block_dropout);
    return tu_finish("test_grad_block");
}
