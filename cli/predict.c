/*
 * predict.c — `tessera predict`: run a fine-tuned model directory on new inputs. A classifier
 * reads texts (each --text, else each line of --data FILE or stdin) and prints one line per
 * text: label<TAB>probability<TAB>the text's first 60 characters. A text-pair classifier takes
 * text<TAB>text_b (the pair separated by a tab). A question-answering model reads questions and
 * contexts (predict_qa.c) and prints one answer a line. Several classifiers predict as one
 * ensemble: the label with the largest mean class probability (each member encodes the text with
 * its own vocabulary and length), and that mean.
 *
 *   tessera predict --model DIR... [--text "..."]... [--data FILE] [--batch N] [< lines]
 */
#include <stdint.h>

#include "cli.h"
#include "qa.h"
#include "train_common.h"

static const char *USAGE =
    "usage: tessera predict --model DIR... [--text TEXT...] [--data FILE] [options] [< lines]\n"
    "  Runs the model in DIR (from tessera finetune) on new inputs; the task is the model's.\n"
    "  A classifier: each TEXT (or, without --text, each line of FILE or stdin) gives a line\n"
    "  label<TAB>probability<TAB>the text's first 60 characters. A text-pair classifier wants\n"
    "  text<TAB>text_b: the first tab of a TEXT or line separates the pair. Several DIRs\n"
    "  (classifiers with the same labels) predict as one ensemble: the label with the largest\n"
    "  mean probability, and that mean.\n"
    "  Question answering: FILE (or stdin) holds JSON lines {\"question\": ..., \"context\": ...}\n"
    "  (an \"id\" is allowed and ignored), or FILE is a SQuAD .json file; each question gives one\n"
    "  line, its answer (a span of its context, decoded over every doc-stride window; an empty\n"
    "  line when none qualifies), in input order.\n";

#define PREFIX_CHARS 60

/* One classifier of the ensemble (or the only one): its program, vocabulary and row length. */
typedef struct member {
    ts_program *p;
    ts_tokenizer *tok;
    ts_model_meta meta;
    ts_bert_config cfg;
    ts_batch_buf bb;
} member;

typedef struct predictor {
    member *m;    /* nm members; m[0].meta names the labels */
    int nm;
    int batch, n;
    int pairs;    /* texts are text<TAB>text_b */
    char **texts; /* the pending batch */
    double *probs; /* [batch, labels]: the members' summed class probabilities */
} predictor;

/* Print the first PREFIX_CHARS characters of s (whole UTF-8 sequences), tabs as spaces. */
static void print_prefix(const char *s) {
    int chars = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if ((*p & 0xC0) != 0x80 && ++chars > PREFIX_CHARS) {
            fputs("...", stdout);
            break;
        }
        putchar(*p == '\t' || *p == '\r' ? ' ' : *p);
    }
}

static int flush_batch(predictor *pr) {
    if (!pr->n) return 0;
    const ts_model_meta *meta = &pr->m[0].meta;
    int nl = meta->nlabels;
    memset(pr->probs, 0, (size_t)pr->batch * (size_t)nl * sizeof *pr->probs);
    for (int k = 0; k < pr->nm; k++)
        if (ts_classify_texts_add_probs(pr->m[k].p, &pr->m[k].bb, pr->m[k].tok, (const char *const *)pr->texts, pr->n,
                                        pr->pairs, nl, pr->probs)) {
            fprintf(stderr, "tessera predict: %s\n", cli_error());
            return 1;
        }
    for (int i = 0; i < pr->n; i++) {
        const double *r = pr->probs + (size_t)i * nl;
        int best = 0;
        for (int j = 1; j < nl; j++)
            if (r[j] > r[best]) best = j;
        const char *name = meta->labels[best] ? meta->labels[best] : "?";
        printf("%s\t%.4f\t", name, r[best] / pr->nm);
        print_prefix(pr->texts[i]);
        putchar('\n');
        free(pr->texts[i]);
    }
    pr->n = 0;
    return 0;
}

/* Open model directory dir as member mb (a classifier; for k > 0 with m0's labels and text
 * columns). 0, or prints the error and returns 2 (not such a classifier) or 1 (its program). */
static int open_member(member *mb, const char *dir, int k, const member *m0, int batch, int threads) {
    if (k > 0) {
        if (!(mb->tok = cli_model_dir_open("predict", dir, &mb->cfg, &mb->meta))) return 2;
        if (cli_task_of_model("predict", "classify", dir, &mb->cfg, &mb->meta) != CLI_TASK_CLASSIFY) return 2;
        if (!ts_model_meta_same_labels(&m0->meta, &mb->meta)) {
            fprintf(stderr, "tessera predict: --model %s is not the same kind of classifier as the first model "
                            "(labels or text columns differ); an ensemble needs models trained on the same task\n",
                    dir);
            return 2;
        }
    }
    /* the program first: a batch too large for the device is refused by its memory check */
    if (!(mb->p = cli_model_dir_program("predict", dir, &mb->cfg, batch, mb->meta.max_len, threads,
                                       (const char *[]){"logits"}, 1)))
        return 1;
    if (!ts_batch_buf_init(&mb->bb, batch, mb->meta.max_len, 0)) {
        fprintf(stderr, "tessera predict: out of memory for a batch of --batch %d x %d tokens\n", batch,
                mb->meta.max_len);
        return 1;
    }
    return 0;
}

/* One input; `where` names it for errors ("stdin:3", "--text 2"). */
static int add_text(predictor *pr, const char *text, const char *where) {
    if (pr->pairs && !strchr(text, '\t')) {
        fprintf(stderr, "tessera predict: %s: the model classifies text pairs: write text<TAB>text_b (no tab found)\n",
                where);
        return 2;
    }
    if (!(pr->texts[pr->n] = strdup(text))) {
        fprintf(stderr, "tessera predict: out of memory\n");
        return 1;
    }
    return ++pr->n == pr->batch ? flush_batch(pr) : 0;
}

