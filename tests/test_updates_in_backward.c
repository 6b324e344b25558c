/*
 * test_updates_in_backward.c — ts_optim_opts.updates_in_backward: each parameter's update moved
 * into the backward pass, right after its gradient is complete and the parameter's last use.
 *
 *  - A small BERT for pre-training (2 layers, C 32, tied word embeddings, dropout 0.1, padded
 *    rows) trained 3 steps with the updates at the end and in the backward: every step's loss and
 *    every parameter after the steps are the same bits, for AdamW, LAMB and SGD with momentum,
 *    in f32, with bf16 compute, with bf16-stored parameters (their casts move with the update),
 *    with recompute and without fusion, with the GELU outputs and the parameters' bf16 casts
 *    recomputed (the casts' clones read a parameter late in the backward: the update waits for
 *    them; AdamW, LAMB, bf16-stored and packed). ts_program_memory: grads 0, and less memory in all.
 *  - In the graph ts_optimizer leaves, every update comes after every other reader of its
 *    parameter (or of a reshape of it) and after its gradient's producer, and some update comes
 *    before the backward's last node (the updates did move).
 *  - A parameter whose gradient is complete early but that a recomputed segment reads late (a
 *    non-differentiable use: a cast through int32): the same bits both ways. An update placed
 *    right after the gradient, before that read, changes the recomputed mask (checked once by
 *    breaking the rule: q's values then differ).
 *  - The same with packed sequences (f32 and bf16), and with the in-backward run on the randomized
 *    device (a seeded half of the ops on the CPU plugin, the rest on the CPU fallback): f32, bf16,
 *    bf16-stored parameters with packing, and bf16 with the casts and GELUs recomputed.
 *  - At batch 1, where ts_backward copies each weight's gradient at the end of the backward, the
 *    copies move with the updates: most of the gradients' memory is still freed (planned).
 *  - The tied word embeddings' decoder share is made just before the add that sums it with the
 *    lookup's, and BERT-Base's planned arena does not hold it at the peak.
 *  - A gradient named as a fetch is kept to the end of the run and equals the other program's.
 *  - Refused, naming the conflict: clipping, accumulation, loss scaling, pipeline stages; with
 *    mode 2 ("where allowed") the same graphs keep their updates at the end, without an error.
 */
#include "tessera_apps.h"
#include "tessera_backend.h"
#include "graph/ir.h"
#include "ops/op.h"
#include "test_util.h"

enum { STEPS = 3, MAXP = 64 };

typedef struct spec {
    const char *what;
    ts_optim_kind kind;
    float momentum;
    ts_dtype compute, store; /* TS_F32 compute; store TS_F32: parameters as made */
    int recompute, no_fusion; /* recompute 1: a segment per layer; 2: the GELUs' outputs and the
                                 parameters' casts (ts_graph_recompute_gelu, _casts) */
    int packed;              /* 2 sequences a row (ts_bert_config.max_sequences_per_pack) */
    const char *device;      /* the in-backward run's device (NULL: the CPU) */
} spec;

typedef struct result {
    float loss[STEPS];
    int n;
    char names[MAXP][128];
    ts_tensor *after[MAXP];
    ts_tensor *word_grad; /* the word embeddings' gradient, a fetch */
    ts_memory mem;
} result;

static void result_free(result *r) {
    if (!r) return;
    for (int i = 0; i < r->n; i++) ts_tensor_free(r->after[i]);
    ts_tensor_free(r->word_grad);
    free(r);
}

static ts_bert_config small_config(const spec *s) {
    ts_bert_config c;
    memset(&c, 0, sizeof c); /* the fields after the base layout, which the default leaves */
    ts_bert_config_default(&c);
    c.struct_size = sizeof c; /* ... count (max_sequences_per_pack) */
    c.vocab_size = 160; /* the decoder's share [V, C] outweighs the logits' gradient [24, V] and the
                           hidden [24, C] it is made from, so it is made late (sink_partials.c) */
    c.hidden_size = 32;
    c.num_hidden_layers = 2;
    c.num_attention_heads = 2;
    c.intermediate_size = 64;
    c.max_position_embeddings = 16;
    c.hidden_dropout_prob = 0.1f;
    c.attention_probs_dropout_prob = 0.1f;
    c.compute_dtype = s->compute;
    c.recompute = s->recompute == 1;
    c.max_sequences_per_pack = s->packed ? 2 : 0;
    return c;
}

