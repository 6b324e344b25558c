/*
 * test_plan_cost.c — the planner's cost model and search (apps/plan/): a matmul node's FLOPs and
 * its time on a hand-made profile, the fused attention's nodes priced at the profile's rates of
 * the op, the 1F1B step formula and the hidden all-reduce on a 2-stage
 * toy layout and on a measured CPU profile whose devices share the host's cores, ts_plan_search's order (fitting layouts by seq/s) and a request whose every layout
 * overflows.
 */
#include "tessera_apps.h"
#include "test_util.h"

#include "plan/cost.h"

#include <unistd.h>

/* A profile of round figures: 1 GFLOP/s, 1 GB/s, 1 us a node. */
static ts_device_profile toy_profile(double memory) {
    ts_device_profile p = {.struct_size = sizeof p, .name = "toy"};
    p.memory_bytes = memory;
    for (int d = 0; d < 3; d++) p.peak_flops[d] = 1e9, p.eff_matmul[d] = 1;
    p.mem_bw = 1e9, p.eff_mem = 1, p.node_overhead = 1e-6;
    p.link_bw = 1e9, p.host_bw = 1e9, p.devices_per_host = 8;
    return p;
}

static void test_matmul_node(void) {
    ts_graph *g = ts_graph_new();
    ts_value a = ts_input(g, "a", TS_F32, 2, (int64_t[]){4, 8});
    ts_value b = ts_input(g, "b", TS_F32, 2, (int64_t[]){8, 16});
    ts_name(g, ts_matmul(g, a, b, 0, 0), "y");
    const char *f[] = {"y"};
    ts_program *p = ts_compile(g, &(ts_compile_opts){.struct_size = sizeof(ts_compile_opts), .nfetch = 1,
                                                     .fetches = f, .plan_only = 1});
    CHECK(p != NULL, "%s", ts_last_error());
    if (!p) { ts_graph_free(g); return; }
    int found = 0;
    ts_device_profile prof = toy_profile(1e9);
    ts_node_work work[16];
    int nw = ts_program_stage_work(p, 0, NULL, 0);
    CHECK(nw >= 1 && nw <= 16 && ts_program_stage_work(p, 0, work, 16) == nw, "%d kernels: %s", nw, ts_last_error());
    for (int s = 0; s < nw && s < 16; s++) {
        const ts_node_work *w = &work[s];
        if (strcmp(w->op, "matmul")) continue;
        found = 1;
        CHECK(w->phase == 0 && w->dtype == TS_F32, "phase %d dtype %d", w->phase, (int)w->dtype);
        CHECK(w->flops == 2.0 * 4 * 16 * 8, "flops %g", w->flops);
        CHECK(w->m == 4 && w->n == 16 && w->k == 8, "gemm %lld x %lld x %lld", (long long)w->m, (long long)w->n,
              (long long)w->k);
        CHECK(w->bytes == (32 + 128 + 64) * 4.0, "bytes %g", w->bytes);
        double t = ts_cost_work(w, &prof, -1); /* 1 us + max(1024 FLOP at 1e9, 896 B at 1e9) */
        CHECK(fabs(t - (1e-6 + 1024e-9)) < 1e-12, "time %g", t);
    }
    CHECK(found, "no matmul scheduled");
    CHECK(ts_program_stage_work(p, 1, NULL, 0) == -1 && ts_last_status() == TS_ERR_ARG, "stage 1 of 1 refused");
    CHECK(ts_program_stage_work(NULL, 0, NULL, 0) == -1 && ts_last_status() == TS_ERR_ARG, "NULL program refused");
    double send = -1, shared = -1;
    int nsend = -1;
    CHECK(ts_program_stage_traffic(p, 0, &send, &nsend, &shared) == TS_OK && send == 0 && nsend == 0 && shared == 0,
          "one device sends nothing: %g %d %g", send, nsend, shared);
    CHECK(ts_program_stage_traffic(p, -1, &send, &nsend, &shared) == TS_ERR_ARG, "stage -1 refused");
    ts_stage_cost c[2];
    CHECK(ts_cost_program(p, &prof, -1, c, 2) == 1, "one stage");
    CHECK(c[0].fwd_s >= 1e-6 + 1024e-9 && c[0].bwd_s == 0, "fwd %g bwd %g", c[0].fwd_s, c[0].bwd_s);
    ts_program_free(p);
    ts_graph_free(g);
}

/* A stage's cost of f s forward, b s backward and u s of update, all compute-bound; with mem:
 * memory-bound instead (the memory traffic takes the time, the compute a tenth of it). */
