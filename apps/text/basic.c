/*
 * basic.c — BERT normalization and pre-tokenization of one text into words (see basic.h).
 *
 * The steps, in the order Hugging Face tokenizers applies them:
 *   1. clean: drop U+0000, U+FFFD (also what bad UTF-8 decodes to) and control characters
 *      (Cc Cf Co, but not TAB LF CR); every white-space character becomes ' '
 *   2. CJK ideographs get a space on each side, so each one is a word
 *   3. uncased only: NFD (decompose, canonical order), drop nonspacing marks (Mn), lower case
 *   4. split on white space; each punctuation character is a word by itself
 */
#include "text/basic.h"

#include "text/unicode.h"

void ts_words_init(ts_words *ws) { memset(ws, 0, sizeof *ws); }

void ts_words_free(ts_words *ws) {
    free(ws->buf);
    free(ws->w);
    free(ws->cps);
    memset(ws, 0, sizeof *ws);
}

void ts_words_clear(ts_words *ws) {
    ws->len = 0;
    ws->n = 0;
    ws->ncps = 0;
}

/* Make room for `more` elements of size `elem` in a growable array; 0 on out of memory. */
static int grow(void **p, size_t *cap, size_t used, size_t more, size_t elem) {
    if (used + more <= *cap) return 1;
    size_t want = *cap ? *cap : 64;
    while (want < used + more) want *= 2;
    void *q = realloc(*p, want * elem);
    if (!q) return 0;
    *p = q;
    *cap = want;
    return 1;
}

static int push_cp(ts_words *ws, uint32_t cp) {
    if (!grow((void **)&ws->cps, &ws->cpcap, ws->ncps, 1, sizeof *ws->cps)) return 0;
    ws->cps[ws->ncps++] = cp;
    return 1;
}

/* Steps 1-2 (and the decomposition of step 3) into ws->cps. */
static int clean(const unsigned char *s, size_t len, int lowercase, ts_words *ws) {
    ws->ncps = 0;
    size_t i = 0;
    while (i < len) {
        size_t adv;
        uint32_t cp = ts_utf8_decode(s + i, len - i, &adv);
        i += adv;
        if (cp == 0 || cp == TS_UC_REPLACEMENT) continue;
        unsigned f = ts_uc_flags(cp);
        if (f & TS_UC_CONTROL) continue;
        if (f & TS_UC_SPACE) {
            if (!push_cp(ws, ' ')) return 0;
            continue;
        }
        int cjk = ts_uc_is_cjk(cp);
        if (cjk && !push_cp(ws, ' ')) return 0;
        if (lowercase) {
            uint32_t d[TS_UC_MAX_DECOMP];
            int nd = ts_uc_decompose(cp, d);
            for (int k = 0; k < nd; k++)
                if (!push_cp(ws, d[k])) return 0;
        } else if (!push_cp(ws, cp)) {
            return 0;
        }
        if (cjk && !push_cp(ws, ' ')) return 0;
    }
    if (lowercase) ts_uc_canonical_order(ws->cps, ws->ncps);
    return 1;
}

/* The word being built is buf[start..len) with nchars code points; close it if non-empty. */
static int end_word(ts_words *ws, size_t start, size_t *nchars) {
    if (ws->len == start) return 1;
    if (!grow((void **)&ws->w, &ws->wcap, ws->n, 1, sizeof *ws->w)) return 0;
    ws->w[ws->n++] = (ts_word){start, ws->len - start, *nchars};
    *nchars = 0;
    return 1;
}

static int append_cp(ts_words *ws, uint32_t cp) {
    if (!grow((void **)&ws->buf, &ws->cap, ws->len, 4, 1)) return 0;
    ws->len += (size_t)ts_utf8_encode(cp, ws->buf + ws->len);
    return 1;
}

ts_status ts_basic_tokenize(const char *text, size_t len, int lowercase, ts_words *ws) {
    if (!clean((const unsigned char *)text, len, lowercase, ws)) goto oom;
    size_t start = ws->len, nchars = 0;
    for (size_t i = 0; i < ws->ncps; i++) {
        uint32_t one[TS_UC_MAX_LOWER];
        int n = 1;
        one[0] = ws->cps[i];
        if (lowercase) {
            if (ts_uc_flags(one[0]) & TS_UC_MN) continue;
            n = ts_uc_lower(one[0], one);
        }
        for (int k = 0; k < n; k++) {
            uint32_t cp = one[k];
            unsigned f = ts_uc_flags(cp);
            if (f & TS_UC_SPACE) {
                if (!end_word(ws, start, &nchars)) goto oom;
                start = ws->len;
            } else if (f & TS_UC_PUNCT) {
                if (!end_word(ws, start, &nchars)) goto oom;
                start = ws->len;
                if (!append_cp(ws, cp)) goto oom;
                nchars = 1;
                if (!end_word(ws, start, &nchars)) goto oom;
                start = ws->len;
            } else {
                if (!append_cp(ws, cp)) goto oom;
                nchars++;
            }
        }
    }
    if (!end_word(ws, start, &nchars)) goto oom;
    return TS_OK;
oom:
    return ts_set_error(TS_ERR_NOMEM, "tokenizer: out of memory on a text of %zu bytes", len);
}
