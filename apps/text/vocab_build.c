/*
 * vocab_build.c — learn a WordPiece vocabulary from text files (ts_vocab_build), the way Hugging
 * Face's WordPieceTrainer does: a BPE merge learner over characters in which every piece after
 * a word's first is a "##" continuation piece.
 *
 *   1. stream the files line by line; basic-tokenize each line (basic.c) and count the
 *      distinct words (words over 100 characters are skipped: WordPiece maps them to [UNK])
 *   2. alphabet: the (at most 1000) most frequent characters seen at least twice, each as "c"
 *      where it starts a word and "##c" where it continues one (BertWordPieceTokenizer.train's
 *      limit_alphabet); fewer if they would not fit in vocab_size
 *   3. each distinct word becomes a list of symbols; count adjacent pairs (weighted by the
 *      word's count) and remember which words hold each pair
 *   4. repeat: take the most frequent pair (a, b) (ties: smallest (a, b) ids), make the piece
 *      a + b-without-"##", rewrite the words that hold it and update the counts of the pairs
 *      around each rewrite; stop at vocab_size or when no pair occurs twice
 * A max-heap with lazy deletion picks the pair: an entry whose count is stale is pushed back
 * with the current count when it reaches the top.
 */
#include <errno.h>
#include <stdio.h>
#include <unistd.h>

#include "text/basic.h"
#include "text/strmap.h"
#include "text/tokenizer.h"
#include "text/unicode.h"

#define MIN_FREQ 2        /* a character, or a pair to merge, must occur this often */
#define MAX_ALPHABET 1000 /* most distinct characters kept (tokenizers' limit_alphabet for BERT) */

typedef struct pairent {
    uint64_t key; /* (a << 32) | b */
    int64_t count;
    int32_t *occ; /* words that held the pair at some point (may repeat, may be stale) */
    int32_t nocc, ocap;
    uint32_t stamp; /* merge step that last raised the count (to push it once) */
} pairent;

typedef struct heapent {
    int64_t count;
    uint64_t key;
} heapent;

typedef struct trainer {
    int lowercase, oom;
    ts_strmap words; /* distinct corpus words */
    int64_t *wcount; /* [words.n] */
    size_t wccap;
    ts_strmap syms; /* pieces: the alphabet, then merged pieces */
    int32_t *pool;  /* symbols of every word, back to back (-1: a character left out) */
    size_t *wstart;
    int32_t *wlen;
    pairent *pe; /* pairs */
    size_t npe, pecap;
    int32_t *pslots; /* open addressing into pe */
    size_t npslots;
    heapent *heap;
    size_t nheap, heapcap;
    uint64_t *touched; /* pairs raised by the current merge */
    size_t ntouched, tcap;
    uint32_t step;
} trainer;

/* Make room for need elements of size elem, doubling from first (0 on out of memory). */
static int grow_from(void **p, size_t *cap, size_t need, size_t elem, size_t first) {
    if (need <= *cap) return 1;
    size_t c = *cap ? *cap : first;
    while (c < need) c *= 2;
    void *q = realloc(*p, c * elem);
    if (!q) return 0;
    *p = q;
    *cap = c;
    return 1;
}

static int grow(void **p, size_t *cap, size_t need, size_t elem) { return grow_from(p, cap, need, elem, 256); }

/* ------------------------------------------------------------------ 1. counting words */

static ts_status count_file(trainer *t, const char *path, ts_words *ws) {
    FILE *f = fopen(path, "rb");
    if (!f) return ts_set_error(TS_ERR_IO, "cannot open corpus file '%s': %s", path, strerror(errno));
    char *line = NULL;
    size_t lcap = 0;
    ssize_t got;
    long lineno = 0;
    ts_status st = TS_OK;
    errno = 0;
    while (st == TS_OK && (got = getline(&line, &lcap, f)) >= 0) {
        lineno++;
        ts_words_clear(ws);
        st = ts_basic_tokenize(line, (size_t)got, t->lowercase, ws);
        for (size_t i = 0; st == TS_OK && i < ws->n; i++) {
            if (ws->w[i].nchars > TS_WORDPIECE_MAX_CHARS) continue;
            int added;
            int32_t id = ts_strmap_intern(&t->words, ws->buf + ws->w[i].off, ws->w[i].len, &added);
            if (id < 0 || !grow((void **)&t->wcount, &t->wccap, (size_t)id + 1, sizeof *t->wcount)) {
                st = ts_set_error(TS_ERR_NOMEM, "%s:%ld: out of memory counting words (%d distinct so far)", path,
                                  lineno, t->words.n);
                break;
            }
            if (added) t->wcount[id] = 0;
            t->wcount[id]++;
        }
    }
    if (st == TS_OK && ferror(f))
        st = ts_set_error(TS_ERR_IO, "%s:%ld: read error: %s", path, lineno + 1, strerror(errno ? errno : EIO));
    free(line);
    fclose(f);
    return st;
}

