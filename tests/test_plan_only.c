/*
 * test_plan_only.c — compiling for planning only (ts_compile_opts.plan_only, the planner's view of
 * a program): BERT-Base pretraining reports the memory of a real compile of the same graph without
 * allocating it, quickly; pipelines of 4 and 5 stages plan every stage in well under a second; the
 * program refuses to feed, run, fetch or read values; old layouts of ts_compile_opts still read.
 */
#include "tessera_apps.h"
#include "test_util.h"

#include <stddef.h>

/* Resident set size of this process, in bytes. */
static double rss_bytes(void) {
    long pages = 0, resident = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f) return 0;
    if (fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
    fclose(f);
    return (double)resident * (double)sysconf(_SC_PAGESIZE);
}

/* BERT-Base pretraining options: batch x seq, 20 masked positions, AdamW. */
static ts_bert_train_opts base_opts(ts_bert_config *cfg, int batch, int seq) {
    ts_bert_config_default(cfg);
    cfg->max_predictions_per_seq = 20;
    ts_bert_train_opts o = {.struct_size = sizeof o, .cfg = cfg, .head = TS_BERT_PRETRAINING, .batch = batch,
                            .seq = seq, .optimizer = TS_OPTIM_ADAMW, .weight_decay = 0.01f};
    return o;
}

/* Plan-only BERT-Base (batch 8, seq 128) reports a real compile's memory, in a fraction of its
 * time, without the arena in the process's memory. */
static void test_bert_base_same_memory(void) {
    ts_bert_config cfg;
    ts_bert_train_opts o = base_opts(&cfg, 8, 128);
    o.plan_only = 1;
    ts_program *plan = NULL, *real = NULL;
    double rss0 = rss_bytes(), t0 = tu_now();
    CHECK_OK(ts_bert_train_programs(&o, &plan, NULL));
    double plan_s = tu_now() - t0, rss1 = rss_bytes();
    if (!plan) return;
    ts_memory a = {.struct_size = sizeof a}, b = {.struct_size = sizeof b};
    CHECK_OK(ts_program_memory(plan, &a));
    CHECK(ts_program_num_stages(plan) == 1, "%d stages", ts_program_num_stages(plan));
    o.plan_only = 0;
    t0 = tu_now();
    CHECK_OK(ts_bert_train_programs(&o, &real, NULL));
    double real_s = tu_now() - t0;
    if (!real) { ts_program_free(plan); return; }
    CHECK_OK(ts_program_memory(real, &b));
    printf("  plan-only %.3f s, real %.3f s; RSS grew %.1f MB for the plan (arena %.1f MB, all %.1f MB)\n", plan_s,
           real_s, (rss1 - rss0) / 1e6, b.activations / 1e6,
           (b.params + b.grads + b.optimizer_state + b.activations) / 1e6);
    CHECK(a.params == b.params && a.grads == b.grads && a.optimizer_state == b.optimizer_state,
          "params %zu/%zu grads %zu/%zu state %zu/%zu", a.params, b.params, a.grads, b.grads, a.optimizer_state,
          b.optimizer_state);
    CHECK(a.activations == b.activations && a.intermediates_total == b.intermediates_total,
          "activations %zu/%zu intermediates %zu/%zu", a.activations, b.activations, a.intermediates_total,
          b.intermediates_total);
    CHECK(a.grad_buckets == b.grad_buckets && a.nodes == b.nodes && a.fused == b.fused, "nodes %d/%d fused %d/%d",
          a.nodes, b.nodes, a.fused, b.fused);
    CHECK(a.workspace == 0, "plan-only workspace %zu (no kernels compiled)", a.workspace);
    CHECK(plan_s < 0.5 * real_s + 0.2, "plan-only took %.3f s, a real compile %.3f s", plan_s, real_s);
    CHECK(rss1 - rss0 < 0.25 * (double)(b.activations + b.params), "RSS grew %.1f MB", (rss1 - rss0) / 1e6);
    /* what a planning program refuses */
    CHECK_STATUS(ts_program_run(plan), TS_ERR_UNSUPPORTED);
    CHECK_ERRMSG("compiled for planning only");
    ts_tensor *t = NULL;
    CHECK_STATUS(ts_program_fetch(plan, "loss", &t), TS_ERR_UNSUPPORTED);
    CHECK_STATUS(ts_program_get_param(plan, "bert.pooler.dense.bias", &t), TS_ERR_UNSUPPORTED);
    ts_tensor *ids = ts_tensor_new(TS_I32, 2, (int64_t[]){8, 128});
    CHECK_STATUS(ts_program_feed(plan, "input_ids", ids), TS_ERR_UNSUPPORTED);
    CHECK(ts_program_save(plan, "/nonexistent/plan.safetensors", TS_F32) != TS_OK, "saved a plan");
    ts_tensor_free(ids);
    ts_program_free(plan);
    ts_program_free(real);
}

