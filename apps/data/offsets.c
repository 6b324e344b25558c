/*
 * offsets.c — tokenize a text and keep, for every wordpiece, the byte span of the text it came
 * from: what SQuAD needs to find an answer's tokens and to map a predicted token span back to
 * the original context.
 *
 * The text is cut the way BERT's pre-tokenizer cuts it (white space separates words, each
 * punctuation character and each CJK ideograph is a word of its own), keeping byte positions;
 * each such word is tokenized alone. Its pieces then get their own spans when the characters of
 * the pieces line up one for one with the word's characters (always for text that lower-casing
 * and accent stripping do not change in length); otherwise every piece spans the whole word.
 */
#include "data/data.h"
#include "text/tokenizer.h"
#include "text/unicode.h"

/* Does the normalizer drop this code point (or fold it away when uncased)? */
static int dropped(uint32_t cp, int lowercase) {
    if (cp == 0 || cp == TS_UC_REPLACEMENT) return 1;
    unsigned f = ts_uc_flags(cp);
    return (f & TS_UC_CONTROL) || (lowercase && (f & TS_UC_MN));
}

static size_t utf8_chars(const char *s) {
    size_t n = 0;
    for (; *s; s++) n += ((unsigned char)*s & 0xC0) != 0x80;
    return n;
}

typedef struct scratch {
    char *word;
    size_t cap;
    ts_i32vec ids;
} scratch;

/* The pieces of the word text[b..e), appended with their spans. */
static ts_status word_pieces(const ts_tokenizer *tok, const char *text, size_t b, size_t e, scratch *s,
                             ts_i32vec *ids, ts_i32vec *begin, ts_i32vec *end) {
    size_t len = e - b;
    if (len + 1 > s->cap) {
        size_t c = s->cap ? s->cap : 64;
        while (c < len + 1) c *= 2;
        char *w = realloc(s->word, c);
        if (!w) return ts_set_error(TS_ERR_NOMEM, "tokenize: out of memory");
        s->word = w;
        s->cap = c;
    }
    memcpy(s->word, text + b, len);
    s->word[len] = 0;
    s->ids.n = 0;
    ts_status st = ts_tokenize_append(tok, s->word, &s->ids);
    if (st != TS_OK) return st;
    size_t np = s->ids.n;
    if (!np) return TS_OK;
    if (!ts_i32vec_reserve(ids, np) || !ts_i32vec_reserve(begin, np) || !ts_i32vec_reserve(end, np))
        return ts_set_error(TS_ERR_NOMEM, "tokenize: out of memory");

    /* Characters per piece ("##" not counted) against the word's characters that survive. */
    int lc = tok->lowercase, aligned = 1;
    size_t total = 0, src = 0;
    for (size_t k = 0; k < np; k++) {
        const char *t = ts_id_to_token(tok, s->ids.v[k]);
        if (!t || s->ids.v[k] == tok->special[TS_SPECIAL_UNK]) aligned = 0;
        else total += utf8_chars(k && strncmp(t, "##", 2) == 0 ? t + 2 : t);
    }
    for (size_t i = b; i < e;) {
        size_t adv;
        uint32_t cp = ts_utf8_decode((const unsigned char *)text + i, e - i, &adv);
        src += !dropped(cp, lc);
        i += adv;
    }
    if (total != src) aligned = 0;

    size_t i = b;
    for (size_t k = 0; k < np; k++) {
        size_t pb = b, pe = e;
        if (aligned) {
            const char *t = ts_id_to_token(tok, s->ids.v[k]);
            size_t want = utf8_chars(k && strncmp(t, "##", 2) == 0 ? t + 2 : t), got = 0;
            /* skip characters that were dropped before this piece starts */
            while (i < e) {
                size_t adv;
                uint32_t cp = ts_utf8_decode((const unsigned char *)text + i, e - i, &adv);
                if (!dropped(cp, lc)) break;
                i += adv;
            }
            pb = i;
            while (i < e && got < want) {
                size_t adv;
                uint32_t cp = ts_utf8_decode((const unsigned char *)text + i, e - i, &adv);
                got += !dropped(cp, lc);
                i += adv;
            }
            pe = i;
        }
        ids->v[ids->n++] = s->ids.v[k];
        begin->v[begin->n++] = (int32_t)pb;
        end->v[end->n++] = (int32_t)pe;
    }
    return TS_OK;
}

ts_status ts_tokenize_offsets(const ts_tokenizer *tok, const char *text, size_t len, ts_i32vec *ids,
                              ts_i32vec *begin, ts_i32vec *end) {
    if (len >= (size_t)INT32_MAX) return ts_set_error(TS_ERR_ARG, "tokenize: a text of %zu bytes is too long", len);
    scratch s = {0};
    ts_status st = TS_OK;
    size_t i = 0;
    while (i < len && st == TS_OK) {
        size_t adv;
        uint32_t cp = ts_utf8_decode((const unsigned char *)text + i, len - i, &adv);
        unsigned f = ts_uc_flags(cp);
        if (f & TS_UC_SPACE) {
            i += adv;
            continue;
        }
        size_t b = i;
        i += adv;
        if (!(f & TS_UC_PUNCT) && !ts_uc_is_cjk(cp)) {
            while (i < len) {
                uint32_t c = ts_utf8_decode((const unsigned char *)text + i, len - i, &adv);
                unsigned g = ts_uc_flags(c);
                if ((g & (TS_UC_SPACE | TS_UC_PUNCT)) || ts_uc_is_cjk(c)) break;
                i += adv;
            }
        }
        st = word_pieces(tok, text, b, i, &s, ids, begin, end);
    }
    free(s.word);
    ts_i32vec_free(&s.ids);
    return st;
}
