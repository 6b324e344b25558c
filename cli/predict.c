/*
 * predict.c — `tessera predict`: a classifier or an ensemble of them (ts_ensemble_*), or a
 * question-answering model (ts_squad_write_answers), on new inputs: the flags and the printing.
 */
#include "cli.h"
#include "train_common.h"

static const char *USAGE =
    "  Runs the model in DIR (from tessera finetune) on new inputs; the task is the model's.\n"
    "  A classifier: each TEXT (or, without --text, each line of FILE or stdin) gives a line\n"
    "  label<TAB>probability<TAB>the text's first 60 characters. A text-pair classifier wants\n"
    "  text<TAB>text_b: the first tab of a TEXT or line separates the pair. Several DIRs\n"
    "  (classifiers with the same labels) predict as one ensemble: the label with the largest\n"
    "  mean probability, and that mean. A FILE named .tsv, .csv or .jsonl whose first line is a\n"
    "  header naming the text or the label column (JSONL: objects) is read as tessera eval reads\n"
    "  it: each row's text column (and a text-pair model's second text column) is classified,\n"
    "  its label ignored; any other FILE is one text a line.\n"
    "  Question answering: FILE (or stdin) holds JSON lines {\"question\": ..., \"context\": ...}\n"
    "  (an \"id\" is allowed and ignored), or FILE is a SQuAD .json file; each question gives one\n"
    "  line, its answer (a span of its context, decoded over every doc-stride window; an empty\n"
    "  line when none qualifies), in input order.\n";

#define PREFIX_CHARS 60

/* The ensemble's result: label<TAB>probability<TAB>the first PREFIX_CHARS characters of the text
 * (whole UTF-8 sequences), tabs as spaces. */
static void print_result(void *ctx, const char *text, int label, double prob) {
    const ts_model_meta *meta = ts_ensemble_meta(*(ts_ensemble **)ctx);
    printf("%s\t%.4f\t", meta->labels[label] ? meta->labels[label] : "?", prob);
    int chars = 0;
    for (const unsigned char *p = (const unsigned char *)text; *p; p++) {
        if ((*p & 0xC0) != 0x80 && ++chars > PREFIX_CHARS) {
            fputs("...", stdout);
            break;
        }
        putchar(*p == '\t' || *p == '\r' ? ' ' : *p);
    }
    putchar('\n');
}

/* How a member's program is made: as every command makes a model directory's (its int8 record,
 * the device flags), the error printed. */
typedef struct member_ctx {
    const char *cmd;
    int threads, failed;
} member_ctx;

static ts_program *member_program(void *ctx, const char *dir, const ts_bert_config *cfg, int batch, int seq) {
    member_ctx *c = ctx;
    ts_program *p = cli_model_dir_program(c->cmd, dir, cfg, batch, seq, c->threads, (const char *[]){"logits"}, 1);
    c->failed |= !p;
    return p;
}

ts_ensemble *cli_ensemble_open(const char *cmd, const char *const *dirs, int n, int batch, int threads,
                               ts_ensemble_result_fn result, void *result_ctx, int *rc) {
    member_ctx c = {cmd, threads, 0};
    ts_ensemble_opts o = {.struct_size = sizeof o, .batch = batch, .threads = threads, .program = member_program,
                          .program_ctx = &c, .result = result, .result_ctx = result_ctx};
    ts_ensemble *e = ts_ensemble_open(dirs, n, &o);
    if (e) return e;
    *rc = c.failed || ts_last_status() != TS_ERR_ARG ? 1 : 2;
    if (!c.failed) fprintf(stderr, "tessera %s: --model %s\n", cmd, cli_error());
    return NULL;
}

/* --data's columns when it is a table (NULL: not given; ts_ensemble_add_file). */
typedef struct table_cols {
    const char *text, *text_b, *label;
} table_cols;

/* The classifier (or ensemble) on the --text values, else on the lines of --data or stdin, or
 * the rows of --data when it is a table (cols). 0 or the exit code. */
static int predict_cls(const cli_strlist *models, const cli_strlist *texts, const char *data, const table_cols *cols,
                       int batch, int threads) {
    int rc = 2;
    ts_ensemble *e = NULL;
    e = cli_ensemble_open("predict", models->v, models->n, batch, threads, print_result, &e, &rc);
    if (!e) return rc;
    ts_status st = TS_OK;
    for (int i = 0; i < texts->n && !st; i++)
        if ((st = ts_ensemble_add_text(e, texts->v[i])))
            fprintf(stderr, "tessera predict: --text %d: %s\n", i + 1, cli_error());
    if (!st && (st = texts->n ? ts_ensemble_flush(e) : ts_ensemble_add_file(e, data, cols->text, cols->text_b,
                                                                             cols->label)))
        fprintf(stderr, "tessera predict: %s\n", cli_error());
    rc = st == TS_ERR_ARG ? 2 : st ? 1 : 0;
    if (!rc && fflush(stdout) != 0) {
        fprintf(stderr, "tessera predict: writing stdout: %s\n", strerror(errno));
        rc = 1;
    }
    ts_ensemble_free(e);
    return rc;
}

