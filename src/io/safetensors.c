/*
 * safetensors.c — reading and writing safetensors files (the Hugging Face checkpoint format).
 *
 * The reader maps the file read-only and validates everything before any use: the header
 * length against the file size, UTF-8 and JSON, each entry's dtype, shape and data_offsets
 * (in range, consistent with shape x dtype size), and that the tensors tile the data buffer
 * exactly as the format's reference implementation requires. Every message names the file and,
 * where there is one, the tensor.
 *
 * The writer emits the header sorted by name (deterministic bytes), padded with spaces to a
 * multiple of 8, the data ordered by element size (largest first) then name so that every
 * tensor is aligned to its element size, and writes atomically: temp file in the same
 * directory, fflush, fsync, rename, fsync of the directory.
 */
#include "io/safetensors.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "safetensors.c assumes a little-endian host (the file format is little-endian)"
#endif

#define ST_MAX_HEADER 100000000ull /* the reference implementation's limit */
#define ST_NO_DTYPE TS_DTYPE_COUNT

/* ---------------------------------------------------------------- dtypes */

static const struct {
    const char *name;
    int bits;
    ts_dtype ts; /* ST_NO_DTYPE: tessera has no such dtype (the file still opens) */
} st_dtypes[] = {
    {"F32", 32, TS_F32},      {"BF16", 16, TS_BF16},       {"F16", 16, TS_F16},
    {"I32", 32, TS_I32},      {"I64", 64, TS_I64},         {"U8", 8, TS_U8},
    {"BOOL", 8, TS_U8},       {"I8", 8, ST_NO_DTYPE},      {"I16", 16, ST_NO_DTYPE},
    {"U16", 16, ST_NO_DTYPE}, {"U32", 32, ST_NO_DTYPE},    {"U64", 64, ST_NO_DTYPE},
    {"F64", 64, ST_NO_DTYPE}, {"C64", 64, ST_NO_DTYPE},    {"F8_E4M3", 8, ST_NO_DTYPE},
    {"F8_E5M2", 8, ST_NO_DTYPE}, {"F8_E8M0", 8, ST_NO_DTYPE}, {"F6_E2M3", 6, ST_NO_DTYPE},
    {"F6_E3M2", 6, ST_NO_DTYPE}, {"F4", 4, ST_NO_DTYPE},
};
#define ST_NDTYPES ((int)(sizeof st_dtypes / sizeof st_dtypes[0]))

const char *ts_st_dtype_name(int st_dtype) {
    return st_dtype >= 0 && st_dtype < ST_NDTYPES ? st_dtypes[st_dtype].name : "?";
}

const char *ts_st_dtype_of(ts_dtype t) {
    static const char *const names[TS_DTYPE_COUNT] = {"F32", "BF16", "F16", "I32", "I64", "U8"};
    return (unsigned)t < TS_DTYPE_COUNT ? names[t] : "?";
}

static int st_dtype_find(const char *s) {
    for (int i = 0; i < ST_NDTYPES; i++)
        if (strcmp(st_dtypes[i].name, s) == 0) return i;
    return -1;
}

/* ---------------------------------------------------------------- reading: helpers */

/* Index of the first byte that is not valid UTF-8, or n. */
static size_t utf8_check(const uint8_t *s, size_t n) {
    size_t i = 0;
    while (i < n) {
        uint8_t c = s[i];
        int len;
        uint8_t lo = 0x80, hi = 0xbf;
        if (c < 0x80) { i++; continue; }
        else if (c >= 0xc2 && c <= 0xdf) len = 1;
        else if (c == 0xe0) { len = 2; lo = 0xa0; }
        else if (c == 0xed) { len = 2; hi = 0x9f; }
        else if (c >= 0xe1 && c <= 0xef) len = 2;
        else if (c == 0xf0) { len = 3; lo = 0x90; }
        else if (c >= 0xf1 && c <= 0xf3) len = 3;
        else if (c == 0xf4) { len = 3; hi = 0x8f; }
        else return i;
        if (n - i <= (size_t)len) return i;
        for (int k = 1; k <= len; k++) {
            uint8_t d = s[i + (size_t)k];
            if (d < (k == 1 ? lo : 0x80) || d > (k == 1 ? hi : 0xbf)) return i;
        }
        i += (size_t)len + 1;
    }
    return n;
}

