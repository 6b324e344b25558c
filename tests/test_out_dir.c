/*
 * test_out_dir.c — an output directory guarded for a failed run (ts_out_dir_guard,
 * ts_out_dir_done, what `tessera pretrain` and `finetune` do with --out) without the command:
 * removed after a failure, kept after a success or when it holds a checkpoint, nothing done when
 * nothing is guarded, and a crash (SIGABRT in a child) removing it and writing the note.
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

static void test_done(void) {
    char dir[64];
    CHECK(ts_out_dir_done(1, dir, sizeof dir) == 0 && !dir[0], "nothing guarded: nothing done");
    CHECK_OK(ts_out_dir_lock("failed", NULL));
    CHECK_OK(ts_out_dir_guard("failed", -1, NULL));
    CHECK(ts_out_dir_done(1, dir, sizeof dir) == -1 && !strcmp(dir, "failed"), "a failed run's directory: %s", dir);
    CHECK(!exists("failed"), "the failed run's directory is removed");
    CHECK(ts_out_dir_done(1, NULL, 0) == 0, "the guard is off after ts_out_dir_done");

    CHECK_OK(ts_out_dir_lock("ok", NULL));
    CHECK_OK(ts_out_dir_guard("ok", -1, NULL));
    CHECK(ts_out_dir_done(0, NULL, 0) == 0 && exists("ok"), "a run that did not fail keeps its directory");

    CHECK_OK(ts_make_dirs("ckpt/checkpoints/step-10"));
    CHECK_OK(ts_out_dir_guard("ckpt", -1, NULL));
    CHECK(ts_out_dir_done(1, dir, sizeof dir) == 1 && exists("ckpt/checkpoints"), "a checkpoint keeps it");

    char longp[5000];
    memset(longp, 'a', sizeof longp - 1), longp[sizeof longp - 1] = 0;
    CHECK_STATUS(ts_out_dir_guard(longp, -1, NULL), TS_ERR_ARG);
    CHECK_STATUS(ts_out_dir_guard(NULL, -1, NULL), TS_ERR_ARG);
}

static void test_crash(void) {
    int fds[2];
    CHECK(pipe(fds) == 0, "pipe");
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        signal(SIGABRT, SIG_DFL);
        if (ts_out_dir_lock("crashed", NULL) || ts_make_dirs("crashed/sub") || ts_out_dir_guard("crashed", fds[1], "gone\n"))
            _exit(3);
        abort();
    }
    close(fds[1]);
    int status = 0;
    waitpid(pid, &status, 0);
    char note[32] = "";
    ssize_t n = read(fds[0], note, sizeof note - 1);
    note[n > 0 ? n : 0] = 0;
    close(fds[0]);
    CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT, "the child died of its SIGABRT (status %d)", status);
    CHECK(!exists("crashed"), "the crash removed the directory");
    CHECK(!strcmp(note, "gone\n"), "the note: '%s'", note);
}

int main(int argc, char **argv) {
    tu_args(argc, argv);
    char dir[] = "/tmp/ts_out_dir_XXXXXX";
    if (!mkdtemp(dir) || chdir(dir) != 0) return fprintf(stderr, "cannot make a temporary directory\n"), 1;
    RUN(test_done);
    RUN(test_crash);
    char cmd[64];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd)) { /* left behind: harmless */ }
    return tu_finish("test_out_dir");
}
