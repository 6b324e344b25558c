/*
 * predict_qa.c — `tessera predict` on a question-answering model: read questions with their
 * contexts, as JSON lines {"question": ..., "context": ...} (stdin or --data FILE) or a SQuAD
 * .json file (--data), featurize them with the model's windows (ts_squad_parse), run the model
 * over every window and print each question's best span (run_squad's decoding), one a line.
 */
#include <cjson/cJSON.h>

#include "cli.h"
#include "qa.h"

/* JSON lines -> a SQuAD document (one paragraph per line), printed into *json. 0, or prints the
 * error naming the input and line and returns 2 (1 out of memory). */
static int jsonl_to_squad(FILE *in, const char *name, char **json) {
    cJSON *root = cJSON_CreateObject(), *data = cJSON_AddArrayToObject(root, "data");
    cJSON *art = cJSON_CreateObject();
    cJSON_AddItemToArray(data, art);
    cJSON *pars = cJSON_AddArrayToObject(art, "paragraphs");
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    long lineno = 0, n = 0;
    int rc = 0;
    while (!rc && (len = getline(&line, &cap, in)) >= 0) {
        lineno++;
        size_t k = 0;
        while (k < (size_t)len && (line[k] == ' ' || line[k] == '\t' || line[k] == '\r' || line[k] == '\n')) k++;
        if (k == (size_t)len) continue; /* blank */
        cJSON *obj = cJSON_ParseWithLength(line, (size_t)len);
        const cJSON *q = cJSON_GetObjectItemCaseSensitive(obj, "question");
        const cJSON *c = cJSON_GetObjectItemCaseSensitive(obj, "context");
        const char *bad = !cJSON_IsObject(obj) ? "not a JSON object"
                          : !cJSON_IsString(q) ? "no \"question\" string"
                          : !cJSON_IsString(c) ? "no \"context\" string"
                                               : NULL;
        if (bad) {
            fprintf(stderr, "tessera predict: %s:%ld: %s (each line is {\"question\": ..., \"context\": ...})\n", name,
                    lineno, bad);
            rc = 2;
        } else {
            char id[32];
            snprintf(id, sizeof id, "%ld", ++n);
            cJSON *par = cJSON_CreateObject(), *qas, *qa = cJSON_CreateObject();
            cJSON_AddItemToArray(pars, par);
            cJSON_AddStringToObject(par, "context", c->valuestring);
            qas = cJSON_AddArrayToObject(par, "qas");
            cJSON_AddItemToArray(qas, qa);
            cJSON_AddStringToObject(qa, "id", id);
            cJSON_AddStringToObject(qa, "question", q->valuestring);
        }
        cJSON_Delete(obj);
    }
    free(line);
    if (!rc && ferror(in)) {
        fprintf(stderr, "tessera predict: reading %s: %s\n", name, strerror(errno));
        rc = 1;
    }
    if (!rc && !(*json = cJSON_PrintUnformatted(root))) {
        fprintf(stderr, "tessera predict: out of memory\n");
        rc = 1;
    }
    cJSON_Delete(root);
    return rc;
}

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
    ts_squad_opts so = {.max_seq_len = seq,
                        .doc_stride = meta->doc_stride ? meta->doc_stride : ts_squad_default_stride(seq),
                        .max_query_len = meta->max_query_len ? meta->max_query_len : ts_squad_default_query(seq),
                        .relocate_answers = 1 /* a file's answers, if any, are not used */};
    ts_squad *s = NULL;
    if (data && is_squad_file(data)) {
        if (!(s = cli_qa_load("predict", "--data", data, tok, &so, 0))) return 2;
    } else {
        FILE *in = data ? fopen(data, "r") : stdin;
        const char *name = data ? data : "stdin";
        if (!in) {
            fprintf(stderr, "tessera predict: --data %s: %s\n", data, strerror(errno));
            return 2;
        }
        char *json = NULL;
        int rc = jsonl_to_squad(in, name, &json);
        if (in != stdin) fclose(in);
        if (rc) return rc;
        s = ts_squad_parse(name, json, strlen(json), tok, &so);
        free(json);
        if (!s) {
            fprintf(stderr, "tessera predict: %s\n", ts_last_error());
            return 2;
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