static ts_stage_cost toy_cost(double f, double b, double u, int mem) {
    ts_stage_cost c = {.fwd_s = f, .bwd_s = b, .upd_s = u};
    ts_phase_split *x[3] = {&c.fwd_x, &c.bwd_x, &c.upd_x};
    double t[3] = {f, b, u};
    for (int i = 0; i < 3; i++) {
        if (mem) x[i]->mb_m = t[i], x[i]->mb_c = 0.1 * t[i];
        else x[i]->cb_c = t[i];
    }
    return c;
}

/* The toy pipeline: two stages on two devices, fwd+bwd 3 s and 2 s a micro-batch, 0.5 s of update
 * each, 1 GB of gradients each; its request and profile (toy_profile, at 1 GB/s links). */
static void toy_pipeline(ts_plan_compiled *pc, ts_plan_request *rq, ts_bert_config *cfg, ts_device_profile *prof,
                         int mem) {
    *prof = toy_profile(1e12);
    ts_bert_config_default(cfg);
    ts_plan_request_defaults(rq);
    rq->cfg = cfg, rq->device = prof, rq->batch = 8;
    memset(pc, 0, sizeof *pc);
    pc->nstages = 2, pc->ndevices = 2;
    pc->stage_dev[1] = 1, pc->last[0] = 6, pc->first[1] = 7, pc->last[1] = 13;
    pc->cost[0] = toy_cost(1, 2, 0.5, mem);
    pc->cost[1] = toy_cost(1, 1, 0.5, mem);
    pc->mem[0].grads = pc->mem[1].grads = 1000000000;
}

/* The toy pipeline, M = 4: the first micro-batch passes both devices (3 + 2 s), the other 3
 * follow at the slower's pace (3 s): 14 s, + 1 s of update = 15 s; busy 4 x (3 + 2) = 20 of
 * 2 x 15: bubble 1/3. With 2 replicas the 1 GB of gradients on each device take
 * 2 (R - 1) / R x 1 GB / 1 GB/s = 1 s, all hidden behind the last backward of device 0 (2 s), and
 * of device 1 (1 s). */
/* The fused attention op's forward and backward nodes are priced at the profile's measured rates
 * of the op (attention_fwd_flops / attention_bwd_flops), and as GEMMs of their shape where the
 * profile has none. */
static void test_attention_nodes(void) {
    ts_graph *g = ts_graph_new();
    const int64_t sh[4] = {2, 16, 2, 8}; /* B T H D, layout BTHD */
    ts_value q = ts_param(g, "q", TS_F32, 4, sh, ts_init_normal(0.5f)), k = ts_param(g, "k", TS_F32, 4, sh, ts_init_normal(0.5f));
    ts_value v = ts_param(g, "v", TS_F32, 4, sh, ts_init_normal(0.5f));
    ts_value y = ts_attention(g, q, k, v, TS_NONE, 0.35f, 0.f, TS_ATTN_BTHD, TS_F32);
    CHECK_OK(ts_backward(g, ts_reduce_sum(g, y, 0, NULL, 0)));
    ts_name(g, ts_grad(g, q), "gq");
    const char *f[] = {"gq"};
    ts_program *p = ts_compile(g, &(ts_compile_opts){.struct_size = sizeof(ts_compile_opts), .nfetch = 1,
                                                     .fetches = f, .plan_only = 1});
    ts_graph_free(g);
    CHECK(p != NULL, "%s", ts_last_error());
    if (!p) return;
    ts_device_profile prof = toy_profile(1e9);
    ts_node_work work[32];
    int nw = ts_program_stage_work(p, 0, work, 32), seen = 0;
    const double flop = 2.0 * 2 * 16 * 16 * 8; /* B H T S D */
    for (int s = 0; s < nw && s < 32; s++) {
        const ts_node_work *w = &work[s];
        int fwd = !strcmp(w->op, "attention"), bwd = !strcmp(w->op, "attention_grad");
        if (!fwd && !bwd) continue;
        seen |= fwd ? 1 : 2;
        CHECK(w->flops == (fwd ? 4 : 10) * flop, "%s flops %g", w->op, w->flops);
        double mem = w->bytes / 1e9;
        prof.attention_fwd_flops[TS_F32] = prof.attention_bwd_flops[TS_F32] = 0; /* as GEMMs: 1 GFLOP/s */
        double t0 = ts_cost_work(w, &prof, -1);
        CHECK(fabs(t0 - (1e-6 + fmax(w->flops / 1e9, mem))) < 1e-12, "%s as GEMMs: %g s", w->op, t0);
        prof.attention_fwd_flops[TS_F32] = 2.5e8, prof.attention_bwd_flops[TS_F32] = 1e8;
        double t1 = ts_cost_work(w, &prof, -1), rate = fwd ? 2.5e8 : 1e8;
        CHECK(fabs(t1 - (1e-6 + fmax(w->flops / rate, mem))) < 1e-12, "%s at its own rate: %g s", w->op, t1);
        CHECK(t1 > t0, "%s: the slower measured rate prices it dearer (%g against %g s)", w->op, t1, t0);
        prof.attention_fwd_flops[TS_BF16] = 1e12; /* another dtype's rate is not this node's */
        CHECK(ts_cost_work(w, &prof, -1) == t1, "%s: priced at bf16's rate", w->op);
        prof.attention_fwd_flops[TS_BF16] = 0;
    }
    CHECK(seen == 3, "attention nodes scheduled: forward %d, backward %d", seen & 1, seen >> 1);
    ts_program_free(p);
}

