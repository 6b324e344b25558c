/*
 * test_data.c — the data readers (apps/data/):
 *  - BERT pretraining: masking statistics (15% of maskable tokens, 80/10/10, specials never
 *    masked, whole-word masking masks whole words), next-sentence pairs (about half NotNext,
 *    IsNext pairs truly consecutive), determinism, save / restore, streaming over files bigger
 *    than the shuffle window, errors; masked-LM accuracy
 *  - text classification: TSV / CSV / JSONL parsing (quoting, embedded newlines, CRLF), errors
 *    naming file and line, label maps, dedup before the train / test split, batches
 *    (and, when installed, the SpamAssassin corpus in data/spam/)
 *  - SQuAD: features (answer inside / outside windows, doc_stride), span decoding back to the
 *    original text, the official EM / F1 on hand-computed cases
 * Corpora and the vocabulary are generated into a temporary directory; the small hand-written
 * files are in tests/fixtures/data/.
 */
#include "tessera_apps.h"
#include "test_util.h"

#include <sys/stat.h>

#ifndef TS_SOURCE_DIR
#define TS_SOURCE_DIR "."
#endif
#define FIXTURES TS_SOURCE_DIR "/tests/fixtures/data"

static char tmpdir[256];
static char vocab_path[300];

/* ------------------------------------------------------------------ files and vocabulary */

static const char *tmp_path(const char *name) {
    static char buf[8][400];
    static int k;
    char *p = buf[k++ & 7];
    snprintf(p, 400, "%s/%s", tmpdir, name);
    return p;
}

static void write_file(const char *path, const char *text) {
    FILE *f = fopen(path, "wb");
    if (!f) {
        perror(path);
        exit(2);
    }
    fputs(text, f);
    fclose(f);
}

static const char *const stems[] = {"walk", "talk", "jump", "play", "read", "cook", "paint", "clean", "help", "open",
                                    "look", "call", "work", "rest", "climb", "dance", "fish", "farm", "kick", "wash"};
#define NSTEMS 20
static const char *const suffixes[] = {"ing", "ed", "s", "er"};
#define NUNIQUE 3000 /* tokens t0 .. t2999 */

static void write_vocab(void) {
    static const char *const words[] = {
        "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", ".", ",", "'", "?", "!", "-", "\"", ":",
        /* SQuAD fixtures */
        "the", "eiffel", "tower", "is", "in", "paris", "it", "was", "built", "18", "##89", "by", "gustave", "s",
        "company", "where", "when", "who", "what", "color", "a", "cafe", "au", "lait", "coffee", "with", "hot",
        "milk",
        /* classification fixtures */
        "free", "money", "now", "hello", "friend", "buy", "cheap", "pills", "meeting", "tomorrow", "say", "line",
        "one", "two", "plain", "text", "##ing", "##ed", "##s", "##er"};
    FILE *f = fopen(vocab_path, "wb");
    if (!f) {
        perror(vocab_path);
        exit(2);
    }
    for (size_t i = 0; i < sizeof words / sizeof *words; i++) fprintf(f, "%s\n", words[i]);
    for (int i = 0; i < NSTEMS; i++) fprintf(f, "%s\n", stems[i]);
    for (int i = 0; i < NUNIQUE; i++) fprintf(f, "t%d\n", i);
    fclose(f);
}

static ts_tokenizer *load_tok(void) {
    ts_tokenizer *tok = ts_tokenizer_load(vocab_path, 1);
    CHECK(tok != NULL, "ts_tokenizer_load: %s", ts_last_error());
    return tok;
}

/* A corpus of random words (a stem, often with a suffix: "walk ##ing"): ndocs documents of
 * [smin, smax] sentences of [wmin, wmax] words, spread over nfiles files named prefix0.txt ... */
static void write_word_corpus(const char *prefix, int nfiles, int ndocs, int smin, int smax, int wmin, int wmax,
                              uint64_t seed) {
    tu_rng r = tu_rng_seed(seed);
    FILE *f = NULL;
    int file = -1;
    for (int d = 0; d < ndocs; d++) {
        int want = (int)((int64_t)d * nfiles / ndocs);
        if (want != file) {
            if (f) fclose(f);
            char name[64];
            snprintf(name, sizeof name, "%s%d.txt", prefix, want);
            f = fopen(tmp_path(name), "wb");
            file = want;
        } else {
            fputs("\n", f); /* blank line between documents */
        }
        int ns = smin + (int)tu_randint(&r, smax - smin + 1);
        for (int s = 0; s < ns; s++) {
            int nw = wmin + (int)tu_randint(&r, wmax - wmin + 1);
            for (int w = 0; w < nw; w++) {
                fprintf(f, "%s%s", w ? " " : "", stems[tu_randint(&r, NSTEMS)]);
                if (tu_unif(&r) < 0.4) fputs(suffixes[tu_randint(&r, 4)], f);
            }
            fputs(".\n", f);
        }
    }
    fclose(f);
}

/* A corpus where every token is unique: token t<k> is the k-th of the corpus, so a token tells
 * its document and sentence. */
static int uniq_doc[NUNIQUE], uniq_sent[NUNIQUE], uniq_first[NUNIQUE], uniq_last[NUNIQUE], uniq_n;
static void write_unique_corpus(const char *prefix, int nfiles, int ndocs, uint64_t seed) {
    tu_rng r = tu_rng_seed(seed);
    int k = 0, sent = 0;
    FILE *f = NULL;
    int file = -1;
    for (int d = 0; d < ndocs; d++) {
        int want = d * nfiles / ndocs;
        if (want != file) {
            if (f) fclose(f);
            char name[64];
            snprintf(name, sizeof name, "%s%d.txt", prefix, want);
            f = fopen(tmp_path(name), "wb");
            file = want;
        } else {
            fputs("\n", f);
        }
        int ns = 2 + (int)tu_randint(&r, 4); /* 2..5 sentences of 3..7 tokens: at most 35 */
        for (int s = 0; s < ns; s++, sent++) {
            int nt = 3 + (int)tu_randint(&r, 5);
            for (int t = 0; t < nt; t++, k++) {
                if (k >= NUNIQUE) {
                    fprintf(stderr, "unique corpus too big\n");
                    exit(2);
                }
                uniq_doc[k] = d;
                uniq_sent[k] = sent;
                uniq_first[k] = t == 0;
                uniq_last[k] = t == nt - 1;
                fprintf(f, "%st%d", t ? " " : "", k);
            }
            fputs("\n", f);
        }
    }
    uniq_n = k;
    fclose(f);
}

/* ------------------------------------------------------------------ pretraining helpers */

typedef struct bufs {
    int B, T;
    int32_t *ids, *tt, *am, *labels, *nsp;
    ts_batch b;
} bufs;

static void bufs_init(bufs *x, int B, int T) {
    x->B = B;
    x->T = T;
    x->ids = calloc((size_t)B * T, 4);
    x->tt = calloc((size_t)B * T, 4);
    x->am = calloc((size_t)B * T, 4);
    x->labels = calloc((size_t)B * T, 4);
    x->nsp = calloc((size_t)B, 4);
    x->b = (ts_batch){.input_ids = x->ids, .token_type_ids = x->tt, .attention_mask = x->am,
                      .labels = x->labels, .next_sentence_label = x->nsp};
}

static void bufs_free(bufs *x) {
    free(x->ids);
    free(x->tt);
    free(x->am);
    free(x->labels);
    free(x->nsp);
}

/* One batch as a hash of every buffer (for determinism checks). */
static uint64_t batch_hash(const bufs *x) {
    uint64_t h = 1469598103934665603ull;
    const int32_t *arrs[5] = {x->ids, x->tt, x->am, x->labels, x->nsp};
    for (int a = 0; a < 5; a++) {
        size_t n = a == 4 ? (size_t)x->B : (size_t)x->B * x->T;
        for (size_t i = 0; i < n; i++) h = (h ^ (uint32_t)arrs[a][i]) * 1099511628211ull;
    }
    return h;
}

static ts_pretrain_opts word_opts(const char *const *files, int nfiles) {
    ts_pretrain_opts o = ts_pretrain_defaults();
    o.files = files;
    o.nfiles = nfiles;
    o.batch_size = 16;
    o.max_len = 64;
    o.shuffle_docs = 20;
    o.seed = 1234;
    return o;
}

static const char *word_files[3];
static const char *uniq_files[2];

/* ------------------------------------------------------------------ pretraining: masking */

