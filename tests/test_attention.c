/*
 * test_attention.c — the fused attention op (ts_attention, src/ops/attention.c and its tiled
 * kernels) and the pass that makes it (ts_graph_fuse_attention), against the unfused ops BERT
 * builds (apps/models/bert.c's bert_attention):
 *   y = matmul(dropout(softmax(scale(matmul(q, k, 0, 1), 1 / sqrt(D)), mask)), v)
 * with q, k, v [B, H, T|S, D] (TS_ATTN_BHTD), or [B, T|S, H, D] transposed by {0, 2, 1, 3} on the
 * way in and out (TS_ATTN_BTHD); in bf16 compute every matmul operand is cast to bf16 and the
 * product back to f32, as autocast does.
 *
 * What is compared: y and the gradients of q, k, v (ts_backward of loss = sum(y * r), r a fixed
 * random tensor) of a training program, as err = max |a - ref| / (1 + max |ref|) per tensor:
 * <= 1e-5 in f32 (the two differ only in the order of f32 sums), <= 2e-2 with compute TS_BF16
 * (the unfused graph also rounds the scores and the product to bf16, which the fused op keeps in
 * f32: a few times bf16's unit roundoff 2^-8 at most; measured: 4e-3). Masks: none, padding [B, 1, 1, S] (additive 0 / -10000, one
 * batch row with only 3 keys valid), packed sequences' block diagonal [B, 1, T, S] (bert_pack_mask's:
 * two or three sequences a row plus padding), a full [B, H, T, S] one. T in {1, 7, 128, 384, 512}.
 * Query rows whose every key is masked (the packed mask's padding rows) are compared apart, within
 * max(tol, 2e-3): their scores sit near -10000, where an f32 ulp is 2^-10, so one rounding of z = s + mask that
 * differs between two correct sum orders moves their probabilities by ~1e-3 (measured: 1e-4). The
 * loss weights r are 0 on those rows (a model's loss ignores padding), so gk and gv take nothing
 * from them and stay within 1e-5 (with r there, they differ by ~5e-5 for that reason alone).
 * Also: a dropped mask is caught; dropout keeps the unfused graph's bits after the pass and about
 * 1 - p of the probabilities, unbiased; inference ignores dropout; finite differences; errors; what
 * the pass fuses and what it declines; in bf16 the pass's node reads bf16 inputs, with the bits of
 * the f32 ones. Run with ONEDNN_MAX_CPU_ISA=AVX2, it tests the kernels'
 * portable (non-AVX-512) path.
 */
#include "fd_check.h"
#include "tessera_backend.h"

#include "graph/opdef.h" /* the nodes the pass made: their op and layout */

enum { M_NONE, M_PAD, M_PACK, M_FULL };
static const char *const mask_names[] = {"none", "pad", "pack", "full"};
static const int perm0213[4] = {0, 2, 1, 3};
#define TOL_F32 1e-5
#define TOL_BF16 2e-2
#define SEED 1234

/* One attention: sizes (B batch, H heads, T queries, S keys, D head size), layout, mask kind,
 * compute dtype, dropout p. */
typedef struct acase {
    int64_t B, H, T, S, D;
    int layout, mask;
    ts_dtype compute;
    float p;
} acase;

/* The host data of a case: q [B, H|T, T|H, D], k and v of S positions, r of y's shape (the loss's
 * weights), the additive mask (NULL: none) and, per (b, h, i), whether every key of query i is
 * masked (dead: NULL when no row is). */
typedef struct adata {
    ts_tensor *q, *k, *v, *r, *mask;
    uint8_t *dead; /* [B H T]: row (b, h, i) has no key left */
} adata;

/* q's shape (n = T) or k's and v's (n = S) in the case's layout. */
static void qkv_shape(const acase *c, int64_t n, int64_t sh[4]) {
    sh[0] = c->B, sh[3] = c->D;
    if (c->layout == TS_ATTN_BTHD) sh[1] = n, sh[2] = c->H;
    else sh[1] = c->H, sh[2] = n;
}

/* The packed mask's sequence ids of batch row b for T positions: sequences of about 30%, 30% and
 * 25% of the row (b even) or 50% and 30% (b odd), each at least 1 long, then padding (0). */
static void pack_ids(int64_t b, int64_t T, int *seq) {
    static const double frac[2][3] = {{0.3, 0.3, 0.25}, {0.5, 0.3, 0}};
    int64_t at = 0;
    for (int s = 0; s < 3 && frac[b % 2][s] > 0 && at < T; s++) {
        int64_t len = (int64_t)(frac[b % 2][s] * (double)T);
        if (len < 1) len = 1;
        for (int64_t i = 0; i < len && at < T; i++) seq[at++] = s + 1;
    }
    for (; at < T; at++) seq[at] = 0;
}

/* The additive mask of c, or NULL (M_NONE); marks the query rows with every key masked in dead. */
static ts_tensor *make_mask(const acase *c, tu_rng *rng, uint8_t *dead) {
    int64_t B = c->B, H = c->H, T = c->T, S = c->S;
    ts_tensor *m = NULL;
    if (c->mask == M_PAD) { /* [B, 1, 1, S]: even rows S - S/4 keys valid, odd rows 3 */
        m = ts_tensor_new(TS_F32, 4, (int64_t[]){B, 1, 1, S});
        for (int64_t b = 0; b < B; b++) {
            int64_t valid = b % 2 ? (S < 3 ? S : 3) : S - S / 4;
            for (int64_t j = 0; j < S; j++) tu_f32(m)[b * S + j] = j < valid ? 0.f : -10000.f;
        }
    } else if (c->mask == M_PACK) { /* [B, 1, T, S], T == S: bert_pack_mask's block diagonal */
        m = ts_tensor_new(TS_F32, 4, (int64_t[]){B, 1, T, S});
        int *seq = malloc(sizeof(int) * (size_t)T);
        for (int64_t b = 0; b < B; b++) {
            pack_ids(b, T, seq);
            for (int64_t i = 0; i < T; i++) {
                for (int64_t j = 0; j < S; j++)
                    tu_f32(m)[(b * T + i) * S + j] = seq[i] == seq[j] && seq[j] > 0 ? 0.f : -10000.f;
                for (int64_t h = 0; h < H; h++) dead[(b * H + h) * T + i] = seq[i] == 0;
            }
        }
        free(seq);
    } else if (c->mask == M_FULL) { /* [B, H, T, S]: 30% masked, the rest in [-2, 0), key i % S kept */
        m = ts_tensor_new(TS_F32, 4, (int64_t[]){B, H, T, S});
        for (int64_t e = 0; e < B * H * T * S; e++) {
            int64_t i = e / S % T, j = e % S;
            double u = tu_unif(rng);
            tu_f32(m)[e] = j == i % S ? 0.f : u < 0.3 ? -10000.f : (float)tu_uniform(rng, -2, 0);
        }
    }
    return m;
}

static void adata_make(adata *d, const acase *c, uint64_t seed) {
    tu_rng rng = tu_rng_seed(seed);
    int64_t qs[4], ks[4];
    qkv_shape(c, c->T, qs);
    qkv_shape(c, c->S, ks);
    d->q = tu_rand_tensor(&rng, 4, qs, -2, 2); /* scores of std ~1.3 at D 64: peaked softmax rows */
    d->k = tu_rand_tensor(&rng, 4, ks, -2, 2);
    d->v = tu_rand_tensor(&rng, 4, ks, -1, 1);
    d->r = tu_rand_tensor(&rng, 4, qs, -1, 1);
    d->dead = calloc((size_t)(c->B * c->H * c->T), 1);
    d->mask = make_mask(c, &rng, d->dead);
    int any = 0;
    for (int64_t i = 0; i < c->B * c->H * c->T; i++) any |= d->dead[i];
    if (!any) free(d->dead), d->dead = NULL;
    /* the loss ignores the rows with no key (as a model's loss ignores padding): r 0 there */
    for (int64_t b = 0; b < c->B; b++)
        for (int64_t h = 0; h < c->H; h++)
            for (int64_t i = 0; i < c->T; i++)
                if (d->dead && d->dead[(b * c->H + h) * c->T + i]) {
                    int64_t row = c->layout == TS_ATTN_BTHD ? (b * c->T + i) * c->H + h : (b * c->H + h) * c->T + i;
                    memset(tu_f32(d->r) + row * c->D, 0, sizeof(float) * (size_t)c->D);
                }
}

