/*
 * profile.c — a device profile (tessera_plan.h: ts_device_profile) as JSON: reading one file with
 * every figure checked (ts_profile_read; errors name the file and the field) and writing one
 * (ts_device_profile_save). The keys are the struct's field names; per-dtype figures are objects
 * {"f32": .., "bf16": .., "f16": ..} (attention_fwd_flops and attention_bwd_flops optional, written
 * only where measured); "gemm" is an array of {"m", "n", "k", "dtype", "flops"};
 * "sources" is {"field": "where the figure came from"}, held in the struct as "field: text" lines.
 * Keys starting with '_' are comments; any other unknown key is an error (a misspelt figure would
 * otherwise be read as missing).
 */
#include "common/app.h"
#include "common/json_number.h"
#include "common/json_type.h"
#include "plan/profile.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

static const char *const DTYPE_KEYS[3] = {"f32", "bf16", "f16"}; /* indexed by ts_dtype */

/* The plain figures: a double (or int when is_int) at `off`, at least `min` (above it when
 * above), required unless optional. */
typedef struct figure {
    const char *key;
    size_t off;
    double min;
    int above, is_int, optional;
} figure;

#define FIG(f, min, above) {#f, offsetof(ts_device_profile, f), min, above, 0, 0}
static const figure FIGURES[] = {
    FIG(memory_bytes, 0, 1), FIG(streaming_bytes, 0, 0), FIG(streaming_bw, 0, 0), FIG(mem_bw, 0, 1),
    FIG(link_bw, 0, 0),      FIG(link_latency, 0, 0),    FIG(host_bw, 0, 0),      FIG(host_latency, 0, 0),
    {"devices_per_host", offsetof(ts_device_profile, devices_per_host), 1, 0, 1, 0},
    FIG(eff_mem, 0, 1),      FIG(node_overhead, 0, 0),
    {"mem_bw_thread", offsetof(ts_device_profile, mem_bw_thread), 0, 0, 0, 1},
};
#undef FIG
/* The other keys: read by their own code below. */
static const char *const OTHER_KEYS[] = {"name",  "description", "measured", "peak_flops", "eff_matmul",
                                         "gemm",  "sources",     "attention_fwd_flops", "attention_bwd_flops"};

/* What a read reports its errors with. */
typedef struct reader {
    const char *fn, *path;
} reader;


/* "FN: PATH: field "FIELD" <message>" as a TS_ERR_ARG. */
__attribute__((format(printf, 3, 4))) static ts_status bad(const reader *r, const char *field, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return ts_set_error(TS_ERR_ARG, "%s: %s: field \"%s\" %s", r->fn, r->path, field, msg);
}

/* j (named field) as a number >= min (> min when above; an integer when is_int). */
static ts_status number(const reader *r, const cJSON *j, const char *field, double min, int above, int is_int,
                        double *out) {
    if (!j) return bad(r, field, "is missing");
    if (!cJSON_IsNumber(j)) return bad(r, field, "must be a number, got %s", ts_json_type(j));
    double v = j->valuedouble;
    if (!isfinite(v)) return bad(r, field, "must be finite");
    if (is_int && (v != floor(v) || v > 1e9)) return bad(r, field, "must be an integer, got %g", v);
    if (above ? !(v > min) : !(v >= min))
        return bad(r, field, "must be %s %g, got %g", above ? ">" : ">=", min, v);
    *out = v;
    return TS_OK;
}

/* An object {"f32": x, "bf16": x, "f16": x} of numbers >= 0 into v[3]. */
static ts_status per_dtype(const reader *r, const cJSON *root, const char *key, double v[3]) {
    const cJSON *o = cJSON_GetObjectItemCaseSensitive(root, key);
    if (!o) return bad(r, key, "is missing (an object {\"f32\": .., \"bf16\": .., \"f16\": ..})");
    if (!cJSON_IsObject(o)) return bad(r, key, "must be an object {\"f32\": .., \"bf16\": .., \"f16\": ..}, got %s", ts_json_type(o));
    for (const cJSON *c = o->child; c; c = c->next) {
        int known = 0;
        for (int d = 0; d < 3; d++) known |= !strcmp(c->string, DTYPE_KEYS[d]);
        if (!known) return bad(r, key, "has \"%s\"; its keys are f32, bf16, f16", c->string);
    }
    for (int d = 0; d < 3; d++) {
        char field[64];
        snprintf(field, sizeof field, "%s.%s", key, DTYPE_KEYS[d]);
        ts_status s = number(r, cJSON_GetObjectItemCaseSensitive(o, DTYPE_KEYS[d]), field, 0, 0, 0, &v[d]);
        if (s) return s;
    }
    return TS_OK;
}