/* A JSON number that is a non-negative integer exactly representable in a double. */
static int json_uint(const cJSON *j, uint64_t *out) {
    if (!cJSON_IsNumber(j)) return 0;
    double d = j->valuedouble;
    if (!(d >= 0) || d > 9007199254740992.0 || (double)(uint64_t)d != d) return 0;
    *out = (uint64_t)d;
    return 1;
}

/* A short rendering of a JSON value for messages. */
static const char *json_repr(const cJSON *j, char *buf, size_t cap) {
    char *s = j ? cJSON_PrintUnformatted(j) : NULL;
    snprintf(buf, cap, "%s", s ? s : "(missing)");
    if (s && strlen(s) >= cap && cap > 4) memcpy(buf + cap - 4, "...", 4);
    free(s);
    return buf;
}

/* "[2, 3]" from a JSON array of dims (any rank). */
static const char *json_shape_str(const cJSON *arr, char *buf, size_t cap) {
    size_t o = (size_t)snprintf(buf, cap, "[");
    int i = 0;
    for (const cJSON *d = arr ? arr->child : NULL; d && o < cap; d = d->next, i++)
        o += (size_t)snprintf(buf + o, cap - o, i ? ", %.0f" : "%.0f", d->valuedouble);
    if (o < cap) snprintf(buf + o, cap - o, "]");
    return buf;
}

static void st_free(ts_safetensors *st) {
    if (!st) return;
    for (int i = 0; i < st->n; i++) free(st->e[i].name);
    for (int i = 0; i < st->nmeta; i++) { free(st->meta_key[i]); free(st->meta_val[i]); }
    free(st->e);
    free(st->meta_key);
    free(st->meta_val);
    if (st->map) munmap(st->map, st->map_size);
    free(st->path);
    free(st);
}

/* ---------------------------------------------------------------- reading: one entry */

/* Parse and check the entry `j` of tensor `name` into e. */
static ts_status parse_entry(const ts_safetensors *st, const char *name, const cJSON *j, ts_st_entry *e) {
    const char *f = st->path;
    char b1[96], b2[96];
    if (!cJSON_IsObject(j))
        return ts_err(TS_ERR_IO, "%s: tensor '%s': the entry is %s, not an object", f, name, json_repr(j, b1, sizeof b1));
    const cJSON *dt = cJSON_GetObjectItemCaseSensitive(j, "dtype");
    const cJSON *sh = cJSON_GetObjectItemCaseSensitive(j, "shape");
    const cJSON *off = cJSON_GetObjectItemCaseSensitive(j, "data_offsets");
    if (!cJSON_IsString(dt))
        return ts_err(TS_ERR_IO, "%s: tensor '%s': \"dtype\" is %s, not a string", f, name, json_repr(dt, b1, sizeof b1));
    e->st_dtype = st_dtype_find(dt->valuestring);
    if (e->st_dtype < 0)
        return ts_err(TS_ERR_IO, "%s: tensor '%s': unknown dtype \"%s\"", f, name, dt->valuestring);
    e->dtype = st_dtypes[e->st_dtype].ts;

    if (!cJSON_IsArray(sh))
        return ts_err(TS_ERR_IO, "%s: tensor '%s': \"shape\" is %s, not an array", f, name, json_repr(sh, b1, sizeof b1));
    uint64_t numel = 1;
    int overflow = 0;
    e->ndim = 0;
    for (const cJSON *d = sh->child; d; d = d->next, e->ndim++) {
        uint64_t v;
        if (!json_uint(d, &v))
            return ts_err(TS_ERR_IO, "%s: tensor '%s': shape[%d] is %s, not a non-negative integer", f, name,
                          e->ndim, json_repr(d, b1, sizeof b1));
        if (e->ndim < TS_MAX_DIMS) e->shape[e->ndim] = (int64_t)v;
        overflow |= __builtin_mul_overflow(numel, v, &numel);
    }
    uint64_t bits = (uint64_t)st_dtypes[e->st_dtype].bits, nbits;
    if (overflow || __builtin_mul_overflow(numel, bits, &nbits))
        return ts_err(TS_ERR_IO, "%s: tensor '%s': shape %s is too large (its size overflows)", f, name,
                      json_shape_str(sh, b1, sizeof b1));
    if (nbits % 8)
        return ts_err(TS_ERR_IO, "%s: tensor '%s': shape %s of %s does not fill whole bytes", f, name,
                      json_shape_str(sh, b1, sizeof b1), dt->valuestring);

    if (!cJSON_IsArray(off) || cJSON_GetArraySize(off) != 2 || !json_uint(off->child, &e->begin) ||
        !json_uint(off->child->next, &e->end) || e->begin > e->end)
        return ts_err(TS_ERR_IO, "%s: tensor '%s': \"data_offsets\" is %s, expected [begin, end] with 0 <= begin <= end",
                      f, name, json_repr(off, b1, sizeof b1));
    if (e->end > st->data_size)
        return ts_err(TS_ERR_IO, "%s: tensor '%s': data_offsets [%llu, %llu] exceed the file's data size %llu (truncated file?)",
                      f, name, (unsigned long long)e->begin, (unsigned long long)e->end,
                      (unsigned long long)st->data_size);
    if (e->end - e->begin != nbits / 8)
        return ts_err(TS_ERR_IO, "%s: tensor '%s': data_offsets [%llu, %llu] hold %llu bytes, but shape %s of %s needs %llu",
                      f, name, (unsigned long long)e->begin, (unsigned long long)e->end,
                      (unsigned long long)(e->end - e->begin), json_shape_str(sh, b2, sizeof b2),
                      dt->valuestring, (unsigned long long)(nbits / 8));
    e->name = strdup(name);
    if (!e->name) return ts_err(TS_ERR_NOMEM, "%s: out of memory", f);
    return TS_OK;
}

