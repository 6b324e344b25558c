/*
 * tessera_devices.h — replicas: the communicator between the processes of a job (MPI) and its
 * collectives. (Devices of one process are named in ts_compile_opts, tessera_core.h.)
 * Part of the public API; include "tessera.h", which includes every part. */
#ifndef TESSERA_DEVICES_H
#define TESSERA_DEVICES_H

#include "tessera_core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- replicas (src/comm/comm.c) */
/* Data parallelism over processes: `mpirun -np R tessera pretrain ...` (or any program) starts R
 * ranks, each a replica of one training run — or, with stage devices, a whole pipeline — and the
 * world communicator connects them. tessera uses MPI (Open MPI) when it was built with it
 * (libopenmpi-dev present) and the process was started by mpirun; otherwise the world is one
 * rank, nothing touches MPI, and every collective below is a copy. A process started by mpirun
 * with more than one rank in a build without MPI gets TS_ERR_UNSUPPORTED.
 * Collectives are called by every rank, in the same order, from one thread at a time; buf, in
 * and out are host memory (the CPU device's buffers are). A collective that does not complete
 * within the timeout (default 60 s; ts_comm_set_timeout: the command's --comm-timeout)
 * asks every other rank where it is and fails with TS_ERR_COMM naming the ranks that did not
 * answer (dead or stopped) or are elsewhere, and the step (ts_comm_set_step). After any
 * TS_ERR_COMM the communicator is unusable: end the job with ts_comm_abort. */
/* The job's communicator, made (and MPI initialised) on the first call; NULL on failure. */
TS_API ts_comm *ts_comm_world(void);
TS_API int ts_comm_rank(const ts_comm *c);
TS_API int ts_comm_size(const ts_comm *c);
/* "mpi" when this build has MPI, else "none". */
TS_API const char *ts_comm_backend(void);
/* buf[0 .. count) = the sum over the ranks of their buf (f32, i32 or i64), on every rank. */
TS_API ts_status ts_comm_allreduce(ts_comm *c, void *buf, int64_t count, ts_dtype dtype);
/* The same for doubles (host statistics: loss sums, row counts). */
TS_API ts_status ts_comm_allreduce_f64(ts_comm *c, double *buf, int64_t count);
/* in is size x count elements; rank r gets out[0 .. count) = the sum over the ranks of their
 * in[r count .. (r + 1) count). count <= 2^30. */
TS_API ts_status ts_comm_reduce_scatter(ts_comm *c, const void *in, void *out, int64_t count, ts_dtype dtype);
/* out (size x count elements) = every rank's in (count), in rank order. count <= 2^30. */
TS_API ts_status ts_comm_allgather(ts_comm *c, const void *in, void *out, int64_t count, ts_dtype dtype);
/* buf[0 .. bytes) = root's, on every rank. */
TS_API ts_status ts_comm_broadcast(ts_comm *c, void *buf, size_t bytes, int root);
TS_API ts_status ts_comm_barrier(ts_comm *c);
TS_API void ts_comm_set_timeout(ts_comm *c, double seconds);
TS_API double ts_comm_timeout(const ts_comm *c);
/* The training step this rank is at, for the messages of a timeout (its own and other ranks'). */
TS_API void ts_comm_set_step(ts_comm *c, int64_t step);
/* What the collectives cost on this rank: in_graph 0 the host collectives above, 1 the
 * in-graph ones (gradient all-reduces, parameter broadcasts). busy_s: seconds the progress
 * threads spent in MPI; wait_s: seconds callers (the comm_wait ops) were blocked waiting, the
 * part not hidden behind other work. */
typedef struct ts_comm_stats {
    uint64_t ops, bytes;
    double busy_s, wait_s;
} ts_comm_stats;
TS_API void ts_comm_get_stats(const ts_comm *c, int in_graph, ts_comm_stats *s);
TS_API void ts_comm_reset_stats(ts_comm *c);
/* End the whole job now with exit code `code` (MPI_Abort; a lone process just exits). */
TS_API void ts_comm_abort(ts_comm *c, int code) __attribute__((noreturn));
/* Shut the world down (threads joined, MPI finalized) once every rank is done; called at exit
 * too. After a TS_ERR_COMM it aborts the job instead, since a collective may still hang. */
TS_API void ts_comm_finalize(void);

#ifdef __cplusplus
}
#endif
#endif /* TESSERA_DEVICES_H */
