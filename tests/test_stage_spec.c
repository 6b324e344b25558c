/*
 * test_stage_spec.c — the planner's pieces behind a command's out-of-memory suggestion, without
 * the command: ts_stage_plan_spec writes a pipeline back as the spec ts_stage_plan_parse reads
 * (one device; two devices with the embeddings and the heads on the first; a round trip), and
 * ts_plan_unfit_stage finds the stage of a layout that does not fit a device (none on a large one).
 */
#include <stdio.h>
#include <string.h>

#include "tessera_apps.h"
#include "test_util.h"

static void test_spec(void) {
    char buf[256];
    ts_stage_plan_spec(NULL, 12, buf, sizeof buf);
    CHECK(!strcmp(buf, "0:emb,0-11,heads"), "one device: %s", buf);
    static ts_stage_plan pp, back;
    CHECK_OK(ts_stage_plan_parse("cpu:0,cpu:1", "0:emb,heads 1:0-3", 4, &pp));
    ts_stage_plan_spec(&pp, 4, buf, sizeof buf);
    CHECK(!strcmp(buf, "0:emb,heads 1:0-3"), "two devices: %s", buf);
    CHECK_OK(ts_stage_plan_parse("cpu:0,cpu:1,cpu:2", "0:emb,0 1:1-2 2:3,heads", 4, &pp));
    ts_stage_plan_spec(&pp, 4, buf, sizeof buf);
    CHECK(!strcmp(buf, "0:emb,0 1:1-2 2:3,heads"), "three devices: %s", buf);
    CHECK_OK(ts_stage_plan_parse("cpu:0,cpu:1,cpu:2", buf, 4, &back));
    CHECK(back.nstages == pp.nstages, "round trip: %d stages, not %d", back.nstages, pp.nstages);
    for (int s = 0; s < pp.nstages && s < back.nstages; s++)
        CHECK(back.stage_first[s] == pp.stage_first[s] && back.stage_last[s] == pp.stage_last[s] &&
                  back.stage_dev[s] == pp.stage_dev[s], "round trip: stage %d", s);
    ts_stage_plan_spec(&pp, 4, buf, 4);
    CHECK(strlen(buf) == 3, "truncated to fit: %s", buf);
}

static ts_device_profile toy_profile(double memory) {
    ts_device_profile p = {.struct_size = sizeof p, .name = "toy"};
    p.memory_bytes = memory;
    for (int d = 0; d < 3; d++) p.peak_flops[d] = 1e9, p.eff_matmul[d] = 1;
    p.mem_bw = 1e9, p.eff_mem = 1, p.node_overhead = 1e-6;
    p.link_bw = 1e9, p.host_bw = 1e9, p.devices_per_host = 8;
    return p;
}

static void test_unfit(void) {
    ts_bert_config cfg = {.struct_size = sizeof cfg};
    ts_bert_config_default(&cfg);
    cfg.vocab_size = 1000, cfg.hidden_size = 64, cfg.num_hidden_layers = 2, cfg.num_attention_heads = 2;
    cfg.intermediate_size = 128, cfg.max_position_embeddings = 64;
    ts_device_profile small = toy_profile(1e5), big = toy_profile(1e12);
    ts_plan_request rq;
    ts_plan_request_defaults(&rq);
    rq.cfg = &cfg, rq.task = TS_PLAN_INFER, rq.batch = 4, rq.seq_len = 32, rq.dtype = TS_F32;
    rq.count = 1, rq.replicas = 1, rq.micro_batches = 1, rq.recompute = 0, rq.shard_state = 0;
    rq.stages = "0:emb,0-1,heads";
    rq.device = &small;
    double need = 0;
    CHECK(ts_plan_unfit_stage(&rq, &need) == 0 && need > 1e5, "100 kB: stage 0 needs %g: %s", need, ts_last_error());
    rq.device = &big;
    CHECK(ts_plan_unfit_stage(&rq, &need) == -1 && need == 0, "1 TB: every stage fits (%g)", need);
    CHECK(ts_plan_unfit_stage(&rq, NULL) == -1, "need_bytes may be NULL");
}

int main(int argc, char **argv) {
    tu_args(argc, argv);
    RUN(test_spec);
    RUN(test_unfit);
    return tu_finish("test_stage_spec");
}
