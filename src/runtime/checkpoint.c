/*
 * checkpoint.c — a program's parameters to and from safetensors files, by Hugging Face name:
 * ts_program_load (with f32 / bf16 / f16 conversion, strict or partial) and ts_program_save
 * (atomic, in f32, bf16 or f16). Calls program.c (ts_value_read / ts_value_write), the top of
 * the runtime's files; called by none of them.
 */
#include "io/safetensors.h"
#include "runtime/program.h"

#include <stdio.h>

static int is_float(ts_dtype t) { return t == TS_F32 || t == TS_BF16 || t == TS_F16; }

static float load_f(ts_dtype t, const uint8_t *p) {
    if (t == TS_F32) { float f; memcpy(&f, p, 4); return f; }
    uint16_t h;
    memcpy(&h, p, 2);
    return t == TS_BF16 ? ts_bf16_f32(h) : ts_f16_f32(h);
}

static void store_f(ts_dtype t, uint8_t *p, float f) {
    if (t == TS_F32) { memcpy(p, &f, 4); return; }
    uint16_t h = t == TS_BF16 ? ts_f32_bf16(f) : ts_f32_f16(f);
    memcpy(p, &h, 2);
}

void ts_st_convert(ts_dtype from, const void *src, ts_dtype to, void *dst, int64_t n) {
    size_t a = ts_dtype_size(from), b = ts_dtype_size(to);
    const uint8_t *s = src;
    uint8_t *d = dst;
    for (int64_t i = 0; i < n; i++) store_f(to, d + (size_t)i * b, load_f(from, s + (size_t)i * a));
}

/* Count the NaN and +-inf elements of n floats of dtype t at p; *first gets the index of the first
 * (or -1). Exponent bits all ones is what makes a float non-finite, in all three formats. */
static int64_t count_nonfinite(ts_dtype t, const uint8_t *p, int64_t n, int64_t *first, int64_t *nan) {
    int64_t bad = 0;
    *first = -1, *nan = 0;
    for (int64_t i = 0; i < n; i++) {
        int nf, isnan_;
        if (t == TS_F32) {
            uint32_t u;
            memcpy(&u, p + 4 * i, 4);
            nf = (u & 0x7f800000u) == 0x7f800000u, isnan_ = nf && (u & 0x007fffffu);
        } else {
            uint16_t h;
            memcpy(&h, p + 2 * i, 2);
            uint16_t e = t == TS_BF16 ? 0x7f80u : 0x7c00u, mbits = t == TS_BF16 ? 0x007fu : 0x03ffu;
            nf = (h & e) == e, isnan_ = nf && (h & mbits);
        }
        if (nf && *first < 0) *first = i;
        bad += nf, *nan += isnan_;
    }
    return bad;
}

/* Check every parameter against the file: -1 for one the file lacks, else the entry index. */
static ts_status match_params(const ts_program *p, const ts_safetensors *st, int flags, int *idx, int *nmissing) {
    char b1[160], b2[160], names[400] = "";
    size_t o = 0;
    int missing = 0;
    for (int i = 0; i < p->f.nparams; i++) {
        const ts_val *x = &p->f.g->vals[p->f.params[i]];
        int k = idx[i] = ts_st_find(st, x->name);
        if (k < 0) {
            if (missing++ < 5 && o < sizeof names)
                o += (size_t)snprintf(names + o, sizeof names - o, "%s'%s'", missing > 1 ? ", " : "", x->name);
            continue;
        }
        const ts_st_entry *e = &st->e[k];
        if (e->ndim != x->ndim || memcmp(e->shape, x->shape, sizeof(int64_t) * (size_t)x->ndim) != 0)
            return ts_err(TS_ERR_SHAPE, "%s: tensor '%s': shape %s in the file, but the program's parameter has shape %s",
                          st->path, x->name,
                          e->ndim > TS_MAX_DIMS ? "(rank > 8)" : ts_shape_str(e->ndim, e->shape, b1, sizeof b1),
                          ts_shape_str(x->ndim, x->shape, b2, sizeof b2));
        if (e->dtype != x->dtype && !(is_float(e->dtype) && is_float(x->dtype)))
            return ts_err(TS_ERR_DTYPE, "%s: tensor '%s' is %s in the file; the program's parameter is %s and loads "
                          "only from F32, BF16 or F16", st->path, x->name, ts_st_dtype_name(e->st_dtype),
                          ts_dtype_name(x->dtype));
        int64_t first, nan, n = ts_numel(e->ndim, e->shape);
        int64_t bad = flags & TS_LOAD_ALLOW_NONFINITE ? 0 : count_nonfinite(e->dtype, ts_st_bytes(st, k), n, &first, &nan);
        if (bad)
            return ts_err(TS_ERR_IO, "%s: tensor '%s' holds %lld non-finite value%s of %lld (%lld NaN, %lld inf; the first "
                          "at element %lld): a model with NaN or inf weights computes NaN; it is not loaded (allow it "
                          "with TS_LOAD_ALLOW_NONFINITE)",
                          st->path, x->name, (long long)bad, bad == 1 ? "" : "s", (long long)n, (long long)nan,
                          (long long)(bad - nan), (long long)first);
    }
    *nmissing = missing;
    if ((flags & TS_LOAD_STRICT) && missing)
        return ts_err(TS_ERR_NOT_FOUND, "%s: %d of the program's %d parameters are missing from the file: %s%s", st->path,
                      missing, p->f.nparams, names, missing > 5 ? ", ..." : "");
    return TS_OK;
}

