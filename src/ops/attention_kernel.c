/*
 * attention_kernel.c — attention and its gradient on CPU tiles (FlashAttention's algorithm,
 * Dao et al. 2022): the [T, S] scores, probabilities, dropout mask and their gradients of a head
 * are never stored, only a tile of them per thread. The math is ops/attention.c's.
 *
 * Forward, per (batch, head) on one thread, for each block of BR query rows:
 *   m = -inf, l = 0, o = 0                                   per row
 *   for each block of BC keys:
 *     z  = scale q kt + mask                                 [BR, BC] tile (kt = k^T, packed once per head)
 *     m' = max(m, max_j z), c = exp(m - m'), p = exp(z - m')
 *     l  = l c + sum_j p,  o = o c + dropout(p) v,  m = m'   the online softmax: earlier blocks rescaled
 *   y = o / l, lse = m + log l
 * Backward, per (batch, head), for each block of BRB query rows (lse makes p exact without a
 * second online pass, so the rows' whole key range is one tile):
 *   p  = exp(scale q kt + mask - lse), pd = dropout(p), gpd = gy vt, gp = dropout_grad(gpd)
 *   gz = p (gp - rowsum(gy y)) (the sum computed once per row, from y rather than from p)
 *   gv += pd^T gy, gq = scale gz k, gk += scale gz^T q       (gk, gv held per head until its end)
 * Memory per thread: k^T, k, v^T (or v) of one head padded to S64 = S rounded up to 64 keys and
 * Dp = D rounded up to 16, the two accumulators, and a [BRB, S64] pair of tiles: O(S D) — never
 * O(T S) per head, nor anything of size B H T S.
 *
 * Products run through two microkernels over padded, zeroed buffers, so they have no edge cases:
 *   mm_nt:  c[i, j]  = sum_k a[i, k] bt[k, j]         i by 4 rows, j by 64 columns
 *   mm_acc: c[i, z] += sum_k a(i, k) bm[k, z]         a(i, k) = a[i ars + k acs], z by 64 then 16
 * Each has an AVX-512 form (16 zmm accumulators: 4 rows x 64 floats) and a portable one; the
 * AVX-512 one is used when the CPU has it and ONEDNN_MAX_CPU_ISA does not cap oneDNN below
 * AVX-512 (so the suite's AVX2 runs test the portable one).
 * bf16 compute: every product operand is rounded to bf16 as it is packed (q, k, v, p, gy, gz);
 * bf16 x bf16 products are exact in f32, so the f32 products are autocast's bf16 ones. Where the
 * CPU has AVX512_BF16 the operands are packed as bf16 pairs instead and every product runs on
 * vdpbf16ps (mm_nt_bf16, mm_acc_bf16): the same numbers up to the order of the sums.
 * q, k, v given in bf16 (bf16 compute only: the rounding the packers would do, done by the cast
 * that made them) are widened to f32 per head into the thread's memory, (T + 2 S) D floats, and
 * the head runs as from f32: the same bits as from the f32 values they were rounded from.
 */
#include "ops/attention_kernel.h"

#include "core/core.h"

#include "core/bf16_avx512.h"
#include "core/fastmath.h"
#include "ops/counter_rng.h"

#include <immintrin.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <strings.h>

#define BR 64   /* forward: query rows per tile */
#define BC 256  /* forward: keys per tile (a multiple of 64) */
#define BRB 32  /* backward: query rows per tile */

static int64_t up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }
static size_t align64(size_t x) { return (x + 63) & ~(size_t)63; }

void ts_attn_geom_init(ts_attn_geom *geo, const ts_graph *g, const ts_node *n, const float *mask, uint64_t step) {
    const int64_t *q = g->vals[n->in[0]].shape, *k = g->vals[n->in[1]].shape;
    int bhtd = n->attr.i[2] == TS_ATTN_BHTD;
    int64_t B = q[0], H = bhtd ? q[1] : q[2], T = bhtd ? q[2] : q[1], S = bhtd ? k[2] : k[1], D = q[3];
    memset(geo, 0, sizeof *geo);
    geo->B = B, geo->H = H, geo->T = T, geo->S = S, geo->D = D;
    if (bhtd) {
        geo->qb = H * T * D, geo->qh = T * D, geo->qt = D;
        geo->kb = H * S * D, geo->kh = S * D, geo->ks = D;
    } else {
        geo->qb = T * H * D, geo->qh = D, geo->qt = H * D;
        geo->kb = S * H * D, geo->kh = D, geo->ks = H * D;
    }
    geo->mask = mask;
    if (mask) { /* right-aligned broadcast to [B, H, T, S]: stride 0 on a dim of 1 */
        const ts_val *m = &g->vals[n->in[3]];
        int64_t full[4] = {B, H, T, S}, st[4] = {0, 0, 0, 0}, run = 1;
        for (int d = 0; d < m->ndim; d++) {
            int64_t e = m->shape[m->ndim - 1 - d];
            st[3 - d] = e == 1 && full[3 - d] != 1 ? 0 : run;
            run *= e;
        }
        geo->mb = st[0], geo->mh = st[1], geo->mt = st[2], geo->ms = st[3];
    }
    geo->scale = n->attr.f[0];
    geo->p = n->attr.f[1];
    geo->keep_scale = (float)(1.0 / (1.0 - (double)geo->p));
    geo->key = ts_rng_key((uint64_t)n->attr.i[1], (uint64_t)n->attr.i[0], step);
    geo->thr = (uint32_t)ceil((double)geo->p * 16777216.0);
    geo->bf16 = n->attr.i[3] == TS_BF16;
    geo->in16 = g->vals[n->in[0]].dtype == TS_BF16;
}

/* ------------------------------------------------------------------ microkernels */

static int want_avx512(void) {
    static int v = -1;
    if (v < 0) {
        const char *cap = getenv("ONEDNN_MAX_CPU_ISA");
        int capped = cap && (!strncasecmp(cap, "AVX2", 4) || !strncasecmp(cap, "SSE", 3) ||
                             !strncasecmp(cap, "AVX", 4)) && strncasecmp(cap, "AVX512", 6) != 0;
        v = !capped && __builtin_cpu_supports("avx512f");
    }
    return v;
}

/* c[i, j] = sum_k a[i lda + k] bt[k ldb + j]: M a multiple of 4, N of 64. */
static void mm_nt_c(const float *a, int64_t lda, const float *bt, int64_t ldb, float *c, int64_t ldc, int64_t M,
                    int64_t N, int64_t K) {
    for (int64_t i = 0; i < M; i++) {
        float *ci = c + i * ldc;
        for (int64_t j = 0; j < N; j++) ci[j] = 0.f;
        for (int64_t k = 0; k < K; k++) {
            float av = a[i * lda + k];
            const float *bk = bt + k * ldb;
#pragma omp simd
            for (int64_t j = 0; j < N; j++) ci[j] += av * bk[j];
        }
    }
}

/* c[i, z] += sum_k a[i ars + k acs] bm[k ldb + z]: M a multiple of 4, N of 16. */
static void mm_acc_c(const float *a, int64_t ars, int64_t acs, const float *bm, int64_t ldb, float *c, int64_t ldc,
                     int64_t M, int64_t N, int64_t K) {
    for (int64_t i = 0; i < M; i++) {
        float *ci = c + i * ldc;
        for (int64_t k = 0; k < K; k++) {
            float av = a[i * ars + k * acs];
            const float *bk = bm + k * ldb;
#pragma omp simd
            for (int64_t z = 0; z < N; z++) ci[z] += av * bk[z];
        }
    }
}

#define AVX512 __attribute__((target("avx512f")))

