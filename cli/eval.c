/*
 * eval.c — `tessera eval`: the accuracy of a fine-tuned sequence classifier (a directory written
 * by `tessera finetune`) on a labelled TSV / CSV / JSONL file, beside the majority-class
 * baseline. Also home of ts_cls_accuracy, which `tessera finetune` uses on its test split.
 *
 *   tessera eval --model DIR --data FILE [--text-column text] [--label-column label] [--batch N]
 */
#include "cli.h"
#include "train_common.h"

static const char *USAGE =
    "usage: tessera eval --model DIR --data FILE [options]\n"
    "  Accuracy of the classifier in DIR (from tessera finetune) on a labelled file (.tsv, .csv,\n"
    "  .jsonl), and the majority-class baseline. Every row is scored (no deduplication).\n"
    "  --text-column NAME   column / key of the text (default text)\n"
    "  --label-column NAME  column / key of the label (default label)\n"
    "  --batch N            sequences per forward pass (default 32)\n"
    "  --threads N          CPU threads (default: all)\n"
    "  --config FILE        a JSON object of the options above (flags override it)\n";

ts_status ts_cls_accuracy(ts_program *infer, const ts_tokenizer *tok, const ts_text_dataset *d, int batch,
                          int seq, int64_t *correct, int64_t *total) {
    *correct = *total = 0;
    int64_t n = ts_text_dataset_size(d);
    int nl = ts_text_dataset_num_labels(d);
    ts_batch_buf bb;
    int64_t *rows = malloc((size_t)batch * sizeof *rows);
    if (!rows || !ts_batch_buf_init(&bb, batch, seq, 1)) {
        free(rows);
        return TS_ERR_NOMEM;
    }
    ts_status st = TS_OK;
    for (int64_t i = 0; i < n && st == TS_OK; i += batch) {
        int m = (int)(n - i < batch ? n - i : batch);
        for (int k = 0; k < m; k++) rows[k] = i + k;
        ts_tensor *logits = NULL;
        if ((st = ts_text_dataset_batch(d, tok, rows, m, batch, seq, &bb.b)) || (st = ts_batch_buf_feed(&bb, infer, 0)) ||
            (st = ts_program_run(infer)) || (st = ts_program_fetch(infer, "logits", &logits)))
            break;
        const float *lg = ts_tensor_data(logits);
        int c = (int)ts_tensor_shape(logits)[1];
        for (int k = 0; k < m; k++) {
            int best = 0;
            for (int j = 1; j < c; j++)
                if (lg[k * c + j] > lg[k * c + best]) best = j;
            int32_t label = bb.b.labels[k];
            if (label >= 0 && label < nl) *correct += best == label, ++*total;
        }
        ts_tensor_free(logits);
    }
    ts_batch_buf_free(&bb);
    free(rows);
    return st;
}

double ts_cls_majority(const ts_text_dataset *train, const ts_text_dataset *test, int *label) {
    int nl = ts_text_dataset_num_labels(train);
    int64_t *count = calloc((size_t)(nl > 0 ? nl : 1), sizeof *count);
    if (!count) return 0;
    for (int64_t i = 0; i < ts_text_dataset_size(train); i++) {
        int32_t l;
        if (ts_text_dataset_get(train, i, NULL, NULL, &l) == TS_OK && l >= 0 && l < nl) count[l]++;
    }
    int best = 0;
    for (int i = 1; i < nl; i++)
        if (count[i] > count[best]) best = i;
    free(count);
    int64_t hit = 0, n = ts_text_dataset_size(test);
    for (int64_t i = 0; i < n; i++) {
        int32_t l;
        if (ts_text_dataset_get(test, i, NULL, NULL, &l) == TS_OK && l == best) hit++;
    }
    if (label) *label = best;
    return n ? (double)hit / (double)n : 0;
}

int ts_cli_eval(int argc, char **argv) {
    const char *model = NULL, *data = NULL, *text_col = "text", *label_col = "label";
    int batch = 32, threads = 0;
    const ts_opt opts[] = {
        {"model", OPT_STR, &model, 0},          {"data", OPT_STR, &data, 0},
        {"text-column", OPT_STR, &text_col, 0}, {"label-column", OPT_STR, &label_col, 0},
        {"batch", OPT_INT, &batch, 1},          {"threads", OPT_INT, &threads, 0},
    };
    ts_optset os;
    int rc = ts_opts_parse(&os, "eval", USAGE, opts, (int)(sizeof opts / sizeof *opts), argc, argv);
    if (rc != 1) goto done_opts;
    rc = 2;
    if (!model || !data) {
        fprintf(stderr, "tessera eval: %s is required\n(tessera eval --help shows the usage)\n",
                !model ? "--model DIR" : "--data FILE");
        goto done_opts;
    }
    ts_bert_config cfg;
    ts_model_meta meta;
    ts_tokenizer *tok = ts_model_dir_open("eval", model, &cfg, &meta);
    if (!tok) goto done_opts;
    ts_text_dataset *d = NULL;
    ts_program *infer = NULL;
    if (meta.nlabels < 1 || cfg.head != TS_BERT_SEQ_CLASSIFICATION) {
        fprintf(stderr, "tessera eval: %s is not a sequence classifier (no id2label; run tessera finetune)\n", model);
        goto done;
    }
    ts_text_opts to = {.text_column = text_col, .label_column = label_col,
                       .labels = (const char *const *)meta.labels, .nlabels = meta.nlabels};
    if (!(d = ts_text_dataset_load(data, &to))) {
        fprintf(stderr, "tessera eval: %s\n", ts_last_error());
        goto done;
    }
    rc = 1;
    if (ts_bert_programs("eval", &cfg, TS_BERT_SEQ_CLASSIFICATION, batch, meta.max_len, 0, threads, 0, 0, NULL, 0,
                         NULL, (const char *[]){"logits"}, 1, &infer))
        goto done;
    char path[4200];
    snprintf(path, sizeof path, "%s/model.safetensors", model);
    if (ts_program_load(infer, path, 1, NULL) != TS_OK) {
        fprintf(stderr, "tessera eval: %s\n", ts_last_error());
        goto done;
    }
    double t0 = ts_now();
    int64_t correct, total;
    if (ts_cls_accuracy(infer, tok, d, batch, meta.max_len, &correct, &total) != TS_OK) {
        fprintf(stderr, "tessera eval: %s: %s\n", data, ts_last_error());
        goto done;
    }
    int maj;
    double base = ts_cls_majority(d, d, &maj);
    printf("tessera eval: %s: accuracy %.2f%% (%lld of %lld), majority class '%s' %.2f%%, %.1f s\n", data,
           total ? 100.0 * (double)correct / (double)total : 0.0, (long long)correct, (long long)total,
           meta.labels[maj] ? meta.labels[maj] : "?", 100 * base, ts_now() - t0);
    rc = 0;
done:
    ts_program_free(infer);
    ts_text_dataset_free(d);
    ts_tokenizer_free(tok);
    ts_model_meta_free(&meta);
done_opts:
    ts_opts_free(&os);
    return rc;
}
