/*
 * out_dir.c — the output directory of a training run (pretrain, finetune): made and locked at
 * the start (cli_out_lock, on ts_out_dir_lock), and when the run fails, removed again if this run
 * made it and it holds no checkpoint (cli_out_finish); a crash removes it too. The removal is the
 * library's (ts_out_dir_guard, ts_out_dir_done); this file says what happened.
 */
#include "train_common.h"

#include <sys/stat.h>

#include "cli.h"

int cli_out_lock(const char *cmd, const char *dir) {
    if (cli_rep.rank > 0) return cli_make_dir(cmd, dir) ? 1 : 0; /* replicas: rank 0 holds the lock */
    struct stat sb;
    int existed = stat(dir, &sb) == 0;
    long other;
    ts_status s = ts_out_dir_lock(dir, &other);
    if (s == TS_OK && !existed) /* a path too long is left unguarded, as before */
        (void)ts_out_dir_guard(dir, 2, "tessera: the unfinished --out directory is removed\n");
    if (s == TS_OK) return 0;
    if (other)
        fprintf(stderr, "tessera %s: --out %s is being written by another run (pid %ld); wait for it to end, or give "
                        "another --out\n", cmd, dir, other);
    else
        fprintf(stderr, "tessera %s: --out %s: %s\n", cmd, dir, cli_error());
    return other ? 2 : 1;
}

void cli_out_finish(const char *cmd, int rc) {
    char dir[4200];
    int kept = ts_out_dir_done(rc != 0 && cli_rep.rank == 0, dir, sizeof dir);
    if (kept > 0)
        fprintf(stderr, "tessera %s: %s is kept: it holds %d checkpoint%s to --resume from\n", cmd, dir, kept,
                kept == 1 ? "" : "s");
    else if (kept < 0)
        fprintf(stderr, "tessera %s: removed the unfinished --out %s\n", cmd, dir);
}