AVX512 static void mm_nt_512(const float *a, int64_t lda, const float *bt, int64_t ldb, float *c, int64_t ldc,
                             int64_t M, int64_t N, int64_t K) {
    for (int64_t j = 0; j < N; j += 64) /* j outer: b's 64-column panel stays in L1 across a's rows */
        for (int64_t i = 0; i < M; i += 4) {
            __m512 acc[4][4];
#pragma GCC unroll 4
            for (int r = 0; r < 4; r++)
#pragma GCC unroll 4
                for (int z = 0; z < 4; z++) acc[r][z] = _mm512_setzero_ps();
            const float *a0 = a + i * lda;
            for (int64_t k = 0; k < K; k++) {
                const float *bk = bt + k * ldb + j;
                __m512 b0 = _mm512_loadu_ps(bk), b1 = _mm512_loadu_ps(bk + 16), b2 = _mm512_loadu_ps(bk + 32),
                       b3 = _mm512_loadu_ps(bk + 48);
#pragma GCC unroll 4
                for (int r = 0; r < 4; r++) {
                    __m512 av = _mm512_set1_ps(a0[r * lda + k]);
                    acc[r][0] = _mm512_fmadd_ps(av, b0, acc[r][0]);
                    acc[r][1] = _mm512_fmadd_ps(av, b1, acc[r][1]);
                    acc[r][2] = _mm512_fmadd_ps(av, b2, acc[r][2]);
                    acc[r][3] = _mm512_fmadd_ps(av, b3, acc[r][3]);
                }
            }
#pragma GCC unroll 4
            for (int r = 0; r < 4; r++)
#pragma GCC unroll 4
                for (int z = 0; z < 4; z++) _mm512_storeu_ps(c + (i + r) * ldc + j + 16 * z, acc[r][z]);
        }
}

/* One 4 x (16 nz) tile of mm_acc; nz is a constant where it is inlined, so acc stays in registers. */
AVX512 static inline __attribute__((always_inline)) void mm_acc_tile(const float *a, int64_t ars, int64_t acs,
                                                                     const float *bm, int64_t ldb, float *c,
                                                                     int64_t ldc, int64_t K, const int nz) {
    __m512 acc[4][4];
#pragma GCC unroll 4
    for (int r = 0; r < 4; r++)
#pragma GCC unroll 4
        for (int z = 0; z < nz; z++) acc[r][z] = _mm512_loadu_ps(c + r * ldc + 16 * z);
    for (int64_t k = 0; k < K; k++) {
        const float *bk = bm + k * ldb;
        __m512 b[4];
#pragma GCC unroll 4
        for (int z = 0; z < nz; z++) b[z] = _mm512_loadu_ps(bk + 16 * z);
#pragma GCC unroll 4
        for (int r = 0; r < 4; r++) {
            __m512 av = _mm512_set1_ps(a[r * ars + k * acs]);
#pragma GCC unroll 4
            for (int z = 0; z < nz; z++) acc[r][z] = _mm512_fmadd_ps(av, b[z], acc[r][z]);
        }
    }
#pragma GCC unroll 4
    for (int r = 0; r < 4; r++)
#pragma GCC unroll 4
        for (int z = 0; z < nz; z++) _mm512_storeu_ps(c + r * ldc + 16 * z, acc[r][z]);
}

AVX512 static void mm_acc_512(const float *a, int64_t ars, int64_t acs, const float *bm, int64_t ldb, float *c,
                              int64_t ldc, int64_t M, int64_t N, int64_t K) {
    for (int64_t i = 0; i < M; i += 4) {
        const float *ai = a + i * ars;
        float *ci = c + i * ldc;
        int64_t z = 0;
        for (; z + 64 <= N; z += 64) mm_acc_tile(ai, ars, acs, bm + z, ldb, ci + z, ldc, K, 4);
        switch ((N - z) / 16) {
        case 3: mm_acc_tile(ai, ars, acs, bm + z, ldb, ci + z, ldc, K, 3); break;
        case 2: mm_acc_tile(ai, ars, acs, bm + z, ldb, ci + z, ldc, K, 2); break;
        case 1: mm_acc_tile(ai, ars, acs, bm + z, ldb, ci + z, ldc, K, 1); break;
        default: break;
        }
    }
}

static void mm_nt(const float *a, int64_t lda, const float *bt, int64_t ldb, float *c, int64_t ldc, int64_t M,
                  int64_t N, int64_t K) {
    if (want_avx512()) mm_nt_512(a, lda, bt, ldb, c, ldc, M, N, K);
    else mm_nt_c(a, lda, bt, ldb, c, ldc, M, N, K);
}

static void mm_acc(const float *a, int64_t ars, int64_t acs, const float *bm, int64_t ldb, float *c, int64_t ldc,
                   int64_t M, int64_t N, int64_t K) {
    if (want_avx512()) mm_acc_512(a, ars, acs, bm, ldb, c, ldc, M, N, K);
    else mm_acc_c(a, ars, acs, bm, ldb, c, ldc, M, N, K);
}

/* bf16 products with AVX512_BF16: operands as pairs, a uint32 holding two bf16 (the lower one
 * first), and vdpbf16ps adding both products of a pair to an f32 lane:
 *   mm_nt_bf16:  c[i, j]  = sum_kp a[i lda + kp] . bt[kp ldb + j]   i by 4, j by 64
 *   mm_acc_bf16: c[i, z] += sum_kp a[i ars + kp acs] . bm[kp ldb + z]   i by 4, z by 64 then 16
 * (x . y = x.lo y.lo + x.hi y.hi). A bf16 x bf16 product is exact in f32, so these give the f32
 * microkernels' numbers on the rounded operands, up to the order of the sums. */
static int want_bf16(void) { return want_avx512() && ts_cpu_has_bf16_cvt(); }

#define AVX512BF16 __attribute__((target("avx512f,avx512bf16")))

AVX512BF16 static void mm_nt_bf16(const uint32_t *a, int64_t lda, const uint32_t *bt, int64_t ldb, float *c,
                                  int64_t ldc, int64_t M, int64_t N, int64_t K2) {
    for (int64_t j = 0; j < N; j += 64) /* j outer: b's 64-column panel stays in L1 across a's rows */
        for (int64_t i = 0; i < M; i += 4) {
            __m512 acc[4][4];
#pragma GCC unroll 4
            for (int r = 0; r < 4; r++)
#pragma GCC unroll 4
                for (int z = 0; z < 4; z++) acc[r][z] = _mm512_setzero_ps();
            const uint32_t *a0 = a + i * lda;
            for (int64_t k = 0; k < K2; k++) {
                const uint32_t *bk = bt + k * ldb + j;
                __m512bh b[4];
#pragma GCC unroll 4
                for (int z = 0; z < 4; z++) b[z] = (__m512bh)_mm512_loadu_si512(bk + 16 * z);
#pragma GCC unroll 4
                for (int r = 0; r < 4; r++) {
                    __m512bh av = (__m512bh)_mm512_set1_epi32((int)a0[r * lda + k]);
#pragma GCC unroll 4
                    for (int z = 0; z < 4; z++) acc[r][z] = _mm512_dpbf16_ps(acc[r][z], av, b[z]);
                }
            }
#pragma GCC unroll 4
            for (int r = 0; r < 4; r++)
#pragma GCC unroll 4
                for (int z = 0; z < 4; z++) _mm512_storeu_ps(c + (i + r) * ldc + j + 16 * z, acc[r][z]);
        }
}