static ts_status parse_metadata(ts_safetensors *st, const cJSON *m) {
    char b[96];
    if (!cJSON_IsObject(m))
        return ts_err(TS_ERR_IO, "%s: \"__metadata__\" is %s, not an object of strings", st->path, json_repr(m, b, sizeof b));
    int n = cJSON_GetArraySize(m);
    st->meta_key = calloc((size_t)n + 1, sizeof(char *));
    st->meta_val = calloc((size_t)n + 1, sizeof(char *));
    if (!st->meta_key || !st->meta_val) return ts_err(TS_ERR_NOMEM, "%s: out of memory", st->path);
    for (const cJSON *kv = m->child; kv; kv = kv->next) {
        if (!cJSON_IsString(kv))
            return ts_err(TS_ERR_IO, "%s: \"__metadata__\" entry '%s' is %s, not a string", st->path, kv->string,
                          json_repr(kv, b, sizeof b));
        st->meta_key[st->nmeta] = strdup(kv->string);
        st->meta_val[st->nmeta] = strdup(kv->valuestring);
        st->nmeta++;
        if (!st->meta_key[st->nmeta - 1] || !st->meta_val[st->nmeta - 1])
            return ts_err(TS_ERR_NOMEM, "%s: out of memory", st->path);
    }
    return TS_OK;
}

/* ---------------------------------------------------------------- reading: the whole header */

static int cmp_name(const void *a, const void *b) {
    return strcmp(((const ts_st_entry *)a)->name, ((const ts_st_entry *)b)->name);
}
static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }
static _Thread_local const ts_st_entry *by_offset_base;
static int cmp_offset(const void *a, const void *b) {
    const ts_st_entry *x = &by_offset_base[*(const int *)a], *y = &by_offset_base[*(const int *)b];
    if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
    if (x->end != y->end) return x->end < y->end ? -1 : 1;
    return strcmp(x->name, y->name);
}

/* The tensors must tile [0, data_size) exactly: sorted by offset, each begins where the last
 * ended, the last ends at the end of the file. */
static ts_status check_tiling(const ts_safetensors *st) {
    const char *f = st->path;
    int *ord = malloc(sizeof(int) * (size_t)(st->n + 1));
    if (!ord) return ts_err(TS_ERR_NOMEM, "%s: out of memory", f);
    for (int i = 0; i < st->n; i++) ord[i] = i;
    by_offset_base = st->e;
    qsort(ord, (size_t)st->n, sizeof(int), cmp_offset);
    uint64_t at = 0;
    ts_status s = TS_OK;
    for (int k = 0; k < st->n && !s; k++) {
        const ts_st_entry *e = &st->e[ord[k]], *prev = k ? &st->e[ord[k - 1]] : NULL;
        if (e->begin < at)
            s = ts_err(TS_ERR_IO, "%s: tensor '%s': data_offsets [%llu, %llu] overlap tensor '%s' [%llu, %llu]", f,
                       e->name, (unsigned long long)e->begin, (unsigned long long)e->end, prev->name,
                       (unsigned long long)prev->begin, (unsigned long long)prev->end);
        else if (e->begin > at)
            s = ts_err(TS_ERR_IO, "%s: tensor '%s': data_offsets [%llu, %llu] leave a gap of %llu bytes after %s%s%s "
                       "(tensors must be contiguous)", f, e->name, (unsigned long long)e->begin,
                       (unsigned long long)e->end, (unsigned long long)(e->begin - at),
                       prev ? "tensor '" : "the start of the data", prev ? prev->name : "", prev ? "'" : "");
        at = e->end;
    }
    if (!s && at != st->data_size && st->n == 0)
        s = ts_err(TS_ERR_IO, "%s: the header lists no tensors, but %llu bytes of data follow it", f,
                   (unsigned long long)st->data_size);
    else if (!s && at != st->data_size)
        s = ts_err(TS_ERR_IO, "%s: %llu bytes of data follow the last tensor '%s' (the data is %llu bytes, the "
                   "tensors end at %llu)", f, (unsigned long long)(st->data_size - at), st->e[ord[st->n - 1]].name,
                   (unsigned long long)st->data_size, (unsigned long long)at);
    free(ord);
    return s;
}

