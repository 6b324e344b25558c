/*
 * qa.c — question answering for `tessera finetune --task qa`, `eval` and `predict` (see qa.h):
 * SQuAD files read and checked, logits and EM / F1 with their errors printed.
 */
#include "cli.h"
#include "qa.h"

ts_squad *cli_qa_load(const char *cmd, const char *flag, const char *path, const ts_tokenizer *tok,
                      const ts_squad_opts *so, int need_answers) {
    char name[64];
    snprintf(name, sizeof name, "tessera %s", cmd);
    return ts_squad_load_checked(path, tok, so, need_answers, name, flag, cli_write_err, stderr);
}

int cli_qa_logits(const char *cmd, ts_program *infer, const ts_squad *s, int batch, int seq, float **start,
                  float **end) {
    if (ts_squad_logits(infer, s, batch, seq, start, end) == TS_OK) return 0;
    fprintf(stderr, "tessera %s: %s\n", cmd, cli_error());
    return 1;
}

int cli_qa_score(const char *cmd, ts_program *infer, const ts_squad *s, int batch, int seq, int n_best,
                 int max_answer_len, double *em, double *f1) {
    if (ts_squad_score_program(infer, s, batch, seq, n_best, max_answer_len, em, f1) == TS_OK) return 0;
    fprintf(stderr, "tessera %s: %s\n", cmd, cli_error());
    return 1;
}
