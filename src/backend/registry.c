/*
 * registry.c — the registered backends (the CPU backend is always the first), the devices opened
 * from them by name, the services tessera gives backends (ts_host: errors, notices to the sink
 * of ts_set_notice_sink, memory, a clock), and the runtime's calls through a backend's table
 * (see backend.h).
 */
#include "backend/backend.h"

#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_BACKENDS 16
#define MAX_DEVICES 256

static const ts_backend_api *backends[MAX_BACKENDS] = {&ts_backend_cpu_api};
static int nbackends = 1;
static ts_device *devices[MAX_DEVICES];
static int ndevices;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

ts_status ts_abi_error(ts_status code, const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return ts_err(code, "%s", msg);
}

/* ------------------------------------------------------------------ the host's services */

static ts_status host_error(ts_status code, const char *msg) { return ts_err(code, "%s", msg ? msg : "(no message)"); }
/* The notices' sink (ts_set_notice_sink): none by default, so the library prints nothing. */
static ts_write_fn notice_write;
static void *notice_ctx;
static pthread_mutex_t notice_lock = PTHREAD_MUTEX_INITIALIZER;

void ts_set_notice_sink(ts_write_fn write, void *ctx) {
    pthread_mutex_lock(&notice_lock);
    notice_write = write, notice_ctx = ctx;
    pthread_mutex_unlock(&notice_lock);
}

/* A notice, "tessera: [warning: ]MSG\n", to the sink (one call, the line whole). */
static void host_log(int level, const char *msg) {
    pthread_mutex_lock(&notice_lock);
    ts_write_fn write = notice_write;
    void *ctx = notice_ctx;
    pthread_mutex_unlock(&notice_lock);
    if (!write) return;
    char line[2048];
    int n = snprintf(line, sizeof line, "tessera: %s%s\n", level ? "warning: " : "", msg ? msg : "");
    if (n < 0) return;
    if ((size_t)n >= sizeof line) n = (int)sizeof line - 1, line[n - 1] = '\n';
    write(ctx, line, (size_t)n);
}
static void *host_alloc(size_t bytes, size_t align) {
    if (!align) align = 64;
    if (align & (align - 1) || align > 4096) return NULL;
    return aligned_alloc(align, (bytes + align - 1) / align * align);
}

const ts_host_api ts_host = {sizeof(ts_host_api), TS_ABI_MAJOR, TS_ABI_MINOR, host_error, host_log, host_alloc, free,
                             ts_now_ns};

/* The entries every backend must have (ABI 2.0). */
static const char *missing_entry(const ts_backend_api *a) {
#define NEED(f) if (!TS_API_HAS(a, f)) return #f
    NEED(device_count);
    NEED(device_open);
    NEED(device_close);
    NEED(alloc);
    NEED(free);
    NEED(copy_to_device);
    NEED(copy_to_host);
    NEED(supports);
    NEED(compile);
    NEED(execute);
    NEED(release);
#undef NEED
    return NULL;
}

