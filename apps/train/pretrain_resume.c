/*
 * pretrain_resume.c — the resume file format of a pretraining run (tessera_tasks.h): a
 * ts_program_save_state checkpoint whose trainer.json is
 *   {"format": "tessera-pretrain-1", "step": "N",
 *    "reader": {"fingerprint": "...", "epoch": "...", ...},   (ts_pretrain_state, as decimal strings)
 *    "options": {"layers": 2, "hidden": 32, ...},            (ts_pretrain_shape, by flag name)
 *    "corpus": [{"path": "a.txt", "bytes": 1234}, ...]}
 * With replicas each rank's reader position goes into its own part (ts_program_save_state_parts).
 */
#include "common/app.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* The int and double options of ts_pretrain_shape by flag name, for writing and comparing. */
typedef struct shape_field {
    const char *flag;
    size_t off;
    int is_double;
} shape_field;

#define SI(f, m) {f, offsetof(ts_pretrain_shape, m), 0}
#define SD(f, m) {f, offsetof(ts_pretrain_shape, m), 1}
static const shape_field FIELDS[] = {
    SI("layers", layers), SI("hidden", hidden), SI("heads", heads), SI("intermediate", inter),
    SI("max-len", max_len), SI("batch", batch), SI("seed", seed), SI("wwm", wwm), SI("bf16", bf16),
    SI("vocab size", vocab_size), SI("max-steps", max_steps), SD("lr", lr), SD("warmup", warmup),
    SD("weight-decay", wd), SD("max-grad-norm", max_grad_norm), SD("dropout", dropout), SD("mask-prob", mask_prob),
    SI("deterministic", deterministic), SI("threads", threads), SI("fp16", fp16),
    SI("accumulation", accumulation), SI("max-predictions", max_predictions), SI("cased", cased),
    SI("optimizer", optimizer), SD("momentum", momentum), SI("ranks", ranks), SI("shard-optimizer", shard),
    SI("pack", pack), SI("precision -sr", weights16),
};
#define NFIELDS ((int)(sizeof FIELDS / sizeof *FIELDS))

/* Fields added later, and their value in a checkpoint that lacks them. */
static int default_of(const char *flag, double *v) {
    if (!strcmp(flag, "ranks")) return *v = 1, 1;
    if (!strcmp(flag, "shard-optimizer")) return *v = 0, 1;
    if (!strcmp(flag, "pack")) return *v = 0, 1;
    if (!strcmp(flag, "precision -sr")) return *v = 0, 1;
    return 0;
}

static double field(const ts_pretrain_shape *s, int i) {
    const char *p = (const char *)s + FIELDS[i].off;
    return FIELDS[i].is_double ? *(const double *)p : (double)*(const int *)p;
}

static long long file_size(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 ? (long long)st.st_size : -1;
}

static void add_u64(cJSON *o, const char *k, unsigned long long v) {
    char b[32];
    snprintf(b, sizeof b, "%llu", v);
    cJSON_AddStringToObject(o, k, b);
}

static void add_reader(cJSON *o, const ts_pretrain_state *rs) {
    cJSON *rd = cJSON_AddObjectToObject(o, "reader");
    add_u64(rd, "fingerprint", rs->fingerprint);
    add_u64(rd, "epoch", rs->epoch);
    add_u64(rd, "window", rs->window);
    add_u64(rd, "file", (unsigned long long)rs->file);
    add_u64(rd, "offset", (unsigned long long)rs->offset);
    add_u64(rd, "next", (unsigned long long)rs->next);
    add_u64(rd, "served", rs->served);
    add_u64(rd, "batches", rs->batches);
}

