/*
 * check_kernels.c — a quick check of the OpenCL plugin without tessera's runtime (not installed,
 * not a ctest): dlopens libtessera-opencl.so, calls its entry with a minimal host table, opens
 * opencl:0 and runs single-node plans against results computed here by hand.
 *   build-ocl/ocl_check_kernels [path/to/libtessera-opencl.so]
 * Prints one line per case and exits 1 when any differs.
 */
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tessera_plugin.h"

static ts_status h_error(ts_status code, const char *msg) {
    fprintf(stderr, "plugin error %d: %s\n", (int)code, msg);
    return code;
}
static void h_log(int level, const char *msg) { fprintf(stderr, "plugin: %s\n", msg); }
static void *h_alloc(size_t b, size_t a) { return aligned_alloc(a ? a : 64, (b + 63) / 64 * 64); }
static uint64_t h_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}
static const ts_host_api host = {sizeof(ts_host_api), TS_ABI_MAJOR, TS_ABI_MINOR, h_error, h_log, h_alloc, free, h_now};

static uint64_t mix64(uint64_t z) {
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static uint32_t fmix32(uint32_t h) {
    h ^= h >> 16;
    h *= 0x85ebca6bu;
    h ^= h >> 13;
    h *= 0xc2b2ae35u;
    h ^= h >> 16;
    return h;
}

static const ts_backend_api *api;
static void *dev;
static int failures;

/* A value: dtype, shape, host data (copied in), kind. */
typedef struct tv {
    ts_dtype dt;
    int nd;
    int64_t sh[TS_MAX_DIMS];
    const void *data; /* NULL: output */
} tv;

static size_t esize(ts_dtype t) { return t == TS_F32 || t == TS_I32 ? 4 : t == TS_I64 ? 8 : t == TS_U8 ? 1 : 2; }
static int64_t numel(const tv *v) {
    int64_t n = 1;
    for (int i = 0; i < v->nd; i++) n *= v->sh[i];
    return n;
}

/* Run op on values vs (inputs first, then outputs), compare output 0 (f32) with want. */
static void run1(const char *name, const char *op, int nin, int nout, tv *vs, const int64_t *iattr, int niattr,
                 const float *fattr /* 4 or NULL */, const float *want, uint64_t step) {
    int nv = nin + nout;
    ts_abi_value vals[8];
    ts_abi_node node = {sizeof node, op, 0, nin, nout, {0}, {0}, {0}, {0}, niattr};
    for (int i = 0; i < nin; i++) node.in[i] = vs[i].data || vs[i].nd >= 0 ? i : -1;
    for (int i = 0; i < nout; i++) node.out[i] = nin + i;
    for (int i = 0; i < niattr; i++) node.iattr[i] = iattr[i];
    for (int i = 0; i < 4 && fattr; i++) node.fattr[i] = fattr[i];
    for (int i = 0; i < nv; i++) {
        memset(&vals[i], 0, sizeof vals[i]);
        vals[i].struct_size = sizeof vals[i];
        vals[i].dtype = vs[i].dt;
        vals[i].ndim = vs[i].nd;
        memcpy(vals[i].shape, vs[i].sh, sizeof vs[i].sh);
    }
    if (!api->supports(dev, &node, vals)) {
        printf("FAIL %-28s not supported\n", name);
        failures++;
        return;
    }
    for (int i = 0; i < nv; i++) {
        size_t b = (size_t)numel(&vs[i]) * esize(vs[i].dt);
        api->alloc(dev, b, &vals[i].buf.mem);
        if (i < nin && vs[i].data) api->copy_to_device(dev, vals[i].buf, vs[i].data, b);
    }
    ts_abi_plan plan = {sizeof plan, nv, vals, 1, &node, NULL, NULL, NULL, NULL, NULL};
    size_t ws = 0;
    void *exe = NULL;
    ts_buffer wbuf = {0};
    if (api->compile(dev, &plan, &ws, &exe) || (ws && api->alloc(dev, ws, &wbuf.mem)) ||
        api->execute(dev, exe, &plan, wbuf, step) || api->synchronize(dev)) {
        printf("FAIL %-28s error\n", name);
        failures++;
    } else {
        int64_t n = numel(&vs[nin]);
        float *got = malloc((size_t)n * 4 + 4);
        api->copy_to_host(dev, got, vals[nin].buf, (size_t)n * 4);
        double worst = 0;
        for (int64_t i = 0; i < n; i++) {
            double e = fabs(got[i] - want[i]) / (fabs(want[i]) > 1 ? fabs(want[i]) : 1);
            if (!(e <= worst)) worst = e;
        }
        printf("%s %-28s max rel err %.2g\n", worst < 1e-5 ? "ok  " : "FAIL", name, worst);
        failures += !(worst < 1e-5);
        free(got);
    }
    if (exe) api->release(dev, exe);
    api->free(dev, wbuf.mem);
    for (int i = 0; i < nv; i++) api->free(dev, vals[i].buf.mem);
}

static void checks(void) {
    float a[6] = {1, -2, 3, -4, 5, 6}, b[3] = {10, 20, 30};
    float w[6];
    for (int i = 0; i < 6; i++) w[i] = a[i] + b[i % 3];
    run1("add broadcast [2,3]+[3]", "add", 2, 1,
         (tv[]){{TS_F32, 2, {2, 3}, a}, {TS_F32, 1, {3}, b}, {TS_F32, 2, {2, 3}, NULL}}, NULL, 0, NULL, w, 0);
    for (int i = 0; i < 6; i++) w[i] = a[i] > 0 ? a[i] : 0;
    run1("relu", "relu", 1, 1, (tv[]){{TS_F32, 1, {6}, a}, {TS_F32, 1, {6}, NULL}}, NULL, 0, NULL, w, 0);
    /* matmul [2,3] @ [3,2] */
    float m[6] = {1, 2, 3, 4, 5, 6}, mw[4] = {1 * 1 + 2 * 3 + 3 * 5, 1 * 2 + 2 * 4 + 3 * 6, 4 * 1 + 5 * 3 + 6 * 5,
                                               4 * 2 + 5 * 4 + 6 * 6};
    run1("matmul [2,3]@[3,2]", "matmul", 2, 1,
         (tv[]){{TS_F32, 2, {2, 3}, m}, {TS_F32, 2, {3, 2}, m}, {TS_F32, 2, {2, 2}, NULL}}, NULL, 0, NULL, mw, 0);
    /* batched with bias: [2,1,3] @ [3,2] + [2] */
    float bias[2] = {0.5f, -1}, bw[4];
    for (int i = 0; i < 4; i++) bw[i] = mw[i] + bias[i % 2];
    run1("matmul batched + bias", "matmul", 3, 1,
         (tv[]){{TS_F32, 3, {2, 1, 3}, m}, {TS_F32, 2, {3, 2}, m}, {TS_F32, 1, {2}, bias}, {TS_F32, 3, {2, 1, 2}, NULL}},
         NULL, 0, NULL, bw, 0);
    /* bf16 operands, f32 output (i[3] = 1): small integers are exact in bf16 */
    uint16_t mh[6];
    for (int i = 0; i < 6; i++) {
        uint32_t u;
        memcpy(&u, &m[i], 4);
        mh[i] = (uint16_t)(u >> 16);
    }
    run1("matmul bf16 -> f32", "matmul", 2, 1,
         (tv[]){{TS_BF16, 2, {2, 3}, mh}, {TS_BF16, 2, {3, 2}, mh}, {TS_F32, 2, {2, 2}, NULL}}, (int64_t[]){0, 0, 0, 1},
         4, NULL, mw, 0);
    /* softmax rows */
    float sw[6];
    for (int r = 0; r < 2; r++) {
        float mx = -1e30f, s = 0;
        for (int j = 0; j < 3; j++) mx = fmaxf(mx, a[r * 3 + j]);
        for (int j = 0; j < 3; j++) s += expf(a[r * 3 + j] - mx);
        for (int j = 0; j < 3; j++) sw[r * 3 + j] = expf(a[r * 3 + j] - mx) / s;
    }
    run1("softmax", "softmax", 1, 1, (tv[]){{TS_F32, 2, {2, 3}, a}, {TS_F32, 2, {2, 3}, NULL}}, NULL, 0, NULL, sw, 0);
    /* layer_norm without params */
    float lw[6], eps = 1e-5f;
    for (int r = 0; r < 2; r++) {
        float mu = 0, var = 0;
        for (int j = 0; j < 3; j++) mu += a[r * 3 + j] / 3;
        for (int j = 0; j < 3; j++) var += (a[r * 3 + j] - mu) * (a[r * 3 + j] - mu) / 3;
        for (int j = 0; j < 3; j++) lw[r * 3 + j] = (a[r * 3 + j] - mu) / sqrtf(var + eps);
    }
    run1("layer_norm", "layer_norm", 3, 1,
         (tv[]){{TS_F32, 2, {2, 3}, a}, {TS_F32, -1, {0}, NULL}, {TS_F32, -1, {0}, NULL}, {TS_F32, 2, {2, 3}, NULL}},
         NULL, 0, (float[4]){eps}, lw, 0);
    /* transpose [2,3] -> [3,2] */
    float tw[6] = {1, -4, -2, 5, 3, 6};
    run1("transpose", "transpose", 1, 1, (tv[]){{TS_F32, 2, {2, 3}, a}, {TS_F32, 2, {3, 2}, NULL}},
         (int64_t[]){1, 0}, 2, NULL, tw, 0);
    /* gather rows 2, 0 of [3,2] */
    int32_t ix[2] = {2, 0};
    float gw[4] = {5, 6, 1, -2};
    run1("gather", "gather", 2, 1, (tv[]){{TS_F32, 2, {3, 2}, a}, {TS_I32, 1, {2}, ix}, {TS_F32, 2, {2, 2}, NULL}},
         NULL, 0, NULL, gw, 0);
    /* reduce_sum over axis 0 of [2,3] */
    float rw[3] = {-3, 3, 9};
    run1("reduce_sum axis 0", "reduce_sum", 1, 1, (tv[]){{TS_F32, 2, {2, 3}, a}, {TS_F32, 1, {3}, NULL}},
         (int64_t[]){1, 0}, 2, NULL, rw, 0);
    run1("sum_to [2,3]->[3]", "sum_to", 1, 1, (tv[]){{TS_F32, 2, {2, 3}, a}, {TS_F32, 1, {3}, NULL}},
         (int64_t[]){3}, 1, NULL, rw, 0);
    /* cross_entropy, labels {2, 0} */
    float cw = 0;
    for (int r = 0; r < 2; r++) {
        float mx = -1e30f, s = 0;
        for (int j = 0; j < 3; j++) mx = fmaxf(mx, a[r * 3 + j]);
        for (int j = 0; j < 3; j++) s += expf(a[r * 3 + j] - mx);
        cw += (mx + logf(s) - a[r * 3 + (r ? 0 : 2)]) / 2;
    }
    run1("cross_entropy", "cross_entropy", 2, 1,
         (tv[]){{TS_F32, 2, {2, 3}, a}, {TS_I32, 1, {2}, ix}, {TS_F32, 0, {0}, NULL}}, (int64_t[]){-100}, 1, NULL, &cw, 0);
    /* dropout p = 0.5 over 100000 elements: the mask of src/ops/dropout.c, recomputed here */
    {
        enum { ND = 100000 };
        float *dx = malloc(ND * 4), *dw = malloc(ND * 4);
        uint64_t seed = 1234, salt = 77, step = 5;
        uint64_t key = mix64(mix64(mix64(seed) ^ salt) ^ step);
        uint32_t k0 = (uint32_t)key, k1 = (uint32_t)(key >> 32), thr = (uint32_t)ceil(0.5 * 16777216.0);
        for (int64_t i = 0; i < ND; i++) {
            dx[i] = (float)(i % 17) - 8.f;
            int64_t start = i / 65536 * 65536;
            uint32_t lo = (uint32_t)start, hi = (uint32_t)((uint64_t)start >> 32) ^ k1, j = (uint32_t)(i - start);
            uint32_t h = fmix32(fmix32((lo + j) * 0x9e3779b9u + k0) ^ hi);
            dw[i] = (h >> 8) >= thr ? dx[i] * 2.f : 0.f;
        }
        run1("dropout mask (bitwise)", "dropout", 1, 1, (tv[]){{TS_F32, 1, {ND}, dx}, {TS_F32, 1, {ND}, NULL}},
             (int64_t[]){(int64_t)salt, (int64_t)seed}, 2, (float[4]){0.5f}, dw, step);
        free(dx);
        free(dw);
    }
    /* concat [2,3] and [2,3] along 1 -> [2,6]; slice [2,3] axis 1 [1,3) */
    float cc[12] = {1, -2, 3, 1, -2, 3, -4, 5, 6, -4, 5, 6}, sl[4] = {-2, 3, 5, 6};
    run1("concat axis 1", "concat", 2, 1,
         (tv[]){{TS_F32, 2, {2, 3}, a}, {TS_F32, 2, {2, 3}, a}, {TS_F32, 2, {2, 6}, NULL}}, (int64_t[]){1}, 1, NULL, cc, 0);
    run1("slice axis 1", "slice", 1, 1, (tv[]){{TS_F32, 2, {2, 3}, a}, {TS_F32, 2, {2, 2}, NULL}},
         (int64_t[]){1, 1, 3}, 3, NULL, sl, 0);
    /* cast i64 -> f32 */
    int64_t il[3] = {-7, 0, 123456789};
    float iw[3] = {-7.f, 0.f, 123456789.f};
    run1("cast i64 -> f32", "cast", 1, 1, (tv[]){{TS_I64, 1, {3}, il}, {TS_F32, 1, {3}, NULL}}, (int64_t[]){TS_F32}, 1,
         NULL, iw, 0);
    /* conv2d: x [1,1,3,3] = 1..9, w [1,1,2,2] = {1,0,0,1}, stride 1, no pad -> [1,1,2,2] */
    float cx[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9}, cwt[4] = {1, 0, 0, 1}, cwant[4] = {1 + 5, 2 + 6, 4 + 8, 5 + 9};
    int64_t ca[11] = {1, 1, 0, 0, 0, 0, 1, 1, 1, 0, 0};
    run1("conv2d", "conv2d", 2, 1,
         (tv[]){{TS_F32, 4, {1, 1, 3, 3}, cx}, {TS_F32, 4, {1, 1, 2, 2}, cwt}, {TS_F32, 4, {1, 1, 2, 2}, NULL}}, ca, 11,
         NULL, cwant, 0);
    /* max_pool2d 2x2 stride 1 of the same x */
    float pw[4] = {5, 6, 8, 9};
    int64_t pa[12] = {2, 2, 1, 1, 0, 0, 0, 0, 1, 1, 0, 0};
    run1("max_pool2d", "max_pool2d", 1, 1, (tv[]){{TS_F32, 4, {1, 1, 3, 3}, cx}, {TS_F32, 4, {1, 1, 2, 2}, NULL}}, pa,
         12, NULL, pw, 0);
}

int main(int argc, char **argv) {
    const char *path = argc > 1 ? argv[1] : TS_OCL_PLUGIN;
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "cannot load %s: %s\n", path, dlerror());
        return 2;
    }
    ts_backend_get_api_fn entry = (ts_backend_get_api_fn)dlsym(h, TS_BACKEND_ENTRY);
    api = entry ? entry(&host) : NULL;
    if (!api) return 2;
    printf("%s: %d device(s)\n", api->name, api->device_count());
    ts_device_args da = {sizeof da, 0};
    if (api->device_open(&da, &dev)) return 2;
    checks();
    api->device_close(dev);
    printf("%d failure(s)\n", failures);
    return failures != 0;
}