static void check_masking(int whole_word) {
    ts_tokenizer *tok = load_tok();
    if (!tok) return;
    int32_t cls = ts_token_to_id(tok, "[CLS]"), sep = ts_token_to_id(tok, "[SEP]"), pad = ts_token_to_id(tok, "[PAD]"),
            mask = ts_token_to_id(tok, "[MASK]");
    ts_pretrain_opts o = word_opts(word_files, 3);
    o.whole_word = whole_word;
    ts_pretrain_reader *r = ts_pretrain_open(tok, &o);
    CHECK(r != NULL, "open: %s", ts_last_error());
    if (!r) return;
    bufs x;
    bufs_init(&x, o.batch_size, o.max_len);
    long maskable = 0, masked = 0, as_mask = 0, as_same = 0, as_random = 0, rows = 0, bad_rows = 0,
         special_hit = 0, split_words = 0, multi_words_masked = 0;
    int32_t *orig = malloc((size_t)o.max_len * 4);
    for (int step = 0; step < 60; step++) {
        int n = 0;
        CHECK_OK(ts_pretrain_next(r, &x.b, &n));
        CHECK(n == o.batch_size, "rows %d", n);
        for (int i = 0; i < n; i++, rows++) {
            const int32_t *ids = x.ids + i * x.T, *lab = x.labels + i * x.T;
            long m = 0, c = 0;
            for (int t = 0; t < x.T; t++) {
                orig[t] = lab[t] != -100 ? lab[t] : ids[t];
                int special = orig[t] == cls || orig[t] == sep || orig[t] == pad;
                if (special && (lab[t] != -100 || ids[t] != orig[t])) special_hit++;
                if (!special) c++;
                if (lab[t] == -100) continue;
                m++;
                if (ids[t] == mask) as_mask++;
                else if (ids[t] == lab[t]) as_same++;
                else as_random++;
            }
            maskable += c;
            masked += m;
            long want = lround(0.15 * (double)c);
            if (want < 1) want = 1;
            if (!whole_word && m != want) bad_rows++;
            if (whole_word && m > want) bad_rows++;
            /* words: a token and the ## pieces after it; masked all together or not at all (a
             * segment cut at the front may begin with a ## piece: that starts a word) */
            for (int t = 1; t < x.T; t++) {
                const char *s = ts_id_to_token(tok, orig[t]);
                if (!s || strncmp(s, "##", 2) != 0) continue;
                int w = t - 1; /* the word's first token */
                while (w > 0 && strncmp(ts_id_to_token(tok, orig[w]), "##", 2) == 0) w--;
                if (orig[w] == cls || orig[w] == sep) w++;
                int mixed = (lab[t] != -100) != (lab[w] != -100);
                if (mixed) split_words++;
                if (lab[t] != -100 && lab[w] != -100) multi_words_masked++;
            }
        }
    }
    double frac = (double)masked / (double)maskable;
    printf("    %s masking: %ld rows, %ld of %ld maskable tokens masked (%.4f): [MASK] %.3f, same %.3f, random %.3f\n",
           whole_word ? "whole-word" : "token", rows, masked, maskable, frac, (double)as_mask / masked,
           (double)as_same / masked, (double)as_random / masked);
    CHECK(bad_rows == 0, "%ld rows with a masked count off round(0.15 x maskable)", bad_rows);
    if (!whole_word) CHECK(fabs(frac - 0.15) < 0.01, "masked fraction %.4f", frac);
    else CHECK(frac > 0.12 && frac < 0.155, "whole-word masked fraction %.4f", frac);
    CHECK(fabs((double)as_mask / masked - 0.8) < 0.03, "[MASK] share %.3f", (double)as_mask / masked);
    CHECK(fabs((double)as_same / masked - 0.1) < 0.025, "unchanged share %.3f", (double)as_same / masked);
    CHECK(fabs((double)as_random / masked - 0.1) < 0.025, "random share %.3f", (double)as_random / masked);
    CHECK(special_hit == 0, "%ld special positions were masked or changed", special_hit);
    if (whole_word) {
        CHECK(split_words == 0, "%ld words were masked in part", split_words);
        CHECK(multi_words_masked > 100, "only %ld multi-piece words masked", multi_words_masked);
    } else {
        CHECK(split_words > 100, "token masking split only %ld words: is it masking whole words?", split_words);
    }
    free(orig);
    bufs_free(&x);
    ts_pretrain_close(r);
    ts_tokenizer_free(tok);
}

static void test_masking_stats(void) { check_masking(0); }
static void test_whole_word_masking(void) { check_masking(1); }

/* ------------------------------------------------------------------ pretraining: pairs */

/* Token index k of t<k> (-1 for other tokens). */
static int uniq_index(const ts_tokenizer *tok, int32_t id) {
    const char *s = ts_id_to_token(tok, id);
    if (!s || s[0] != 't' || !s[1]) return -1;
    char *end;
    long k = strtol(s + 1, &end, 10);
    return *end || k < 0 || k >= uniq_n ? -1 : (int)k;
}

/* One pass (one epoch) over the unique corpus: every IsNext pair is A = whole consecutive
 * sentences of one document and B = the sentences right after them; a NotNext B comes from
 * another document; every token is served in some A or IsNext B. */
static void test_nsp_pairs(void) {
    ts_tokenizer *tok = load_tok();
    if (!tok) return;
    ts_pretrain_opts o = ts_pretrain_defaults();
    o.files = uniq_files;
    o.nfiles = 2;
    o.batch_size = 8;
    o.max_len = 128; /* documents hold at most 35 tokens: no pair is ever cut */
    o.shuffle_docs = 7;
    o.short_seq_prob = 0;
    o.epochs = 1;
    o.seed = 99;
    ts_pretrain_reader *r = ts_pretrain_open(tok, &o);
    CHECK(r != NULL, "open: %s", ts_last_error());
    if (!r) return;
    bufs x;
    bufs_init(&x, o.batch_size, o.max_len);
    char *seen = calloc((size_t)uniq_n, 1);
    long isnext = 0, notnext = 0, bad = 0, total = 0;
    int n = 0, guard = 0, last_n = -1;
    int32_t seq[128];
    while (CHECK_OK(ts_pretrain_next(r, &x.b, &n)) == TS_OK && n > 0 && guard++ < 10000) {
        if (last_n >= 0 && last_n < o.batch_size) bad++; /* a short batch that was not the last */
        last_n = n;
        for (int i = 0; i < n; i++, total++) {
            const int32_t *ids = x.ids + i * x.T, *lab = x.labels + i * x.T, *tt = x.tt + i * x.T;
            int len = 0;
            for (int t = 0; t < x.T && x.am[i * x.T + t]; t++) len++;
            int na = 0, nb = 0; /* A = [1, 1 + na), B = [2 + na, 2 + na + nb) */
            while (1 + na < len && tt[1 + na] == 0) na++;
            na--; /* the [SEP] */
            nb = len - na - 3;
            for (int t = 0; t < len; t++) seq[t] = lab[t] != -100 ? lab[t] : ids[t];
            int ka[128], kb[128], ok = na >= 1 && nb >= 1;
            for (int t = 0; t < na && ok; t++) ok = (ka[t] = uniq_index(tok, seq[1 + t])) >= 0;
            for (int t = 0; t < nb && ok; t++) ok = (kb[t] = uniq_index(tok, seq[2 + na + t])) >= 0;
            for (int t = 1; t < na && ok; t++) ok = ka[t] == ka[t - 1] + 1; /* each side a contiguous run */
            for (int t = 1; t < nb && ok; t++) ok = kb[t] == kb[t - 1] + 1;
            if (!ok) {
                bad++;
                continue;
            }
            if (x.nsp[i] == 0) {
                isnext++;
                ok = uniq_first[ka[0]] && uniq_last[ka[na - 1]] && kb[0] == ka[na - 1] + 1 && uniq_last[kb[nb - 1]] &&
                     uniq_doc[kb[nb - 1]] == uniq_doc[ka[0]];
                for (int t = 0; t < na; t++) seen[ka[t]] = 1;
                for (int t = 0; t < nb; t++) seen[kb[t]] = 1;
            } else {
                notnext++;
                ok = x.nsp[i] == 1 && uniq_doc[kb[0]] != uniq_doc[ka[0]] && uniq_first[ka[0]] && uniq_last[ka[na - 1]] &&
                     uniq_first[kb[0]] && uniq_last[kb[nb - 1]] && uniq_doc[kb[0]] == uniq_doc[kb[nb - 1]];
                for (int t = 0; t < na; t++) seen[ka[t]] = 1;
            }
            if (!ok) bad++;
        }
    }
    long unseen = 0;
    for (int k = 0; k < uniq_n; k++) unseen += !seen[k];
    printf("    one epoch: %ld pairs (%ld IsNext, %ld NotNext), %d tokens\n", total, isnext, notnext, uniq_n);
    CHECK(bad == 0, "%ld pairs are not what they claim (or a short batch came early)", bad);
    CHECK(unseen == 0, "%ld corpus tokens never served in A or an IsNext B", unseen);
    CHECK(isnext > 30 && notnext > 30, "IsNext %ld, NotNext %ld", isnext, notnext);
    CHECK(n == 0, "the reader did not end after one epoch");
    /* after the end: zero rows, padding everywhere */
    CHECK_OK(ts_pretrain_next(r, &x.b, &n));
    CHECK(n == 0 && x.am[0] == 0 && x.labels[0] == -100 && x.nsp[0] == -100, "after the end: n %d", n);
    free(seen);
    bufs_free(&x);
    ts_pretrain_close(r);
    ts_tokenizer_free(tok);
}