ts_status ts_pretrain_ckpt_save(const char *out, int64_t step, const ts_program *p, const ts_pretrain_reader *r,
                                const ts_pretrain_shape *shape, const char *const *corpus, int ncorpus, int keep) {
    ts_pretrain_state rs;
    if (ts_pretrain_save(r, &rs) != TS_OK) return ts_last_status();
    cJSON *j = cJSON_CreateObject(), *op, *cp, *mine = shape->ranks > 1 ? cJSON_CreateObject() : NULL;
    cJSON_AddStringToObject(j, "format", "tessera-pretrain-1");
    add_u64(j, "step", (unsigned long long)step);
    add_reader(j, &rs); /* rank 0's in trainer.json; each rank's in its part */
    if (mine) add_reader(mine, &rs);
    op = cJSON_AddObjectToObject(j, "options");
    for (int i = 0; i < NFIELDS; i++) cJSON_AddNumberToObject(op, FIELDS[i].flag, field(shape, i));
    cp = cJSON_AddArrayToObject(j, "corpus");
    for (int i = 0; i < ncorpus; i++) {
        cJSON *f = cJSON_CreateObject();
        cJSON_AddStringToObject(f, "path", corpus[i]);
        cJSON_AddNumberToObject(f, "bytes", (double)file_size(corpus[i]));
        cJSON_AddItemToArray(cp, f);
    }
    char *text = cJSON_Print(j), *rank_text = mine ? cJSON_PrintUnformatted(mine) : NULL;
    cJSON_Delete(j);
    cJSON_Delete(mine);
    ts_status st;
    if (!text || (mine && !rank_text)) st = ts_set_error(TS_ERR_NOMEM, "out of memory");
    else st = ts_train_checkpoint_save_parts(out, step, p, text, rank_text, keep);
    free(text);
    free(rank_text);
    return st;
}

/* A decimal string member as uint64; 0 when absent or malformed (sets *bad). */
static unsigned long long get_u64(const cJSON *o, const char *k, int *bad) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    char *end;
    if (!cJSON_IsString(v)) {
        *bad = 1;
        return 0;
    }
    errno = 0;
    unsigned long long x = strtoull(v->valuestring, &end, 10);
    if (errno || end == v->valuestring || *end) *bad = 1;
    return x;
}

/* One stored option against this run's: TS_OK, or the error naming the flag. */
static ts_status check_field(const char *path, const cJSON *op, const ts_pretrain_shape *shape, int i,
                             int *planned) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(op, FIELDS[i].flag);
    double had = 0, want = field(shape, i);
    if (cJSON_IsNumber(v)) had = v->valuedouble;
    else if (!default_of(FIELDS[i].flag, &had))
        return ts_set_error(TS_ERR_ARG, "checkpoint %s: trainer.json has no option \"%s\"", path, FIELDS[i].flag);
    if (!strcmp(FIELDS[i].flag, "max-steps")) *planned = (int)had;
    if (had == want || !strcmp(FIELDS[i].flag, "max-steps")) return TS_OK;
    if (!strcmp(FIELDS[i].flag, "ranks"))
        return ts_set_error(TS_ERR_ARG, "checkpoint %s was made by %g replicas, not %g (resume with as many)", path,
                            had, want);
    if (!strcmp(FIELDS[i].flag, "optimizer")) /* stored as its ts_optim_kind */
        return ts_set_error(TS_ERR_ARG, "checkpoint %s was made with optimizer %s, not %s (resume with the same "
                                        "options)", path, ts_optim_kind_name((ts_optim_kind)had),
                            ts_optim_kind_name((ts_optim_kind)want));
    return ts_set_error(TS_ERR_ARG, "checkpoint %s was made with %s%s %g, not %g (resume with the same options)", path,
                        FIELDS[i].flag[0] == 'v' ? "a " : "", FIELDS[i].flag, had, want);
}

/* Compare the stored options and corpus with this run's. */
static ts_status check_same(const char *path, const cJSON *j, const ts_pretrain_shape *shape,
                            const char *const *corpus, int ncorpus, int *planned) {
    const cJSON *op = cJSON_GetObjectItemCaseSensitive(j, "options");
    const cJSON *cp = cJSON_GetObjectItemCaseSensitive(j, "corpus");
    for (int i = 0; i < NFIELDS; i++)
        if (check_field(path, op, shape, i, planned) != TS_OK) return ts_last_status();
    if (!cJSON_IsArray(cp) || cJSON_GetArraySize(cp) != ncorpus)
        return ts_set_error(TS_ERR_ARG, "checkpoint %s was made with %d corpus files, not %d", path,
                            cJSON_IsArray(cp) ? cJSON_GetArraySize(cp) : 0, ncorpus);
    for (int i = 0; i < ncorpus; i++) {
        const cJSON *f = cJSON_GetArrayItem(cp, i);
        const cJSON *b = cJSON_GetObjectItemCaseSensitive(f, "bytes"), *n = cJSON_GetObjectItemCaseSensitive(f, "path");
        long long now = file_size(corpus[i]);
        if (!cJSON_IsNumber(b) || b->valuedouble != (double)now)
            return ts_set_error(TS_ERR_ARG, "corpus file %s has %lld bytes, but the run of checkpoint %s read %.0f from %s "
                                            "(the corpus must not change)", corpus[i], now, path,
                                cJSON_IsNumber(b) ? b->valuedouble : -1.0, cJSON_IsString(n) ? n->valuestring : "?");
    }
    return TS_OK;
}

