/*
 * vocab.c — load a WordPiece vocab.txt (one token per line, id = line index) into a hash table,
 * and look tokens and ids up. Reads lines as Hugging Face tokenizers' WordPiece::read_file
 * does: "\n" or "\r\n" ends a line, trailing white space is trimmed, a repeated token maps to
 * its last line (every line still owns its id).
 */
#include "text/tokenizer.h"

#include <errno.h>
#include <stdio.h>

#include "text/unicode.h"

const char *const ts_special_names[TS_NSPECIAL] = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"};

static uint64_t hash_bytes(uint64_t h, const char *s, size_t n) {
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 0x100000001b3ull;
    }
    return h;
}
#define HASH_SEED 0xcbf29ce484222325ull

int32_t ts_vocab_find(const ts_tokenizer *tok, const char *prefix, const char *s, size_t n) {
    if (!prefix) prefix = "";
    size_t np = strlen(prefix);
    uint64_t h = hash_bytes(hash_bytes(HASH_SEED, prefix, np), s, n);
    size_t mask = tok->nslots - 1;
    for (size_t i = (size_t)h & mask;; i = (i + 1) & mask) {
        int32_t id = tok->slots[i];
        if (id < 0) return -1;
        if (tok->len[id] == np + n) {
            const char *t = tok->text + tok->off[id];
            if (memcmp(t, prefix, np) == 0 && memcmp(t + np, s, n) == 0) return id;
        }
    }
}

/* Insert id (its text already stored); a token already present now maps to this id. */
static void insert(ts_tokenizer *tok, int32_t id) {
    const char *t = tok->text + tok->off[id];
    uint64_t h = hash_bytes(HASH_SEED, t, tok->len[id]);
    size_t mask = tok->nslots - 1;
    for (size_t i = (size_t)h & mask;; i = (i + 1) & mask) {
        int32_t o = tok->slots[i];
        if (o < 0 || (tok->len[o] == tok->len[id] && memcmp(tok->text + tok->off[o], t, tok->len[id]) == 0)) {
            tok->slots[i] = id;
            return;
        }
    }
}

/* Length of line[0..n) without trailing white space (valid UTF-8 assumed). */
static size_t trim_end(const char *line, size_t n) {
    while (n > 0) {
        size_t b = n - 1;
        while (b > 0 && ((unsigned char)line[b] & 0xC0) == 0x80) b--;
        size_t adv;
        uint32_t cp = ts_utf8_decode((const unsigned char *)line + b, n - b, &adv);
        if (!(ts_uc_flags(cp) & TS_UC_SPACE)) break;
        n = b;
    }
    return n;
}

static int valid_utf8(const char *s, size_t n) {
    for (size_t i = 0; i < n;) {
        size_t adv;
        if (ts_utf8_decode((const unsigned char *)s + i, n - i, &adv) == TS_UC_REPLACEMENT &&
            !(adv == 3 && memcmp(s + i, "\xEF\xBF\xBD", 3) == 0))
            return 0;
        i += adv;
    }
    return 1;
}

void ts_tokenizer_free(ts_tokenizer *tok) {
    if (!tok) return;
    free(tok->text);
    free(tok->off);
    free(tok->len);
    free(tok->slots);
    free(tok);
}