static void adata_free(adata *d) {
    ts_tensor_free(d->q), ts_tensor_free(d->k), ts_tensor_free(d->v), ts_tensor_free(d->r), ts_tensor_free(d->mask);
    free(d->dead);
    memset(d, 0, sizeof *d);
}

/* a b (trans_b) in compute dtype dt, as bert.c's matmul_in: bf16 operands, the product cast to f32. */
static ts_value mm(ts_graph *g, ts_dtype dt, ts_value a, ts_value b, int tb) {
    if (dt == TS_F32) return ts_matmul(g, a, b, 0, tb);
    return ts_cast(g, ts_matmul(g, ts_cast(g, a, dt), ts_cast(g, b, dt), 0, tb), TS_F32);
}

/* The attention of c from q, k, v (the case's layout) and mask m: the fused op, or the unfused ops. */
static ts_value attn_value(ts_graph *g, const acase *c, int fused, ts_value q, ts_value k, ts_value v, ts_value m) {
    float scale = 1.f / sqrtf((float)c->D);
    if (fused) return ts_attention(g, q, k, v, m, scale, c->p, c->layout, c->compute);
    if (c->layout == TS_ATTN_BTHD)
        q = ts_transpose(g, q, perm0213), k = ts_transpose(g, k, perm0213), v = ts_transpose(g, v, perm0213);
    ts_value s = ts_scale(g, mm(g, c->compute, q, k, 1), scale, 0.f); /* [B, H, T, S] */
    ts_value p = ts_softmax(g, s, m);
    if (c->p > 0.f) p = ts_dropout(g, p, c->p);
    ts_value y = mm(g, c->compute, p, v, 0); /* [B, H, T, D] */
    return c->layout == TS_ATTN_BTHD ? ts_transpose(g, y, perm0213) : y;
}

/* The attention nodes of g: their count, and the layout and compute dtype of the last (-1: none). */
static int count_attention(const ts_graph *g, int *layout, int *compute) {
    int n = 0;
    *layout = -1;
    if (compute) *compute = -1;
    for (int i = 0; i < g->nnodes; i++)
        if (g->nodes[i].op == TS_OP_ATTENTION) {
            n++;
            *layout = (int)g->nodes[i].attr.i[2];
            if (compute) *compute = (int)g->nodes[i].attr.i[3];
        }
    return n;
}

/* A graph of parameters q, k, v (zeros: set per program), the mask a constant, and *y (named "y")
 * their attention, fused (ts_attention) or as the unfused ops. */
static ts_graph *y_graph(const acase *c, const adata *d, int fused, ts_value *y) {
    ts_graph *g = ts_graph_new();
    ts_graph_set_seed(g, SEED);
    int64_t qs[4], ks[4];
    qkv_shape(c, c->T, qs);
    qkv_shape(c, c->S, ks);
    ts_value q = ts_param(g, "q", TS_F32, 4, qs, ts_init_zeros()), k = ts_param(g, "k", TS_F32, 4, ks, ts_init_zeros());
    ts_value v = ts_param(g, "v", TS_F32, 4, ks, ts_init_zeros());
    ts_value m = d->mask ? ts_constant(g, d->mask) : TS_NONE;
    *y = ts_name(g, attn_value(g, c, fused, q, k, v, m), "y");
    return g;
}

enum { FUSED, UNFUSED, PASS }; /* how a graph is made: ts_attention, the ops, the ops then the pass */

/* A graph: parameters q, k, v, the mask a constant, y (named "y"), loss = sum(y * r), its backward.
 * how = PASS: ts_graph_fuse_attention before ts_backward, its count in *nfused. NULL on failure
 * (checked). */
static ts_graph *attn_graph(const acase *c, const adata *d, int how, int *nfused) {
    ts_value y;
    ts_graph *g = y_graph(c, d, how == FUSED, &y);
    ts_value loss = ts_reduce_sum(g, ts_mul(g, y, ts_constant(g, d->r)), 0, NULL, 0);
    if (how == PASS) {
        int n = ts_graph_fuse_attention(g), layout, compute;
        CHECK(n >= 0, "ts_graph_fuse_attention: %s", ts_last_error());
        if (nfused) *nfused = n;
        int made = count_attention(g, &layout, &compute);
        CHECK(made == n && (n == 0 || (layout == c->layout && compute == (int)c->compute)),
              "the pass says %d nodes, the graph has %d, the last of layout %d, compute %d", n, made, layout, compute);
    }
    ts_status s = ts_graph_status(g);
    if (!s) s = ts_backward(g, loss);
    CHECK(s == TS_OK, "building the %s graph: %s", how == FUSED ? "fused" : "unfused", ts_last_error());
    if (s) ts_graph_free(g), g = NULL;
    return g;
}

static const char *const out_names[4] = {"y", "q@GRAD", "k@GRAD", "v@GRAD"};

/* Compile g (inference: y alone), set q, k, v from d, run at step, fetch y and (training) the three
 * gradients into o[4]. TS_OK or the failure (checked). */
static ts_status attn_run(ts_graph *g, const adata *d, int inference, uint64_t step, int threads, ts_tensor **o) {
    ts_compile_opts opts = {.struct_size = sizeof opts, .nfetch = inference ? 1 : 4, .fetches = out_names,
                            .inference = inference, .num_threads = threads};
    ts_program *p = ts_compile(g, &opts);
    ts_status s = p ? TS_OK : ts_last_status();
    if (!s) s = ts_program_set_param(p, "q", d->q);
    if (!s) s = ts_program_set_param(p, "k", d->k);
    if (!s) s = ts_program_set_param(p, "v", d->v);
    if (!s) ts_program_set_step(p, step), s = ts_program_run(p);
    for (int j = 0; j < 4; j++) o[j] = NULL;
    for (int j = 0; j < (inference ? 1 : 4) && !s; j++) s = ts_program_fetch(p, out_names[j], &o[j]);
    CHECK(s == TS_OK, "compiling or running the program: %s: %s", ts_status_name(s), ts_last_error());
    ts_program_free(p);
    return s;
}

static void outs_free(ts_tensor **o) {
    for (int j = 0; j < 4; j++) ts_tensor_free(o[j]), o[j] = NULL;
}

/* max |a - ref| / (1 + max |ref|) over the elements whose row (element / row_len) is live (dead
 * NULL: all) or, with want_dead, over the dead rows only; INFINITY for a shape mismatch or NaN. */
static double rows_err(ts_tensor *a, ts_tensor *ref, int64_t row_len, const uint8_t *dead, int want_dead) {
    if (!a || !ref || !tu_same_shape(a, ref)) return INFINITY;
    const float *x = tu_f32(a), *y = tu_f32(ref);
    double e = 0, mx = 0;
    for (int64_t i = 0; i < ts_tensor_numel(ref); i++) {
        if (dead && (int)dead[i / row_len] != want_dead) continue;
        double di = fabs((double)x[i] - (double)y[i]);
        if (!(di <= e)) e = di; /* NaN: a huge error */
        if (fabs((double)y[i]) > mx) mx = fabs((double)y[i]);
    }
    return e / (1 + mx);
}
static double rel_err(ts_tensor *a, ts_tensor *ref) { return rows_err(a, ref, 1, NULL, 0); }

/* The dead-row flags of y's (and gq's) rows in the case's layout: y [B, T, H, D] rows are (b, i, h). */
static uint8_t *y_dead_rows(const acase *c, const uint8_t *dead) {
    if (!dead || c->layout == TS_ATTN_BHTD) return NULL;
    uint8_t *o = malloc((size_t)(c->B * c->H * c->T));
    for (int64_t b = 0; b < c->B; b++)
        for (int64_t i = 0; i < c->T; i++)
            for (int64_t h = 0; h < c->H; h++) o[(b * c->T + i) * c->H + h] = dead[(b * c->H + h) * c->T + i];
    return o;
}