static ts_status parse_header(ts_safetensors *st, const uint8_t *hdr, uint64_t len) {
    const char *f = st->path;
    size_t bad = utf8_check(hdr, (size_t)len);
    if (bad < len) return ts_err(TS_ERR_IO, "%s: the header is not valid UTF-8 (byte %zu)", f, bad);
    if (len == 0 || hdr[0] != '{')
        return ts_err(TS_ERR_IO, "%s: the header does not start with '{' (not a safetensors file?)", f);
    char *txt = malloc((size_t)len + 1); /* cJSON wants its text NUL-terminated to be safe */
    if (!txt) return ts_err(TS_ERR_NOMEM, "%s: out of memory for a %llu-byte header", f, (unsigned long long)len);
    memcpy(txt, hdr, (size_t)len);
    txt[len] = 0;
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(txt, (size_t)len, &end, 0);
    ts_status s = TS_OK;
    if (!root) {
        s = ts_err(TS_ERR_IO, "%s: the header is not valid JSON (error near byte %td of %llu)", f,
                   end ? end - txt : (ptrdiff_t)0, (unsigned long long)len);
        goto done;
    }
    for (const char *q = end; q < txt + len; q++)
        if (*q != ' ' && *q != '\t' && *q != '\n' && *q != '\r') {
            s = ts_err(TS_ERR_IO, "%s: unexpected bytes after the header's JSON object (byte %td)", f, q - txt);
            goto done;
        }
    if (!cJSON_IsObject(root)) {
        s = ts_err(TS_ERR_IO, "%s: the header is not a JSON object", f);
        goto done;
    }
    int count = cJSON_GetArraySize(root), nmeta = 0;
    st->e = calloc((size_t)count + 1, sizeof(ts_st_entry));
    if (!st->e) { s = ts_err(TS_ERR_NOMEM, "%s: out of memory", f); goto done; }
    for (const cJSON *it = root->child; it && !s; it = it->next) {
        if (strcmp(it->string, "__metadata__") == 0) {
            if (nmeta++) s = ts_err(TS_ERR_IO, "%s: \"__metadata__\" appears twice in the header", f);
            else s = parse_metadata(st, it);
        } else {
            s = parse_entry(st, it->string, it, &st->e[st->n]);
            if (!s) st->n++;
        }
    }
    if (s) goto done;
    qsort(st->e, (size_t)st->n, sizeof(ts_st_entry), cmp_name);
    for (int i = 1; i < st->n && !s; i++)
        if (strcmp(st->e[i - 1].name, st->e[i].name) == 0)
            s = ts_err(TS_ERR_IO, "%s: tensor '%s' appears twice in the header", f, st->e[i].name);
    if (s) goto done;
    /* metadata pairs sorted by key (insertion sort: there are few) */
    for (int i = 1; i < st->nmeta; i++)
        for (int j = i; j > 0 && strcmp(st->meta_key[j - 1], st->meta_key[j]) > 0; j--) {
            char *k = st->meta_key[j], *v = st->meta_val[j];
            st->meta_key[j] = st->meta_key[j - 1]; st->meta_val[j] = st->meta_val[j - 1];
            st->meta_key[j - 1] = k; st->meta_val[j - 1] = v;
        }
    for (int i = 1; i < st->nmeta && !s; i++)
        if (strcmp(st->meta_key[i - 1], st->meta_key[i]) == 0)
            s = ts_err(TS_ERR_IO, "%s: \"__metadata__\" key '%s' appears twice", f, st->meta_key[i]);
    if (!s) s = check_tiling(st);
done:
    cJSON_Delete(root);
    free(txt);
    return s;
}