/* A question-answering model on the questions of `data` (a SQuAD .json file, else JSON lines;
 * NULL: JSON lines on stdin), one answer printed a line. The exit code. */
static int predict_qa(const char *model, const ts_bert_config *cfg, const ts_model_meta *meta, const ts_tokenizer *tok,
                      const char *data, int batch, int threads, int n_best, int max_answer_len) {
    ts_squad_opts so = ts_squad_opts_of_model(meta, 1); /* relocated: a file's answers, if any, are unused */
    ts_squad *s = ts_squad_read_questions(data, tok, &so);
    if (!s) return cli_fail("predict", data ? "--data " : "", ts_last_status() == TS_ERR_ARG ? 2 : 1);
    int rc = 1;
    ts_program *p = cli_model_dir_program("predict", model, cfg, batch, meta->max_len, threads,
                                          (const char *[]){"start_logits", "end_logits"}, 2);
    if (p && ts_squad_write_answers(p, s, batch, meta->max_len, n_best, max_answer_len, ts_write_stdio, stdout))
        cli_fail("predict", "", 1);
    else if (p && fflush(stdout) != 0)
        fprintf(stderr, "tessera predict: writing stdout: %s\n", strerror(errno));
    else if (p)
        rc = 0;
    ts_program_free(p);
    ts_squad_free(s);
    return rc;
}

int cli_predict(int argc, char **argv) {
    const char *model = NULL, *data = NULL, *task_flag = NULL;
    table_cols cols = {0};
    cli_strlist texts = {0}, models = {0};
    int batch = 8, threads = 0, n_best = 0, max_ans = 0;
    const cli_opt opts[] = {
        {"model", CLI_LIST, &models, 1, "DIR",
         "the model directory (tessera finetune's --out); several: an ensemble"},
        {"text", CLI_LIST, &texts, 0, "TEXT",
         "the texts to classify (else the lines of --data or stdin)"},
        {"task", CLI_STR, &task_flag, 0, "classify|qa",
         "the task expected (an error when the model is another)"},
        {"data", CLI_STR, &data, 0, "FILE",
         "read the inputs from FILE instead of stdin"},
        {"text-column", CLI_STR, &cols.text, 0, "NAME", "classify: --data's column / key of the text (text)"},
        {"text-b-column", CLI_STR, &cols.text_b, 0, "NAME", "classify: of the second text (the model's)"},
        {"label-column", CLI_STR, &cols.label, 0, "NAME", "classify: of the label, ignored (label)"},
        {"max-answer-len", CLI_INT, &max_ans, 1, "N",
         "qa: pieces in an answer, at most (default 30)"},
        {"n-best", CLI_INT, &n_best, 1, "N",
         "qa: start / end candidates per window (default 20)"},
        {"batch", CLI_INT, &batch, 1, "N",
         "sequences per forward pass (default 8)"},
        {"threads", CLI_INT, &threads, 0, "N",
         "CPU threads (default: all)"},
        CLI_DEVICE_OPTS,
        CLI_LOAD_OPTS,
        CLI_INFER_DEVICE_OPT,
    };
    cli_optset os;
    int rc = cli_opts_parse(&os, "predict", USAGE, opts, (int)(sizeof opts / sizeof *opts), argc, argv);
    if (rc != 1) goto done_opts;
    rc = 2;
    model = models.v[0];
    if (texts.n && data) {
        fprintf(stderr, "tessera predict: give --text or --data, not both\n");
        goto done_opts;
    }
    if (texts.n && (cols.text || cols.text_b || cols.label)) {
        fprintf(stderr, "tessera predict: the column flags read --data FILE, not --text\n");
        goto done_opts;
    }
    ts_bert_config cfg;
    ts_model_meta meta = {0};
    ts_tokenizer *tok = cli_model_dir_open("predict", model, &cfg, &meta);
    int task = tok ? cli_task_of_model("predict", task_flag, model, &cfg, &meta) : -1;
    const char *prec = task >= 0 ? ts_model_dirs_precision((const char *const *)models.v, models.n) : "f32";
    if (strcmp(prec, "f32")) /* stdout holds the results alone */
        fprintf(stderr, "tessera predict: %s runs %s (tessera quantize's record)\n", models.n > 1 ? "the ensemble"
                : model, prec);
    if (task == CLI_TASK_QA && (texts.n || cols.text || cols.text_b || cols.label))
        fprintf(stderr, "tessera predict: --text and the column flags are for classifiers; %s answers questions: "
                        "give JSON lines {\"question\": ..., \"context\": ...} on stdin or in --data FILE\n", model);
    else if (task == CLI_TASK_QA && models.n == 1)
        rc = predict_qa(model, &cfg, &meta, tok, data, batch, threads, n_best ? n_best : TS_SQUAD_N_BEST,
                            max_ans ? max_ans : TS_SQUAD_MAX_ANSWER_LEN);
    else if (task >= 0) /* several QA models: refused by ts_ensemble_open */
        rc = predict_cls(&models, &texts, data, &cols, batch, threads);
    ts_tokenizer_free(tok);
    ts_model_meta_free(&meta);
done_opts:
    cli_opts_free(&os);
    return rc;
}
