/*
 * test_comm.c — communicators and the in-graph all-reduce (tessera.h "Replicas"):
 *  - alone (no mpirun): a world of one rank, where every collective is a copy; bad arguments;
 *  - under mpirun (the test starts itself with `mpirun --oversubscribe -np 3` and `-np 4` when
 *    this build has MPI and mpirun is installed): all-reduce (f32, i32, i64, f64), reduce-scatter,
 *    all-gather, broadcast and barrier give the sums and copies computed here; a small model
 *    trained with ts_optimizer(comm) — gradients accumulated over 2 micro-batches on each rank,
 *    several buckets, clipping — equals, on every rank, the same model trained by one rank with
 *    2 x R micro-batches a step (within 1e-5 relative), with and without shard_state, and with
 *    LAMB (trust ratios) and dynamic loss scaling; the
 *    buckets' all-reduces are placed inside the backward pass (before its last node), right
 *    after their gradients; shard_state keeps about 1/R of the moments per rank;
 *  - a timeout: rank 1 stays away from a barrier; rank 0 fails after --comm-timeout with
 *    TS_ERR_COMM naming rank 1 and the step it is at (a job of its own, which must end non-zero).
 */
#include "test_util.h"

#include "graph/ir.h"
#include "ops/op.h"

static int R = 1, me = 0;
static ts_comm *comm;

static void test_single(void) {
    ts_comm *c = ts_comm_world();
    CHECK(c && ts_comm_size(c) == 1 && ts_comm_rank(c) == 0, "a lone process is a world of one rank");
    float x[3] = {1, 2, 3}, y[3] = {0};
    CHECK_OK(ts_comm_allreduce(c, x, 3, TS_F32));
    CHECK(x[0] == 1 && x[2] == 3, "all-reduce of one rank changed its values");
    CHECK_OK(ts_comm_allgather(c, x, y, 3, TS_F32));
    CHECK(y[1] == 2, "all-gather of one rank is a copy");
    memset(y, 0, sizeof y);
    CHECK_OK(ts_comm_reduce_scatter(c, x, y, 3, TS_F32));
    CHECK(y[2] == 3, "reduce-scatter of one rank is a copy");
    CHECK_OK(ts_comm_broadcast(c, x, sizeof x, 0));
    CHECK_OK(ts_comm_barrier(c));
    CHECK_STATUS(ts_comm_broadcast(c, x, sizeof x, 1), TS_ERR_ARG);
    CHECK_ERRMSG("root 1 is not a rank of 1");
    CHECK_STATUS(ts_comm_allreduce(c, x, 3, TS_BF16), TS_ERR_DTYPE);
    CHECK_STATUS(ts_comm_allreduce(c, x, -1, TS_F32), TS_ERR_ARG);
    ts_comm_set_timeout(c, 7);
    CHECK(ts_comm_timeout(c) == 7, "timeout %g", ts_comm_timeout(c));
    ts_comm_stats st;
    ts_comm_get_stats(c, 0, &st);
    CHECK(st.ops >= 4, "host collectives counted: %llu", (unsigned long long)st.ops);
    /* an optimizer over a world of one is the plain optimizer; sharding needs two ranks */
    ts_graph *g = ts_graph_new();
    ts_value w = ts_param(g, "w", TS_F32, 1, (int64_t[]){4}, ts_init_normal(0.1f));
    ts_value l = ts_reduce_sum(g, ts_mul(g, w, w), 0, NULL, 0);
    CHECK_OK(ts_backward(g, l));
    ts_optim_opts o = ts_optim_defaults(TS_OPTIM_ADAMW);
    o.comm = c;
    o.shard_state = 1;
    CHECK_STATUS(ts_optimizer(g, ts_scalar(g, 0.1f), &o), TS_ERR_ARG);
    CHECK_ERRMSG("shard_state needs a communicator of 2 or more ranks");
    ts_graph_free(g);
}

/* ------------------------------------------------------------------ under mpirun */