ts_status ts_st_open(const char *path, ts_safetensors **out) {
    if (!out) return ts_err(TS_ERR_ARG, "ts_safetensors_open: out is NULL");
    *out = NULL;
    if (!path) return ts_err(TS_ERR_ARG, "ts_safetensors_open: path is NULL");
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return ts_err(TS_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        int e = errno;
        close(fd);
        return ts_err(TS_ERR_IO, "%s: cannot stat: %s", path, strerror(e));
    }
    if (!S_ISREG(sb.st_mode)) {
        close(fd);
        return ts_err(TS_ERR_IO, "%s: not a regular file", path);
    }
    uint64_t size = (uint64_t)sb.st_size;
    if (size < 8) {
        close(fd);
        return ts_err(TS_ERR_IO, "%s: the file is %llu bytes, too short to hold the 8-byte header length (truncated file?)",
                      path, (unsigned long long)size);
    }
    ts_safetensors *st = calloc(1, sizeof *st);
    if (!st || !(st->path = strdup(path))) {
        free(st);
        close(fd);
        return ts_err(TS_ERR_NOMEM, "%s: out of memory", path);
    }
    void *map = mmap(NULL, (size_t)size, PROT_READ, MAP_PRIVATE, fd, 0);
    int merr = errno;
    close(fd);
    if (map == MAP_FAILED) {
        st_free(st);
        return ts_err(TS_ERR_IO, "%s: cannot map %llu bytes: %s", path, (unsigned long long)size, strerror(merr));
    }
    st->map = map;
    st->map_size = (size_t)size;
    const uint8_t *b = map;
    uint64_t hlen;
    memcpy(&hlen, b, 8);
    ts_status s = TS_OK;
    if (hlen > ST_MAX_HEADER)
        s = ts_err(TS_ERR_IO, "%s: header length %llu exceeds the format's limit of %llu bytes (not a safetensors file?)",
                   path, (unsigned long long)hlen, ST_MAX_HEADER);
    else if (hlen > size - 8)
        s = ts_err(TS_ERR_IO, "%s: header length %llu exceeds the %llu bytes that follow it in the file (truncated file?)",
                   path, (unsigned long long)hlen, (unsigned long long)(size - 8));
    if (!s) {
        st->data = b + 8 + hlen;
        st->data_size = size - 8 - hlen;
        s = parse_header(st, b + 8, hlen);
    }
    if (s) {
        st_free(st);
        return s;
    }
    *out = st;
    return TS_OK;
}

int ts_st_find(const ts_safetensors *st, const char *name) {
    int lo = 0, hi = st->n - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2, c = strcmp(st->e[mid].name, name);
        if (c == 0) return mid;
        if (c < 0) lo = mid + 1;
        else hi = mid - 1;
    }
    return -1;
}

/* ---------------------------------------------------------------- reading: public API */

ts_safetensors *ts_safetensors_open(const char *path) {
    ts_safetensors *st = NULL;
    return ts_st_open(path, &st) == TS_OK ? st : NULL;
}

void ts_safetensors_close(ts_safetensors *st) { st_free(st); }

int ts_safetensors_count(const ts_safetensors *st) { return st ? st->n : 0; }

const char *ts_safetensors_name(const ts_safetensors *st, int i) {
    return st && i >= 0 && i < st->n ? st->e[i].name : NULL;
}

const char *ts_safetensors_metadata(const ts_safetensors *st, const char *key) {
    if (!st || !key) return NULL;
    for (int i = 0; i < st->nmeta; i++)
        if (strcmp(st->meta_key[i], key) == 0) return st->meta_val[i];
    return NULL;
}

/* The entry, or an error naming the file and the tensor. */
static ts_status lookup(const ts_safetensors *st, const char *name, const char *fn, const ts_st_entry **out) {
    if (!st || !name) return ts_err(TS_ERR_ARG, "%s: %s is NULL", fn, st ? "name" : "file");
    int i = ts_st_find(st, name);
    if (i < 0)
        return ts_err(TS_ERR_NOT_FOUND, "%s: no tensor named '%s' (the file holds %d)", st->path, name, st->n);
    const ts_st_entry *e = &st->e[i];
    if (e->dtype == ST_NO_DTYPE)
        return ts_err(TS_ERR_UNSUPPORTED, "%s: tensor '%s' has dtype %s, which tessera does not support", st->path,
                      name, ts_st_dtype_name(e->st_dtype));
    if (e->ndim > TS_MAX_DIMS)
        return ts_err(TS_ERR_UNSUPPORTED, "%s: tensor '%s' has rank %d, more than TS_MAX_DIMS (%d)", st->path, name,
                      e->ndim, TS_MAX_DIMS);
    *out = e;
    return TS_OK;
}

