/*
 * oot_plugin.c — a backend plugin built out of tree, against an installed tessera's headers
 * alone (tests/test_plugin_oot.sh compiles it with `cc -shared` and nothing of tessera's on the
 * link line): "oot", host memory of its own, f32 add, mul and relu (add and mul with the second
 * operand broadcast over the leading dims). Everything else a program holds runs on the CPU
 * through tessera's fallback. Errors go through the host's services (ts_host_errorf).
 */
#include <stdlib.h>
#include <string.h>

#include "tessera_backend.h"

static const ts_host_api *host;

static int count(void) { return 1; }
static ts_status open_dev(const ts_device_args *a, void **dev) {
    (void)a;
    *dev = (void *)1;
    return TS_OK;
}
static void close_dev(void *dev) { (void)dev; }
static ts_status alloc(void *dev, size_t bytes, void **mem) {
    (void)dev;
    *mem = host->alloc(bytes ? bytes : 64, 64);
    return *mem ? TS_OK : ts_host_errorf(host, TS_ERR_NOMEM, "oot: cannot allocate %zu bytes", bytes);
}
static void release_mem(void *dev, void *mem) { (void)dev, host->free(mem); }
static float *at(ts_buffer b) { return (float *)((char *)b.mem + b.offset); }
static ts_status to_dev(void *dev, ts_buffer d, const void *s, size_t n) { (void)dev, memcpy(at(d), s, n); return TS_OK; }
static ts_status to_host(void *dev, void *d, ts_buffer s, size_t n) { (void)dev, memcpy(d, at(s), n); return TS_OK; }
static int is(const ts_abi_node *n, const char *op) { return !strcmp(n->op, op); }
static int supports(void *dev, const ts_abi_node *n, const ts_abi_value *v) {
    (void)dev;
    for (int k = 0; k < n->nout; k++)
        if (v[n->out[k]].dtype != TS_F32) return 0;
    return is(n, "add") || is(n, "mul") || is(n, "relu");
}
static ts_status compile(void *dev, const ts_abi_plan *p, size_t *ws, void **exe) {
    (void)dev, (void)p;
    *ws = 0;
    *exe = (void *)1;
    return TS_OK;
}
static int64_t numel(const ts_abi_value *v) {
    int64_t n = 1;
    for (int d = 0; d < v->ndim; d++) n *= v->shape[d];
    return n;
}
static ts_status execute(void *dev, void *exe, const ts_abi_plan *p, ts_buffer ws, uint64_t step) {
    (void)dev, (void)exe, (void)ws, (void)step;
    for (int i = 0; i < p->nnodes; i++) {
        const ts_abi_node *n = &p->nodes[i];
        const ts_abi_value *o = &p->values[n->out[0]];
        float *y = at(o->buf), *x = at(p->values[n->in[0]].buf);
        if (is(n, "relu")) {
            for (int64_t k = 0; k < numel(o); k++) y[k] = x[k] > 0 ? x[k] : 0;
            continue;
        }
        const ts_abi_value *b = &p->values[n->in[1]];
        float *w = at(b->buf);
        int64_t nb = numel(b);
        if (nb == 0) return ts_host_errorf(host, TS_ERR_SHAPE, "oot: %s with an empty operand", n->op);
        for (int64_t k = 0; k < numel(o); k++) y[k] = is(n, "mul") ? x[k] * w[k % nb] : x[k] + w[k % nb];
    }
    return TS_OK;
}
static void release(void *dev, void *exe) { (void)dev, (void)exe; }

TS_PLUGIN_EXPORT const ts_backend_api *ts_backend_get_api(const ts_host_api *h) {
    static const ts_backend_api api = {
        .struct_size = sizeof(ts_backend_api), .abi_major = TS_ABI_MAJOR, .abi_minor = TS_ABI_MINOR, .name = "oot",
        .device_count = count, .device_open = open_dev, .device_close = close_dev, .alloc = alloc,
        .free = release_mem, .copy_to_device = to_dev, .copy_to_host = to_host, .supports = supports,
        .compile = compile, .execute = execute, .release = release,
    };
    host = h;
    return &api;
}