/* ------------------------------------------------------------------ pairs and the heap */

static uint64_t pair_key(int32_t a, int32_t b) { return ((uint64_t)(uint32_t)a << 32) | (uint32_t)b; }

static uint64_t mix(uint64_t k) {
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdull;
    k ^= k >> 33;
    return k;
}

static int pair_rehash(trainer *t, size_t nslots) {
    int32_t *s = malloc(nslots * sizeof *s);
    if (!s) return 0;
    memset(s, 0xff, nslots * sizeof *s);
    for (size_t i = 0; i < t->npe; i++) {
        size_t j = (size_t)mix(t->pe[i].key) & (nslots - 1);
        while (s[j] >= 0) j = (j + 1) & (nslots - 1);
        s[j] = (int32_t)i;
    }
    free(t->pslots);
    t->pslots = s;
    t->npslots = nslots;
    return 1;
}

/* Index of the pair's entry, created when missing; -1 on out of memory. */
static int32_t pair_get(trainer *t, uint64_t key) {
    if ((t->npe + 1) * 2 > t->npslots && !pair_rehash(t, t->npslots ? t->npslots * 2 : 4096)) return -1;
    size_t j = (size_t)mix(key) & (t->npslots - 1);
    while (t->pslots[j] >= 0) {
        if (t->pe[t->pslots[j]].key == key) return t->pslots[j];
        j = (j + 1) & (t->npslots - 1);
    }
    if (t->npe >= INT32_MAX || !grow((void **)&t->pe, &t->pecap, t->npe + 1, sizeof *t->pe)) return -1;
    t->pe[t->npe] = (pairent){.key = key};
    t->pslots[j] = (int32_t)t->npe;
    return (int32_t)t->npe++;
}

/* The heap's order: higher count first, then the smaller pair. */
static int heap_above(const heapent *x, const heapent *y) {
    return x->count != y->count ? x->count > y->count : x->key < y->key;
}

static void heap_push(trainer *t, int64_t count, uint64_t key) {
    if (!grow((void **)&t->heap, &t->heapcap, t->nheap + 1, sizeof *t->heap)) {
        t->oom = 1;
        return;
    }
    size_t i = t->nheap++;
    t->heap[i] = (heapent){count, key};
    while (i > 0 && heap_above(&t->heap[i], &t->heap[(i - 1) / 2])) {
        heapent tmp = t->heap[i];
        t->heap[i] = t->heap[(i - 1) / 2];
        t->heap[(i - 1) / 2] = tmp;
        i = (i - 1) / 2;
    }
}

static heapent heap_pop(trainer *t) {
    heapent top = t->heap[0];
    t->heap[0] = t->heap[--t->nheap];
    for (size_t i = 0;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < t->nheap && heap_above(&t->heap[l], &t->heap[m])) m = l;
        if (r < t->nheap && heap_above(&t->heap[r], &t->heap[m])) m = r;
        if (m == i) break;
        heapent tmp = t->heap[i];
        t->heap[i] = t->heap[m];
        t->heap[m] = tmp;
        i = m;
    }
    return top;
}