/* Fixed inputs, batch 3 x 8: row b has its last b positions padded; every third real position is
 * an MLM label. Packed: each row holds two sequences, positions 0..3 and 4..7 - b. */
static void feed(ts_program *p, int packed) {
    enum { B = 3, T = 8 };
    tu_rng r = tu_rng_seed(5);
    ts_tensor *ids = ts_tensor_new(TS_I32, DIMS(B, T)), *tt = ts_tensor_new(TS_I32, DIMS(B, T)),
              *mask = ts_tensor_new(TS_I32, DIMS(B, T)), *lab = ts_tensor_new(TS_I32, DIMS(B, T)),
              *nsp = ts_tensor_new(TS_I32, DIMS(B));
    int32_t *I = ts_tensor_data(ids), *TT = ts_tensor_data(tt), *M = ts_tensor_data(mask), *L = ts_tensor_data(lab);
    for (int b = 0; b < B; b++) {
        for (int t = 0; t < T; t++) {
            int real = t < T - b, i = b * T + t;
            I[i] = real ? (int32_t)tu_randint(&r, 60) : 0;
            TT[i] = t >= T / 2;
            M[i] = real ? (packed && t >= T / 2 ? 2 : 1) : 0;
            L[i] = real && t % 3 == 0 ? (int32_t)tu_randint(&r, 60) : -100;
        }
        ((int32_t *)ts_tensor_data(nsp))[b] = b % 2;
    }
    if (packed) {
        ts_tensor *pos = ts_tensor_new(TS_I32, DIMS(B, T)), *cls = ts_tensor_new(TS_I32, DIMS(B, 2)),
                  *nsp2 = ts_tensor_new(TS_I32, DIMS(B, 2));
        for (int i = 0; i < B * T; i++) ((int32_t *)ts_tensor_data(pos))[i] = i % T % (T / 2);
        for (int i = 0; i < B * 2; i++) {
            ((int32_t *)ts_tensor_data(cls))[i] = i % 2 * (T / 2);
            ((int32_t *)ts_tensor_data(nsp2))[i] = i / 2 % 2 ^ i % 2;
        }
        CHECK_OK(ts_program_feed(p, "position_ids", pos));
        CHECK_OK(ts_program_feed(p, "cls_positions", cls));
        ts_tensor_free(nsp), ts_tensor_free(pos), ts_tensor_free(cls);
        nsp = nsp2;
    }
    CHECK_OK(ts_program_feed(p, "input_ids", ids));
    CHECK_OK(ts_program_feed(p, "token_type_ids", tt));
    CHECK_OK(ts_program_feed(p, "attention_mask", mask));
    CHECK_OK(ts_program_feed(p, "labels", lab));
    CHECK_OK(ts_program_feed(p, "next_sentence_label", nsp));
    ts_tensor *all[] = {ids, tt, mask, lab, nsp};
    for (int i = 0; i < 5; i++) ts_tensor_free(all[i]);
}

/* In g (after ts_optimizer): every update node after every other reader of its parameter (or a
 * reshape of it, transitively) and after its gradient's producer. Returns how many updates come
 * before the last node of the backward pass (moved ones). */
