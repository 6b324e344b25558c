/*
 * profile_find.c — finding device profiles by name (tessera_plan.h): the folders looked in, in
 * order ($TESSERA_PROFILE_PATH, the cache of measured profiles, the installed profiles, the source
 * tree's profiles/), ts_device_profile_load (a file, a name, or a device of this machine measured
 * and cached), ts_device_profile_cache_path and ts_device_profile_list.
 * Environment read: TESSERA_PROFILE_PATH (folders searched first), XDG_CACHE_HOME and HOME (where
 * the cache is): search paths only.
 */
#include "common/app.h"
#include "plan/profile.h"
#include "tessera_backend.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

/* Set by CMake: <datadir>/tessera/profiles and this source tree's profiles/. */
#ifndef TS_PROFILE_INSTALL_DIR
#define TS_PROFILE_INSTALL_DIR "/usr/local/share/tessera/profiles"
#endif
#ifndef TS_PROFILE_SOURCE_DIR
#define TS_PROFILE_SOURCE_DIR ""
#endif

#define MAX_FOLDERS 16
#define PATH_CAP 4096

/* The cache folder ($XDG_CACHE_HOME/tessera/profiles, else ~/.cache/tessera/profiles) into buf;
 * 0 when neither variable is set. */
static int cache_dir(char *buf, size_t cap) {
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    int n;
    if (xdg && *xdg) n = snprintf(buf, cap, "%s/tessera/profiles", xdg);
    else if (home && *home) n = snprintf(buf, cap, "%s/.cache/tessera/profiles", home);
    else return 0;
    return n > 0 && (size_t)n < cap;
}

/* The folders looked in, in order, into dirs; returns how many. */
static int folders(char dirs[MAX_FOLDERS][PATH_CAP]) {
    int n = 0;
    const char *env = getenv("TESSERA_PROFILE_PATH");
    for (const char *p = env; p && *p && n < MAX_FOLDERS - 3;) {
        const char *colon = strchr(p, ':'), *end = colon ? colon : p + strlen(p);
        if (end > p && (size_t)(end - p) < PATH_CAP) snprintf(dirs[n++], PATH_CAP, "%.*s", (int)(end - p), p);
        p = colon ? colon + 1 : end;
    }
    if (cache_dir(dirs[n], PATH_CAP)) n++;
    snprintf(dirs[n++], PATH_CAP, "%s", TS_PROFILE_INSTALL_DIR);
    if (*TS_PROFILE_SOURCE_DIR) snprintf(dirs[n++], PATH_CAP, "%s", TS_PROFILE_SOURCE_DIR);
    return n;
}

