/*
 * fuzz_vocab.c — libFuzzer target for the vocab.txt reader and the WordPiece tokenizer built from
 * it (apps/text/vocab.c, wordpiece.c, basic.c): the input is written to a file and loaded with
 * ts_tokenizer_load (uncased when the input's first byte is odd); when it loads, fixed texts are
 * tokenized and encoded (one text, a pair, head+tail truncation) with max_len 32, and every id
 * produced is looked up. A bad vocabulary must be an error, never a crash, leak or undefined
 * behaviour, and every id must lie inside the vocabulary.
 */
#include "tessera_apps.h"
#include "fuzz_util.h"

#define MAX_LEN 32

/* Texts with words, "##" pieces, punctuation, special tokens, accents, CJK, control characters
 * and malformed UTF-8. */
static const char *const TEXTS[] = {
    "The quick brown fox jumped over the lazy dog's mat.",
    "Unaffable [MASK] cats sat [SEP] on \xc3\xa9t\xc3\xa9 mats, didn't they?!",
    "\xe6\x9d\xb1\xe4\xba\xac caf\xc3\xa9 na\xc3\xafve \xef\xbc\xa1 \x01\x7f tab\there \xff\xfe\xc3 end",
};

static void check_ids(const ts_tokenizer *tok, const int32_t *ids, int n) {
    int v = ts_tokenizer_vocab_size(tok);
    for (int i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= v || !ts_id_to_token(tok, ids[i])) abort();
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    fuzz_dir();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *path = fuzz_write("vocab.txt", data, size);
    ts_tokenizer *tok = ts_tokenizer_load(path, size ? data[0] & 1 : 0);
    if (!tok) return 0;
    (void)ts_token_to_id(tok, "[MASK]");
    (void)ts_token_to_id(tok, "##s");
    (void)ts_id_to_token(tok, -1);
    (void)ts_id_to_token(tok, ts_tokenizer_vocab_size(tok));

    int32_t ids[64];
    int32_t input_ids[MAX_LEN], types[MAX_LEN], mask[MAX_LEN];
    int ntexts = (int)(sizeof TEXTS / sizeof *TEXTS);
    for (int i = 0; i < ntexts; i++) {
        int n = 0;
        ts_status s = ts_tokenize(tok, TEXTS[i], ids, 64, &n);
        if (s == TS_OK) check_ids(tok, ids, n);
        else if (s == TS_ERR_SHAPE && n > 64) {
            int32_t *all = malloc((size_t)n * sizeof *all);
            int m = 0;
            if (all && ts_tokenize(tok, TEXTS[i], all, n, &m) == TS_OK) check_ids(tok, all, m);
            free(all);
        }
        if (ts_encode(tok, TEXTS[i], NULL, MAX_LEN, input_ids, types, mask, &n) == TS_OK)
            check_ids(tok, input_ids, MAX_LEN);
        if (ts_encode(tok, TEXTS[i], TEXTS[(i + 1) % ntexts], MAX_LEN, input_ids, types, mask, &n) == TS_OK)
            check_ids(tok, input_ids, MAX_LEN);
    }
    /* head+tail truncation, then keep the end */
    ts_tokenizer_set_truncation(tok, MAX_LEN / 4);
    if (ts_encode(tok, TEXTS[0], TEXTS[1], MAX_LEN, input_ids, types, mask, NULL) == TS_OK)
        check_ids(tok, input_ids, MAX_LEN);
    ts_tokenizer_set_truncation(tok, 0);
    if (ts_encode(tok, TEXTS[1], NULL, 8, input_ids, NULL, NULL, NULL) == TS_OK) check_ids(tok, input_ids, 8);
    ts_tokenizer_free(tok);
    return 0;
}
