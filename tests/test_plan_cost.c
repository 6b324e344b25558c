/*
 * test_plan_cost.c — the planner's cost model and search (src/plan/): a matmul node's FLOPs and
 * its time on a hand-made profile, the 1F1B step formula and the hidden all-reduce on a 2-stage
 * toy layout and on a measured CPU profile whose devices share the host's cores, ts_plan_search's order (fitting layouts by seq/s) and a request whose every layout
 * overflows.
 */
#include "test_util.h"

#include "plan/cost.h"
#include "runtime/program.h"

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
    const ts_exec *e = p->one;
    int found = 0;
    ts_device_profile prof = toy_profile(1e9);
    for (int s = 0; s < e->nsched; s++) {
        const ts_node *n = &e->g->nodes[e->sched[s]];
        if (n->op != TS_OP_MATMUL) continue;
        found = 1;
        ts_node_work w;
        ts_cost_node_work(e->g, n, &w);
        CHECK(w.flops == 2.0 * 4 * 16 * 8, "flops %g", w.flops);
        CHECK(w.m == 4 && w.n == 16 && w.k == 8, "gemm %lld x %lld x %lld", (long long)w.m, (long long)w.n,
              (long long)w.k);
        CHECK(w.bytes == (32 + 128 + 64) * 4.0, "bytes %g", w.bytes);
        double t = ts_cost_node(e->g, n, &prof, -1); /* 1 us + max(1024 FLOP at 1e9, 896 B at 1e9) */
        CHECK(fabs(t - (1e-6 + 1024e-9)) < 1e-12, "time %g", t);
    }
    CHECK(found, "no matmul scheduled");
    ts_stage_cost c[2];
    CHECK(ts_cost_program(p, &prof, -1, c, 2) == 1, "one stage");
    CHECK(c[0].fwd_s >= 1e-6 + 1024e-9 && c[0].bwd_s == 0, "fwd %g bwd %g", c[0].fwd_s, c[0].bwd_s);
    ts_program_free(p);
    ts_graph_free(g);
}

/* Two stages on two devices: fwd+bwd 3 s and 2 s a micro-batch, 0.5 s of update each; M = 4:
 * step = (M + D - 1) x 3 + 1 = 16 s; busy 4 x (3 + 2) = 20 of 2 x 16: bubble 0.375. With 2
 * replicas the 1 GB of gradients on each device take 2 (R - 1) / R x 1 GB / 1 GB/s = 1 s, all
 * hidden behind the last backward of device 0 (2 s), and of device 1 (1 s). */
static void test_1f1b_formula(void) {
    ts_device_profile prof = toy_profile(1e12);
    ts_bert_config cfg;
    ts_bert_config_default(&cfg);
    ts_plan_request rq;
    ts_plan_request_defaults(&rq);
    rq.cfg = &cfg, rq.device = &prof, rq.batch = 8;
    ts_plan_compiled pc;
    memset(&pc, 0, sizeof pc);
    pc.nstages = 2, pc.ndevices = 2;
    pc.stage_dev[1] = 1, pc.last[0] = 6, pc.first[1] = 7, pc.last[1] = 13;
    pc.cost[0] = (ts_stage_cost){.fwd_s = 1, .bwd_s = 2, .upd_s = 0.5};
    pc.cost[1] = (ts_stage_cost){.fwd_s = 1, .bwd_s = 1, .upd_s = 0.5};
    pc.mem[0].grads = pc.mem[1].grads = 1000000000;
    ts_plan_layout l;
    ts_plan_evaluate(&rq, &pc, "0:emb,0-5 1:6-11,heads", 1, 4, 0, &l, NULL);
    CHECK(fabs(l.step_s - 16) < 1e-9, "step %g", l.step_s);
    CHECK(fabs(l.bubble - 0.375) < 1e-9, "bubble %g", l.bubble);
    CHECK(fabs(l.seq_per_s - 4 * 8 / 16.0) < 1e-9, "seq/s %g", l.seq_per_s);
    CHECK(l.fits && strstr(l.command, "--micro-batches 4"), "%s", l.command);
    ts_plan_evaluate(&rq, &pc, "0:emb,0-5 1:6-11,heads", 2, 4, 0, &l, NULL);
    CHECK(fabs(l.allreduce_s - 1) < 1e-6 && fabs(l.allreduce_hidden_s - 1) < 1e-6, "all-reduce %g hidden %g",
          l.allreduce_s, l.allreduce_hidden_s);
    CHECK(fabs(l.step_s - 16) < 1e-6 && fabs(l.seq_per_s - 2 * 4 * 8 / 16.0) < 1e-6, "step %g", l.step_s);
    CHECK(!strncmp(l.command, "mpirun -np 2 ", 13), "%s", l.command);
    prof.link_bw = 0.25e9; /* 4 s of all-reduce: 2 hidden on device 0, 3 exposed on device 1 */
    ts_plan_evaluate(&rq, &pc, "0:emb,0-5 1:6-11,heads", 2, 4, 0, &l, NULL);
    CHECK(fabs(l.allreduce_s - 4) < 1e-6 && fabs(l.allreduce_hidden_s - 1) < 1e-6, "all-reduce %g hidden %g",
          l.allreduce_s, l.allreduce_hidden_s);
    CHECK(fabs(l.step_s - 19) < 1e-6, "step %g", l.step_s);
}

