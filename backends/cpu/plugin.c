/*
 * plugin.c — the CPU backend built a second time, as a plugin (libtessera-cpuplugin.so): the same
 * kernels as the built-in "cpu" (src/backend/cpu), registered as "cpuplugin" by whichever tessera
 * loads it (ts_backend_load). It carries its own copy of tessera's objects, all of them local to
 * it (plugin.map exports the entry alone), and reports its errors through the host's services.
 * What it is for: the loader and the ABI tested end to end without any device driver —
 * tests/test_plugin_load.c and tests/test_backend_ops.c load it with dlopen.
 *
 * The randomized device. With TESSERA_CPUPLUGIN_FRACTION=F (0 <= F < 1) in the environment when
 * the plugin loads, it claims only a pseudo-random subset of (op, dtype) pairs: about F of them,
 * chosen by TESSERA_CPUPLUGIN_SEED (default 0); tessera runs the rest on its CPU fallback. The
 * nodes it does claim run the CPU's own kernels, so a program on it must give the built-in CPU's
 * results bit for bit, wherever the cuts fall (tests/test_cli_fallback.c). The pair is the node's
 * op and the dtype of its first input (of its output when it has none). A fused chain of unary
 * ops (fused_elementwise) counts as its first step's op, and a matmul or convolution with a fused
 * epilogue as a matmul or convolution: so a fused node is claimed exactly when its producer is,
 * and the fusion pass then builds the CPU's graph (compile.c: a merged node the device refuses is
 * still made when the device refuses its producer too).
 *
 * Faults, for the tests of how tessera reports a plugin's (tests/test_cli_plugin_faults.c): with
 * TESSERA_CPUPLUGIN_FAULT=KIND[:N], the N-th call (default the first) of the kind's entry misbehaves:
 *   alloc-null      alloc returns OK with a NULL handle
 *   alloc-error     alloc fails with the plugin's own message (TS_ERR_NOMEM)
 *   copy            copy_to_device fails with a message (TS_ERR_IO)
 *   execute         execute fails with a message (TS_ERR_RUNTIME)
 *   execute-silent  execute fails without setting any message
 *   crash           execute dies of SIGSEGV (a store to an unmapped address)
 */
#include "backend/backend.h"
#include "tessera_ops.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const ts_backend_api *cpu;
static const ts_host_api *hostp;
static char fault[32]; /* TESSERA_CPUPLUGIN_FAULT's kind, "" for none */
static long fault_at = 1, fault_calls;
static int random_claims;  /* TESSERA_CPUPLUGIN_FRACTION set */
static uint64_t seed;
static uint64_t threshold; /* a pair is claimed when its hash's low 32 bits are below this */

/* splitmix64's finaliser: a well-mixed 64-bit hash of x. */
static uint64_t mix(uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* Is (the op of node, its dtype) in this seed's subset? */
static int claimed(const ts_abi_node *node, const ts_abi_value *values) {
    int64_t op = node->op_id;
    if (!strcmp(node->op, TS_OPNAME_FUSED_ELEMENTWISE)) op = ts_attrs_fused_elementwise_of(node).step_op[0];
    int v = node->nin > 0 && node->in[0] >= 0 ? node->in[0] : node->nout > 0 ? node->out[0] : -1;
    int64_t dt = v >= 0 ? (int64_t)values[v].dtype : -1;
    uint64_t h = mix(mix(seed) ^ mix((uint64_t)op * 131 + (uint64_t)(dt + 1)));
    return (h & 0xffffffffull) < threshold;
}

/* The collectives post to a communicator of the process (src/comm), and the plugin's copy of
 * tessera has a registry of its own, without the host's communicators: they stay on the host. */
static int plugin_supports(void *dev, const ts_abi_node *node, const ts_abi_value *values) {
    if (!strcmp(node->op, "comm_start") || !strcmp(node->op, "comm_wait")) return 0;
    if (random_claims && !claimed(node, values)) return 0;
    return cpu->supports(dev, node, values);
}

/* Is this call of the entry of kind `kind` the one that faults? */
static int faults(const char *kind) {
    if (strcmp(fault, kind) != 0) return 0;
    return __atomic_add_fetch(&fault_calls, 1, __ATOMIC_RELAXED) == fault_at;
}

static int faults_prefix(const char *prefix) {
    return !strncmp(fault, prefix, strlen(prefix)) && faults(fault);
}

static ts_status plugin_alloc(void *dev, size_t bytes, void **mem) {
    if (faults_prefix("alloc")) {
        if (!strcmp(fault, "alloc-null")) return *mem = NULL, TS_OK;
        return hostp->error(TS_ERR_NOMEM, "cpuplugin: the simulated device's memory pool is exhausted");
    }
    return cpu->alloc(dev, bytes, mem);
}

static ts_status plugin_copy_to_device(void *dev, ts_buffer dst, const void *src, size_t bytes) {
    if (faults("copy")) return hostp->error(TS_ERR_IO, "cpuplugin: simulated DMA timeout after 5000 ms");
    return cpu->copy_to_device(dev, dst, src, bytes);
}

static ts_status plugin_execute(void *dev, void *exe, const ts_abi_plan *plan, ts_buffer ws, uint64_t step) {
    if (faults_prefix("execute")) {
        if (!strcmp(fault, "execute-silent")) return TS_ERR_RUNTIME;
        return hostp->error(TS_ERR_RUNTIME, "cpuplugin: simulated kernel launch failure (error -5)");
    }
    static volatile uintptr_t unmapped = 64;
    if (faults("crash")) *(volatile int *)unmapped = 1; /* SIGSEGV */
    return cpu->execute(dev, exe, plan, ws, step);
}

/* TESSERA_CPUPLUGIN_FRACTION and _SEED, read once at load. */
static void read_claims(void) {
    const char *f = getenv("TESSERA_CPUPLUGIN_FRACTION"), *s = getenv("TESSERA_CPUPLUGIN_SEED");
    if (!f || !*f) return;
    double frac = strtod(f, NULL);
    if (!(frac >= 0)) frac = 0;
    if (frac >= 1) return;
    random_claims = 1;
    threshold = (uint64_t)(frac * 4294967296.0);
    seed = s && *s ? strtoull(s, NULL, 10) : 0;
}

TS_PLUGIN_EXPORT const ts_backend_api *ts_backend_get_api(const ts_host_api *host);

const ts_backend_api *ts_backend_get_api(const ts_host_api *host) {
    static ts_backend_api api;
    if (!host || host->struct_size < sizeof(ts_host_api) || host->abi_major != TS_ABI_MAJOR) {
        if (host && host->struct_size >= offsetof(ts_host_api, error) + sizeof host->error && host->error)
            host->error(TS_ERR_UNSUPPORTED, "cpuplugin: built for device ABI " "2.x; the host is another major");
        return NULL;
    }
    read_claims();
    const char *f = getenv("TESSERA_CPUPLUGIN_FAULT");
    if (f && *f) {
        const char *colon = strchr(f, ':');
        size_t n = colon ? (size_t)(colon - f) : strlen(f);
        snprintf(fault, sizeof fault, "%.*s", (int)(n < sizeof fault ? n : sizeof fault - 1), f);
        if (colon && atol(colon + 1) > 0) fault_at = atol(colon + 1);
    }
    hostp = host;
    cpu = ts_cpu_backend_api(host);
    api = *cpu;
    api.name = "cpuplugin";
    api.supports = plugin_supports;
    api.alloc = plugin_alloc;
    api.copy_to_device = plugin_copy_to_device;
    api.execute = plugin_execute;
    return &api;
}