static int check_order(const ts_graph *g, const char *what) {
    int moved = 0, last_bwd = -1;
    for (int i = 0; i < g->nnodes; i++) {
        int op = g->nodes[i].op;
        if (op != TS_OP_ADAMW_UPDATE && op != TS_OP_LAMB_UPDATE && op != TS_OP_SGD_UPDATE && op != TS_OP_CAST &&
            op != TS_OP_ASSIGN && op != TS_OP_CAST_STOCHASTIC && i >= g->bwd_start)
            last_bwd = i;
    }
    int *root = malloc(sizeof(int) * (size_t)g->nvals);
    for (int v = 0; v < g->nvals; v++) root[v] = v;
    for (int i = 0; i < g->nnodes; i++) {
        const ts_node *n = &g->nodes[i];
        if ((ts_op_get(n->op)->flags & TS_OPF_ALIAS0) && n->in[0] >= 0) root[n->out[0]] = root[n->in[0]];
    }
    for (int u = 0; u < g->nnodes; u++) {
        const ts_node *up = &g->nodes[u];
        if (up->op != TS_OP_ADAMW_UPDATE && up->op != TS_OP_LAMB_UPDATE && up->op != TS_OP_SGD_UPDATE) continue;
        int param = up->in[0], grad = up->in[1];
        /* a 16-bit parameter's update reads f32 copies: follow the cast to the parameter */
        if (g->vals[param].kind == TS_V_NODE) param = g->nodes[g->vals[param].node].in[0];
        if (g->vals[grad].kind == TS_V_NODE)
            CHECK(g->vals[grad].node < u, "%s: the update of %s runs before its gradient is made", what,
                  g->vals[param].name);
        moved += u < last_bwd;
        for (int i = 0; i < g->nnodes; i++) {
            const ts_node *n = &g->nodes[i];
            if (i == u || n->op == TS_OP_ASSIGN) continue;
            for (int j = 0; j < n->nin; j++)
                if (n->in[j] >= 0 && root[n->in[j]] == param && i > u)
                    CHECK(0, "%s: node %d (%s) reads %s after its update (node %d)", what, i, ts_op_get(n->op)->name,
                          g->vals[param].name, u);
        }
    }
    free(root);
    return moved;
}

/* The node at the bottom of the casts and copies that make value v (its own producer if none). */
static int bottom(const ts_graph *g, int v, int *top) {
    int i = g->vals[v].kind == TS_V_NODE ? g->vals[v].node : -1;
    *top = i;
    while (i >= 0 && (g->nodes[i].op == TS_OP_CAST || g->nodes[i].op == TS_OP_SCALE)) {
        int u = g->nodes[i].in[0];
        i = g->vals[u].kind == TS_V_NODE ? g->vals[u].node : -1;
    }
    return i;
}

/* 1 when the tied word embeddings' gradient in g is made by an add whose decoder share (a matmul,
 * with the casts above it) is made after the lookup's share and before the add
 * (graph/sink_partials.c); prints where not. */
static int share_late(const ts_graph *g, const char *what) {
    int grad = ts_grad(g, ts_lookup(g, "bert.embeddings.word_embeddings.weight")), a = -1;
    if (grad >= 0) bottom(g, grad, &a);
    while (a >= 0 && (g->nodes[a].op == TS_OP_CAST || g->nodes[a].op == TS_OP_SCALE)) /* to the add */
        a = g->vals[g->nodes[a].in[0]].kind == TS_V_NODE ? g->vals[g->nodes[a].in[0]].node : -1;
    int share = -1, share_top = -1, other = -1;
    for (int j = 0; a >= 0 && g->nodes[a].op == TS_OP_ADD && j < g->nodes[a].nin; j++) {
        int top, b = bottom(g, g->nodes[a].in[j], &top);
        if (b >= 0 && g->nodes[b].op == TS_OP_MATMUL) share = b, share_top = top;
        else if (top > other) other = top;
    }
    int late = share > other && share_top < a;
    if (!late)
        printf("    %s: the decoder's share is made at node %d, the lookup's at %d, their add is %d (%s)\n", what, share,
               other, a, a >= 0 ? ts_op_get(g->nodes[a].op)->name : "none");
    return late;
}

/* Build, train STEPS steps with the updates at the end (in_bwd 0) or in the backward (1), read
 * the losses, the parameters after and the word embeddings' gradient (a fetch). */
