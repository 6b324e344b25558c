/*
 * stages.c — pipeline stages of a BERT (tessera_tasks.h): which device runs which part
 * (embeddings, each encoder layer, heads), from a written spec such as
 *     "0:emb,heads 1:0-3 2:4-7 3:8-11"
 * or balanced by measurement: each part timed and sized on one device (a short run with a stage
 * per part), then the layers cut into contiguous stretches of balanced cost (a part's share of
 * the time plus its share of the memory), the embeddings with the first and the heads with the
 * last. The parts become stages in forward order: a device that runs two separate stretches
 * (the embeddings and the heads above) runs two stages.
 */
#include "common/app.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Split the device list into pp->dev. */
static ts_status parse_devices(const char *list, ts_stage_plan *pp) {
    pp->ndev = 0;
    for (const char *p = list; *p;) {
        size_t n = strcspn(p, ",");
        if (n == 0 || n >= sizeof pp->dev[0] || pp->ndev == TS_STAGE_MAX_DEVICES)
            return ts_set_error(TS_ERR_ARG, "devices \"%s\": expected a comma-separated list of up to %d devices such "
                                            "as cpu:0,cpu:1", list, TS_STAGE_MAX_DEVICES);
        snprintf(pp->dev[pp->ndev], sizeof pp->dev[0], "%.*s", (int)n, p);
        for (int k = 0; k < pp->ndev; k++)
            if (!strcmp(pp->dev[k], pp->dev[pp->ndev]))
                return ts_set_error(TS_ERR_ARG, "devices \"%s\" names %s twice", list, pp->dev[k]);
        pp->ndev++;
        p += n;
        if (*p == ',') p++;
    }
    if (!pp->ndev) return ts_set_error(TS_ERR_ARG, "devices: the list is empty");
    return TS_OK;
}

/* The parts of the model in forward order: 0 embeddings, 1 .. L the layers, L + 1 the heads. */
static void name_part(int part, int layers, char *buf, size_t cap) {
    if (part == 0) snprintf(buf, cap, "embeddings");
    else if (part == layers + 1) snprintf(buf, cap, "heads");
    else snprintf(buf, cap, "layer %d", part - 1);
}

/* What stage s runs, in words. */
static void describe_stage(ts_stage_plan *pp, int s, int layers) {
    char a[32], b[32];
    name_part(pp->stage_first[s], layers, a, sizeof a);
    name_part(pp->stage_last[s], layers, b, sizeof b);
    if (pp->stage_first[s] == pp->stage_last[s]) snprintf(pp->what[s], sizeof pp->what[s], "%s", a);
    else if (pp->stage_first[s] > 0 && pp->stage_last[s] <= layers)
        snprintf(pp->what[s], sizeof pp->what[s], "layers %d-%d", pp->stage_first[s] - 1, pp->stage_last[s] - 1);
    else snprintf(pp->what[s], sizeof pp->what[s], "%s .. %s", a, b);
}

/* Stages from part -> device: a new stage where the device changes along the forward order. */
static ts_status make_stages(const int *part_dev, int layers, ts_stage_plan *pp) {
    pp->nstages = 0;
    int prev = -1;
    for (int part = 0; part <= layers + 1; part++) {
        int d = part_dev[part];
        if (d != prev) {
            if (pp->nstages == TS_MAX_STAGES)
                return ts_set_error(TS_ERR_ARG, "stages: more than %d pipeline stages", TS_MAX_STAGES);
            pp->stage_dev[pp->nstages] = d;
            pp->stage_first[pp->nstages] = part;
            pp->nstages++;
            prev = d;
        }
        int s = pp->nstages - 1;
        pp->stage_last[s] = part;
        if (part == 0) pp->emb_stage = s;
        else if (part == layers + 1) pp->head_stage = s;
        else pp->layer_stage[part - 1] = s;
    }
    for (int s = 0; s < pp->nstages; s++) {
        pp->stage_name[s] = pp->dev[pp->stage_dev[s]];
        describe_stage(pp, s, layers);
    }
    return TS_OK;
}

/* An integer at *p (advanced past it), or -1. */
static int read_int(const char **p) {
    if (!isdigit((unsigned char)**p)) return -1;
    long v = strtol(*p, (char **)p, 10);
    return v > 1000000 ? -1 : (int)v;
}