ts_status ts_backend_register(const ts_backend_api *api) {
    if (!api) return ts_err(TS_ERR_ARG, "ts_backend_register: api is NULL");
    if (api->struct_size < offsetof(ts_backend_api, abi_minor) + sizeof api->abi_minor)
        return ts_err(TS_ERR_ARG, "ts_backend_register: struct_size %zu is too small to hold the ABI version",
                      api->struct_size);
    const char *name = api->struct_size >= offsetof(ts_backend_api, name) + sizeof api->name && api->name
                           ? api->name : "(unnamed)";
    if (api->abi_major != TS_ABI_MAJOR)
        return ts_err(TS_ERR_UNSUPPORTED, "ts_backend_register: backend '%s' was built for device ABI %d.%d; this "
                      "tessera implements ABI %d.%d, and majors must match (rebuild the backend against this "
                      "tessera's tessera_backend.h)", name, api->abi_major, api->abi_minor, TS_ABI_MAJOR,
                      TS_ABI_MINOR);
    const char *miss = missing_entry(api);
    if (miss) return ts_err(TS_ERR_ARG, "ts_backend_register: backend '%s' has no '%s' (required by ABI 2.0)", name, miss);
    if (!api->name || !*api->name || strchr(api->name, ':') || strchr(api->name, ','))
        return ts_err(TS_ERR_ARG, "ts_backend_register: a backend needs a name without ':' or ','");
    pthread_mutex_lock(&lock);
    ts_status s = TS_OK;
    for (int i = 0; i < nbackends && !s; i++)
        if (!strcmp(backends[i]->name, api->name))
            s = ts_err(TS_ERR_ARG, "ts_backend_register: a backend named '%s' is already registered", api->name);
    if (!s && nbackends == MAX_BACKENDS) s = ts_err(TS_ERR_ARG, "ts_backend_register: more than %d backends", MAX_BACKENDS);
    if (!s) backends[nbackends++] = api;
    pthread_mutex_unlock(&lock);
    return s;
}

int ts_backend_count(void) { return nbackends; }

const ts_backend_api *ts_backend_at(int i) { return i >= 0 && i < nbackends ? backends[i] : NULL; }

static void known_names(char *buf, size_t cap) {
    size_t o = 0;
    buf[0] = 0;
    for (int i = 0; i < nbackends && o < cap; i++)
        o += (size_t)snprintf(buf + o, cap - o, "%s%s", i ? ", " : "", backends[i]->name);
}

static const ts_backend_api *find(const char *name) {
    pthread_mutex_lock(&lock);
    const ts_backend_api *api = NULL;
    for (int i = 0; name && i < nbackends && !api; i++)
        if (!strcmp(backends[i]->name, name)) api = backends[i];
    pthread_mutex_unlock(&lock);
    return api;
}

const ts_backend_api *ts_backend_find(const char *name) {
    const ts_backend_api *api = find(name);
    if (api) return api;
    char known[256];
    known_names(known, sizeof known);
    ts_err(TS_ERR_NOT_FOUND, "unknown device '%s' (this build has: %s)", name ? name : "(null)", known);
    return NULL;
}

const char *ts_devices(void) {
    static char buf[256];
    known_names(buf, sizeof buf);
    return buf;
}

/* At exit, every device opened is synchronised and closed, newest first (a plugin's driver may
 * keep state that wants its close: OpenCL's queues and contexts). */
static void close_devices(void) {
    pthread_mutex_lock(&lock);
    while (ndevices > 0) {
        ts_device *d = devices[--ndevices];
        ts_dev_sync(d);
        d->api->device_close(d->ctx);
        free(d);
    }
    pthread_mutex_unlock(&lock);
}

/* ------------------------------------------------------------------ a crash inside a plugin */

static const int fatal_signals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};
enum { NFATAL = sizeof fatal_signals / sizeof fatal_signals[0] };
static struct sigaction before[NFATAL]; /* the handlers tessera's replaced */

static void say(const char *s) {
    size_t n = strlen(s);
    while (n) {
        ssize_t w = write(2, s, n);
        if (w <= 0) return;
        s += w, n -= (size_t)w;
    }
}

/* Async-signal-safe only: strlen, write, sigaction, raise. Every device in a plugin call is
 * named (a pipeline runs several at once; the crash is in one of them), then the handler that
 * was there before is put back and the signal raised again: blocked while this runs, it is
 * delivered to that handler (the default: the process dies with the signal, as it would have;
 * under AddressSanitizer, its report) when this returns, and a fault re-executed faults again. */