/* Long documents: NotNext about half the time (Google's method gives a little more: a chunk of a
 * single sentence always takes a random next segment). */
static void test_nsp_ratio(void) {
    ts_tokenizer *tok = load_tok();
    if (!tok) return;
    write_word_corpus("long", 1, 60, 20, 40, 2, 5, 7);
    const char *files[1] = {tmp_path("long0.txt")};
    ts_pretrain_opts o = word_opts(files, 1);
    o.max_len = 40;
    ts_pretrain_reader *r = ts_pretrain_open(tok, &o);
    CHECK(r != NULL, "open: %s", ts_last_error());
    if (!r) return;
    bufs x;
    bufs_init(&x, o.batch_size, o.max_len);
    long ones = 0, total = 0, other = 0;
    for (int step = 0; step < 250; step++) {
        int n = 0;
        CHECK_OK(ts_pretrain_next(r, &x.b, &n));
        for (int i = 0; i < n; i++, total++) {
            ones += x.nsp[i] == 1;
            other += x.nsp[i] != 0 && x.nsp[i] != 1;
        }
    }
    double frac = (double)ones / (double)total;
    printf("    NotNext share %.4f of %ld pairs\n", frac, total);
    CHECK(other == 0, "%ld labels not 0 / 1", other);
    CHECK(frac > 0.46 && frac < 0.58, "NotNext share %.4f", frac);
    bufs_free(&x);
    ts_pretrain_close(r);
    ts_tokenizer_free(tok);
}

/* ------------------------------------------------------------------ pretraining: determinism, state */

static void read_hashes(ts_pretrain_reader *r, bufs *x, int nb, uint64_t *h) {
    for (int k = 0; k < nb; k++) {
        int n = 0;
        CHECK_OK(ts_pretrain_next(r, &x->b, &n));
        h[k] = batch_hash(x);
    }
}

static void test_determinism(void) {
    ts_tokenizer *tok = load_tok();
    if (!tok) return;
    ts_pretrain_opts o = word_opts(word_files, 3);
    o.whole_word = 1;
    uint64_t h1[30], h2[30], h3[30];
    bufs x;
    bufs_init(&x, o.batch_size, o.max_len);
    ts_pretrain_reader *r1 = ts_pretrain_open(tok, &o), *r2 = ts_pretrain_open(tok, &o);
    o.seed++;
    ts_pretrain_reader *r3 = ts_pretrain_open(tok, &o);
    CHECK(r1 && r2 && r3, "open: %s", ts_last_error());
    if (r1 && r2 && r3) {
        read_hashes(r1, &x, 30, h1);
        read_hashes(r2, &x, 30, h2);
        read_hashes(r3, &x, 30, h3);
        int same12 = 0, same13 = 0;
        for (int k = 0; k < 30; k++) same12 += h1[k] == h2[k], same13 += h1[k] == h3[k];
        CHECK(same12 == 30, "same seed: %d of 30 batches equal", same12);
        CHECK(same13 == 0, "different seed: %d of 30 batches equal", same13);
    }
    ts_pretrain_close(r1);
    ts_pretrain_close(r2);
    ts_pretrain_close(r3);
    bufs_free(&x);
    ts_tokenizer_free(tok);
}

/* Save after k batches, read on; a fresh reader restored from the state gives the same batches,
 * across window, file and epoch boundaries (epochs repeat without end here). */
static void test_save_restore(void) {
    ts_tokenizer *tok = load_tok();
    if (!tok) return;
    ts_pretrain_opts o = word_opts(word_files, 3);
    o.shuffle_docs = 9;
    bufs x;
    bufs_init(&x, o.batch_size, o.max_len);
    /* about 2 epochs of this corpus: saves land in many different windows */
    static const int saves[] = {0, 1, 3, 7, 20, 55, 90, 140};
    for (size_t s = 0; s < sizeof saves / sizeof *saves; s++) {
        ts_pretrain_reader *r = ts_pretrain_open(tok, &o);
        CHECK(r != NULL, "open: %s", ts_last_error());
        if (!r) break;
        uint64_t skip[200], after[12], again[12];
        read_hashes(r, &x, saves[s], skip);
        ts_pretrain_state st;
        CHECK_OK(ts_pretrain_save(r, &st));
        read_hashes(r, &x, 12, after);
        ts_pretrain_close(r);

        ts_pretrain_reader *q = ts_pretrain_open(tok, &o);
        CHECK_OK(ts_pretrain_restore(q, &st));
        read_hashes(q, &x, 12, again);
        int same = 0;
        for (int k = 0; k < 12; k++) same += after[k] == again[k];
        CHECK(same == 12, "restored after %d batches (epoch %llu window %llu file %lld offset %lld next %lld): %d of 12 equal",
              saves[s], (unsigned long long)st.epoch, (unsigned long long)st.window, (long long)st.file,
              (long long)st.offset, (long long)st.next, same);
        /* restoring the same reader again rewinds it to the state */
        CHECK_OK(ts_pretrain_restore(q, &st));
        read_hashes(q, &x, 1, again);
        CHECK(again[0] == after[0], "second restore of the same reader differs");
        ts_pretrain_close(q);
    }
    /* a state from other options is refused */
    ts_pretrain_reader *r = ts_pretrain_open(tok, &o);
    ts_pretrain_state st;
    CHECK_OK(ts_pretrain_save(r, &st));
    ts_pretrain_close(r);
    o.seed++;
    r = ts_pretrain_open(tok, &o);
    CHECK_STATUS(ts_pretrain_restore(r, &st), TS_ERR_ARG);
    CHECK_ERRMSG("other options");
    st.fingerprint = 0;
    ts_pretrain_close(r);
    bufs_free(&x);
    ts_tokenizer_free(tok);
}

/* A corpus far bigger than the window, in three files, one epoch: every document is read. */
static void test_streaming(void) {
    ts_tokenizer *tok = load_tok();
    if (!tok) return;
    ts_pretrain_opts o = word_opts(word_files, 3);
    o.shuffle_docs = 4;
    o.epochs = 2;
    o.batch_size = 7;
    ts_pretrain_reader *r = ts_pretrain_open(tok, &o);
    CHECK(r != NULL, "open: %s", ts_last_error());
    if (!r) return;
    bufs x;
    bufs_init(&x, o.batch_size, o.max_len);
    long total = 0, batches = 0;
    int n = 0, windows_seen = 0;
    uint64_t last_window = (uint64_t)-1, max_epoch = 0;
    ts_pretrain_state st = {0};
    while (CHECK_OK(ts_pretrain_next(r, &x.b, &n)) == TS_OK && n > 0 && batches < 100000) {
        total += n;
        batches++;
        ts_pretrain_save(r, &st);
        if (st.window != last_window) windows_seen++, last_window = st.window;
        if (n == o.batch_size && st.epoch > max_epoch) max_epoch = st.epoch;
    }
    CHECK(st.epoch == 2, "the last batch left the reader in epoch %llu", (unsigned long long)st.epoch);
    printf("    2 epochs: %ld pairs in %ld batches, %d window changes\n", total, batches, windows_seen);
    CHECK(windows_seen > 40, "only %d windows: is it reading all documents at once?", windows_seen);
    CHECK(max_epoch == 1, "epoch %llu", (unsigned long long)max_epoch);
    CHECK(total > 500, "%ld pairs", total);
    bufs_free(&x);
    ts_pretrain_close(r);
    ts_tokenizer_free(tok);
}

