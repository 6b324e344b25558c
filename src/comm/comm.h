/*
 * comm.h — communicators inside the library (the public half is "Replicas" in tessera.h): the
 * ordered channels that collectives run on, and the calls the collective ops (ops/collective.c)
 * and the runtime make.
 *
 * A communicator has channels, each an MPI communicator of its own (a duplicate of the job's)
 * with a progress thread that runs the channel's collectives one after another, in the order
 * they were posted. Channel 0 carries the host collectives of tessera.h (ts_comm_allreduce, ...),
 * called from one thread; channel 1 + s carries the in-graph collectives of pipeline stage s, so
 * that each stage's device thread posts to its own ordered stream. Posting returns a ticket at
 * once; waiting on a ticket blocks until that collective has completed, for at most the
 * communicator's timeout, after which the other ranks are asked where they are (a census over a
 * separate MPI communicator that every rank answers from a thread of its own) and the error names
 * the ranks that did not answer or are elsewhere.
 */
#ifndef TS_DIST_COMM_H
#define TS_DIST_COMM_H

#include "core/core.h"

enum { TS_COLL_ALLREDUCE = 0, TS_COLL_BROADCAST, TS_COLL_ALLGATHER, TS_COLL_REDUCE_SCATTER, TS_COLL_BARRIER };

/* One collective: allreduce (sum, in place on buf), broadcast (buf from root), allgather (in of
 * count elements -> out of size x count), reduce-scatter (in of size x count -> out of count,
 * sums), barrier. */
typedef struct ts_coll {
    int kind;
    void *buf;
    const void *in;
    void *out;
    int64_t count;
    ts_dtype dtype;
    int root;
} ts_coll;

/* The communicator registered under id (0: the world's), or NULL. */
ts_comm *ts_comm_by_id(int id);
int ts_comm_id(const ts_comm *c);
/* Make channels 0 .. n-1 exist. Collective: every rank calls it with the same n, in the same
 * order as its other collectives (the runtime calls it when it compiles a replicated program). */
ts_status ts_comm_channels(ts_comm *c, int n);
/* Post op on channel ch; *ticket identifies it for ts_comm_wait. */
ts_status ts_comm_post(ts_comm *c, int ch, const ts_coll *op, uint64_t *ticket);
/* Wait for ticket on channel ch; `what` names the collective in a timeout's message. */
ts_status ts_comm_wait(ts_comm *c, int ch, uint64_t ticket, const char *what);
/* The in-graph collectives: post op and remember its ticket under tag; wait for tag's last. */
ts_status ts_comm_post_tag(ts_comm *c, int ch, int tag, const ts_coll *op);
ts_status ts_comm_wait_tag(ts_comm *c, int ch, int tag, const char *what);

#endif