/* Every input: the --text values, else the lines of `in` (in_name for errors), batched through
 * add_text. 0 or the exit code. */
static int read_inputs(predictor *pr, const cli_strlist *texts, FILE *in, const char *in_name) {
    char where[4200];
    int rc = 0;
    for (int i = 0; i < texts->n; i++) {
        snprintf(where, sizeof where, "--text %d", i + 1);
        if ((rc = add_text(pr, texts->v[i], where)) != 0) return rc;
    }
    if (texts->n) return 0;
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    long lineno = 0;
    while ((len = getline(&line, &cap, in)) >= 0) {
        lineno++;
        if (len && line[len - 1] == '\n') line[--len] = 0;
        if (len && line[len - 1] == '\r') line[--len] = 0;
        snprintf(where, sizeof where, "%s:%ld", in_name, lineno);
        if ((rc = add_text(pr, line, where)) != 0) break;
    }
    free(line);
    if (rc) return rc;
    if (ferror(in)) {
        fprintf(stderr, "tessera predict: reading %s: %s\n", in_name, strerror(errno));
        return 1;
    }
    return 0;
}

int cli_predict(int argc, char **argv) {
    const char *model = NULL, *data = NULL, *task_flag = NULL;
    cli_strlist texts = {0}, models = {0};
    int batch = 8, threads = 0, n_best = 0, max_ans = 0;
    const cli_opt opts[] = {
        {"model", CLI_LIST, &models, 0, "DIR",
         "the model directory (tessera finetune's --out); several: an ensemble"},
        {"text", CLI_LIST, &texts, 0, "TEXT",
         "the texts to classify (else the lines of --data or stdin)"},
        {"task", CLI_STR, &task_flag, 0, "classify|qa",
         "the task expected (an error when the model is another)"},
        {"data", CLI_STR, &data, 0, "FILE",
         "read the inputs from FILE instead of stdin"},
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
    predictor pr = {0};
    FILE *in = stdin;
    int rc = cli_opts_parse(&os, "predict", USAGE, opts, (int)(sizeof opts / sizeof *opts), argc, argv);
    if (rc != 1) goto done_opts;
    rc = 2;
    model = models.n ? models.v[0] : NULL;
    if (!model) {
        fprintf(stderr, "tessera predict: --model DIR is required\n(tessera predict --help shows the usage)\n");
        goto done_opts;
    }
    if (texts.n && data) {
        fprintf(stderr, "tessera predict: give --text or --data, not both\n");
        goto done_opts;
    }
    pr.batch = batch;
    if (!(pr.m = calloc((size_t)models.n, sizeof *pr.m))) {
        fprintf(stderr, "tessera predict: out of memory\n");
        rc = 1;
        goto done_opts;
    }
    member *m0 = &pr.m[0];
    if (!(m0->tok = cli_model_dir_open("predict", model, &m0->cfg, &m0->meta))) goto done;
    pr.pairs = m0->meta.text_b_column != NULL;
    const char *in_name = "stdin";
    int task = cli_task_of_model("predict", task_flag, model, &m0->cfg, &m0->meta);
    if (task < 0) goto done;
    if (task == CLI_TASK_QA) {
        if (texts.n) {
            fprintf(stderr, "tessera predict: --text is for classifiers; %s answers questions: give JSON lines "
                            "{\"question\": ..., \"context\": ...} on stdin or in --data FILE\n", model);
            goto done;
        }
        if (models.n > 1) {
            fprintf(stderr, "tessera predict: %s answers questions: an ensemble of several --model DIRs is for "
                            "classifiers\n", model);
            goto done;
        }
        rc = cli_predict_qa(model, &m0->cfg, &m0->meta, m0->tok, data, batch, threads, n_best ? n_best : TS_SQUAD_N_BEST,
                           max_ans ? max_ans : TS_SQUAD_MAX_ANSWER_LEN);
        goto done;
    }
    for (int k = 0; k < models.n; k++)
        if ((rc = open_member(&pr.m[k], models.v[k], k, m0, batch, threads)) != 0) goto done;
    pr.nm = models.n;
    rc = 2;
    if (data && !(in = fopen(data, "r"))) {
        fprintf(stderr, "tessera predict: --data %s: %s\n", data, strerror(errno));
        goto done;
    }
    if (data) in_name = data;
    rc = 1;
    pr.texts = calloc((size_t)batch, sizeof *pr.texts);
    pr.probs = calloc((size_t)batch * (size_t)(m0->meta.nlabels ? m0->meta.nlabels : 1), sizeof *pr.probs);
    if (!pr.texts || !pr.probs) {
        fprintf(stderr, "tessera predict: out of memory\n");
        goto done;
    }
    if ((rc = read_inputs(&pr, &texts, in, in_name))) goto done;
    rc = 1;
    if (flush_batch(&pr)) goto done;
    if (fflush(stdout) != 0) {
        fprintf(stderr, "tessera predict: writing stdout: %s\n", strerror(errno));
        goto done;
    }
    rc = 0;
done:
    if (in && in != stdin) fclose(in);
    if (pr.texts)
        for (int i = 0; i < pr.n; i++) free(pr.texts[i]);
    free(pr.texts);
    free(pr.probs);
    for (int k = 0; pr.m && k < models.n; k++) {
        ts_batch_buf_free(&pr.m[k].bb);
        ts_program_free(pr.m[k].p);
        ts_tokenizer_free(pr.m[k].tok);
        ts_model_meta_free(&pr.m[k].meta);
    }
    free(pr.m);
done_opts:
    cli_opts_free(&os);
    return rc;
}