static void test_pretrain_errors(void) {
    ts_tokenizer *tok = load_tok();
    if (!tok) return;
    const char *missing[1] = {tmp_path("no-such-file.txt")};
    ts_pretrain_opts o = word_opts(missing, 1);
    CHECK(ts_pretrain_open(tok, &o) == NULL, "opened a missing file");
    CHECK_ERRMSG("no-such-file.txt");
    o = word_opts(word_files, 3);
    o.max_len = 4;
    CHECK(ts_pretrain_open(tok, &o) == NULL, "max_len 4 accepted");
    CHECK_ERRMSG("max_len");
    o = word_opts(word_files, 3);
    o.mask_prob = 1.5;
    CHECK(ts_pretrain_open(tok, &o) == NULL, "mask_prob 1.5 accepted");
    o = word_opts(NULL, 0);
    CHECK(ts_pretrain_open(tok, &o) == NULL, "no files accepted");
    CHECK(ts_pretrain_open(NULL, &o) == NULL, "NULL tokenizer accepted");
    /* files without any pair: empty, blank lines, one single-sentence document */
    write_file(tmp_path("empty.txt"), "");
    write_file(tmp_path("blank.txt"), "\n\n  \n");
    write_file(tmp_path("one.txt"), "walk talk jump.\n");
    const char *nothing[3] = {tmp_path("empty.txt"), tmp_path("blank.txt"), tmp_path("one.txt")};
    o = word_opts(nothing, 3);
    ts_pretrain_reader *r = ts_pretrain_open(tok, &o);
    CHECK(r != NULL, "open: %s", ts_last_error());
    bufs x;
    bufs_init(&x, o.batch_size, o.max_len);
    int n = -1;
    if (r) {
        CHECK_STATUS(ts_pretrain_next(r, &x.b, &n), TS_ERR_IO);
        CHECK_ERRMSG("no sentence pairs", "empty.txt");
        CHECK(n == 0, "rows %d", n);
    }
    ts_pretrain_close(r);
    /* binary junk and invalid UTF-8 never crash */
    char junk[4096];
    tu_rng g = tu_rng_seed(5);
    for (size_t i = 0; i < sizeof junk - 1; i++) junk[i] = (char)(1 + tu_randint(&g, 255));
    junk[sizeof junk - 1] = 0;
    write_file(tmp_path("junk.txt"), junk);
    const char *jf[2] = {tmp_path("junk.txt"), word_files[0]};
    o = word_opts(jf, 2);
    r = ts_pretrain_open(tok, &o);
    for (int k = 0; r && k < 5; k++) CHECK_OK(ts_pretrain_next(r, &x.b, &n));
    ts_pretrain_close(r);
    /* a vocabulary without [MASK] */
    write_file(tmp_path("nomask.txt"), "[PAD]\n[UNK]\n[CLS]\n[SEP]\nwalk\n");
    ts_tokenizer *t2 = ts_tokenizer_load(tmp_path("nomask.txt"), 1);
    o = word_opts(word_files, 3);
    CHECK(t2 && ts_pretrain_open(t2, &o) == NULL, "a vocabulary without [MASK] accepted");
    CHECK_ERRMSG("[MASK]");
    ts_tokenizer_free(t2);
    bufs_free(&x);
    ts_tokenizer_free(tok);
}

static void test_mlm_accuracy(void) {
    /* logits [2, 3, 4]: argmax per row 2, 0, 3, 1, 1, 2 */
    float lg[24] = {0, 1, 5, 2, /**/ 9, 1, 1, 1, /**/ 0, 0, 0, 1, /**/ 0, 3, 2, 1, /**/ 1, 2, 1, 1, /**/ 0, 0, 7, 1};
    ts_tensor *t = ts_tensor_from(TS_F32, DIMS(2, 3, 4), lg);
    int32_t labels[6] = {2, -100, 1, 1, -100, 2};
    int64_t c = 0, n = 0;
    CHECK_OK(ts_mlm_accuracy(t, labels, &c, &n));
    CHECK(c == 3 && n == 4, "correct %lld of %lld, expected 3 of 4", (long long)c, (long long)n);
    CHECK_OK(ts_mlm_accuracy(t, labels, &c, &n)); /* accumulates */
    CHECK(c == 6 && n == 8, "accumulated %lld of %lld", (long long)c, (long long)n);
    labels[0] = 4;
    CHECK_STATUS(ts_mlm_accuracy(t, labels, &c, &n), TS_ERR_RUNTIME);
    ts_tensor *i32 = ts_tensor_new(TS_I32, DIMS(2, 3));
    CHECK_STATUS(ts_mlm_accuracy(i32, labels, &c, &n), TS_ERR_DTYPE);
    ts_tensor_free(i32);
    ts_tensor_free(t);
}

/* ------------------------------------------------------------------ text classification */

static void expect_row(const ts_text_dataset *d, int64_t i, const char *text, const char *label) {
    const char *t = NULL;
    int32_t l = -1;
    CHECK_OK(ts_text_dataset_get(d, i, &t, NULL, &l));
    CHECK(t && strcmp(t, text) == 0, "row %lld text \"%s\", expected \"%s\"", (long long)i, t ? t : "(null)", text);
    const char *ln = ts_text_dataset_label_name(d, l);
    CHECK(ln && strcmp(ln, label) == 0, "row %lld label \"%s\", expected \"%s\"", (long long)i, ln ? ln : "(null)",
          label);
}

static void test_tsv(void) {
    ts_text_opts o = {.text_column = "body", .label_column = "label"};
    ts_text_dataset *d = ts_text_dataset_load(FIXTURES "/cls.tsv", &o);
    CHECK(d != NULL, "load: %s", ts_last_error());
    if (!d) return;
    CHECK(ts_text_dataset_size(d) == 5, "%lld rows", (long long)ts_text_dataset_size(d));
    CHECK(ts_text_dataset_num_labels(d) == 2, "%d labels", ts_text_dataset_num_labels(d));
    CHECK(strcmp(ts_text_dataset_label_name(d, 0), "ham") == 0, "label 0 is %s", ts_text_dataset_label_name(d, 0));
    expect_row(d, 0, "free money now", "spam");
    expect_row(d, 2, "buy cheap pills now", "spam");
    expect_row(d, 4, "hello friend", "ham");
    CHECK(ts_text_dataset_label_name(d, 2) == NULL, "label 2 exists");
    CHECK_STATUS(ts_text_dataset_get(d, 5, NULL, NULL, NULL), TS_ERR_ARG);
    ts_text_dataset_free(d);
    /* a given label list fixes the ids */
    const char *labels[] = {"spam", "ham"};
    o.labels = labels;
    o.nlabels = 2;
    d = ts_text_dataset_load(FIXTURES "/cls.tsv", &o);
    CHECK(d && strcmp(ts_text_dataset_label_name(d, 0), "spam") == 0, "given labels: %s", ts_last_error());
    int32_t l = -1;
    if (d) CHECK_OK(ts_text_dataset_get(d, 0, NULL, NULL, &l));
    CHECK(l == 0, "spam is id %d", l);
    ts_text_dataset_free(d);
    const char *only[] = {"ham"};
    o.labels = only;
    o.nlabels = 1;
    CHECK(ts_text_dataset_load(FIXTURES "/cls.tsv", &o) == NULL, "a label outside the list accepted");
    CHECK_ERRMSG("cls.tsv:2:", "\"spam\"");
    const char *twice[] = {"ham", "spam", "ham"};
    o.labels = twice;
    o.nlabels = 3;
    CHECK(ts_text_dataset_load(FIXTURES "/cls.tsv", &o) == NULL, "a label given twice accepted");
    CHECK_ERRMSG("twice");
    /* no header: label<TAB>text by position */
    write_file(tmp_path("nohead.tsv"), "pos\tgood film\nneg\tbad film\n");
    d = ts_text_dataset_load(tmp_path("nohead.tsv"), &(ts_text_opts){.no_header = 1});
    CHECK(d && ts_text_dataset_size(d) == 2, "no header: %s", ts_last_error());
    if (d) expect_row(d, 1, "bad film", "neg");
    ts_text_dataset_free(d);
    /* integer labels sort by value */
    write_file(tmp_path("ints.tsv"), "text\tlabel\na\t10\nb\t2\nc\t1\n");
    d = ts_text_dataset_load(tmp_path("ints.tsv"), NULL);
    CHECK(d && strcmp(ts_text_dataset_label_name(d, 0), "1") == 0 && strcmp(ts_text_dataset_label_name(d, 2), "10") == 0,
          "integer label order");
    ts_text_dataset_free(d);
}

static void test_csv(void) {
    ts_text_dataset *d = ts_text_dataset_load(FIXTURES "/cls.csv", NULL);
    CHECK(d != NULL, "load: %s", ts_last_error());
    if (!d) return;
    CHECK(ts_text_dataset_size(d) == 4, "%lld rows", (long long)ts_text_dataset_size(d));
    expect_row(d, 0, "hello, friend", "ham");
    expect_row(d, 1, "say \"free\" money", "spam");
    expect_row(d, 2, "line one\r\nline two", "ham");
    expect_row(d, 3, "plain text", "spam");
    ts_text_dataset_free(d);
    /* pairs: a second text column */
    write_file(tmp_path("pairs.csv"), "premise,hypothesis,label\n\"walk, talk\",jump,yes\nread,cook,no\n");
    d = ts_text_dataset_load(tmp_path("pairs.csv"),
                             &(ts_text_opts){.text_column = "premise", .text_b_column = "hypothesis"});
    CHECK(d != NULL, "pairs: %s", ts_last_error());
    if (d) {
        const char *a, *b;
        CHECK_OK(ts_text_dataset_get(d, 0, &a, &b, NULL));
        CHECK(strcmp(a, "walk, talk") == 0 && strcmp(b, "jump") == 0, "pair %s | %s", a, b);
    }
    ts_text_dataset_free(d);
}

static void test_jsonl(void) {
    ts_text_dataset *d = ts_text_dataset_load(FIXTURES "/cls.jsonl", NULL);
    CHECK(d != NULL, "load: %s", ts_last_error());
    if (!d) return;
    CHECK(ts_text_dataset_size(d) == 3, "%lld rows", (long long)ts_text_dataset_size(d));
    expect_row(d, 0, "free money now", "1");
    expect_row(d, 1, "hello friend", "0");
    expect_row(d, 2, "buy cheap", "1");
    ts_text_dataset_free(d);
}