AVX512BF16 static inline __attribute__((always_inline)) void mm_acc_bf16_tile(const uint32_t *a, int64_t ars,
                                                                              int64_t acs, const uint32_t *bm,
                                                                              int64_t ldb, float *c, int64_t ldc,
                                                                              int64_t K2, const int nz) {
    __m512 acc[4][4];
#pragma GCC unroll 4
    for (int r = 0; r < 4; r++)
#pragma GCC unroll 4
        for (int z = 0; z < nz; z++) acc[r][z] = _mm512_loadu_ps(c + r * ldc + 16 * z);
    for (int64_t k = 0; k < K2; k++) {
        const uint32_t *bk = bm + k * ldb;
        __m512bh b[4];
#pragma GCC unroll 4
        for (int z = 0; z < nz; z++) b[z] = (__m512bh)_mm512_loadu_si512(bk + 16 * z);
#pragma GCC unroll 4
        for (int r = 0; r < 4; r++) {
            __m512bh av = (__m512bh)_mm512_set1_epi32((int)a[r * ars + k * acs]);
#pragma GCC unroll 4
            for (int z = 0; z < nz; z++) acc[r][z] = _mm512_dpbf16_ps(acc[r][z], av, b[z]);
        }
    }
#pragma GCC unroll 4
    for (int r = 0; r < 4; r++)
#pragma GCC unroll 4
        for (int z = 0; z < nz; z++) _mm512_storeu_ps(c + r * ldc + 16 * z, acc[r][z]);
}

AVX512BF16 static void mm_acc_bf16(const uint32_t *a, int64_t ars, int64_t acs, const uint32_t *bm, int64_t ldb,
                                   float *c, int64_t ldc, int64_t M, int64_t N, int64_t K2) {
    for (int64_t i = 0; i < M; i += 4) {
        const uint32_t *ai = a + i * ars;
        float *ci = c + i * ldc;
        int64_t z = 0;
        for (; z + 64 <= N; z += 64) mm_acc_bf16_tile(ai, ars, acs, bm + z, ldb, ci + z, ldc, K2, 4);
        switch ((N - z) / 16) {
        case 3: mm_acc_bf16_tile(ai, ars, acs, bm + z, ldb, ci + z, ldc, K2, 3); break;
        case 2: mm_acc_bf16_tile(ai, ars, acs, bm + z, ldb, ci + z, ldc, K2, 2); break;
        case 1: mm_acc_bf16_tile(ai, ars, acs, bm + z, ldb, ci + z, ldc, K2, 1); break;
        default: break;
        }
    }
}

/* ------------------------------------------------------------------ packing */

/* z[j] = bf16(z[j]) for the n elements (ts_f32_bf16's rounding). */
TS_SIMD_CLONES
static void round_row(float *z, int64_t n) {
#pragma omp simd
    for (int64_t j = 0; j < n; j++) {
        uint32_t u;
        memcpy(&u, &z[j], 4);
        uint32_t r = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
        r = (u & 0x7fffffffu) > 0x7f800000u ? (u | 0x00400000u) & 0xffff0000u : r;
        memcpy(&z[j], &r, 4);
    }
}

/* dst[d ld + s] = x[s xs + d] (rounded): the [n, D] rows of one head transposed, zero beyond n;
 * by 16 x 16 blocks through a tile, so both sides are read and written along their rows. The
 * portable form of pack_t (below), which transposes the blocks in registers. */
static void pack_t_c(const ts_attn_geom *g, const float *x, int64_t xs, int64_t n, float *dst, int64_t ld) {
    float tile[16][16];
    for (int64_t d = 0; d < g->D; d++) memset(dst + d * ld + n, 0, sizeof(float) * (size_t)(ld - n));
    for (int64_t s0 = 0; s0 < n; s0 += 16) {
        int64_t ns = n - s0 < 16 ? n - s0 : 16;
        for (int64_t d0 = 0; d0 < g->D; d0 += 16) {
            int64_t nd = g->D - d0 < 16 ? g->D - d0 : 16;
            for (int64_t i = 0; i < ns; i++)
                for (int64_t j = 0; j < nd; j++) tile[j][i] = x[(s0 + i) * xs + d0 + j];
            for (int64_t j = 0; j < nd; j++) memcpy(dst + (d0 + j) * ld + s0, tile[j], sizeof(float) * (size_t)ns);
        }
    }
    if (g->bf16)
        for (int64_t d = 0; d < g->D; d++) round_row(dst + d * ld, n);
}

/* dst[s ld + d] = x[s xs + d] (rounded), rows n .. rows and columns D .. ld zero. */
static void pack_rows(const ts_attn_geom *g, const float *x, int64_t xs, int64_t n, int64_t rows, float *dst,
                      int64_t ld) {
    for (int64_t s = 0; s < rows; s++) {
        float *o = dst + s * ld;
        int64_t d = 0;
        if (s < n) {
            memcpy(o, x + s * xs, sizeof(float) * (size_t)g->D);
            if (g->bf16) round_row(o, g->D);
            d = g->D;
        }
        memset(o + d, 0, sizeof(float) * (size_t)(ld - d));
    }
}

/* The bf16-pair packers run only where want_bf16() (AVX-512 with BF16, BW and DQ), so they are
 * written for AVX-512 alone: 32 floats a step converted by one vcvtne2ps2bf16, masked loads and
 * stores only on a row's tail, and k's transpose by 16 x 16 blocks in registers. (Before, a loop
 * per row through a clone's dispatch and a scalar transpose: at B 8 x T 128 packing k and v took
 * as long as all the products. Then the rounding written out in integer ops: at 8 x 128 the
 * packers still took as long as the forward's products.) */
#define AVX512BW TS_AVX512_BF16
#define INLINE_BW TS_INLINE_BF16

/* The first n of 16 lanes (n may be below 0 or above 16). */
static inline __mmask16 first(int64_t n) {
    return n >= 16 ? (__mmask16)0xffff : n <= 0 ? (__mmask16)0 : (__mmask16)((1u << n) - 1u);
}

/* x[0 .. min(n, 16)) and zeros; and o[0 .. min(n, 16)) = v (32-bit lanes: floats through
 * _mm512_castps_si512). Masked only on a tail: a masked store measured dear on this CPU (a row
 * converted with masked loads and stores took 1.5x the time of plain ones), and a masked load is
 * never faster than a full one. AVX512F alone, so the rows below (want_avx512()) use them too. */
AVX512 static inline __attribute__((always_inline)) __m512 load16(const float *x, int64_t n) {
    return n >= 16 ? _mm512_loadu_ps(x) : _mm512_maskz_loadu_ps(first(n), x);
}
AVX512 static inline __attribute__((always_inline)) void store16(uint32_t *o, __m512i v, int64_t n) {
    if (n >= 16) _mm512_storeu_si512(o, v);
    else if (n > 0) _mm512_mask_storeu_epi32(o, first(n), v);
}

/* 16 pairs (bf16 x[2 p], bf16 x[2 p + 1]) from x[0 .. min(n, 32)), zeros beyond. */
INLINE_BW __m512i pairs16(const float *x, int64_t n) {
    return ts_bf16x32(load16(x, n), n > 16 ? load16(x + 16, n - 16) : _mm512_setzero_ps());
}

/* r[j] = column j of the 16 x 16 block of uint32 whose rows are r[i]. */
AVX512 static inline __attribute__((always_inline)) void transpose16(__m512i r[16]) {
    __m512i t[16];
#pragma GCC unroll 8
    for (int i = 0; i < 8; i++)
        t[2 * i] = _mm512_unpacklo_epi32(r[2 * i], r[2 * i + 1]), t[2 * i + 1] = _mm512_unpackhi_epi32(r[2 * i], r[2 * i + 1]);
#pragma GCC unroll 4
    for (int i = 0; i < 4; i++) { /* 4 x 4 blocks transposed within each 128-bit lane */
        r[4 * i] = _mm512_unpacklo_epi64(t[4 * i], t[4 * i + 2]);
        r[4 * i + 1] = _mm512_unpackhi_epi64(t[4 * i], t[4 * i + 2]);
        r[4 * i + 2] = _mm512_unpacklo_epi64(t[4 * i + 1], t[4 * i + 3]);
        r[4 * i + 3] = _mm512_unpackhi_epi64(t[4 * i + 1], t[4 * i + 3]);
    }
#pragma GCC unroll 4
    for (int i = 0; i < 4; i++) { /* then the lanes: even and odd ones of rows 4 apart, 8 apart */
        t[i] = _mm512_shuffle_i32x4(r[i], r[i + 4], 0x88), t[i + 4] = _mm512_shuffle_i32x4(r[i], r[i + 4], 0xdd);
        t[i + 8] = _mm512_shuffle_i32x4(r[i + 8], r[i + 12], 0x88);
        t[i + 12] = _mm512_shuffle_i32x4(r[i + 8], r[i + 12], 0xdd);
    }
#pragma GCC unroll 8
    for (int i = 0; i < 8; i++)
        r[i] = _mm512_shuffle_i32x4(t[i], t[i + 8], 0x88), r[i + 8] = _mm512_shuffle_i32x4(t[i], t[i + 8], 0xdd);
}

