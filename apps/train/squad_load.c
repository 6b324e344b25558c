/*
 * squad_load.c — a SQuAD file read for a run (tessera_tasks.h: ts_squad_load_checked): loaded,
 * a note on answers taken at another occurrence than their answer_start, then checked, each
 * line naming the flag the file came from.
 */
#include "common/app.h"

ts_squad *ts_squad_load_checked(const char *path, const ts_tokenizer *tok, const ts_squad_opts *so, int need_answers,
                                const char *name, const char *flag, ts_write_fn err, void *err_ctx) {
    ts_squad *s = ts_squad_load(path, tok, so);
    if (!s) {
        ts_writef(err, err_ctx, "%s: %s %s\n", name, flag, ts_last_error());
        return NULL;
    }
    int64_t r = ts_squad_num_relocated(s);
    if (need_answers && ts_squad_num_examples(s) && r > 0)
        ts_writef(err, err_ctx, "%s: note: %s %s: %lld answer%s not at %s answer_start; taken at the nearest "
                  "occurrence (relocate_answers)\n", name, flag, path, (long long)r, r == 1 ? " was" : "s were",
                  r == 1 ? "its" : "their");
    if (ts_squad_check(s, path, need_answers) != TS_OK) {
        ts_writef(err, err_ctx, "%s: %s %s\n", name, flag, ts_last_error());
        ts_squad_free(s);
        return NULL;
    }
    return s;
}