/* A string field into buf[cap]; required or left alone when absent. */
static ts_status string(const reader *r, const cJSON *root, const char *key, int required, char *buf, size_t cap) {
    const cJSON *j = cJSON_GetObjectItemCaseSensitive(root, key);
    if (!j) return required ? bad(r, key, "is missing") : TS_OK;
    if (!cJSON_IsString(j)) return bad(r, key, "must be a string, got %s", ts_json_type(j));
    if (strlen(j->valuestring) >= cap) return bad(r, key, "is longer than %zu characters", cap - 1);
    snprintf(buf, cap, "%s", j->valuestring);
    return TS_OK;
}

/* "gemm": [{"m", "n", "k", "dtype", "flops"}, ...] (optional). */
static ts_status gemm_points(const reader *r, const cJSON *root, ts_device_profile *p) {
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(root, "gemm");
    if (!a) return TS_OK;
    if (!cJSON_IsArray(a)) return bad(r, "gemm", "must be an array, got %s", ts_json_type(a));
    if (cJSON_GetArraySize(a) > TS_PROFILE_MAX_GEMM)
        return bad(r, "gemm", "has %d entries, at most %d", cJSON_GetArraySize(a), TS_PROFILE_MAX_GEMM);
    for (const cJSON *e = a->child; e; e = e->next) {
        char field[64];
        int i = p->ngemm;
        ts_gemm_point *g = &p->gemm[i];
        snprintf(field, sizeof field, "gemm[%d]", i);
        if (!cJSON_IsObject(e)) return bad(r, field, "must be an object {m, n, k, dtype, flops}, got %s", ts_json_type(e));
        static const char *const dims[3] = {"m", "n", "k"};
        int64_t *dst[3] = {&g->m, &g->n, &g->k};
        for (int d = 0; d < 3; d++) {
            double v;
            snprintf(field, sizeof field, "gemm[%d].%s", i, dims[d]);
            ts_status s = number(r, cJSON_GetObjectItemCaseSensitive(e, dims[d]), field, 0, 1, 1, &v);
            if (s) return s;
            *dst[d] = (int64_t)v;
        }
        snprintf(field, sizeof field, "gemm[%d].dtype", i);
        const cJSON *dt = cJSON_GetObjectItemCaseSensitive(e, "dtype");
        int d = 0;
        while (d < 3 && !(cJSON_IsString(dt) && !strcmp(dt->valuestring, DTYPE_KEYS[d]))) d++;
        if (d == 3) return bad(r, field, "must be \"f32\", \"bf16\" or \"f16\"");
        g->dtype = (ts_dtype)d;
        snprintf(field, sizeof field, "gemm[%d].flops", i);
        ts_status s = number(r, cJSON_GetObjectItemCaseSensitive(e, "flops"), field, 0, 1, 0, &g->flops);
        if (s) return s;
        p->ngemm++;
    }
    return TS_OK;
}

/* "sources": {"field": "text", ...} (optional) as "field: text" lines. */
enum { SOURCE_KEY_MAX = 63 };
static ts_status sources(const reader *r, const cJSON *root, ts_device_profile *p) {
    const cJSON *o = cJSON_GetObjectItemCaseSensitive(root, "sources");
    if (!o) return TS_OK;
    if (!cJSON_IsObject(o)) return bad(r, "sources", "must be an object {\"field\": \"source\"}, got %s", ts_json_type(o));
    size_t len = 0;
    for (const cJSON *c = o->child; c; c = c->next) {
        char field[96];
        snprintf(field, sizeof field, "sources.%s", c->string);
        if (!cJSON_IsString(c)) return bad(r, field, "must be a string, got %s", ts_json_type(c));
        if (strchr(c->valuestring, '\n') || strchr(c->string, '\n') || strchr(c->string, ':'))
            return bad(r, field, "must be one line (and its key hold no ':')");
        if (strlen(c->string) > SOURCE_KEY_MAX)
            return bad(r, "sources", "has a key longer than %d characters (a key names a figure)", SOURCE_KEY_MAX);
        int n = snprintf(p->sources + len, sizeof p->sources - len, "%s: %s\n", c->string, c->valuestring);
        if (n < 0 || (size_t)n >= sizeof p->sources - len)
            return bad(r, "sources", "is longer than the %zu characters a profile holds", sizeof p->sources - 1);
        len += (size_t)n;
    }
    return TS_OK;
}

