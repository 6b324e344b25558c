/*
 * comm.c — communicators (tessera.h "Replicas", comm.h): the world of an mpirun job over Open
 * MPI, or of one process.
 *
 * The world: a process started by mpirun (OMPI_COMM_WORLD_SIZE, PMI_SIZE or PMIX_RANK in its
 * environment) initialises MPI with MPI_THREAD_MULTIPLE on the first ts_comm_world(); any other
 * process has a world of one rank and never touches MPI, so tessera needs no MPI daemon to run
 * alone, and a build without MPI (TS_HAVE_MPI unset: libopenmpi-dev missing at build time) runs
 * everything but refuses a job of more than one rank.
 *
 * Channels (comm.h): each a duplicate of MPI_COMM_WORLD and a progress thread started on its
 * first post, which runs the channel's queue in order with blocking MPI calls; callers post and
 * later wait with a deadline (condition variable). Different channels run concurrently, which is
 * why they are separate MPI communicators: collectives on one communicator must be issued in the
 * same order everywhere, and the stages of a pipeline post from threads of their own.
 *
 * Faults: a wait past the timeout runs a census — the rank sends "where are you?" to every other
 * rank over the watch communicator, where a responder thread on each rank answers with its step
 * and the collective it waits in, if any — and fails with TS_ERR_COMM naming who did not answer
 * (dead or stopped) and who is elsewhere. A rank that dies outright is usually reported first by
 * mpirun itself, which then ends the job. MPI errors are returned (MPI_ERRORS_RETURN), not fatal,
 * so they reach the caller as messages too. The timeout is 60 s unless ts_comm_set_timeout says
 * otherwise (the command's --comm-timeout).
 *
 * Environment read: only the launcher's facts, to tell a rank of an mpirun job from a process
 * alone (launched_size): OMPI_COMM_WORLD_SIZE, PMI_SIZE, PMIX_RANK and PMIX_SIZE. Nothing that
 * changes a result.
 */
#include "comm/comm.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#ifdef TS_HAVE_MPI
#include <mpi.h>
#endif

/* LeakSanitizer builds: Open MPI keeps memory it never frees, much of it allocated by plugins it
 * unloads at MPI_Finalize (so no suppression can name them). MPI's calls run with the leak
 * checker's eye closed (on the threads that make them: the progress and responder threads run
 * nothing else), and the check runs just before MPI_Finalize instead of at exit: tessera's own
 * leaks are unreachable by then, MPI's memory is still in use. */
#if defined(__SANITIZE_ADDRESS__)
#define TS_LSAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TS_LSAN 1
#endif
#endif
#ifdef TS_LSAN
#include <sanitizer/lsan_interface.h>
/* Open MPI's own allocations (not tessera's) are left out of the check: made on this thread
 * between the two, they are never reported. */
#define MPI_LEAKS_IGNORED_BEGIN() __lsan_disable()
#define MPI_LEAKS_IGNORED_END() __lsan_enable()
/* ... and PMIx's, made on its own thread, by name (the leak checker asks for this function: it
 * is looked up dynamically, so it stays visible under the library's -fvisibility=hidden). */
__attribute__((visibility("default"))) const char *__lsan_default_suppressions(void);
__attribute__((visibility("default"))) const char *__lsan_default_suppressions(void) { return "leak:libpmix.so\n"; }
#else
#define MPI_LEAKS_IGNORED_BEGIN() ((void)0)
#define MPI_LEAKS_IGNORED_END() ((void)0)
#endif

#define MAX_CHANNELS (1 + TS_MAX_STAGES)
#define CENSUS_SECONDS 5.0
enum { TAG_QUERY = 1, TAG_REPLY = 2 };

typedef struct chan {
#ifdef TS_HAVE_MPI
    MPI_Comm mc;
#endif
    int made;                 /* the MPI communicator exists */
    pthread_t th;
    int running;              /* the progress thread was started */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    ts_coll *q;               /* ring of posted collectives */
    uint64_t *q_ticket;
    int qcap, qhead, qn;
    uint64_t posted, done;    /* tickets are 1, 2, ...: done = the last completed */
    int failed;
    char errmsg[512];
    uint64_t *tag_ticket;     /* the in-graph collectives: tag -> ticket of its last post */
    int ntags;
    ts_comm_stats st;
} chan;

