/*
 * test_fileio.c — the library's one whole-file reader, checked path join and atomic write
 * (src/core/fileio.h), and its one clock: ts_read_file on a missing file, a directory, an empty
 * file, a file holding NUL bytes, a pipe and over its limit; ts_path_join refusing a path that
 * does not fit (never truncating it); ts_write_atomic and ts_write_atomic_with leaving the old
 * file and no temporary behind when the write fails (a file size limit, a missing directory, a
 * directory in the way, a body that fails), and replacing it when it succeeds.
 */
#define _GNU_SOURCE /* nftw */
#include "tessera_apps.h"
#include "test_util.h"

#include "core/core.h"

#include <dirent.h>
#include <ftw.h>
#include <sys/resource.h>
#include <sys/stat.h>

static char tdir[256];

/* A fresh directory for this case: tdir. */
static void make_dir(void) {
    snprintf(tdir, sizeof tdir, "/tmp/ts_fileio_XXXXXX");
    if (!mkdtemp(tdir)) { perror("mkdtemp"); exit(1); }
}

static int rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
    (void)sb, (void)flag, (void)ftw;
    return remove(path);
}

/* Remove tdir and everything in it. */
static void remove_dir(void) { nftw(tdir, rm_one, 16, FTW_DEPTH | FTW_PHYS); }

/* tdir/name into buf. */
static const char *at(char *buf, size_t cap, const char *name) {
    snprintf(buf, cap, "%s/%s", tdir, name);
    return buf;
}

static void put(const char *path, const void *data, size_t n) {
    FILE *f = fopen(path, "wb");
    CHECK(f && fwrite(data, 1, n, f) == n && fclose(f) == 0, "cannot write %s", path);
}

/* Files in tdir whose name holds ".tmp.": temporaries left behind. */
static int count_temp_files(void) {
    DIR *d = opendir(tdir);
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)))
        if (strstr(e->d_name, ".tmp.")) n++;
    if (d) closedir(d);
    return n;
}

/* The file holds exactly the n bytes of want. */
static int holds(const char *path, const void *want, size_t n) {
    size_t len = 0;
    char *got = ts_read_file(path, &len);
    int ok = got && len == n && memcmp(got, want, n) == 0;
    free(got);
    return ok;
}

/* ------------------------------------------------------------------ ts_read_file */

static void test_read_missing(void) {
    make_dir();
    char p[512];
    size_t len = 123;
    errno = 0;
    char *s = ts_read_file(at(p, sizeof p, "missing.txt"), &len);
    int e = errno;
    CHECK(s == NULL && len == 0, "a missing file read (len %zu)", len);
    CHECK(e == ENOENT, "errno %d (%s), not ENOENT", e, strerror(e));
    CHECK(ts_last_status() == TS_ERR_IO, "status %s", ts_status_name(ts_last_status()));
    CHECK_ERRMSG(p, "cannot open", strerror(ENOENT));
    /* a directory opens but cannot be read */
    CHECK(ts_read_file(tdir, &len) == NULL, "a directory read");
    CHECK(ts_last_status() == TS_ERR_IO, "status %s", ts_status_name(ts_last_status()));
    CHECK_ERRMSG(tdir, "cannot read", strerror(EISDIR));
    CHECK(ts_read_file(NULL, &len) == NULL, "a NULL path read");
    CHECK_STATUS(ts_last_status(), TS_ERR_ARG);
    remove_dir();
}

static void test_read_empty(void) {
    make_dir();
    char p[512];
    put(at(p, sizeof p, "empty.txt"), "", 0);
    size_t len = 99;
    char *s = ts_read_file(p, &len);
    CHECK(s != NULL, "an empty file: %s", ts_last_error());
    CHECK(s && len == 0 && s[0] == 0, "an empty file: len %zu", len);
    free(s);
    s = ts_read_file(p, NULL); /* len may be NULL */
    CHECK(s && s[0] == 0, "len NULL: %s", ts_last_error());
    free(s);
    remove_dir();
}

static void test_read_nul_byte(void) {
    make_dir();
    char p[512];
    static const char data[] = {'a', 'b', 0, 'c', '\n', 0};
    put(at(p, sizeof p, "nul.bin"), data, sizeof data);
    size_t len = 0;
    char *s = ts_read_file(p, &len);
    CHECK(s && len == sizeof data && memcmp(s, data, sizeof data) == 0, "the bytes, NULs included (len %zu)", len);
    CHECK(s && s[len] == 0, "a NUL after the last byte");
    CHECK(s && strlen(s) == 2, "a C string stops at the first NUL: a text reader sees strlen != len");
    free(s);
    remove_dir();
}