/* pack_t_c in AVX-512: each 16 x 16 block loaded as 16 rows, transposed in registers (transpose16
 * on the floats' bits), stored as 16 rows. At 8 x 128 the scalar tile took as long as either of
 * the forward's products. */
AVX512 static void pack_t_512(const ts_attn_geom *g, const float *x, int64_t xs, int64_t n, float *dst, int64_t ld) {
    int64_t D = g->D;
    for (int64_t d = 0; d < D; d++) memset(dst + d * ld + n, 0, sizeof(float) * (size_t)(ld - n));
    for (int64_t s0 = 0; s0 < n; s0 += 16) {
        int64_t ns = n - s0 < 16 ? n - s0 : 16;
        for (int64_t d0 = 0; d0 < D; d0 += 16) {
            __m512i r[16];
#pragma GCC unroll 16
            for (int i = 0; i < 16; i++)
                r[i] = i < ns ? _mm512_castps_si512(load16(x + (s0 + i) * xs + d0, D - d0)) : _mm512_setzero_si512();
            transpose16(r);
            for (int64_t jd = 0; jd < 16 && d0 + jd < D; jd++)
                store16((uint32_t *)(dst + (d0 + jd) * ld + s0), r[jd], ns);
        }
    }
    if (g->bf16)
        for (int64_t d = 0; d < D; d++) round_row(dst + d * ld, n);
}

static void pack_t(const ts_attn_geom *g, const float *x, int64_t xs, int64_t n, float *dst, int64_t ld) {
    if (want_avx512()) pack_t_512(g, x, xs, n, dst, ld);
    else pack_t_c(g, x, xs, n, dst, ld);
}

/* o[c] = (bf16 a[c], bf16 b[c]) for c < n, a pair per uint32 (a the low half); b NULL: zeros. */
AVX512BW static void pair_two_rows(const float *a, const float *b, int64_t n, uint32_t *o) {
    /* bf16x32 gives a[0 .. 16) then b[0 .. 16); vpermw interleaves them: word 2 i = a[i], 2 i + 1 = b[i] */
    const __m512i mix = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8, 23, 7, 22, 6,
                                         21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
    for (int64_t c = 0; c < n; c += 16) {
        __m512 hi = b ? load16(b + c, n - c) : _mm512_setzero_ps();
        store16(o + c, _mm512_permutexvar_epi16(mix, ts_bf16x32(load16(a + c, n - c), hi)), n - c);
    }
}

/* o[kp] = (bf16 x[2 kp], bf16 x[2 kp + 1]) for kp < ceil(n / 2), a missing last element 0: the
 * row in bf16, viewed as pairs. o may be x: each 32 floats are read before the 16 pairs they
 * become are written over floats already read. */
AVX512BW static void pair_along(const float *x, int64_t n, uint32_t *o) {
    int64_t n2 = (n + 1) / 2;
    for (int64_t j = 0; j < n; j += 32) store16(o + j / 2, pairs16(x + j, n - j), n2 - j / 2);
}

/* Pairs along d: dst[dp ld + s] = (bf16 x[s xs + 2 dp], bf16 x[s xs + 2 dp + 1]) for the n rows,
 * dp < D2 = ceil(D / 2) — the uint32 view of row s in bf16, transposed by 16 x 16 blocks; zero
 * beyond n (and the odd D's last high half). q k^T's k, gy v^T's v. */
AVX512BW static void pack_pairs_t(const ts_attn_geom *g, const float *x, int64_t xs, int64_t n, uint32_t *dst,
                                  int64_t ld) {
    int64_t D = g->D, D2 = (D + 1) / 2;
    for (int64_t dp = 0; dp < D2; dp++) memset(dst + dp * ld + n, 0, sizeof(uint32_t) * (size_t)(ld - n));
    for (int64_t s0 = 0; s0 < n; s0 += 16) {
        int64_t ns = n - s0 < 16 ? n - s0 : 16;
        for (int64_t d0 = 0; d0 < D2; d0 += 16) {
            __m512i r[16];
#pragma GCC unroll 16
            for (int i = 0; i < 16; i++)
                r[i] = i < ns ? pairs16(x + (s0 + i) * xs + 2 * d0, D - 2 * d0) : _mm512_setzero_si512();
            transpose16(r);
            for (int64_t jd = 0; jd < 16 && d0 + jd < D2; jd++) store16(dst + (d0 + jd) * ld + s0, r[jd], ns);
        }
    }
}

/* Pairs along rows: dst[sp ld + d] = (bf16 of row 2 sp's d, bf16 of row 2 sp + 1's d), rows n ..
 * 2 np and columns D .. ld zero (np pair rows). p v's v, gz k's k. */
static void pack_pairs_rows(const ts_attn_geom *g, const float *x, int64_t xs, int64_t n, int64_t np, uint32_t *dst,
                            int64_t ld) {
    int64_t D = g->D;
    for (int64_t sp = 0; sp < np; sp++) {
        uint32_t *o = dst + sp * ld;
        if (2 * sp < n) pair_two_rows(x + 2 * sp * xs, 2 * sp + 1 < n ? x + (2 * sp + 1) * xs : NULL, D, o);
        else memset(o, 0, sizeof(uint32_t) * (size_t)D);
        memset(o + D, 0, sizeof(uint32_t) * (size_t)(ld - D));
    }
}

/* Pairs along a row: the rows of x in bf16, dst[i ld + kp] = (bf16 x[i xs + 2 kp], bf16 x[i xs +
 * 2 kp + 1]) for i < rows and kp < ceil(n / 2) (a missing last element 0); rows .. rows4 zero.
 * dst may be x (ld <= xs): see pair_along. */
static void pack_pairs_along(const float *x, int64_t xs, int64_t rows, int64_t rows4, int64_t n, uint32_t *dst,
                             int64_t ld) {
    for (int64_t i = 0; i < rows4; i++) {
        if (i < rows) pair_along(x + i * xs, n, dst + i * ld);
        else memset(dst + i * ld, 0, sizeof(uint32_t) * (size_t)((n + 1) / 2));
    }
}

/* Pairs of rows, key-major: dst[rp n + c] = (bf16 x[2 rp] row's c, bf16 x[2 rp + 1] row's c) for
 * rp < rows / 2 (rows even), x's rows n long (stride n). pd^T and gz^T. */
static void pair_rows_t(const float *x, int64_t n, int64_t rows, uint32_t *dst) {
    for (int64_t rp = 0; rp < rows / 2; rp++) pair_two_rows(x + 2 * rp * n, x + (2 * rp + 1) * n, n, dst + rp * n);
}
/* o[d] = x[d] a for d < n (o and x distinct). */
static inline void scaled_copy(float *restrict o, const float *restrict x, int64_t n, float a) {
#pragma omp simd
    for (int64_t d = 0; d < n; d++) o[d] = x[d] * a;
}

/* The mask's row for query i of head (b, h), or NULL. */
static const float *mask_row(const ts_attn_geom *g, int64_t b, int64_t h, int64_t i) {
    return g->mask ? g->mask + b * g->mb + h * g->mh + i * g->mt : NULL;
}

