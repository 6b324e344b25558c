/*
 * test_plan_published.c — the planner against published results (issue 26, docs/cost-model.md
 * "Calibration"). An IPU-Mk2 profile from Graphcore's public figures; its matmul efficiency is
 * calibrated so the seed system's BERT-Base phase 1 on an IPU-POD16 (seq 128, 20 masked,
 * micro-batch 32, 512 micro-batches a step on each of 4 replicas, LAMB, f16, stages "0:emb,heads
 * 1:0-3 2:4-7 3:8-11", recomputation) estimates 11,700 seq/s; with the same constants phase 2 (seq
 * 384, 56 masked, micro-batch 8, global batch 16384: 512 micro-batches) must be within 25% of
 * 3,470 seq/s, and phase 1 on a Bow POD16 within 15% of 16,391. The seed layout fits in 900 MB per
 * IPU; one IPU without pipelining at micro-batch 32 does not.
 */
#include "test_util.h"

#include <math.h>

static const char *SEED = "0:emb,heads 1:0-3 2:4-7 3:8-11";

/* GC200 (IPU-Mk2), one IPU of an IPU-POD16, from Graphcore's public figures. */
static ts_device_profile ipu_mk2(double eff_f16) {
    ts_device_profile p = {.struct_size = sizeof p, .name = "ipu-mk2"};
    p.memory_bytes = 900e6;          /* in-processor memory per IPU */
    p.streaming_bytes = 112e9;       /* 448 GB streaming memory per IPU-M2000 of 4 IPUs */
    p.streaming_bw = 20e9;           /* IPU-M2000 gateway to streaming memory, per IPU (assumed share) */
    p.peak_flops[TS_F32] = 62.5e12, p.peak_flops[TS_F16] = 250e12;
    p.mem_bw = 47.5e12;              /* in-processor memory bandwidth */
    p.link_bw = 320e9, p.link_latency = 2e-6; /* IPU-Links per IPU */
    p.host_bw = 100e9, p.host_latency = 5e-6;
    p.devices_per_host = 16;         /* the POD16's IPUs are all IPU-Linked */
    p.eff_matmul[TS_F32] = eff_f16, p.eff_matmul[TS_F16] = eff_f16;
    p.eff_mem = 0.5;
    p.node_overhead = 0;
    return p;
}

/* Bow IPU: 350 TFLOPS f16 at 1.85 GHz, 65 TB/s; the rest as Mk2. */
static ts_device_profile ipu_bow(double eff_f16) {
    ts_device_profile p = ipu_mk2(eff_f16);
    snprintf(p.name, sizeof p.name, "ipu-bow");
    p.peak_flops[TS_F32] = 87.5e12, p.peak_flops[TS_F16] = 350e12, p.mem_bw = 65e12;
    return p;
}

/* BERT-Base pretraining on the seed's layout: phase 1 (seq 128, 20 masked, micro-batch 32) or 2. */
static ts_plan_request phase(const ts_bert_config *cfg, const ts_device_profile *p, int two) {
    ts_plan_request rq;
    ts_plan_request_defaults(&rq);
    rq.cfg = cfg, rq.device = p;
    rq.batch = two ? 8 : 32, rq.seq_len = two ? 384 : 128, rq.max_predictions = two ? 56 : 20;
    rq.dtype = TS_F16, rq.optimizer = TS_OPTIM_LAMB;
    rq.count = 16, rq.replicas = 4, rq.stages = SEED;
    rq.micro_batches = two ? 16384 / (8 * 4) : 65536 / (32 * 4); /* 512 either way */
    rq.recompute = 1, rq.shard_state = 0, rq.stream_state = 1;
    return rq;
}

static double seq_per_s(const ts_plan_request *rq, ts_plan_layout *l) {
    if (ts_plan_estimate(rq, l) != TS_OK) return -1;
    return l->seq_per_s;
}