ts_status ts_program_load(ts_program *p, const char *path, int flags, int *nmissing) {
    if (nmissing) *nmissing = 0;
    if (!p || !path) return ts_err(TS_ERR_ARG, "ts_program_load: %s is NULL", p ? "path" : "program");
    ts_safetensors *st = NULL;
    ts_status s = ts_st_open(path, &st);
    if (s) return s;
    int *idx = malloc(sizeof(int) * (size_t)(p->f.nparams + 1)), missing = 0;
    if (!idx) { ts_safetensors_close(st); return ts_err(TS_ERR_NOMEM, "ts_program_load: out of memory"); }
    s = match_params(p, st, flags, idx, &missing);
    void *tmp = NULL;
    for (int i = 0; i < p->f.nparams && !s; i++) {
        if (idx[i] < 0) continue;
        int v = p->f.params[i];
        const ts_val *x = &p->f.g->vals[v];
        const ts_st_entry *e = &st->e[idx[i]];
        const void *src = ts_st_bytes(st, idx[i]);
        size_t bytes = ts_val_bytes(x);
        if (e->dtype != x->dtype) {
            tmp = ts_alloc(bytes, 0);
            if (!tmp) { s = ts_err(TS_ERR_NOMEM, "%s: tensor '%s': out of memory", path, x->name); break; }
            ts_st_convert(e->dtype, src, x->dtype, tmp, ts_val_numel(x));
            src = tmp;
        }
        s = ts_value_write(p, v, src);
        ts_free(tmp);
        tmp = NULL;
    }
    free(idx);
    ts_safetensors_close(st);
    if (!s && nmissing) *nmissing = missing;
    return s;
}

typedef struct save_ctx {
    const ts_program *p;
    ts_dtype dtype;
} save_ctx;

/* Parameter i into dst, converted to the file's dtype. */
static ts_status fill_param(void *c, int i, void *dst) {
    const save_ctx *sc = c;
    const ts_program *p = sc->p;
    int v = p->f.params[i];
    const ts_val *x = &p->f.g->vals[v];
    size_t bytes = ts_val_bytes(x);
    if (x->dtype == sc->dtype) return ts_value_read(p, v, dst);
    void *tmp = ts_alloc(bytes, 0);
    if (!tmp) return ts_err(TS_ERR_NOMEM, "ts_program_save: parameter '%s': out of memory", x->name);
    ts_status s = ts_value_read(p, v, tmp);
    if (!s) ts_st_convert(x->dtype, tmp, sc->dtype, dst, ts_val_numel(x));
    ts_free(tmp);
    return s;
}

ts_status ts_program_save(const ts_program *p, const char *path, ts_dtype dtype) {
    if (!p || !path) return ts_err(TS_ERR_ARG, "ts_program_save: %s is NULL", p ? "path" : "program");
    if (!is_float(dtype))
        return ts_err(TS_ERR_DTYPE, "%s: ts_program_save: dtype %s; parameters are saved as f32, bf16 or f16", path,
                      ts_dtype_name(dtype));
    ts_st_out *t = calloc((size_t)p->f.nparams + 1, sizeof *t);
    if (!t) return ts_err(TS_ERR_NOMEM, "ts_program_save: out of memory");
    for (int i = 0; i < p->f.nparams; i++) {
        const ts_val *x = &p->f.g->vals[p->f.params[i]];
        t[i] = (ts_st_out){x->name, dtype, x->ndim, x->shape, NULL};
    }
    /* "format": "pt" is what Hugging Face transformers expects of a PyTorch-layout checkpoint */
    static const char *const key[] = {"format"}, *const val[] = {"pt"};
    save_ctx sc = {p, dtype};
    ts_status s = ts_st_write(path, p->f.nparams, t, 1, key, val, fill_param, &sc);
    free(t);
    return s;
}
