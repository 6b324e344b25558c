/*
 * replicas.c — data-parallel replicas (one ts_program per rank of a communicator): the check
 * that every rank holds the same parameters, by a hash of each rank's compared over the world.
 * See "Replicas" in tessera_tasks.h.
 */
#include "common/app.h"

#include <stdlib.h>

/* FNV-1a over every parameter's bytes, in the program's order. */
static ts_status params_hash(const ts_program *p, uint64_t *h) {
    *h = 0xcbf29ce484222325ull;
    for (int i = 0; i < ts_program_num_params(p); i++) {
        ts_tensor *t = NULL;
        ts_status st = ts_program_get_param(p, ts_program_param_name(p, i), &t);
        if (st) return st;
        const uint8_t *b = ts_tensor_data(t);
        size_t n = ts_tensor_nbytes(t);
        uint64_t x = *h;
        for (size_t k = 0; k < n; k++) x = (x ^ b[k]) * 0x100000001b3ull;
        *h = x;
        ts_tensor_free(t);
    }
    return TS_OK;
}

ts_status ts_replicas_params_differ(ts_comm *comm, const ts_program *p, int *ranks, int *nranks) {
    *nranks = 0;
    int size = ts_comm_size(comm);
    if (size < 2) return TS_OK;
    uint64_t h = 0;
    int64_t *all = calloc((size_t)size, sizeof *all);
    ts_status st = all ? params_hash(p, &h) : ts_set_error(TS_ERR_NOMEM, "out of memory");
    if (!st) {
        int64_t mine = (int64_t)h;
        st = ts_comm_allgather(comm, &mine, all, 1, TS_I64);
    }
    if (!st)
        for (int r = 1; r < size; r++)
            if (all[r] != all[0]) ranks[(*nranks)++] = r;
    free(all);
    return st;
}