/* One DEVICE:PARTS group's parts (at *pp_, advanced) onto device d in part_dev. */
static ts_status parse_parts(const char **pp_, const char *stages, int layers, int d, int *part_dev) {
    const char *p = *pp_;
    while (*p && *p != ' ') {
        int lo, hi;
        if (!strncmp(p, "emb", 3)) lo = hi = 0, p += 3 + (!strncmp(p, "embeddings", 10) ? 7 : 0);
        else if (!strncmp(p, "heads", 5)) lo = hi = layers + 1, p += 5;
        else {
            lo = read_int(&p), hi = lo;
            if (*p == '-') p++, hi = read_int(&p);
            if (lo < 0 || hi < lo || hi >= layers)
                return ts_set_error(TS_ERR_ARG, "stages \"%s\": a layer range must lie within 0 .. %d (the model's "
                                                "%d layers)", stages, layers - 1, layers);
            lo++, hi++;
        }
        for (int part = lo; part <= hi; part++) {
            if (part_dev[part] >= 0) {
                char nm[32];
                name_part(part, layers, nm, sizeof nm);
                return ts_set_error(TS_ERR_ARG, "stages \"%s\" places the %s twice", stages, nm);
            }
            part_dev[part] = d;
        }
        if (*p == ',') p++;
        else if (*p && *p != ' ') return ts_set_error(TS_ERR_ARG, "stages \"%s\": unexpected '%c'", stages, *p);
    }
    *pp_ = p;
    return TS_OK;
}

ts_status ts_stage_plan_parse(const char *devices, const char *stages, int layers, ts_stage_plan *pp) {
    memset(pp, 0, sizeof *pp);
    if (parse_devices(devices, pp)) return TS_ERR_ARG;
    if (!stages || !strcmp(stages, "auto")) {
        pp->automatic = 1; /* ts_stage_plan_measure fills the stages */
        return TS_OK;
    }
    int part_dev[TS_BERT_MAX_LAYERS + 2];
    for (int i = 0; i < layers + 2; i++) part_dev[i] = -1;
    const char *p = stages;
    while (*p) {
        while (*p == ' ') p++;
        if (!*p) break;
        int d = read_int(&p);
        if (d < 0 || *p != ':' || d >= pp->ndev)
            return ts_set_error(TS_ERR_ARG, "stages \"%s\": expected DEVICE:PARTS groups such as \"0:emb,heads "
                                            "1:0-3\", DEVICE an index into the devices (0 .. %d)", stages, pp->ndev - 1);
        p++;
        if (parse_parts(&p, stages, layers, d, part_dev)) return TS_ERR_ARG;
    }
    for (int part = 0; part < layers + 2; part++)
        if (part_dev[part] < 0) {
            char nm[32];
            name_part(part, layers, nm, sizeof nm);
            return ts_set_error(TS_ERR_ARG, "stages \"%s\" does not place the %s", stages, nm);
        }
    return make_stages(part_dev, layers, pp);
}

/* Cut parts 0 .. n-1 of costs c into k contiguous groups with the smallest largest sum (dynamic
 * programming over the prefix sums); writes each part's group into grp. */
static ts_status balance(const double *c, int n, int k, int *grp) {
    double *pre = calloc((size_t)n + 1, sizeof(double)), *best = malloc(sizeof(double) * (size_t)(n + 1) * (k + 1));
    int *cut = malloc(sizeof(int) * (size_t)(n + 1) * (k + 1));
    if (!pre || !best || !cut) {
        free(pre), free(best), free(cut);
        return ts_set_error(TS_ERR_NOMEM, "out of memory");
    }
    for (int i = 0; i < n; i++) pre[i + 1] = pre[i] + c[i];
#define B_(i, j) best[(size_t)(i) * (k + 1) + (j)]
#define C_(i, j) cut[(size_t)(i) * (k + 1) + (j)]
    for (int i = 0; i <= n; i++)
        for (int j = 0; j <= k; j++) B_(i, j) = 1e300, C_(i, j) = 0;
    B_(0, 0) = 0;
    for (int j = 1; j <= k; j++)
        for (int i = j; i <= n; i++)
            for (int m = j - 1; m < i; m++) {
                double v = B_(m, j - 1) > pre[i] - pre[m] ? B_(m, j - 1) : pre[i] - pre[m];
                if (v < B_(i, j)) B_(i, j) = v, C_(i, j) = m;
            }
    for (int j = k, i = n; j > 0; j--) {
        int m = C_(i, j);
        for (int q = m; q < i; q++) grp[q] = j - 1;
        i = m;
    }
#undef B_
#undef C_
    free(pre), free(best), free(cut);
    return TS_OK;
}

ts_status ts_stage_plan_balance(const double *part_cost, int layers, ts_stage_plan *pp) {
    int n = layers + 2, k = pp->ndev < n ? pp->ndev : n;
    int grp[TS_BERT_MAX_LAYERS + 2];
    if (balance(part_cost, n, k, grp)) return TS_ERR_NOMEM;
    pp->automatic = 0;
    return make_stages(grp, layers, pp);
}

