/*
 * qa.c — question answering for `tessera finetune --task qa`, `eval` and `predict` (see qa.h):
 * SQuAD files read and checked, logits and EM / F1 with their errors printed.
 */
#include "qa.h"

ts_squad *cli_qa_load(const char *cmd, const char *flag, const char *path, const ts_tokenizer *tok,
                      const ts_squad_opts *so, int need_answers) {
    ts_squad *s = ts_squad_load(path, tok, so);
    if (!s) {
        fprintf(stderr, "tessera %s: %s %s\n", cmd, flag, ts_last_error());
        return NULL;
    }
    int64_t r = ts_squad_num_relocated(s);
    if (need_answers && ts_squad_num_examples(s) && r > 0)
        fprintf(stderr, "tessera %s: note: %s %s: %lld answer%s not at %s answer_start; taken at the nearest "
                        "occurrence (--relocate-answers)\n", cmd, flag, path, (long long)r, r == 1 ? " was" : "s were",
                r == 1 ? "its" : "their");
    if (ts_squad_check(s, path, need_answers) != TS_OK) {
        fprintf(stderr, "tessera %s: %s %s\n", cmd, flag, ts_last_error());
        ts_squad_free(s);
        return NULL;
    }
    return s;
}

int cli_qa_logits(const char *cmd, ts_program *infer, const ts_squad *s, int batch, int seq, float **start,
                  float **end) {
    if (ts_squad_logits(infer, s, batch, seq, start, end) == TS_OK) return 0;
    fprintf(stderr, "tessera %s: %s\n", cmd, ts_last_error());
    return 1;
}

int cli_qa_score(const char *cmd, ts_program *infer, const ts_squad *s, int batch, int seq, int n_best,
                 int max_answer_len, double *em, double *f1) {
    if (ts_squad_score_program(infer, s, batch, seq, n_best, max_answer_len, em, f1) == TS_OK) return 0;
    fprintf(stderr, "tessera %s: %s\n", cmd, ts_last_error());
    return 1;
}
