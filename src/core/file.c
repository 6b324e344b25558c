/*
 * file.c — files and paths for the whole library (fileio.h): every whole-file read
 * (ts_read_file), every path joined from a directory and a name (ts_path_join), every file
 * written atomically (ts_write_atomic: config.json and vocab.txt of model directories,
 * safetensors, ONNX models, PNGs): readers see the old file or the new one, never a part. And
 * ts_write_stdio, the ts_write_fn of C callers.
 */
#include "core/core.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ------------------------------------------------------------------ reading */

/* ts_read_file's NULL: the error recorded (a message that names path), errno set to e after it. */
static char *read_fail(int e, ts_status code, const char *msg, const char *path) {
    ts_err(code, "%s: %s", path, msg);
    errno = e;
    return NULL;
}

char *ts_read_file_max(const char *path, size_t max, size_t *len) {
    if (len) *len = 0;
    if (!path) {
        ts_err(TS_ERR_ARG, "ts_read_file: path is NULL");
        errno = EINVAL;
        return NULL;
    }
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        char msg[256];
        snprintf(msg, sizeof msg, "cannot open: %s", strerror(e));
        return read_fail(e, TS_ERR_IO, msg, path);
    }
    /* A regular file's size is the first guess; a pipe's is 0. limit: the most bytes to hold,
     * one more than max, so that a file over max is seen without reading it whole. */
    size_t limit = max ? max + 1 : SIZE_MAX - 1, cap = 1 << 16, n = 0;
    struct stat st;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0 && (uint64_t)st.st_size < SIZE_MAX - 1)
        cap = (size_t)st.st_size + 1; /* + 1: the read that sees the end, without growing */
    if (cap > limit) cap = limit;
    char *buf = malloc(cap + 1);
    int e = 0;
    while (buf) {
        if (n == cap) { /* full: grow, doubling, up to limit */
            if (cap >= limit) break;
            size_t ncap = cap > limit / 2 ? limit : cap * 2;
            char *nb = realloc(buf, ncap + 1);
            if (!nb) { free(buf), buf = NULL; break; }
            buf = nb, cap = ncap;
        }
        ssize_t got = read(fd, buf + n, cap - n);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) { e = errno; break; }
        if (got == 0) break;
        n += (size_t)got;
    }
    close(fd);
    if (!buf) return read_fail(ENOMEM, TS_ERR_NOMEM, "out of memory reading the file", path);
    if (e || (max && n > max)) {
        free(buf);
        char msg[256];
        if (e) snprintf(msg, sizeof msg, "cannot read: %s", strerror(e));
        else snprintf(msg, sizeof msg, "larger than %zu bytes", max);
        return read_fail(e ? e : EFBIG, TS_ERR_IO, msg, path);
    }
    buf[n] = 0;
    if (len) *len = n;
    return buf;
}

char *ts_read_file(const char *path, size_t *len) { return ts_read_file_max(path, 0, len); }

/* ------------------------------------------------------------------ paths */

ts_status ts_path_join(char *buf, size_t cap, const char *dir, const char *name) {
    if (!buf || !cap || !name) {
        if (buf && cap) buf[0] = 0;
        return ts_err(TS_ERR_ARG, "ts_path_join: %s is NULL", !name ? "name" : "the buffer");
    }
    size_t ld = dir ? strlen(dir) : 0, ln = strlen(name);
    const char *sep = ld && dir[ld - 1] != '/' ? "/" : "";
    size_t need = ld + strlen(sep) + ln + 1;
    if (need > cap) {
        buf[0] = 0;
        int cut = ld > 400 ? 400 : (int)ld; /* a huge dir is named by its start */
        return ts_err(TS_ERR_ARG, "path too long (%zu bytes, more than the %zu a path may have here): '%s' in '%.*s%s'",
                      need - 1, cap - 1, name, cut, ld ? dir : "", (size_t)cut < ld ? "..." : "");
    }
    if (ld) memcpy(buf, dir, ld);
    memcpy(buf + ld, sep, strlen(sep));
    memcpy(buf + ld + strlen(sep), name, ln + 1);
    return TS_OK;
}

/* ------------------------------------------------------------------ writing atomically */

/* fsync the directory holding path, so the rename survives a crash. Filesystems that cannot sync
 * a directory (EINVAL, EROFS) are not an error. */