static result *train(const spec *s, int in_bwd) {
    result *r = calloc(1, sizeof *r);
    ts_bert_config c = small_config(s);
    ts_graph *g = ts_graph_new();
    ts_graph_set_seed(g, 3);
    ts_bert_outputs o;
    ts_optim_opts oo = ts_optim_defaults(s->kind);
    oo.momentum = s->momentum;
    oo.updates_in_backward = in_bwd;
    if (CHECK_OK(ts_bert_build(g, &c, TS_BERT_PRETRAINING, 3, 8, &o)) ||
        (s->store != TS_F32 && CHECK_OK(ts_graph_store_params(g, s->store))) ||
        (s->recompute == 2 && (CHECK_OK(ts_graph_recompute_gelu(g)) || CHECK_OK(ts_graph_recompute_casts(g)))) ||
        CHECK_OK(ts_backward(g, o.loss)) ||
        CHECK_OK(ts_optimizer(g, ts_scalar(g, 1e-2f), &oo))) {
        ts_graph_free(g);
        result_free(r);
        return NULL;
    }
    int moved = check_order(g, s->what);
    if (in_bwd) CHECK(moved > 0, "%s: no update runs inside the backward pass", s->what);
    if (in_bwd) CHECK(share_late(g, s->what), "%s: the decoder's share is not made late", s->what);
    else CHECK(moved == 0, "%s: %d updates inside the backward pass without updates_in_backward", s->what, moved);
    const char *fetch[] = {"loss", "bert.embeddings.word_embeddings.weight@GRAD"};
    ts_program *p = ts_compile(g, &(ts_compile_opts){.nfetch = 2, .fetches = fetch, .no_fusion = s->no_fusion,
                                                     .device = in_bwd ? s->device : NULL});
    CHECK(p != NULL, "%s: compile: %s", s->what, ts_last_error());
    ts_graph_free(g);
    if (!p) {
        result_free(r);
        return NULL;
    }
    r->mem.struct_size = sizeof r->mem;
    CHECK_OK(ts_program_memory(p, &r->mem));
    if (in_bwd && s->device) { /* the device must leave some ops to the CPU fallback, or nothing is cut */
        const char *pl = ts_program_placement(p);
        printf("    %s\n", pl);
        CHECK(strstr(pl, "CPU"), "%s: no CPU fallback: %s", s->what, pl);
    }
    feed(p, s->packed);
    for (int k = 0; k < STEPS; k++) {
        ts_tensor *loss = NULL;
        CHECK_OK(ts_program_run(p));
        CHECK_OK(ts_program_fetch(p, "loss", &loss));
        r->loss[k] = loss ? tu_f32(loss)[0] : -1.f;
        ts_tensor_free(loss);
    }
    CHECK_OK(ts_program_fetch(p, fetch[1], &r->word_grad));
    r->n = ts_program_num_params(p) < MAXP ? ts_program_num_params(p) : MAXP;
    for (int i = 0; i < r->n; i++) {
        snprintf(r->names[i], sizeof r->names[i], "%s", ts_program_param_name(p, i));
        CHECK_OK(ts_program_get_param(p, r->names[i], &r->after[i]));
    }
    ts_program_free(p);
    return r;
}

static size_t total(const ts_memory *m) { return m->params + m->grads + m->optimizer_state + m->activations; }

static void compare(const spec *s) {
    result *end = train(s, 0), *bwd = end ? train(s, 1) : NULL;
    if (end && bwd) {
        for (int k = 0; k < STEPS; k++)
            CHECK(!memcmp(&end->loss[k], &bwd->loss[k], sizeof(float)), "%s: step %d loss %.9g at the end, %.9g in "
                  "the backward", s->what, k, (double)end->loss[k], (double)bwd->loss[k]);
        CHECK(end->n == bwd->n && end->n > 30, "%s: %d and %d parameters", s->what, end->n, bwd->n);
        int same = 0;
        for (int i = 0; i < end->n && i < bwd->n; i++) {
            int eq = !strcmp(end->names[i], bwd->names[i]) && tu_bitwise_equal(end->after[i], bwd->after[i]);
            CHECK(eq, "%s: %s after %d steps differs (max abs diff %.3e)", s->what, end->names[i], STEPS,
                  tu_same_shape(end->after[i], bwd->after[i]) && ts_tensor_dtype(end->after[i]) == TS_F32
                      ? tu_max_abs_diff_f(tu_f32(end->after[i]), tu_f32(bwd->after[i]), ts_tensor_numel(end->after[i]))
                      : -1.0);
            same += eq;
        }
        CHECK(tu_bitwise_equal(end->word_grad, bwd->word_grad), "%s: the fetched gradient differs", s->what);
        CHECK(bwd->mem.grads == 0 && end->mem.grads > 0, "%s: grads %zu at the end, %zu in the backward", s->what,
              end->mem.grads, bwd->mem.grads);
        CHECK(total(&bwd->mem) < total(&end->mem), "%s: %zu bytes in the backward, %zu at the end", s->what,
              total(&bwd->mem), total(&end->mem));
        CHECK(bwd->mem.activations < end->mem.activations + end->mem.grads / 2, "%s: the arena grew by %zu bytes of "
              "the %zu of gradients: most are not freed early", s->what, bwd->mem.activations - end->mem.activations,
              end->mem.grads);
        printf("  %s: losses %.6f .. %.6f, %d / %d parameters the same bits after %d steps; grads + activations "
               "%.1f -> %.1f KiB\n", s->what, (double)end->loss[0], (double)end->loss[STEPS - 1], same, end->n,
               STEPS, (end->mem.grads + end->mem.activations) / 1024.0,
               (bwd->mem.grads + bwd->mem.activations) / 1024.0);
    }
    result_free(end);
    result_free(bwd);
}