/* y in double from the host data: the reference of a forward without dropout, in the case's layout. */
static void ref_attention(const acase *c, const float *q, const float *k, const float *v, const ts_tensor *mask,
                          double *y) {
    int64_t B = c->B, H = c->H, T = c->T, S = c->S, D = c->D;
    int bthd = c->layout == TS_ATTN_BTHD;
    double scale = 1.0 / sqrt((double)D), *z = malloc(sizeof(double) * (size_t)S);
    int64_t co[4];
    for (int64_t b = 0; b < B; b++)
        for (int64_t h = 0; h < H; h++)
            for (int64_t i = 0; i < T; i++) {
                const float *qi = q + (bthd ? ((b * T + i) * H + h) * D : ((b * H + h) * T + i) * D);
                double mx = -INFINITY, sum = 0;
                for (int64_t j = 0; j < S; j++) {
                    const float *kj = k + (bthd ? ((b * S + j) * H + h) * D : ((b * H + h) * S + j) * D);
                    double s = 0;
                    for (int64_t e = 0; e < D; e++) s += (double)qi[e] * kj[e];
                    z[j] = s * scale;
                    if (mask) {
                        co[0] = b, co[1] = h, co[2] = i, co[3] = j;
                        z[j] += tu_f32((ts_tensor *)mask)[tu_bcast_index(co, 4, ts_tensor_ndim(mask),
                                                                         ts_tensor_shape(mask))];
                    }
                    mx = fmax(mx, z[j]);
                }
                for (int64_t j = 0; j < S; j++) sum += (z[j] = exp(z[j] - mx));
                double *yi = y + (bthd ? ((b * T + i) * H + h) * D : ((b * H + h) * T + i) * D);
                for (int64_t e = 0; e < D; e++) {
                    double a = 0;
                    for (int64_t j = 0; j < S; j++)
                        a += z[j] * v[bthd ? ((b * S + j) * H + h) * D + e : ((b * H + h) * S + j) * D + e];
                    yi[e] = a / sum;
                }
            }
    free(z);
}

/* err of y against the double reference (over live rows). */
static double ref_err(const acase *c, const adata *d, ts_tensor *y, const uint8_t *ydead) {
    int64_t n = ts_tensor_numel(y);
    double *r = malloc(sizeof(double) * (size_t)n), e = 0, mx = 0;
    ref_attention(c, tu_f32(d->q), tu_f32(d->k), tu_f32(d->v), d->mask, r);
    for (int64_t i = 0; i < n; i++) {
        if (ydead && ydead[i / c->D]) continue;
        double di = fabs((double)tu_f32(y)[i] - r[i]);
        if (!(di <= e)) e = di;
        mx = fmax(mx, fabs(r[i]));
    }
    free(r);
    return e / (1 + mx);
}

static void case_str(char *buf, size_t cap, const acase *c) {
    snprintf(buf, cap, "B=%lld H=%lld T=%lld S=%lld D=%lld %s mask=%s %s%s", (long long)c->B, (long long)c->H,
             (long long)c->T, (long long)c->S, (long long)c->D, c->layout == TS_ATTN_BTHD ? "bthd" : "bhtd",
             mask_names[c->mask], ts_dtype_name(c->compute), c->p > 0 ? " dropout" : "");
}

/* Fused (how_a: FUSED or PASS) against unfused for c: y, gq, gk, gv within tol on live rows, and
 * y, gq within max(tol, 2e-3) on dead ones (see the header); a fused y without dropout in f32 also
 * against the double reference, within 1e-5. */
static void compare(const acase *c, int how_a, double tol, uint64_t step) {
    char what[160];
    case_str(what, sizeof what, c);
    adata d;
    adata_make(&d, c, 77 + (uint64_t)c->T * 3 + (uint64_t)c->mask);
    int threads = c->T >= 128 ? 2 : 1, nf = -1;
    ts_graph *ga = attn_graph(c, &d, how_a, &nf), *gb = attn_graph(c, &d, UNFUSED, NULL);
    ts_tensor *oa[4] = {0}, *ob[4] = {0};
    if (how_a == PASS) CHECK(nf == 1, "%s: ts_graph_fuse_attention made %d nodes, expected 1", what, nf);
    if (ga && gb && !attn_run(ga, &d, 0, step, threads, oa) && !attn_run(gb, &d, 0, step, threads, ob)) {
        uint8_t *yd = y_dead_rows(c, d.dead), *qd = yd ? yd : d.dead;
        double e[4], dead_e = 0;
        e[0] = rows_err(oa[0], ob[0], c->D, qd, 0);
        e[1] = rows_err(oa[1], ob[1], c->D, qd, 0);
        e[2] = rel_err(oa[2], ob[2]), e[3] = rel_err(oa[3], ob[3]);
        if (qd) dead_e = fmax(rows_err(oa[0], ob[0], c->D, qd, 1), rows_err(oa[1], ob[1], c->D, qd, 1));
        double re = c->compute == TS_F32 && c->p == 0 ? ref_err(c, &d, oa[0], qd) : 0;
        printf("  %-58s y %.1e gq %.1e gk %.1e gv %.1e%s", what, e[0], e[1], e[2], e[3], qd ? " (live rows)" : "");
        if (qd) printf(" dead rows %.1e", dead_e);
        if (c->compute == TS_F32 && c->p == 0) printf(" | y vs double %.1e", re);
        printf("\n");
        for (int j = 0; j < 4; j++)
            CHECK(e[j] <= tol, "%s: %s of the fused op differs from the unfused ops' by %.3e > %.0e", what,
                  out_names[j], e[j], tol);
        CHECK(dead_e <= fmax(tol, 2e-3), "%s: rows with every key masked differ by %.3e", what, dead_e);
        CHECK(re <= TOL_F32, "%s: y differs from the double reference by %.3e", what, re);
        free(yd);
    }
    outs_free(oa), outs_free(ob);
    ts_graph_free(ga), ts_graph_free(gb);
    adata_free(&d);
}

/* ------------------------------------------------------------------ fused vs unfused */

/* Every layout, mask (none, padding, packed) and compute dtype at S = T, D 64, H 2, B 2 (B 1
 * unmasked at T >= 384, to stay quick: the masks' batch rows alternate their pattern, so they keep B 2). */
static void matrix_at(int64_t T) {
    for (int layout = 0; layout < 2; layout++)
        for (int mask = M_NONE; mask <= M_PACK; mask++)
            for (int bf = 0; bf < 2; bf++) {
                int64_t B = T >= 384 && mask == M_NONE ? 1 : 2;
                acase c = {B, 2, T, T, 64, layout, mask, bf ? TS_BF16 : TS_F32, 0.f};
                compare(&c, FUSED, bf ? TOL_BF16 : TOL_F32, 1);
            }
}
static void test_t1(void) { matrix_at(1); }
static void test_t7(void) { matrix_at(7); }
static void test_t128(void) { matrix_at(128); }
static void test_t384(void) { matrix_at(384); }
static void test_t512(void) { matrix_at(512); }

/* Odd sizes: D not a multiple of 16 (or odd), T != S (padding mask; a full [B, H, T, S] mask), T and S not
 * multiples of the tiles (64 query rows, 256 keys), many heads in one thread. */
static void test_odd_sizes(void) {
    static const acase cs[] = {
        {2, 2, 5, 9, 24, TS_ATTN_BHTD, M_NONE, TS_F32, 0}, {2, 2, 5, 9, 24, TS_ATTN_BTHD, M_PAD, TS_F32, 0},
        {2, 3, 5, 9, 24, TS_ATTN_BHTD, M_FULL, TS_F32, 0}, {2, 3, 5, 9, 24, TS_ATTN_BTHD, M_FULL, TS_BF16, 0},
        {1, 2, 9, 5, 8, TS_ATTN_BTHD, M_PAD, TS_F32, 0},   {2, 2, 70, 300, 40, TS_ATTN_BHTD, M_PAD, TS_F32, 0},
        {1, 2, 65, 257, 72, TS_ATTN_BTHD, M_FULL, TS_F32, 0}, {1, 2, 100, 100, 24, TS_ATTN_BTHD, M_PACK, TS_BF16, 0},
        {3, 4, 33, 33, 8, TS_ATTN_BHTD, M_PACK, TS_F32, 0},
        /* bf16 pairs' tails: an odd D (a pair's missing high half), D over 32 not a multiple of
         * 32, keys over one 256-key tile and not a multiple of 16 */
        {1, 2, 65, 257, 37, TS_ATTN_BTHD, M_FULL, TS_BF16, 0}, {2, 2, 70, 300, 40, TS_ATTN_BHTD, M_PAD, TS_BF16, 0},
    };
    for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++)
        compare(&cs[i], FUSED, cs[i].compute == TS_F32 ? TOL_F32 : TOL_BF16, 1);
}