ts_status ts_safetensors_info(const ts_safetensors *st, const char *name, ts_dtype *dtype, int *ndim,
                              int64_t shape[TS_MAX_DIMS]) {
    const ts_st_entry *e = NULL;
    ts_status s = lookup(st, name, "ts_safetensors_info", &e);
    if (s) return s;
    if (dtype) *dtype = e->dtype;
    if (ndim) *ndim = e->ndim;
    if (shape) memcpy(shape, e->shape, sizeof(int64_t) * (size_t)e->ndim);
    return TS_OK;
}

ts_status ts_safetensors_get(const ts_safetensors *st, const char *name, ts_tensor **out) {
    if (!out) return ts_err(TS_ERR_ARG, "ts_safetensors_get: out is NULL");
    *out = NULL;
    const ts_st_entry *e = NULL;
    ts_status s = lookup(st, name, "ts_safetensors_get", &e);
    if (s) return s;
    ts_tensor *t = ts_tensor_new(e->dtype, e->ndim, e->shape);
    if (!t) return ts_err(TS_ERR_NOMEM, "%s: tensor '%s': out of memory for %llu bytes", st->path, name,
                          (unsigned long long)(e->end - e->begin));
    memcpy(t->data, st->data + e->begin, (size_t)(e->end - e->begin));
    *out = t;
    return TS_OK;
}

/* ---------------------------------------------------------------- writing: the header */

typedef struct sbuf {
    char *p;
    size_t n, cap;
    int oom;
} sbuf;

static void sb_put(sbuf *b, const char *s, size_t n) {
    if (b->oom) return;
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + n + 1) cap *= 2;
        char *q = realloc(b->p, cap);
        if (!q) { b->oom = 1; return; }
        b->p = q;
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
}
static void sb_str(sbuf *b, const char *s) { sb_put(b, s, strlen(s)); }
static void sb_u64(sbuf *b, uint64_t v) {
    char t[24];
    sb_put(b, t, (size_t)snprintf(t, sizeof t, "%llu", (unsigned long long)v));
}
/* A JSON string literal. */
static void sb_json_str(sbuf *b, const char *s) {
    sb_put(b, "\"", 1);
    for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
        char t[8];
        if (*c == '"' || *c == '\\') { t[0] = '\\'; t[1] = (char)*c; sb_put(b, t, 2); }
        else if (*c < 0x20) sb_put(b, t, (size_t)snprintf(t, sizeof t, "\\u%04x", *c));
        else sb_put(b, (const char *)c, 1);
    }
    sb_put(b, "\"", 1);
}

/* Per-tensor byte counts and offsets, and the two orders: header (by name), data (by size). */
typedef struct wctx {
    uint64_t *nbytes, *begin;
    int *by_name, *by_data;
} wctx;
static _Thread_local const ts_st_out *sort_out;
static int cmp_out_name(const void *a, const void *b) {
    return strcmp(sort_out[*(const int *)a].name, sort_out[*(const int *)b].name);
}
static int cmp_out_data(const void *a, const void *b) {
    const ts_st_out *x = &sort_out[*(const int *)a], *y = &sort_out[*(const int *)b];
    size_t sx = ts_dtype_size(x->dtype), sy = ts_dtype_size(y->dtype);
    if (sx != sy) return sx > sy ? -1 : 1;
    return strcmp(x->name, y->name);
}

/* ---------------------------------------------------------------- writing: atomically */

/* What write_file writes: the header, then the tensors in data order (a tensor without data
 * filled by fill into scratch). */
typedef struct wbody {
    const char *path;
    const sbuf *hdr;
    int n;
    const ts_st_out *t;
    const wctx *w;
    ts_st_fill_fn fill;
    void *ctx;
} wbody;