static void test_1f1b_formula(void) {
    ts_device_profile prof;
    ts_bert_config cfg;
    ts_plan_request rq;
    ts_plan_compiled pc;
    toy_pipeline(&pc, &rq, &cfg, &prof, 0);
    ts_plan_layout l;
    ts_plan_evaluate(&rq, &pc, "0:emb,0-5 1:6-11,heads", 1, 4, 0, &l, NULL);
    CHECK(fabs(l.step_s - 15) < 1e-9, "step %g", l.step_s);
    CHECK(fabs(l.bubble - 1 / 3.0) < 1e-9, "bubble %g", l.bubble);
    CHECK(fabs(l.seq_per_s - 4 * 8 / 15.0) < 1e-9, "seq/s %g", l.seq_per_s);
    CHECK(l.fits && l.micro_batches == 4 && l.command[0] == 0, "fits %d, %d micro-batches, command '%s' (the\n"
          "planner leaves it to the caller)", l.fits, l.micro_batches, l.command);
    ts_plan_evaluate(&rq, &pc, "0:emb,0-5 1:6-11,heads", 2, 4, 0, &l, NULL);
    CHECK(fabs(l.allreduce_s - 1) < 1e-6 && fabs(l.allreduce_hidden_s - 1) < 1e-6, "all-reduce %g hidden %g",
          l.allreduce_s, l.allreduce_hidden_s);
    CHECK(fabs(l.step_s - 15) < 1e-6 && fabs(l.seq_per_s - 2 * 4 * 8 / 15.0) < 1e-6, "step %g", l.step_s);
    CHECK(l.replicas == 2, "%d replicas", l.replicas);
    prof.link_bw = 0.25e9; /* 4 s of all-reduce: 2 hidden on device 0, 3 exposed on device 1 */
    ts_plan_evaluate(&rq, &pc, "0:emb,0-5 1:6-11,heads", 2, 4, 0, &l, NULL);
    CHECK(fabs(l.allreduce_s - 4) < 1e-6 && fabs(l.allreduce_hidden_s - 1) < 1e-6, "all-reduce %g hidden %g",
          l.allreduce_s, l.allreduce_hidden_s);
    CHECK(fabs(l.step_s - 18) < 1e-6, "step %g", l.step_s);
    /* unequal devices: 3 s and 0.5 s a micro-batch, M = 8: 7 x 3 + 3.5 = 24.5 (where (M + D - 1)
     * x the slowest would say 27) */
    pc.cost[1] = toy_cost(0.25, 0.25, 0.5, 0);
    prof.link_bw = 1e9;
    ts_plan_evaluate(&rq, &pc, "0:emb,0-5 1:6-11,heads", 1, 8, 0, &l, NULL);
    CHECK(fabs(l.step_s - (24.5 + 1)) < 1e-9, "unequal stages: step %g, want 25.5", l.step_s);
}

/* A phase's parts at k times slower compute and q times slower memory. */
static void test_phase_time(void) {
    ts_phase_split x = {.cb_c = 2, .cb_m = 1, .mb_c = 0.5, .mb_m = 3, .ovh = 0.1};
    CHECK(fabs(ts_phase_time(&x, 1, 1) - 5.1) < 1e-12, "full speed: %g", ts_phase_time(&x, 1, 1));
    CHECK(fabs(ts_phase_time(&x, 2, 1.5) - (0.1 + 4 + 4.5)) < 1e-12, "k 2, q 1.5: %g", ts_phase_time(&x, 2, 1.5));
    CHECK(fabs(ts_phase_time(&x, 8, 1) - (0.1 + 16 + 4)) < 1e-12, "k 8: the memory-bound group turns compute-bound: %g",
          ts_phase_time(&x, 8, 1));
}