/* count(a, b) += delta for word w; a raised pair remembers w and is pushed after this merge. */
static void pair_add(trainer *t, int32_t a, int32_t b, int64_t delta, int32_t w) {
    int32_t i = pair_get(t, pair_key(a, b));
    if (i < 0) {
        t->oom = 1;
        return;
    }
    pairent *p = &t->pe[i];
    p->count += delta;
    if (delta <= 0) return;
    if (p->nocc == 0 || p->occ[p->nocc - 1] != w) {
        size_t cap = (size_t)p->ocap;
        if (!grow_from((void **)&p->occ, &cap, (size_t)p->nocc + 1, sizeof *p->occ, 2) || cap > INT32_MAX) {
            t->oom = 1;
            return;
        }
        p->ocap = (int32_t)cap;
        p->occ[p->nocc++] = w;
    }
    if (p->stamp != t->step) {
        p->stamp = t->step;
        if (!grow((void **)&t->touched, &t->tcap, t->ntouched + 1, sizeof *t->touched)) {
            t->oom = 1;
            return;
        }
        t->touched[t->ntouched++] = p->key;
    }
}

/* ------------------------------------------------------------------ 2-3. alphabet and words */

/* One distinct character of the corpus. */
typedef struct charent {
    uint32_t cp;
    int64_t freq;      /* occurrences, weighted by word counts */
    int forms;         /* bit 0: starts some word ("c"); bit 1: continues some word ("##c") */
    int32_t sym[2];    /* symbol ids of "c" and "##c" once chosen, else -1 */
} charent;

static int by_freq(const void *x, const void *y) {
    const charent *a = *(charent *const *)x, *b = *(charent *const *)y;
    if (a->freq != b->freq) return a->freq > b->freq ? -1 : 1;
    return a->cp < b->cp ? -1 : a->cp > b->cp;
}

typedef struct form {
    uint32_t cp;
    int cont;
    charent *c;
} form;

static int by_form(const void *x, const void *y) {
    const form *a = x, *b = y;
    if (a->cont != b->cont) return a->cont - b->cont;
    return a->cp < b->cp ? -1 : a->cp > b->cp;
}

/* Bytes of the character at s[i] (a word holds valid UTF-8); its code point in *cp. */
static size_t char_at(const char *s, size_t n, size_t i, uint32_t *cp) {
    size_t adv;
    *cp = ts_utf8_decode((const unsigned char *)s + i, n - i, &adv);
    return adv;
}

/* The alphabet, as BertWordPieceTokenizer.train chooses it (limit_alphabet 1000): the most
 * frequent characters seen at least MIN_FREQ times, at most MAX_ALPHABET of them and no more
 * symbols than room; each in the forms it occurs in ("c" starting a word, "##c" inside one).
 * Interned into t->syms ordered "c" by code point, then "##c" by code point; then each word
 * becomes its list of symbols (-1 for a character left out). */