/* Every key of root is one this file knows (or a '_' comment). */
static ts_status known_keys(const reader *r, const cJSON *root) {
    for (const cJSON *c = root->child; c; c = c->next) {
        int known = c->string[0] == '_';
        for (size_t i = 0; i < sizeof FIGURES / sizeof *FIGURES && !known; i++) known = !strcmp(c->string, FIGURES[i].key);
        for (size_t i = 0; i < sizeof OTHER_KEYS / sizeof *OTHER_KEYS && !known; i++) known = !strcmp(c->string, OTHER_KEYS[i]);
        if (!known) return bad(r, c->string, "is not a profile field (see include/tessera_plan.h; '_' keys are comments)");
    }
    return TS_OK;
}

static ts_status parse(const reader *r, const cJSON *root, ts_device_profile *p) {
    if (!cJSON_IsObject(root))
        return ts_set_error(TS_ERR_ARG, "%s: %s: expected a JSON object, got %s", r->fn, r->path, ts_json_type(root));
    ts_status s;
    if ((s = known_keys(r, root)) || (s = string(r, root, "name", 1, p->name, sizeof p->name)) ||
        (s = string(r, root, "description", 0, p->description, sizeof p->description)))
        return s;
    if (!ts_profile_name_ok(p->name))
        return bad(r, "name", "\"%s\" must be 1 to 63 of A-Z a-z 0-9 _ . : + -, not starting with '.'", p->name);
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(root, "measured");
    if (m && !cJSON_IsBool(m)) return bad(r, "measured", "must be true or false, got %s", ts_json_type(m));
    p->measured = cJSON_IsTrue(m);
    for (size_t i = 0; i < sizeof FIGURES / sizeof *FIGURES; i++) {
        const figure *f = &FIGURES[i];
        double v = 0;
        const cJSON *j = cJSON_GetObjectItemCaseSensitive(root, f->key);
        if ((j || !f->optional) && (s = number(r, j, f->key, f->min, f->above, f->is_int, &v))) return s;
        if (f->is_int) *(int *)((char *)p + f->off) = (int)v;
        else *(double *)((char *)p + f->off) = v;
    }
    if ((s = per_dtype(r, root, "peak_flops", p->peak_flops)) || (s = per_dtype(r, root, "eff_matmul", p->eff_matmul)))
        return s;
    int any = 0;
    for (int d = 0; d < 3; d++) {
        any |= p->peak_flops[d] > 0;
        char field[64];
        snprintf(field, sizeof field, "eff_matmul.%s", DTYPE_KEYS[d]);
        if (p->peak_flops[d] > 0 && !(p->eff_matmul[d] > 0))
            return bad(r, field, "must be > 0 where peak_flops.%s is (%g)", DTYPE_KEYS[d], p->peak_flops[d]);
    }
    if (!any) return bad(r, "peak_flops", "is 0 for every dtype: the device computes in none");
    if ((cJSON_GetObjectItemCaseSensitive(root, "attention_fwd_flops") && /* optional: measured profiles only */
         (s = per_dtype(r, root, "attention_fwd_flops", p->attention_fwd_flops))) ||
        (cJSON_GetObjectItemCaseSensitive(root, "attention_bwd_flops") &&
         (s = per_dtype(r, root, "attention_bwd_flops", p->attention_bwd_flops))))
        return s;
    if ((s = gemm_points(r, root, p)) || (s = sources(r, root, p))) return s;
    return TS_OK;
}

/* The whole file as a NUL-terminated string in *text (free it), its length in *n; errors start
 * with fn, a missing file is TS_ERR_NOT_FOUND. */