/* Dropout's keep bit of element idx of the [B, H, T, S] scores (ops/dropout.c's). */
static inline int keep_bit(const ts_attn_geom *g, uint64_t idx) {
    uint32_t k0 = (uint32_t)g->key, k1 = (uint32_t)(g->key >> 32);
    return (ts_rng_u32((uint32_t)idx, (uint32_t)(idx >> 32) ^ k1, k0) >> 8) >= g->thr;
}

/* ------------------------------------------------------------------ forward */

typedef struct {
    float *kt, *vp, *qp, *sb, *ob, *m, *l;
    float *stage; /* in16: the head's q, k, v widened (stage_floats) */
} fwd_ws;

/* in16: a head's q [T, D], k and v [S, D] in f32, rows D apart; else none. */
static size_t stage_floats(const ts_attn_geom *g) { return g->in16 ? (size_t)((g->T + 2 * g->S) * g->D) : 0; }

/* A head's view of q (rows qt apart) and of k and v (rows ks apart): where they are, or (in16) the
 * thread's f32 copy of them. */
typedef struct {
    const float *q, *k, *v;
    int64_t qt, ks;
} head_in;

/* o[r D + d] = the f32 of bf16 x[r xs + d], for n rows: bf16 is f32's upper half. */
static void widen_rows(const uint16_t *x, int64_t xs, int64_t n, int64_t D, float *o) {
    for (int64_t r = 0; r < n; r++) {
        const uint16_t *xr = x + r * xs;
        uint32_t *ow = (uint32_t *)(o + r * D);
#pragma omp simd
        for (int64_t d = 0; d < D; d++) ow[d] = (uint32_t)xr[d] << 16;
    }
}

/* Head (b, h)'s inputs: in place for f32, widened into stage for bf16. */
static head_in head_inputs(const ts_attn_geom *g, int64_t b, int64_t h, const void *q, const void *k, const void *v,
                           float *stage) {
    int64_t qo = b * g->qb + h * g->qh, ko = b * g->kb + h * g->kh;
    if (!g->in16)
        return (head_in){(const float *)q + qo, (const float *)k + ko, (const float *)v + ko, g->qt, g->ks};
    float *qs = stage, *ks = qs + g->T * g->D, *vs = ks + g->S * g->D;
    widen_rows((const uint16_t *)q + qo, g->qt, g->T, g->D, qs);
    widen_rows((const uint16_t *)k + ko, g->ks, g->S, g->D, ks);
    widen_rows((const uint16_t *)v + ko, g->ks, g->S, g->D, vs);
    return (head_in){qs, ks, vs, g->D, g->D};
}

static size_t fwd_floats(const ts_attn_geom *g) {
    int64_t S64 = up(g->S, 64), Dp = up(g->D, 16);
    return (size_t)(g->D * S64 + S64 * Dp + BR * Dp + BR * BC + BR * Dp + 2 * BR + 64 + stage_floats(g));
}

static void fwd_ws_carve(const ts_attn_geom *g, float *w, fwd_ws *ws) {
    int64_t S64 = up(g->S, 64), Dp = up(g->D, 16);
    ws->kt = w, w += g->D * S64;
    ws->vp = w, w += S64 * Dp;
    ws->qp = w, w += BR * Dp;
    ws->sb = w, w += BR * BC;
    ws->ob = w, w += BR * Dp;
    ws->m = w, w += BR;
    ws->l = w, w += BR;
    ws->stage = w;
}

/* Dropout over a row of n probabilities z whose first element is element `base` of the scores:
 * z *= keep ? 1 / (1 - p) : 0 (ops/dropout.c's bits; `base` may cross a 2^32 boundary). */
TS_SIMD_CLONES
static void drop_row(const ts_attn_geom *g, float *z, int64_t n, uint64_t base) {
    uint32_t k0 = (uint32_t)g->key, k1 = (uint32_t)(g->key >> 32), thr = g->thr, lo = (uint32_t)base;
    float ks = g->keep_scale;
    if ((uint64_t)lo + (uint64_t)n <= 0x100000000ull) {
        uint32_t hi = (uint32_t)(base >> 32) ^ k1;
#pragma omp simd
        for (int64_t j = 0; j < n; j++) z[j] = (ts_rng_u32(lo + (uint32_t)j, hi, k0) >> 8) >= thr ? z[j] * ks : 0.f;
    } else {
        for (int64_t j = 0; j < n; j++) z[j] = keep_bit(g, base + (uint64_t)j) ? z[j] * ks : 0.f;
    }
}

/* Row r's online-softmax step over nc scores z (scaled and masked in place, then exp(z - m')):
 * returns the factor c that rescales what the row held; updates m and l. */
TS_SIMD_CLONES
static float fwd_row(const ts_attn_geom *g, float *z, const float *mj, int64_t nc, float *m, float *l) {
    float mx = -INFINITY, sc = g->scale, sum = 0.f;
    int64_t ms = g->ms;
    if (mj && ms == 1) { /* a mask row of its own (padding, packing): contiguous loads, no gather */
#pragma omp simd reduction(max : mx)
        for (int64_t j = 0; j < nc; j++) { z[j] = z[j] * sc + mj[j]; mx = z[j] > mx ? z[j] : mx; }
    } else if (mj) {
#pragma omp simd reduction(max : mx)
        for (int64_t j = 0; j < nc; j++) { z[j] = z[j] * sc + mj[j * ms]; mx = z[j] > mx ? z[j] : mx; }
    } else {
#pragma omp simd reduction(max : mx)
        for (int64_t j = 0; j < nc; j++) { z[j] *= sc; mx = z[j] > mx ? z[j] : mx; }
    }
    float m0 = *m, m1 = m0 > mx ? m0 : mx;
    if (m1 == -INFINITY) { /* every key so far masked with -inf: nothing to add */
        for (int64_t j = 0; j < nc; j++) z[j] = 0.f;
        return 1.f;
    }
    float corr = m0 == -INFINITY ? 0.f : ts_expf(m0 - m1);
#pragma omp simd reduction(+ : sum)
    for (int64_t j = 0; j < nc; j++) { z[j] = ts_expf(z[j] - m1); sum += z[j]; }
    *l = *l * corr + sum;
    *m = m1;
    return corr;
}

/* The rows in AVX-512 (want_avx512(), a mask row of stride 1 or none): fwd_row's and bwd_row's
 * math, with exp16 for ts_expf. The clones of fwd_row spent as long on these rows as on the
 * products at T 384 (f32), mostly in exp's range checks and 2^n; vscalefps makes 2^n one
 * instruction, and only the tail of a row is masked. */

/* Whether the rows run in AVX-512 (fwd_row_512, bwd_row_512) rather than fwd_row, bwd_row. */
static int rows_512(const ts_attn_geom *g) { return want_avx512() && (!g->mask || g->ms == 1); }

/* ts_expf of 16 lanes: the same clamps, reduction and polynomial; p 2^n by vscalefps (exact, as
 * the multiply by a power of two it replaces); inf above the range, 0 below it, NaN kept. */
AVX512 static inline __attribute__((always_inline)) __m512 exp16(__m512 x) {
    const __m512 lo = _mm512_set1_ps(-87.33654f), hi = _mm512_set1_ps(88.72283f);
    __m512 xc = _mm512_min_ps(_mm512_max_ps(x, lo), hi); /* vmaxps gives lo for a NaN x */
    __m512 n = _mm512_roundscale_ps(_mm512_fmadd_ps(xc, _mm512_set1_ps(1.44269504089f), _mm512_set1_ps(0.5f)),
                                    _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(1.428606765330187e-06f),
                                _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693145751953125f), xc));
    __m512 p = _mm512_set1_ps(1.f / 5040.f);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.f / 720.f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.f / 120.f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.f / 24.f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.f / 6.f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.f));
    __m512 y = _mm512_scalef_ps(p, n);
    y = _mm512_mask_mov_ps(y, _mm512_cmp_ps_mask(x, hi, _CMP_GT_OQ), _mm512_set1_ps(INFINITY));
    y = _mm512_mask_mov_ps(y, _mm512_cmp_ps_mask(x, lo, _CMP_LT_OQ), _mm512_setzero_ps());
    return _mm512_mask_mov_ps(y, _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q), x);
}