static void test_cls_errors(void) {
    write_file(tmp_path("short.tsv"), "id\ttext\tlabel\n1\tok\tham\n2\tmissing one\n");
    CHECK(ts_text_dataset_load(tmp_path("short.tsv"), NULL) == NULL, "short row accepted");
    CHECK_ERRMSG("short.tsv:3:", "expected 3 columns, found 2");
    CHECK(ts_text_dataset_load(FIXTURES "/cls.tsv", &(ts_text_opts){.text_column = "text"}) == NULL,
          "missing column accepted");
    CHECK_ERRMSG("cls.tsv:1:", "\"text\"", "body");
    /* a CSV error is counted on physical lines, embedded newlines included */
    write_file(tmp_path("bad.csv"), "label,text\nham,\"a\nb\nc\"\nspam,ok,extra\n");
    CHECK(ts_text_dataset_load(tmp_path("bad.csv"), NULL) == NULL, "extra column accepted");
    CHECK_ERRMSG("bad.csv:5:", "expected 2 columns, found 3");
    write_file(tmp_path("open.csv"), "label,text\nham,fine\nspam,\"never closed\nmore\n");
    CHECK(ts_text_dataset_load(tmp_path("open.csv"), NULL) == NULL, "unclosed quote accepted");
    CHECK_ERRMSG("open.csv:3:", "not closed");
    write_file(tmp_path("after.csv"), "label,text\nham,\"quoted\"junk\n");
    CHECK(ts_text_dataset_load(tmp_path("after.csv"), NULL) == NULL, "junk after a quote accepted");
    CHECK_ERRMSG("after.csv:2:");
    write_file(tmp_path("bad.jsonl"), "{\"text\": \"a\", \"label\": \"x\"}\n{\"text\": \"b\", \"label\": }\n");
    CHECK(ts_text_dataset_load(tmp_path("bad.jsonl"), NULL) == NULL, "bad JSON accepted");
    CHECK_ERRMSG("bad.jsonl:2:", "JSON");
    write_file(tmp_path("notext.jsonl"), "{\"text\": \"a\", \"label\": \"x\"}\n\n{\"body\": \"b\", \"label\": \"y\"}\n");
    CHECK(ts_text_dataset_load(tmp_path("notext.jsonl"), NULL) == NULL, "missing text accepted");
    CHECK_ERRMSG("notext.jsonl:3:", "\"text\"");
    write_file(tmp_path("arr.jsonl"), "[1, 2]\n");
    CHECK(ts_text_dataset_load(tmp_path("arr.jsonl"), NULL) == NULL, "an array line accepted");
    CHECK_ERRMSG("arr.jsonl:1:");
    CHECK(ts_text_dataset_load(tmp_path("none.tsv"), NULL) == NULL, "missing file");
    CHECK_ERRMSG("none.tsv");
    CHECK(ts_text_dataset_load(tmp_path("data.xyz"), NULL) == NULL, "unknown extension");
    CHECK_ERRMSG("format");
    write_file(tmp_path("empty.csv"), "");
    CHECK(ts_text_dataset_load(tmp_path("empty.csv"), NULL) == NULL, "empty file accepted");
    CHECK_ERRMSG("empty");
    /* binary junk never crashes */
    char junk[2048];
    tu_rng g = tu_rng_seed(11);
    for (size_t i = 0; i < sizeof junk - 1; i++) junk[i] = (char)(1 + tu_randint(&g, 255));
    junk[sizeof junk - 1] = 0;
    static const char *const names[] = {"junk.csv", "junk.tsv", "junk.jsonl"};
    for (int k = 0; k < 3; k++) {
        write_file(tmp_path(names[k]), junk);
        ts_text_dataset_free(ts_text_dataset_load(tmp_path(names[k]), &(ts_text_opts){.no_header = 1}));
        ts_text_dataset_free(ts_text_dataset_load(tmp_path(names[k]), NULL));
    }
}

/* 300 rows, a third of them repeating an earlier text: no text of the test half is in the train
 * half, the split is seeded, and the counts add up. */
static void test_dedup_split(void) {
    FILE *f = fopen(tmp_path("dups.tsv"), "wb");
    fputs("text\tlabel\n", f);
    for (int i = 0; i < 300; i++) fprintf(f, "mail number %d\t%s\n", i % 3 == 2 ? i / 3 : i, i % 2 ? "spam" : "ham");
    fclose(f);
    ts_text_dataset *d = ts_text_dataset_load(tmp_path("dups.tsv"), NULL);
    CHECK(d != NULL, "load: %s", ts_last_error());
    if (!d) return;
    int distinct = 0;
    {
        char seen[300] = {0};
        for (int i = 0; i < 300; i++) {
            int k = i % 3 == 2 ? i / 3 : i;
            distinct += !seen[k];
            seen[k] = 1;
        }
    }
    ts_text_dataset *train = NULL, *test = NULL, *train2 = NULL, *test2 = NULL;
    int64_t ndup = -1;
    CHECK_OK(ts_text_dataset_split(d, 0.2, 42, &train, &test, &ndup));
    CHECK_OK(ts_text_dataset_split(d, 0.2, 42, &train2, &test2, NULL));
    if (!train || !test || !train2 || !test2) return;
    int64_t ntr = ts_text_dataset_size(train), nte = ts_text_dataset_size(test);
    CHECK(ndup == 300 - distinct, "%lld duplicates, expected %d", (long long)ndup, 300 - distinct);
    CHECK(ntr + nte == distinct, "train %lld + test %lld != %d distinct", (long long)ntr, (long long)nte, distinct);
    CHECK(nte == (int64_t)llround(0.2 * distinct), "test has %lld rows", (long long)nte);
    long leaks = 0, same_order = 0;
    for (int64_t i = 0; i < nte; i++) {
        const char *t, *t2;
        ts_text_dataset_get(test, i, &t, NULL, NULL);
        ts_text_dataset_get(test2, i, &t2, NULL, NULL);
        same_order += strcmp(t, t2) == 0;
        for (int64_t j = 0; j < ntr; j++) {
            const char *u;
            ts_text_dataset_get(train, j, &u, NULL, NULL);
            leaks += strcmp(t, u) == 0;
        }
    }
    CHECK(leaks == 0, "%ld test texts are also in train", leaks);
    CHECK(same_order == nte, "the same seed split differently");
    CHECK(ts_text_dataset_num_labels(test) == 2, "the test half lost the label map");
    ts_text_dataset_free(train2);
    ts_text_dataset_free(test2);
    CHECK_OK(ts_text_dataset_split(d, 0.2, 43, &train2, &test2, NULL));
    const char *a, *b;
    ts_text_dataset_get(test, 0, &a, NULL, NULL);
    ts_text_dataset_get(test2, 0, &b, NULL, NULL);
    int differs = strcmp(a, b) != 0;
    ts_text_dataset_get(test, 1, &a, NULL, NULL);
    ts_text_dataset_get(test2, 1, &b, NULL, NULL);
    differs |= strcmp(a, b) != 0;
    CHECK(differs, "another seed gave the same split");
    ts_text_dataset_free(train2);
    ts_text_dataset_free(test2);
    CHECK_STATUS(ts_text_dataset_split(d, 1.5, 1, &train2, &test2, NULL), TS_ERR_ARG);
    CHECK(!train2 && !test2, "outputs of a failed split are not NULL");
    /* in-place dedup keeps the first of each text, in order */
    int64_t removed = -1;
    CHECK_OK(ts_text_dataset_dedup(d, &removed));
    CHECK(removed == 300 - distinct && ts_text_dataset_size(d) == distinct, "dedup removed %lld", (long long)removed);
    expect_row(d, 0, "mail number 0", "ham");
    ts_text_dataset_free(train);
    ts_text_dataset_free(test);
    ts_text_dataset_free(train2);
    ts_text_dataset_free(test2);
    ts_text_dataset_free(d);
}

/* The SpamAssassin corpus as scripts/install-deps.sh installs it (data/spam/spam.tsv, skipped
 * when missing): duplicate bodies are dropped before the split, so no test text is in train. */
