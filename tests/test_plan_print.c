/*
 * test_plan_print.c — ts_plan_print and ts_plan_print_json on layouts filled by hand (no cost
 * model): the parts named as --stages names them, the memory table in GB against the device's,
 * fits / does not, times in ms, the bubble, the all-reduce and its hidden part, seq/s and the
 * command; --explain's alternatives with why; the JSON parses (cJSON) and holds the same figures;
 * bad arguments are refused.
 */
#include "tessera_apps.h"
#include "test_util.h"

#include <cjson/cJSON.h>

#include "plan/plan_print.h"

typedef struct sbuf {
    char s[1 << 16];
    size_t n;
} sbuf;

static void sink(void *ctx, const char *text, size_t len) {
    sbuf *b = ctx;
    if (b->n + len >= sizeof b->s) len = sizeof b->s - 1 - b->n;
    memcpy(b->s + b->n, text, len);
    b->n += len;
    b->s[b->n] = 0;
}

static ts_bert_config cfg;
static ts_device_profile dev;

/* BERT-Base, the seed's layout on a POD16: 5 stages on 4 IPUs, 4 replicas, and two alternatives. */
static void fill(ts_plan_request *rq, ts_plan_layout *l) {
    ts_bert_config_default(&cfg);
    memset(&dev, 0, sizeof dev);
    dev.struct_size = sizeof dev;
    snprintf(dev.name, sizeof dev.name, "ipu-mk2");
    snprintf(dev.description, sizeof dev.description, "Graphcore GC200 \"Mk2\"");
    dev.memory_bytes = 0.9e9, dev.streaming_bytes = 32e9;
    memset(rq, 0, sizeof *rq);
    rq->struct_size = sizeof *rq, rq->cfg = &cfg, rq->device = &dev, rq->count = 16;
    rq->batch = 32, rq->seq_len = 128, rq->max_predictions = 20, rq->dtype = TS_F16, rq->optimizer = TS_OPTIM_LAMB;
    memset(l, 0, 3 * sizeof *l);
    ts_plan_layout *b = &l[0];
    b->struct_size = sizeof *b;
    b->nstages = 5, b->ndevices = 4, b->replicas = 4, b->micro_batches = 512, b->recompute = 1, b->fits = 1;
    snprintf(b->stages, sizeof b->stages, "0:emb,heads 1:0-3 2:4-7 3:8-11");
    int dev_of[5] = {0, 1, 2, 3, 0}, first[5] = {0, 1, 5, 9, 13}, last[5] = {0, 4, 8, 12, 13};
    for (int s = 0; s < 5; s++) {
        ts_plan_stage *st = &b->st[s];
        st->device = dev_of[s], st->first = first[s], st->last = last[s];
        st->mem.params = 200000000, st->mem.grads = 100000000, st->mem.optimizer_state = 400000000;
        st->mem.activations = 150000000;
        st->streamed_bytes = 400000000;
        st->dev_params = 200000000, st->dev_grads = 100000000, st->dev_activations = 150000000; /* state streamed */
        st->need_bytes = 0.45e9; /* the dev_ parts' sum */
        st->fwd_s = 0.002, st->bwd_s = 0.004, st->update_s = 0.010, st->fits = 1;
    }
    b->step_s = 1.4, b->bubble = 0.006, b->allreduce_s = 0.020, b->allreduce_hidden_s = 0.015;
    b->seq_per_s = 11700.4;
    snprintf(b->why, sizeof b->why, "the fastest layout that fits");
    snprintf(b->command, sizeof b->command, "mpirun -np 4 tessera pretrain --devices cpu:0,cpu:1,cpu:2,cpu:3 "
                                            "--stages \"0:emb,heads 1:0-3 2:4-7 3:8-11\" --micro-batches 512");
    l[1] = l[0];
    l[1].micro_batches = 256, l[1].seq_per_s = 11000;
    snprintf(l[1].why, sizeof l[1].why, "6.0%% slower than the best (a larger bubble)");
    l[2] = l[0];
    snprintf(l[2].stages, sizeof l[2].stages, "0:emb,0-11,heads");
    l[2].nstages = 1, l[2].ndevices = 1, l[2].replicas = 16, l[2].fits = 0, l[2].recompute = 0;
    l[2].st[0].first = 0, l[2].st[0].last = 13, l[2].st[0].need_bytes = 3.21e9, l[2].st[0].fits = 0;
    l[2].st[0].dev_activations = 2.91e9;
    snprintf(l[2].why, sizeof l[2].why, "stage 0 (device 0) needs 3.21 GB of 0.90 GB");
}