/* Larger than the first guess of a buffer, through a pipe (no size), and over a limit. */
static void test_read_large_pipe_limit(void) {
    make_dir();
    char p[512];
    size_t n = 300000;
    char *big = malloc(n);
    for (size_t i = 0; i < n; i++) big[i] = (char)('a' + i % 26);
    put(at(p, sizeof p, "big.txt"), big, n);
    CHECK(holds(p, big, n), "a %zu-byte file read whole", n);

    int fds[2];
    CHECK(pipe(fds) == 0, "pipe");
    pid_t pid = fork();
    if (pid == 0) { /* the writer: the whole of big, then EOF */
        close(fds[0]);
        for (size_t o = 0; o < n;) {
            ssize_t w = write(fds[1], big + o, n - o);
            if (w <= 0) _exit(1);
            o += (size_t)w;
        }
        _exit(0);
    }
    close(fds[1]);
    char dev[64];
    snprintf(dev, sizeof dev, "/dev/fd/%d", fds[0]);
    size_t len = 0;
    char *s = ts_read_file(dev, &len);
    CHECK(s && len == n && memcmp(s, big, n) == 0, "a pipe read to its end (%zu of %zu bytes): %s", len, n,
          s ? "" : ts_last_error());
    free(s);
    close(fds[0]);
    waitpid(pid, NULL, 0);

    errno = 0;
    CHECK(ts_read_file_max(p, n - 1, &len) == NULL, "a file over the limit read");
    CHECK(errno == EFBIG, "errno %d, not EFBIG", errno);
    CHECK_ERRMSG(p, "larger than");
    s = ts_read_file_max(p, n, &len); /* exactly at the limit */
    CHECK(s && len == n, "a file of exactly max bytes: %s", s ? "" : ts_last_error());
    free(s);
    free(big);
    remove_dir();
}

/* ------------------------------------------------------------------ ts_path_join */

static void test_path_join(void) {
    char buf[32];
    CHECK_OK(ts_path_join(buf, sizeof buf, "dir", "name.txt"));
    CHECK(!strcmp(buf, "dir/name.txt"), "joined: %s", buf);
    CHECK_OK(ts_path_join(buf, sizeof buf, "dir/", "name.txt"));
    CHECK(!strcmp(buf, "dir/name.txt"), "no second '/': %s", buf);
    CHECK_OK(ts_path_join(buf, sizeof buf, "", "name.txt"));
    CHECK(!strcmp(buf, "name.txt"), "no dir: %s", buf);
    CHECK_OK(ts_path_join(buf, sizeof buf, NULL, "name.txt"));
    CHECK(!strcmp(buf, "name.txt"), "dir NULL: %s", buf);
    CHECK_OK(ts_path_join(buf, 13, "dir", "name.txt")); /* 12 bytes and the NUL: fits exactly */
    CHECK(!strcmp(buf, "dir/name.txt"), "exact fit: %s", buf);

    /* one byte short: refused, naming both, and buf is no truncated path */
    strcpy(buf, "old");
    CHECK_STATUS(ts_path_join(buf, 12, "dir", "name.txt"), TS_ERR_ARG);
    CHECK_ERRMSG("path too long", "'name.txt' in 'dir'", "12 bytes", "the 11 a path");
    CHECK(buf[0] == 0, "buf after a refused join: '%s'", buf);

    char dir[5000];
    memset(dir, 'd', sizeof dir - 1);
    dir[sizeof dir - 1] = 0;
    char path[4200];
    CHECK_STATUS(ts_path_join(path, sizeof path, dir, "config.json"), TS_ERR_ARG);
    CHECK_ERRMSG("'config.json' in 'dddd", "ddd...'", "5011 bytes", "the 4199 a path");
    CHECK_STATUS(ts_path_join(path, sizeof path, "d", NULL), TS_ERR_ARG);
}

/* ------------------------------------------------------------------ ts_write_atomic */

static void test_atomic_write(void) {
    make_dir();
    char p[512];
    at(p, sizeof p, "out.txt");
    CHECK_OK(ts_write_atomic(p, "first\n", 6));
    CHECK(holds(p, "first\n", 6), "the first write");
    CHECK_OK(ts_write_atomic(p, "second, longer\n", 15));
    CHECK(holds(p, "second, longer\n", 15), "replaced");
    CHECK_OK(ts_write_atomic(p, NULL, 0));
    CHECK(holds(p, "", 0), "an empty file");
    CHECK(count_temp_files() == 0, "a temporary file left after a write");
    remove_dir();
}