/* The mask matters: the padded fused output differs from the unmasked one by far more than the
 * tolerance, and equals the masked unfused one. */
static void test_mask_matters(void) {
    for (int mask = M_PAD; mask <= M_PACK; mask++) {
        acase c = {2, 2, 128, 128, 64, TS_ATTN_BTHD, mask, TS_F32, 0}, cn = c;
        cn.mask = M_NONE;
        adata d, dn;
        adata_make(&d, &c, 5);
        adata_make(&dn, &cn, 5); /* the same q, k, v, r: the mask is drawn last */
        ts_graph *g = attn_graph(&c, &d, FUSED, NULL), *gn = attn_graph(&cn, &dn, FUSED, NULL);
        ts_graph *gu = attn_graph(&c, &d, UNFUSED, NULL);
        ts_tensor *o[4] = {0}, *on[4] = {0}, *ou[4] = {0};
        if (g && gn && gu && !attn_run(g, &d, 0, 1, 2, o) && !attn_run(gn, &dn, 0, 1, 2, on) &&
            !attn_run(gu, &d, 0, 1, 2, ou)) {
            CHECK(tu_bitwise_equal(d.q, dn.q), "the two cases' q differ");
            uint8_t *yd = y_dead_rows(&c, d.dead);
            double off = rel_err(on[0], o[0]), same = rows_err(o[0], ou[0], c.D, yd ? yd : d.dead, 0);
            free(yd);
            printf("  mask %s: |masked - unmasked| %.2e, |fused - unfused| %.2e\n", mask_names[mask], off, same);
            CHECK(off > 1000 * TOL_F32, "mask %s: the masked output is within %.3e of the unmasked one",
                  mask_names[mask], off);
            CHECK(same <= TOL_F32, "mask %s: fused and unfused masked outputs differ by %.3e", mask_names[mask], same);
        }
        outs_free(o), outs_free(on), outs_free(ou);
        ts_graph_free(g), ts_graph_free(gn), ts_graph_free(gu);
        adata_free(&d), adata_free(&dn);
    }
}

/* ------------------------------------------------------------------ dropout */

/* The pass keeps the dropout's bits: the fused program (ts_graph_fuse_attention on the unfused
 * graph, p = 0.1) gives the unfused program's y and gradients at two steps; dropout did drop. */
static void test_dropout_fused_equals_unfused(void) {
    static const acase cs[] = {
        {2, 2, 7, 7, 64, TS_ATTN_BHTD, M_NONE, TS_F32, 0.1f},
        {2, 2, 128, 128, 64, TS_ATTN_BTHD, M_PAD, TS_F32, 0.1f},
        {2, 2, 128, 128, 64, TS_ATTN_BHTD, M_PACK, TS_F32, 0.1f},
        {1, 2, 300, 300, 24, TS_ATTN_BTHD, M_NONE, TS_F32, 0.1f},
        {2, 2, 5, 9, 24, TS_ATTN_BTHD, M_FULL, TS_F32, 0.1f},
        {2, 2, 64, 64, 64, TS_ATTN_BTHD, M_PAD, TS_BF16, 0.1f},
    };
    for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++)
        for (uint64_t step = 3; step <= 4; step++)
            compare(&cs[i], PASS, cs[i].compute == TS_F32 ? TOL_F32 : TOL_BF16, step);
    /* it did drop: p = 0.1 against p = 0 */
    acase c = cs[1], c0 = c;
    c0.p = 0;
    adata d;
    adata_make(&d, &c, 9);
    ts_graph *g = attn_graph(&c, &d, PASS, NULL), *g0 = attn_graph(&c0, &d, PASS, NULL);
    ts_tensor *o[4] = {0}, *o0[4] = {0};
    if (g && g0 && !attn_run(g, &d, 0, 3, 2, o) && !attn_run(g0, &d, 0, 3, 2, o0)) {
        double e = rel_err(o[0], o0[0]);
        CHECK(e > 1e-2, "dropout p 0.1 changed y by only %.3e", e);
    }
    outs_free(o), outs_free(o0);
    ts_graph_free(g), ts_graph_free(g0);
    adata_free(&d);
}

/* y of a lone ts_attention (no backward) in a training program at step. */
static ts_tensor *y_at(const acase *c, const adata *d, int inference, uint64_t step) {
    ts_value y;
    ts_graph *g = y_graph(c, d, 1, &y);
    ts_tensor *o[4] = {0};
    ts_status s = ts_graph_status(g);
    CHECK(s == TS_OK, "building: %s", ts_last_error());
    if (!s) {
        ts_compile_opts opts = {.struct_size = sizeof opts, .nfetch = 1, .fetches = out_names, .inference = inference,
                                .num_threads = 1};
        ts_program *p = ts_compile(g, &opts);
        s = p ? TS_OK : ts_last_status();
        if (!s) s = ts_program_set_param(p, "q", d->q);
        if (!s) s = ts_program_set_param(p, "k", d->k);
        if (!s) s = ts_program_set_param(p, "v", d->v);
        if (!s) ts_program_set_step(p, step), s = ts_program_run(p);
        if (!s) s = ts_program_fetch(p, "y", &o[0]);
        CHECK(s == TS_OK, "running: %s", ts_last_error());
        ts_program_free(p);
    }
    ts_graph_free(g);
    return o[0];
}

/* p = 0.25 keeps about 75% of the probabilities. With q = 0 every row's probabilities are 1/S, and
 * with S = D and v[j] the one-hot e_j, y[.., i, d] = keep(i, d) / (S (1 - p)): y shows each bit.
 * n = B H T S = 16384 Bernoulli(0.75) bits: the kept fraction is within 5 sd = 5 sqrt(0.75 0.25 / n)
 * = 0.017 of 0.75 (a correct generator fails with probability < 1e-6). The mean of y S over the
 * elements is the mean of keep / (1 - p), 1 in expectation (inverted dropout is unbiased), within
 * 5 sqrt(p / (1 - p) / n) = 0.023. Two steps draw different bits. */
static void test_dropout_rate(void) {
    acase c = {2, 2, 64, 64, 64, TS_ATTN_BHTD, M_NONE, TS_F32, 0.25f};
    adata d;
    adata_make(&d, &c, 3);
    memset(tu_f32(d.q), 0, ts_tensor_nbytes(d.q));
    float *v = tu_f32(d.v);
    for (int64_t e = 0; e < ts_tensor_numel(d.v); e++) v[e] = (e / c.D) % c.S == e % c.D ? 1.f : 0.f;
    ts_tensor *y1 = y_at(&c, &d, 0, 1), *y2 = y_at(&c, &d, 0, 2);
    if (y1 && y2) {
        int64_t n = ts_tensor_numel(y1), kept = 0, odd = 0, differ = 0;
        double one = 1.0 / ((double)c.S * 0.75), sum = 0;
        for (int64_t e = 0; e < n; e++) {
            double a = tu_f32(y1)[e];
            int k = fabs(a - one) <= 1e-6 * one;
            odd += !k && a != 0;
            kept += k;
            sum += a * (double)c.S;
            differ += (tu_f32(y1)[e] != 0) != (tu_f32(y2)[e] != 0);
        }
        double frac = (double)kept / (double)n, mean = sum / (double)n;
        double bound = 5 * sqrt(0.75 * 0.25 / (double)n), mbound = 5 * sqrt(0.25 / 0.75 / (double)n);
        printf("  p 0.25: kept %.4f (bound +-%.4f), mean y S %.4f (bound 1 +-%.4f), %lld of %lld bits differ "
               "between steps\n", frac, bound, mean, mbound, (long long)differ, (long long)n);
        CHECK(odd == 0, "%lld elements of y are neither 0 nor 1 / (S (1 - p))", (long long)odd);
        CHECK(fabs(frac - 0.75) <= bound, "kept fraction %.4f is not 0.75 +- %.4f", frac, bound);
        CHECK(fabs(mean - 1) <= mbound, "mean of keep / (1 - p) is %.4f, not 1 +- %.4f", mean, mbound);
        /* two independent masks differ in 2 p (1 - p) = 37.5% of the bits */
        CHECK(fabs((double)differ / (double)n - 0.375) <= 0.03, "steps 1 and 2 differ in %lld bits of %lld",
              (long long)differ, (long long)n);
    }
    ts_tensor_free(y1), ts_tensor_free(y2);
    adata_free(&d);
}