static void test_spam_corpus(void) {
    const char *path = TS_SOURCE_DIR "/data/spam/spam.tsv";
    if (access(path, R_OK) != 0) {
        tu_skip_part("%s is missing (run: bash scripts/install-deps.sh)", path);
        return;
    }
    ts_text_dataset *d = ts_text_dataset_load(path, NULL);
    CHECK(d != NULL, "load: %s", ts_last_error());
    if (!d) return;
    ts_text_dataset *train = NULL, *test = NULL;
    int64_t ndup = 0;
    CHECK_OK(ts_text_dataset_split(d, 0.2, 1, &train, &test, &ndup));
    if (!train || !test) return;
    int64_t ntr = ts_text_dataset_size(train), nte = ts_text_dataset_size(test), leaks = 0;
    for (int64_t i = 0; i < nte; i++) {
        const char *t;
        ts_text_dataset_get(test, i, &t, NULL, NULL);
        for (int64_t j = 0; j < ntr; j++) {
            const char *u;
            ts_text_dataset_get(train, j, &u, NULL, NULL);
            leaks += strcmp(t, u) == 0;
        }
    }
    printf("    %lld mails, %lld duplicates dropped, train %lld, test %lld, labels %s / %s\n",
           (long long)ts_text_dataset_size(d), (long long)ndup, (long long)ntr, (long long)nte,
           ts_text_dataset_label_name(d, 0), ts_text_dataset_label_name(d, 1));
    CHECK(ndup > 0, "no duplicates found");
    CHECK(ntr + nte + ndup == ts_text_dataset_size(d), "counts do not add up");
    CHECK(leaks == 0, "%lld test mails are in train", (long long)leaks);
    ts_text_dataset_free(train);
    ts_text_dataset_free(test);
    ts_text_dataset_free(d);
}

static void test_cls_batch(void) {
    ts_tokenizer *tok = load_tok();
    ts_text_dataset *d = ts_text_dataset_load(FIXTURES "/cls.tsv", &(ts_text_opts){.text_column = "body"});
    CHECK(tok && d, "load: %s", ts_last_error());
    if (!tok || !d) return;
    enum { B = 4, T = 8 };
    int32_t ids[B * T], tt[B * T], am[B * T], labels[B], ref[T], rtt[T], ram[T];
    ts_batch b = {.input_ids = ids, .token_type_ids = tt, .attention_mask = am, .labels = labels};
    int64_t rows[3] = {2, 0, 4};
    CHECK_OK(ts_text_dataset_batch(d, tok, rows, 3, B, T, &b));
    for (int i = 0; i < 3; i++) {
        const char *t;
        int32_t l;
        ts_text_dataset_get(d, rows[i], &t, NULL, &l);
        CHECK_OK(ts_encode(tok, t, NULL, T, ref, rtt, ram, NULL));
        CHECK(memcmp(ids + i * T, ref, sizeof ref) == 0 && memcmp(am + i * T, ram, sizeof ram) == 0 &&
                  memcmp(tt + i * T, rtt, sizeof rtt) == 0,
              "row %d differs from ts_encode", i);
        CHECK(labels[i] == l, "row %d label %d, expected %d", i, labels[i], l);
    }
    CHECK(labels[3] == TS_IGNORE_INDEX && am[3 * T] == 0 && ids[3 * T] == ts_token_to_id(tok, "[PAD]"),
          "padding row");
    CHECK_STATUS(ts_text_dataset_batch(d, tok, rows, 5, B, T, &b), TS_ERR_ARG);
    rows[0] = 99;
    CHECK_STATUS(ts_text_dataset_batch(d, tok, rows, 3, B, T, &b), TS_ERR_ARG);
    ts_text_dataset_free(d);
    ts_tokenizer_free(tok);
}

static void test_permutation(void) {
    int64_t a[100], b[100], c[100];
    ts_permutation(7, 100, a);
    ts_permutation(7, 100, b);
    ts_permutation(8, 100, c);
    char seen[100] = {0};
    int ok = 1, fixed = 0;
    for (int i = 0; i < 100; i++) {
        ok &= a[i] >= 0 && a[i] < 100 && !seen[a[i]];
        if (a[i] >= 0 && a[i] < 100) seen[a[i]] = 1;
        fixed += a[i] == i;
    }
    CHECK(ok, "not a permutation");
    CHECK(memcmp(a, b, sizeof a) == 0, "same seed, different permutation");
    CHECK(memcmp(a, c, sizeof a) != 0, "different seed, same permutation");
    CHECK(fixed < 10, "%d fixed points", fixed);
}

/* ------------------------------------------------------------------ SQuAD */

/* The fixture has an answer at a wrong offset (q3) and one that is not in its context (q4), so it
 * loads only with relocate_answers. */
static ts_squad *load_squad(const ts_tokenizer *tok, const ts_squad_opts *o) {
    ts_squad_opts r = o ? *o : (ts_squad_opts){0};
    r.relocate_answers = 1;
    ts_squad *s = ts_squad_load(FIXTURES "/squad_tiny.json", tok, &r);
    CHECK(s != NULL, "ts_squad_load: %s", ts_last_error());
    if (s) CHECK(ts_squad_num_relocated(s) == 2, "%lld answers relocated, expected 2 (q3, q4)",
                 (long long)ts_squad_num_relocated(s));
    return s;
}

/* Row of feature f. */
static void squad_row(const ts_squad *s, int64_t f, int T, int32_t *ids, int32_t *tt, int32_t *sp, int32_t *ep) {
    int32_t am[512];
    ts_batch b = {.input_ids = ids, .token_type_ids = tt, .attention_mask = am, .start_positions = sp,
                  .end_positions = ep};
    CHECK_OK(ts_squad_batch(s, &f, 1, 1, &b));
    (void)T;
}

static void test_squad_features(void) {
    ts_tokenizer *tok = load_tok();
    if (!tok) return;
    /* T = 16, query cut to 5 pieces: 8 context pieces per window, windows 3 pieces apart. The
     * first context has 20 pieces: the(0) eiffel tower is in paris(5) .(6) it was built(9) in
     * 18(11) ##89(12) by gustave(14) eiffel(15) ' s company .(19) -> windows at 0, 3, 6, 9, 12. */
    ts_squad_opts o = {.max_seq_len = 16, .doc_stride = 3, .max_query_len = 5};
    ts_squad *s = load_squad(tok, &o);
    if (!s) return;
    CHECK(ts_squad_num_examples(s) == 6, "%lld examples", (long long)ts_squad_num_examples(s));
    ts_squad_example ex;
    struct {
        int example, nfeat;
        int sp[5], ep[5];
    } want[] = {
        /* q1 Paris = piece 5; query "where is the eiffel tower" (cut from 6): row offset 7 */
        {0, 5, {12, 9, 0, 0, 0}, {12, 9, 0, 0, 0}},
        /* q2 1889 = pieces 11..12, query of 5 */
        {1, 5, {0, 0, 12, 9, 0}, {0, 0, 13, 10, 0}},
        /* q3 "Gustave Eiffel" at a wrong offset: found at pieces 14..15; query of 4: 9 per window,
         * windows at 0, 3, 6, 9, 12 */
        {2, 5, {0, 0, 0, 11, 8}, {0, 0, 0, 12, 9}},
        /* q4 "brown" is not in the context: left out of the loss */
        {3, 5, {-100, -100, -100, -100, -100}, {-100, -100, -100, -100, -100}},
        /* q5: second context "a cafe au lait is coffee with hot milk ." (10 pieces), answer
         * 5..8, windows at 0 and 3 */
        {4, 2, {0, 9}, {0, 12}},
    };
    int64_t total = 0;
    for (size_t k = 0; k < sizeof want / sizeof *want; k++) {
        CHECK_OK(ts_squad_get(s, want[k].example, &ex));
        CHECK(ex.nfeatures == want[k].nfeat, "example %s: %d features, expected %d", ex.id, ex.nfeatures,
              want[k].nfeat);
        total += ex.nfeatures;
        for (int j = 0; j < ex.nfeatures && j < want[k].nfeat; j++) {
            int32_t ids[16], tt[16], sp, ep;
            squad_row(s, ex.first_feature + j, 16, ids, tt, &sp, &ep);
            CHECK(sp == want[k].sp[j] && ep == want[k].ep[j], "example %s window %d: positions %d..%d, expected %d..%d",
                  ex.id, j, sp, ep, want[k].sp[j], want[k].ep[j]);
            if (sp > 0) { /* the answer's pieces are where the positions say */
                const char *first = ts_id_to_token(tok, ids[sp]), *last = ts_id_to_token(tok, ids[ep]);
                CHECK(tt[sp] == 1 && tt[ep] == 1, "answer outside the context segment");
                if (k == 0) CHECK(strcmp(first, "paris") == 0, "start piece %s", first);
                if (k == 1) CHECK(strcmp(first, "18") == 0 && strcmp(last, "##89") == 0, "pieces %s %s", first, last);
                if (k == 2) CHECK(strcmp(first, "gustave") == 0 && strcmp(last, "eiffel") == 0, "pieces %s %s", first, last);
            }
        }
    }
    /* the exact row of q1's second window: [CLS] where is the eiffel tower [SEP] pieces 3..10 [SEP] */
    CHECK_OK(ts_squad_get(s, 0, &ex));
    int32_t ids[16], tt[16], sp, ep, expect[16];
    squad_row(s, ex.first_feature + 1, 16, ids, tt, &sp, &ep);
    static const char *const row[] = {"[CLS]", "where", "is", "the", "eiffel", "tower", "[SEP]", "is",
                                      "in", "paris", ".", "it", "was", "built", "in", "[SEP]"};
    for (int t = 0; t < 16; t++) expect[t] = ts_token_to_id(tok, row[t]);
    CHECK(memcmp(ids, expect, sizeof ids) == 0, "q1 window 1 row differs");
    int types_ok = 1;
    for (int t = 0; t < 16; t++) types_ok &= tt[t] == (t >= 7);
    CHECK(types_ok, "token types of q1 window 1");
    CHECK_OK(ts_squad_get(s, 5, &ex));
    total += ex.nfeatures;
    CHECK(total == ts_squad_num_features(s), "features %lld, examples' sum %lld", (long long)ts_squad_num_features(s),
          (long long)total);
    CHECK(ex.nanswers == 1 && strcmp(ex.answers[0], "Café au lait") == 0 && ex.answer_starts[0] == 2,
          "q6 answers");
    /* padding rows, bad feature index */
    int32_t bids[2 * 16], bsp[2], bep[2];
    ts_batch b = {.input_ids = bids, .start_positions = bsp, .end_positions = bep};
    int64_t f0 = 0, bad = 999;
    CHECK_OK(ts_squad_batch(s, &f0, 1, 2, &b));
    CHECK(bsp[1] == -100 && bids[16] == ts_token_to_id(tok, "[PAD]"), "padding row");
    CHECK_STATUS(ts_squad_batch(s, &bad, 1, 2, &b), TS_ERR_ARG);
    ts_squad_free(s);
    /* defaults: one window per example */
    s = load_squad(tok, NULL);
    if (s) CHECK(ts_squad_num_features(s) == 6, "%lld features with defaults", (long long)ts_squad_num_features(s));
    ts_squad_free(s);
    ts_tokenizer_free(tok);
}