/* The write fails midway (a file size limit below its size): the old file stays, no temporary. */
static void test_atomic_write_fails(void) {
    make_dir();
    char p[512];
    at(p, sizeof p, "keep.txt");
    CHECK_OK(ts_write_atomic(p, "old contents\n", 13));
    size_t n = 1 << 20;
    char *big = calloc(1, n);
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit saved, lim = {65536, 65536};
    getrlimit(RLIMIT_FSIZE, &saved);
    lim.rlim_max = saved.rlim_max;
    CHECK(setrlimit(RLIMIT_FSIZE, &lim) == 0, "setrlimit");
    CHECK_STATUS(ts_write_atomic(p, big, n), TS_ERR_IO);
    CHECK_ERRMSG(p, "write failed", strerror(EFBIG));
    setrlimit(RLIMIT_FSIZE, &saved);
    CHECK(holds(p, "old contents\n", 13), "the old file changed after a failed write");
    CHECK(count_temp_files() == 0, "a temporary file left after a failed write");
    free(big);

    /* a directory that does not exist */
    char nd[600];
    snprintf(nd, sizeof nd, "%s/no/such/dir/x.txt", tdir);
    CHECK_STATUS(ts_write_atomic(nd, "x", 1), TS_ERR_IO);
    CHECK_ERRMSG(nd, "temporary", strerror(ENOENT));

    /* a directory where the file should go: the rename fails, the directory stays */
    char d[512];
    at(d, sizeof d, "adir");
    CHECK(mkdir(d, 0755) == 0, "mkdir %s", d);
    CHECK_STATUS(ts_write_atomic(d, "x", 1), TS_ERR_IO);
    CHECK_ERRMSG(d, "cannot move the temporary file into place");
    struct stat sb;
    CHECK(stat(d, &sb) == 0 && S_ISDIR(sb.st_mode), "the directory was replaced");
    CHECK(count_temp_files() == 0, "a temporary file left after a failed rename");
    remove_dir();
}

typedef struct {
    int lines, fail_after;
} body_ctx;

/* Writes ctx->lines lines; fails (its own error) after fail_after of them when that is >= 0. */
static ts_status body(FILE *f, void *c) {
    const body_ctx *b = c;
    for (int i = 0; i < b->lines; i++) {
        if (i == b->fail_after) return ts_err(TS_ERR_RUNTIME, "the body gave up at line %d", i);
        fprintf(f, "line %d\n", i);
    }
    return TS_OK;
}

static void test_atomic_write_with(void) {
    make_dir();
    char p[512];
    at(p, sizeof p, "streamed.txt");
    CHECK_OK(ts_write_atomic_with(p, body, &(body_ctx){3, -1}));
    CHECK(holds(p, "line 0\nline 1\nline 2\n", 21), "the streamed file");
    /* the body's own error is returned as it is; the old file stays, no temporary */
    CHECK_STATUS(ts_write_atomic_with(p, body, &(body_ctx){1000, 500}), TS_ERR_RUNTIME);
    CHECK_ERRMSG("the body gave up at line 500");
    CHECK(holds(p, "line 0\nline 1\nline 2\n", 21), "the old file changed after a failed body");
    CHECK(count_temp_files() == 0, "a temporary file left after a failed body");
    CHECK_STATUS(ts_write_atomic_with(NULL, body, NULL), TS_ERR_ARG);
    CHECK_STATUS(ts_write_atomic(p, NULL, 3), TS_ERR_ARG);
    CHECK(holds(p, "line 0\nline 1\nline 2\n", 21), "the file after refused arguments");
    remove_dir();
}

/* ------------------------------------------------------------------ the clock */

static void test_clock(void) {
    double a = ts_seconds();
    uint64_t na = ts_now_ns();
    struct timespec d = {0, 20 * 1000 * 1000};
    nanosleep(&d, NULL);
    double b = ts_seconds();
    uint64_t nb = ts_now_ns();
    CHECK(b - a >= 0.019 && b - a < 5, "ts_seconds moved %g s over a 20 ms sleep", b - a);
    CHECK(nb > na && (double)(nb - na) * 1e-9 >= 0.019, "ts_now_ns moved %llu ns", (unsigned long long)(nb - na));
    CHECK(fabs(ts_now_ns() * 1e-9 - ts_seconds()) < 0.5, "the two read one clock");
}

int main(int argc, char **argv) {
    tu_args(argc, argv);
    RUN(test_read_missing);
    RUN(test_read_empty);
    RUN(test_read_nul_byte);
    RUN(test_read_large_pipe_limit);
    RUN(test_path_join);
    RUN(test_atomic_write);
    RUN(test_atomic_write_fails);
    RUN(test_atomic_write_with);
    RUN(test_clock);
    return tu_finish("test_fileio");
}