static void test_adamw(void) { compare(&(spec){"AdamW f32", TS_OPTIM_ADAMW, 0.f, TS_F32, TS_F32, 0, 0, 0, NULL}); }
static void test_lamb(void) { compare(&(spec){"LAMB f32", TS_OPTIM_LAMB, 0.f, TS_F32, TS_F32, 0, 0, 0, NULL}); }
static void test_sgd(void) { compare(&(spec){"SGD momentum f32", TS_OPTIM_SGD, 0.9f, TS_F32, TS_F32, 0, 0, 0, NULL}); }
static void test_bf16(void) {
    compare(&(spec){"AdamW bf16 compute", TS_OPTIM_ADAMW, 0.f, TS_BF16, TS_F32, 0, 0, 0, NULL});
}
static void test_stored(void) {
    compare(&(spec){"AdamW bf16-stored parameters", TS_OPTIM_ADAMW, 0.f, TS_BF16, TS_BF16, 0, 0, 0, NULL});
}
static void test_recompute(void) {
    compare(&(spec){"AdamW recompute", TS_OPTIM_ADAMW, 0.f, TS_F32, TS_F32, 1, 0, 0, NULL});
}
/* The backward's clones of the weights' bf16 casts read each parameter late: its update waits. */
static void test_recompute_casts(void) {
    compare(&(spec){"AdamW bf16, casts and GELUs recomputed", TS_OPTIM_ADAMW, 0.f, TS_BF16, TS_F32, 2, 0, 0, NULL});
    compare(&(spec){"LAMB bf16, casts and GELUs recomputed", TS_OPTIM_LAMB, 0.f, TS_BF16, TS_F32, 2, 0, 0, NULL});
    compare(&(spec){"AdamW bf16-stored, casts recomputed, packed", TS_OPTIM_ADAMW, 0.f, TS_BF16, TS_BF16, 2, 0, 1,
                    NULL});
}
static void test_no_fusion(void) {
    compare(&(spec){"AdamW no fusion", TS_OPTIM_ADAMW, 0.f, TS_F32, TS_F32, 0, 1, 0, NULL});
}
static void test_packed(void) {
    compare(&(spec){"AdamW packed sequences", TS_OPTIM_ADAMW, 0.f, TS_F32, TS_F32, 0, 0, 1, NULL});
    compare(&(spec){"AdamW packed sequences, bf16", TS_OPTIM_ADAMW, 0.f, TS_BF16, TS_F32, 0, 0, 1, NULL});
}

/* The in-backward run on the randomized device (the CPU plugin claiming a seeded half of the
 * (op, dtype) pairs; tessera's CPU fallback runs the rest, with copies between the parts) against
 * the built-in CPU with the updates at the end: the same bits (tests/test_cli_fallback.c's rule).
 * The seed: $TESSERA_CPUPLUGIN_SEED, else 2 (the plugin reads it once, at its load). */