static ts_status write_body(FILE *fp, void *c) {
    const wbody *b = c;
    const ts_st_out *t = b->t;
    uint64_t hlen = b->hdr->n;
    if (fwrite(&hlen, 8, 1, fp) != 1 || fwrite(b->hdr->p, 1, b->hdr->n, fp) != b->hdr->n) return TS_ERR_IO;
    for (int k = 0; k < b->n; k++) {
        int i = b->w->by_data[k];
        size_t nb = (size_t)b->w->nbytes[i];
        const void *src = t[i].data;
        void *scratch = NULL;
        if (!src && nb) {
            if (!(scratch = ts_alloc(nb, 0)))
                return ts_err(TS_ERR_NOMEM, "%s: tensor '%s': out of memory for %zu bytes", b->path, t[i].name, nb);
            ts_status s = b->fill(b->ctx, i, scratch);
            if (s) { ts_free(scratch); return s; }
            src = scratch;
        }
        size_t put = nb ? fwrite(src, 1, nb, fp) : 0;
        ts_free(scratch);
        if (put != nb) return TS_ERR_IO; /* the write failed: ts_write_atomic_with says so */
    }
    return TS_OK;
}

/* The file, atomically (ts_write_atomic_with: a temporary file next to path, fsynced, renamed,
 * the directory fsynced). */
static ts_status write_file(const char *path, const sbuf *hdr, int n, const ts_st_out *t, const wctx *w,
                            ts_st_fill_fn fill, void *ctx) {
    wbody b = {path, hdr, n, t, w, fill, ctx};
    return ts_write_atomic_with(path, write_body, &b);
}

ts_status ts_st_write(const char *path, int n, const ts_st_out *t, int nmeta, const char *const *meta_key,
                      const char *const *meta_val, ts_st_fill_fn fill, void *ctx) {
    if (!path || n < 0 || (n && !t) || nmeta < 0 || (nmeta && (!meta_key || !meta_val)))
        return ts_err(TS_ERR_ARG, "ts_safetensors_save: %s", !path ? "path is NULL" : "bad tensor or metadata list");
    for (int i = 0; i < n; i++) {
        if (!t[i].name) return ts_err(TS_ERR_ARG, "%s: tensor %d has no name", path, i);
        if (strcmp(t[i].name, "__metadata__") == 0)
            return ts_err(TS_ERR_ARG, "%s: \"__metadata__\" cannot be a tensor name", path);
        if ((unsigned)t[i].dtype >= TS_DTYPE_COUNT || t[i].ndim < 0 || t[i].ndim > TS_MAX_DIMS ||
            (t[i].ndim && !t[i].shape) || (!t[i].data && !fill))
            return ts_err(TS_ERR_ARG, "%s: tensor '%s': bad dtype, shape or data", path, t[i].name);
        for (int d = 0; d < t[i].ndim; d++)
            if (t[i].shape[d] < 0) return ts_err(TS_ERR_ARG, "%s: tensor '%s': negative dim", path, t[i].name);
    }
    for (int i = 0; i < nmeta; i++)
        if (!meta_key[i] || !meta_val[i]) return ts_err(TS_ERR_ARG, "%s: metadata entry %d is NULL", path, i);
    wctx w = {calloc((size_t)n + 1, 8), calloc((size_t)n + 1, 8), calloc((size_t)n + 1, sizeof(int)),
              calloc((size_t)n + 1, sizeof(int))};
    const char **mk = calloc((size_t)nmeta + 1, sizeof(char *));
    sbuf hdr = {0};
    ts_status s = TS_OK;
    if (!w.nbytes || !w.begin || !w.by_name || !w.by_data || !mk) { s = ts_err(TS_ERR_NOMEM, "%s: out of memory", path); goto done; }
    for (int i = 0; i < n; i++) w.by_name[i] = w.by_data[i] = i;
    sort_out = t;
    qsort(w.by_name, (size_t)n, sizeof(int), cmp_out_name);
    qsort(w.by_data, (size_t)n, sizeof(int), cmp_out_data);
    for (int k = 1; k < n; k++)
        if (strcmp(t[w.by_name[k - 1]].name, t[w.by_name[k]].name) == 0) {
            s = ts_err(TS_ERR_ARG, "%s: tensor name '%s' is given twice", path, t[w.by_name[k]].name);
            goto done;
        }
    uint64_t at = 0;
    for (int k = 0; k < n; k++) {
        int i = w.by_data[k];
        w.nbytes[i] = (uint64_t)ts_numel(t[i].ndim, t[i].shape) * ts_dtype_size(t[i].dtype);
        w.begin[i] = at;
        at += w.nbytes[i];
    }
    /* metadata keys sorted (values follow by index) */
    for (int i = 0; i < nmeta; i++) mk[i] = meta_key[i];
    qsort(mk, (size_t)nmeta, sizeof(char *), cmp_str);
    for (int i = 1; i < nmeta; i++)
        if (strcmp(mk[i - 1], mk[i]) == 0) { s = ts_err(TS_ERR_ARG, "%s: metadata key '%s' is given twice", path, mk[i]); goto done; }

    sb_str(&hdr, "{");
    if (nmeta) {
        sb_str(&hdr, "\"__metadata__\":{");
        for (int i = 0; i < nmeta; i++) {
            int j = 0;
            while (meta_key[j] != mk[i]) j++;
            if (i) sb_str(&hdr, ",");
            sb_json_str(&hdr, mk[i]);
            sb_str(&hdr, ":");
            sb_json_str(&hdr, meta_val[j]);
        }
        sb_str(&hdr, "}");
    }
    for (int k = 0; k < n; k++) {
        int i = w.by_name[k];
        if (k || nmeta) sb_str(&hdr, ",");
        sb_json_str(&hdr, t[i].name);
        sb_str(&hdr, ":{\"dtype\":\"");
        sb_str(&hdr, ts_st_dtype_of(t[i].dtype));
        sb_str(&hdr, "\",\"shape\":[");
        for (int d = 0; d < t[i].ndim; d++) {
            if (d) sb_str(&hdr, ",");
            sb_u64(&hdr, (uint64_t)t[i].shape[d]);
        }
        sb_str(&hdr, "],\"data_offsets\":[");
        sb_u64(&hdr, w.begin[i]);
        sb_str(&hdr, ",");
        sb_u64(&hdr, w.begin[i] + w.nbytes[i]);
        sb_str(&hdr, "]}");
    }
    sb_str(&hdr, "}");
    while (!hdr.oom && hdr.n % 8) sb_str(&hdr, " ");
    if (hdr.oom) { s = ts_err(TS_ERR_NOMEM, "%s: out of memory for the header", path); goto done; }
    s = write_file(path, &hdr, n, t, &w, fill, ctx);
done:
    free(hdr.p);
    free(mk);
    free(w.nbytes);
    free(w.begin);
    free(w.by_name);
    free(w.by_data);
    return s;
}