static ts_status build_alphabet(trainer *t, size_t room) {
    ts_strmap chars = {0};
    charent *ce = NULL, **order = NULL;
    form *forms = NULL;
    size_t cecap = 0, total = 0, nforms = 0;
    ts_status st = TS_ERR_NOMEM;
    for (int32_t w = 0; w < t->words.n; w++) {
        const char *s = ts_strmap_str(&t->words, w);
        size_t n = t->words.len[w];
        for (size_t i = 0, adv; i < n; i += adv, total++) {
            uint32_t cp;
            int added;
            adv = char_at(s, n, i, &cp);
            int32_t id = ts_strmap_intern(&chars, s + i, adv, &added);
            if (id < 0 || !grow((void **)&ce, &cecap, (size_t)id + 1, sizeof *ce)) goto done;
            if (added) ce[id] = (charent){cp, 0, 0, {-1, -1}};
            ce[id].freq += t->wcount[w];
            ce[id].forms |= i ? 2 : 1;
        }
    }
    order = malloc(((size_t)chars.n + 1) * sizeof *order);
    forms = malloc(((size_t)chars.n * 2 + 1) * sizeof *forms);
    if (!order || !forms) goto done;
    for (int32_t i = 0; i < chars.n; i++) order[i] = &ce[i];
    qsort(order, (size_t)chars.n, sizeof *order, by_freq);
    size_t nkept = 0;
    for (int32_t i = 0; i < chars.n && nkept < MAX_ALPHABET; i++) {
        charent *c = order[i];
        size_t k = (size_t)((c->forms & 1) + (c->forms >> 1));
        if (c->freq < MIN_FREQ || nforms + k > room) continue;
        nkept++;
        for (int cont = 0; cont < 2; cont++)
            if (c->forms & (1 << cont)) forms[nforms++] = (form){c->cp, cont, c};
    }
    qsort(forms, nforms, sizeof *forms, by_form);
    for (size_t i = 0; i < nforms; i++) {
        char sym[8];
        size_t k = 0;
        if (forms[i].cont) sym[k++] = '#', sym[k++] = '#';
        k += (size_t)ts_utf8_encode(forms[i].cp, sym + k);
        int32_t id = ts_strmap_intern(&t->syms, sym, k, NULL);
        if (id < 0) goto done;
        forms[i].c->sym[forms[i].cont] = id;
    }
    t->pool = malloc((total + 1) * sizeof *t->pool);
    t->wstart = malloc(((size_t)t->words.n + 1) * sizeof *t->wstart);
    t->wlen = malloc(((size_t)t->words.n + 1) * sizeof *t->wlen);
    if (!t->pool || !t->wstart || !t->wlen) goto done;
    size_t at = 0;
    for (int32_t w = 0; w < t->words.n; w++) {
        const char *s = ts_strmap_str(&t->words, w);
        size_t n = t->words.len[w];
        t->wstart[w] = at;
        for (size_t i = 0, adv; i < n; i += adv) {
            uint32_t cp;
            adv = char_at(s, n, i, &cp);
            t->pool[at++] = ce[ts_strmap_find(&chars, s + i, adv)].sym[i > 0];
        }
        t->wlen[w] = (int32_t)(at - t->wstart[w]);
    }
    st = TS_OK;
done:
    free(order);
    free(forms);
    free(ce);
    ts_strmap_free(&chars);
    return st == TS_OK ? TS_OK : ts_set_error(TS_ERR_NOMEM, "ts_vocab_build: out of memory building the alphabet");
}

/* ------------------------------------------------------------------ 4. merges */

/* Rewrite every (a, b) of word w as nw, updating the neighbouring pairs' counts. */
static void merge_word(trainer *t, int32_t w, int32_t a, int32_t b, int32_t nw) {
    int32_t *s = t->pool + t->wstart[w];
    int32_t len = t->wlen[w], o = 0;
    int64_t c = t->wcount[w];
    for (int32_t r = 0; r < len;) {
        if (r + 1 < len && s[r] == a && s[r + 1] == b) {
            if (o > 0 && s[o - 1] >= 0) {
                pair_add(t, s[o - 1], a, -c, w);
                pair_add(t, s[o - 1], nw, c, w);
            }
            if (r + 2 < len && s[r + 2] >= 0) {
                pair_add(t, b, s[r + 2], -c, w);
                pair_add(t, nw, s[r + 2], c, w);
            }
            s[o++] = nw;
            r += 2;
        } else {
            s[o++] = s[r++];
        }
    }
    t->wlen[w] = o;
}

static ts_status learn_merges(trainer *t, int vocab_size) {
    for (int32_t w = 0; w < t->words.n; w++) {
        const int32_t *s = t->pool + t->wstart[w];
        for (int32_t i = 0; i + 1 < t->wlen[w]; i++)
            if (s[i] >= 0 && s[i + 1] >= 0) pair_add(t, s[i], s[i + 1], t->wcount[w], w);
    }
    for (size_t i = 0; i < t->npe; i++) heap_push(t, t->pe[i].count, t->pe[i].key);
    t->ntouched = 0;
    char *buf = NULL;
    size_t bcap = 0;
    while (!t->oom && TS_NSPECIAL + t->syms.n < vocab_size && t->nheap > 0) {
        heapent top = heap_pop(t);
        int32_t pi = pair_get(t, top.key);
        if (pi < 0) break;
        int64_t now = t->pe[pi].count;
        if (top.count != now) {
            if (now > 0) heap_push(t, now, top.key);
            continue;
        }
        if (now < MIN_FREQ) break;
        int32_t a = (int32_t)(top.key >> 32), b = (int32_t)(uint32_t)top.key;
        size_t la = t->syms.len[a], lb = t->syms.len[b] - 2; /* b is a "##" piece */
        if (!grow((void **)&buf, &bcap, la + lb + 1, 1)) {
            t->oom = 1;
            break;
        }
        memcpy(buf, ts_strmap_str(&t->syms, a), la);
        memcpy(buf + la, ts_strmap_str(&t->syms, b) + 2, lb);
        int32_t nw = ts_strmap_intern(&t->syms, buf, la + lb, NULL);
        if (nw < 0) {
            t->oom = 1;
            break;
        }
        t->step++;
        int32_t *occ = t->pe[pi].occ, nocc = t->pe[pi].nocc;
        t->pe[pi].occ = NULL; /* pair_add may move t->pe; this list is ours now */
        t->pe[pi].nocc = t->pe[pi].ocap = 0;
        for (int32_t k = 0; k < nocc; k++) merge_word(t, occ[k], a, b, nw);
        free(occ);
        t->pe[pi].count = 0;
        for (size_t k = 0; k < t->ntouched; k++) {
            int32_t j = pair_get(t, t->touched[k]);
            if (j >= 0 && t->pe[j].count > 0) heap_push(t, t->pe[j].count, t->touched[k]);
        }
        t->ntouched = 0;
    }
    free(buf);
    return t->oom ? ts_set_error(TS_ERR_NOMEM, "ts_vocab_build: out of memory learning merges") : TS_OK;
}

