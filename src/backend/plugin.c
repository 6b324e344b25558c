/*
 * plugin.c — backends loaded at run time: ts_backend_load opens a shared library (dlopen), calls
 * the one symbol it exports (TS_BACKEND_ENTRY) with tessera's services (ts_host, registry.c) and
 * registers the table it returns; ts_backend_load_named finds libtessera-<name>.so in
 * $TESSERA_PLUGIN_PATH, in plugins/ beside the running program or beside libtessera.so (a build
 * tree: build/tessera finds build/plugins/), or in the install's plugin directory. A plugin stays loaded for the life of
 * the process (its devices are open until exit). Each way a load can fail is one message naming
 * the file: missing, not a shared library, not a tessera plugin, another ABI major, an entry
 * missing from its table.
 * Environment read: TESSERA_PLUGIN_PATH (':'-separated folders searched first), a search path
 * only.
 */
#define _GNU_SOURCE /* dladdr */
#include "backend/backend.h"

#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef TS_PLUGIN_DIR
#define TS_PLUGIN_DIR "/usr/local/lib/tessera/plugins"
#endif

#define MAX_PLUGINS 16

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static char *loaded[MAX_PLUGINS]; /* real paths of the plugins loaded */
static int nloaded;

/* Load under the lock: TS_OK, or the error for path (the file exists). */
static ts_status load_locked(const char *path, const char *real) {
    for (int i = 0; i < nloaded; i++)
        if (!strcmp(loaded[i], real)) return TS_OK;
    if (nloaded == MAX_PLUGINS) return ts_err(TS_ERR_ARG, "backend plugin '%s': more than %d plugins", path, MAX_PLUGINS);
    dlerror();
    void *h = dlopen(real, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *why = dlerror();
        return ts_err(TS_ERR_IO, "backend plugin '%s' cannot be loaded as a shared library: %s", path,
                      why ? why : "dlopen failed");
    }
    ts_backend_get_api_fn entry;
    *(void **)&entry = dlsym(h, TS_BACKEND_ENTRY);
    if (!entry) {
        dlclose(h);
        return ts_err(TS_ERR_UNSUPPORTED, "backend plugin '%s' is not a tessera plugin: it exports no %s()", path,
                      TS_BACKEND_ENTRY);
    }
    ts_err_clear();
    const ts_backend_api *api = entry(&ts_host);
    ts_status s = api ? ts_backend_register(api) : TS_ERR_UNSUPPORTED;
    if (s != TS_OK) {
        /* The plugin's table or its code may still be in use by nothing: unloading is safe. */
        char why[768];
        snprintf(why, sizeof why, "%s", ts_last_status() ? ts_last_error() : "its entry returned no table");
        dlclose(h);
        return ts_err(s, "backend plugin '%s': %s", path, why);
    }
    loaded[nloaded++] = strdup(real);
    return TS_OK;
}

ts_status ts_backend_load(const char *path) {
    if (!path || !*path) return ts_err(TS_ERR_ARG, "ts_backend_load: no path given");
    struct stat st;
    if (stat(path, &st) != 0) return ts_err(TS_ERR_NOT_FOUND, "backend plugin '%s': no such file", path);
    if (!S_ISREG(st.st_mode)) return ts_err(TS_ERR_IO, "backend plugin '%s' is not a regular file", path);
    char real[PATH_MAX];
    if (!realpath(path, real)) return ts_err(TS_ERR_IO, "backend plugin '%s': cannot resolve its path", path);
    pthread_mutex_lock(&lock);
    ts_status s = load_locked(path, real);
    pthread_mutex_unlock(&lock);
    return s;
}

/* Try dir/libtessera-<name>.so; 1 when it exists (then *s is the load's status). */
static int try_dir(const char *dir, size_t len, const char *name, ts_status *s) {
    char path[PATH_MAX];
    if (!len) return 0;
    int n = snprintf(path, sizeof path, "%.*s/libtessera-%s.so", (int)len, dir, name);
    struct stat st;
    if (n <= 0 || (size_t)n >= sizeof path || stat(path, &st) != 0) return 0;
    *s = ts_backend_load(path);
    return 1;
}

/* Try plugins/ in the folder of file (the running program, or the library holding tessera). */
static int try_beside(const char *file, const char *name, ts_status *s) {
    const char *slash = file ? strrchr(file, '/') : NULL;
    if (!slash) return 0;
    char dir[PATH_MAX];
    int n = snprintf(dir, sizeof dir, "%.*s/plugins", (int)(slash - file), file);
    return n > 0 && (size_t)n < sizeof dir && try_dir(dir, (size_t)n, name, s);
}

ts_status ts_backend_load_named(const char *name) {
    if (!name || !*name || strchr(name, '/')) return ts_err(TS_ERR_ARG, "ts_backend_load_named: a backend name is needed");
    const char *env = getenv("TESSERA_PLUGIN_PATH");
    ts_status s = TS_OK;
    for (const char *p = env; p && *p;) {
        const char *end = strchr(p, ':');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (try_dir(p, len, name, &s)) return s;
        p = end ? end + 1 : p + len;
    }
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[n > 0 ? n : 0] = 0;
    if (n > 0 && try_beside(exe, name, &s)) return s;
    Dl_info self;
    if (dladdr((void *)ts_backend_load_named, &self) && self.dli_fname && strcmp(self.dli_fname, exe) &&
        try_beside(self.dli_fname, name, &s))
        return s;
    if (try_dir(TS_PLUGIN_DIR, strlen(TS_PLUGIN_DIR), name, &s)) return s;
    return ts_err(TS_ERR_NOT_FOUND, "no plugin libtessera-%s.so in $TESSERA_PLUGIN_PATH (%s), in plugins/ beside the "
                  "program or libtessera, or in %s", name, env && *env ? env : "unset", TS_PLUGIN_DIR);
}