void ts_stage_plan_apply(const ts_stage_plan *pp, ts_bert_config *cfg) {
    cfg->layer_stages = pp->layer_stage;
    cfg->embedding_stage = pp->emb_stage;
    cfg->head_stage = pp->head_stage;
}

/* ------------------------------------------------------------------ measuring */

/* Labels and answer positions of synthetic batch bb (ids set): within range. */
static ts_status feed_synthetic_labels(ts_program *p, ts_batch_buf *bb, const ts_bert_config *cfg, ts_bert_head head,
                                       int batch, int seq, int slices) {
    int64_t n = (int64_t)slices * batch * seq;
    const int32_t *ids = ts_tensor_data(bb->ids);
    if (head == TS_BERT_PRETRAINING)
        for (int64_t i = 0; i < n; i++) ((int32_t *)ts_tensor_data(bb->labels))[i] = i % 7 ? -100 : ids[i];
    if (head == TS_BERT_SEQ_CLASSIFICATION)
        for (int64_t i = 0; i < (int64_t)slices * batch; i++)
            ((int32_t *)ts_tensor_data(bb->labels))[i] = (int32_t)(i % cfg->num_labels);
    for (int k = 0; k < slices && bb->predictions; k++) ts_batch_buf_compact(bb, k);
    ts_status st = ts_batch_buf_feed(bb, p, 1);
    if (!st && head == TS_BERT_QUESTION_ANSWERING) {
        const int64_t sb[2] = {slices, batch};
        ts_tensor *sp = ts_tensor_new(TS_I32, slices > 1 ? 2 : 1, slices > 1 ? sb : sb + 1);
        if (!sp) st = TS_ERR_NOMEM;
        else st = ts_program_feed(p, "start_positions", sp), st = st ? st : ts_program_feed(p, "end_positions", sp);
        ts_tensor_free(sp);
    }
    return st;
}

/* Synthetic data for one call of a program of `slices` micro-batches: valid ids, a full mask,
 * labels within range, masked positions, answer positions, and a learning rate of 0. */
static int feed_synthetic(ts_program *p, const ts_bert_config *cfg, ts_bert_head head, int batch, int seq, int slices) {
    int rank = head == TS_BERT_PRETRAINING ? 2 : head == TS_BERT_SEQ_CLASSIFICATION ? 1 : 0;
    int P = head == TS_BERT_PRETRAINING ? cfg->max_predictions_per_seq : 0;
    ts_batch_buf bb;
    if (!ts_batch_buf_init_slices(&bb, batch, seq, rank, slices, P)) return -1;
    int64_t n = (int64_t)slices * batch * seq;
    int32_t *ids = ts_tensor_data(bb.ids), *mask = ts_tensor_data(bb.mask);
    for (int64_t i = 0; i < n; i++) ids[i] = (int32_t)(5 + i * 7 % (cfg->vocab_size - 5)), mask[i] = 1;
    ts_status st = feed_synthetic_labels(p, &bb, cfg, head, batch, seq, slices);
    if (!st) {
        ts_tensor *lr = ts_tensor_new(TS_F32, slices > 1 ? 1 : 0, (const int64_t[]){slices});
        for (int k = 0; lr && k < slices; k++) ((float *)ts_tensor_data(lr))[k] = 0.f; /* measure, do not learn */
        st = lr ? ts_program_feed(p, "lr", lr) : TS_ERR_NOMEM;
        ts_tensor_free(lr);
    }
    ts_batch_buf_free(&bb);
    return st ? -1 : 0;
}

/* Each part's cost, measured on program p (a stage per part) after the runs: its share of the
 * time plus its share of the memory (parameters, their state and the activations a stage keeps),
 * time and memory weighing the same. */
static void part_costs(ts_program *p, int parts, double *t) {
    double mem[TS_MAX_STAGES] = {0}, tt = 0, mt = 0;
    for (int s = 0; s < parts; s++) {
        ts_stage_info si = {.struct_size = sizeof si};
        ts_program_stage_info(p, s, &si);
        t[s] = si.busy_s;
        mem[s] = (double)(si.mem.params + si.mem.grads + si.mem.optimizer_state) +
                 (double)si.mem.activations / (si.in_flight > 0 ? si.in_flight : 1);
        tt += t[s], mt += mem[s];
    }
    for (int s = 0; s < parts; s++) t[s] = t[s] / (tt > 0 ? tt : 1) + mem[s] / (mt > 0 ? mt : 1);
}