static int is_file(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

static int is_json_name(const struct dirent *e) {
    size_t n = strlen(e->d_name);
    return n > 5 && e->d_name[0] != '.' && !strcmp(e->d_name + n - 5, ".json");
}

/* Is `name` a device of this machine (a registered backend's, or a plugin's that loads)? */
static int local_device(const char *name) {
    int ok = ts_device_backend(name) != NULL;
    ts_err_clear();
    return ok;
}

ts_status ts_device_profile_cache_path(const char *device, char *path, size_t cap) {
    if (!device || !path)
        return ts_set_error(TS_ERR_ARG, "ts_device_profile_cache_path: %s is NULL", device ? "path" : "device");
    if (!ts_profile_name_ok(device))
        return ts_set_error(TS_ERR_ARG, "ts_device_profile_cache_path: \"%s\" is not a device name", device);
    char dir[PATH_CAP];
    if (!cache_dir(dir, sizeof dir))
        return ts_set_error(TS_ERR_NOT_FOUND, "ts_device_profile_cache_path: neither XDG_CACHE_HOME nor HOME is set");
    int n = snprintf(path, cap, "%s/%s.json", dir, device);
    if (n < 0 || (size_t)n >= cap)
        return ts_set_error(TS_ERR_ARG, "ts_device_profile_cache_path: the path needs %d bytes, cap is %zu", n + 1,
                            cap);
    return TS_OK;
}

/* Is `name` one of the ", "-separated names of list? */
static int listed(const char *list, const char *name) {
    size_t n = strlen(name);
    for (const char *p = list; (p = strstr(p, name)) != NULL; p++)
        if ((p == list || p[-1] == ' ') && (p[n] == ',' || p[n] == 0)) return 1;
    return 0;
}

/* The names of the profiles found (", "-separated, each once) into buf. */
static void known_names(char dirs[MAX_FOLDERS][PATH_CAP], int ndirs, char *buf, size_t cap) {
    size_t len = 0;
    buf[0] = 0;
    for (int d = 0; d < ndirs; d++) {
        struct dirent **ents = NULL;
        int n = scandir(dirs[d], &ents, is_json_name, alphasort);
        for (int i = 0; i < n; i++) {
            char name[256];
            snprintf(name, sizeof name, "%.*s", (int)(strlen(ents[i]->d_name) - 5), ents[i]->d_name);
            if (!listed(buf, name) && len + strlen(name) + 3 < cap)
                len += (size_t)snprintf(buf + len, cap - len, "%s%s", len ? ", " : "", name);
            free(ents[i]);
        }
        free(ents);
    }
}

ts_status ts_device_profile_load(const char *name_or_path, ts_device_profile *out) {
    static const char fn[] = "ts_device_profile_load";
    if (!name_or_path || !out) return ts_set_error(TS_ERR_ARG, "%s: %s is NULL", fn, out ? "name_or_path" : "out");
    size_t len = strlen(name_or_path);
    if (strchr(name_or_path, '/') || (len > 5 && !strcmp(name_or_path + len - 5, ".json")))
        return ts_profile_read(fn, name_or_path, out);
    char (*d)[PATH_CAP] = calloc(MAX_FOLDERS, PATH_CAP); /* 64 kB: not on the stack */
    if (!d) return ts_set_error(TS_ERR_NOMEM, "%s: out of memory", fn);
    int nd = folders(d);
    ts_status s = TS_ERR_NOT_FOUND;
    if (ts_profile_name_ok(name_or_path)) {
        for (int i = 0; i < nd && s == TS_ERR_NOT_FOUND; i++) {
            char path[PATH_CAP + 80];
            snprintf(path, sizeof path, "%s/%s.json", d[i], name_or_path);
            if (is_file(path)) s = ts_profile_read(fn, path, out);
        }
        if (s == TS_ERR_NOT_FOUND && local_device(name_or_path)) {
            s = ts_device_profile_measure(name_or_path, 0, out);
            char path[PATH_CAP + 80];
            /* The cache is a convenience: a profile measured but not cached is still returned. */
            if (s == TS_OK && ts_device_profile_cache_path(name_or_path, path, sizeof path) == TS_OK)
                ts_device_profile_save(path, out);
            if (s == TS_OK) ts_err_clear();
        }
    }
    if (s == TS_ERR_NOT_FOUND) {
        char known[1024], where[1024] = "";
        known_names(d, nd, known, sizeof known);
        for (int i = 0, n = 0; i < nd; i++)
            n += snprintf(where + n, sizeof where - (size_t)n, "%s%s", i ? ", " : "", d[i]);
        s = ts_set_error(TS_ERR_NOT_FOUND,
                         "%s: no device profile named \"%s\" (known: %s; a device of this machine, "
                         "this build's %s, is measured; a file is named by a path or FILE.json; looked in %s)",
                         fn, name_or_path, *known ? known : "none", ts_devices(), where);
    }
    free(d);
    return s;
}

/* "62.5" TFLOP/s, or "-" for a dtype the device does not compute in, into buf. */
static const char *tflops(double f, char *buf, size_t cap) {
    if (f > 0) snprintf(buf, cap, "%.3g", f / 1e12);
    else snprintf(buf, cap, "-");
    return buf;
}

/* One line of the list: the profile at path, or why it could not be read. */
static void list_one(ts_write_fn write, void *ctx, const char *name, const char *path) {
    ts_device_profile *p = calloc(1, sizeof *p);
    char line[1024], a[16], b[16], c[16];
    int n;
    if (p) p->struct_size = sizeof *p;
    if (!p) n = snprintf(line, sizeof line, "%-12s (out of memory)\n", name);
    else if (ts_profile_read("ts_device_profile_list", path, p))
        n = snprintf(line, sizeof line, "%-12s (unreadable: %s)\n", name, ts_last_error());
    else
        n = snprintf(line, sizeof line, "%-12s %8.2f GB  %5s / %5s / %5s  %s%s (%s)\n", name, p->memory_bytes / 1e9,
                     tflops(p->peak_flops[TS_F32], a, sizeof a), tflops(p->peak_flops[TS_BF16], b, sizeof b),
                     tflops(p->peak_flops[TS_F16], c, sizeof c), p->measured ? "measured: " : "", p->description, path);
    free(p);
    write(ctx, line, n < (int)sizeof line ? (size_t)n : sizeof line - 1);
}

ts_status ts_device_profile_list(ts_write_fn write, void *ctx) {
    if (!write) return ts_set_error(TS_ERR_ARG, "ts_device_profile_list: write is NULL");
    char (*d)[PATH_CAP] = calloc(MAX_FOLDERS, PATH_CAP);
    char *seen = calloc(1, 8192);
    if (!d || !seen) {
        free(d), free(seen);
        return ts_set_error(TS_ERR_NOMEM, "ts_device_profile_list: out of memory");
    }
    char head[160];
    int hn = snprintf(head, sizeof head, "%-12s %11s  %-21s  %s\n", "name", "memory", "TFLOP/s f32/bf16/f16", "description (file)");
    write(ctx, head, (size_t)hn);
    int nd = folders(d);
    size_t len = 0;
    for (int i = 0; i < nd; i++) {
        struct dirent **ents = NULL;
        int n = scandir(d[i], &ents, is_json_name, alphasort);
        for (int k = 0; k < n; k++) {
            char name[256], path[PATH_CAP + 300];
            snprintf(name, sizeof name, "%.*s", (int)(strlen(ents[k]->d_name) - 5), ents[k]->d_name);
            snprintf(path, sizeof path, "%s/%s", d[i], ents[k]->d_name);
            if (!listed(seen, name)) { /* the first of a name is the one ts_device_profile_load reads */
                list_one(write, ctx, name, path);
                if (len + strlen(name) + 3 < 8192) len += (size_t)snprintf(seen + len, 8192 - len, "%s%s", len ? ", " : "", name);
            }
            free(ents[k]);
        }
        free(ents);
    }
    /* This build's backends whose device has no profile yet: measured when first loaded. */
    char devs[256];
    snprintf(devs, sizeof devs, "%s", ts_devices());
    for (char *save = NULL, *b = strtok_r(devs, ", ", &save); b; b = strtok_r(NULL, ", ", &save)) {
        if (listed(seen, b)) continue;
        char line[512];
        int n = snprintf(line, sizeof line, "%-12s (a device of this machine, not measured yet: measured when first "
                         "used, or by ts_device_profile_measure on %s)\n", b, b);
        write(ctx, line, n < (int)sizeof line ? (size_t)n : sizeof line - 1);
    }
    free(d);
    free(seen);
    return TS_OK;
}
