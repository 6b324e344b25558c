/*
 * basic.h — BERT's "basic tokenization": the text normalizer (clean control characters and
 * white space, space out CJK ideographs, and when uncased: NFD, drop nonspacing marks, lower
 * case) followed by the pre-tokenizer (split on white space, punctuation characters become words
 * of their own). Matches Hugging Face tokenizers' BertNormalizer + BertPreTokenizer.
 *
 * The words it produces are UTF-8 strings laid back to back in one growable buffer, so a caller
 * that tokenizes many texts reuses the same memory.
 */
#ifndef TS_TEXT_BASIC_H
#define TS_TEXT_BASIC_H

#include "common/app.h"

typedef struct ts_word {
    size_t off;    /* byte offset into ts_words.buf */
    size_t len;    /* bytes */
    size_t nchars; /* code points */
} ts_word;

typedef struct ts_words {
    char *buf; /* the words' UTF-8 bytes, back to back (not NUL-terminated) */
    size_t len, cap;
    ts_word *w;
    size_t n, wcap;
    uint32_t *cps; /* scratch: normalized code points of the current text */
    size_t ncps, cpcap;
} ts_words;

/* An empty word list (all zero is a valid empty list too). */
void ts_words_init(ts_words *ws);
void ts_words_free(ts_words *ws);
/* Forget the words, keep the memory. */
void ts_words_clear(ts_words *ws);

/* Normalize and pre-tokenize text[0..len) (UTF-8; bad bytes are dropped) and append its words
 * to ws. lowercase != 0: the uncased normalizer (accents stripped, lower case). TS_OK, or
 * TS_ERR_NOMEM. */
ts_status ts_basic_tokenize(const char *text, size_t len, int lowercase, ts_words *ws);

#endif