/* Measure and balance on this process. */
static ts_status measure_here(const ts_bert_config *cfg, ts_bert_head head, int batch, int seq, int micro,
                              ts_stage_plan *pp) {
    int L = cfg->num_hidden_layers, parts = L + 2;
    ts_bert_config c = *cfg;
    int ls[TS_BERT_MAX_LAYERS];
    for (int l = 0; l < L; l++) ls[l] = l + 1;
    c.layer_stages = ls, c.embedding_stage = 0, c.head_stage = L + 1;
    const char *devs[TS_MAX_STAGES];
    for (int s = 0; s < parts; s++) devs[s] = pp->dev[0];
    int M = micro > 1 ? micro : 2;
    ts_bert_train_opts o = {.struct_size = sizeof o, .cfg = &c, .head = head, .batch = batch, .seq = seq,
                            .threads = 0, .optimizer = TS_OPTIM_ADAMW, .accumulation = M, .steps_per_call = 1,
                            .stage_devices = devs, .nstage_devices = parts};
    ts_program *p = NULL;
    if (ts_bert_train_programs(&o, &p, NULL) != TS_OK)
        return ts_set_error(TS_ERR_RUNTIME, "stages auto: %s", ts_last_error());
    double t[TS_MAX_STAGES] = {0};
    for (int run = 0; run < 3; run++) { /* a warm-up, then two timed */
        if (run == 1) ts_program_pipeline_reset_stats(p);
        if (feed_synthetic(p, &c, head, batch, seq, M) || ts_program_run(p) != TS_OK) {
            ts_set_error(TS_ERR_RUNTIME, "stages auto: %s", ts_last_error());
            ts_program_free(p);
            return TS_ERR_RUNTIME;
        }
    }
    part_costs(p, parts, t);
    ts_program_free(p);
    return ts_stage_plan_balance(t, L, pp);
}

ts_status ts_stage_plan_measure(const ts_bert_config *cfg, ts_bert_head head, int batch, int seq, int micro,
                                ts_comm *comm, ts_stage_plan *pp) {
    ts_bert_config c;
    if (TS_STRUCT_READ(&c, cfg, ts_bert_config, "ts_stage_plan_measure")) return TS_ERR_ARG;
    cfg = &c;
    int parts = cfg->num_hidden_layers + 2;
    if (parts > TS_MAX_STAGES)
        return ts_set_error(TS_ERR_ARG, "stages auto measures each of the %d parts as a stage, at most %d: give "
                                        "the stages", parts, TS_MAX_STAGES);
    ts_status st = measure_here(cfg, head, batch, seq, micro, pp);
    if (!comm || ts_comm_size(comm) <= 1) return st;
    /* replicas: every rank builds rank 0's stages, whatever its own clock said */
    int32_t r0 = st;
    if (ts_comm_broadcast(comm, &r0, sizeof r0, 0) || ts_comm_broadcast(comm, pp, sizeof *pp, 0))
        return ts_set_error(TS_ERR_COMM, "stages auto: %s", ts_last_error());
    for (int s = 0; s < pp->nstages; s++) pp->stage_name[s] = pp->dev[pp->stage_dev[s]];
    return (ts_status)r0;
}

void ts_stage_plan_spec(const ts_stage_plan *pp, int layers, char *buf, size_t cap) {
    size_t o = 0;
    if (!cap) return;
    if (!pp || pp->nstages <= 1) {
        snprintf(buf, cap, "0:emb,0-%d,heads", layers - 1);
        return;
    }
    buf[0] = 0;
    for (int d = 0; d < pp->ndev && o < cap; d++) {
        int any = 0;
        for (int s = 0; s < pp->nstages && o < cap; s++) {
            if (pp->stage_dev[s] != d) continue;
            int f = pp->stage_first[s], l = pp->stage_last[s], a = f < 1 ? 1 : f, b = l > layers ? layers : l;
            o += (size_t)snprintf(buf + o, cap - o, "%s", any ? "," : o ? " " : "");
            if (!any) o += (size_t)snprintf(buf + o, cap - o, "%d:", d);
            any = 1;
            if (f == 0 && o < cap) o += (size_t)snprintf(buf + o, cap - o, "emb%s", a <= b || l > layers ? "," : "");
            if (a <= b && o < cap) o += (size_t)(a == b ? snprintf(buf + o, cap - o, "%d", a - 1)
                                                       : snprintf(buf + o, cap - o, "%d-%d", a - 1, b - 1));
            if (l > layers && o < cap) o += (size_t)snprintf(buf + o, cap - o, "%sheads", a <= b ? "," : "");
        }
    }
}
