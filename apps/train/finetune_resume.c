/*
 * finetune_resume.c — the resume file format of a fine-tuning run (tessera_tasks.h): a
 * ts_program_save_state checkpoint OUT/checkpoints/step-N (parameters, optimizer state, the
 * program step that seeds dropout) whose trainer.json holds
 *   {"format": "tessera-finetune-1", "step": "N", "options": {...}}
 * with every option that shapes the run (ts_finetune_shape, by flag name; the data files by
 * size), so a resume with other options is refused by the flag's name. The data order needs no
 * state: epoch e's order is a function of (seed, e), so step N says where the run stands.
 */
#include "common/app.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static void add_str(cJSON *o, const char *k, const char *v) {
    if (v) cJSON_AddStringToObject(o, k, v);
    else cJSON_AddNullToObject(o, k);
}

static double bytes_of(const char *path) {
    struct stat st;
    return path && stat(path, &st) == 0 ? (double)st.st_size : -1.0;
}

/* The options that shape the run, by flag name; the data files by size. */
static cJSON *shape_json(const ts_finetune_shape *s) {
    cJSON *j = cJSON_CreateObject();
    add_str(j, "task", s->task);
    cJSON_AddNumberToObject(j, "train bytes", bytes_of(s->train));
    cJSON_AddNumberToObject(j, "dev bytes", bytes_of(s->dev));
    cJSON_AddNumberToObject(j, "max-len", s->max_len);
    cJSON_AddNumberToObject(j, "batch", s->batch);
    cJSON_AddNumberToObject(j, "epochs", s->epochs);
    cJSON_AddNumberToObject(j, "max-steps", s->max_steps);
    cJSON_AddNumberToObject(j, "lr", s->lr);
    cJSON_AddNumberToObject(j, "warmup", s->warmup);
    cJSON_AddNumberToObject(j, "weight-decay", s->wd);
    cJSON_AddNumberToObject(j, "max-grad-norm", s->max_grad_norm);
    add_str(j, "optimizer", s->optimizer);
    cJSON_AddNumberToObject(j, "momentum", s->momentum);
    cJSON_AddNumberToObject(j, "accumulation", s->accumulation);
    cJSON_AddNumberToObject(j, "device-iterations", s->device_iterations);
    cJSON_AddNumberToObject(j, "seed", s->seed);
    cJSON_AddNumberToObject(j, "bf16", s->bf16);
    cJSON_AddNumberToObject(j, "fp16", s->fp16);
    cJSON_AddNumberToObject(j, "deterministic", s->deterministic);
    cJSON_AddNumberToObject(j, "threads", s->threads);
    cJSON_AddNumberToObject(j, "test-split", s->test_split);
    cJSON_AddNumberToObject(j, "split-seed", s->split_seed);
    add_str(j, "text-column", s->text_col);
    add_str(j, "text-b-column", s->text_b_col);
    add_str(j, "label-column", s->label_col);
    add_str(j, "truncate", s->truncate);
    cJSON_AddNumberToObject(j, "doc-stride", s->doc_stride);
    cJSON_AddNumberToObject(j, "max-query-len", s->max_query_len);
    if (s->pack > 1) cJSON_AddNumberToObject(j, "pack", s->pack); /* packed rows (absent: unpacked) */
    if (s->weights16) cJSON_AddNumberToObject(j, "precision -sr", 1); /* 16-bit weights (absent: f32) */
    if (s->ranks > 1) { /* replicas (absent from one process's checkpoints) */
        cJSON_AddNumberToObject(j, "ranks", s->ranks);
        cJSON_AddNumberToObject(j, "shard-optimizer", s->shard);
    }
    return j;
}

