/*
 * finetune_ckpt.c — full-state checkpoints of `tessera finetune` (both tasks) and `--resume`.
 * A checkpoint is OUT/checkpoints/step-N (ts_ckpt_save: parameters, AdamW state, the program
 * step that seeds dropout) whose trainer.json holds {"format": "tessera-finetune-1", "step": "N",
 * "options": {...}}: every option that shapes the run, so a resume with other options is refused
 * by the flag's name. The data order needs no state: epoch e's order is a function of (seed, e),
 * so step N says where the run stands.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "finetune.h"
#include "train_common.h"

static void add_str(cJSON *o, const char *k, const char *v) {
    if (v) cJSON_AddStringToObject(o, k, v);
    else cJSON_AddNullToObject(o, k);
}

/* The options that shape the run, by flag name; the data files by size. */
static cJSON *shape_json(const ft_opts *o, const char *task, int seq, int doc_stride, int max_query_len) {
    cJSON *j = cJSON_CreateObject();
    struct stat st;
    add_str(j, "task", task);
    cJSON_AddNumberToObject(j, "train bytes", stat(o->train, &st) == 0 ? (double)st.st_size : -1.0);
    cJSON_AddNumberToObject(j, "dev bytes", o->dev && stat(o->dev, &st) == 0 ? (double)st.st_size : -1.0);
    cJSON_AddNumberToObject(j, "max-len", seq);
    cJSON_AddNumberToObject(j, "batch", o->batch);
    cJSON_AddNumberToObject(j, "epochs", o->epochs);
    cJSON_AddNumberToObject(j, "max-steps", o->max_steps);
    cJSON_AddNumberToObject(j, "lr", o->lr);
    cJSON_AddNumberToObject(j, "warmup", o->warmup);
    cJSON_AddNumberToObject(j, "weight-decay", o->wd);
    cJSON_AddNumberToObject(j, "max-grad-norm", o->max_grad_norm);
    add_str(j, "optimizer", o->optimizer);
    cJSON_AddNumberToObject(j, "momentum", o->momentum);
    cJSON_AddNumberToObject(j, "accumulation", o->accumulation);
    cJSON_AddNumberToObject(j, "device-iterations", o->device_iterations);
    cJSON_AddNumberToObject(j, "seed", o->seed);
    cJSON_AddNumberToObject(j, "bf16", o->bf16);
    cJSON_AddNumberToObject(j, "fp16", o->fp16);
    cJSON_AddNumberToObject(j, "deterministic", o->deterministic);
    cJSON_AddNumberToObject(j, "threads", o->deterministic ? o->threads : 0); /* pinned, or 0 */
    cJSON_AddNumberToObject(j, "test-split", o->dev ? 0 : o->test_split);
    cJSON_AddNumberToObject(j, "split-seed", o->dev || !o->test_split ? -1 : o->split_seed >= 0 ? o->split_seed : o->seed);
    add_str(j, "text-column", o->text_col);
    add_str(j, "text-b-column", o->text_b_col);
    add_str(j, "label-column", o->label_col);
    add_str(j, "truncate", ts_truncation_names[o->truncation]); /* the cut, with or without the flag */
    cJSON_AddNumberToObject(j, "doc-stride", doc_stride);
    cJSON_AddNumberToObject(j, "max-query-len", max_query_len);
    if (ts_cli_rep.size > 1) { /* replicas (absent from one process's checkpoints) */
        cJSON_AddNumberToObject(j, "ranks", ts_cli_rep.size);
        cJSON_AddNumberToObject(j, "shard-optimizer", ts_cli_rep.shard_optimizer);
    }
    return j;
}

int ft_ckpt_save(const ft_opts *o, const char *task, int seq, int doc_stride, int max_query_len, int64_t step,
                 const ts_program *p) {
    cJSON *j = cJSON_CreateObject();
    char s[32];
    snprintf(s, sizeof s, "%lld", (long long)step);
    cJSON_AddStringToObject(j, "format", "tessera-finetune-1");
    cJSON_AddStringToObject(j, "step", s);
    cJSON_AddItemToObject(j, "options", shape_json(o, task, seq, doc_stride, max_query_len));
    char *text = cJSON_Print(j);
    cJSON_Delete(j);
    if (!text) {
        fprintf(stderr, "\ntessera finetune: out of memory\n");
        return 1;
    }
    int rc = ts_ckpt_save("finetune", o->out, step, p, text, NULL, o->keep);
    free(text);
    return rc;
}

int ft_ckpt_resume(const ft_opts *o, const char *task, int seq, int doc_stride, int max_query_len, ts_program *p,
                   int64_t *step) {
    char path[4300];
    if (ts_ckpt_find("finetune", o->resume, path, sizeof path)) return 2;
    char *extra = NULL; /* p is changed before the options are compared: on a mismatch the run ends */
    if (ts_program_load_state(p, path, &extra) != TS_OK) {
        fprintf(stderr, "tessera finetune: --resume: %s\n", ts_last_error());
        return 2;
    }
    cJSON *j = cJSON_Parse(extra), *now = shape_json(o, task, seq, doc_stride, max_query_len);
    free(extra);
    const cJSON *fmt = cJSON_GetObjectItemCaseSensitive(j, "format"), *st = cJSON_GetObjectItemCaseSensitive(j, "step");
    const cJSON *opts = cJSON_GetObjectItemCaseSensitive(j, "options");
    int rc = 2;
    if (!cJSON_IsString(fmt) || strcmp(fmt->valuestring, "tessera-finetune-1") != 0 || !cJSON_IsString(st) ||
        !cJSON_IsObject(opts)) {
        fprintf(stderr, "tessera finetune: --resume %s: not a tessera finetune checkpoint\n", path);
        goto done;
    }
    const cJSON *want;
    cJSON_ArrayForEach(want, now) {
        const cJSON *had = cJSON_GetObjectItemCaseSensitive(opts, want->string);
        if (had && cJSON_Compare(had, want, 1)) continue;
        char *a = had ? cJSON_PrintUnformatted(had) : NULL, *b = cJSON_PrintUnformatted(want);
        int is_flag = !strstr(want->string, " bytes");
        fprintf(stderr, "tessera finetune: --resume %s was made with %s%s %s, not %s (resume with the same options and "
                        "data)\n", path, is_flag ? "--" : "", want->string, a ? a : "(none)", b ? b : "?");
        free(a);
        free(b);
        goto done;
    }
    char *end;
    errno = 0;
    long long s = strtoll(st->valuestring, &end, 10);
    /* the program counts runs: one per micro-batch */
    if (errno || *end || s < 0 || (uint64_t)s * (uint64_t)(o->accumulation > 1 ? o->accumulation : 1) != ts_program_step(p)) {
        fprintf(stderr, "tessera finetune: --resume %s: trainer.json's step is malformed\n", path);
        goto done;
    }
    *step = s;
    printf("tessera finetune: resuming from %s at step %lld\n", path, s);
    rc = 0;
done:
    cJSON_Delete(j);
    cJSON_Delete(now);
    return rc;
}
