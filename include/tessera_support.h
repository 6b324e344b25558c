/*
 * tessera_support.h — what a library built on the core uses to behave as the core does: report an
 * error the same way (status + this thread's message), version its own structs by the struct_size
 * rule of tessera.h, read, join and write files safely, measure time. libtessera_apps is built
 * with these and the rest of tessera.h only.
 */
#ifndef TESSERA_SUPPORT_H
#define TESSERA_SUPPORT_H

#include "tessera_core.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- errors */

/* A failure is recorded with ts_set_error (tessera_core.h), which may be passed ts_last_error()
 * itself to prefix it: `return ts_set_error(ts_last_status(), "%s: %s", path, ts_last_error())`.
 * Clear this thread's last error (ts_last_error() then returns ""). */
TS_API void ts_err_clear(void);

/* ---------------------------------------------------------------- struct versioning */

/* The struct_size rule of tessera.h for a library's own structs. base: the end of the base
 * layout's last field (TS_FIELD_END of it; a constant that never changes), align: the struct's
 * alignment; fn and what name the function and the struct in an error.
 *
 * ts_struct_read: a caller's input struct `in` into *out (out_size bytes, this library's struct):
 * zeroed, then the bytes the caller's struct_size covers copied, at most out_size, so a field
 * beyond the caller's size takes its default (0; a function with other defaults sets them after).
 * A struct_size of 0, or one no larger than base rounded up to align, is the base layout (its
 * tail padding is not read). in NULL: all defaults. Returns TS_OK, or TS_ERR_ARG "FN:
 * WHAT.struct_size is N, less than the B bytes of its base layout; ..." (out is then zeroed). */
TS_API ts_status ts_struct_read(void *out, size_t out_size, const void *in, size_t base, size_t align, const char *fn,
                                const char *what);
/* ts_struct_write: a struct the library filled (filled, filled_size bytes) into the caller's out,
 * whose struct_size the caller set (0: base): min(that, filled_size) bytes written, never more,
 * and out->struct_size set to that count. out must not be NULL. Returns TS_OK, or TS_ERR_ARG for
 * a struct_size below base (the same message), out then left as it was. */
TS_API ts_status ts_struct_write(void *out, const void *filled, size_t filled_size, size_t base, const char *fn,
                                 const char *what);
