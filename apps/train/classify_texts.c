/*
 * classify_texts.c — a sequence classifier run on raw texts (tessera_tasks.h): one batch of
 * texts (or tab-separated pairs) encoded, run, and each text's class probabilities added.
 */
#include "common/app.h"

#include <string.h>

ts_status ts_classify_texts_add_probs(ts_program *infer, ts_batch_buf *bb, const ts_tokenizer *tok,
                                      const char *const *texts, int n, int pairs, int nlabels, double *probs) {
    ts_batch *b = &bb->b;
    const int T = bb->seq;
    for (int i = 0; i < bb->batch; i++) {
        int32_t *ids = b->input_ids + (size_t)i * T, *types = b->token_type_ids + (size_t)i * T;
        int32_t *mask = b->attention_mask + (size_t)i * T;
        if (i < n) {
            const char *tab = pairs ? strchr(texts[i], '\t') : NULL;
            char *first = tab ? strndup(texts[i], (size_t)(tab - texts[i])) : NULL; /* the pair split */
            if (tab && !first) return ts_set_error(TS_ERR_NOMEM, "out of memory");
            ts_status st = ts_encode(tok, tab ? first : texts[i], tab ? tab + 1 : NULL, T, ids, types, mask, NULL);
            free(first);
            if (st != TS_OK) return st;
        } else {
            for (int t = 0; t < T; t++) ids[t] = 0, types[t] = 0, mask[t] = t == 0; /* padding row */
        }
    }
    ts_tensor *logits = NULL;
    ts_status st;
    if ((st = ts_batch_buf_feed(bb, infer, 0)) || (st = ts_program_run(infer)) ||
        (st = ts_program_fetch(infer, "logits", &logits)))
        return st;
    const float *lg = ts_tensor_data(logits);
    int c = (int)ts_tensor_shape(logits)[1];
    for (int i = 0; i < n && c == nlabels; i++) /* c == nlabels: members share the labels */
        ts_classify_softmax_add(lg + (size_t)i * c, c, probs + (size_t)i * nlabels);
    ts_tensor_free(logits);
    return TS_OK;
}