/* trainer.json of checkpoint `path` (or of path.old, the crash-recovery copy), parsed; NULL with
 * the error set. */
static cJSON *read_trainer_json(const char *path) {
    char file[4300], old[4300];
    if (ts_path_join(file, sizeof file, path, "trainer.json")) return NULL;
    if (file_size(file) < 0) {
        if (snprintf(old, sizeof old, "%s.old", path) >= (int)sizeof old ||
            ts_path_join(file, sizeof file, old, "trainer.json"))
            return (ts_set_error(TS_ERR_ARG, "checkpoint %s: path too long", path), NULL);
    }
    size_t n = 0;
    char *buf = ts_read_file(file, &n);
    if (!buf && ts_last_status() == TS_ERR_NOMEM) return NULL;
    cJSON *j = buf ? cJSON_ParseWithLength(buf, n) : NULL;
    free(buf);
    const cJSON *fmt = cJSON_GetObjectItemCaseSensitive(j, "format");
    if (!cJSON_IsString(fmt) || strcmp(fmt->valuestring, "tessera-pretrain-1") != 0 ||
        !cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(j, "reader"))) {
        ts_set_error(TS_ERR_IO, "checkpoint %s: %s is not a tessera pretrain checkpoint's trainer.json", path, file);
        cJSON_Delete(j);
        return NULL;
    }
    return j;
}

/* The reader state of member "reader" of o; *bad set when malformed. */
static void get_reader(const cJSON *o, ts_pretrain_state *rs, int *bad) {
    const cJSON *rd = cJSON_GetObjectItemCaseSensitive(o, "reader");
    rs->fingerprint = get_u64(rd, "fingerprint", bad);
    rs->epoch = get_u64(rd, "epoch", bad);
    rs->window = get_u64(rd, "window", bad);
    rs->file = (int64_t)get_u64(rd, "file", bad);
    rs->offset = (int64_t)get_u64(rd, "offset", bad);
    rs->next = (int64_t)get_u64(rd, "next", bad);
    rs->served = get_u64(rd, "served", bad);
    int no_batches = 0; /* absent from checkpoints of before replicas: 0 */
    rs->batches = get_u64(rd, "batches", &no_batches);
}

ts_status ts_pretrain_ckpt_load(const char *path, ts_program *p, ts_pretrain_reader *r,
                                const ts_pretrain_shape *shape, const char *const *corpus, int ncorpus,
                                int64_t *step, int *planned_steps) {
    /* the options first, so a different model is named by its flag rather than by a tensor */
    cJSON *j = read_trainer_json(path);
    if (!j) return TS_ERR_IO;
    int planned = shape->max_steps, bad = 0;
    ts_status st = check_same(path, j, shape, corpus, ncorpus, &planned);
    if (planned_steps) *planned_steps = planned;
    char *rank_text = NULL;
    if (st == TS_OK && ts_program_load_state_parts(p, path, NULL, &rank_text) != TS_OK)
        st = ts_set_error(ts_last_status(), "checkpoint: %s", ts_last_error());
    if (st != TS_OK) {
        cJSON_Delete(j);
        return st;
    }
    /* replicas: this rank's reader, from its part */
    cJSON *mine = shape->ranks > 1 ? cJSON_Parse(rank_text ? rank_text : "") : NULL;
    free(rank_text);
    ts_pretrain_state rs;
    get_reader(shape->ranks > 1 ? mine : j, &rs, &bad);
    *step = (int64_t)get_u64(j, "step", &bad);
    cJSON_Delete(mine);
    cJSON_Delete(j);
    /* the program counts runs: one per micro-batch */
    if (bad || (uint64_t)*step * (uint64_t)(shape->accumulation > 0 ? shape->accumulation : 1) != ts_program_step(p))
        return ts_set_error(TS_ERR_IO, "checkpoint %s: trainer.json's step or reader state is malformed", path);
    if (ts_pretrain_restore(r, &rs) != TS_OK)
        return ts_set_error(ts_last_status(), "checkpoint %s: %s", path, ts_last_error());
    return TS_OK;
}
