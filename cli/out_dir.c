/*
 * out_dir.c — the output directory of a training run (pretrain, finetune): made and locked at
 * the start (cli_out_lock), and when the run fails, removed again if this run made it and it
 * holds no checkpoint (cli_out_finish), so a failure leaves no half-made model directory. A
 * crash (a fatal signal, say inside a device plugin) is handled too: a signal handler removes
 * the directory with async-signal-safe calls only (openat, getdents64, unlinkat), then puts
 * back the handler it replaced and raises the signal again, so the process dies as it would
 * have (after tessera's own report of the plugin call, or AddressSanitizer's).
 */
#define _GNU_SOURCE /* syscall, getdents64 */
#include "train_common.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cli.h"

static char out_made[4200]; /* the --out this run made, "" when it was there before or is done */
static char out_ckpt[4300]; /* out_made/checkpoints: present, the directory is kept */

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
        static const char say[] = "tessera: the unfinished --out directory is removed\n";
        if (write(2, say, sizeof say - 1) < 0) { /* nothing more to do */ }
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

int cli_out_lock(const char *cmd, const char *dir) {
    if (cli_rep.rank > 0) return cli_make_dir(cmd, dir) ? 1 : 0; /* replicas: rank 0 holds the lock */
    struct stat sb;
    int existed = stat(dir, &sb) == 0;
    long other;
    ts_status s = ts_out_dir_lock(dir, &other);
    if (s == TS_OK && !existed && strlen(dir) < sizeof out_made) {
        snprintf(out_ckpt, sizeof out_ckpt, "%s/checkpoints", dir);
        snprintf(out_made, sizeof out_made, "%s", dir);
        guard_crashes();
    }
    if (s == TS_OK) return 0;
    if (other)
        fprintf(stderr, "tessera %s: --out %s is being written by another run (pid %ld); wait for it to end, or give "
                        "another --out\n", cmd, dir, other);
    else
        fprintf(stderr, "tessera %s: --out %s: %s\n", cmd, dir, cli_error());
    return other ? 2 : 1;
}

void cli_out_finish(const char *cmd, int rc) {
    if (!out_made[0] || cli_rep.rank > 0 || !rc) {
        out_made[0] = 0; /* done: a crash from here on keeps it */
        return;
    }
    char dir[sizeof out_made];
    snprintf(dir, sizeof dir, "%s", out_made);
    out_made[0] = 0;
    DIR *d = opendir(out_ckpt);
    int kept = 0;
    for (struct dirent *e; d && (e = readdir(d));) kept += e->d_name[0] != '.';
    if (d) closedir(d);
    if (kept) {
        fprintf(stderr, "tessera %s: %s is kept: it holds %d checkpoint%s to --resume from\n", cmd, dir, kept,
                kept == 1 ? "" : "s");
        return;
    }
    remove_tree(AT_FDCWD, dir, 0);
    struct stat sb;
    if (stat(dir, &sb) != 0) fprintf(stderr, "tessera %s: removed the unfinished --out %s\n", cmd, dir);
}
