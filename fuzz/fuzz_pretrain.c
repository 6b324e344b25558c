/*
 * fuzz_pretrain.c — libFuzzer target for the BERT pretraining text reader (apps/data/pretrain.c,
 * pairs.c, masking.c): the input is written to a text file and read with ts_pretrain_open (a tiny
 * vocabulary, batches of 2 x 16 tokens, windows of 4 documents, one epoch, whole-word masking
 * when the first byte is odd) and ts_pretrain_next, at most 64 batches. Every id and label must
 * lie in the vocabulary, and a reader restored to the state saved after the first batch must
 * serve the second batch again. Bad input must be an error, never a crash, leak or hang.
 */
#include "tessera_apps.h"
#include "fuzz_util.h"

#define B 2
#define T 16
#define MAX_BATCHES 64

static ts_tokenizer *tok;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    tok = fuzz_tiny_tokenizer();
    return 0;
}

typedef struct rows {
    int32_t ids[B * T], types[B * T], mask[B * T], labels[B * T], nsl[B];
} rows;

static ts_batch batch_of(rows *r) {
    return (ts_batch){.input_ids = r->ids, .token_type_ids = r->types, .attention_mask = r->mask,
                      .labels = r->labels, .next_sentence_label = r->nsl};
}

static void check_rows(const rows *r, int n) {
    int v = ts_tokenizer_vocab_size(tok);
    for (int i = 0; i < B * T; i++) {
        if (r->ids[i] < 0 || r->ids[i] >= v) abort();
        if (r->labels[i] != TS_IGNORE_INDEX && (r->labels[i] < 0 || r->labels[i] >= v)) abort();
    }
    for (int i = 0; i < n; i++)
        if (r->nsl[i] != 0 && r->nsl[i] != 1) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *path = fuzz_write("corpus.txt", data, size);
    ts_pretrain_opts o = ts_pretrain_defaults();
    o.files = &path;
    o.nfiles = 1;
    o.batch_size = B;
    o.max_len = T;
    o.shuffle_docs = 4;
    o.epochs = 1;
    o.whole_word = size ? data[0] & 1 : 0;
    ts_pretrain_reader *r = ts_pretrain_open(tok, &o);
    if (!r) return 0;
    static rows cur, second, again;
    ts_batch b = batch_of(&cur);
    ts_pretrain_state state;
    int saved = 0, have_second = 0, n2 = 0;
    for (int k = 0; k < MAX_BATCHES; k++) {
        int n = -1;
        if (ts_pretrain_next(r, &b, &n) != TS_OK || n <= 0) break;
        if (n > B) abort();
        check_rows(&cur, n);
        if (k == 0) saved = ts_pretrain_save(r, &state) == TS_OK;
        if (k == 1 && saved) {
            second = cur;
            have_second = 1;
            n2 = n;
        }
    }
    if (have_second) {
        if (ts_pretrain_restore(r, &state) != TS_OK) {
            fprintf(stderr, "fuzz: ts_pretrain_restore refused a state of the same reader: %s\n", ts_last_error());
            abort();
        }
        ts_batch ba = batch_of(&again);
        int n = -1;
        if (ts_pretrain_next(r, &ba, &n) != TS_OK || n != n2 || memcmp(&again, &second, sizeof again) != 0) {
            fprintf(stderr, "fuzz: the batch after ts_pretrain_restore differs from the one after the save\n");
            abort();
        }
    }
    ts_pretrain_close(r);
    return 0;
}
