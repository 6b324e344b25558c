/*
 * replicas.c — what `tessera pretrain` and `finetune` do for replicas (mpirun -np R): the world
 * and its flags (--shard-optimizer, --comm-timeout); the runs check the ranks' parameters and
 * describe them (ts_replicas_check_params, ts_replicas_describe). See "replicas" in train_common.h.
 */
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"
#include "train_common.h"

cli_replicas cli_rep = {.size = 1};

int cli_replicas_setup(const char *cmd, int *threads) {
    cli_rep.comm = ts_comm_world();
    if (!cli_rep.comm) {
        fprintf(stderr, "tessera %s: %s\n", cmd, cli_error());
        return 2;
    }
    cli_rep.rank = ts_comm_rank(cli_rep.comm);
    cli_rep.size = ts_comm_size(cli_rep.comm);
    if (cli_rep.comm_timeout < 0) {
        fprintf(stderr, "tessera %s: --comm-timeout %g: seconds, above 0\n", cmd, cli_rep.comm_timeout);
        return 2;
    }
    if (cli_rep.comm_timeout > 0) ts_comm_set_timeout(cli_rep.comm, cli_rep.comm_timeout);
    if (cli_rep.shard_optimizer && cli_rep.size < 2) {
        fprintf(stderr, "tessera %s: --shard-optimizer shares the optimizer state among replicas: start %s with mpirun "
                        "-np R (R >= 2)\n", cmd, cmd);
        return 2;
    }
    if (cli_rep.size > 1)
        printf("tessera %s: %d replicas (mpirun ranks), gradients summed over them (all-reduce in %s buckets)%s\n", cmd,
               cli_rep.size, "25 MiB", cli_rep.shard_optimizer ? ", optimizer state sharded (ZeRO-1)" : "");
    /* ranks sharing this host share its cores, as torchrun's OMP_NUM_THREADS does (--threads overrides) */
    const char *ls = getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
    int local = ls ? atoi(ls) : 1, cpus = ts_max_threads() / 4;
    if (threads && *threads == 0 && local > 1) {
        *threads = cpus / local > 0 ? cpus / local : 1;
        printf("tessera %s: %d ranks on this host of %d CPUs: %d thread%s each (--threads N to choose)\n", cmd, local,
               cpus, *threads, *threads == 1 ? "" : "s");
    }
    return 0;
}
