/*
 * fuzz_squad.c — libFuzzer target for the SQuAD reader (apps/data/squad.c, squad_eval.c): the input
 * is parsed in memory (not NUL-terminated) with ts_squad_parse and a tiny vocabulary, with small
 * windows (max_seq_len 32, doc_stride 8, max_query_len 8) and answer relocation when the first
 * byte is odd. When it parses, every example is read, every feature is written into batches, and
 * the examples are scored (ts_squad_evaluate) against made-up logits. A malformed document must
 * be an error, never a crash, leak or undefined behaviour.
 */
#include "tessera_apps.h"
#include "fuzz_util.h"

#define T 32
#define BATCH 4
#define MAX_EVAL_FEATURES 4096

static ts_tokenizer *tok;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    tok = fuzz_tiny_tokenizer();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    ts_squad_opts o = {.max_seq_len = T, .doc_stride = 8, .max_query_len = 8,
                       .relocate_answers = size ? data[0] & 1 : 0};
    ts_squad *s = ts_squad_parse("fuzz", (const char *)data, size, tok, &o);
    if (!s) return 0;
    int64_t nex = ts_squad_num_examples(s), nfeat = ts_squad_num_features(s);
    (void)ts_squad_num_relocated(s);
    for (int64_t i = 0; i < nex; i++) {
        ts_squad_example ex;
        if (ts_squad_get(s, i, &ex) != TS_OK || !ex.id || !ex.question || !ex.context) abort();
        if (ex.first_feature < 0 || ex.nfeatures < 0 || ex.first_feature + ex.nfeatures > nfeat) abort();
        for (int k = 0; k < ex.nanswers; k++) (void)strlen(ex.answers[k]);
    }
    int32_t ids[BATCH * T], types[BATCH * T], mask[BATCH * T], sp[BATCH], ep[BATCH];
    ts_batch b = {.input_ids = ids, .token_type_ids = types, .attention_mask = mask, .start_positions = sp,
                  .end_positions = ep};
    for (int64_t f = 0; f < nfeat; f += BATCH) {
        int64_t rows[BATCH];
        int n = 0;
        for (; n < BATCH && f + n < nfeat; n++) rows[n] = f + n;
        if (ts_squad_batch(s, rows, n, BATCH, &b) != TS_OK) abort();
        for (int i = 0; i < n; i++)
            if ((sp[i] != TS_IGNORE_INDEX && (sp[i] < 0 || sp[i] >= T)) ||
                (ep[i] != TS_IGNORE_INDEX && (ep[i] < 0 || ep[i] >= T)))
                abort();
    }
    if (nfeat <= MAX_EVAL_FEATURES) {
        size_t nl = (size_t)(nfeat ? nfeat : 1) * T;
        float *start = malloc(nl * sizeof *start), *end = malloc(nl * sizeof *end);
        if (start && end) {
            uint32_t x = (uint32_t)size * 2654435761u + 1;
            for (size_t i = 0; i < nl; i++) {
                x = x * 1664525u + 1013904223u;
                start[i] = (float)(x >> 8) / 16777216.0f;
                x = x * 1664525u + 1013904223u;
                end[i] = (float)(x >> 8) / 16777216.0f;
            }
            double em = 0, f1 = 0;
            (void)ts_squad_evaluate(s, start, end, 5, 10, &em, &f1);
        }
        free(start);
        free(end);
    }
    ts_squad_free(s);
    return 0;
}
