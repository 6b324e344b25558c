/*
 * file.c — writing a whole file atomically, for every writer of small files (config.json and
 * vocab.txt of model directories, ONNX models): readers see the old file or the new one, never a
 * part. And ts_write_stdio, the ts_write_fn of C callers.
 */
#include "core/core.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* fsync the directory holding path, so the rename survives a crash. Filesystems that cannot sync
 * a directory (EINVAL, EROFS) are not an error. */
static ts_status sync_dir(const char *path) {
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    const char *d = slash ? (slash == dir ? "/" : (*slash = 0, dir)) : ".";
    int fd = open(d, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    ts_status s = TS_OK;
    if (fd < 0 || (fsync(fd) != 0 && errno != EINVAL && errno != EROFS))
        s = ts_err(TS_ERR_IO, "writing %s: written, but its directory could not be synced: %s", path, strerror(errno));
    if (fd >= 0) close(fd);
    return s;
}

ts_status ts_write_atomic(const char *path, const void *data, size_t len) {
    static unsigned counter; /* two writers in one process never share a temporary file */
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld.%u", path, (long)getpid(), __atomic_fetch_add(&counter, 1, __ATOMIC_RELAXED));
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666), e = 0;
    if (fd < 0) return ts_err(TS_ERR_IO, "writing %s: cannot create a temporary file next to it: %s", path, strerror(errno));
    for (size_t off = 0; off < len && !e;) {
        ssize_t w = write(fd, (const char *)data + off, len - off);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) e = errno ? errno : EIO;
        else off += (size_t)w;
    }
    if (!e && fsync(fd) != 0) e = errno;
    if (close(fd) != 0 && !e) e = errno;
    if (!e && rename(tmp, path) != 0) e = errno;
    if (e) {
        unlink(tmp);
        return ts_err(TS_ERR_IO, "writing %s: %s", path, strerror(e));
    }
    return sync_dir(path);
}

void ts_write_stdio(void *ctx, const char *text, size_t len) {
    if (!ctx) return;
    fwrite(text, 1, len, (FILE *)ctx);
    fflush((FILE *)ctx);
}