/* The end of field f of struct type T: where the layout that ends with f ends. */
#define TS_FIELD_END(T, f) (offsetof(T, f) + sizeof(((T *)0)->f))
/* What sizeof gave for T's base layout: TS_BASE_T rounded up to T's alignment. */
#define TS_BASE_SIZEOF(T) ((TS_BASE_##T + _Alignof(T) - 1) / _Alignof(T) * _Alignof(T))
/* The two calls for a struct T whose base is the constant TS_BASE_T, in a function named fn. */
#define TS_STRUCT_READ(out, in, type, fn) \
    ts_struct_read(out, sizeof(type), in, TS_BASE_##type, _Alignof(type), fn, #type)
#define TS_STRUCT_WRITE(out, filled, type, fn) \
    ts_struct_write(out, filled, sizeof(type), TS_BASE_##type, fn, #type)

/* ---------------------------------------------------------------- files and paths */

/* Read the whole file at path into a malloc'd buffer (free it): its bytes, then a NUL (the bytes
 * may hold NULs of their own, so text readers that need a C string check strlen against *len).
 * *len, when len is not NULL, is the number of bytes. It reads until the end, so a pipe or a file
 * that grows while it is read is read whole. Returns the buffer, or NULL with the error set and
 * errno kept from the call that failed (ENOENT: no such file), so that a caller may word the error
 * its own way:
 *   TS_ERR_IO    "PATH: cannot open: STRERROR", "PATH: cannot read: STRERROR" (a directory: "Is a
 *                directory"), or from ts_read_file_max "PATH: larger than MAX bytes" (errno EFBIG)
 *   TS_ERR_NOMEM "PATH: out of memory reading the file" (errno ENOMEM)
 *   TS_ERR_ARG   "ts_read_file: path is NULL" (errno EINVAL) */
TS_API char *ts_read_file(const char *path, size_t *len);
/* ts_read_file refusing a file of more than max bytes (max 0: no limit) without reading more than
 * max + 1 of them: a reader of small files (a config, a profile) given a huge one. */
TS_API char *ts_read_file_max(const char *path, size_t max, size_t *len);

/* Join dir and name into buf (cap bytes): "dir/name", one '/' between (none added when dir ends
 * in '/'; name alone when dir is NULL or ""). Returns TS_OK, or TS_ERR_ARG naming dir and name
 * when the joined path needs more than cap bytes with its NUL (buf is then "", never a truncated
 * path that would read or write another file) or an argument is NULL. */
TS_API ts_status ts_path_join(char *buf, size_t cap, const char *dir, const char *name);

/* The closest of names[0 .. n) to `word` when word is a likely misspelling of it (an edit distance
 * of at most 2: insertions, deletions, substitutions), else the one name that word is a prefix of
 * (of at least 3 characters), else NULL (NULL names are skipped): the "did you mean" of a message
 * about an unknown name. */
TS_API const char *ts_closest_name(const char *word, const char *const *names, int n);

/* Write len bytes of data to path atomically: they go to a temporary file next to it (in the same
 * directory, a name unique in the process and created exclusively), which is fsynced and renamed
 * over path, then the directory is fsynced so the rename survives a crash. Readers see the old
 * file or the new one, never a part. On a failure before the rename the old file is untouched and
 * the temporary removed. Returns TS_OK or, naming path:
 *   TS_ERR_IO    "PATH: cannot create a temporary file next to it: STRERROR" (no such directory,
 *                not writable, name too long), "PATH: write failed: STRERROR" (a full disk, a file
 *                size limit, fsync or close failed), "PATH: cannot move the temporary file into
 *                place: STRERROR" (path is a directory), "PATH: written, but its directory 'DIR'
 *                could not be synced: STRERROR" (the new file is in place; filesystems that cannot
 *                sync a directory, EINVAL or EROFS, are not an error)
 *   TS_ERR_NOMEM "PATH: out of memory"
 *   TS_ERR_ARG   path is NULL, or data is NULL with len > 0 */
TS_API ts_status ts_write_atomic(const char *path, const void *data, size_t len);
/* What ts_write_atomic_with calls to write a file's bytes: into f, the temporary file opened for
 * writing ("wb"). It returns TS_OK, or an error recorded with ts_set_error (which the write returns as
 * is). It may leave a failed write unchecked: after it returns, an error on f (ferror, or fflush
 * failing) is reported as "PATH: write failed: STRERROR", with the errno the body left. */
typedef ts_status (*ts_write_body_fn)(FILE *f, void *ctx);
/* ts_write_atomic for a file written in pieces (a safetensors file tensor by tensor, a PNG through
 * libpng, a vocabulary line by line): body(f, ctx) writes it, then everything is as
 * ts_write_atomic does. Same errors, and the body's own. */
TS_API ts_status ts_write_atomic_with(const char *path, ts_write_body_fn body, void *ctx);


/* mkdir -p DIR: DIR and every missing parent, mode 0777 less the umask. TS_OK when DIR is (or
 * already was) a directory; TS_ERR_IO "creating PATH: STRERROR", "DIR is not a directory", or a
 * path longer than 4095 bytes; TS_ERR_ARG for NULL or "". */
TS_API ts_status ts_make_dirs(const char *dir);

/* ---------------------------------------------------------------- time and text */

/* Seconds on a monotonic clock (CLOCK_MONOTONIC), for durations; the library's one clock. */
TS_API double ts_seconds(void);
/* The product of ndim dims (1 for none). */
static inline int64_t ts_numel(int ndim, const int64_t *shape) {
    int64_t n = 1;
    for (int i = 0; i < ndim; i++) n *= shape[i];
    return n;
}
/* A bf16 value (the high half of an f32) as f32. */
static inline float ts_bf16_f32(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}
/* "[8, 128, 768]" into buf (cap bytes, truncated to fit); returns buf. */
TS_API const char *ts_shape_str(int ndim, const int64_t *shape, char *buf, size_t cap);

#ifdef __cplusplus
}
#endif

#endif /* TESSERA_SUPPORT_H */
