/*
 * eval.c — `tessera eval`: score a fine-tuned model directory (from `tessera finetune`) on a
 * labelled file. A sequence classifier: accuracy on a TSV / CSV / JSONL file (single texts or the
 * model's text pairs) beside the majority-class baseline. A question-answering model: the
 * official SQuAD v1.1 exact match and F1 on a SQuAD JSON file. The task comes from the model's
 * architecture (--task only checks it). An audio classifier's directory (tessera audio-train):
 * accuracy on labelled audio (cli/audio_model.c). Several classifiers score as one ensemble
 * (ts_ensemble_*: the mean of their class probabilities, each member encoding the text with its
 * own vocabulary and length);
 * --test-split / --split-seed score only the rows `tessera finetune` held out (scores from
 * tessera_tasks.h: ts_classify_*, ts_squad_score_program).
 *
 *   tessera eval --model DIR... --data FILE [--test-split F --split-seed N] [--task classify|qa] [...]
 */
#include "cli.h"
#include "qa.h"
#include "train_common.h"

static const char *USAGE =
    "usage: tessera eval --model DIR... --data FILE [options]\n"
    "  Scores the model in DIR (from tessera finetune) on a labelled file. The task is the model's:\n"
    "   - a classifier: accuracy on a .tsv, .csv or .jsonl file, and the majority-class baseline\n"
    "     (every row is scored, no deduplication); a text-pair model reads its second text from\n"
    "     the column it was trained with. Several DIRs (classifiers with the same labels) score\n"
    "     as one ensemble: a row's label is the largest mean of their class probabilities\n"
    "   - question answering: exact match and F1 (the official SQuAD v1.1 script's) on a SQuAD\n"
    "     JSON file, answers decoded over every doc-stride window\n";

typedef struct ev_opts {
    cli_strlist models; /* --model DIR...: one, or the members of an ensemble (classifiers) */
    const char *model, *data, *task, *text_col, *text_b_col, *label_col;
    double test_split;
    int batch, threads, max_answer_len, n_best, seed, relocate_answers;
} ev_opts;

static int eval_qa(const ev_opts *o, const ts_bert_config *cfg, const ts_model_meta *meta, const ts_tokenizer *tok) {
    ts_squad_opts so = ts_squad_opts_of_model(meta, o->relocate_answers);
    ts_squad *s = cli_qa_load("eval", "--data", o->data, tok, &so, 1);
    if (!s) return 2;
    int rc = 1;
    ts_program *p = cli_model_dir_program("eval", o->model, cfg, o->batch, meta->max_len, o->threads,
                               (const char *[]){"start_logits", "end_logits"}, 2);
    double t0 = ts_seconds(), em, f1;
    if (p && !cli_qa_score("eval", p, s, o->batch, meta->max_len, o->n_best ? o->n_best : TS_SQUAD_N_BEST,
                          o->max_answer_len ? o->max_answer_len : TS_SQUAD_MAX_ANSWER_LEN, &em, &f1)) {
        printf("tessera eval: %s: exact match %.2f, F1 %.2f (%lld questions, %lld windows), %.1f s\n", o->data, em, f1,
               (long long)ts_squad_num_examples(s), (long long)ts_squad_num_features(s), ts_seconds() - t0);
        rc = 0;
    }
    ts_program_free(p);
    ts_squad_free(s);
    return rc;
}

static int eval_cls(const ev_opts *o, const ts_model_meta *meta) {
    ts_text_opts to = {.text_column = o->text_col,
                       .text_b_column = o->text_b_col ? o->text_b_col : meta->text_b_column,
                       .label_column = o->label_col,
                       .labels = (const char *const *)meta->labels,
                       .nlabels = meta->nlabels};
    ts_text_dataset *d = ts_text_dataset_load(o->data, &to), *train = NULL, *test = NULL;
    if (!d) return cli_fail("eval", "--data ", 2);
    if (o->test_split > 0) { /* the rows tessera finetune held out */
        if (ts_text_dataset_split(d, o->test_split, (uint64_t)o->seed, &train, &test, NULL) != TS_OK) {
            fprintf(stderr, "tessera eval: %s: %s\n", o->data, cli_error());
            ts_text_dataset_free(d);
            return 1;
        }
    }
    const ts_text_dataset *scored = test ? test : d;
    int64_t n = ts_text_dataset_size(scored);
    int nl = ts_text_dataset_num_labels(scored);
    if (n == 0) { /* an accuracy of 0 of 0 would read as a result */
        fprintf(stderr, "tessera eval: --data %s has no rows to score%s\n", o->data,
                test ? " in its held-out part (--test-split)" : " (a header and nothing else?)");
        ts_text_dataset_free(train);
        ts_text_dataset_free(test);
        ts_text_dataset_free(d);
        return 2;
    }
    double *probs = calloc((size_t)(n ? n : 1) * (size_t)nl, sizeof *probs);
    int rc = probs ? 0 : 1;
    if (!probs) fprintf(stderr, "tessera eval: out of memory\n");
    double t0 = ts_seconds();
    ts_ensemble *e = rc ? NULL : cli_ensemble_open("eval", o->models.v, o->models.n, o->batch, o->threads, NULL, NULL, &rc);
    if (e && ts_ensemble_add_dataset(e, scored, probs) != TS_OK)
        rc = 1, fprintf(stderr, "tessera eval: scoring %s: %s\n", o->data, cli_error());
    ts_ensemble_free(e);
    if (!rc) {
        int64_t total, correct = ts_classify_count_right(scored, probs, &total);
        int maj;
        double base = ts_classify_majority(train ? train : d, scored, &maj);
        char what[64] = "";
        if (o->models.n > 1) snprintf(what, sizeof what, " (ensemble of %d models)", o->models.n);
        char part[96] = "";
        if (test) snprintf(part, sizeof part, " (its held-out %g, split seed %d)", o->test_split, o->seed);
        printf("tessera eval: %s%s: accuracy%s %.2f%% (%lld of %lld), majority class '%s' %.2f%%, %.1f s\n", o->data,
               part, what, total ? 100.0 * (double)correct / (double)total : 0.0, (long long)correct,
               (long long)total, meta->labels[maj] ? meta->labels[maj] : "?", 100 * base, ts_seconds() - t0);
    }
    free(probs);
    ts_text_dataset_free(train);
    ts_text_dataset_free(test);
    ts_text_dataset_free(d);
    return rc;
}