/* fwd_row with mj NULL or of stride 1. */
AVX512 static float fwd_row_512(const ts_attn_geom *g, float *z, const float *mj, int64_t nc, float *m, float *l) {
    const __m512 sc = _mm512_set1_ps(g->scale), ninf = _mm512_set1_ps(-INFINITY);
    __m512 vmx = ninf;
    for (int64_t j = 0; j < nc; j += 16) {
        __m512 v = _mm512_mul_ps(load16(z + j, nc - j), sc);
        if (mj) v = _mm512_add_ps(v, load16(mj + j, nc - j));
        vmx = _mm512_mask_max_ps(vmx, first(nc - j), vmx, v);
        store16((uint32_t *)(z + j), _mm512_castps_si512(v), nc - j);
    }
    float mx = _mm512_reduce_max_ps(vmx), m0 = *m, m1 = m0 > mx ? m0 : mx;
    if (m1 == -INFINITY) { /* every key so far masked with -inf: nothing to add */
        memset(z, 0, sizeof(float) * (size_t)nc);
        return 1.f;
    }
    float corr = m0 == -INFINITY ? 0.f : ts_expf(m0 - m1);
    __m512 vm1 = _mm512_set1_ps(m1), vsum = _mm512_setzero_ps();
    for (int64_t j = 0; j < nc; j += 16) {
        __m512 e = exp16(_mm512_sub_ps(load16(z + j, nc - j), vm1));
        vsum = _mm512_mask_add_ps(vsum, first(nc - j), vsum, e);
        store16((uint32_t *)(z + j), _mm512_castps_si512(e), nc - j);
    }
    *l = *l * corr + _mm512_reduce_add_ps(vsum);
    *m = m1;
    return corr;
}

/* One block of keys j0 .. j0 + nc for the first `rows` query rows (from i0): the online softmax's
 * rescale and exp into sb, dropout, o += p v. */
static void fwd_key_block(const ts_attn_geom *g, const fwd_ws *w, int64_t b, int64_t h, int64_t i0, int64_t rows,
                          int64_t j0, int64_t nc) {
    int64_t S64 = up(g->S, 64), Dp = up(g->D, 16), rows4 = up(rows, 4);
    int pairs = g->bf16 && want_bf16(); /* qp, kt, vp hold bf16 pairs (fwd_head) */
    int row512 = rows_512(g);
    if (pairs) mm_nt_bf16((uint32_t *)w->qp, Dp / 2, (uint32_t *)w->kt + j0, S64, w->sb, BC, rows4, up(nc, 64),
                          (g->D + 1) / 2);
    else mm_nt(w->qp, Dp, w->kt + j0, S64, w->sb, BC, rows4, up(nc, 64), g->D);
    for (int64_t r = 0; r < rows; r++) {
        float *z = w->sb + r * BC, *o = w->ob + r * Dp;
        const float *mr = mask_row(g, b, h, i0 + r);
        float corr = row512 ? fwd_row_512(g, z, mr ? mr + j0 : NULL, nc, &w->m[r], &w->l[r])
                            : fwd_row(g, z, mr ? mr + j0 * g->ms : NULL, nc, &w->m[r], &w->l[r]);
        if (g->p > 0.f) drop_row(g, z, nc, (uint64_t)(((b * g->H + h) * g->T + i0 + r) * g->S + j0));
        if (g->bf16 && !pairs) round_row(z, nc);
        if (corr != 1.f)
            for (int64_t d = 0; d < Dp; d++) o[d] *= corr;
    }
    if (pairs) { /* p to pairs along the keys, in place */
        pack_pairs_along(w->sb, BC, rows, rows4, nc, (uint32_t *)w->sb, BC);
        mm_acc_bf16((uint32_t *)w->sb, BC, 1, (uint32_t *)w->vp + j0 / 2 * Dp, Dp, w->ob, Dp, rows4, Dp, (nc + 1) / 2);
    } else {
        mm_acc(w->sb, BC, 1, w->vp + j0 * Dp, Dp, w->ob, Dp, rows4, Dp, nc);
    }
}

TS_SIMD_CLONES __attribute__((noinline))
static void fwd_head(const ts_attn_geom *g, const fwd_ws *w, int64_t b, int64_t h, const head_in *in, float *y,
                     float *lse) {
    int64_t S64 = up(g->S, 64), Dp = up(g->D, 16);
    const float *qh = in->q;
    int pairs = g->bf16 && want_bf16();
    if (pairs) { /* bf16 pairs: k along d, v along the keys */
        pack_pairs_t(g, in->k, in->ks, g->S, (uint32_t *)w->kt, S64);
        pack_pairs_rows(g, in->v, in->ks, g->S, S64 / 2, (uint32_t *)w->vp, Dp);
    } else {
        pack_t(g, in->k, in->ks, g->S, w->kt, S64);
        pack_rows(g, in->v, in->ks, g->S, S64, w->vp, Dp);
    }
    for (int64_t i0 = 0; i0 < g->T; i0 += BR) {
        int64_t rows = g->T - i0 < BR ? g->T - i0 : BR;
        if (pairs) pack_pairs_along(qh + i0 * in->qt, in->qt, rows, up(rows, 4), g->D, (uint32_t *)w->qp, Dp / 2);
        else pack_rows(g, qh + i0 * in->qt, in->qt, rows, up(rows, 4), w->qp, Dp);
        for (int64_t r = 0; r < rows; r++) w->m[r] = -INFINITY, w->l[r] = 0.f;
        memset(w->ob, 0, sizeof(float) * (size_t)(up(rows, 4) * Dp));
        for (int64_t j0 = 0; j0 < g->S; j0 += BC)
            fwd_key_block(g, w, b, h, i0, rows, j0, g->S - j0 < BC ? g->S - j0 : BC);
        for (int64_t r = 0; r < rows; r++) {
            float l = w->l[r], inv = l > 0.f ? 1.f / l : 0.f;
            scaled_copy(y + b * g->qb + h * g->qh + (i0 + r) * g->qt, w->ob + r * Dp, g->D, inv);
            lse[(b * g->H + h) * g->T + i0 + r] = l > 0.f ? w->m[r] + logf(l) : -INFINITY;
        }
    }
}

/* ------------------------------------------------------------------ backward */

typedef struct {
    float *kt, *kp, *vt, *gk, *gv, *qp, *gyp, *gq, *p, *dp, *drow, *kf;
    uint32_t *qb, *gyb, *dsb; /* bf16 pairs (want_bf16): q and gy along d, gz along the keys */
    uint32_t *pt, *dst, *qr, *gyr; /* and along the tile's rows: pd and gz (key-major), q and gy */
    float *stage; /* in16: the head's q, k, v widened (stage_floats) */
} bwd_ws;

static size_t bwd_floats(const ts_attn_geom *g) {
    int64_t S64 = up(g->S, 64), Dp = up(g->D, 16);
    return (size_t)(2 * g->D * S64 + 3 * S64 * Dp + 5 * BRB * Dp + 3 * BRB * S64 + BRB * S64 / 2 + BRB + S64 + 64) +
           stage_floats(g);
}