static ts_status sync_dir(const char *path) {
    char *dir = strdup(path);
    if (!dir) return ts_err(TS_ERR_NOMEM, "%s: out of memory", path);
    char *slash = strrchr(dir, '/');
    const char *d = slash ? (slash == dir ? "/" : (*slash = 0, dir)) : ".";
    int fd = open(d, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    ts_status s = TS_OK;
    if (fd < 0 || (fsync(fd) != 0 && errno != EINVAL && errno != EROFS))
        s = ts_err(TS_ERR_IO, "%s: written, but its directory '%s' could not be synced: %s", path, d, strerror(errno));
    if (fd >= 0) close(fd);
    free(dir);
    return s;
}

ts_status ts_write_atomic_with(const char *path, ts_write_body_fn body, void *ctx) {
    static unsigned counter; /* two writers in one process never share a temporary file */
    if (!path || !body) return ts_err(TS_ERR_ARG, "ts_write_atomic: %s is NULL", !path ? "path" : "body");
    size_t cap = strlen(path) + 64;
    char *tmp = malloc(cap);
    if (!tmp) return ts_err(TS_ERR_NOMEM, "%s: out of memory", path);
    int fd = -1;
    for (int tries = 0; tries < 100 && fd < 0; tries++) { /* a name left by a dead process of the same pid */
        snprintf(tmp, cap, "%s.tmp.%ld.%u", path, (long)getpid(), __atomic_fetch_add(&counter, 1, __ATOMIC_RELAXED));
        fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd < 0 && errno != EEXIST) break;
    }
    if (fd < 0) {
        ts_status s = ts_err(TS_ERR_IO, "%s: cannot create a temporary file next to it: %s", path, strerror(errno));
        free(tmp);
        return s;
    }
    FILE *f = fdopen(fd, "wb");
    if (!f) {
        int e = errno;
        close(fd);
        unlink(tmp);
        free(tmp);
        return e == ENOMEM ? ts_err(TS_ERR_NOMEM, "%s: out of memory", path)
                           : ts_err(TS_ERR_IO, "%s: write failed: %s", path, strerror(e));
    }
    errno = 0;
    ts_status s = body(f, ctx);
    int e = errno, bad = ferror(f); /* a body that stopped at a failed write left its errno */
    if (!bad && fflush(f) != 0) bad = 1, e = errno;
    if (!bad && !s && fsync(fileno(f)) != 0) bad = 1, e = errno;
    if (fclose(f) != 0 && !bad && !s) bad = 1, e = errno;
    if (bad) s = ts_err(TS_ERR_IO, "%s: write failed: %s", path, strerror(e ? e : EIO));
    if (!s && rename(tmp, path) != 0)
        s = ts_err(TS_ERR_IO, "%s: cannot move the temporary file into place: %s", path, strerror(errno));
    if (s) {
        unlink(tmp);
        free(tmp);
        return s;
    }
    free(tmp);
    return sync_dir(path);
}

typedef struct {
    const void *data;
    size_t len;
} bytes;

static ts_status write_bytes(FILE *f, void *ctx) {
    const bytes *b = ctx;
    if (b->len) fwrite(b->data, 1, b->len, f); /* a short write sets f's error: reported by the caller */
    return TS_OK;
}

ts_status ts_write_atomic(const char *path, const void *data, size_t len) {
    if (!data && len) return ts_err(TS_ERR_ARG, "ts_write_atomic: %s: data is NULL", path ? path : "(null)");
    bytes b = {data, len};
    return ts_write_atomic_with(path, write_bytes, &b);
}

void ts_write_stdio(void *ctx, const char *text, size_t len) {
    if (!ctx) return;
    fwrite(text, 1, len, (FILE *)ctx);
    fflush((FILE *)ctx);
}

ts_status ts_make_dirs(const char *dir) {
    char path[4096];
    if (!dir || !*dir) return ts_err(TS_ERR_ARG, "ts_make_dirs: no directory");
    if (snprintf(path, sizeof path, "%s", dir) >= (int)sizeof path) return ts_err(TS_ERR_IO, "%s: path too long", dir);
    for (char *p = path + 1;; p++) {
        int end = *p == 0;
        if (*p == '/' || end) {
            *p = 0;
            if (mkdir(path, 0777) != 0 && errno != EEXIST) return ts_err(TS_ERR_IO, "creating %s: %s", path, strerror(errno));
            if (end) break;
            *p = '/';
        }
    }
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) return ts_err(TS_ERR_IO, "%s is not a directory", dir);
    return TS_OK;
}
