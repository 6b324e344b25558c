/*
 * eval.c — `tessera eval`: a fine-tuned model directory, an ensemble of classifiers or an audio
 * classifier scored on a labelled file: the flags, and the printing of the scores.
 */
#include "cli.h"
#include "speech_io.h"
#include "train_common.h"

static const char *USAGE =
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

/* " (int8 dynamic model)", " (int8 calibrated models)": how the models run, after the data file's
 * name in the summary line, into buf; "" in f32. */
static const char *precision_note(const ev_opts *o, char *buf, size_t cap) {
    const char *p = ts_model_dirs_precision((const char *const *)o->models.v, o->models.n);
    snprintf(buf, cap, " (%s%s)", p, strstr(p, "members") ? "" : o->models.n > 1 ? " models" : " model");
    return strcmp(p, "f32") ? buf : "";
}

/* A question-answering model: EM and F1 on the SQuAD file. The exit code. */
static int eval_qa(const ev_opts *o, const ts_bert_config *cfg, const ts_model_meta *meta, const ts_tokenizer *tok) {
    ts_squad_opts so = ts_squad_opts_of_model(meta, o->relocate_answers);
    ts_squad *s = ts_squad_load_checked(o->data, tok, &so, 1, "tessera eval", "data_file", cli_write_err, stderr);
    if (!s) return 2;
    int rc = 1;
    ts_program *p = cli_model_dir_program("eval", o->model, cfg, o->batch, meta->max_len, o->threads,
                                          (const char *[]){"start_logits", "end_logits"}, 2);
    double t0 = ts_seconds(), em, f1;
    if (p && !ts_squad_score_program(p, s, o->batch, meta->max_len, o->n_best ? o->n_best : TS_SQUAD_N_BEST,
                                     o->max_answer_len ? o->max_answer_len : TS_SQUAD_MAX_ANSWER_LEN, &em, &f1)) {
        char prec[96];
        printf("tessera eval: %s%s: exact match %.2f, F1 %.2f (%lld questions, %lld windows), %.1f s\n", o->data,
               precision_note(o, prec, sizeof prec), em, f1, (long long)ts_squad_num_examples(s),
               (long long)ts_squad_num_features(s), ts_seconds() - t0);
        rc = 0;
    } else if (p) {
        cli_fail("eval", "", 1);
    }
    ts_program_free(p);
    ts_squad_free(s);
    return rc;
}

/* A classifier, or an ensemble of them: accuracy beside the majority class. The exit code. */
static int eval_cls(const ev_opts *o) {
    int rc = 2;
    double t0 = ts_seconds();
    ts_ensemble *e = cli_ensemble_open("eval", o->models.v, o->models.n, o->batch, o->threads, NULL, NULL, &rc);
    if (!e) return rc;
    ts_ensemble_eval_opts eo = {.struct_size = sizeof eo, .data_file = o->data, .text_column = o->text_col,
                                .text_b_column = o->text_b_col, .label_column = o->label_col,
                                .test_split = o->test_split, .split_seed = (uint64_t)o->seed};
    ts_ensemble_eval_report r = {.struct_size = sizeof r};
    ts_status st = ts_ensemble_eval_file(e, &eo, &r);
    if (st) fprintf(stderr, "tessera eval: %s\n", cli_error());
    if (!(rc = st == TS_OK ? 0 : st == TS_ERR_ARG ? 2 : 1)) {
        const char *maj = ts_ensemble_meta(e)->labels[r.majority];
        char what[64] = "", part[96] = "", prec[96];
        if (o->models.n > 1) snprintf(what, sizeof what, " (ensemble of %d models)", o->models.n);
        if (o->test_split > 0) snprintf(part, sizeof part, " (its held-out %g, split seed %d)", o->test_split, o->seed);
        printf("tessera eval: %s%s%s: accuracy%s %.2f%% (%lld of %lld), majority class '%s' %.2f%%, %.1f s\n", o->data,
               part, precision_note(o, prec, sizeof prec), what,
               r.total ? 100.0 * (double)r.correct / (double)r.total : 0.0, (long long)r.correct,
               (long long)r.total, maj ? maj : "?", 100 * r.baseline, ts_seconds() - t0);
    }
    ts_ensemble_free(e);
    return rc;
}

/* An audio classifier (from tessera audio-train) on labelled audio: accuracy, then per label. The
 * exit code. */
static int eval_audio(const char *model, const char *data, int threads) {
    ts_audio_clf *c = cli_audio_clf_open("eval", model, threads);
    if (!c) return 2;
    ts_audio_set *s = ts_audio_set_load(data);
    double t0 = ts_seconds();
    ts_audio_clf_eval e;
    ts_status st = s ? ts_audio_clf_evaluate(c, s, &e) : TS_ERR_ARG;
    int rc = st ? cli_fail("eval", "", st == TS_ERR_ARG ? 2 : 1) : 0;
    if (!st) {
        printf("tessera eval: %s: accuracy %.2f%% (%d of %d clips)%s, %.1f s\n", data, 100.0 * e.right / e.clips,
               e.right, e.clips, e.unknown ? " (some clips' labels are not the model's)" : "", ts_seconds() - t0);
        printf("%-16s %6s %6s %8s   most taken for\n", "label", "clips", "right", "accuracy");
        for (int j = 0; j < ts_audio_clf_num_labels(c); j++)
            if (e.label_clips[j])
                printf("%-16s %6d %6d %7.2f%%   %s\n", ts_audio_clf_label(c, j), e.label_clips[j], e.label_right[j],
                       100.0 * e.label_right[j] / e.label_clips[j],
                       e.label_confused[j] >= 0 ? ts_audio_clf_label(c, e.label_confused[j]) : "-");
        ts_audio_clf_eval_free(&e);
    }
    ts_audio_set_free(s);
    ts_audio_clf_free(c);
    return rc;
}

int cli_eval(int argc, char **argv) {
    ev_opts o = {.text_col = "text", .label_col = "label", .batch = 32, .seed = 42};
    const cli_opt opts[] = {
        {"model", CLI_LIST, &o.models, 1, "DIR",
         "the model directory (tessera finetune's --out); several: an ensemble"},
        {"data", CLI_STR, &o.data, 1, "FILE",
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
    o.model = o.models.v[0];
    if (ts_audio_clf_is_dir(o.model)) { /* from tessera audio-train */
        rc = eval_audio(o.model, o.data, o.threads);
        goto done_opts;
    }
    ts_bert_config cfg;
    ts_model_meta meta;
    ts_tokenizer *tok = cli_model_dir_open("eval", o.model, &cfg, &meta);
    if (!tok) goto done_opts;
    int task = cli_task_of_model("eval", o.task, o.model, &cfg, &meta);
    if (task == CLI_TASK_QA && o.test_split > 0)
        fprintf(stderr, "tessera eval: %s answers questions: --test-split is for classifiers\n", o.model);
    else if (task == CLI_TASK_QA && o.models.n == 1) rc = eval_qa(&o, &cfg, &meta, tok);
    else if (task >= 0) rc = eval_cls(&o); /* several QA models: refused by ts_ensemble_open */
    ts_tokenizer_free(tok);
    ts_model_meta_free(&meta);
done_opts:
    cli_opts_free(&os);
    return rc;
}