static void test_parts_names(void) {
    char b[64];
    ts_plan_parts_name(0, 0, 12, b, sizeof b);
    CHECK(!strcmp(b, "emb"), "%s", b);
    ts_plan_parts_name(1, 4, 12, b, sizeof b);
    CHECK(!strcmp(b, "0-3"), "%s", b);
    ts_plan_parts_name(13, 13, 12, b, sizeof b);
    CHECK(!strcmp(b, "heads"), "%s", b);
    ts_plan_parts_name(0, 13, 12, b, sizeof b);
    CHECK(!strcmp(b, "emb,0-11,heads"), "%s", b);
    ts_plan_parts_name(12, 13, 12, b, sizeof b);
    CHECK(!strcmp(b, "11,heads"), "%s", b);
    ts_plan_parts_name(0, 1, 12, b, sizeof b);
    CHECK(!strcmp(b, "emb,0"), "%s", b);
}

static void test_text(void) {
    ts_plan_request rq;
    ts_plan_layout l[3];
    fill(&rq, l);
    static sbuf b;
    b.n = 0;
    CHECK_OK(ts_plan_print(&rq, l, 3, 0, sink, &b));
    const char *want[] = {"16 x ipu-mk2 (0.90 GB each", "best layout: 5 stages on 4 devices x 4 replicas",
                          "512 micro-batches", "recomputation on", "emb,heads", "0:emb,heads 1:0-3 2:4-7 3:8-11",
                          "emb ", "0-3 ", "8-11 ", "heads ", "0.20", "0.00 (0.40)", "0.45 / 0.90", "fits",
                          "2.00", "4.00", "10.00", "bubble: 0.6%", "all-reduce: 20.00 ms", "15.00 ms (75%) hidden",
                          "estimated 11700.4 seq/s", "command:\n  mpirun -np 4 tessera pretrain", "f16", "LAMB",
                          "20 masked positions"};
    for (size_t i = 0; i < sizeof want / sizeof *want; i++) CHECK(strstr(b.s, want[i]), "'%s' missing from:\n%s", want[i], b.s);
    CHECK(!strstr(b.s, "alternatives"), "no alternatives without explain:\n%s", b.s);
    b.n = 0;
    CHECK_OK(ts_plan_print(&rq, l, 3, 1, sink, &b));
    CHECK(strstr(b.s, "alternatives, the next best first:"), "%s", b.s);
    CHECK(strstr(b.s, "2. \"0:emb,heads 1:0-3 2:4-7 3:8-11\" x 4 replicas, 256 micro-batches of 32, recomputed: 11000.0 "
                      "seq/s: 6.0% slower"), "%s", b.s);
    CHECK(strstr(b.s, "3. \"0:emb,0-11,heads\" x 16 replicas, 512 micro-batches of 32: does not fit: stage 0 (device 0) "
                      "needs 3.21 GB of 0.90 GB"), "%s", b.s);
}

static void test_not_fitting(void) {
    ts_plan_request rq;
    ts_plan_layout l[3];
    fill(&rq, l);
    static sbuf b;
    b.n = 0;
    CHECK_OK(ts_plan_print(&rq, &l[2], 1, 1, sink, &b));
    CHECK(strstr(b.s, "no layout fits; the closest: 1 stage on 1 device x 16 replicas"), "%s", b.s);
    CHECK(strstr(b.s, "emb,0-11,heads"), "%s", b.s);
    CHECK(strstr(b.s, "3.21 / 0.90"), "%s", b.s);
    CHECK(strstr(b.s, "DOES NOT FIT"), "%s", b.s);
    CHECK(strstr(b.s, "2.91 "), "the activations that make up 3.21 GB:\n%s", b.s);
    CHECK(strstr(b.s, "does not fit: stage 0 (device 0) needs 3.21 GB"), "%s", b.s);
    CHECK(strstr(b.s, "alternatives: none"), "%s", b.s);
}