static void print_layout(const char *what, const ts_plan_layout *l) {
    printf("  %s: %.0f seq/s, step %.3f s, bubble %.1f%%, all-reduce %.4f s (%.4f hidden), %s\n", what, l->seq_per_s,
           l->step_s, 100 * l->bubble, l->allreduce_s, l->allreduce_hidden_s, l->fits ? "fits" : l->why);
    for (int s = 0; s < l->nstages; s++)
        printf("    stage %d device %d parts %d-%d: need %.0f MB (params %.0f, grads %.0f, state %.0f streamed %.0f, "
               "activations %.0f), fwd %.3f ms bwd %.3f ms update %.3f ms\n", s, l->st[s].device, l->st[s].first,
               l->st[s].last, l->st[s].need_bytes / 1e6, l->st[s].mem.params / 1e6, l->st[s].mem.grads / 1e6,
               l->st[s].mem.optimizer_state / 1e6, l->st[s].streamed_bytes / 1e6, l->st[s].mem.activations / 1e6,
               1e3 * l->st[s].fwd_s, 1e3 * l->st[s].bwd_s, 1e3 * l->st[s].update_s);
}

static void test_published(void) {
    ts_bert_config cfg;
    ts_bert_config_default(&cfg);
    ts_plan_layout l;
    /* calibrate eff_matmul[f16] on Mk2 phase 1: seq/s grows with the efficiency */
    double lo = 0.01, hi = 1.0, eff = 0;
    for (int it = 0; it < 30; it++) {
        eff = 0.5 * (lo + hi);
        ts_device_profile p = ipu_mk2(eff);
        ts_plan_request rq = phase(&cfg, &p, 0);
        double r = seq_per_s(&rq, &l);
        CHECK(r > 0, "estimate failed: %s", ts_last_error());
        if (r <= 0) return;
        if (r < 11700) lo = eff;
        else hi = eff;
    }
    ts_device_profile mk2 = ipu_mk2(eff), bow = ipu_bow(eff);
    ts_plan_request rq = phase(&cfg, &mk2, 0);
    double p1 = seq_per_s(&rq, &l);
    printf("calibrated eff_matmul[f16] = %.4f (node_overhead 0, eff_mem 0.5)\n", eff);
    print_layout("Mk2 phase 1 (calibration)", &l);
    printf("  command: %s\n", l.command);
    CHECK(fabs(p1 - 11700) < 117, "calibrated phase 1: %.0f seq/s", p1);
    CHECK(l.fits, "the seed layout does not fit: %s", l.why);
    rq = phase(&cfg, &mk2, 1);
    double p2 = seq_per_s(&rq, &l);
    print_layout("Mk2 phase 2 (predicted)", &l);
    printf("  phase 2 predicted %.0f seq/s, published 3470 (%+.1f%%)\n", p2, 100 * (p2 / 3470 - 1));
    CHECK(fabs(p2 / 3470 - 1) <= 0.25, "phase 2: %.0f seq/s against 3470", p2);
    rq = phase(&cfg, &bow, 0);
    double pb = seq_per_s(&rq, &l);
    print_layout("Bow phase 1 (predicted)", &l);
    printf("  Bow phase 1 predicted %.0f seq/s, published 16391 (%+.1f%%)\n", pb, 100 * (pb / 16391 - 1));
    CHECK(fabs(pb / 16391 - 1) <= 0.15, "Bow phase 1: %.0f seq/s against 16391", pb);
    /* one IPU, no pipelining, micro-batch 32: does not fit */
    rq = phase(&cfg, &mk2, 0);
    rq.count = 1, rq.replicas = 1, rq.stages = "0:emb,0-11,heads";
    CHECK_OK(ts_plan_estimate(&rq, &l));
    print_layout("one Mk2, no pipelining", &l);
    CHECK(!l.fits && l.st[0].need_bytes > 900e6, "one IPU: need %.0f MB", l.st[0].need_bytes / 1e6);
}

int main(int argc, char **argv) {
    tu_args(argc, argv);
    RUN(test_published);
    return tu_finish("test_plan_published");
}