static void test_random_device(void) {
    const char *seed = getenv("TESSERA_CPUPLUGIN_SEED") ? getenv("TESSERA_CPUPLUGIN_SEED") : "2";
    setenv("TESSERA_CPUPLUGIN_FRACTION", "0.5", 1);
    setenv("TESSERA_CPUPLUGIN_SEED", seed, 1);
    if (CHECK_OK(ts_backend_load(TS_CPU_PLUGIN))) return;
    printf("  randomized device, seed %s\n", seed);
    compare(&(spec){"AdamW f32, randomized device", TS_OPTIM_ADAMW, 0.f, TS_F32, TS_F32, 0, 0, 0, "cpuplugin"});
    compare(&(spec){"AdamW bf16, randomized device", TS_OPTIM_ADAMW, 0.f, TS_BF16, TS_F32, 0, 0, 0, "cpuplugin"});
    compare(&(spec){"AdamW bf16-stored, packed, randomized device", TS_OPTIM_ADAMW, 0.f, TS_BF16, TS_BF16, 0, 0, 1,
                    "cpuplugin"});
    compare(&(spec){"AdamW bf16, casts and GELUs recomputed, randomized device", TS_OPTIM_ADAMW, 0.f, TS_BF16, TS_F32,
                    2, 0, 0, "cpuplugin"});
}

/* p's gradient comes only from sum(p p), made first in the backward; a recomputed segment also
 * reads p, through a cast to int32 (no gradient), late in the backward: q's gradient depends on
 * that read. Two SGD steps; returns q and p after them in out[0], out[1]. */
static void late_reader(int in_bwd, ts_tensor **out) {
    ts_graph *g = ts_graph_new();
    ts_value x = ts_input(g, "x", TS_F32, DIMS(4, 6));
    ts_value p = ts_param(g, "p", TS_F32, DIMS(6), ts_init_ones());
    ts_value q = ts_param(g, "q", TS_F32, DIMS(6, 6), ts_init_normal(0.5f));
    CHECK_OK(ts_graph_recompute_begin(g));
    ts_value m = ts_cast(g, ts_cast(g, ts_mul(g, x, p), TS_I32), TS_F32);
    ts_value a = ts_mul(g, ts_tanh(g, ts_matmul(g, x, q, 0, 0)), m);
    CHECK_OK(ts_graph_recompute_end(g));
    ts_value pp = ts_reduce_sum(g, ts_mul(g, p, p), 0, NULL, 0);
    ts_value loss = ts_name(g, ts_add(g, ts_reduce_sum(g, a, 0, NULL, 0), pp), "loss");
    CHECK_OK(ts_backward(g, loss));
    ts_optim_opts oo = ts_optim_defaults(TS_OPTIM_SGD);
    oo.updates_in_backward = in_bwd;
    CHECK_OK(ts_optimizer(g, ts_scalar(g, 0.3f), &oo));
    check_order(g, "late reader");
    ts_program *prog = ts_compile(g, &(ts_compile_opts){.nfetch = 1, .fetches = (const char *[]){"loss"}});
    CHECK(prog != NULL, "late reader: compile: %s", ts_last_error());
    ts_graph_free(g);
    if (!prog) return;
    ts_tensor *xt = ts_tensor_new(TS_F32, DIMS(4, 6));
    for (int i = 0; i < 24; i++) tu_f32(xt)[i] = 0.35f + 0.25f * (float)(i % 7);
    CHECK_OK(ts_program_feed(prog, "x", xt));
    ts_tensor_free(xt);
    CHECK_OK(ts_program_run(prog));
    CHECK_OK(ts_program_run(prog));
    CHECK_OK(ts_program_get_param(prog, "q", &out[0]));
    CHECK_OK(ts_program_get_param(prog, "p", &out[1]));
    ts_program_free(prog);
}

static void test_late_reader(void) {
    ts_tensor *end[2] = {0}, *bwd[2] = {0};
    late_reader(0, end);
    late_reader(1, bwd);
    double diff = end[0] && bwd[0] ? tu_max_abs_diff_f(tu_f32(end[0]), tu_f32(bwd[0]), 36) : -1.0;
    CHECK(tu_bitwise_equal(end[0], bwd[0]), "late reader: q differs (max abs diff %.3e): p was updated before the "
          "recomputed segment read it", diff);
    CHECK(tu_bitwise_equal(end[1], bwd[1]), "late reader: p differs");
    /* the mask must depend on p, or the check above could not fail: p moved from 1 */
    CHECK(end[1] && tu_f32(end[1])[0] < 0.9f, "late reader: p is %g after two steps; the test needs it to move",
          end[1] ? (double)tu_f32(end[1])[0] : -1.0);
    for (int i = 0; i < 2; i++) ts_tensor_free(end[i]), ts_tensor_free(bwd[i]);
}