static void bwd_ws_carve(const ts_attn_geom *g, float *w, bwd_ws *ws) {
    int64_t S64 = up(g->S, 64), Dp = up(g->D, 16);
    ws->kt = w, w += g->D * S64;
    ws->vt = w, w += g->D * S64;
    ws->kp = w, w += S64 * Dp;
    ws->gk = w, w += S64 * Dp;
    ws->gv = w, w += S64 * Dp;
    ws->qp = w, w += BRB * Dp;
    ws->gyp = w, w += BRB * Dp;
    ws->gq = w, w += BRB * Dp;
    ws->p = w, w += BRB * S64;
    ws->dp = w, w += BRB * S64;
    ws->drow = w, w += BRB;
    ws->kf = w, w += S64;
    ws->qb = (uint32_t *)w, w += BRB * Dp / 2;
    ws->gyb = (uint32_t *)w, w += BRB * Dp / 2;
    ws->dsb = (uint32_t *)w, w += BRB * S64 / 2;
    ws->pt = (uint32_t *)w, w += BRB * S64 / 2;
    ws->dst = (uint32_t *)w, w += BRB * S64 / 2;
    ws->qr = (uint32_t *)w, w += BRB * Dp / 2;
    ws->gyr = (uint32_t *)w, w += BRB * Dp / 2;
    ws->stage = w;
}

/* One row of the tile: z (scores in, p out: exp(scale z + mask - L), 0 when L is -inf) and gp
 * (gpd in, gz = p (keep gpd - dr) out, keep the dropout's factor), both n long. */
TS_SIMD_CLONES
static void bwd_row(const ts_attn_geom *g, float *z, float *gp, const float *mr, int64_t n, float L, float dr) {
    float sc = g->scale;
    int64_t ms = g->ms;
    if (L == -INFINITY) {
        for (int64_t j = 0; j < n; j++) z[j] = gp[j] = 0.f;
        return;
    }
    if (mr && ms == 1) { /* contiguous, as in fwd_row */
#pragma omp simd
        for (int64_t j = 0; j < n; j++) z[j] = ts_expf(z[j] * sc + mr[j] - L);
    } else if (mr) {
#pragma omp simd
        for (int64_t j = 0; j < n; j++) z[j] = ts_expf(z[j] * sc + mr[j * ms] - L);
    } else {
#pragma omp simd
        for (int64_t j = 0; j < n; j++) z[j] = ts_expf(z[j] * sc - L);
    }
#pragma omp simd
    for (int64_t j = 0; j < n; j++) gp[j] = z[j] * (gp[j] - dr);
}

/* bwd_row with mr NULL or of stride 1 (L not -inf). */
AVX512 static void bwd_row_512(const ts_attn_geom *g, float *z, float *gp, const float *mr, int64_t n, float L, float dr) {
    const __m512 sc = _mm512_set1_ps(g->scale), vl = _mm512_set1_ps(L), vdr = _mm512_set1_ps(dr);
    for (int64_t j = 0; j < n; j += 16) {
        __m512 x = load16(z + j, n - j);
        x = mr ? _mm512_fmadd_ps(x, sc, load16(mr + j, n - j)) : _mm512_mul_ps(x, sc);
        __m512 e = exp16(_mm512_sub_ps(x, vl)), d = _mm512_mul_ps(e, _mm512_sub_ps(load16(gp + j, n - j), vdr));
        store16((uint32_t *)(z + j), _mm512_castps_si512(e), n - j);
        store16((uint32_t *)(gp + j), _mm512_castps_si512(d), n - j);
    }
}

/* kf[j] = keep ? 1 / (1 - p) : 0 for the n elements from `base` of the scores (drop_row on ones). */
static void keep_factors(const ts_attn_geom *g, float *kf, int64_t n, uint64_t base) {
    for (int64_t j = 0; j < n; j++) kf[j] = 1.f;
    drop_row(g, kf, n, base);
}

/* Rows r < rows of the tile: p (scores in, pd out) and dp (gpd in, gz out, unscaled). With
 * dropout (kf the keep factors), gz = p (kf gpd - dr) and pd = kf p: gpd is scaled first, the row
 * done on undropped p, then p scaled. */
TS_SIMD_CLONES
static void bwd_rows(const ts_attn_geom *g, const bwd_ws *w, int64_t b, int64_t h, int64_t i0, int64_t rows,
                     const float *lse) {
    int64_t S = g->S, S64 = up(S, 64);
    float *kf = w->kf;
    int row512 = rows_512(g);
    for (int64_t r = 0; r < rows; r++) {
        float *z = w->p + r * S64, *gp = w->dp + r * S64, L = lse[(b * g->H + h) * g->T + i0 + r], dr = w->drow[r];
        if (g->p > 0.f) {
            keep_factors(g, kf, S, (uint64_t)(((b * g->H + h) * g->T + i0 + r) * S));
            for (int64_t j = 0; j < S; j++) gp[j] *= kf[j];
        }
        if (row512 && L != -INFINITY) bwd_row_512(g, z, gp, mask_row(g, b, h, i0 + r), S, L, dr);
        else bwd_row(g, z, gp, mask_row(g, b, h, i0 + r), S, L, dr);
        if (g->p > 0.f)
            for (int64_t j = 0; j < S; j++) z[j] *= kf[j];
        if (g->bf16 && !want_bf16()) round_row(z, S), round_row(gp, S); /* pairs round as they pack */
    }
}

TS_SIMD_CLONES __attribute__((noinline))
static void bwd_head(const ts_attn_geom *g, const bwd_ws *w, int64_t b, int64_t h, const head_in *in, const float *y,
                     const float *lse, const float *gy, float *gq, float *gk, float *gv) {
    int64_t S = g->S, S64 = up(S, 64), Dp = up(g->D, 16), D = g->D;
    int64_t qo = b * g->qb + h * g->qh, ko = b * g->kb + h * g->kh, qt = in->qt;
    const float *q = in->q;
    int pairs = g->bf16 && want_bf16(); /* every product on bf16 pairs, else on f32 (rounded for bf16) */
    if (pairs) {
        pack_pairs_t(g, in->k, in->ks, S, (uint32_t *)w->kt, S64);
        pack_pairs_t(g, in->v, in->ks, S, (uint32_t *)w->vt, S64);
        pack_pairs_rows(g, in->k, in->ks, S, S64 / 2, (uint32_t *)w->kp, Dp);
    } else {
        pack_t(g, in->k, in->ks, S, w->kt, S64);
        pack_t(g, in->v, in->ks, S, w->vt, S64);
        pack_rows(g, in->k, in->ks, S, S64, w->kp, Dp);
    }
    memset(w->gk, 0, sizeof(float) * (size_t)(S64 * Dp));
    memset(w->gv, 0, sizeof(float) * (size_t)(S64 * Dp));
    for (int64_t i0 = 0; i0 < g->T; i0 += BRB) {
        int64_t rows = g->T - i0 < BRB ? g->T - i0 : BRB, rows4 = up(rows, 4);
        for (int64_t r = 0; r < rows; r++) {
            const float *yr = y + qo + (i0 + r) * g->qt, *gr = gy + qo + (i0 + r) * g->qt;
            float s = 0.f;
#pragma omp simd reduction(+ : s)
            for (int64_t d = 0; d < D; d++) s += yr[d] * gr[d];
            w->drow[r] = s;
        }
        if (pairs) {
            int64_t D2 = (D + 1) / 2;
            pack_pairs_along(q + i0 * qt, qt, rows, rows4, D, w->qb, Dp / 2);
            pack_pairs_along(gy + qo + i0 * g->qt, g->qt, rows, rows4, D, w->gyb, Dp / 2);
            mm_nt_bf16(w->qb, Dp / 2, (uint32_t *)w->kt, S64, w->p, S64, rows4, S64, D2);
            mm_nt_bf16(w->gyb, Dp / 2, (uint32_t *)w->vt, S64, w->dp, S64, rows4, S64, D2);
        } else {
            pack_rows(g, q + i0 * qt, qt, rows, rows4, w->qp, Dp);
            pack_rows(g, gy + qo + i0 * g->qt, g->qt, rows, rows4, w->gyp, Dp);
            mm_nt(w->qp, Dp, w->kt, S64, w->p, S64, rows4, S64, D);
            mm_nt(w->gyp, Dp, w->vt, S64, w->dp, S64, rows4, S64, D);
        }
        bwd_rows(g, w, b, h, i0, rows, lse);
        for (int64_t r = 0; r < rows4; r++) { /* padding keys and rows take no part */
            int64_t j0 = r < rows ? S : 0;
            memset(w->p + r * S64 + j0, 0, sizeof(float) * (size_t)(S64 - j0));
            memset(w->dp + r * S64 + j0, 0, sizeof(float) * (size_t)(S64 - j0));
        }
        if (pairs) { /* gv += pd^T gy, gk += gz^T q: pairs of the tile's rows */
            pack_pairs_rows(g, q + i0 * qt, qt, rows, rows4 / 2, w->qr, Dp);
            pack_pairs_rows(g, gy + qo + i0 * g->qt, g->qt, rows, rows4 / 2, w->gyr, Dp);
            pair_rows_t(w->p, S64, rows4, w->pt);
            pair_rows_t(w->dp, S64, rows4, w->dst);
            mm_acc_bf16(w->pt, 1, S64, w->gyr, Dp, w->gv, Dp, S64, Dp, rows4 / 2);
            mm_acc_bf16(w->dst, 1, S64, w->qr, Dp, w->gk, Dp, S64, Dp, rows4 / 2);
        } else {
            mm_acc(w->p, 1, S64, w->gyp, Dp, w->gv, Dp, S64, Dp, rows);  /* gv += pd^T gy */
            mm_acc(w->dp, 1, S64, w->qp, Dp, w->gk, Dp, S64, Dp, rows);  /* gk += gz^T q */
        }
        memset(w->gq, 0, sizeof(float) * (size_t)(rows4 * Dp));
        if (pairs) { /* gq = gz k */
            pack_pairs_along(w->dp, S64, rows4, rows4, S64, w->dsb, S64 / 2);
            mm_acc_bf16(w->dsb, S64 / 2, 1, (uint32_t *)w->kp, Dp, w->gq, Dp, rows4, Dp, S64 / 2);
        } else {
            mm_acc(w->dp, S64, 1, w->kp, Dp, w->gq, Dp, rows4, Dp, S);
        }
        for (int64_t r = 0; r < rows; r++) scaled_copy(gq + qo + (i0 + r) * g->qt, w->gq + r * Dp, D, g->scale);
    }
    for (int64_t s = 0; s < S; s++) {
        scaled_copy(gk + ko + s * g->ks, w->gk + s * Dp, D, g->scale);
        scaled_copy(gv + ko + s * g->ks, w->gv + s * Dp, D, 1.f);
    }
}