int cli_eval(int argc, char **argv) {
    ev_opts o = {.text_col = "text", .label_col = "label", .batch = 32, .seed = 42};
    const cli_opt opts[] = {
        {"model", CLI_LIST, &o.models, 0, "DIR",
         "the model directory (tessera finetune's --out); several: an ensemble"},
        {"data", CLI_STR, &o.data, 0, "FILE",
         "the labelled file to score"},
        {"task", CLI_STR, &o.task, 0, "classify|qa",
         "the task expected (an error when the model is another)"},
        {"text-column", CLI_STR, &o.text_col, 0, "NAME",
         "classify: column / key of the text (default text)"},
        {"text-b-column", CLI_STR, &o.text_b_col, 0, "NAME",
         "classify: of the second text (default: the model's)"},
        {"label-column", CLI_STR, &o.label_col, 0, "NAME",
         "classify: column / key of the label (default label)"},
        {"test-split", CLI_FLOAT, &o.test_split, 0, "F",
         "classify: score only the rows tessera finetune held out with the same\n"
         "--test-split F and split seed (deduplicated, then split), not all of FILE"},
        {"split-seed", CLI_INT, &o.seed, 0, "N",
         "the split seed of --test-split (finetune's --split-seed; default 42)", "seed"},
        {"max-answer-len", CLI_INT, &o.max_answer_len, 1, "N",
         "qa: pieces in an answer, at most (default 30)"},
        {"n-best", CLI_INT, &o.n_best, 1, "N",
         "qa: start / end candidates per window (default 20)"},
        {"relocate-answers", CLI_FLAG, &o.relocate_answers, 0, NULL,
         "qa: take an answer not at its answer_start at its nearest occurrence"},
        {"batch", CLI_INT, &o.batch, 1, "N",
         "sequences per forward pass (default 32)"},
        {"threads", CLI_INT, &o.threads, 0, "N",
         "CPU threads (default: all)"},
        CLI_DEVICE_OPTS,
        CLI_LOAD_OPTS,
        CLI_INFER_DEVICE_OPT,
        {NULL, CLI_TEXT, NULL, 0, NULL,
         "  An audio classifier's DIR (from tessera audio-train): --data is labelled audio (a folder per\n"
         "  label, or a TSV of PATH<TAB>LABEL); prints the accuracy and each label's clips and right ones.\n"},
    };
    cli_optset os;
    int rc = cli_opts_parse(&os, "eval", USAGE, opts, (int)(sizeof opts / sizeof *opts), argc, argv);
    if (rc != 1) goto done_opts;
    rc = 2;
    o.model = o.models.n ? o.models.v[0] : NULL;
    if (!o.model || !o.data) {
        fprintf(stderr, "tessera eval: %s is required\n(tessera eval --help shows the usage)\n",
                !o.model ? "--model DIR" : "--data FILE");
        goto done_opts;
    }
    if (ts_audio_clf_is_dir(o.model)) { /* from tessera audio-train */
        rc = cli_eval_audio(o.model, o.data, o.threads);
        goto done_opts;
    }
    ts_bert_config cfg;
    ts_model_meta meta;
    ts_tokenizer *tok = cli_model_dir_open("eval", o.model, &cfg, &meta);
    if (!tok) goto done_opts;
    int task = cli_task_of_model("eval", o.task, o.model, &cfg, &meta);
    if (task == CLI_TASK_QA && (o.models.n > 1 || o.test_split > 0))
        fprintf(stderr, "tessera eval: %s answers questions: %s is for classifiers\n", o.model,
                o.models.n > 1 ? "an ensemble of several --model DIRs" : "--test-split");
    else if (o.test_split >= 1)
        fprintf(stderr, "tessera eval: --test-split %g holds out every row; finetune's is a fraction below 1\n",
                o.test_split);
    else if (task == CLI_TASK_QA) rc = eval_qa(&o, &cfg, &meta, tok);
    else if (task == CLI_TASK_CLASSIFY) rc = eval_cls(&o, &meta);
    ts_tokenizer_free(tok);
    ts_model_meta_free(&meta);
done_opts:
    cli_opts_free(&os);
    return rc;
}