/* A measured CPU profile: its devices (cpu:0 .. cpu:D-1, replicas under mpirun) share the host's C
 * cores, each with th = max(1, C / (R D)) threads: compute k = C / th times slower than the host,
 * memory traffic q = mem_bw / min(mem_bw, th x mem_bw_thread) times (q = k without
 * mem_bw_thread). The toy pipeline, M = 4: step = max(3 x 3k + 5k, R x 20) + max(0.5k, R x 1)
 * (no faster than all the work at the whole host's speed); memory-bound stages: q for k. */
static void test_shared_cpu(void) {
    double C = (double)sysconf(_SC_NPROCESSORS_ONLN);
    for (int mem = 0; mem <= 1; mem++)
        for (int R = 1; R <= 2; R++) {
            ts_device_profile prof;
            ts_bert_config cfg;
            ts_plan_request rq;
            ts_plan_compiled pc;
            toy_pipeline(&pc, &rq, &cfg, &prof, mem);
            snprintf(prof.name, sizeof prof.name, "cpu"), prof.measured = 1;
            prof.mem_bw = 10e9, prof.mem_bw_thread = mem ? 7e9 : 0;
            double th = (int)(C / (2 * R)) < 1 ? 1 : (int)(C / (2 * R)), k = C / th;
            double q = mem ? fmin(k, 10e9 / fmin(10e9, th * 7e9)) : k;
            double want = fmax(14 * q, R * 20.0) + fmax(0.5 * q, R * 1.0);
            ts_plan_layout l;
            ts_plan_evaluate(&rq, &pc, "0:emb,0-5 1:6-11,heads", R, 4, 0, &l, NULL);
            CHECK(fabs(l.step_s - want) < 1e-6, "%s, R %d on %g cores: step %g, want %g",
                  mem ? "memory-bound" : "compute-bound", R, C, l.step_s, want);
            CHECK(l.step_s > 15, "sharing the cores is slower than 2 devices of their own: %g", l.step_s);
        }
    /* one device alone: the machine as measured */
    ts_device_profile prof;
    ts_bert_config cfg;
    ts_plan_request rq;
    ts_plan_compiled pc;
    toy_pipeline(&pc, &rq, &cfg, &prof, 0);
    snprintf(prof.name, sizeof prof.name, "cpu"), prof.measured = 1;
    pc.nstages = pc.ndevices = 1;
    ts_plan_layout l;
    ts_plan_evaluate(&rq, &pc, "0:emb,0-11,heads", 1, 4, 0, &l, NULL);
    CHECK(fabs(l.step_s - (4 * 3 + 0.5)) < 1e-9, "one device: step %g", l.step_s);
}

/* A small BERT: 4 layers of 64, vocabulary 1000. */
static void small_bert(ts_bert_config *cfg) {
    ts_bert_config_default(cfg);
    cfg->vocab_size = 1000, cfg->hidden_size = 64, cfg->num_hidden_layers = 4, cfg->num_attention_heads = 4;
    cfg->intermediate_size = 256, cfg->max_position_embeddings = 128;
}

static void test_search_sorted(void) {
    ts_device_profile prof = toy_profile(1e12);
    ts_bert_config cfg;
    small_bert(&cfg);
    ts_plan_request rq;
    ts_plan_request_defaults(&rq);
    rq.cfg = &cfg, rq.device = &prof, rq.count = 4, rq.seq_len = 32;
    ts_plan_layout l[64] = {{.struct_size = sizeof l[0]}};
    int n = 0;
    double t0 = tu_now();
    CHECK_OK(ts_plan_search(&rq, l, 64, &n));
    printf("  %d layouts in %.2f s; the best: %.1f seq/s, \"%s\" x %d\n", n, tu_now() - t0, n ? l[0].seq_per_s : 0,
           n ? l[0].stages : "", n ? l[0].replicas : 0);
    CHECK(n > 8, "%d layouts", n);
    for (int i = 0; i < n; i++) {
        CHECK(l[i].fits, "layout %d does not fit: %s", i, l[i].why);
        if (i) CHECK(l[i].seq_per_s <= l[i - 1].seq_per_s, "layout %d: %g after %g", i, l[i].seq_per_s,
                     l[i - 1].seq_per_s);
        CHECK(l[i].stages[0] && l[i].why[0], "layout %d: stages '%s' why '%s'", i, l[i].stages, l[i].why);
    }
    if (n > 1) CHECK(strstr(l[1].why, "slower than the best") != NULL, "%s", l[1].why);
    /* a fixed layout is searched no further */
    rq.replicas = 2, rq.micro_batches = 4, rq.recompute = 0, rq.shard_state = 1;
    CHECK_OK(ts_plan_search(&rq, l, 64, &n));
    CHECK(n >= 1 && n <= 2, "%d layouts", n);
    CHECK(n >= 1 && l[0].replicas == 2 && l[0].micro_batches == 4 && l[0].shard_state == 1, "R %d M %d",
          n ? l[0].replicas : 0, n ? l[0].micro_batches : 0);
}