/* ------------------------------------------------------------------ entry points */

/* What a head's kernel reads and writes: the forward writes y and lse, the backward reads them. */
typedef struct {
    const void *q, *k, *v; /* f32, or bf16 (geo->in16) */
    const float *gy;
    float *y, *lse, *gq, *gk, *gv;
} attn_io;

/* Head (b, h) run on buf, a thread's tile memory (fwd_floats or bwd_floats of it). */
typedef void (*head_fn)(const ts_attn_geom *g, float *buf, int64_t b, int64_t h, const attn_io *io);

/* The bytes of a thread's tile memory, 64-aligned. */
static size_t per_thread(const ts_attn_geom *g, int backward) {
    return align64(sizeof(float) * (backward ? bwd_floats(g) : fwd_floats(g)));
}

/* run(head) for every head, in parallel: each thread on its share of scratch, or on a buffer of
 * its own beyond what scratch holds. TS_ERR_NOMEM, naming op, when a thread had no buffer. */
static ts_status over_heads(const ts_attn_geom *g, void *scratch, size_t scratch_bytes, int backward, head_fn run,
                            const attn_io *io, const char *op) {
    int64_t nbh = g->B * g->H;
    size_t per = per_thread(g, backward);
    int nt = omp_get_max_threads(), slots = per ? (int)(scratch_bytes / per) : 0, failed = 0;
    if (slots > 0 && nt > slots) nt = slots;
#pragma omp parallel if (nbh > 1) num_threads(nt) reduction(| : failed)
    {
        int t = omp_get_thread_num();
        float *own = t < slots ? NULL : malloc(per);
        float *buf = t < slots ? (float *)((char *)scratch + per * (size_t)t) : own;
        failed = !buf;
#pragma omp for schedule(dynamic, 1)
        for (int64_t bh = 0; bh < nbh; bh++)
            if (buf) run(g, buf, bh / g->H, bh % g->H, io);
        free(own);
    }
    return failed ? ts_err(TS_ERR_NOMEM, "op %s: out of memory for the tiles of [%lld keys, %lld] heads", op,
                           (long long)g->S, (long long)g->D)
                  : TS_OK;
}

static void fwd_run(const ts_attn_geom *g, float *buf, int64_t b, int64_t h, const attn_io *io) {
    fwd_ws w;
    fwd_ws_carve(g, buf, &w);
    head_in in = head_inputs(g, b, h, io->q, io->k, io->v, w.stage);
    fwd_head(g, &w, b, h, &in, io->y, io->lse);
}

ts_status ts_attn_forward(const ts_attn_geom *g, void *scratch, size_t scratch_bytes, const void *q, const void *k,
                          const void *v, float *y, float *lse) {
    if (g->T == 0 || g->B * g->H == 0) return TS_OK;
    if (g->S == 0) { /* no keys: zero output, lse -inf */
        for (int64_t b = 0; b < g->B; b++)
            for (int64_t h = 0; h < g->H; h++)
                for (int64_t i = 0; i < g->T; i++) {
                    memset(y + b * g->qb + h * g->qh + i * g->qt, 0, sizeof(float) * (size_t)g->D);
                    lse[(b * g->H + h) * g->T + i] = -INFINITY;
                }
        return TS_OK;
    }
    attn_io io = {.q = q, .k = k, .v = v, .y = y, .lse = lse};
    return over_heads(g, scratch, scratch_bytes, 0, fwd_run, &io, "attention");
}

static void bwd_run(const ts_attn_geom *g, float *buf, int64_t b, int64_t h, const attn_io *io) {
    bwd_ws w;
    bwd_ws_carve(g, buf, &w);
    head_in in = head_inputs(g, b, h, io->q, io->k, io->v, w.stage);
    bwd_head(g, &w, b, h, &in, io->y, io->lse, io->gy, io->gq, io->gk, io->gv);
}

ts_status ts_attn_backward(const ts_attn_geom *g, void *scratch, size_t scratch_bytes, const void *q, const void *k,
                           const void *v, const float *y, const float *lse, const float *gy, float *gq, float *gk,
                           float *gv) {
    if (g->B * g->H == 0) return TS_OK;
    if (g->T == 0 || g->S == 0) { /* nothing flows: zero gradients */
        for (int64_t b = 0; b < g->B; b++)
            for (int64_t h = 0; h < g->H; h++) {
                for (int64_t i = 0; i < g->T; i++)
                    memset(gq + b * g->qb + h * g->qh + i * g->qt, 0, sizeof(float) * (size_t)g->D);
                for (int64_t s = 0; s < g->S; s++) {
                    memset(gk + b * g->kb + h * g->kh + s * g->ks, 0, sizeof(float) * (size_t)g->D);
                    memset(gv + b * g->kb + h * g->kh + s * g->ks, 0, sizeof(float) * (size_t)g->D);
                }
            }
        return TS_OK;
    }
    /* y and lse are only read by bwd_head (attn_io holds the forward's writable pointers) */
    attn_io io = {.q = q, .k = k, .v = v, .gy = gy, .y = (float *)y, .lse = (float *)lse, .gq = gq, .gk = gk, .gv = gv};
    return over_heads(g, scratch, scratch_bytes, 1, bwd_run, &io, "attention_grad");
}

size_t ts_attn_scratch(const ts_attn_geom *g, int backward) {
    return per_thread(g, backward) * (size_t)omp_get_max_threads();
}