static void test_squad_errors(void) {
    ts_tokenizer *tok = load_tok();
    if (!tok) return;
    write_file(tmp_path("bad1.json"), "{\"data\": [\n  {\"paragraphs\": [\n    {\"context\": \"x\",, }\n]}]}\n");
    CHECK(ts_squad_load(tmp_path("bad1.json"), tok, NULL) == NULL, "invalid JSON accepted");
    CHECK_ERRMSG("bad1.json:3:", "JSON");
    write_file(tmp_path("bad2.json"),
               "{\"data\": [{\"paragraphs\": [{\"context\": \"x\", \"qas\": [{\"id\": \"a\", \"answers\": []}]}]}]}");
    CHECK(ts_squad_load(tmp_path("bad2.json"), tok, NULL) == NULL, "a question-less qa accepted");
    CHECK_ERRMSG("data[0].paragraphs[0].qas[0]", "question");
    write_file(tmp_path("bad3.json"), "{\"version\": \"1.1\"}");
    CHECK(ts_squad_load(tmp_path("bad3.json"), tok, NULL) == NULL, "no data accepted");
    CHECK_ERRMSG("\"data\"");
    write_file(tmp_path("bad4.json"), "{\"data\": [{\"paragraphs\": [{\"context\": \"x\", \"qas\": [{\"id\": \"a\", "
                                      "\"question\": \"q\", \"answers\": [{\"text\": \"x\", \"answer_start\": -3}]}]}]}]}");
    CHECK(ts_squad_load(tmp_path("bad4.json"), tok, NULL) == NULL, "negative answer_start accepted");
    CHECK_ERRMSG("answers[0]", "answer_start");
    CHECK(ts_squad_load(FIXTURES "/squad_tiny.json", tok, &(ts_squad_opts){.max_seq_len = 32, .max_query_len = 40}) == NULL,
          "max_query_len > max_seq_len accepted");
    CHECK_ERRMSG("max_seq_len");
    /* answer_start must point at the answer's text (in characters), unless answers are relocated */
    CHECK(ts_squad_load(FIXTURES "/squad_tiny.json", tok, NULL) == NULL, "an answer at a wrong offset accepted");
    CHECK_ERRMSG("squad_tiny.json: data[0].paragraphs[0].qas[2] (id \"q3\"): answers[0]: answer_start 0",
                 "\"Gustave Eiffel\", which occurs at character 54", "ts_squad_opts.relocate_answers");
    const char *ctx67 = "The quick brown fox jumps over the lazy dog while the cat sleeps ok";
    char doc[512];
    snprintf(doc, sizeof doc, "{\"data\": [{\"paragraphs\": [{\"context\": \"%s\", \"qas\": [{\"id\": \"far\", "
             "\"question\": \"q\", \"answers\": [{\"text\": \"fox\", \"answer_start\": 10000}]}]}]}]}", ctx67);
    write_file(tmp_path("bad5.json"), doc);
    CHECK(ts_squad_load(tmp_path("bad5.json"), tok, NULL) == NULL, "answer_start past the context accepted");
    CHECK_ERRMSG("(id \"far\")", "answer_start 10000 is past the end of the context (67 characters)",
                 "occurs at character 16");
    ts_squad *rs = ts_squad_load(tmp_path("bad5.json"), tok, &(ts_squad_opts){.relocate_answers = 1});
    CHECK(rs && ts_squad_num_relocated(rs) == 1, "relocated: %s", rs ? "count" : ts_last_error());
    ts_squad_free(rs);
    snprintf(doc, sizeof doc, "{\"data\": [{\"paragraphs\": [{\"context\": \"%s\", \"qas\": [{\"id\": \"elsewhere\", "
             "\"question\": \"q\", \"answers\": [{\"text\": \"fox\", \"answer_start\": 4}]}]}]}]}", ctx67);
    write_file(tmp_path("bad6.json"), doc);
    CHECK(ts_squad_load(tmp_path("bad6.json"), tok, NULL) == NULL, "answer_start at other text accepted");
    CHECK_ERRMSG("(id \"elsewhere\")", "answer_start 4 is where the context has \"quick brown fox", "character 16");
    snprintf(doc, sizeof doc, "{\"data\": [{\"paragraphs\": [{\"context\": \"%s\", \"qas\": [{\"id\": \"nowhere\", "
             "\"question\": \"q\", \"answers\": [{\"text\": \"horse\", \"answer_start\": 4}]}]}]}]}", ctx67);
    write_file(tmp_path("bad7.json"), doc);
    CHECK(ts_squad_load(tmp_path("bad7.json"), tok, NULL) == NULL, "an answer not in its context accepted");
    CHECK_ERRMSG("(id \"nowhere\")", "\"horse\" does not occur in its context");
    CHECK(ts_squad_load(tmp_path("none.json"), tok, NULL) == NULL, "missing file");
    CHECK_ERRMSG("none.json");
    ts_tokenizer_free(tok);
}

static void test_squad_metric(void) {
    struct {
        const char *pred, *truth;
        double em, f1;
    } cases[] = {
        {"the Eiffel Tower", "Eiffel Tower", 1, 1},
        {"Eiffel Tower in Paris", "Eiffel Tower", 0, 2 * 0.5 * 1 / 1.5},
        {"Paris!", "paris", 1, 1},
        {"An apple a day", "apple  day", 1, 1},
        {"theater", "ater", 0, 0},
        {"x y y", "y y z", 0, 2.0 / 3},
        {"", "x", 0, 0},
        {"ÉCOLE", "école", 1, 1},
        {"the", "a", 1, 0}, /* both normalize to nothing: v1.1 gives EM 1, F1 0 */
        {"in 1889", "1889", 0, 2 * 0.5 * 1 / 1.5},
        {"Gustave (Eiffel)", "gustave eiffel", 1, 1},
    };
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        double em = -1, f1 = -1;
        const char *truths[1] = {cases[k].truth};
        ts_squad_metric(cases[k].pred, truths, 1, &em, &f1);
        double want_em = cases[k].em;
        CHECK(em == want_em && fabs(f1 - cases[k].f1) < 1e-12, "\"%s\" vs \"%s\": EM %g F1 %g, expected %g %g",
              cases[k].pred, cases[k].truth, em, f1, want_em, cases[k].f1);
    }
    /* the best over several ground truths */
    const char *truths[2] = {"in 1889", "1889"};
    double em, f1;
    ts_squad_metric("1889", truths, 2, &em, &f1);
    CHECK(em == 1 && f1 == 1, "max over truths: %g %g", em, f1);
    ts_squad_metric(NULL, truths, 2, &em, &f1);
    CHECK(em == 0 && f1 == 0, "NULL prediction");
}

/* Logits of every feature: a background value, then the marks given. */
static void mark(float *lg, int64_t f, int T, int pos, float v) { lg[f * T + pos] = v; }
static void fill(float *a, float *b, int64_t n, float v) {
    for (int64_t i = 0; i < n; i++) a[i] = b[i] = v;
}