static ts_status read_text(const char *fn, const char *path, char **text, size_t *n) {
    *text = ts_read_file_max(path, (size_t)1 << 26, n); /* a profile is a few kB; 64 MB is not one */
    if (*text) return TS_OK;
    ts_status s = errno == ENOENT ? TS_ERR_NOT_FOUND : ts_last_status();
    return ts_set_error(s, "%s: %s%s", fn, ts_last_error(), errno == EFBIG ? " (too large for a profile)" : "");
}

ts_status ts_profile_read(const char *fn, const char *path, ts_device_profile *out) {
    size_t n = 0;
    char *text = NULL;
    ts_status s = read_text(fn, path, &text, &n);
    if (s) return s;
    reader r = {fn, path};
    cJSON *root = cJSON_ParseWithLength(text, n);
    if (!root) {
        const char *at = cJSON_GetErrorPtr();
        if (!at || at < text || at > text + n) at = text + n;
        long line = 1, col = 1;
        for (const char *q = text; q < at; q++) col = *q == '\n' ? (line++, 1) : col + 1;
        s = ts_set_error(TS_ERR_IO, "%s: %s: not a JSON profile: invalid JSON at line %ld, column %ld%s", fn, path,
                         line, col, at == text + n ? " (the file ends early)" : "");
    } else {
        ts_device_profile *p = calloc(1, sizeof *p);
        if (!p)
            s = ts_set_error(TS_ERR_NOMEM, "%s: out of memory", fn);
        else {
            p->struct_size = sizeof *p;
            s = parse(&r, root, p);
            if (s == TS_OK) s = TS_STRUCT_WRITE(out, p, ts_device_profile, fn);
            free(p);
        }
    }
    cJSON_Delete(root);
    free(text);
    return s;
}

int ts_profile_name_ok(const char *name) {
    size_t n = name ? strlen(name) : 0;
    if (n == 0 || n > 63 || name[0] == '.') return 0;
    for (size_t i = 0; i < n; i++)
        if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.:+-", name[i])) return 0;
    return 1;
}

/* ---------------------------------------------------------------- writing */

/* mkdir -p the folder path is in. */
static ts_status make_dirs(const char *path) {
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", path);
    char *slash = strrchr(buf, '/');
    if (!slash || slash == buf) return TS_OK;
    *slash = 0;
    for (char *p = buf + 1;; p++) {
        char c = *p;
        if (c != '/' && c != 0) continue;
        *p = 0;
        if (mkdir(buf, 0777) != 0 && errno != EEXIST)
            return ts_set_error(TS_ERR_IO, "ts_device_profile_save: cannot make the folder %s: %s", buf,
                                strerror(errno));
        if (!(*p = c)) break;
    }
    return TS_OK;
}

/* Add key: v to o as the shortest decimal that reads back to exactly v (cJSON's own printing
 * allows an error of one unit in the last place, and a saved profile must load back bit for bit). */
static void add_exact(cJSON *o, const char *key, double v) { cJSON_AddItemToObject(o, key, ts_json_exact(v)); }

static cJSON *dtype_object(const double v[3]) {
    cJSON *o = cJSON_CreateObject();
    for (int d = 0; d < 3; d++) add_exact(o, DTYPE_KEYS[d], v[d]);
    return o;
}

/* The "field: text" lines of p->sources as an object. */
static cJSON *sources_object(const char *lines) {
    cJSON *o = cJSON_CreateObject();
    for (const char *l = lines; *l;) {
        const char *nl = strchr(l, '\n'), *end = nl ? nl : l + strlen(l);
        const char *colon = memchr(l, ':', (size_t)(end - l));
        if (colon) {
            char key[128], text[4096];
            snprintf(key, sizeof key, "%.*s", (int)(colon - l), l);
            const char *t = colon + 1 + (colon + 1 < end && colon[1] == ' ');
            snprintf(text, sizeof text, "%.*s", (int)(end - t), t);
            cJSON_AddStringToObject(o, key, text);
        }
        l = nl ? nl + 1 : end;
    }
    return o;
}