/* Unbiased on real data: the mean of y over N = 48 steps (48 masks) against the undropped y0. Each
 * step is an independent draw of mean y0 (inverted dropout), so t_e = (mean_e - y0_e) / (sd_e / sqrt N)
 * follows Student's t with 47 degrees of freedom: |t_e| <= 6.5 for all 1024 elements (a correct op
 * fails with probability < 1e-4). Without the 1 / (1 - p) rescaling mean_e = 0.75 y0_e, |t| ~ 4 on
 * average and far above 6.5 on the largest |y0_e|. The average t over the elements: elements of one
 * query row share their keep bits, so at most D = 16 are correlated and its sd is <= sqrt(D / n). */
static void test_dropout_unbiased(void) {
    acase c = {2, 2, 16, 24, 16, TS_ATTN_BTHD, M_NONE, TS_F32, 0.25f};
    enum { N = 48 };
    adata d;
    adata_make(&d, &c, 4);
    ts_tensor *y0 = y_at(&c, &d, 1, 0), *ys[N] = {0};
    int ok = y0 != NULL;
    for (int s = 0; s < N && ok; s++) ok = (ys[s] = y_at(&c, &d, 0, (uint64_t)s + 1)) != NULL;
    if (ok) {
        int64_t n = ts_tensor_numel(y0);
        double tmax = 0, tsum = 0;
        for (int64_t e = 0; e < n; e++) {
            double m = 0, var = 0;
            for (int s = 0; s < N; s++) m += tu_f32(ys[s])[e];
            m /= N;
            for (int s = 0; s < N; s++) var += (tu_f32(ys[s])[e] - m) * (tu_f32(ys[s])[e] - m);
            double sd = sqrt(var / (N - 1)) / sqrt((double)N), t = sd > 0 ? (m - tu_f32(y0)[e]) / sd : 0;
            tmax = fmax(tmax, fabs(t));
            tsum += t;
        }
        double tmean = tsum / (double)n, tb = 5 * sqrt((double)c.D / (double)n);
        printf("  p 0.25 over %d steps: max |t| %.2f (bound 6.5), mean t %.3f (bound +-%.3f)\n", N, tmax, tmean, tb);
        CHECK(tmax <= 6.5, "an element's mean over %d steps is %.2f standard errors from the undropped y", N, tmax);
        CHECK(fabs(tmean) <= tb, "the mean t over the elements is %.3f, beyond +-%.3f: biased", tmean, tb);
    }
    ts_tensor_free(y0);
    for (int s = 0; s < N; s++) ts_tensor_free(ys[s]);
    adata_free(&d);
}

/* Programs compiled for inference ignore the dropout: y of p = 0.3 equals that of p = 0, bit for bit
 * (the compile sets p to 0), while the training program's differs. */
static void test_inference_ignores_dropout(void) {
    for (int layout = 0; layout < 2; layout++) {
        acase c = {2, 2, 40, 40, 32, layout, M_PAD, TS_F32, 0.3f}, c0 = c;
        c0.p = 0;
        adata d;
        adata_make(&d, &c, 8);
        ts_tensor *yi = y_at(&c, &d, 1, 5), *y0 = y_at(&c0, &d, 1, 5), *yt = y_at(&c, &d, 0, 5);
        if (yi && y0 && yt) {
            CHECK(tu_bitwise_equal(yi, y0), "layout %d: inference with p 0.3 differs from p 0 by %.3e", layout,
                  rel_err(yi, y0));
            CHECK(rel_err(yt, y0) > 1e-2, "layout %d: the training program did not drop (%.3e)", layout,
                  rel_err(yt, y0));
        }
        ts_tensor_free(yi), ts_tensor_free(y0), ts_tensor_free(yt);
        adata_free(&d);
    }
}

/* ------------------------------------------------------------------ finite differences */

typedef struct fd_attn {
    acase c;
    ts_tensor *mask;
} fd_attn;

static int build_fd(ts_graph *g, const ts_value *p, ts_value *o, const void *ctx) {
    const fd_attn *f = ctx;
    o[0] = attn_value(g, &f->c, 1, p[0], p[1], p[2], f->mask ? ts_constant(g, f->mask) : TS_NONE);
    return 1;
}

static void ref_fd(const fd_host *h, fd_out *o, int nout, const void *ctx) {
    const fd_attn *f = ctx;
    ref_attention(&f->c, fd_param_val(h, "q"), fd_param_val(h, "k"), fd_param_val(h, "v"), f->mask, o[0].ref);
    (void)nout;
}

/* Central differences of loss = sum(y R) for q, k, v (fd_check.h: eps 1e-2, max |num - ana| /
 * max(1, |ana|) <= 1e-2), small odd sizes, a padding and a full mask, each layout; y against the
 * double reference. */
static void test_finite_differences(void) {
    static const acase cs[] = {
        {2, 2, 5, 7, 6, TS_ATTN_BHTD, M_PAD, TS_F32, 0}, {2, 2, 5, 7, 6, TS_ATTN_BTHD, M_PAD, TS_F32, 0},
        {1, 2, 4, 6, 5, TS_ATTN_BTHD, M_FULL, TS_F32, 0}, {1, 1, 3, 3, 4, TS_ATTN_BHTD, M_NONE, TS_F32, 0},
    };
    for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) {
        static fd_attn ctx;
        ctx.c = cs[i];
        adata d;
        adata_make(&d, &cs[i], 11 + i);
        ctx.mask = d.mask;
        char name[160];
        case_str(name, sizeof name, &cs[i]);
        fd_spec s;
        fd_init(&s, name, build_fd, &ctx);
        int64_t qs[4], ks[4];
        qkv_shape(&cs[i], cs[i].T, qs);
        qkv_shape(&cs[i], cs[i].S, ks);
        fd_param(&s, "q", GEN_UNIF, 4, qs);
        fd_param(&s, "k", GEN_UNIF, 4, ks);
        fd_param(&s, "v", GEN_UNIF, 4, ks);
        s.ref = ref_fd;
        fd_run(&s);
        adata_free(&d);
    }
}

/* ------------------------------------------------------------------ errors */

/* One bad ts_attention in a fresh graph: TS_NONE, the graph's status set, a message naming the op
 * and `word`. */
static void bad_call(const char *what, const char *word, ts_dtype qdt, int qnd, const int64_t *qs, int knd,
                     const int64_t *ks, const int64_t *vs, int mnd, const int64_t *ms, float p, int layout,
                     ts_dtype compute) {
    ts_graph *g = ts_graph_new();
    ts_value q = ts_input(g, "q", qdt, qnd, qs), k = ts_input(g, "k", TS_F32, knd, ks);
    ts_value v = ts_input(g, "v", TS_F32, knd, vs), m = mnd ? ts_input(g, "m", TS_F32, mnd, ms) : TS_NONE;
    ts_value y = ts_attention(g, q, k, v, m, 0.125f, p, layout, compute);
    CHECK(y == TS_NONE, "%s: ts_attention made a value", what);
    CHECK(ts_graph_status(g) != TS_OK, "%s: the graph has no error", what);
    const char *msg = ts_last_error();
    if (getenv("TS_TEST_VERBOSE")) printf("  %s: %s\n", what, msg);
    CHECK(strstr(msg, "attention") != NULL, "%s: the message \"%s\" does not name the op", what, msg);
    CHECK(strstr(msg, word) != NULL, "%s: the message \"%s\" does not say \"%s\"", what, msg, word);
    ts_graph_free(g);
}

