/*
 * pipeline_opts.c — `--devices LIST --stages SPEC|auto --micro-batches M` of `tessera pretrain` and
 * `finetune`: which device runs which part of a BERT (see pipeline_opts.h).
 *
 * --stages names, per device (its index in --devices), the parts it runs:
 *     "0:emb,heads 1:0-3 2:4-7 3:8-11"
 * emb (embeddings and attention mask), heads (pooler and the task's head, with the loss) and
 * encoder layers (N or A-B). Every layer once, in order along the devices' parts. The parts become
 * pipeline stages in forward order: a device that runs two separate stretches (the embeddings and
 * the heads above) runs two stages. "auto" measures each part's time and memory on one device (a
 * short run with a stage per part) and cuts the layers into contiguous stretches of balanced cost
 * (a part's share of the time plus its share of the memory), the embeddings with the first and
 * the heads with the last.
 */
#include "pipeline_opts.h"
#include "train_common.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Split --devices into pp->dev. 0 or prints the error and returns 2. */
static int parse_devices(const char *cmd, const char *list, ts_pipe_plan *pp) {
    pp->ndev = 0;
    for (const char *p = list; *p;) {
        size_t n = strcspn(p, ",");
        if (n == 0 || n >= sizeof pp->dev[0] || pp->ndev == TS_PIPE_MAX_DEV) {
            fprintf(stderr, "tessera %s: --devices %s: expected a comma-separated list of up to %d devices such as "
                            "cpu:0,cpu:1\n", cmd, list, TS_PIPE_MAX_DEV);
            return 2;
        }
        snprintf(pp->dev[pp->ndev], sizeof pp->dev[0], "%.*s", (int)n, p);
        for (int k = 0; k < pp->ndev; k++)
            if (!strcmp(pp->dev[k], pp->dev[pp->ndev])) {
                fprintf(stderr, "tessera %s: --devices %s names %s twice\n", cmd, list, pp->dev[k]);
                return 2;
            }
        pp->ndev++;
        p += n;
        if (*p == ',') p++;
    }
    if (!pp->ndev) {
        fprintf(stderr, "tessera %s: --devices is empty\n", cmd);
        return 2;
    }
    return 0;
}

/* The parts of the model in forward order: 0 embeddings, 1 .. L the layers, L + 1 the heads. */
static void name_part(int part, int layers, char *buf, size_t cap) {
    if (part == 0) snprintf(buf, cap, "embeddings");
    else if (part == layers + 1) snprintf(buf, cap, "heads");
    else snprintf(buf, cap, "layer %d", part - 1);
}