static cJSON *profile_json(const ts_device_profile *p) {
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "name", p->name);
    cJSON_AddStringToObject(root, "description", p->description);
    cJSON_AddBoolToObject(root, "measured", p->measured != 0);
    for (size_t i = 0; i < sizeof FIGURES / sizeof *FIGURES; i++) {
        const figure *f = &FIGURES[i];
        const char *at = (const char *)p + f->off;
        add_exact(root, f->key, f->is_int ? (double)*(const int *)at : *(const double *)at);
    }
    cJSON_AddItemToObject(root, "peak_flops", dtype_object(p->peak_flops));
    cJSON_AddItemToObject(root, "eff_matmul", dtype_object(p->eff_matmul));
    double att = 0;
    for (int d = 0; d < 3; d++) att += p->attention_fwd_flops[d] + p->attention_bwd_flops[d];
    if (att > 0) { /* written only where measured, so that the hand-written profiles read as before */
        cJSON_AddItemToObject(root, "attention_fwd_flops", dtype_object(p->attention_fwd_flops));
        cJSON_AddItemToObject(root, "attention_bwd_flops", dtype_object(p->attention_bwd_flops));
    }
    cJSON *gemm = cJSON_AddArrayToObject(root, "gemm");
    for (int i = 0; i < p->ngemm && i < TS_PROFILE_MAX_GEMM; i++) {
        const ts_gemm_point *g = &p->gemm[i];
        cJSON *e = cJSON_CreateObject();
        cJSON_AddNumberToObject(e, "m", (double)g->m);
        cJSON_AddNumberToObject(e, "n", (double)g->n);
        cJSON_AddNumberToObject(e, "k", (double)g->k);
        cJSON_AddStringToObject(e, "dtype", (unsigned)g->dtype < 3 ? DTYPE_KEYS[g->dtype] : "invalid");
        add_exact(e, "flops", g->flops);
        cJSON_AddItemToArray(gemm, e);
    }
    cJSON_AddItemToObject(root, "sources", sources_object(p->sources));
    return root;
}

/* The name of p's first figure that is not a finite number (NULL when all are): JSON has no NaN. */
static const char *nonfinite_figure(const ts_device_profile *p) {
    for (size_t i = 0; i < sizeof FIGURES / sizeof *FIGURES; i++)
        if (!FIGURES[i].is_int && !isfinite(*(const double *)((const char *)p + FIGURES[i].off))) return FIGURES[i].key;
    for (int d = 0; d < 3; d++) {
        if (!isfinite(p->peak_flops[d])) return "peak_flops";
        if (!isfinite(p->eff_matmul[d])) return "eff_matmul";
    }
    for (int i = 0; i < p->ngemm; i++)
        if (!isfinite(p->gemm[i].flops)) return "gemm";
    return NULL;
}

ts_status ts_device_profile_save(const char *path, const ts_device_profile *p) {
    if (!path || !p) return ts_set_error(TS_ERR_ARG, "ts_device_profile_save: %s is NULL", path ? "p" : "path");
    ts_device_profile pc;
    if (TS_STRUCT_READ(&pc, p, ts_device_profile, "ts_device_profile_save")) return TS_ERR_ARG;
    p = &pc;
    if (!ts_profile_name_ok(p->name))
        return ts_set_error(TS_ERR_ARG, "ts_device_profile_save: the profile's name \"%.63s\" is not a valid name",
                            p->name);
    if ((unsigned)p->ngemm > TS_PROFILE_MAX_GEMM)
        return ts_set_error(TS_ERR_ARG, "ts_device_profile_save: ngemm %d outside 0..%d", p->ngemm,
                            TS_PROFILE_MAX_GEMM);
    const char *bad_figure = nonfinite_figure(p);
    if (bad_figure)
        return ts_set_error(TS_ERR_ARG, "ts_device_profile_save: the figure \"%s\" is not a finite number", bad_figure);
    cJSON *root = profile_json(p);
    char *text = root ? cJSON_Print(root) : NULL;
    cJSON_Delete(root);
    if (!text) return ts_set_error(TS_ERR_NOMEM, "ts_device_profile_save: out of memory writing %s", path);
    size_t n = strlen(text);
    char *withnl = malloc(n + 2);
    if (withnl) memcpy(withnl, text, n), withnl[n] = '\n', withnl[n + 1] = 0;
    cJSON_free(text);
    if (!withnl) return ts_set_error(TS_ERR_NOMEM, "ts_device_profile_save: out of memory writing %s", path);
    ts_status s = make_dirs(path);
    if (!s) s = ts_write_atomic(path, withnl, n + 1);
    free(withnl);
    return s;
}