/* A measured CPU profile: its devices (cpu:0 .. cpu:D-1, replicas under mpirun) share the host's C
 * cores, each with max(1, C / (R D)) threads. The toy of test_1f1b_formula (t = 3 s and 2 s a
 * micro-batch, 0.5 s of update each, M = 4) on such a profile: step = max((M + D - 1) x 3 x slow,
 * R x busy) + max(0.5 x slow, R x 1), slow = C / threads, busy = 4 x (3 + 2) = 20 s. */
static void test_shared_cpu(void) {
    ts_device_profile prof = toy_profile(1e12);
    snprintf(prof.name, sizeof prof.name, "cpu"), prof.measured = 1;
    ts_bert_config cfg;
    ts_bert_config_default(&cfg);
    ts_plan_request rq;
    ts_plan_request_defaults(&rq);
    rq.cfg = &cfg, rq.device = &prof, rq.batch = 8;
    ts_plan_compiled pc;
    memset(&pc, 0, sizeof pc);
    pc.nstages = 2, pc.ndevices = 2;
    pc.stage_dev[1] = 1, pc.last[0] = 6, pc.first[1] = 7, pc.last[1] = 13;
    pc.cost[0] = (ts_stage_cost){.fwd_s = 1, .bwd_s = 2, .upd_s = 0.5};
    pc.cost[1] = (ts_stage_cost){.fwd_s = 1, .bwd_s = 1, .upd_s = 0.5};
    double C = (double)sysconf(_SC_NPROCESSORS_ONLN);
    for (int R = 1; R <= 2; R++) {
        double th = (int)(C / (2 * R)) < 1 ? 1 : (int)(C / (2 * R)), slow = C / th;
        double want = fmax(5 * 3 * slow, R * 20.0) + fmax(0.5 * slow, R * 1.0);
        ts_plan_layout l;
        ts_plan_evaluate(&rq, &pc, "0:emb,0-5 1:6-11,heads", R, 4, 0, &l, NULL);
        CHECK(fabs(l.step_s - want) < 1e-6, "R %d on %g cores: step %g, want %g", R, C, l.step_s, want);
        CHECK(l.step_s > 16, "sharing the cores is slower than 2 devices of their own: %g", l.step_s);
    }
    /* one device alone: the machine as measured */
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
    ts_plan_layout l[64];
    int n = 0;
    double t0 = tu_now();
    CHECK_OK(ts_plan_search(&rq, l, 64, &n));
    printf("  %d layouts in %.2f s; the best: %.1f seq/s, %s\n", n, tu_now() - t0, n ? l[0].seq_per_s : 0,
           n ? l[0].command : "");
    CHECK(n > 8, "%d layouts", n);
    for (int i = 0; i < n; i++) {
        CHECK(l[i].fits, "layout %d does not fit: %s", i, l[i].why);
        if (i) CHECK(l[i].seq_per_s <= l[i - 1].seq_per_s, "layout %d: %g after %g", i, l[i].seq_per_s,
                     l[i - 1].seq_per_s);
        CHECK(l[i].command[0] && l[i].why[0], "layout %d: command '%s' why '%s'", i, l[i].command, l[i].why);
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
    ts_plan_layout l[16];
    int n = 0;
    CHECK_OK(ts_plan_search(&rq, l, 16, &n));
    CHECK(n > 0, "no layouts");
    for (int i = 0; i < n; i++) CHECK(!l[i].fits, "layout %d fits", i);
    CHECK(n > 0 && strstr(l[0].why, "no layout fits") && strstr(l[0].why, "needs") && strstr(l[0].why, "of 0.00 GB"),
          "%s", n ? l[0].why : "");
    printf("  %s\n", n ? l[0].why : "");
}

int main(int argc, char **argv) {
    tu_args(argc, argv);
    RUN(test_matmul_node);
    RUN(test_1f1b_formula);
    RUN(test_shared_cpu);
    RUN(test_search_sorted);
    RUN(test_search_nothing_fits);
    return tu_finish("test_plan_cost");
}
