/*
 * squad_load.c — a SQuAD file read for a run (tessera_tasks.h: ts_squad_load_checked): loaded,
 * a note on answers taken at another occurrence than their answer_start, then checked, each
 * line naming the field the file came from; questions to answer read (ts_squad_read_questions); and
 * the answers of a model to its questions written a line each (ts_squad_write_answers).
 */
#include "common/app.h"

#include <string.h>

ts_squad *ts_squad_load_checked(const char *path, const ts_tokenizer *tok, const ts_squad_opts *so, int need_answers,
                                const char *name, const char *field, ts_write_fn err, void *err_ctx) {
    ts_squad *s = ts_squad_load(path, tok, so);
    if (!s) {
        ts_writef(err, err_ctx, "%s: %s %s\n", name, field, ts_last_error());
        return NULL;
    }
    int64_t r = ts_squad_num_relocated(s);
    if (need_answers && ts_squad_num_examples(s) && r > 0)
        ts_writef(err, err_ctx, "%s: note: %s %s: %lld answer%s not at %s answer_start; taken at the nearest "
                  "occurrence (relocate_answers)\n", name, field, path, (long long)r, r == 1 ? " was" : "s were",
                  r == 1 ? "its" : "their");
    if (ts_squad_check(s, path, need_answers) != TS_OK) {
        ts_writef(err, err_ctx, "%s: %s %s\n", name, field, ts_last_error());
        ts_squad_free(s);
        return NULL;
    }
    return s;
}

ts_status ts_squad_write_answers(ts_program *infer, const ts_squad *s, int batch, int seq, int n_best,
                                 int max_answer_len, ts_write_fn out, void *out_ctx) {
    float *start = NULL, *end = NULL;
    ts_status st = ts_squad_logits(infer, s, batch, seq, &start, &end);
    for (int64_t i = 0; st == TS_OK && i < ts_squad_num_examples(s); i++) {
        char *a = ts_squad_answer(s, i, start, end, n_best, max_answer_len);
        if (!a) {
            st = ts_set_error(TS_ERR_NOMEM, "out of memory");
            break;
        }
        for (char *p = a; *p; p++) *p = *p == '\n' || *p == '\r' || *p == '\t' ? ' ' : *p; /* one line */
        if (out) out(out_ctx, a, strlen(a)), out(out_ctx, "\n", 1);
        free(a);
    }
    free(start);
    free(end);
    return st;
}

ts_squad *ts_squad_read_questions(const char *path, const ts_tokenizer *tok, const ts_squad_opts *so) {
    int std_in = !path || !strcmp(path, "-");
    size_t n = std_in ? 0 : strlen(path), len = 0;
    if (n >= 5 && !strcmp(path + n - 5, ".json")) {
        ts_squad *s = ts_squad_load(path, tok, so);
        if (s && ts_squad_check(s, path, 0) != TS_OK) ts_squad_free(s), s = NULL;
        if (!s && ts_last_status() != TS_ERR_NOMEM) ts_set_error(TS_ERR_ARG, "%s", ts_last_error());
        return s;
    }
    char *text = ts_read_file(std_in ? "/dev/stdin" : path, &len);
    if (!text) {
        ts_status st = ts_last_status() == TS_ERR_NOMEM ? TS_ERR_NOMEM : std_in ? TS_ERR_IO : TS_ERR_ARG;
        ts_set_error(st, "%s", ts_last_error());
        return NULL;
    }
    ts_squad *s = ts_squad_parse_jsonl(std_in ? "stdin" : path, text, len, tok, so);
    free(text);
    return s;
}