/* Read every line of path into tok->text / off / len. */
static ts_status read_lines(ts_tokenizer *tok, const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return ts_set_error(TS_ERR_IO, "cannot open vocabulary '%s': %s", path, strerror(errno));
    ts_status st = TS_OK;
    char *line = NULL;
    size_t lcap = 0, tcap = 0, tlen = 0, icap = 0;
    ssize_t got;
    int32_t n = 0;
    errno = 0;
    while ((got = getline(&line, &lcap, f)) >= 0) {
        size_t len = (size_t)got;
        if (len && line[len - 1] == '\n') len--;
        if (len && line[len - 1] == '\r') len--;
        if (memchr(line, 0, len)) {
            st = ts_set_error(TS_ERR_IO, "%s:%d: a NUL byte in a vocabulary line", path, n + 1);
            break;
        }
        if (!valid_utf8(line, len)) {
            st = ts_set_error(TS_ERR_IO, "%s:%d: not valid UTF-8 (is this a vocab.txt?)", path, n + 1);
            break;
        }
        len = trim_end(line, len);
        if (n == INT32_MAX - 1) {
            st = ts_set_error(TS_ERR_IO, "%s: more than %d lines", path, INT32_MAX - 1);
            break;
        }
        if ((size_t)n == icap) {
            icap = icap ? icap * 2 : 1024;
            size_t *o = realloc(tok->off, icap * sizeof *o);
            if (o) tok->off = o;
            uint32_t *l = realloc(tok->len, icap * sizeof *l);
            if (l) tok->len = l;
            if (!o || !l) goto oom;
        }
        if (tlen + len + 1 > tcap) {
            while (tlen + len + 1 > tcap) tcap = tcap ? tcap * 2 : 65536;
            char *t = realloc(tok->text, tcap);
            if (!t) goto oom;
            tok->text = t;
        }
        memcpy(tok->text + tlen, line, len);
        tok->text[tlen + len] = 0;
        tok->off[n] = tlen;
        tok->len[n] = (uint32_t)len;
        tlen += len + 1;
        n++;
    }
    if (st == TS_OK && ferror(f))
        st = ts_set_error(TS_ERR_IO, "%s:%d: read error: %s", path, n + 1, strerror(errno ? errno : EIO));
    if (st == TS_OK && n == 0) st = ts_set_error(TS_ERR_IO, "%s: empty vocabulary (no lines)", path);
    free(line);
    fclose(f);
    tok->ntokens = n;
    return st;
oom:
    free(line);
    fclose(f);
    return ts_set_error(TS_ERR_NOMEM, "%s:%d: out of memory reading the vocabulary", path, n + 1);
}

ts_tokenizer *ts_tokenizer_load(const char *vocab_path, int lowercase) {
    if (!vocab_path) {
        ts_set_error(TS_ERR_ARG, "ts_tokenizer_load: vocab_path is NULL");
        return NULL;
    }
    ts_tokenizer *tok = calloc(1, sizeof *tok);
    if (!tok) {
        ts_set_error(TS_ERR_NOMEM, "ts_tokenizer_load: out of memory");
        return NULL;
    }
    tok->lowercase = lowercase != 0;
    tok->keep_head = -1;
    if (read_lines(tok, vocab_path) != TS_OK) {
        ts_tokenizer_free(tok);
        return NULL;
    }
    tok->nslots = 64;
    while (tok->nslots < (size_t)tok->ntokens * 2) tok->nslots *= 2;
    tok->slots = malloc(tok->nslots * sizeof *tok->slots);
    if (!tok->slots) {
        ts_set_error(TS_ERR_NOMEM, "%s: out of memory for the vocabulary index", vocab_path);
        ts_tokenizer_free(tok);
        return NULL;
    }
    memset(tok->slots, 0xff, tok->nslots * sizeof *tok->slots);
    for (int32_t id = 0; id < tok->ntokens; id++) {
        insert(tok, id);
        if (tok->len[id] > tok->max_len) tok->max_len = tok->len[id];
    }
    for (int k = 0; k < TS_NSPECIAL; k++) {
        const char *s = ts_special_names[k];
        tok->special[k] = ts_vocab_find(tok, NULL, s, strlen(s));
        if (tok->special[k] < 0 && k != TS_SPECIAL_MASK) {
            ts_set_error(TS_ERR_IO, "%s: no %s token (a BERT vocabulary needs [PAD] [UNK] [CLS] [SEP])", vocab_path, s);
            ts_tokenizer_free(tok);
            return NULL;
        }
    }
    return tok;
}

int ts_tokenizer_vocab_size(const ts_tokenizer *tok) { return tok ? tok->ntokens : 0; }

int32_t ts_token_to_id(const ts_tokenizer *tok, const char *token) {
    if (!tok || !token) return -1;
    return ts_vocab_find(tok, NULL, token, strlen(token));
}

const char *ts_id_to_token(const ts_tokenizer *tok, int32_t id) {
    if (!tok || id < 0 || id >= tok->ntokens) return NULL;
    return tok->text + tok->off[id];
}