static void test_collectives(void) {
    enum { N = 5 };
    float f[N];
    int32_t i32[N];
    int64_t i64[N];
    double d[N];
    for (int k = 0; k < N; k++) f[k] = (float)(me + k), i32[k] = me * 10 + k, i64[k] = (int64_t)me << 33, d[k] = 0.5 * me;
    CHECK_OK(ts_comm_allreduce(comm, f, N, TS_F32));
    CHECK_OK(ts_comm_allreduce(comm, i32, N, TS_I32));
    CHECK_OK(ts_comm_allreduce(comm, i64, N, TS_I64));
    CHECK_OK(ts_comm_allreduce_f64(comm, d, N));
    int s = R * (R - 1) / 2; /* the sum of the ranks */
    for (int k = 0; k < N; k++) {
        CHECK(f[k] == (float)(s + R * k), "f32 all-reduce [%d]: %g, want %d", k, (double)f[k], s + R * k);
        CHECK(i32[k] == 10 * s + R * k, "i32 all-reduce [%d]: %d", k, i32[k]);
        CHECK(i64[k] == (int64_t)s << 33, "i64 all-reduce [%d]", k);
        CHECK(d[k] == 0.5 * s, "f64 all-reduce [%d]: %g", k, d[k]);
    }
    /* reduce-scatter: rank r gets the sum over ranks q of in_q[r count + k] = q + r + k */
    float in[4 * 3], out[3];
    for (int r = 0; r < R; r++)
        for (int k = 0; k < 3; k++) in[r * 3 + k] = (float)(me + r + k);
    CHECK_OK(ts_comm_reduce_scatter(comm, in, out, 3, TS_F32));
    for (int k = 0; k < 3; k++) CHECK(out[k] == (float)(s + R * (me + k)), "reduce-scatter [%d]: %g", k, (double)out[k]);
    int32_t mine[2] = {me, -me}, all[8] = {0};
    CHECK_OK(ts_comm_allgather(comm, mine, all, 2, TS_I32));
    for (int r = 0; r < R; r++) CHECK(all[2 * r] == r && all[2 * r + 1] == -r, "all-gather from rank %d", r);
    char msg[32] = "";
    if (me == R - 1) snprintf(msg, sizeof msg, "from rank %d", me);
    CHECK_OK(ts_comm_broadcast(comm, msg, sizeof msg, R - 1));
    char want[32];
    snprintf(want, sizeof want, "from rank %d", R - 1);
    CHECK(!strcmp(msg, want), "broadcast: '%s'", msg);
    CHECK_OK(ts_comm_barrier(comm));
}

enum { IN = 6, OUT = 3, B = 4, STEPS = 5, NACC = 2 };

/* Micro-batch m (global index) of the data: x [B, IN], y [B, OUT]. */
static void batch(int m, float *x, float *y) {
    tu_rng s = tu_rng_seed(1000 + (uint64_t)m);
    for (int i = 0; i < B * IN; i++) x[i] = (float)tu_uniform(&s, -1, 1);
    for (int i = 0; i < B * OUT; i++) y[i] = (float)tu_uniform(&s, -1, 1);
}

/* A two-layer net: y' = tanh(x w1 + b1) w2; loss = mean((y' - y)^2). Trained with AdamW and
 * clipping at 0.5 (lamb: LAMB, with dynamic loss scaling from 2^10) and `accum` micro-batches a
 * step; comm (may be NULL) sums over replicas. */
static ts_graph *net(int accum, ts_comm *c, int shard, int lamb) {
    ts_graph *g = ts_graph_new();
    ts_graph_set_seed(g, 5);
    ts_value x = ts_input(g, "x", TS_F32, 2, (int64_t[]){B, IN}), y = ts_input(g, "y", TS_F32, 2, (int64_t[]){B, OUT});
    ts_value w1 = ts_param(g, "w1", TS_F32, 2, (int64_t[]){IN, 8}, ts_init_normal(0.5f));
    ts_value b1 = ts_param(g, "b1", TS_F32, 1, (int64_t[]){8}, ts_init_normal(0.1f));
    ts_value w2 = ts_param(g, "w2", TS_F32, 2, (int64_t[]){8, OUT}, ts_init_normal(0.5f));
    ts_value h = ts_tanh(g, ts_add(g, ts_matmul(g, x, w1, 0, 0), b1));
    ts_value d = ts_sub(g, ts_matmul(g, h, w2, 0, 0), y);
    ts_value loss = ts_reduce_mean(g, ts_mul(g, d, d), 0, NULL, 0);
    ts_name(g, loss, "loss");
    ts_loss_scale_opts ls = ts_loss_scale_defaults();
    ls.init_scale = 1024;
    CHECK_OK(lamb ? ts_backward_scaled(g, loss, &ls) : ts_backward(g, loss));
    ts_value lr = ts_scalar(g, 0.05f);
    ts_optim_opts o = ts_optim_defaults(lamb ? TS_OPTIM_LAMB : TS_OPTIM_ADAMW);
    o.accumulation_steps = accum;
    o.max_grad_norm = 0.5f;
    o.comm = c;
    o.shard_state = shard;
    o.bucket_bytes = 100; /* several buckets: w2, then b1, then w1 */
    CHECK_OK(ts_optimizer(g, lr, &o));
    return g;
}