static double num(const cJSON *o, const char *k) { return cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(o, k)); }
static const char *str(const cJSON *o, const char *k) {
    const char *s = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, k));
    return s ? s : "";
}

static void test_json(void) {
    ts_plan_request rq;
    ts_plan_layout l[3];
    fill(&rq, l);
    snprintf(l[0].why, sizeof l[0].why, "a \"quoted\" why\\ with a tab\t");
    static sbuf b;
    b.n = 0;
    CHECK_OK(ts_plan_print_json(&rq, l, 3, sink, &b));
    cJSON *j = cJSON_Parse(b.s);
    CHECK(j, "not JSON:\n%s", b.s);
    if (!j) return;
    CHECK(cJSON_IsTrue(cJSON_GetObjectItem(j, "fits")), "fits");
    const cJSON *d = cJSON_GetObjectItem(j, "device"), *r = cJSON_GetObjectItem(j, "request");
    CHECK(!strcmp(str(d, "name"), "ipu-mk2") && num(d, "memory_bytes") == 0.9e9, "device");
    CHECK(num(r, "count") == 16 && num(r, "batch") == 32 && !strcmp(str(r, "dtype"), "f16") &&
          !strcmp(str(r, "optimizer"), "lamb") && !strcmp(str(r, "task"), "pretrain"), "request");
    const cJSON *ls = cJSON_GetObjectItem(j, "layouts");
    CHECK(cJSON_GetArraySize(ls) == 3, "3 layouts");
    const cJSON *best = cJSON_GetArrayItem(ls, 0);
    CHECK(num(best, "seq_per_s") == 11700.4 && num(best, "replicas") == 4 && num(best, "micro_batches") == 512, "best");
    CHECK(!strcmp(str(best, "why"), l[0].why), "why round trip: %s", str(best, "why"));
    CHECK(strstr(str(best, "command"), "--stages \"0:emb,heads"), "command");
    const cJSON *st = cJSON_GetObjectItem(best, "stage_table");
    CHECK(cJSON_GetArraySize(st) == 5, "5 stages");
    const cJSON *s4 = cJSON_GetArrayItem(st, 4), *m = cJSON_GetObjectItem(s4, "memory_bytes");
    CHECK(!strcmp(str(s4, "parts"), "heads") && num(s4, "device") == 0, "stage 4");
    CHECK(num(m, "params") == 2e8 && num(m, "optimizer_streamed") == 4e8 && num(m, "need") == 4.5e8, "memory");
    CHECK(cJSON_IsFalse(cJSON_GetObjectItem(cJSON_GetArrayItem(ls, 2), "fits")), "third does not fit");
    cJSON_Delete(j);
}

static void test_bad_args(void) {
    ts_plan_request rq;
    ts_plan_layout l[3];
    fill(&rq, l);
    static sbuf b;
    CHECK_STATUS(ts_plan_print(NULL, l, 1, 0, sink, &b), TS_ERR_ARG);
    CHECK_STATUS(ts_plan_print(&rq, NULL, 1, 0, sink, &b), TS_ERR_ARG);
    CHECK_STATUS(ts_plan_print(&rq, l, 1, 0, NULL, &b), TS_ERR_ARG);
    CHECK_STATUS(ts_plan_print_json(&rq, l, -1, sink, &b), TS_ERR_ARG);
    b.n = 0;
    CHECK_OK(ts_plan_print_json(&rq, l, 0, sink, &b));
    cJSON *j = cJSON_Parse(b.s);
    CHECK(j && cJSON_IsFalse(cJSON_GetObjectItem(j, "fits")), "no layouts: fits false\n%s", b.s);
    cJSON_Delete(j);
}

int main(int argc, char **argv) {
    tu_args(argc, argv);
    RUN(test_parts_names);
    RUN(test_text);
    RUN(test_not_fitting);
    RUN(test_json);
    RUN(test_bad_args);
    return tu_finish("test_plan_print");
}