static void crash_report(int sig) {
    const char *name = sig == SIGSEGV ? "SIGSEGV" : sig == SIGBUS ? "SIGBUS" : sig == SIGILL ? "SIGILL"
                       : sig == SIGFPE ? "SIGFPE" : "SIGABRT";
    for (int i = 0; i < ndevices && i < MAX_DEVICES; i++) {
        ts_device *d = devices[i];
        if (!d || !d->inflight) continue;
        say("tessera: fatal signal ");
        say(name);
        say(" inside a backend call: plugin '");
        say(d->api->name);
        say("', ");
        say(d->call);
        say("\n");
    }
    for (int k = 0; k < NFATAL; k++)
        if (fatal_signals[k] == sig) sigaction(sig, &before[k], NULL);
    raise(sig);
}

/* Once, when the first device of a plugin opens (under the registry's lock). */
static void install_crash_report(void) {
    static int done;
    if (done) return;
    done = 1;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = crash_report;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_ONSTACK;
    for (int k = 0; k < NFATAL; k++) sigaction(fatal_signals[k], &sa, &before[k]);
}

ts_device *ts_device_get(const char *name) {
    if (!name || !*name) name = "cpu";
    char back[48];
    const char *colon = strchr(name, ':');
    int index = 0;
    size_t bl = colon ? (size_t)(colon - name) : strlen(name);
    if (bl >= sizeof back) bl = sizeof back - 1;
    memcpy(back, name, bl);
    back[bl] = 0;
    if (colon) {
        char *end;
        long v = strtol(colon + 1, &end, 10);
        if (end == colon + 1 || *end || v < 0 || v > 1000000) {
            ts_err(TS_ERR_ARG, "device '%s': expected <backend> or <backend>:<index>, the index a number >= 0", name);
            return NULL;
        }
        index = (int)v;
    }
    const ts_backend_api *api = find(back);
    if (!api) {
        /* A backend not registered yet: its plugin, from the plugin directories. */
        ts_status ls = ts_backend_load_named(back);
        if (ls == TS_OK) api = find(back);
        if (!api) {
            if (ls == TS_ERR_NOT_FOUND) {
                char known[256], why[640];
                known_names(known, sizeof known);
                snprintf(why, sizeof why, "%s", ts_last_error());
                ts_err(TS_ERR_NOT_FOUND, "unknown device '%s' (this build has: %s; %s)", back, known, why);
            }
            return NULL;
        }
    }
    pthread_mutex_lock(&lock);
    ts_device *d = NULL;
    for (int i = 0; i < ndevices && !d; i++)
        if (devices[i]->api == api && devices[i]->index == index && !devices[i]->is_fallback) d = devices[i];
    if (!d) {
        int count = api->device_count();
        if (index >= count) {
            ts_err(TS_ERR_NOT_FOUND, "device '%s': backend '%s' has %d device%s (%s:0 .. %s:%d)", name, api->name, count,
                   count == 1 ? "" : "s", api->name, api->name, count - 1);
        } else if (ndevices == MAX_DEVICES) {
            ts_err(TS_ERR_ARG, "device '%s': more than %d devices opened", name, MAX_DEVICES);
        } else if ((d = calloc(1, sizeof *d))) {
            ts_device_args args = {sizeof args, index};
            d->api = api;
            d->index = index;
            if (index == 0) snprintf(d->name, sizeof d->name, "%s", api->name);
            else snprintf(d->name, sizeof d->name, "%s:%d", api->name, index);
            if (api->device_open(&args, &d->ctx) != TS_OK) {
                free(d);
                d = NULL;
            } else {
                if (!ndevices) atexit(close_devices);
                devices[ndevices++] = d;
                d->guarded = api != &ts_backend_cpu_api;
                if (d->guarded) install_crash_report();
            }
        } else {
            ts_err(TS_ERR_NOMEM, "device '%s': out of memory", name);
        }
    }
    pthread_mutex_unlock(&lock);
    return d;
}

/* ------------------------------------------------------------------ guarded calls */

/* Before a call into d's backend: for a guarded device, what the call is (for an error and for
 * the crash report), and the thread's error count, to tell whether the backend set a message. */
