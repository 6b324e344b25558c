/*
 * safetensors.h — the library-internal side of src/io/safetensors.c, shared with
 * src/runtime/checkpoint.c: the parsed and validated view of a memory-mapped safetensors file
 * (so a checkpoint load converts straight from the mapping, with no extra copy), and the
 * atomic, streaming writer (so a checkpoint save fills one tensor at a time).
 *
 * File format (https://github.com/huggingface/safetensors): an 8-byte little-endian header
 * length N, N bytes of JSON {"name": {"dtype", "shape", "data_offsets": [begin, end]}, ...,
 * "__metadata__": {str: str}} (padded with spaces), then the data buffer; offsets are relative
 * to the start of the data, tensors are row-major little-endian, and the tensors tile the data
 * buffer exactly (sorted by offset, no gaps, no overlaps, nothing after the last).
 */
#ifndef TS_IO_SAFETENSORS_H
#define TS_IO_SAFETENSORS_H

#include "core/core.h"

/* One tensor entry of an open file. */
typedef struct ts_st_entry {
    char *name;
    int st_dtype;             /* index into the file-format dtype table (ts_st_dtype_name) */
    ts_dtype dtype;           /* tessera's dtype, TS_DTYPE_COUNT when tessera has none (F64, I8..) */
    int ndim;                 /* may exceed TS_MAX_DIMS; then shape holds only the first dims */
    int64_t shape[TS_MAX_DIMS];
    uint64_t begin, end;      /* data_offsets, relative to the data buffer */
} ts_st_entry;

struct ts_safetensors {
    char *path;               /* as given to open, for messages */
    void *map;                /* the whole file, PROT_READ (NULL for an empty mapping) */
    size_t map_size;
    const uint8_t *data;      /* start of the data buffer inside the map */
    uint64_t data_size;
    ts_st_entry *e;           /* sorted by name */
    int n;
    char **meta_key, **meta_val; /* __metadata__, sorted by key */
    int nmeta;
};

/* Open, map and validate a file. TS_OK and *out, or an error naming the file (and the tensor). */
ts_status ts_st_open(const char *path, ts_safetensors **out);
/* Index of the tensor named `name` in st->e, or -1. */
int ts_st_find(const ts_safetensors *st, const char *name);
/* The file format's name of a dtype table index ("F32", "BF16", "F64"). */
const char *ts_st_dtype_name(int st_dtype);
/* The file format's name of a tessera dtype ("F32"). */
const char *ts_st_dtype_of(ts_dtype t);
/* Start of entry i's bytes in the mapping (not necessarily aligned: copy with memcpy). */
static inline const void *ts_st_bytes(const ts_safetensors *st, int i) {
    return st->data + st->e[i].begin;
}

/* One tensor to write. Exactly one of data / the writer's fill callback provides the bytes. */
typedef struct ts_st_out {
    const char *name;
    ts_dtype dtype;
    int ndim;
    const int64_t *shape;
    const void *data;         /* numel * dtype size bytes, or NULL: fill(ctx, i, dst) writes them */
} ts_st_out;

/* Writes the bytes of tensor i (t[i].data == NULL) into dst (numel * dtype size bytes). */
typedef ts_status (*ts_st_fill_fn)(void *ctx, int i, void *dst);

/* Write n tensors and nmeta metadata pairs to `path` atomically (temp file in the same directory,
 * fsync, rename, fsync of the directory). Names must be unique and not "__metadata__". On failure
 * the previous file at `path` is untouched and no temp file is left behind. */
ts_status ts_st_write(const char *path, int n, const ts_st_out *t, int nmeta, const char *const *meta_key,
                      const char *const *meta_val, ts_st_fill_fn fill, void *ctx);

/* n elements of float dtype `from` (f32, bf16, f16) at src -> float dtype `to` at dst, rounding
 * to nearest even; src may be unaligned (a mapped file). Defined in runtime/checkpoint.c. */
void ts_st_convert(ts_dtype from, const void *src, ts_dtype to, void *dst, int64_t n);

#endif