/* ------------------------------------------------------------------ output */

/* The vocabulary into f, one token a line: the special tokens, then the learned ones
 * (ts_write_atomic_with's body). */
static ts_status write_vocab_body(FILE *f, void *ctx) {
    const trainer *t = ctx;
    for (int k = 0; k < TS_NSPECIAL; k++)
        if (fprintf(f, "%s\n", ts_special_names[k]) < 0) return TS_ERR_IO;
    for (int32_t i = 0; i < t->syms.n; i++)
        if (fwrite(ts_strmap_str(&t->syms, i), 1, t->syms.len[i], f) != t->syms.len[i] || fputc('\n', f) == EOF)
            return TS_ERR_IO; /* ts_write_atomic_with reports the failed write */
    return TS_OK;
}

static ts_status write_vocab(const trainer *t, const char *out_path) {
    ts_status st = ts_write_atomic_with(out_path, write_vocab_body, (void *)t);
    return st ? ts_set_error(st, "cannot write vocabulary: %s", ts_last_error()) : TS_OK;
}

static void trainer_free(trainer *t) {
    ts_strmap_free(&t->words);
    ts_strmap_free(&t->syms);
    free(t->wcount);
    free(t->pool);
    free(t->wstart);
    free(t->wlen);
    for (size_t i = 0; i < t->npe; i++) free(t->pe[i].occ);
    free(t->pe);
    free(t->pslots);
    free(t->heap);
    free(t->touched);
}

ts_status ts_vocab_build(const char *const *files, int nfiles, int vocab_size, int lowercase,
                         const char *out_path) {
    if (!files || nfiles <= 0 || !out_path)
        return ts_set_error(TS_ERR_ARG, "ts_vocab_build: no corpus files or no output path");
    if (vocab_size < TS_NSPECIAL)
        return ts_set_error(TS_ERR_ARG, "ts_vocab_build: vocab_size %d is less than the %d special tokens", vocab_size,
                            TS_NSPECIAL);
    for (int i = 0; i < nfiles; i++)
        if (!files[i]) return ts_set_error(TS_ERR_ARG, "ts_vocab_build: files[%d] is NULL", i);
    trainer t = {.lowercase = lowercase != 0};
    ts_words ws;
    ts_words_init(&ws);
    ts_status st = TS_OK;
    for (int i = 0; i < nfiles && st == TS_OK; i++) st = count_file(&t, files[i], &ws);
    ts_words_free(&ws);
    if (st == TS_OK && t.words.n == 0)
        st = ts_set_error(TS_ERR_ARG, "ts_vocab_build: the corpus (%d file%s, first '%s') has no words", nfiles,
                          nfiles == 1 ? "" : "s", files[0]);
    if (st == TS_OK) st = build_alphabet(&t, (size_t)vocab_size - TS_NSPECIAL);
    if (st == TS_OK) st = learn_merges(&t, vocab_size);
    if (st == TS_OK) st = write_vocab(&t, out_path);
    trainer_free(&t);
    return st;
}