ts_status ts_finetune_ckpt_save(const char *out, int64_t step, const ts_program *p, const ts_finetune_shape *shape,
                                int keep) {
    cJSON *j = cJSON_CreateObject();
    char s[32];
    snprintf(s, sizeof s, "%lld", (long long)step);
    cJSON_AddStringToObject(j, "format", "tessera-finetune-1");
    cJSON_AddStringToObject(j, "step", s);
    cJSON_AddItemToObject(j, "options", shape_json(shape));
    char *text = cJSON_Print(j);
    cJSON_Delete(j);
    if (!text) return ts_set_error(TS_ERR_NOMEM, "out of memory");
    ts_status st = ts_train_checkpoint_save_parts(out, step, p, text, NULL, keep);
    free(text);
    return st;
}

/* The first option of `now` that `opts` does not hold the same: the error naming its flag. */
static ts_status compare(const char *path, const cJSON *opts, const cJSON *now) {
    const cJSON *want;
    cJSON_ArrayForEach(want, now) {
        const cJSON *had = cJSON_GetObjectItemCaseSensitive(opts, want->string);
        if (had && cJSON_Compare(had, want, 1)) continue;
        char *a = had ? cJSON_PrintUnformatted(had) : NULL, *b = cJSON_PrintUnformatted(want);
        ts_set_error(TS_ERR_ARG, "checkpoint %s was made with %s %s, not %s (resume with the same options and data)",
                     path, want->string, a ? a : "(none)", b ? b : "?");
        free(a);
        free(b);
        return TS_ERR_ARG;
    }
    return TS_OK;
}

ts_status ts_finetune_ckpt_load(const char *path, ts_program *p, const ts_finetune_shape *shape, int64_t *step) {
    char *extra = NULL; /* p is changed before the options are compared: on a mismatch the run ends */
    if (ts_program_load_state(p, path, &extra) != TS_OK)
        return ts_set_error(ts_last_status(), "checkpoint: %s", ts_last_error());
    cJSON *j = cJSON_Parse(extra), *now = shape_json(shape);
    free(extra);
    const cJSON *fmt = cJSON_GetObjectItemCaseSensitive(j, "format"), *st = cJSON_GetObjectItemCaseSensitive(j, "step");
    const cJSON *opts = cJSON_GetObjectItemCaseSensitive(j, "options");
    ts_status rc;
    if (!cJSON_IsString(fmt) || strcmp(fmt->valuestring, "tessera-finetune-1") != 0 || !cJSON_IsString(st) ||
        !cJSON_IsObject(opts))
        rc = ts_set_error(TS_ERR_IO, "checkpoint %s: not a tessera finetune checkpoint", path);
    else if ((rc = compare(path, opts, now)) == TS_OK) {
        char *end;
        errno = 0;
        long long s = strtoll(st->valuestring, &end, 10);
        /* the program counts runs: one per micro-batch */
        if (errno || *end || s < 0 ||
            (uint64_t)s * (uint64_t)(shape->accumulation > 1 ? shape->accumulation : 1) != ts_program_step(p))
            rc = ts_set_error(TS_ERR_IO, "checkpoint %s: trainer.json's step is malformed", path);
        else
            *step = s;
    }
    cJSON_Delete(j);
    cJSON_Delete(now);
    return rc;
}

ts_status ts_train_checkpoint_find_on(ts_comm *comm, const char *resume, char *path, size_t cap) {
    int rank = comm ? ts_comm_rank(comm) : 0, size = comm ? ts_comm_size(comm) : 1;
    ts_status st = rank == 0 ? ts_train_checkpoint_find(resume, path, cap) : TS_OK;
    if (size <= 1) return st;
    char buf[4400] = ""; /* rank 0's choice for every rank */
    int32_t r = st;
    if (rank == 0 && !st) r = ts_path_join(buf, sizeof buf, NULL, path);
    if (ts_comm_broadcast(comm, &r, sizeof r, 0) || ts_comm_broadcast(comm, buf, sizeof buf, 0))
        return ts_set_error(TS_ERR_COMM, "%s", ts_last_error());
    if (r == TS_OK) return rank > 0 ? ts_path_join(path, cap, NULL, buf) : TS_OK;
    if (rank > 0) ts_set_error((ts_status)r, "rank 0 found no checkpoint to resume from");
    return (ts_status)r;
}