ts_status ts_safetensors_save(const char *path, int n, const char *const *names, const ts_tensor *const *tensors,
                              const char *metadata_json) {
    if (!path) return ts_err(TS_ERR_ARG, "ts_safetensors_save: path is NULL");
    if (n < 0 || (n && (!names || !tensors))) return ts_err(TS_ERR_ARG, "%s: bad tensor list (n = %d)", path, n);
    ts_st_out *t = calloc((size_t)n + 1, sizeof *t);
    if (!t) return ts_err(TS_ERR_NOMEM, "%s: out of memory", path);
    for (int i = 0; i < n; i++) {
        if (!tensors[i]) {
            free(t);
            return ts_err(TS_ERR_ARG, "%s: tensor %d ('%s') is NULL", path, i, names[i] ? names[i] : "(null)");
        }
        t[i] = (ts_st_out){names[i], tensors[i]->dtype, tensors[i]->ndim, tensors[i]->shape, tensors[i]->data};
    }
    cJSON *meta = NULL;
    const char **mk = NULL, **mv = NULL;
    int nmeta = 0;
    ts_status s = TS_OK;
    if (metadata_json) {
        meta = cJSON_ParseWithOpts(metadata_json, NULL, 1); /* nothing may follow the object */
        if (!cJSON_IsObject(meta)) {
            s = ts_err(TS_ERR_ARG, "%s: metadata is not a JSON object of strings: %s", path, metadata_json);
            goto done;
        }
        int cap = cJSON_GetArraySize(meta);
        mk = calloc((size_t)cap + 1, sizeof(char *));
        mv = calloc((size_t)cap + 1, sizeof(char *));
        if (!mk || !mv) { s = ts_err(TS_ERR_NOMEM, "%s: out of memory", path); goto done; }
        for (const cJSON *kv = meta->child; kv; kv = kv->next) {
            if (!cJSON_IsString(kv)) {
                s = ts_err(TS_ERR_ARG, "%s: metadata value of '%s' is not a string", path, kv->string);
                goto done;
            }
            mk[nmeta] = kv->string;
            mv[nmeta++] = kv->valuestring;
        }
    }
    s = ts_st_write(path, n, t, nmeta, mk, mv, NULL, NULL);
done:
    cJSON_Delete(meta);
    free(mk);
    free(mv);
    free(t);
    return s;
}
