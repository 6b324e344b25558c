/*
 * predict_qa.c — `tessera predict` on a question-answering model: read questions with their
 * contexts, as JSON lines {"question": ..., "context": ...} (stdin or --data FILE) or a SQuAD
 * .json file (--data), featurize them with the model's windows (ts_squad_parse_jsonl), run the model
 * over every window and print each question's best span (run_squad's decoding), one a line.
 */
#include "cli.h"
#include "qa.h"

/* Does the name end with ".json"? */
static int is_squad_file(const char *path) {
    size_t n = strlen(path);
    return n >= 5 && !strcmp(path + n - 5, ".json");
}

/* Print an answer on one line: tabs and line breaks become spaces. */
static void print_answer(const char *a) {
    for (const char *p = a; *p; p++) putchar(*p == '\n' || *p == '\r' || *p == '\t' ? ' ' : *p);
    putchar('\n');
}

int cli_predict_qa(const char *model, const ts_bert_config *cfg, const ts_model_meta *meta, const ts_tokenizer *tok,
                  const char *data, int batch, int threads, int n_best, int max_answer_len) {
    int seq = meta->max_len;
    ts_squad_opts so = ts_squad_opts_of_model(meta, 1); /* relocated: a file's answers, if any, are unused */
    ts_squad *s = NULL;
    if (data && is_squad_file(data)) {
        if (!(s = cli_qa_load("predict", "--data", data, tok, &so, 0))) return 2;
    } else {
        const char *name = data ? data : "stdin";
        size_t len = 0;
        char *text = cli_read_text(data ? data : "-", &len);
        if (!text) {
            int e = errno;
            if (e == ENOMEM) fprintf(stderr, "tessera predict: out of memory\n");
            else if (data) fprintf(stderr, "tessera predict: --data %s: %s\n", data, strerror(e));
            else fprintf(stderr, "tessera predict: reading stdin: %s\n", strerror(e));
            return e == ENOMEM || !data ? 1 : 2;
        }
        s = ts_squad_parse_jsonl(name, text, len, tok, &so);
        free(text);
        if (!s) {
            fprintf(stderr, "tessera predict: %s\n", cli_error());
            return ts_last_status() == TS_ERR_NOMEM ? 1 : 2;
        }
    }
    int rc = 1;
    ts_program *p = NULL;
    float *st = NULL, *en = NULL;
    if (!(p = cli_model_dir_program("predict", model, cfg, batch, seq, threads,
                                   (const char *[]){"start_logits", "end_logits"}, 2)))
        goto done;
    if (cli_qa_logits("predict", p, s, batch, seq, &st, &en)) goto done;
    for (int64_t i = 0; i < ts_squad_num_examples(s); i++) {
        char *a = ts_squad_answer(s, i, st, en, n_best, max_answer_len);
        if (!a) {
            fprintf(stderr, "tessera predict: out of memory\n");
            goto done;
        }
        print_answer(a);
        free(a);
    }
    if (fflush(stdout) != 0) {
        fprintf(stderr, "tessera predict: writing stdout: %s\n", strerror(errno));
        goto done;
    }
    rc = 0;
done:
    free(st);
    free(en);
    ts_program_free(p);
    ts_squad_free(s);
    return rc;
}