void ts_dev_enter(const ts_device *d, const char *fmt, ...) {
    if (!d->guarded) return;
    ts_device *m = (ts_device *)d;
    int o = snprintf(m->call, sizeof m->call, "device %s: ", d->name);
    va_list ap;
    va_start(ap, fmt);
    if (o > 0 && (size_t)o < sizeof m->call) vsnprintf(m->call + o, sizeof m->call - (size_t)o, fmt, ap);
    va_end(ap);
    m->err_mark = ts_err_count(); /* not cleared: a message of the caller's stays its own */
    __atomic_store_n(&m->inflight, 1, __ATOMIC_SEQ_CST);
}

/* After it: s as it is for the built-in CPU; for a guarded device the failure named, the
 * backend's own message kept (a status outside the enum is TS_ERR_RUNTIME). */
ts_status ts_dev_leave(const ts_device *d, ts_status s) {
    if (!d->guarded) return s;
    ts_device *m = (ts_device *)d;
    __atomic_store_n(&m->inflight, 0, __ATOMIC_SEQ_CST);
    if (s == TS_OK) return s;
    if (s < TS_ERR_ARG || s > TS_ERR_COMM) s = TS_ERR_RUNTIME;
    if (ts_err_count() == m->err_mark)
        return ts_err(s, "%s failed (%s) and the backend '%s' gave no message", m->call, ts_status_name(s),
                      d->api->name);
    return ts_err(s, "%s: %s", m->call, ts_last_error()); /* ts_err formats before it overwrites */
}

ts_device *ts_device_fallback(ts_device *d) {
    pthread_mutex_lock(&lock);
    ts_device *f = d->fallback;
    if (!f && ndevices == MAX_DEVICES) ts_err(TS_ERR_ARG, "device %s: more than %d devices opened", d->name, MAX_DEVICES);
    else if (!f && !(f = calloc(1, sizeof *f))) ts_err(TS_ERR_NOMEM, "device %s: out of memory", d->name);
    else if (!d->fallback) {
        ts_device_args args = {sizeof args, 0};
        f->api = &ts_backend_cpu_api;
        f->is_fallback = 1;
        snprintf(f->name, sizeof f->name, "cpu (fallback of %.20s)", d->name);
        if (f->api->device_open(&args, &f->ctx) != TS_OK) {
            free(f);
            f = NULL;
        } else {
            if (!ndevices) atexit(close_devices);
            devices[ndevices++] = d->fallback = f;
        }
    }
    pthread_mutex_unlock(&lock);
    return f;
}

size_t ts_device_memory(const ts_device *d) { return TS_API_HAS(d->api, memory_bytes) ? d->api->memory_bytes(d->ctx) : 0; }

ts_status ts_dev_alloc(const ts_device *d, size_t bytes, ts_buffer *out) {
    out->offset = 0;
    out->mem = NULL;
    if (!bytes) bytes = 64;
    ts_dev_enter(d, "alloc of %zu bytes", bytes);
    ts_status s = ts_dev_leave(d, d->api->alloc(d->ctx, bytes, &out->mem));
    if (s == TS_OK && !out->mem && d->guarded)
        return ts_err(TS_ERR_RUNTIME, "device %s: alloc of %zu bytes returned OK with a NULL handle (a fault of the "
                      "backend '%s')", d->name, bytes, d->api->name);
    return s;
}

void ts_dev_free(const ts_device *d, ts_buffer *b) {
    if (b->mem) d->api->free(d->ctx, b->mem);
    b->mem = NULL;
}

/* The ABI's thread rule (docs/backend-abi.md "Threads"): calls on one device come from one thread
 * at a time. Always checked: every copy and execute claims its device for its duration (one
 * atomic exchange), and a call that finds its device claimed by another thread fails naming it,
 * instead of two threads racing on one device's stream. */
static ts_status claim(const ts_device *d, const char *what) {
    if (__atomic_exchange_n(&((ts_device *)d)->busy, 1, __ATOMIC_ACQ_REL))
        return ts_err(TS_ERR_RUNTIME, "device %s: %s called while another thread was using the device "
                      "(the one-thread-per-device rule)", d->name, what);
    return TS_OK;
}