static void test_search_nothing_fits(void) {
    ts_device_profile prof = toy_profile(1e5); /* 100 kB a device */
    ts_bert_config cfg;
    small_bert(&cfg);
    ts_plan_request rq;
    ts_plan_request_defaults(&rq);
    rq.cfg = &cfg, rq.device = &prof, rq.count = 2, rq.seq_len = 32;
    ts_plan_layout l[16] = {{.struct_size = sizeof l[0]}};
    int n = 0;
    CHECK_OK(ts_plan_search(&rq, l, 16, &n));
    CHECK(n > 0, "no layouts");
    for (int i = 0; i < n; i++) CHECK(!l[i].fits, "layout %d fits", i);
    CHECK(n > 0 && strstr(l[0].why, "no layout fits") && strstr(l[0].why, "needs") && strstr(l[0].why, "of 0.00 GB"),
          "%s", n ? l[0].why : "");
    printf("  %s\n", n ? l[0].why : "");
}

/* Layouts of a small BERT on two devices costed through ts_program_stage_work / _traffic: every
 * stage has kernels in every phase and sends per micro-batch at least the hidden states [B, T, 64]
 * f32 (forward) or their gradient (backward). In 2 stages on 2 devices nothing is shared; in 3
 * (the embeddings and the heads on device 0, the layers on device 1) the heads' stage keeps a copy
 * of the tied word embeddings [1000, 64] f32 (and of a scalar or so) whose master is the embeddings'
 * stage, on its device. */
static void test_pipeline_traffic(void) {
    ts_device_profile prof = toy_profile(1e12);
    ts_bert_config cfg;
    small_bert(&cfg);
    ts_plan_request rq;
    ts_plan_request_defaults(&rq);
    rq.cfg = &cfg, rq.device = &prof, rq.count = 2, rq.seq_len = 32;
    double hidden = (double)rq.batch * 32 * 64 * 4, words = 1000.0 * 64 * 4;
    for (int three = 0; three <= 1; three++) {
        ts_plan_compiled pc;
        CHECK_OK(ts_plan_compile(&rq, three ? "0:emb,heads 1:0-3" : "0:emb,0-1 1:2-3,heads", 2, 0, 2, 1, &pc));
        CHECK(pc.nstages == 2 + three, "%d stages", pc.nstages);
        for (int s = 0; s < pc.nstages && s < 3; s++) {
            const ts_stage_cost *c = &pc.cost[s];
            printf("  stage %d of %d: fwd %.3g bwd %.3g upd %.3g s, sends %.0f B in %d, shared %.0f B\n", s,
                   pc.nstages, c->fwd_s, c->bwd_s, c->upd_s, c->send_bytes, c->nsend, c->shared_bytes);
            CHECK(c->fwd_s > 0 && c->bwd_s > 0 && c->upd_s > 0, "stage %d: fwd %g bwd %g upd %g", s, c->fwd_s,
                  c->bwd_s, c->upd_s);
            CHECK(c->nsend >= 1 && c->send_bytes >= hidden, "stage %d sends %g B in %d", s, c->send_bytes, c->nsend);
            if (three && s == 2) /* the word embeddings and a few scalars (the optimizer's step) */
                CHECK(c->shared_bytes >= words && c->shared_bytes <= words + 64, "stage 2 shares %g B", c->shared_bytes);
            else CHECK(c->shared_bytes == 0, "stage %d shares %g B", s, c->shared_bytes);
        }
    }
}

int main(int argc, char **argv) {
    tu_args(argc, argv);
    RUN(test_matmul_node);
    RUN(test_attention_nodes);
    RUN(test_1f1b_formula);
    RUN(test_phase_time);
    RUN(test_pipeline_traffic);
    RUN(test_shared_cpu);
    RUN(test_search_sorted);
    RUN(test_search_nothing_fits);
    return tu_finish("test_plan_cost");
}