/* Stages from part -> device: a new stage where the device changes along the forward order. */
static int make_stages(const char *cmd, const int *part_dev, int layers, ts_pipe_plan *pp) {
    pp->nstages = 0;
    int prev = -1;
    for (int part = 0; part <= layers + 1; part++) {
        int d = part_dev[part];
        if (d != prev) {
            if (pp->nstages == TS_MAX_STAGES) {
                fprintf(stderr, "tessera %s: --stages makes more than %d pipeline stages\n", cmd, TS_MAX_STAGES);
                return 2;
            }
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
        char a[32], b[32];
        name_part(pp->stage_first[s], layers, a, sizeof a);
        name_part(pp->stage_last[s], layers, b, sizeof b);
        if (pp->stage_first[s] == pp->stage_last[s]) snprintf(pp->what[s], sizeof pp->what[s], "%s", a);
        else if (pp->stage_first[s] > 0 && pp->stage_last[s] <= layers)
            snprintf(pp->what[s], sizeof pp->what[s], "layers %d-%d", pp->stage_first[s] - 1, pp->stage_last[s] - 1);
        else snprintf(pp->what[s], sizeof pp->what[s], "%s .. %s", a, b);
    }
    return 0;
}

/* An integer at *p (advanced past it), or -1. */
static int read_int(const char **p) {
    if (!isdigit((unsigned char)**p)) return -1;
    long v = strtol(*p, (char **)p, 10);
    return v > 1000000 ? -1 : (int)v;
}

int ts_pipe_parse(const char *cmd, const char *devices, const char *stages, int layers, ts_pipe_plan *pp) {
    memset(pp, 0, sizeof *pp);
    if (parse_devices(cmd, devices, pp)) return 2;
    if (!stages || !strcmp(stages, "auto")) {
        pp->automatic = 1; /* ts_pipe_balance fills the stages */
        return 0;
    }
    int part_dev[TS_BERT_MAX_LAYERS + 2];
    for (int i = 0; i < layers + 2; i++) part_dev[i] = -1;
    const char *p = stages;
    while (*p) {
        while (*p == ' ') p++;
        if (!*p) break;
        int d = read_int(&p);
        if (d < 0 || *p != ':' || d >= pp->ndev) {
            fprintf(stderr, "tessera %s: --stages \"%s\": expected DEVICE:PARTS groups such as \"0:emb,heads 1:0-3\", "
                            "DEVICE an index into --devices (0 .. %d)\n", cmd, stages, pp->ndev - 1);
            return 2;
        }
        p++;
        while (*p && *p != ' ') {
            int lo, hi;
            if (!strncmp(p, "emb", 3)) lo = hi = 0, p += 3 + (!strncmp(p, "embeddings", 10) ? 7 : 0);
            else if (!strncmp(p, "heads", 5)) lo = hi = layers + 1, p += 5;
            else {
                lo = read_int(&p), hi = lo;
                if (*p == '-') p++, hi = read_int(&p);
                if (lo < 0 || hi < lo || hi >= layers) {
                    fprintf(stderr, "tessera %s: --stages \"%s\": a layer range must lie within 0 .. %d (the model's "
                                    "%d layers)\n", cmd, stages, layers - 1, layers);
                    return 2;
                }
                lo++, hi++;
            }
            for (int part = lo; part <= hi; part++) {
                if (part_dev[part] >= 0) {
                    char nm[32];
                    name_part(part, layers, nm, sizeof nm);
                    fprintf(stderr, "tessera %s: --stages \"%s\" places the %s twice\n", cmd, stages, nm);
                    return 2;
                }
                part_dev[part] = d;
            }
            if (*p == ',') p++;
            else if (*p && *p != ' ') {
                fprintf(stderr, "tessera %s: --stages \"%s\": unexpected '%c'\n", cmd, stages, *p);
                return 2;
            }
        }
    }
    for (int part = 0; part < layers + 2; part++)
        if (part_dev[part] < 0) {
            char nm[32];
            name_part(part, layers, nm, sizeof nm);
            fprintf(stderr, "tessera %s: --stages \"%s\" does not place the %s\n", cmd, stages, nm);
            return 2;
        }
    return make_stages(cmd, part_dev, layers, pp);
}

/* Cut parts 0 .. n-1 of costs c into k contiguous groups with the smallest largest sum (dynamic
 * programming over the prefix sums); writes each part's group into grp. */
static void balance(const double *c, int n, int k, int *grp) {
    double *pre = calloc((size_t)n + 1, sizeof(double)), *best = malloc(sizeof(double) * (size_t)(n + 1) * (k + 1));
    int *cut = malloc(sizeof(int) * (size_t)(n + 1) * (k + 1));
    if (!pre || !best || !cut) abort();
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
}

int ts_pipe_balance(const char *cmd, const double *part_seconds, int layers, ts_pipe_plan *pp) {
    int n = layers + 2, k = pp->ndev < n ? pp->ndev : n;
    int grp[TS_BERT_MAX_LAYERS + 2];
    balance(part_seconds, n, k, grp);
    if (k < pp->ndev)
        fprintf(stderr, "tessera %s: note: %d devices for %d parts: using the first %d\n", cmd, pp->ndev, n, k);
    pp->automatic = 0;
    return make_stages(cmd, grp, layers, pp);
}

void ts_pipe_apply(const ts_pipe_plan *pp, ts_bert_config *cfg) {
    cfg->layer_stages = pp->layer_stage;
    cfg->embedding_stage = pp->emb_stage;
    cfg->head_stage = pp->head_stage;
}

/* ------------------------------------------------------------------ measuring, describing */

/* Synthetic data for one call of a program of `slices` micro-batches: valid ids, a full mask,
 * labels within range, masked positions, answer positions. */
static int feed_synthetic(ts_program *p, const ts_bert_config *cfg, ts_bert_head head, int batch, int seq, int slices) {
    int rank = head == TS_BERT_PRETRAINING ? 2 : head == TS_BERT_SEQ_CLASSIFICATION ? 1 : 0;
    int P = head == TS_BERT_PRETRAINING ? cfg->max_predictions_per_seq : 0;
    ts_batch_buf bb;
    if (!ts_batch_buf_init_slices(&bb, batch, seq, rank, slices, P)) return -1;
    int64_t n = (int64_t)slices * batch * seq;
    int32_t *ids = ts_tensor_data(bb.ids), *mask = ts_tensor_data(bb.mask);
    for (int64_t i = 0; i < n; i++) ids[i] = (int32_t)(5 + i * 7 % (cfg->vocab_size - 5)), mask[i] = 1;
    if (rank == 2)
        for (int64_t i = 0; i < n; i++) ((int32_t *)ts_tensor_data(bb.labels))[i] = i % 7 ? -100 : ids[i];
    if (rank == 1)
        for (int64_t i = 0; i < (int64_t)slices * batch; i++) ((int32_t *)ts_tensor_data(bb.labels))[i] = (int32_t)(i % cfg->num_labels);
    for (int k = 0; k < slices && P; k++) ts_batch_buf_compact(&bb, k);
    ts_status st = ts_batch_buf_feed(&bb, p, 1);
    if (!st && head == TS_BERT_QUESTION_ANSWERING) {
        const int64_t sb[2] = {slices, batch};
        ts_tensor *sp = ts_tensor_new(TS_I32, slices > 1 ? 2 : 1, slices > 1 ? sb : sb + 1);
        if (!sp) st = TS_ERR_NOMEM;
        else st = ts_program_feed(p, "start_positions", sp), st = st ? st : ts_program_feed(p, "end_positions", sp);
        ts_tensor_free(sp);
    }
    if (!st) {
        ts_tensor *lr = ts_tensor_new(TS_F32, slices > 1 ? 1 : 0, (const int64_t[]){slices});
        for (int k = 0; lr && k < slices; k++) ((float *)ts_tensor_data(lr))[k] = 0.f; /* measure, do not learn */
        st = lr ? ts_program_feed(p, "lr", lr) : TS_ERR_NOMEM;
        ts_tensor_free(lr);
    }
    ts_batch_buf_free(&bb);
    return st ? -1 : 0;
}

int ts_pipe_measure(const char *cmd, const ts_bert_config *cfg, ts_bert_head head, int batch, int seq, int micro,
                    ts_pipe_plan *pp) {
    int L = cfg->num_hidden_layers, parts = L + 2;
    if (parts > TS_MAX_STAGES) {
        fprintf(stderr, "tessera %s: --stages auto measures each of the %d parts as a stage, at most %d: give --stages\n",
                cmd, parts, TS_MAX_STAGES);
        return 2;
    }
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
    printf("tessera %s: --stages auto: timing the embeddings, each layer and the heads on %s\n", cmd, pp->dev[0]);
    if (ts_bert_train_programs(&o, &p, NULL) != TS_OK) {
        fprintf(stderr, "tessera %s: --stages auto: %s\n", cmd, ts_last_error());
        return 1;
    }
    double t[TS_MAX_STAGES] = {0};
    int rc = 0;
    for (int run = 0; run < 3 && !rc; run++) { /* a warm-up, then two timed */
        if (run == 1) ts_program_pipeline_reset_stats(p);
        if (feed_synthetic(p, &c, head, batch, seq, M) || ts_program_run(p) != TS_OK) {
            fprintf(stderr, "tessera %s: --stages auto: %s\n", cmd, ts_last_error());
            rc = 1;
        }
    }
    /* each part's share of the time plus its share of the memory (parameters, their state and the
     * activations a stage keeps): both are balanced, time and memory weighing the same */
    double mem[TS_MAX_STAGES] = {0}, tt = 0, mt = 0;
    for (int s = 0; s < parts && !rc; s++) {
        ts_stage_info si;
        ts_program_stage_info(p, s, &si);
        t[s] = si.busy_s;
        mem[s] = (double)(si.mem.params + si.mem.grads + si.mem.optimizer_state) +
                 (double)si.mem.activations / (si.in_flight > 0 ? si.in_flight : 1);
        tt += t[s], mt += mem[s];
    }
    for (int s = 0; s < parts && !rc; s++) t[s] = t[s] / (tt > 0 ? tt : 1) + mem[s] / (mt > 0 ? mt : 1);
    ts_program_free(p);
    rc = rc ? rc : ts_pipe_balance(cmd, t, L, pp);
    if (ts_cli_rep.size > 1) { /* replicas: every rank builds rank 0's stages, whatever its own clock said */
        int32_t r0 = rc;
        if (ts_comm_broadcast(ts_cli_rep.comm, &r0, sizeof r0, 0) ||
            ts_comm_broadcast(ts_cli_rep.comm, pp, sizeof *pp, 0)) {
            fprintf(stderr, "tessera %s: --stages auto: %s\n", cmd, ts_last_error());
            return 1;
        }
        for (int s = 0; s < pp->nstages; s++) pp->stage_name[s] = pp->dev[pp->stage_dev[s]];
        rc = r0;
    }
    return rc;
}

static double mib(size_t b) { return (double)b / (1024.0 * 1024.0); }

void ts_pipe_describe(const char *cmd, ts_program *p, const ts_pipe_plan *pp, int micro, FILE *metrics) {
    int ns = ts_program_num_stages(p);
    if (!metrics)
        printf("tessera %s: pipeline of %d stages on %d devices, %d micro-batches a step (1F1B; idle at best "
               "(S-1)/(M+S-1) = %.1f%%):\n", cmd, ns, pp->ndev, micro, 100.0 * (ns - 1) / (micro + ns - 1));
    else
        fprintf(metrics, "{\"pipeline\": {\"micro_batches\": %d, \"stages\": [", micro);
    for (int s = 0; s < ns; s++) {
        ts_stage_info si;
        ts_program_stage_info(p, s, &si);
        if (!metrics)
            printf("  stage %d on %s (%d thread%s): %s; parameters %.1f MiB, activations %.1f MiB (%d micro-batch%s in "
                   "flight)\n", s, pp->stage_name[s], si.threads, si.threads == 1 ? "" : "s", pp->what[s], mib(si.mem.params),
                   mib(si.mem.activations), si.in_flight, si.in_flight == 1 ? "" : "es");
        else
            fprintf(metrics, "%s{\"stage\": %d, \"device\": \"%s\", \"threads\": %d, \"parts\": \"%s\", "
                    "\"params_bytes\": %zu, \"activation_bytes\": %zu, \"in_flight\": %d}", s ? ", " : "", s,
                    pp->stage_name[s], si.threads, pp->what[s], si.mem.params, si.mem.activations, si.in_flight);
    }
    if (metrics) fprintf(metrics, "]}}\n"), fflush(metrics);
}

int ts_pipe_micro(const char *cmd, const char *devices, const char *stages, int micro, int *accumulation, int fp16) {
    if (stages && !devices) {
        fprintf(stderr, "tessera %s: --stages needs --devices\n", cmd);
        return 2;
    }
    if (micro && *accumulation > 1 && micro != *accumulation) {
        fprintf(stderr, "tessera %s: --micro-batches %d and --accumulation %d: the same thing, two values\n", cmd, micro,
                *accumulation);
        return 2;
    }
    if (micro) *accumulation = micro;
    if (!devices) return 0;
    if (fp16) {
        fprintf(stderr, "tessera %s: --fp16 (loss scaling) does not run as a pipeline yet: use --bf16 with --devices\n",
                cmd);
        return 2;
    }
    if (*accumulation < 2) { /* two micro-batches per device keep the pipeline busy */
        int ndev = 1;
        for (const char *p = devices; *p; p++) ndev += *p == ',';
        *accumulation = 2 * ndev;
    }
    return 0;
}

void ts_pipe_report(const ts_pipe_plan *pp, ts_program *p, int micro, char *buf, size_t cap, FILE *metrics) {
    int ns = ts_program_num_stages(p);
    double wall, bubble, theory = (double)(ns - 1) / (micro + ns - 1);
    ts_program_pipeline_stats(p, &wall, &bubble);
    size_t o = (size_t)snprintf(buf, cap, "pipeline, %d stages over %.1f s, busy:", ns, wall);
    if (metrics)
        fprintf(metrics, "{\"pipeline_wall_s\": %.3f, \"bubble\": %.4f, \"bubble_theory\": %.4f, \"stages\": [",
                wall, bubble, theory);
    for (int s = 0; s < ns; s++) {
        ts_stage_info si;
        ts_program_stage_info(p, s, &si);
        if (o < cap) o += (size_t)snprintf(buf + o, cap - o, "%s %d (%s) %.2f s", s ? "," : "", s, pp->stage_name[s],
                                           si.busy_s);
        if (metrics)
            fprintf(metrics, "%s{\"stage\": %d, \"device\": \"%s\", \"busy_s\": %.3f}", s ? ", " : "", s,
                    pp->stage_name[s], si.busy_s);
    }
    if (o < cap)
        snprintf(buf + o, cap - o, "; idle (bubble) %.1f%%, 1F1B in theory (S-1)/(M+S-1) = %.1f%%", 100 * bubble,
                 100 * theory);
    if (metrics) fprintf(metrics, "]}\n"), fflush(metrics);
}