static void test_errors(void) {
    int64_t q[4] = {2, 2, 5, 8}, kv[4] = {2, 2, 7, 8}, q3[3] = {2, 5, 8}, kd[4] = {2, 2, 7, 6}, kh[4] = {2, 3, 7, 8};
    int64_t vs[4] = {2, 2, 6, 8}, mbad[4] = {2, 1, 1, 6}, mok[4] = {2, 1, 1, 7}, m5[5] = {1, 2, 1, 1, 7};
    bad_call("q of rank 3", "rank", TS_F32, 3, q3, 4, kv, kv, 0, NULL, 0, TS_ATTN_BHTD, TS_F32);
    bad_call("k of rank 3", "rank", TS_F32, 4, q, 3, q3, q3, 0, NULL, 0, TS_ATTN_BHTD, TS_F32);
    bad_call("k's D differs from q's", "agree", TS_F32, 4, q, 4, kd, kd, 0, NULL, 0, TS_ATTN_BHTD, TS_F32);
    bad_call("k's heads differ from q's", "agree", TS_F32, 4, q, 4, kh, kh, 0, NULL, 0, TS_ATTN_BHTD, TS_F32);
    bad_call("v's S differs from k's", "agree", TS_F32, 4, q, 4, kv, vs, 0, NULL, 0, TS_ATTN_BHTD, TS_F32);
    bad_call("BTHD: heads at dim 2 differ", "agree", TS_F32, 4, q, 4, kv, kv, 0, NULL, 0, TS_ATTN_BTHD, TS_F32);
    bad_call("mask [2,1,1,6] for S 7", "broadcast", TS_F32, 4, q, 4, kv, kv, 4, mbad, 0, TS_ATTN_BHTD, TS_F32);
    bad_call("mask of rank 5", "broadcast", TS_F32, 4, q, 4, kv, kv, 5, m5, 0, TS_ATTN_BHTD, TS_F32);
    bad_call("bf16 q", "dtype", TS_BF16, 4, q, 4, kv, kv, 4, mok, 0, TS_ATTN_BHTD, TS_F32);
    bad_call("bf16 q, f32 k and v", "all bf16", TS_BF16, 4, q, 4, kv, kv, 4, mok, 0, TS_ATTN_BHTD, TS_BF16);
    bad_call("layout 2", "layout", TS_F32, 4, q, 4, kv, kv, 0, NULL, 0, 2, TS_F32);
    bad_call("layout -1", "layout", TS_F32, 4, q, 4, kv, kv, 0, NULL, 0, -1, TS_F32);
    bad_call("compute f16", "compute", TS_F32, 4, q, 4, kv, kv, 0, NULL, 0, TS_ATTN_BHTD, TS_F16);
    bad_call("p 1", "[0, 1)", TS_F32, 4, q, 4, kv, kv, 0, NULL, 1.f, TS_ATTN_BHTD, TS_F32);
    bad_call("p -0.1", "[0, 1)", TS_F32, 4, q, 4, kv, kv, 0, NULL, -0.1f, TS_ATTN_BHTD, TS_F32);
    bad_call("p NaN", "[0, 1)", TS_F32, 4, q, 4, kv, kv, 0, NULL, NAN, TS_ATTN_BHTD, TS_F32);
    /* an integer mask */
    ts_graph *g = ts_graph_new();
    ts_value qv = ts_input(g, "q", TS_F32, 4, q), kvv = ts_input(g, "k", TS_F32, 4, kv);
    ts_value y = ts_attention(g, qv, kvv, kvv, ts_input(g, "m", TS_I32, 4, mok), 0.1f, 0, TS_ATTN_BHTD, TS_F32);
    CHECK(y == TS_NONE && strstr(ts_last_error(), "attention") && strstr(ts_last_error(), "mask"),
          "an i32 mask: %s", ts_last_error());
    ts_graph_free(g);
    /* a valid call still works (the checks are not refusing everything) */
    g = ts_graph_new();
    qv = ts_input(g, "q", TS_F32, 4, q), kvv = ts_input(g, "k", TS_F32, 4, kv);
    y = ts_attention(g, qv, kvv, kvv, ts_input(g, "m", TS_F32, 4, mok), 0.1f, 0.5f, TS_ATTN_BHTD, TS_BF16);
    CHECK(y != TS_NONE && ts_graph_status(g) == TS_OK, "a valid call failed: %s", ts_last_error());
    int64_t sh[TS_MAX_DIMS];
    CHECK(ts_value_shape(g, y, sh) == 4 && !memcmp(sh, q, sizeof q), "y is not q's shape");
    ts_graph_free(g);
    CHECK(ts_attention(NULL, 0, 0, 0, TS_NONE, 1, 0, 0, TS_F32) == TS_NONE, "a NULL graph made a value");
}

/* ------------------------------------------------------------------ the fusion pass */

/* A BERT-like encoder of L layers from public ops (bert.c's: linear q, k, v, split heads by
 * reshape and transpose, the unfused attention with a padding mask and dropout p, merge heads,
 * output projection, hidden dropout p, residual, layer norm), loss = sum(h r). */
typedef struct enc {
    int64_t B, T, C, H;
    int L;
    ts_dtype compute;
    float p; /* both dropouts' */
} enc;

static ts_value linear(ts_graph *g, const enc *e, const char *name, ts_value x) {
    char n[64];
    snprintf(n, sizeof n, "%s.w", name);
    ts_value w = ts_param(g, n, TS_F32, 2, (int64_t[]){e->C, e->C}, ts_init_normal(0.2f));
    snprintf(n, sizeof n, "%s.b", name);
    ts_value b = ts_param(g, n, TS_F32, 1, (int64_t[]){e->C}, ts_init_normal(0.1f));
    return ts_add(g, mm(g, e->compute, x, w, 1), b);
}

static ts_value enc_layer(ts_graph *g, const enc *e, int l, ts_value x, ts_value mask) {
    int64_t B = e->B, T = e->T, C = e->C, H = e->H, D = C / H, heads[4] = {B, T, H, D};
    char n[64];
    ts_value qkv[3];
    for (int j = 0; j < 3; j++) {
        snprintf(n, sizeof n, "l%d.%c", l, "qkv"[j]);
        qkv[j] = ts_transpose(g, ts_reshape(g, linear(g, e, n, x), 4, heads), perm0213); /* [B, H, T, D] */
    }
    acase c = {B, H, T, T, D, TS_ATTN_BHTD, M_PAD, e->compute, e->p};
    ts_value ctx = attn_value(g, &c, 0, qkv[0], qkv[1], qkv[2], mask);
    ctx = ts_reshape(g, ts_transpose(g, ctx, perm0213), 3, (int64_t[]){B, T, C});
    snprintf(n, sizeof n, "l%d.o", l);
    ts_value o = linear(g, e, n, ctx);
    if (e->p > 0) o = ts_dropout(g, o, e->p);
    snprintf(n, sizeof n, "l%d.ln.g", l);
    ts_value gm = ts_param(g, n, TS_F32, 1, (int64_t[]){C}, ts_init_ones());
    snprintf(n, sizeof n, "l%d.ln.b", l);
    ts_value bt = ts_param(g, n, TS_F32, 1, (int64_t[]){C}, ts_init_zeros());
    return ts_layer_norm(g, ts_add(g, o, x), gm, bt, 1e-5f);
}

/* The encoder's graph (fused by the pass when fuse; its count in *nf), with its backward. */
static ts_graph *enc_graph(const enc *e, const ts_tensor *x, const ts_tensor *mask, const ts_tensor *r, int fuse,
                           int *nf) {
    ts_graph *g = ts_graph_new();
    ts_graph_set_seed(g, SEED);
    ts_value h = ts_constant(g, x), m = ts_constant(g, mask);
    for (int l = 0; l < e->L; l++) h = enc_layer(g, e, l, h, m);
    ts_value loss = ts_name(g, ts_reduce_sum(g, ts_mul(g, h, ts_constant(g, r)), 0, NULL, 0), "loss");
    if (fuse) *nf = ts_graph_fuse_attention(g);
    ts_status s = ts_graph_status(g);
    if (!s) s = ts_backward(g, loss);
    CHECK(s == TS_OK, "building the encoder: %s", ts_last_error());
    return s ? (ts_graph_free(g), NULL) : g;
}

/* Compile g for training fetching the loss and every parameter's gradient; parameters copied
 * from src when given (else from the initializers); run at step 7. */
static ts_program *enc_run(ts_graph *g, ts_program *src) {
    ts_program *probe = ts_compile(g, &(ts_compile_opts){.struct_size = sizeof(ts_compile_opts)});
    CHECK(probe != NULL, "compile: %s", ts_last_error());
    if (!probe) return NULL;
    int np = ts_program_num_params(probe);
    char names[64][48];
    const char *fetch[65] = {"loss"};
    for (int i = 0; i < np && i < 64; i++) snprintf(names[i], 48, "%s@GRAD", ts_program_param_name(probe, i));
    for (int i = 0; i < np && i < 64; i++) fetch[i + 1] = names[i];
    ts_program_free(probe);
    ts_program *p = ts_compile(g, &(ts_compile_opts){.struct_size = sizeof(ts_compile_opts), .nfetch = np + 1,
                                                     .fetches = fetch, .num_threads = 2});
    ts_status s = p ? TS_OK : ts_last_status();
    for (int i = 0; src && i < np && !s; i++) {
        ts_tensor *t = NULL;
        s = ts_program_get_param(src, ts_program_param_name(p, i), &t);
        if (!s) s = ts_program_set_param(p, ts_program_param_name(p, i), t);
        ts_tensor_free(t);
    }
    if (!s) ts_program_set_step(p, 7), s = ts_program_run(p);
    CHECK(s == TS_OK, "encoder program: %s", ts_last_error());
    if (s) ts_program_free(p), p = NULL;
    return p;
}

