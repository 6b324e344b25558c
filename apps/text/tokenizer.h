/*
 * tokenizer.h — the ts_tokenizer struct (a loaded WordPiece vocabulary) shared by vocab.c
 * (loading, token <-> id) and wordpiece.c (tokenize, encode).
 */
#ifndef TS_TEXT_TOKENIZER_H
#define TS_TEXT_TOKENIZER_H

#include "common/app.h"

/* The added ("special") tokens: matched in raw input text before normalization, as tokenizers
 * does for the special tokens of a BERT tokenizer. */
enum { TS_SPECIAL_PAD, TS_SPECIAL_UNK, TS_SPECIAL_CLS, TS_SPECIAL_SEP, TS_SPECIAL_MASK, TS_NSPECIAL };
extern const char *const ts_special_names[TS_NSPECIAL];

#define TS_WORDPIECE_MAX_CHARS 100 /* longer words become [UNK] */

struct ts_tokenizer {
    int lowercase;
    int32_t ntokens;   /* lines of vocab.txt: ids are 0 .. ntokens-1 */
    char *text;        /* every token, NUL-terminated, in id order */
    size_t *off;       /* [ntokens] token id -> offset into text */
    uint32_t *len;     /* [ntokens] bytes */
    int32_t *slots;    /* open-addressing hash of token -> id (-1: empty); last duplicate wins */
    size_t nslots;     /* a power of two */
    int32_t special[TS_NSPECIAL]; /* ids, -1 when absent ([MASK] may be absent) */
    size_t max_len;    /* bytes of the longest token: no longer piece can match */
    int keep_head;     /* ts_encode's cut: pieces kept from a long text's start (-1: all that fit) */
};

/* Id of the token prefix + s[0..n) ("##" + piece), or -1. */
int32_t ts_vocab_find(const ts_tokenizer *tok, const char *prefix, const char *s, size_t n);

#endif