struct ts_comm {
    int id, rank, size, mpi;
    double timeout;
    _Atomic int64_t step;     /* for messages and the census */
    _Atomic int waiting;      /* a caller is blocked in ts_comm_wait */
    char waiting_what[64];
    int broken;               /* a collective failed or timed out: the communicator is unusable */
    int nch;
    chan ch[MAX_CHANNELS];
    int quit;
#ifdef TS_HAVE_MPI
    MPI_Comm watch;
    pthread_t responder;
    int responder_running;
#endif
};

static ts_comm *g_world;
static pthread_mutex_t g_world_mu = PTHREAD_MUTEX_INITIALIZER;
static int g_finalized;

static int env_int(const char *name) {
    const char *v = getenv(name);
    return v && *v ? atoi(v) : -1;
}

/* The size mpirun (or another launcher) announced, or -1 when not launched by one. */
static int launched_size(void) {
    int n = env_int("OMPI_COMM_WORLD_SIZE");
    if (n < 0) n = env_int("PMI_SIZE");
    if (n < 0 && getenv("PMIX_RANK")) n = env_int("PMIX_SIZE") > 0 ? env_int("PMIX_SIZE") : 1;
    return n;
}

static size_t dtype_bytes(const ts_coll *op) { return op->dtype == TS_DTYPE_COUNT ? 8 : ts_dtype_size(op->dtype); }

#ifdef TS_HAVE_MPI
static MPI_Datatype mpi_type(ts_dtype t) {
    switch (t) {
    case TS_F32: return MPI_FLOAT;
    case TS_I32: return MPI_INT32_T;
    case TS_I64: return MPI_INT64_T;
    case TS_U8: return MPI_UINT8_T;
    case TS_BF16: case TS_F16: return MPI_UINT16_T; /* broadcast only: 16-bit parameters */
    case TS_DTYPE_COUNT: return MPI_DOUBLE; /* ts_comm_allreduce_f64 */
    default: return MPI_DATATYPE_NULL;
    }
}