/* A 2-layer BERT-like graph: the pass makes 2 BTHD attention nodes (compute as built), and the fused
 * program's loss and every parameter's gradient (dropout 0.1 on, the same bits) equal the unfused
 * program's within 1e-5 in f32. In bf16 (no dropout: the f32 graph has fewer nodes, so other
 * dropout salts) both are autocast's approximations of the f32 program: the fused one must be as
 * close to the f32 unfused program as the unfused bf16 one is: within 3 times its error, or 2e-2
 * (measured: at most 1.4 times, but for the key bias, 2.0 times). The key bias's gradient is 0 in
 * exact math (a bias on every key shifts a row's scores alike), so it is nothing but rounding: the
 * fused backward takes rowsum(gy y) for rowsum(gp p) (FlashAttention's D), which bf16 rounding of
 * p and gy makes differ by a few ulps; a plain 2e-2 between the two bf16 programs fails there. */
static void fuse_encoder(ts_dtype compute) {
    enc e = {2, 48, 64, 4, 2, compute, compute == TS_F32 ? 0.1f : 0.f}, e32 = e;
    e32.compute = TS_F32;
    tu_rng rng = tu_rng_seed(21);
    ts_tensor *x = tu_rand_tensor(&rng, 3, (int64_t[]){e.B, e.T, e.C}, -1, 1);
    ts_tensor *r = tu_rand_tensor(&rng, 3, (int64_t[]){e.B, e.T, e.C}, -1, 1);
    ts_tensor *mask = ts_tensor_new(TS_F32, 4, (int64_t[]){e.B, 1, 1, e.T});
    for (int64_t j = 0; j < e.B * e.T; j++) tu_f32(mask)[j] = j / e.T == 1 && j % e.T >= 20 ? -10000.f : 0.f;
    int nf = -1, layout = -1, cdt = -1;
    ts_graph *gu = enc_graph(&e, x, mask, r, 0, NULL), *gf = enc_graph(&e, x, mask, r, 1, &nf);
    ts_graph *gr = compute == TS_F32 ? NULL : enc_graph(&e32, x, mask, r, 0, NULL);
    CHECK(nf == 2, "%s: ts_graph_fuse_attention made %d nodes, expected 2: %s", ts_dtype_name(compute), nf,
          ts_last_error());
    if (gf) CHECK(count_attention(gf, &layout, &cdt) == 2 && layout == TS_ATTN_BTHD && cdt == (int)compute,
                  "the fused graph has attention nodes of layout %d, compute %d", layout, cdt);
    ts_program *pu = gu ? enc_run(gu, NULL) : NULL, *pf = gf && pu ? enc_run(gf, pu) : NULL;
    ts_program *pr = gr && pu ? enc_run(gr, pu) : NULL;
    double worst = 0, worst_ratio = 0;
    for (int i = 0; pf && (pr || !gr) && i <= ts_program_num_params(pu); i++) {
        char name[64];
        if (i == 0) snprintf(name, sizeof name, "loss");
        else snprintf(name, sizeof name, "%s@GRAD", ts_program_param_name(pu, i - 1));
        ts_tensor *a = TU_FETCH(pf, name), *b = TU_FETCH(pu, name), *ref = pr ? TU_FETCH(pr, name) : NULL;
        double err = rel_err(a, b);
        worst = fmax(worst, err);
        if (!pr) {
            CHECK(err <= TOL_F32, "f32: %s of the fused program differs from the unfused one by %.3e", name, err);
        } else {
            double ef = rel_err(a, ref), eu = rel_err(b, ref);
            worst_ratio = fmax(worst_ratio, ef / fmax(eu, 1e-12));
            if (getenv("TS_TEST_VERBOSE")) printf("    %-16s vs f32: fused %.2e unfused %.2e\n", name, ef, eu);
            CHECK(ef <= fmax(3 * eu, TOL_BF16), "bf16: %s is %.3e from the f32 program's, the unfused bf16 one's "
                  "%.3e", name, ef, eu);
        }
        ts_tensor_free(a), ts_tensor_free(b), ts_tensor_free(ref);
    }
    printf("  encoder %s: %d attention nodes (bthd), loss and %d gradients: fused vs unfused %.1e",
           ts_dtype_name(compute), nf, pu ? ts_program_num_params(pu) : 0, worst);
    if (pr) printf(", (fused - f32) / (unfused - f32) at most %.2f", worst_ratio);
    printf("\n");
    ts_program_free(pu), ts_program_free(pf), ts_program_free(pr);
    ts_graph_free(gu), ts_graph_free(gf), ts_graph_free(gr);
    ts_tensor_free(x), ts_tensor_free(r), ts_tensor_free(mask);
}
static void test_fuse_encoder_f32(void) { fuse_encoder(TS_F32); }
static void test_fuse_encoder_bf16(void) { fuse_encoder(TS_BF16); }

/* In bf16 the pass makes the node read q, k, v as bf16 (the pattern's casts; BTHD: the casts and
 * transposes swapped), so the backward keeps 16-bit copies. The kernel rounds f32 inputs to bf16
 * as it packs them, so the pass's program and ts_attention on the f32 parameters give the same
 * bits: y and the three gradients, T 7 and 128, both layouts, padding and packed masks, no
 * dropout (the two make different dropout salts). Fails if the kernel widened a bf16 input wrong,
 * read it at the wrong stride, or if a cast rounded otherwise. */
static void test_bf16_inputs_same_bits(void) {
    static const int64_t Ts[2] = {7, 128};
    for (int t = 0; t < 2; t++)
        for (int layout = 0; layout < 2; layout++)
            for (int mask = M_PAD; mask <= M_PACK; mask++) {
                acase c = {2, 2, Ts[t], Ts[t], 64, layout, mask, TS_BF16, 0.f};
                char what[160];
                case_str(what, sizeof what, &c);
                adata d;
                adata_make(&d, &c, 5 + (uint64_t)t);
                int nf = -1, in16 = 0;
                ts_graph *ga = attn_graph(&c, &d, PASS, &nf), *gb = attn_graph(&c, &d, FUSED, NULL);
                for (int i = 0; ga && i < ga->nnodes; i++)
                    if (ga->nodes[i].op == TS_OP_ATTENTION)
                        in16 = ga->vals[ga->nodes[i].in[0]].dtype == TS_BF16 &&
                               ga->vals[ga->nodes[i].in[1]].dtype == TS_BF16 &&
                               ga->vals[ga->nodes[i].in[2]].dtype == TS_BF16;
                CHECK(nf == 1 && in16, "%s: the pass made %d nodes; bf16 inputs: %d", what, nf, in16);
                ts_tensor *oa[4] = {0}, *ob[4] = {0};
                int same = 0;
                if (ga && gb && !attn_run(ga, &d, 0, 1, 2, oa) && !attn_run(gb, &d, 0, 1, 2, ob))
                    for (int j = 0; j < 4; j++) {
                        int eq = tu_bitwise_equal(oa[j], ob[j]);
                        same += eq;
                        CHECK(eq, "%s: %s from bf16 inputs differs from the f32 inputs' (max %.3e)", what,
                              out_names[j], rel_err(oa[j], ob[j]));
                    }
                printf("  %-58s bf16 inputs: %d / 4 outputs the same bits as from f32\n", what, same);
                outs_free(oa), outs_free(ob);
                ts_graph_free(ga), ts_graph_free(gb);
                adata_free(&d);
            }
}

/* How test_fuse_declines spoils the pattern. */
enum { D_NONE, D_PROBS_READ, D_SCALE_BETA, D_NAMED, D_MASK_PARAM, D_AFTER_BACKWARD };

/* The unfused attention (f32, padding mask from an input, dropout), spoiled by how; returns what
 * ts_graph_fuse_attention returned. */
