/*
 * fuzz_textcls.c — libFuzzer target for the text-classification file readers (apps/data/textcls.c
 * and csv.c): the input is written as a .tsv, a .csv and a .jsonl file and each is loaded with
 * ts_text_dataset_load, with the default columns, as pairs with a given label list, and (TSV /
 * CSV) without a header. A dataset that loads is read row by row, deduplicated, split 70/30 and
 * encoded into a batch. A malformed file must be an error, never a crash, leak or undefined
 * behaviour.
 */
#include "tessera_apps.h"
#include "fuzz_util.h"

#define BATCH 4
#define MAX_LEN 16

static ts_tokenizer *tok;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    tok = fuzz_tiny_tokenizer();
    return 0;
}

/* Every row of d; its label ids must be in range. */
static void read_rows(const ts_text_dataset *d) {
    int64_t n = ts_text_dataset_size(d);
    int nl = ts_text_dataset_num_labels(d);
    for (int i = -1; i <= nl; i++) (void)ts_text_dataset_label_name(d, i);
    for (int64_t i = 0; i < n; i++) {
        const char *text = NULL, *text_b = NULL;
        int32_t label = -1;
        if (ts_text_dataset_get(d, i, &text, &text_b, &label) != TS_OK || !text || label < 0 || label >= nl)
            abort();
        (void)strlen(text);
        if (text_b) (void)strlen(text_b);
    }
    (void)ts_text_dataset_get(d, n, NULL, NULL, NULL);
}

static void encode_first_rows(const ts_text_dataset *d) {
    int64_t rows[BATCH];
    int n = 0;
    for (; n < BATCH && n < ts_text_dataset_size(d); n++) rows[n] = n;
    int32_t ids[BATCH * MAX_LEN], types[BATCH * MAX_LEN], mask[BATCH * MAX_LEN], labels[BATCH];
    ts_batch b = {.input_ids = ids, .token_type_ids = types, .attention_mask = mask, .labels = labels};
    (void)ts_text_dataset_batch(d, tok, rows, n, BATCH, MAX_LEN, &b);
}

static void load_and_use(const char *path, const ts_text_opts *o) {
    ts_text_dataset *d = ts_text_dataset_load(path, o);
    if (!d) return;
    read_rows(d);
    encode_first_rows(d);
    int64_t nremoved = 0;
    if (ts_text_dataset_dedup(d, &nremoved) == TS_OK) read_rows(d);
    ts_text_dataset *train = NULL, *test = NULL;
    int64_t ndup = 0;
    if (ts_text_dataset_split(d, 0.3, 1, &train, &test, &ndup) == TS_OK) {
        if (ts_text_dataset_size(train) + ts_text_dataset_size(test) + ndup != ts_text_dataset_size(d)) abort();
        read_rows(train);
        read_rows(test);
        encode_first_rows(test);
    }
    ts_text_dataset_free(train);
    ts_text_dataset_free(test);
    ts_text_dataset_free(d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static const struct {
        const char *file;
        ts_text_format format;
    } formats[] = {{"data.tsv", TS_FORMAT_TSV}, {"data.csv", TS_FORMAT_CSV}, {"data.jsonl", TS_FORMAT_JSONL}};
    static const char *const labels[] = {"ham", "spam", "0", "1"};
    for (int f = 0; f < 3; f++) {
        const char *path = fuzz_write(formats[f].file, data, size);
        ts_text_opts plain = {.format = formats[f].format};
        load_and_use(path, &plain);
        ts_text_opts auto_pairs = {.text_b_column = "text_b", .labels = labels, .nlabels = 4}; /* by extension */
        load_and_use(path, &auto_pairs);
        if (formats[f].format != TS_FORMAT_JSONL) {
            ts_text_opts no_header = {.format = formats[f].format, .no_header = 1};
            load_and_use(path, &no_header);
        }
    }
    return 0;
}