static void test_squad_decode(void) {
    ts_tokenizer *tok = load_tok();
    if (!tok) return;
    ts_squad_opts o = {.max_seq_len = 16, .doc_stride = 3, .max_query_len = 5};
    ts_squad *s = load_squad(tok, &o);
    if (!s) return;
    int T = 16;
    int64_t F = ts_squad_num_features(s), FT = F * T;
    float *st = malloc((size_t)FT * sizeof *st), *en = malloc((size_t)FT * sizeof *en);
    ts_squad_example ex;
    CHECK_OK(ts_squad_get(s, 1, &ex)); /* q2: windows at 0, 3, 6, 9, 12; row offset 7 */
    int64_t w6 = ex.first_feature + 2, w9 = ex.first_feature + 3;
    size_t b, n;
    float score;
    /* "1889" in window 6 (pieces 11..12 at rows 12..13) */
    fill(st, en, FT, -100);
    mark(st, w6, T, 12, 5);
    mark(en, w6, T, 13, 5);
    CHECK_OK(ts_squad_best_span(s, 1, st, en, 20, 30, &b, &n, &score));
    CHECK(n == 4 && strncmp(ex.context + b, "1889", 4) == 0, "span \"%.*s\"", (int)n, ex.context + b);
    CHECK(score == 10, "score %g", score);
    /* a sub-word piece alone maps to its own characters: "18" */
    mark(en, w6, T, 12, 6);
    CHECK_OK(ts_squad_best_span(s, 1, st, en, 20, 30, &b, &n, &score));
    CHECK(n == 2 && strncmp(ex.context + b, "18", 2) == 0 && score == 11, "span \"%.*s\"", (int)n, ex.context + b);
    /* higher logits for the same start in window 9, where piece 11 does not have the most context
     * (window 6 wins the tie), are passed over */
    fill(st, en, FT, -100);
    mark(st, w6, T, 12, 5);
    mark(en, w6, T, 13, 5);
    mark(st, w9, T, 9, 20);
    mark(en, w9, T, 10, 20);
    CHECK_OK(ts_squad_best_span(s, 1, st, en, 20, 30, &b, &n, &score));
    CHECK(n == 4 && strncmp(ex.context + b, "1889", 4) == 0 && score == 10, "max context: span \"%.*s\" score %g",
          (int)n, ex.context + b, score);
    /* an end before its start is refused */
    fill(st, en, FT, -100);
    mark(st, w6, T, 13, 30);
    mark(en, w6, T, 12, 30);
    CHECK_OK(ts_squad_best_span(s, 1, st, en, 20, 30, &b, &n, &score));
    CHECK(score == -70, "end before start: score %g", score);
    /* so is a span in the question */
    fill(st, en, FT, -100);
    mark(st, w6, T, 2, 40);
    mark(en, w6, T, 3, 40);
    CHECK_OK(ts_squad_best_span(s, 1, st, en, 20, 30, &b, &n, &score));
    CHECK(score == -200, "question span: score %g", score);
    /* "built in 1889" is 4 pieces: refused at max_answer_len 3 */
    fill(st, en, FT, -100);
    mark(st, w6, T, 10, 8);
    mark(en, w6, T, 13, 5);
    CHECK_OK(ts_squad_best_span(s, 1, st, en, 20, 30, &b, &n, &score));
    CHECK(n == 13 && strncmp(ex.context + b, "built in 1889", 13) == 0 && score == 13, "span \"%.*s\"", (int)n,
          ex.context + b);
    CHECK_OK(ts_squad_best_span(s, 1, st, en, 20, 3, &b, &n, &score));
    CHECK(score == -92, "max_answer_len 3: span \"%.*s\" score %g", (int)n, ex.context + b, score);
    /* no span at all: an example without features is not possible here; n_best 1 still works */
    CHECK_OK(ts_squad_best_span(s, 1, st, en, 1, 30, &b, &n, &score));
    CHECK(n == 13 && score == 13, "n_best 1: score %g", score);
    /* back to the original text: accents and case kept (q6, row offset 6, cafe..lait = pieces 1..3) */
    CHECK_OK(ts_squad_get(s, 5, &ex));
    fill(st, en, FT, -100);
    mark(st, ex.first_feature, T, 7, 3);
    mark(en, ex.first_feature, T, 9, 3);
    CHECK_OK(ts_squad_best_span(s, 5, st, en, 20, 30, &b, &n, &score));
    CHECK(n == strlen("Café au lait") && strncmp(ex.context + b, "Café au lait", n) == 0, "span \"%.*s\"", (int)n,
          ex.context + b);
    CHECK_STATUS(ts_squad_best_span(s, 99, st, en, 20, 30, &b, &n, &score), TS_ERR_ARG);
    free(st);
    free(en);
    ts_squad_free(s);
    ts_tokenizer_free(tok);
}

/* EM / F1 over the file from logits (defaults: one feature per example): q1..q3 and q6 right,
 * q4 wrong, q5 half right ("hot milk" for "coffee with hot milk": F1 2/3). */
static void test_squad_evaluate(void) {
    ts_tokenizer *tok = load_tok();
    if (!tok) return;
    ts_squad *s = load_squad(tok, NULL);
    if (!s) return;
    int T = 384;
    int64_t F = ts_squad_num_features(s);
    float *st = calloc((size_t)(F * T), sizeof *st), *en = calloc((size_t)(F * T), sizeof *en);
    /* row positions: question pieces + 2 + context piece */
    int pos[6][2] = {{8 + 5, 8 + 5}, {7 + 11, 7 + 12}, {6 + 14, 6 + 15}, {7 + 5, 7 + 5}, {10 + 7, 10 + 8}, {6 + 1, 6 + 3}};
    const char *pred[6];
    char buf[6][64];
    for (int e = 0; e < 6; e++) {
        mark(st, e, T, pos[e][0], 10);
        mark(en, e, T, pos[e][1], 10);
        size_t b, n;
        CHECK_OK(ts_squad_best_span(s, e, st, en, 0, 0, &b, &n, NULL));
        ts_squad_example ex;
        ts_squad_get(s, e, &ex);
        snprintf(buf[e], sizeof buf[e], "%.*s", (int)n, ex.context + b);
        pred[e] = buf[e];
    }
    CHECK(strcmp(pred[0], "Paris") == 0 && strcmp(pred[2], "Gustave Eiffel") == 0 && strcmp(pred[4], "hot milk") == 0 &&
              strcmp(pred[5], "Café au lait") == 0,
          "predictions %s | %s | %s | %s | %s | %s", pred[0], pred[1], pred[2], pred[3], pred[4], pred[5]);
    double em, f1, em2, f12;
    CHECK_OK(ts_squad_score(s, pred, &em, &f1));
    CHECK_OK(ts_squad_evaluate(s, st, en, 20, 30, &em2, &f12));
    double want_em = 100.0 * 4 / 6, want_f1 = 100.0 * (4 + 2.0 / 3) / 6;
    CHECK(fabs(em - want_em) < 1e-9 && fabs(f1 - want_f1) < 1e-9, "score EM %g F1 %g, expected %g %g", em, f1, want_em,
          want_f1);
    CHECK(em2 == em && f12 == f1, "evaluate EM %g F1 %g, score %g %g", em2, f12, em, f1);
    free(st);
    free(en);
    ts_squad_free(s);
    ts_tokenizer_free(tok);
}

/* ------------------------------------------------------------------ main */

static void cleanup(void) {
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    if (tmpdir[0] && system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmpdir);
}

int main(int argc, char **argv) {
    tu_args(argc, argv);
    const char *base = getenv("TMPDIR");
    snprintf(tmpdir, sizeof tmpdir, "%s/ts_data_XXXXXX", base && *base ? base : "/tmp");
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 2;
    }
    snprintf(vocab_path, sizeof vocab_path, "%s/vocab.txt", tmpdir);
    write_vocab();
    write_word_corpus("words", 3, 150, 3, 8, 4, 14, 1);
    static char wf[3][400], uf[2][400];
    for (int i = 0; i < 3; i++) {
        char name[32];
        snprintf(name, sizeof name, "words%d.txt", i);
        snprintf(wf[i], sizeof wf[i], "%s", tmp_path(name));
        word_files[i] = wf[i];
    }
    write_unique_corpus("uniq", 2, 120, 3);
    for (int i = 0; i < 2; i++) {
        char name[32];
        snprintf(name, sizeof name, "uniq%d.txt", i);
        snprintf(uf[i], sizeof uf[i], "%s", tmp_path(name));
        uniq_files[i] = uf[i];
    }

    RUN(test_masking_stats);
    RUN(test_whole_word_masking);
    RUN(test_nsp_pairs);
    RUN(test_nsp_ratio);
    RUN(test_determinism);
    RUN(test_save_restore);
    RUN(test_streaming);
    RUN(test_pretrain_errors);
    RUN(test_mlm_accuracy);
    RUN(test_tsv);
    RUN(test_csv);
    RUN(test_jsonl);
    RUN(test_cls_errors);
    RUN(test_dedup_split);
    RUN(test_cls_batch);
    RUN(test_spam_corpus);
    RUN(test_permutation);
    RUN(test_squad_features);
    RUN(test_squad_errors);
    RUN(test_squad_metric);
    RUN(test_squad_decode);
    RUN(test_squad_evaluate);
    int rc = tu_finish("test_data");
    cleanup();
    return rc;
}