/* Run `steps` steps of program p whose run k reads micro-batch index(k). */
static void train(ts_program *p, int runs, int stride, int offset) {
    float x[B * IN], y[B * OUT];
    for (int k = 0; k < runs; k++) {
        batch(k * stride + offset, x, y);
        ts_tensor *tx = ts_tensor_from(TS_F32, 2, (int64_t[]){B, IN}, x);
        ts_tensor *ty = ts_tensor_from(TS_F32, 2, (int64_t[]){B, OUT}, y);
        CHECK_OK(ts_program_feed(p, "x", tx));
        CHECK_OK(ts_program_feed(p, "y", ty));
        CHECK_OK(ts_program_run(p));
        ts_tensor_free(tx), ts_tensor_free(ty);
    }
}

static void test_training(void) {
    for (int variant = 0; variant < 3; variant++) {
        int shard = variant == 1, lamb = variant == 2;
        /* the replica: its micro-batches j R + me of each step's 2 R */
        ts_graph *g = net(NACC, comm, shard, lamb);
        int starts = 0, first_start = -1;
        for (int i = 0; i < g->nnodes; i++)
            if (g->nodes[i].op == TS_OP_COMM_START && g->nodes[i].attr.i[2] == 0) {
                starts++;
                if (first_start < 0) first_start = i;
            }
        CHECK(starts == 3, "%d gradient buckets, want 3 (bucket_bytes 100)", starts);
        CHECK(first_start > g->bwd_start && first_start < g->opt_start,
              "the first bucket's all-reduce (node %d) is not inside the backward pass (%d .. %d)", first_start,
              g->bwd_start, g->opt_start);
        ts_program *p = ts_compile(g, &(ts_compile_opts){.num_threads = 1, TU_FETCHES("loss")});
        CHECK(p, "compile: %s", ts_last_error());
        if (!p) return;
        ts_memory mem = {.struct_size = sizeof mem};
        ts_program_memory(p, &mem);
        CHECK(mem.grad_buckets >= 4 * (IN * 8 + 8 + 8 * OUT), "gradient buckets %zu bytes", mem.grad_buckets);
        train(p, STEPS * NACC, R, me);
        /* the reference, on this rank alone: every micro-batch of the step, in order */
        ts_graph *gr = net(NACC * R, NULL, 0, lamb);
        ts_program *pr = ts_compile(gr, &(ts_compile_opts){.num_threads = 1, TU_FETCHES("loss")});
        CHECK(pr, "compile: %s", ts_last_error());
        if (!pr) return;
        train(pr, STEPS * NACC * R, 1, 0);
        ts_memory mr = {.struct_size = sizeof mr};
        ts_program_memory(pr, &mr);
        if (shard)
            CHECK(mem.optimizer_state < 0.8 * mr.optimizer_state, "sharded: %zu bytes of optimizer state, all %zu",
                  mem.optimizer_state, mr.optimizer_state);
        static const char *const names[] = {"w1", "b1", "w2"};
        for (int i = 0; i < 3; i++) {
            ts_tensor *a = NULL, *b = NULL;
            CHECK_OK(ts_program_get_param(p, names[i], &a));
            CHECK_OK(ts_program_get_param(pr, names[i], &b));
            if (!a || !b) break;
            double dd = 0, ss = 0;
            for (int64_t k = 0; k < ts_tensor_numel(a); k++) {
                double u = ((float *)ts_tensor_data(a))[k], v = ((float *)ts_tensor_data(b))[k];
                dd += (u - v) * (u - v), ss += v * v;
            }
            CHECK(sqrt(dd) <= 1e-5 * sqrt(ss), "%s, rank %d: %s differs from one process's by %.3g relative",
                  shard ? "shard_state" : lamb ? "LAMB with loss scaling" : "AdamW", me, names[i], sqrt(dd / ss));
            ts_tensor_free(a), ts_tensor_free(b);
        }
        ts_program_free(p), ts_program_free(pr);
        ts_graph_free(g), ts_graph_free(gr);
    }
}