/* One pipelined BERT-Base (batch 32, M micro-batches) planned over `spec`: every stage reports
 * its memory, the stages add up to the program's, in well under a second. */
static void plan_pipeline(const char *devices, const char *spec, int M) {
    ts_bert_config cfg;
    ts_bert_train_opts o = base_opts(&cfg, 32, 128);
    ts_stage_plan pp;
    CHECK_OK(ts_stage_plan_parse(devices, spec, cfg.num_hidden_layers, &pp));
    ts_stage_plan_apply(&pp, &cfg);
    o.stage_devices = pp.stage_name, o.nstage_devices = pp.nstages, o.accumulation = M, o.plan_only = 1;
    ts_program *p = NULL;
    double t0 = tu_now();
    CHECK_OK(ts_bert_train_programs(&o, &p, NULL));
    double s = tu_now() - t0;
    if (!p) return;
    CHECK(ts_program_num_stages(p) == pp.nstages, "%d stages of %d", ts_program_num_stages(p), pp.nstages);
    ts_memory all = {.struct_size = sizeof all};
    CHECK_OK(ts_program_memory(p, &all));
    size_t params = 0, act = 0;
    for (int k = 0; k < pp.nstages; k++) {
        ts_stage_info si = {.struct_size = sizeof si};
        CHECK_OK(ts_program_stage_info(p, k, &si));
        CHECK(si.mem.params > 0 && si.mem.activations > 0, "stage %d: params %zu activations %zu", k, si.mem.params,
              si.mem.activations);
        params += si.mem.params, act += si.mem.activations;
    }
    CHECK(params == all.params && act == all.activations, "stages add to %zu / %zu of %zu / %zu", params, act,
          all.params, all.activations);
    printf("  %d stages, M %d: planned in %.3f s; parameters %.1f MB, activations %.1f MB\n", pp.nstages, M, s,
           all.params / 1e6, all.activations / 1e6);
    CHECK(s < 1.0, "planning %d stages took %.3f s", pp.nstages, s);
    CHECK_STATUS(ts_program_run(p), TS_ERR_UNSUPPORTED);
    ts_program_free(p);
}

static void test_pipeline_plans(void) {
    plan_pipeline("cpu:0,cpu:1,cpu:2,cpu:3", "0:emb,heads 1:0-3 2:4-7 3:8-11", 8);
    plan_pipeline("cpu:0,cpu:1,cpu:2,cpu:3,cpu:4", "0:emb 1:0-2 2:3-5 3:6-8 4:9-11,heads", 16);
}

/* A plan larger than the device (a 1 MB memory limit) is still planned: no refusal. */
static void test_no_memory_refusal(void) {
    ts_bert_config cfg;
    ts_bert_train_opts o = base_opts(&cfg, 8, 128);
    o.memory_limit = 1 << 20, o.plan_only = 1;
    ts_program *p = NULL;
    CHECK_OK(ts_bert_train_programs(&o, &p, NULL));
    ts_program_free(p);
    o.plan_only = 0;
    CHECK_STATUS(ts_bert_train_programs(&o, &p, NULL), TS_ERR_NOMEM);
}

/* ts_compile_opts of the layout before plan_only (struct_size ends at strict_device): plan_only 0. */
static void test_old_layout(void) {
    ts_graph *g = ts_graph_new();
    ts_value x = ts_input(g, "x", TS_F32, 1, (int64_t[]){4});
    ts_value y = ts_add(g, x, x);
    ts_name(g, y, "y");
    const char *f[] = {"y"};
    ts_compile_opts o = {.struct_size = offsetof(ts_compile_opts, plan_only), .nfetch = 1, .fetches = f,
                         .plan_only = 1};
    ts_program *p = ts_compile(g, &o);
    CHECK(p != NULL, "%s", ts_last_error());
    ts_tensor *t = ts_tensor_new(TS_F32, 1, (int64_t[]){4});
    if (p) CHECK_OK(ts_program_feed(p, "x", t)), CHECK_OK(ts_program_run(p));
    ts_program_free(p);
    o.struct_size = sizeof o;
    p = ts_compile(g, &o);
    CHECK(p != NULL, "%s", ts_last_error());
    if (p) CHECK_STATUS(ts_program_feed(p, "x", t), TS_ERR_UNSUPPORTED);
    ts_program_free(p);
    ts_tensor_free(t);
    ts_graph_free(g);
}

int main(int argc, char **argv) {
    tu_args(argc, argv);
    RUN(test_old_layout);
    RUN(test_no_memory_refusal);
    RUN(test_bert_base_same_memory);
    RUN(test_pipeline_plans);
    return tu_finish("test_plan_only");
}
