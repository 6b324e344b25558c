/*
 * fileio.h — files and paths for every part of the library (file.c; included by core.h): a whole
 * file read into memory, a path joined with its length checked, a file written atomically. None
 * of them aborts: each failure is an error recorded with ts_err, naming the path.
 */
#ifndef TS_CORE_FILEIO_H
#define TS_CORE_FILEIO_H

#include "tessera.h"

#include <stddef.h>
#include <stdio.h>

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
char *ts_read_file(const char *path, size_t *len);
/* ts_read_file refusing a file of more than max bytes (max 0: no limit) without reading more than
 * max + 1 of them: a reader of small files (a config, a profile) given a huge one. */
char *ts_read_file_max(const char *path, size_t max, size_t *len);

/* Join dir and name into buf (cap bytes): "dir/name", one '/' between (none added when dir ends
 * in '/'; name alone when dir is NULL or ""). Returns TS_OK, or TS_ERR_ARG naming dir and name
 * when the joined path needs more than cap bytes with its NUL (buf is then "", never a truncated
 * path that would read or write another file) or an argument is NULL. */
ts_status ts_path_join(char *buf, size_t cap, const char *dir, const char *name);

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
ts_status ts_write_atomic(const char *path, const void *data, size_t len);
/* What ts_write_atomic_with calls to write a file's bytes: into f, the temporary file opened for
 * writing ("wb"). It returns TS_OK, or an error recorded with ts_err (which the write returns as
 * is). It may leave a failed write unchecked: after it returns, an error on f (ferror, or fflush
 * failing) is reported as "PATH: write failed: STRERROR", with the errno the body left. */
typedef ts_status (*ts_write_body_fn)(FILE *f, void *ctx);
/* ts_write_atomic for a file written in pieces (a safetensors file tensor by tensor, a PNG through
 * libpng, a vocabulary line by line): body(f, ctx) writes it, then everything is as
 * ts_write_atomic does. Same errors, and the body's own. */
ts_status ts_write_atomic_with(const char *path, ts_write_body_fn body, void *ctx);

#endif