/* A job of its own: rank 1 stays away from the barrier for 4 s; rank 0's 1 s timeout names it. */
static int timeout_case(void) {
    ts_comm_set_timeout(comm, 1);
    ts_comm_set_step(comm, 5);
    if (me == 1) sleep(4);
    ts_status s = ts_comm_barrier(comm);
    if (me == 0) {
        fprintf(stderr, "rank 0: %s: %s\n", ts_status_name(s), ts_last_error());
        return s == TS_ERR_COMM ? 3 : 0; /* 3: the expected failure */
    }
    return 0;
}

/* Run the test under `mpirun -np n` (args after the program); the job's exit code. */
static int mpirun(int n, const char *args, char *err, size_t cap) {
    char self[4096], cmd[8400];
    ssize_t k = readlink("/proc/self/exe", self, sizeof self - 1);
    if (k <= 0) return -1;
    self[k] = 0;
    snprintf(cmd, sizeof cmd, "mpirun --oversubscribe -np %d '%s' %s 2>/tmp/ts_test_comm.err", n, self, args);
    int st = system(cmd);
    FILE *f = fopen("/tmp/ts_test_comm.err", "r");
    size_t got = f ? fread(err, 1, cap - 1, f) : 0;
    err[got] = 0;
    if (f) fclose(f);
    unlink("/tmp/ts_test_comm.err");
    return st == -1 || !WIFEXITED(st) ? -1 : WEXITSTATUS(st);
}

static void test_jobs(void) {
    static char err[1 << 15];
    for (int n = 3; n <= 4; n++) {
        int rc = mpirun(n, "", err, sizeof err);
        CHECK(rc == 0, "mpirun -np %d: exit %d\n%s", n, rc, err);
    }
    int rc = mpirun(2, "--timeout-case", err, sizeof err);
    CHECK(rc != 0 && strstr(err, "TS_ERR_COMM") && strstr(err, "rank 0, step 5: a barrier did not complete within 1 s") &&
              strstr(err, "rank 1 is at step 5, not in a collective"),
          "the timeout job: exit %d\n%s", rc, err);
}

int main(int argc, char **argv) {
    tu_args(argc, argv);
    setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
    setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
    if (getenv("OMPI_COMM_WORLD_SIZE")) { /* a rank: the cases in this process, no forks */
        comm = ts_comm_world();
        if (!comm) {
            fprintf(stderr, "ts_comm_world: %s\n", ts_last_error());
            return 1;
        }
        R = ts_comm_size(comm), me = ts_comm_rank(comm);
        if (argc > 1 && !strcmp(argv[1], "--timeout-case")) {
            int rc = timeout_case();
            if (rc) ts_comm_abort(comm, rc);
            ts_comm_finalize();
            return 0;
        }
        setenv("TS_TEST_NOFORK", "1", 1);
        if (me > 0 && !freopen("/dev/null", "w", stdout)) return 1; /* rank 0 reports */
        RUN(test_collectives);
        RUN(test_training);
        int failed = tu_nfail;
        int32_t any = failed;
        ts_comm_allreduce(comm, &any, 1, TS_I32);
        ts_comm_finalize();
        if (failed) fprintf(stderr, "rank %d: %d checks failed\n", me, failed);
        return tu_finish("test_comm (a rank)") || any ? 1 : 0;
    }
    RUN(test_single);
    if (!strcmp(ts_comm_backend(), "mpi") && system("mpirun --version >/dev/null 2>&1") == 0) RUN(test_jobs);
    else if (!strstr(ts_build_features(), "mpi")) /* a build without the feature: nothing to skip */
        printf("test_comm: test_jobs not run: this libtessera was built without MPI (TS_WITH_MPI)\n");
    else if (tu_wanted("test_jobs")) tu_skip_part("the jobs under mpirun (no mpirun)");
    return tu_finish("test_comm");
}
