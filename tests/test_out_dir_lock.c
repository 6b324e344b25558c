/*
 * test_out_dir_lock.c — the lock of an output directory (ts_out_dir_lock, apps/train/model_dir.c)
 * without the command: while its process runs, a second locker is refused with its pid; when the
 * process exits, normally, the lock file is gone (a finished model directory holds none) and the
 * directory can be locked again; a forked child's exit leaves its parent's lock (file and flock) as
 * it was; a lock file left by a killed run does not stand in the way of the next.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tessera_apps.h"
#include "test_util.h"

static int exists(const char *p) {
    struct stat sb;
    return stat(p, &sb) == 0;
}

/* A child that locks dir, says so on fd `ready` (1 byte: 0 locked, 1 failed), waits for a byte on
 * `go`, then exits normally (exit(0): atexit handlers run). Returns its pid. */
static pid_t locker(const char *dir, int ready, int go) {
    fflush(stdout); /* written once, not again by the child's exit */
    pid_t pid = fork();
    if (pid) return pid;
    char ok = ts_out_dir_lock(dir, NULL) != TS_OK, c;
    if (write(ready, &ok, 1) != 1 || read(go, &c, 1) != 1) _exit(3);
    exit(0);
}

static int wait_exit(pid_t pid) {
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void test_held_then_gone(void) {
    int up[2], down[2];
    CHECK(pipe(up) == 0 && pipe(down) == 0, "pipe");
    pid_t pid = locker("held", up[1], down[0]);
    char ok = 1;
    CHECK(read(up[0], &ok, 1) == 1 && ok == 0, "the child could not lock 'held'");
    CHECK(exists("held/.tessera.lock"), "no lock file while the child holds it");
    long other = 0;
    CHECK_STATUS(ts_out_dir_lock("held", &other), TS_ERR_RUNTIME);
    CHECK(other == (long)pid, "the refusal names pid %ld, want the child's %ld", other, (long)pid);
    CHECK(write(down[1], "x", 1) == 1, "pipe");
    CHECK(wait_exit(pid) == 0, "the child did not exit cleanly");
    CHECK(!exists("held/.tessera.lock"), "the lock file outlived its process");
    CHECK(exists("held"), "the directory itself went");
    for (int k = 0; k < 2; k++) close(up[k]), close(down[k]);

    /* the parent now takes it; a child forked afterwards exits without touching the parent's lock */
    CHECK_OK(ts_out_dir_lock("held", NULL));
    fflush(stdout);
    pid = fork();
    if (pid == 0) exit(0);
    CHECK(wait_exit(pid) == 0, "the forked child");
    CHECK(exists("held/.tessera.lock"), "a forked child's exit removed its parent's lock file");
    CHECK(pipe(up) == 0 && pipe(down) == 0, "pipe");
    pid = locker("held", up[1], down[0]);
    CHECK(read(up[0], &ok, 1) == 1 && ok == 1, "a second process locked 'held' while this one holds it");
    CHECK(write(down[1], "x", 1) == 1, "pipe");
    wait_exit(pid);
    for (int k = 0; k < 2; k++) close(up[k]), close(down[k]);
}

/* A run killed (no exit handlers) leaves its lock file, unlocked: the next run takes it, and
 * removes it when it exits. */
static void test_killed(void) {
    int up[2], down[2];
    CHECK(pipe(up) == 0 && pipe(down) == 0, "pipe");
    pid_t pid = locker("killed", up[1], down[0]);
    char ok = 1;
    CHECK(read(up[0], &ok, 1) == 1 && ok == 0, "the child could not lock 'killed'");
    kill(pid, SIGKILL);
    wait_exit(pid);
    CHECK(exists("killed/.tessera.lock"), "SIGKILL ran the exit handlers?");
    pid = locker("killed", up[1], down[0]);
    CHECK(read(up[0], &ok, 1) == 1 && ok == 0, "a killed run's lock file stood in the way");
    CHECK(write(down[1], "x", 1) == 1, "pipe");
    CHECK(wait_exit(pid) == 0, "the second child did not exit cleanly");
    CHECK(!exists("killed/.tessera.lock"), "the lock file outlived the second run");
    for (int k = 0; k < 2; k++) close(up[k]), close(down[k]);
}

int main(int argc, char **argv) {
    tu_args(argc, argv);
    char dir[] = "/tmp/ts_out_dir_lock_XXXXXX";
    if (!mkdtemp(dir) || chdir(dir) != 0) return fprintf(stderr, "cannot make a temporary directory\n"), 1;
    RUN(test_held_then_gone);
    RUN(test_killed);
    char cmd[64];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd)) { /* left behind: harmless */ }
    return tu_finish("test_out_dir_lock");
}