static int fuse_spoiled(int how) {
    acase c = {2, 2, 8, 8, 16, TS_ATTN_BHTD, M_PAD, TS_F32, 0.1f};
    int64_t qs[4] = {2, 2, 8, 16}, ms[4] = {2, 1, 1, 8};
    ts_graph *g = ts_graph_new();
    ts_value q = ts_param(g, "q", TS_F32, 4, qs, ts_init_normal(1));
    ts_value k = ts_param(g, "k", TS_F32, 4, qs, ts_init_normal(1));
    ts_value v = ts_param(g, "v", TS_F32, 4, qs, ts_init_normal(1));
    ts_value m = how == D_MASK_PARAM ? ts_param(g, "m", TS_F32, 4, ms, ts_init_zeros())
                                     : ts_input(g, "m", TS_F32, 4, ms);
    ts_value s = ts_scale(g, ts_matmul(g, q, k, 0, 1), 0.25f, how == D_SCALE_BETA ? 0.5f : 0.f);
    ts_value p = ts_softmax(g, s, m);
    if (how == D_NAMED) ts_name(g, p, "probs");
    ts_value y = ts_matmul(g, ts_dropout(g, p, c.p), v, 0, 0);
    ts_value loss = ts_reduce_sum(g, y, 0, NULL, 0);
    if (how == D_PROBS_READ) loss = ts_add(g, loss, ts_reduce_sum(g, p, 0, NULL, 0));
    if (how == D_AFTER_BACKWARD) ts_backward(g, loss);
    int n = ts_graph_fuse_attention(g), layout;
    if (n >= 0) CHECK(count_attention(g, &layout, NULL) == n, "the pass says %d, the graph has another count", n);
    if (n >= 0 && how != D_AFTER_BACKWARD) CHECK(ts_backward(g, loss) == TS_OK, "backward: %s", ts_last_error());
    ts_graph_free(g);
    return n;
}

/* The pass declines a pattern whose probabilities have a second reader, whose scale has a beta,
 * whose probabilities are named, or whose mask comes from a parameter (it would get no gradient); it
 * refuses a graph with a backward pass. The unspoiled pattern is fused (BHTD: no transposes). */
static void test_fuse_declines(void) {
    CHECK(fuse_spoiled(D_NONE) == 1, "the plain pattern was not fused: %s", ts_last_error());
    CHECK(fuse_spoiled(D_PROBS_READ) == 0, "fused although the probabilities have a second reader");
    CHECK(fuse_spoiled(D_SCALE_BETA) == 0, "fused although the scale has beta 0.5");
    CHECK(fuse_spoiled(D_NAMED) == 0, "fused although the probabilities are named");
    CHECK(fuse_spoiled(D_MASK_PARAM) == 0, "fused although the mask is a parameter");
    CHECK(fuse_spoiled(D_AFTER_BACKWARD) == -1, "no error after ts_backward");
    CHECK(strstr(ts_last_error(), "ts_backward") != NULL, "the message \"%s\" does not say why", ts_last_error());
    CHECK(ts_graph_fuse_attention(NULL) == -1, "a NULL graph gave no error");
}

/* The form ONNX models import as (a BERT exported to ONNX, read back): q, k, v = transpose(x, {0, 2, 1, 3}),
 * scores = matmul(q, transpose(k, {0, 1, 3, 2})) * c (a scalar constant), softmax(scores + mask), matmul(., v),
 * transposed back. The pass makes one BTHD node of it, and the program's output is the unfused one's. */
static void test_fuse_onnx_form(void) {
    int64_t xs[4] = {2, 9, 3, 16}, ms[4] = {2, 1, 1, 9};
    tu_rng rng = tu_rng_seed(40);
    ts_tensor *xt[3], *mt = ts_tensor_new(TS_F32, 4, ms);
    for (int j = 0; j < 3; j++) {
        xt[j] = ts_tensor_new(TS_F32, 4, xs);
        float *d = ts_tensor_data(xt[j]);
        for (int64_t e = 0; e < ts_tensor_numel(xt[j]); e++) d[e] = (float)tu_normal(&rng);
    }
    float *md = ts_tensor_data(mt);
    for (int e = 0; e < 18; e++) md[e] = e % 9 >= 6 + e / 9 ? -10000.f : 0.f; /* the last keys padding */
    ts_tensor *y[2] = {NULL, NULL};
    int made = -2;
    for (int fused = 0; fused < 2; fused++) {
        ts_graph *g = ts_graph_new();
        ts_value x[3], t[3];
        for (int j = 0; j < 3; j++) {
            char n[4] = {'x', (char)('0' + j), 0};
            x[j] = ts_input(g, n, TS_F32, 4, xs);
            t[j] = ts_transpose(g, x[j], (int[]){0, 2, 1, 3});
        }
        ts_value m = ts_input(g, "m", TS_F32, 4, ms);
        ts_tensor *c = ts_tensor_new(TS_F32, 0, NULL);
        *(float *)ts_tensor_data(c) = 0.25f;
        ts_value s = ts_mul(g, ts_matmul(g, t[0], ts_transpose(g, t[1], (int[]){0, 1, 3, 2}), 0, 0), ts_constant(g, c));
        ts_tensor_free(c);
        ts_value out = ts_transpose(g, ts_matmul(g, ts_softmax(g, ts_add(g, s, m), TS_NONE), t[2], 0, 0),
                                    (int[]){0, 2, 1, 3});
        ts_name(g, out, "y");
        if (fused) {
            made = ts_graph_fuse_attention(g);
            int layout = -1;
            CHECK(made == 1 && count_attention(g, &layout, NULL) == 1 && layout == TS_ATTN_BTHD,
                  "the ONNX form: %d nodes made, layout %d (%s)", made, layout, ts_last_error());
        }
        ts_program *p = ts_compile(g, &(ts_compile_opts){TU_FETCHES("y"), .inference = 1});
        CHECK(p != NULL, "compile: %s", ts_last_error());
        for (int j = 0; p && j < 3; j++) {
            char n[4] = {'x', (char)('0' + j), 0};
            ts_program_feed(p, n, xt[j]);
        }
        if (p && ts_program_feed(p, "m", mt) == TS_OK && ts_program_run(p) == TS_OK) y[fused] = TU_FETCH(p, "y");
        ts_program_free(p);
        ts_graph_free(g);
    }
    if (y[0] && y[1]) {
        double err = rel_err(y[1], y[0]);
        CHECK(err <= TOL_F32, "the ONNX form fused differs from unfused by %.3e", err);
        printf("  ONNX form: %d node, fused vs unfused %.1e\n", made, err);
    }
    for (int j = 0; j < 3; j++) ts_tensor_free(xt[j]);
    ts_tensor_free(mt), ts_tensor_free(y[0]), ts_tensor_free(y[1]);
}

/* ts_device_fuses_attention: the CPU (any of its device names) runs the fused op; an unknown device
 * is an error naming it. (OpenCL without fallback, which has no attention kernel, gives 0:
 * tests/test_opencl_parity.sh trains on it with --strict-device; devices with fallback give 1, so
 * their runs keep the CPU's bytes: tests/test_doc_plugin.sh, tests/test_cli_fallback.c.) */
static void test_device_choice(void) {
    CHECK(ts_device_fuses_attention(NULL) == 1 && ts_device_fuses_attention("cpu") == 1 &&
          ts_device_fuses_attention("cpu:1") == 1, "the CPU fuses attention");
    CHECK(ts_device_fuses_attention("nosuchdevice") == -1 && strstr(ts_last_error(), "nosuchdevice"),
          "unknown device: %s", ts_last_error());
}

int main(int argc, char **argv) {
    tu_args(argc, argv);
    RUN(test_t1);
    RUN(test_t7);
    RUN(test_t128);
    RUN(test_t384);
    RUN(test_t512);
    RUN(test_odd_sizes);
    RUN(test_mask_matters);
    RUN(test_dropout_fused_equals_unfused);
    RUN(test_dropout_rate);
    RUN(test_dropout_unbiased);
    RUN(test_inference_ignores_dropout);
    RUN(test_finite_differences);
    RUN(test_errors);
    RUN(test_fuse_encoder_f32);
    RUN(test_fuse_encoder_bf16);
    RUN(test_bf16_inputs_same_bits);
    RUN(test_fuse_declines);
    RUN(test_fuse_onnx_form);
    RUN(test_device_choice);
    return tu_finish("attention");
}