static void mpi_msg(int rc, char *out, size_t cap) {
    char s[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (MPI_Error_string(rc, s, &len) != MPI_SUCCESS) snprintf(s, sizeof s, "MPI error %d", rc);
    snprintf(out, cap, "%s", s);
}

/* An all-reduce goes in pieces of at most 4 MiB: Open MPI's shared-memory all-reduce of 2 ranks
 * on this machine (bench/replicas) moved 1.3-2.3 GB/s from 256 KiB to 4 MiB but 0.94 GB/s at 16
 * MiB and 0.24 GB/s at 64 MiB (its buffers fall out of the caches), and a BERT step's embedding
 * gradient is one 94 MB bucket. */
enum { ALLREDUCE_PIECE_BYTES = 4 << 20 };

/* Run one collective on communicator mc (blocking). An all-reduce goes in pieces (above); counts
 * above INT_MAX in pieces for broadcast (allgather and reduce-scatter take per-rank counts below
 * it). */
static int run_op(MPI_Comm mc, int size, const ts_coll *op) {
    MPI_Datatype t = mpi_type(op->dtype);
    size_t es = dtype_bytes(op);
    const int64_t piece = (int64_t)1 << 30, reduce_piece = ALLREDUCE_PIECE_BYTES / (int64_t)es;
    switch (op->kind) {
    case TS_COLL_ALLREDUCE:
        for (int64_t o = 0; o < op->count; o += reduce_piece) {
            int n = (int)(op->count - o < reduce_piece ? op->count - o : reduce_piece);
            int rc = MPI_Allreduce(MPI_IN_PLACE, (char *)op->buf + (size_t)o * es, n, t, MPI_SUM, mc);
            if (rc != MPI_SUCCESS) return rc;
        }
        return MPI_SUCCESS;
    case TS_COLL_BROADCAST:
        for (int64_t o = 0; o < op->count; o += piece) {
            int n = (int)(op->count - o < piece ? op->count - o : piece);
            int rc = MPI_Bcast((char *)op->buf + (size_t)o * es, n, t, op->root, mc);
            if (rc != MPI_SUCCESS) return rc;
        }
        return MPI_SUCCESS;
    case TS_COLL_ALLGATHER:
        return MPI_Allgather(op->in, (int)op->count, t, op->out, (int)op->count, t, mc);
    case TS_COLL_REDUCE_SCATTER:
        return MPI_Reduce_scatter_block(op->in, op->out, (int)op->count, t, MPI_SUM, mc);
    case TS_COLL_BARRIER:
        return MPI_Barrier(mc);
    }
    (void)size;
    return MPI_ERR_OP;
}
#endif

/* The same collective in a world of one rank. */
static void run_local(const ts_coll *op) {
    size_t bytes = (size_t)op->count * dtype_bytes(op);
    if ((op->kind == TS_COLL_ALLGATHER || op->kind == TS_COLL_REDUCE_SCATTER) && op->out != op->in && bytes)
        memmove(op->out, op->in, bytes);
}

static size_t op_bytes(const ts_comm *c, const ts_coll *op) {
    size_t b = (size_t)op->count * dtype_bytes(op);
    return op->kind == TS_COLL_ALLGATHER || op->kind == TS_COLL_REDUCE_SCATTER ? b * (size_t)c->size : b;
}

typedef struct thread_arg {
    ts_comm *c;
    int ch;
} thread_arg;

/* A channel's progress thread: the queue, in order. */
static void *progress(void *arg) {
    MPI_LEAKS_IGNORED_BEGIN(); /* this thread runs MPI's collectives and nothing else */
    thread_arg *ta = arg;
    ts_comm *c = ta->c;
    chan *ch = &c->ch[ta->ch];
    free(ta);
    pthread_mutex_lock(&ch->mu);
    for (;;) {
        while (!ch->qn && !c->quit) pthread_cond_wait(&ch->cv, &ch->mu);
        if (!ch->qn && c->quit) break;
        ts_coll op = ch->q[ch->qhead];
        uint64_t ticket = ch->q_ticket[ch->qhead];
        int failed = ch->failed;
        pthread_mutex_unlock(&ch->mu);
        double t0 = ts_seconds();
        char msg[512] = "";
        if (!failed) {
#ifdef TS_HAVE_MPI
            int rc = run_op(ch->mc, c->size, &op);
            if (rc != MPI_SUCCESS) mpi_msg(rc, msg, sizeof msg);
#else
            run_local(&op);
#endif
        }
        double t1 = ts_seconds();
        pthread_mutex_lock(&ch->mu);
        if (msg[0] && !ch->failed) {
            ch->failed = 1;
            snprintf(ch->errmsg, sizeof ch->errmsg, "%s", msg);
        }
        ch->st.ops++;
        ch->st.bytes += op_bytes(c, &op);
        ch->st.busy_s += t1 - t0;
        ch->qhead = (ch->qhead + 1) % ch->qcap;
        ch->qn--;
        ch->done = ticket;
        pthread_cond_broadcast(&ch->cv);
    }
    pthread_mutex_unlock(&ch->mu);
    return NULL;
}

#ifdef TS_HAVE_MPI
/* What a rank answers the census with. */
typedef struct census_reply {
    int64_t step;
    int32_t waiting;
    char what[64];
} census_reply;

static void fill_reply(ts_comm *c, census_reply *r) {
    memset(r, 0, sizeof *r);
    r->step = atomic_load(&c->step);
    r->waiting = atomic_load(&c->waiting);
    if (r->waiting) snprintf(r->what, sizeof r->what, "%s", c->waiting_what);
}

/* The responder: answers every "where are you?" until the communicator shuts down. */
static void *responder(void *arg) {
    MPI_LEAKS_IGNORED_BEGIN(); /* this thread runs MPI's calls and nothing else */
    ts_comm *c = arg;
    for (;;) {
        int64_t q;
        MPI_Request req;
        MPI_Status status;
        if (MPI_Irecv(&q, 1, MPI_INT64_T, MPI_ANY_SOURCE, TAG_QUERY, c->watch, &req) != MPI_SUCCESS) return NULL;
        int flag = 0;
        while (!flag) {
            if (MPI_Test(&req, &flag, &status) != MPI_SUCCESS) return NULL;
            if (flag) break;
            if (__atomic_load_n(&c->quit, __ATOMIC_ACQUIRE)) {
                MPI_Cancel(&req);
                MPI_Wait(&req, MPI_STATUS_IGNORE);
                return NULL;
            }
            nanosleep(&(struct timespec){0, 20 * 1000 * 1000}, NULL);
        }
        census_reply r;
        fill_reply(c, &r);
        MPI_Send(&r, (int)sizeof r, MPI_BYTE, status.MPI_SOURCE, TAG_REPLY, c->watch);
    }
}

/* Ask every other rank where it is; describe the ranks that are not where this one waits. */
static void census(ts_comm *c, const char *what, char *out, size_t cap) {
    int n = c->size;
    MPI_Request *rq = malloc(sizeof(MPI_Request) * (size_t)n * 2);
    census_reply *rep = calloc((size_t)n, sizeof *rep);
    int *got = calloc((size_t)n, sizeof(int));
    int64_t me = atomic_load(&c->step);
    if (!rq || !rep || !got) {
        free(rq), free(rep), free(got);
        snprintf(out, cap, "(out of memory asking the other ranks)");
        return;
    }
    for (int r = 0; r < n; r++) {
        rq[2 * r] = rq[2 * r + 1] = MPI_REQUEST_NULL;
        if (r == c->rank) continue;
        MPI_Isend(&me, 1, MPI_INT64_T, r, TAG_QUERY, c->watch, &rq[2 * r]);
        MPI_Irecv(&rep[r], (int)sizeof rep[r], MPI_BYTE, r, TAG_REPLY, c->watch, &rq[2 * r + 1]);
    }
    double limit = c->timeout < CENSUS_SECONDS ? c->timeout : CENSUS_SECONDS, t0 = ts_seconds();
    int left = n - 1;
    while (left > 0 && ts_seconds() - t0 < limit) {
        for (int r = 0; r < n; r++) {
            if (r == c->rank || got[r]) continue;
            int flag = 0;
            MPI_Test(&rq[2 * r + 1], &flag, MPI_STATUS_IGNORE);
            if (flag) got[r] = 1, left--;
        }
        if (left) nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
    }
    size_t o = 0;
    char list[256];
    size_t lo = 0;
    int nmissing = 0;
    for (int r = 0; r < n; r++)
        if (r != c->rank && !got[r] && lo < sizeof list)
            lo += (size_t)snprintf(list + lo, sizeof list - lo, "%s%d", nmissing++ ? ", " : "", r);
    if (nmissing)
        o += (size_t)snprintf(out + o, cap - o, "rank%s %s did not answer (dead or stopped)", nmissing > 1 ? "s" : "", list);
    for (int r = 0; r < n && o < cap; r++) {
        if (r == c->rank || !got[r]) continue;
        if (rep[r].waiting && !strcmp(rep[r].what, what) && rep[r].step == me) continue; /* where this one is */
        o += (size_t)snprintf(out + o, cap - o, "%srank %d is at step %lld, %s%s", o ? "; " : "", r,
                              (long long)rep[r].step, rep[r].waiting ? "waiting in " : "not in a collective",
                              rep[r].waiting ? rep[r].what : "");
    }
    if (!o) snprintf(out, cap, "every rank answered and waits in %s too (a network stall?)", what);
    /* unanswered requests stay posted: the job ends after this message */
    for (int r = 0; r < n; r++) {
        if (r == c->rank) continue;
        if (rq[2 * r] != MPI_REQUEST_NULL) MPI_Request_free(&rq[2 * r]);
        if (got[r]) continue;
        MPI_Cancel(&rq[2 * r + 1]);
        MPI_Request_free(&rq[2 * r + 1]);
    }
    free(rq), free(rep), free(got);
}
#endif

/* ---------------------------------------------------------------- the world */

#ifdef TS_HAVE_MPI
static void finalize_at_exit(void) { ts_comm_finalize(); }
#endif

static ts_comm *new_comm(void) {
    ts_comm *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->timeout = 60;
    c->size = 1;
    for (int i = 0; i < MAX_CHANNELS; i++) {
        pthread_mutex_init(&c->ch[i].mu, NULL);
        pthread_cond_init(&c->ch[i].cv, NULL);
    }
    return c;
}

ts_comm *ts_comm_world(void) {
    pthread_mutex_lock(&g_world_mu);
    ts_comm *c = g_world;
    if (c || g_finalized) {
        pthread_mutex_unlock(&g_world_mu);
        if (!c) ts_err(TS_ERR_COMM, "ts_comm_world: the communicator was finalized");
        return c;
    }
    int n = launched_size();
    if (!(c = new_comm())) {
        pthread_mutex_unlock(&g_world_mu);
        ts_err(TS_ERR_NOMEM, "ts_comm_world: out of memory");
        return NULL;
    }
#ifdef TS_HAVE_MPI
    if (n >= 1) {
        int provided = 0;
        /* A rank waiting in a collective for a slower one polls; Open MPI spins on a core while
         * it waits unless told to yield when there is nothing to progress. Ranks that share a
         * host's cores (replicas on one machine) would lose a core per waiting progress thread to
         * that spin, so ask it to yield (sched_yield between empty polls), unless the user chose. */
        setenv("OMPI_MCA_mpi_yield_when_idle", "1", 0);
        MPI_LEAKS_IGNORED_BEGIN();
        int rc = MPI_Init_thread(NULL, NULL, MPI_THREAD_MULTIPLE, &provided);
        MPI_LEAKS_IGNORED_END();
        if (rc != MPI_SUCCESS) {
            char m[512];
            mpi_msg(rc, m, sizeof m);
            free(c);
            pthread_mutex_unlock(&g_world_mu);
            ts_err(TS_ERR_COMM, "ts_comm_world: MPI_Init_thread failed: %s", m);
            return NULL;
        }
        if (provided < MPI_THREAD_MULTIPLE) {
            free(c);
            pthread_mutex_unlock(&g_world_mu);
            MPI_Finalize();
            ts_err(TS_ERR_COMM, "ts_comm_world: this MPI gives thread level %d, not MPI_THREAD_MULTIPLE (%d), which "
                   "tessera's progress threads need", provided, MPI_THREAD_MULTIPLE);
            return NULL;
        }
        c->mpi = 1;
        MPI_Comm_rank(MPI_COMM_WORLD, &c->rank);
        MPI_Comm_size(MPI_COMM_WORLD, &c->size);
        MPI_LEAKS_IGNORED_BEGIN();
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
        MPI_Comm_dup(MPI_COMM_WORLD, &c->watch);
        MPI_Comm_set_errhandler(c->watch, MPI_ERRORS_RETURN);
        MPI_LEAKS_IGNORED_END();
        if (c->size > 1 && pthread_create(&c->responder, NULL, responder, c) == 0) c->responder_running = 1;
        atexit(finalize_at_exit);
    }
#else
    if (n > 1) {
        free(c);
        pthread_mutex_unlock(&g_world_mu);
        ts_err(TS_ERR_UNSUPPORTED, "ts_comm_world: this process is rank of a job of %d (started by mpirun), but "
               "tessera was built without MPI: install libopenmpi-dev (scripts/install-deps.sh) and configure with "
               "-DTS_WITH_MPI=ON (or AUTO)", n);
        return NULL;
    }
#endif
    g_world = c;
    pthread_mutex_unlock(&g_world_mu);
    if (ts_comm_channels(c, 1) != TS_OK) return NULL;
    return c;
}

ts_comm *ts_comm_by_id(int id) { return id == 0 ? g_world : NULL; }
int ts_comm_id(const ts_comm *c) { return c ? c->id : -1; }
int ts_comm_rank(const ts_comm *c) { return c ? c->rank : 0; }
int ts_comm_size(const ts_comm *c) { return c ? c->size : 1; }
const char *ts_comm_backend(void) {
#ifdef TS_HAVE_MPI
    return "mpi";
#else
    return "none";
#endif
}

void ts_comm_set_timeout(ts_comm *c, double seconds) {
    if (c && seconds > 0) c->timeout = seconds;
}
double ts_comm_timeout(const ts_comm *c) { return c ? c->timeout : 0; }
void ts_comm_set_step(ts_comm *c, int64_t step) {
    if (c) atomic_store(&c->step, step);
}

ts_status ts_comm_channels(ts_comm *c, int n) {
    if (!c) return ts_err(TS_ERR_ARG, "ts_comm_channels: communicator is NULL");
    if (n > MAX_CHANNELS)
        return ts_err(TS_ERR_ARG, "ts_comm_channels: %d channels asked for; at most %d (1 + TS_MAX_STAGES)", n,
                      MAX_CHANNELS);
    while (c->nch < n) {
        chan *ch = &c->ch[c->nch];
#ifdef TS_HAVE_MPI
        if (c->mpi) {
            MPI_LEAKS_IGNORED_BEGIN();
            int rc = MPI_Comm_dup(MPI_COMM_WORLD, &ch->mc);
            MPI_LEAKS_IGNORED_END();
            if (rc != MPI_SUCCESS) {
                char m[512];
                mpi_msg(rc, m, sizeof m);
                return ts_err(TS_ERR_COMM, "ts_comm_channels: MPI_Comm_dup failed: %s", m);
            }
            MPI_Comm_set_errhandler(ch->mc, MPI_ERRORS_RETURN);
        }
#endif
        ch->made = 1;
        c->nch++;
    }
    return TS_OK;
}

/* ---------------------------------------------------------------- posting and waiting */

ts_status ts_comm_post(ts_comm *c, int chi, const ts_coll *op, uint64_t *ticket) {
    if (!c || chi < 0 || chi >= c->nch) return ts_err(TS_ERR_ARG, "ts_comm_post: no channel %d", chi);
    chan *ch = &c->ch[chi];
    if (c->size == 1 || !c->mpi) { /* one rank: done at once, on this thread */
        run_local(op);
        pthread_mutex_lock(&ch->mu);
        *ticket = ++ch->posted;
        ch->done = ch->posted;
        ch->st.ops++;
        ch->st.bytes += op_bytes(c, op);
        pthread_mutex_unlock(&ch->mu);
        return TS_OK;
    }
    pthread_mutex_lock(&ch->mu);
    if (ch->qn == ch->qcap) { /* grow the ring, keeping its order */
        int ncap = ch->qcap ? 2 * ch->qcap : 64;
        ts_coll *nq = malloc(sizeof *nq * (size_t)ncap);
        uint64_t *nt = malloc(sizeof *nt * (size_t)ncap);
        if (!nq || !nt) {
            free(nq), free(nt);
            pthread_mutex_unlock(&ch->mu);
            return ts_err(TS_ERR_NOMEM, "ts_comm_post: out of memory");
        }
        for (int k = 0; k < ch->qn; k++) {
            nq[k] = ch->q[(ch->qhead + k) % ch->qcap];
            nt[k] = ch->q_ticket[(ch->qhead + k) % ch->qcap];
        }
        free(ch->q), free(ch->q_ticket);
        ch->q = nq, ch->q_ticket = nt, ch->qcap = ncap, ch->qhead = 0;
    }
    if (!ch->running) {
        thread_arg *ta = malloc(sizeof *ta);
        if (!ta || (ta->c = c, ta->ch = chi, pthread_create(&ch->th, NULL, progress, ta) != 0)) {
            free(ta);
            pthread_mutex_unlock(&ch->mu);
            return ts_err(TS_ERR_RUNTIME, "ts_comm_post: cannot start a progress thread");
        }
        ch->running = 1;
    }
    int k = (ch->qhead + ch->qn) % ch->qcap;
    ch->q[k] = *op;
    ch->q_ticket[k] = *ticket = ++ch->posted;
    ch->qn++;
    pthread_cond_broadcast(&ch->cv);
    pthread_mutex_unlock(&ch->mu);
    return TS_OK;
}

ts_status ts_comm_wait(ts_comm *c, int chi, uint64_t ticket, const char *what) {
    if (!c || chi < 0 || chi >= c->nch) return ts_err(TS_ERR_ARG, "ts_comm_wait: no channel %d", chi);
    chan *ch = &c->ch[chi];
    if (c->broken) return ts_err(TS_ERR_COMM, "rank %d: %s: an earlier collective of this job failed", c->rank, what);
    double t0 = ts_seconds(), deadline = t0 + c->timeout;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    double wall = (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec + c->timeout;
    ts.tv_sec = (time_t)wall;
    ts.tv_nsec = (long)((wall - (double)ts.tv_sec) * 1e9);
    pthread_mutex_lock(&ch->mu);
    if (ch->done < ticket) {
        snprintf(c->waiting_what, sizeof c->waiting_what, "%s", what);
        atomic_fetch_add(&c->waiting, 1);
    }
    int waited = ch->done < ticket;
    while (ch->done < ticket && !ch->failed)
        if (pthread_cond_timedwait(&ch->cv, &ch->mu, &ts) == ETIMEDOUT && ts_seconds() >= deadline) break;
    int ok = ch->done >= ticket && !ch->failed, failed = ch->failed;
    char err[512];
    snprintf(err, sizeof err, "%s", ch->errmsg);
    ch->st.wait_s += ts_seconds() - t0;
    pthread_mutex_unlock(&ch->mu);
    if (waited) atomic_fetch_sub(&c->waiting, 1);
    if (ok) return TS_OK;
    c->broken = 1;
    int64_t step = atomic_load(&c->step);
    if (failed)
        return ts_err(TS_ERR_COMM, "rank %d, step %lld: %s failed: %s", c->rank, (long long)step, what, err);
    char who[1024] = "";
#ifdef TS_HAVE_MPI
    MPI_LEAKS_IGNORED_BEGIN();
    census(c, what, who, sizeof who);
    MPI_LEAKS_IGNORED_END();
#endif
    return ts_err(TS_ERR_COMM, "rank %d, step %lld: %s did not complete within %g s (the communicator's timeout): %s", c->rank,
                  (long long)step, what, c->timeout, who);
}

ts_status ts_comm_post_tag(ts_comm *c, int chi, int tag, const ts_coll *op) {
    if (!c || chi < 0 || chi >= c->nch || tag < 0) return ts_err(TS_ERR_ARG, "ts_comm_post_tag: no channel %d", chi);
    chan *ch = &c->ch[chi];
    pthread_mutex_lock(&ch->mu);
    if (tag >= ch->ntags) {
        uint64_t *nt = realloc(ch->tag_ticket, sizeof *nt * (size_t)(tag + 1));
        if (!nt) {
            pthread_mutex_unlock(&ch->mu);
            return ts_err(TS_ERR_NOMEM, "ts_comm_post_tag: out of memory");
        }
        memset(nt + ch->ntags, 0, sizeof *nt * (size_t)(tag + 1 - ch->ntags));
        ch->tag_ticket = nt, ch->ntags = tag + 1;
    }
    pthread_mutex_unlock(&ch->mu);
    uint64_t t;
    ts_status s = ts_comm_post(c, chi, op, &t);
    if (s) return s;
    pthread_mutex_lock(&ch->mu);
    ch->tag_ticket[tag] = t;
    pthread_mutex_unlock(&ch->mu);
    return TS_OK;
}

ts_status ts_comm_wait_tag(ts_comm *c, int chi, int tag, const char *what) {
    if (!c || chi < 0 || chi >= c->nch || tag < 0) return ts_err(TS_ERR_ARG, "ts_comm_wait_tag: no channel %d", chi);
    chan *ch = &c->ch[chi];
    pthread_mutex_lock(&ch->mu);
    uint64_t t = tag < ch->ntags ? ch->tag_ticket[tag] : 0;
    pthread_mutex_unlock(&ch->mu);
    return t ? ts_comm_wait(c, chi, t, what) : TS_OK;
}

/* ---------------------------------------------------------------- host collectives */

static ts_status host_op(ts_comm *c, const ts_coll *op, const char *fn) {
    if (!c) return ts_err(TS_ERR_ARG, "%s: communicator is NULL", fn);
    if (op->count < 0) return ts_err(TS_ERR_ARG, "%s: count %lld is negative", fn, (long long)op->count);
    if (op->kind == TS_COLL_BROADCAST && (op->root < 0 || op->root >= c->size))
        return ts_err(TS_ERR_ARG, "%s: root %d is not a rank of %d", fn, op->root, c->size);
    if ((op->kind == TS_COLL_ALLGATHER || op->kind == TS_COLL_REDUCE_SCATTER) && op->count > (1 << 30))
        return ts_err(TS_ERR_ARG, "%s: %lld elements per rank; at most 2^30", fn, (long long)op->count);
    if (op->dtype != TS_DTYPE_COUNT && op->kind != TS_COLL_BARRIER && op->kind != TS_COLL_BROADCAST &&
        op->dtype != TS_F32 && op->dtype != TS_I32 && op->dtype != TS_I64)
        return ts_err(TS_ERR_DTYPE, "%s: dtype %s; f32, i32 or i64 are summed", fn, ts_dtype_name(op->dtype));
    static const char *const what[] = {"a host all-reduce", "a host broadcast", "a host all-gather",
                                       "a host reduce-scatter", "a barrier"};
    uint64_t t;
    ts_status s = ts_comm_post(c, 0, op, &t);
    return s ? s : ts_comm_wait(c, 0, t, what[op->kind]);
}

ts_status ts_comm_allreduce(ts_comm *c, void *buf, int64_t count, ts_dtype dtype) {
    ts_coll op = {.kind = TS_COLL_ALLREDUCE, .buf = buf, .count = count, .dtype = dtype};
    return host_op(c, &op, "ts_comm_allreduce");
}

ts_status ts_comm_allreduce_f64(ts_comm *c, double *buf, int64_t count) {
    ts_coll op = {.kind = TS_COLL_ALLREDUCE, .buf = buf, .count = count, .dtype = TS_DTYPE_COUNT};
    return host_op(c, &op, "ts_comm_allreduce");
}

ts_status ts_comm_reduce_scatter(ts_comm *c, const void *in, void *out, int64_t count, ts_dtype dtype) {
    ts_coll op = {.kind = TS_COLL_REDUCE_SCATTER, .in = in, .out = out, .count = count, .dtype = dtype};
    return host_op(c, &op, "ts_comm_reduce_scatter");
}

ts_status ts_comm_allgather(ts_comm *c, const void *in, void *out, int64_t count, ts_dtype dtype) {
    ts_coll op = {.kind = TS_COLL_ALLGATHER, .in = in, .out = out, .count = count, .dtype = dtype};
    return host_op(c, &op, "ts_comm_allgather");
}

ts_status ts_comm_broadcast(ts_comm *c, void *buf, size_t bytes, int root) {
    ts_coll op = {.kind = TS_COLL_BROADCAST, .buf = buf, .count = (int64_t)bytes, .dtype = TS_U8, .root = root};
    return host_op(c, &op, "ts_comm_broadcast");
}

ts_status ts_comm_barrier(ts_comm *c) {
    ts_coll op = {.kind = TS_COLL_BARRIER, .dtype = TS_U8};
    return host_op(c, &op, "ts_comm_barrier");
}

void ts_comm_get_stats(const ts_comm *c, int in_graph, ts_comm_stats *s) {
    memset(s, 0, sizeof *s);
    if (!c) return;
    for (int i = in_graph ? 1 : 0; i < (in_graph ? c->nch : (c->nch > 0 ? 1 : 0)); i++) {
        chan *ch = (chan *)&c->ch[i];
        pthread_mutex_lock(&ch->mu);
        s->ops += ch->st.ops, s->bytes += ch->st.bytes, s->busy_s += ch->st.busy_s, s->wait_s += ch->st.wait_s;
        pthread_mutex_unlock(&ch->mu);
    }
}

void ts_comm_reset_stats(ts_comm *c) {
    if (!c) return;
    for (int i = 0; i < c->nch; i++) {
        pthread_mutex_lock(&c->ch[i].mu);
        memset(&c->ch[i].st, 0, sizeof c->ch[i].st);
        pthread_mutex_unlock(&c->ch[i].mu);
    }
}

void ts_comm_abort(ts_comm *c, int code) {
    fflush(stdout);
    fflush(stderr);
#ifdef TS_HAVE_MPI
    if (c && c->mpi) MPI_Abort(MPI_COMM_WORLD, code ? code : 1);
#endif
    (void)c;
    _exit(code ? code : 1);
}

void ts_comm_finalize(void) {
    pthread_mutex_lock(&g_world_mu);
    ts_comm *c = g_world;
    g_world = NULL;
    g_finalized = 1;
    pthread_mutex_unlock(&g_world_mu);
    if (!c) return;
    __atomic_store_n(&c->quit, 1, __ATOMIC_RELEASE);
    for (int i = 0; i < c->nch; i++) {
        chan *ch = &c->ch[i];
        pthread_mutex_lock(&ch->mu);
        pthread_cond_broadcast(&ch->cv);
        pthread_mutex_unlock(&ch->mu);
        if (ch->running && !c->broken) pthread_join(ch->th, NULL);
    }
#ifdef TS_HAVE_MPI
    if (c->mpi) {
        if (c->responder_running) pthread_join(c->responder, NULL);
        if (c->broken) { /* a thread may be stuck in MPI: the job cannot end cleanly */
            fflush(stdout);
            fflush(stderr);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        MPI_LEAKS_IGNORED_BEGIN();
        for (int i = 0; i < c->nch; i++)
            if (c->ch[i].made) MPI_Comm_free(&c->ch[i].mc);
        MPI_Comm_free(&c->watch);
        MPI_LEAKS_IGNORED_END();
#ifdef TS_LSAN
        __lsan_do_leak_check();
#endif
        MPI_Finalize();
    }
#endif
    for (int i = 0; i < MAX_CHANNELS; i++) {
        free(c->ch[i].q), free(c->ch[i].q_ticket), free(c->ch[i].tag_ticket);
        pthread_mutex_destroy(&c->ch[i].mu);
        pthread_cond_destroy(&c->ch[i].cv);
    }
    free(c);
}