/* At batch 1 a weight's gradient product is a view, which ts_backward copies into a buffer of its
 * own at the end of the backward: the copy moves with the update, or no gradient is freed early.
 * Planned memory of the small BERT at batch 1 and 2, compiled only. */
static void test_batch_one(void) {
    for (int B = 1; B <= 2; B++) {
        size_t grads[2] = {0}, act[2] = {0};
        for (int in_bwd = 0; in_bwd < 2; in_bwd++) {
            ts_bert_config c = small_config(&(spec){"", TS_OPTIM_ADAMW, 0.f, TS_F32, TS_F32, 0, 0, 0, NULL});
            ts_graph *g = ts_graph_new();
            ts_bert_outputs o;
            ts_optim_opts oo = ts_optim_defaults(TS_OPTIM_ADAMW);
            oo.updates_in_backward = 2 * in_bwd; /* where allowed: here it is */
            CHECK_OK(ts_bert_build(g, &c, TS_BERT_PRETRAINING, B, 8, &o));
            CHECK_OK(ts_backward(g, o.loss));
            CHECK_OK(ts_optimizer(g, ts_scalar(g, 1e-2f), &oo));
            check_order(g, "batch 1");
            ts_program *p = ts_compile(g, &(ts_compile_opts){.nfetch = 1, .fetches = (const char *[]){"loss"},
                                                             .plan_only = 1});
            ts_graph_free(g);
            ts_memory m = {.struct_size = sizeof m};
            CHECK(p && !ts_program_memory(p, &m), "batch %d: %s", B, ts_last_error());
            grads[in_bwd] = m.grads, act[in_bwd] = m.activations;
            ts_program_free(p);
        }
        printf("  batch %d: gradients + activations %.1f -> %.1f KiB\n", B, (grads[0] + act[0]) / 1024.0,
               (grads[1] + act[1]) / 1024.0);
        CHECK(grads[1] == 0 && act[1] < act[0] + grads[0] / 2, "batch %d: gradients %zu -> %zu, activations %zu -> "
              "%zu bytes", B, grads[0], grads[1], act[0], act[1]);
    }
}

/* The tied word embeddings' gradient sums the MLM decoder's [V, C] share, made first in the
 * backward, and the lookup's, made last. In the backward the decoder's share is made late, just
 * before the add (graph/sink_partials.c), and so is not in the arena at its peak: BERT-Base at
 * 8 x 128, f32 and bf16, plans less than half of the share's bytes more activations than with
 * the updates at the end (the share alone would be 94 MB of it). */
static void test_tied_share(void) {
    ts_bert_config c = small_config(&(spec){"", TS_OPTIM_ADAMW, 0.f, TS_F32, TS_F32, 0, 0, 0, NULL});
    c.max_predictions_per_seq = 2; /* the logits' gradient [6, V] reads less than the share [V, C] writes */
    ts_graph *g = ts_graph_new();
    ts_bert_outputs o;
    ts_optim_opts oo = ts_optim_defaults(TS_OPTIM_ADAMW);
    oo.updates_in_backward = 1;
    CHECK_OK(ts_bert_build(g, &c, TS_BERT_PRETRAINING, 3, 8, &o));
    CHECK_OK(ts_backward(g, o.loss));
    CHECK_OK(ts_optimizer(g, ts_scalar(g, 1e-2f), &oo));
    CHECK(share_late(g, "f32"), "f32: the decoder's share is not made late");
    ts_graph_free(g);

    for (int bf16 = 0; bf16 < 2; bf16++) {
        memset(&c, 0, sizeof c);
        ts_bert_config_default(&c);
        c.struct_size = sizeof c, c.max_predictions_per_seq = 20, c.compute_dtype = bf16 ? TS_BF16 : TS_F32;
        size_t act[2] = {0};
        for (int in_bwd = 0; in_bwd < 2; in_bwd++) {
            ts_program *p = NULL;
            ts_bert_train_opts bo = {.struct_size = sizeof bo, .cfg = &c, .head = TS_BERT_PRETRAINING, .batch = 8,
                                     .seq = 128, .optimizer = TS_OPTIM_ADAMW, .weight_decay = 0.01f, .plan_only = 1,
                                     .max_grad_norm = in_bwd ? 0.f : 1.f}; /* clipping: the updates at the end */
            CHECK_OK(ts_bert_train_programs(&bo, &p, NULL));
            ts_memory m = {.struct_size = sizeof m};
            CHECK(p && !ts_program_memory(p, &m), "BERT-Base: %s", ts_last_error());
            act[in_bwd] = m.activations;
            ts_program_free(p);
        }
        double share_bytes = 30522.0 * 768 * 4;
        printf("  BERT-Base 8 x 128 %s: activations %.1f MB with the updates at the end, %.1f in the backward (the "
               "decoder's share: %.1f)\n", bf16 ? "bf16" : "f32", act[0] / 1e6, act[1] / 1e6, share_bytes / 1e6);
        CHECK(act[0] > 0 && (double)act[1] < (double)act[0] + share_bytes / 2, "%s: activations %zu at the end, %zu "
              "in the backward: the decoder's share is alive at the peak", bf16 ? "bf16" : "f32", act[0], act[1]);
    }
}