static ts_status unclaim(const ts_device *d, ts_status s) {
    __atomic_store_n(&((ts_device *)d)->busy, 0, __ATOMIC_RELEASE);
    return s;
}

ts_status ts_dev_copy_in(const ts_device *d, ts_buffer dst, const void *src, size_t bytes) {
    if (!bytes) return TS_OK;
    ts_status s = claim(d, "copy_to_device");
    if (s) return s;
    ts_dev_enter(d, "copy_to_device of %zu bytes", bytes);
    return unclaim(d, ts_dev_leave(d, d->api->copy_to_device(d->ctx, dst, src, bytes)));
}

ts_status ts_dev_copy_out(const ts_device *d, void *dst, ts_buffer src, size_t bytes) {
    if (!bytes) return TS_OK;
    ts_status s = claim(d, "copy_to_host");
    if (s) return s;
    ts_dev_enter(d, "copy_to_host of %zu bytes", bytes);
    return unclaim(d, ts_dev_leave(d, d->api->copy_to_host(d->ctx, dst, src, bytes)));
}

/* "12 nodes (gather .. add)": which nodes a compile or execute of plan runs. */
#define PLAN_FMT "%d node%s (%s%s%s)"
#define PLAN_ARGS(plan)                                                                                    \
    (plan)->nnodes, (plan)->nnodes == 1 ? "" : "s", (plan)->nnodes ? (plan)->nodes[0].op : "",             \
        (plan)->nnodes > 1 ? " .. " : "", (plan)->nnodes > 1 ? (plan)->nodes[(plan)->nnodes - 1].op : ""

ts_status ts_dev_execute(const ts_device *d, void *exe, const ts_abi_plan *plan, ts_buffer ws, uint64_t step) {
    ts_status s = claim(d, "execute");
    if (s) return s;
    ts_dev_enter(d, "execute of " PLAN_FMT, PLAN_ARGS(plan));
    return unclaim(d, ts_dev_leave(d, d->api->execute(d->ctx, exe, plan, ws, step)));
}

ts_status ts_dev_sync(const ts_device *d) {
    if (!TS_API_HAS(d->api, synchronize)) return TS_OK;
    ts_dev_enter(d, "synchronize");
    return ts_dev_leave(d, d->api->synchronize(d->ctx));
}

ts_status ts_dev_compile(const ts_device *d, const ts_abi_plan *plan, size_t *workspace, void **exe) {
    ts_dev_enter(d, "compile of " PLAN_FMT, PLAN_ARGS(plan));
    return ts_dev_leave(d, d->api->compile(d->ctx, plan, workspace, exe));
}

ts_status ts_dev_copy(const ts_device *dst_dev, ts_buffer dst, const ts_device *src_dev, ts_buffer src, size_t bytes) {
    if (!bytes) return TS_OK;
    if (dst_dev->api == src_dev->api && TS_API_HAS(dst_dev->api, copy_from_device)) {
        ts_status s = claim(dst_dev, "copy_from_device");
        if (!s && src_dev != dst_dev && (s = claim(src_dev, "copy_from_device (its source)"))) unclaim(dst_dev, s);
        if (s) return s;
        s = dst_dev->api->copy_from_device(dst_dev->ctx, dst, src_dev->ctx, src, bytes);
        if (src_dev != dst_dev) unclaim(src_dev, s);
        return unclaim(dst_dev, s);
    }
    void *tmp = ts_alloc(bytes, 0);
    if (!tmp) return ts_err(TS_ERR_NOMEM, "copying %zu bytes from %s to %s: out of memory", bytes, src_dev->name,
                            dst_dev->name);
    ts_status s = ts_dev_copy_out(src_dev, tmp, src, bytes);
    if (!s) s = ts_dev_copy_in(dst_dev, dst, tmp, bytes);
    ts_free(tmp);
    return s;
}
