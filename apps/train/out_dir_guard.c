/*
 * out_dir_guard.c — the output directory of a training run removed when the run fails
 * (tessera_bert.h: ts_out_dir_guard, ts_out_dir_done), so a failure leaves no half-made model
 * directory behind, unless it holds a checkpoint (DIR/checkpoints/, what a resume continues
 * from). A crash (a fatal signal, say inside a device plugin) is handled too: a signal handler
 * removes the directory with async-signal-safe calls only (openat, getdents64, unlinkat), writes
 * the caller's note to the caller's file descriptor, then puts back the handler it replaced and
 * raises the signal again, so the process dies as it would have.
 */
#define _GNU_SOURCE /* syscall, getdents64 */
#include "common/app.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

static char out_made[4200]; /* the directory guarded, "" when none (or done) */
static char out_ckpt[4300]; /* out_made/checkpoints: present, the directory is kept */
static char crash_note[256]; /* written to crash_fd when a crash removes the directory */
static int crash_fd = -1;

/* ------------------------------------------------------------------ removal, signal-safe */

struct dirent64_raw { /* the kernel's linux_dirent64 */
    unsigned long long d_ino;
    long long d_off;
    unsigned short d_reclen;
    unsigned char d_type;
    char d_name[];
};

static int is_dots(const char *s) { return s[0] == '.' && (!s[1] || (s[1] == '.' && !s[2])); }

/* rm -rf parent/name without following links, depth at most 8; only syscalls. */
static void remove_tree(int parent, const char *name, int depth) {
    int fd = depth < 8 ? openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) : -1;
    for (int pass = 0; fd >= 0 && pass < 4; pass++) { /* entries removed while listing may be skipped */
        char buf[4096];
        int removed = 0;
        long n;
        while ((n = syscall(SYS_getdents64, fd, buf, sizeof buf)) > 0)
            for (long off = 0; off < n;) {
                struct dirent64_raw *e = (struct dirent64_raw *)(buf + off);
                off += e->d_reclen;
                if (is_dots(e->d_name)) continue;
                if (e->d_type == DT_DIR) remove_tree(fd, e->d_name, depth + 1);
                else unlinkat(fd, e->d_name, 0);
                removed++;
            }
        if (!removed) break;
        lseek(fd, 0, SEEK_SET);
    }
    if (fd >= 0) close(fd);
    if (depth == 0 || fd >= 0) unlinkat(parent, name, AT_REMOVEDIR);
}

static const int fatal[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};
enum { NFATAL = sizeof fatal / sizeof fatal[0] };
static struct sigaction before[NFATAL];

static void on_fatal(int sig) {
    if (out_made[0] && faccessat(AT_FDCWD, out_ckpt, F_OK, 0) != 0) {
        remove_tree(AT_FDCWD, out_made, 0);
        if (crash_fd >= 0 && crash_note[0] && write(crash_fd, crash_note, strlen(crash_note)) < 0) { /* nothing more */ }
    }
    for (int k = 0; k < NFATAL; k++)
        if (fatal[k] == sig) sigaction(sig, &before[k], NULL);
    raise(sig); /* blocked until this returns: then the handler before this one takes it */
}

static void guard_crashes(void) {
    static int done;
    if (done) return;
    done = 1;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_fatal;
    sigemptyset(&sa.sa_mask);
    for (int k = 0; k < NFATAL; k++) sigaction(fatal[k], &sa, &before[k]);
}

/* ------------------------------------------------------------------ the run's side */

ts_status ts_out_dir_guard(const char *dir, int fd, const char *note) {
    if (!dir || !*dir) return ts_set_error(TS_ERR_ARG, "ts_out_dir_guard: no directory");
    if (strlen(dir) >= sizeof out_made)
        return ts_set_error(TS_ERR_ARG, "ts_out_dir_guard: %s: the path is too long", dir);
    snprintf(crash_note, sizeof crash_note, "%s", note ? note : "");
    crash_fd = fd;
    snprintf(out_ckpt, sizeof out_ckpt, "%s/checkpoints", dir);
    snprintf(out_made, sizeof out_made, "%s", dir);
    guard_crashes();
    return TS_OK;
}

int ts_out_dir_done(int failed, char *dir, size_t cap) {
    if (dir && cap) snprintf(dir, cap, "%s", out_made);
    if (!out_made[0] || !failed) {
        out_made[0] = 0; /* done: a crash from here on keeps it */
        return 0;
    }
    char made[sizeof out_made];
    snprintf(made, sizeof made, "%s", out_made);
    out_made[0] = 0;
    DIR *d = opendir(out_ckpt);
    int kept = 0;
    for (struct dirent *e; d && (e = readdir(d));) kept += e->d_name[0] != '.';
    if (d) closedir(d);
    if (kept) return kept;
    remove_tree(AT_FDCWD, made, 0);
    struct stat sb;
    return stat(made, &sb) != 0 ? -1 : 0;
}