/* Refused where an update needs every gradient first; the message names the option. With 2
 * ("where allowed") the same graphs take their updates at the end, without an error; 3 is no
 * mode. */
static void test_refusals(void) {
    static const char *const why[] = {"max_grad_norm", "accumulation_steps", "ts_backward_scaled", "pipeline stages"};
    for (int k = 0; k < 8; k++) {
        int mode = k < 4 ? 1 : 2;
        ts_graph *g = ts_graph_new();
        if (k % 4 == 3) CHECK_OK(ts_graph_stage_begin(g, 0));
        ts_value x = ts_input(g, "x", TS_F32, DIMS(2, 3));
        ts_value w = ts_param(g, "w", TS_F32, DIMS(3, 2), ts_init_ones());
        ts_value loss = ts_reduce_sum(g, ts_matmul(g, x, w, 0, 0), 0, NULL, 0);
        if (k % 4 == 3) CHECK_OK(ts_graph_stage_end(g));
        if (k % 4 == 2) CHECK_OK(ts_backward_scaled(g, loss, NULL));
        else CHECK_OK(ts_backward(g, loss));
        ts_optim_opts oo = ts_optim_defaults(TS_OPTIM_ADAMW);
        oo.updates_in_backward = mode;
        oo.max_grad_norm = k % 4 == 0 ? 1.f : 0.f;
        oo.accumulation_steps = k % 4 == 1 ? 2 : 0;
        if (mode == 1) {
            CHECK_STATUS(ts_optimizer(g, ts_scalar(g, 0.1f), &oo), TS_ERR_ARG);
            CHECK_ERRMSG("updates_in_backward", why[k]);
        } else {
            CHECK_OK(ts_optimizer(g, ts_scalar(g, 0.1f), &oo));
            int early = 0; /* updates before the optimizer's part of the graph */
            for (int i = 0; i < g->opt_start; i++) early += g->nodes[i].op == TS_OP_ADAMW_UPDATE;
            CHECK(!g->updates_in_backward && g->opt_start > 0 && early == 0, "mode 2 with %s: %d updates moved",
                  why[k % 4], early);
        }
        ts_graph_free(g);
    }
    ts_graph *g = ts_graph_new();
    ts_value w = ts_param(g, "w", TS_F32, DIMS(3), ts_init_ones());
    CHECK_OK(ts_backward(g, ts_reduce_sum(g, ts_mul(g, w, w), 0, NULL, 0)));
    ts_optim_opts oo = ts_optim_defaults(TS_OPTIM_SGD);
    oo.updates_in_backward = 3;
    CHECK_STATUS(ts_optimizer(g, ts_scalar(g, 0.1f), &oo), TS_ERR_ARG);
    CHECK_ERRMSG("updates_in_backward 3", "0, 1 or 2");
    ts_graph_free(g);
}

int main(int argc, char **argv) {
    tu_args(argc, argv);
    RUN(test_adamw);
    RUN(test_lamb);
    RUN(test_sgd);
    RUN(test_bf16);
    RUN(test_stored);
    RUN(test_recompute);
    RUN(test_recompute_casts);
    RUN(test_no_fusion);
    RUN(test_packed);
    RUN(test_random_device);
    RUN(test_late_reader);
    RUN(test_batch_one);
    RUN(test_tied_share);
    RUN(test_refusals);
    return tu_finish("test_updates_in_backward");
}
