/*
 * test_tokenizer.c — the WordPiece tokenizer and vocabulary builder (apps/text/):
 *  - parity with Hugging Face tokenizers@0.23.2 on every line of tests/fixtures/tokenizer/
 *    (real text and hand-written hard cases; uncased and cased; ts_encode with truncation and
 *    padding), using bert-base-uncased's vocab.txt as installed by scripts/install-deps.sh
 *    (data/bert/vocab.txt); those cases are skipped, with a message, when it is missing
 *  - vocabulary loading errors, small hand-made vocabularies, malformed UTF-8, ts_encode layout
 *  - ts_vocab_build: output shape, determinism, errors
 *
 * Paths: TS_TOKENIZER_FIXTURE_DIR and TS_BERT_VOCAB (compile definitions; the environment
 * variable TS_BERT_VOCAB overrides the latter).
 */
#include "tessera_apps.h"
#include "test_util.h"

#include <sys/stat.h>

#ifndef TS_TOKENIZER_FIXTURE_DIR
#define TS_TOKENIZER_FIXTURE_DIR "tests/fixtures/tokenizer"
#endif
#ifndef TS_BERT_VOCAB
#define TS_BERT_VOCAB "data/bert/vocab.txt"
#endif

/* ------------------------------------------------------------------ helpers */

static const char *bert_vocab(void) {
    const char *e = getenv("TS_BERT_VOCAB");
    return e && *e ? e : TS_BERT_VOCAB;
}

static int have_bert_vocab(const char *case_name) {
    if (access(bert_vocab(), R_OK) == 0) return 1;
    tu_skip_part("%s is missing (run: bash scripts/install-deps.sh)", bert_vocab());
    return 0;
}

/* Undo the fixture's escapes (\\ \t \n \r \xHH) in place; returns the length. */
static size_t unescape(char *s) {
    size_t o = 0;
    for (size_t i = 0; s[i]; i++) {
        if (s[i] != '\\' || !s[i + 1]) {
            s[o++] = s[i];
            continue;
        }
        char c = s[++i];
        if (c == 't') s[o++] = '\t';
        else if (c == 'n') s[o++] = '\n';
        else if (c == 'r') s[o++] = '\r';
        else if (c == 'x' && s[i + 1] && s[i + 2]) {
            char hex[3] = {s[i + 1], s[i + 2], 0};
            s[o++] = (char)strtol(hex, NULL, 16);
            i += 2;
        } else s[o++] = c;
    }
    s[o] = 0;
    return o;
}

static int b64(char c) {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    return c == '+' ? 62 : c == '/' ? 63 : -1;
}

/* Ids packed 3 base-64 characters each; returns the count (-1 if malformed). */
static int unpack_ids(const char *s, int32_t *ids, int cap) {
    size_t n = strlen(s);
    if (n % 3 || (int)(n / 3) > cap) return -1;
    for (size_t i = 0; i < n; i += 3) ids[i / 3] = b64(s[i]) * 4096 + b64(s[i + 1]) * 64 + b64(s[i + 2]);
    return (int)(n / 3);
}

/* Split line at tabs into at most max fields (the line is modified). */
static int split_tabs(char *line, char **f, int max) {
    int n = 0;
    f[n++] = line;
    for (char *p = line; *p && n < max; p++)
        if (*p == '\t') *p = 0, f[n++] = p + 1;
    return n;
}

/* A readable "id (token)" list of a[0..n) for a failure message. */
static const char *show_ids(const ts_tokenizer *tok, const int32_t *a, int n, char *buf, size_t cap) {
    size_t o = 0;
    buf[0] = 0;
    for (int i = 0; i < n && o + 40 < cap; i++) {
        const char *t = ts_id_to_token(tok, a[i]);
        o += (size_t)snprintf(buf + o, cap - o, "%s%d(%s)", i ? " " : "", a[i], t ? t : "?");
    }
    if (o + 40 >= cap) snprintf(buf + o, cap - o, " ...");
    return buf;
}

static char tmpdir[64];

static const char *tmp_path(const char *name) {
    static char buf[8][256];
    static int k;
    if (!tmpdir[0]) {
        strcpy(tmpdir, "/tmp/ts_tok_XXXXXX");
        if (!mkdtemp(tmpdir)) {
            perror("mkdtemp");
            exit(1);
        }
    }
    char *b = buf[k++ % 8];
    snprintf(b, 256, "%s/%s", tmpdir, name);
    return b;
}

static void write_file(const char *path, const char *data, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f) {
        perror(path);
        exit(1);
    }
    fwrite(data, 1, n, f);
    fclose(f);
}

static void write_str(const char *path, const char *s) { write_file(path, s, strlen(s)); }

/* ------------------------------------------------------------------ parity with tokenizers */

static void test_parity_wordpiece(void) {
    if (!have_bert_vocab("test_parity_wordpiece")) return;
    ts_tokenizer *unc = ts_tokenizer_load(bert_vocab(), 1), *cas = ts_tokenizer_load(bert_vocab(), 0);
    CHECK(unc && cas, "load %s: %s", bert_vocab(), ts_last_error());
    if (!unc || !cas) return;
    CHECK(ts_tokenizer_vocab_size(unc) == 30522, "vocab size %d", ts_tokenizer_vocab_size(unc));
    const char *path = TS_TOKENIZER_FIXTURE_DIR "/wordpiece.tsv";
    FILE *f = fopen(path, "rb");
    CHECK(f != NULL, "cannot open %s", path);
    if (!f) return;
    enum { CAP = 8192 };
    static int32_t want[CAP], got[CAP];
    static char msg1[2048], msg2[2048];
    char *line = NULL;
    size_t lcap = 0;
    ssize_t len;
    int lines = 0, same[2] = {0, 0}, shown = 0, lineno = 0;
    while ((len = getline(&line, &lcap, f)) >= 0) {
        lineno++;
        if (line[0] == '#') continue;
        if (len && line[len - 1] == '\n') line[--len] = 0;
        char *fld[3];
        if (split_tabs(line, fld, 3) != 3) {
            CHECK(0, "%s:%d: malformed fixture line", path, lineno);
            continue;
        }
        unescape(fld[0]);
        lines++;
        for (int m = 0; m < 2; m++) {
            ts_tokenizer *tok = m == 0 ? unc : cas;
            int nw = unpack_ids(fld[1 + m], want, CAP), ng = 0;
            ts_status st = ts_tokenize(tok, fld[0], got, CAP, &ng);
            int ok = nw >= 0 && st == TS_OK && ng == nw && memcmp(want, got, (size_t)nw * sizeof *got) == 0;
            same[m] += ok;
            if (!ok && shown++ < 8)
                CHECK(ok, "%s:%d (%s) \"%.120s\": %s\n  want %s\n  got  %s", path, lineno,
                      m ? "cased" : "uncased", fld[0], ts_status_name(st), show_ids(tok, want, nw, msg1, sizeof msg1),
                      show_ids(tok, got, ng, msg2, sizeof msg2));
        }
    }
    free(line);
    fclose(f);
    CHECK(lines > 2000, "only %d fixture lines", lines);
    CHECK(same[0] == lines && same[1] == lines, "uncased %d / %d, cased %d / %d identical", same[0], lines,
          same[1], lines);
    printf("wordpiece parity with tokenizers 0.23.2: uncased %d/%d lines identical, cased %d/%d\n",
           same[0], lines, same[1], lines);
    ts_tokenizer_free(unc);
    ts_tokenizer_free(cas);
}

static void test_parity_encode(void) {
    if (!have_bert_vocab("test_parity_encode")) return;
    ts_tokenizer *tok = ts_tokenizer_load(bert_vocab(), 1);
    CHECK(tok != NULL, "load: %s", ts_last_error());
    if (!tok) return;
    const char *path = TS_TOKENIZER_FIXTURE_DIR "/encode.tsv";
    FILE *f = fopen(path, "rb");
    CHECK(f != NULL, "cannot open %s", path);
    if (!f) return;
    static int32_t want[1024], ids[1024], types[1024], mask[1024];
    static char msg1[4096], msg2[4096];
    char *line = NULL;
    size_t lcap = 0;
    ssize_t len;
    int cases = 0, same = 0, lineno = 0, shown = 0;
    int32_t pad = ts_token_to_id(tok, "[PAD]");
    while ((len = getline(&line, &lcap, f)) >= 0) {
        lineno++;
        if (line[0] == '#') continue;
        if (len && line[len - 1] == '\n') line[--len] = 0;
        char *fld[6];
        if (split_tabs(line, fld, 6) != 6) {
            CHECK(0, "%s:%d: malformed fixture line", path, lineno);
            continue;
        }
        int max_len = atoi(fld[0]), pair = fld[1][0] == 'P';
        unescape(fld[2]);
        unescape(fld[3]);
        int nw = unpack_ids(fld[4], want, 1024), n = -1;
        cases++;
        ts_status st = ts_encode(tok, fld[2], pair ? fld[3] : NULL, max_len, ids, types, mask, &n);
        int ok = st == TS_OK && n == nw && nw >= 0 && (int)strlen(fld[5]) == nw;
        for (int i = 0; ok && i < max_len; i++) {
            if (i < n) ok = ids[i] == want[i] && types[i] == fld[5][i] - '0' && mask[i] == 1;
            else ok = ids[i] == pad && types[i] == 0 && mask[i] == 0;
        }
        same += ok;
        if (!ok && shown++ < 8)
            CHECK(ok, "%s:%d max_len %d: %s\n  want %s\n  got  %s", path, lineno, max_len, ts_status_name(st),
                  show_ids(tok, want, nw, msg1, sizeof msg1), show_ids(tok, ids, n > 0 ? n : 0, msg2, sizeof msg2));
    }
    free(line);
    fclose(f);
    CHECK(cases >= 200 && same == cases, "%d / %d encode cases identical", same, cases);
    printf("ts_encode parity with tokenizers 0.23.2: %d/%d cases identical (singles and pairs, max_len 3..512)\n",
           same, cases);
    ts_tokenizer_free(tok);
}

/* ------------------------------------------------------------------ small vocabularies */

static const char *SMALL_VOCAB =
    "[PAD]\n[unused0]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nun\n##aff\n##able\nhello\nworld\n,\n!\n.\na\n##a\n"
    "the\ncat\nsat\ncafe\n##s\nb\n##b\n";

static ts_tokenizer *small_tok(int lowercase) {
    const char *p = tmp_path("small_vocab.txt");
    write_str(p, SMALL_VOCAB);
    ts_tokenizer *t = ts_tokenizer_load(p, lowercase);
    CHECK(t != NULL, "load small vocab: %s", ts_last_error());
    return t;
}

/* ids of text, or -1 entries; returns count. */
static int toks(ts_tokenizer *t, const char *text, int32_t *ids, int cap) {
    int n = -1;
    ts_status st = ts_tokenize(t, text, ids, cap, &n);
    CHECK(st == TS_OK, "ts_tokenize(\"%s\"): %s %s", text, ts_status_name(st), ts_last_error());
    return n;
}

#define CHECK_IDS(t, text, ...)                                                                    \
    do {                                                                                           \
        int32_t want_[] = {__VA_ARGS__}, got_[64];                                                 \
        int nw_ = (int)(sizeof want_ / sizeof *want_), ng_ = toks((t), (text), got_, 64);          \
        char b1_[512], b2_[512];                                                                   \
        CHECK(ng_ == nw_ && memcmp(want_, got_, sizeof want_) == 0, "\"%s\": want %s, got %s",     \
              (text), show_ids((t), want_, nw_, b1_, sizeof b1_), show_ids((t), got_, ng_, b2_, sizeof b2_)); \
    } while (0)

static void test_wordpiece_small(void) {
    ts_tokenizer *t = small_tok(1);
    if (!t) return;
    CHECK(ts_tokenizer_vocab_size(t) == 23, "vocab size %d", ts_tokenizer_vocab_size(t));
    CHECK(ts_token_to_id(t, "##aff") == 7 && ts_token_to_id(t, "nope") == -1, "token_to_id");
    CHECK(ts_id_to_token(t, 9) && strcmp(ts_id_to_token(t, 9), "hello") == 0, "id_to_token");
    CHECK(ts_id_to_token(t, 23) == NULL && ts_id_to_token(t, -1) == NULL, "id_to_token out of range");
    CHECK_IDS(t, "unaffable", 6, 7, 8);
    CHECK_IDS(t, "UnAffAble!", 6, 7, 8, 12);
    CHECK_IDS(t, "Hello, World.", 9, 11, 10, 13);
    CHECK_IDS(t, "unaffablex hello", 2, 9); /* an unmatched part: the whole word is [UNK] */
    CHECK_IDS(t, "Cafés", 19, 20);          /* accents stripped when uncased */
    CHECK_IDS(t, "the [MASK] sat", 16, 5, 18);
    CHECK_IDS(t, "[mask]", 2, 2, 2);        /* [ mask ] : only the exact special is special */
    CHECK_IDS(t, "x[CLS]y[SEP]", 2, 3, 2, 4);
    CHECK_IDS(t, "\xff\xfe hello \xc3", 9); /* malformed bytes are dropped */
    CHECK_IDS(t, "he\xffllo", 9);
    CHECK_IDS(t, "");
    CHECK_IDS(t, " \t\r\n ");
    char w100[102], w101[103];
    memset(w100, 'a', 100), w100[100] = 0;
    memset(w101, 'a', 101), w101[101] = 0;
    int32_t ids[128];
    int n = toks(t, w100, ids, 128);
    CHECK(n == 100 && ids[0] == 14 && ids[99] == 15, "100 a's: n %d", n);
    CHECK_IDS(t, w101, 2);
    /* a buffer too small: TS_ERR_SHAPE, *n is the full count, the first cap ids written */
    int32_t small[2] = {-7, -7};
    n = 0;
    CHECK_STATUS(ts_tokenize(t, "hello world hello", small, 1, &n), TS_ERR_SHAPE);
    CHECK(n == 3 && small[0] == 9 && small[1] == -7, "n %d small %d %d", n, small[0], small[1]);
    CHECK_ERRMSG("3", "1");
    CHECK_STATUS(ts_tokenize(t, "hello", NULL, 0, &n), TS_ERR_SHAPE);
    CHECK_STATUS(ts_tokenize(NULL, "x", ids, 4, &n), TS_ERR_ARG);
    CHECK_STATUS(ts_tokenize(t, NULL, ids, 4, &n), TS_ERR_ARG);
    ts_tokenizer_free(t);

    t = small_tok(0); /* cased: no lower case, accents kept */
    if (!t) return;
    CHECK_IDS(t, "unaffable Unaffable cafe café", 6, 7, 8, 2, 19, 2);
    ts_tokenizer_free(t);
}

static void test_encode_layout(void) {
    ts_tokenizer *t = small_tok(1);
    if (!t) return;
    int32_t ids[16], types[16], mask[16];
    int n = -1;
    CHECK_OK(ts_encode(t, "hello world", NULL, 8, ids, types, mask, &n));
    int32_t w1[8] = {3, 9, 10, 4, 0, 0, 0, 0}, m1[8] = {1, 1, 1, 1, 0, 0, 0, 0};
    CHECK(n == 4 && memcmp(ids, w1, sizeof w1) == 0 && memcmp(mask, m1, sizeof m1) == 0, "single: n %d", n);
    for (int i = 0; i < 8; i++) CHECK(types[i] == 0, "type[%d] = %d", i, types[i]);

    CHECK_OK(ts_encode(t, "hello", "the cat", 8, ids, types, mask, &n));
    int32_t w2[8] = {3, 9, 4, 16, 17, 4, 0, 0}, t2[8] = {0, 0, 0, 1, 1, 1, 0, 0};
    CHECK(n == 6 && memcmp(ids, w2, sizeof w2) == 0 && memcmp(types, t2, sizeof t2) == 0, "pair: n %d", n);

    /* truncation: single keeps max_len - 2; pair longest-first */
    CHECK_OK(ts_encode(t, "hello world hello world", NULL, 4, ids, NULL, NULL, &n));
    CHECK(n == 4 && ids[1] == 9 && ids[2] == 10 && ids[3] == 4, "single truncated: n %d", n);
    CHECK_OK(ts_encode(t, "a a a a a a", "b", 6, ids, types, mask, &n)); /* a keeps 6-3-1 = 2 */
    int32_t w3[6] = {3, 14, 14, 4, 21, 4};
    CHECK(n == 6 && memcmp(ids, w3, sizeof w3) == 0, "pair truncated (short b kept)");
    CHECK_OK(ts_encode(t, "a a a a a", "b b b b b", 8, ids, types, mask, &n)); /* 5 = 2 + 3 */
    int32_t w4[8] = {3, 14, 14, 4, 21, 21, 21, 4};
    CHECK(n == 8 && memcmp(ids, w4, sizeof w4) == 0, "pair truncated (halves, b the larger)");
    CHECK_OK(ts_encode(t, "", "", 3, ids, types, mask, &n));
    CHECK(n == 3 && ids[0] == 3 && ids[1] == 4 && ids[2] == 4, "empty pair");

    CHECK_STATUS(ts_encode(t, "x", NULL, 1, ids, types, mask, &n), TS_ERR_ARG);
    CHECK_ERRMSG("max_len");
    CHECK_STATUS(ts_encode(t, "x", "y", 2, ids, types, mask, &n), TS_ERR_ARG);
    CHECK_STATUS(ts_encode(t, NULL, NULL, 8, ids, types, mask, &n), TS_ERR_ARG);
    CHECK_STATUS(ts_encode(t, "x", NULL, 8, NULL, types, mask, &n), TS_ERR_ARG);
    ts_tokenizer_free(t);
}

/* ts_tokenizer_set_truncation: which pieces of a long text survive (ids as in small_tok: hello 9,
 * world 10, a 14, b 21, the 16, cat 17; [CLS] 3, [SEP] 4). */
static void test_encode_truncation(void) {
    ts_tokenizer *t = small_tok(1);
    if (!t) return;
    int32_t ids[16];
    int n = -1;
    const char *six = "hello world a b the cat";
    struct {
        int keep_head, max_len;
        int32_t want[8];
    } cases[] = {
        {-1, 6, {3, 9, 10, 14, 21, 4}},         /* the start (default) */
        {0, 6, {3, 14, 21, 16, 17, 4}},         /* the end */
        {1, 6, {3, 9, 21, 16, 17, 4}},          /* 1 from the start, 3 from the end */
        {3, 6, {3, 9, 10, 14, 17, 4}},          /* 3 + 1 */
        {10, 6, {3, 9, 10, 14, 21, 4}},         /* more head than room: the start */
        {0, 8, {3, 9, 10, 14, 21, 16, 17, 4}},  /* fits: whole, whatever the setting */
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        ts_tokenizer_set_truncation(t, cases[c].keep_head);
        CHECK_OK(ts_encode(t, six, NULL, cases[c].max_len, ids, NULL, NULL, &n));
        CHECK(n == cases[c].max_len && memcmp(ids, cases[c].want, (size_t)n * sizeof *ids) == 0,
              "keep_head %d, max_len %d: n %d, ids %d %d %d %d %d %d", cases[c].keep_head, cases[c].max_len, n,
              ids[0], ids[1], ids[2], ids[3], ids[4], ids[5]);
    }
    /* a pair: each text is cut to its longest-first length (2 + 2 here), then by the setting */
    ts_tokenizer_set_truncation(t, 1);
    int32_t types[16];
    CHECK_OK(ts_encode(t, "hello world a b", "the cat the cat", 7, ids, types, NULL, &n));
    int32_t wp[7] = {3, 9, 21, 4, 16, 17, 4}, tp[7] = {0, 0, 0, 0, 1, 1, 1};
    CHECK(n == 7 && memcmp(ids, wp, sizeof wp) == 0 && memcmp(types, tp, sizeof tp) == 0, "pair, keep_head 1");
    /* a word split into pieces is cut between pieces: "unaffable" = un ##aff ##able */
    ts_tokenizer_set_truncation(t, 0);
    CHECK_OK(ts_encode(t, "hello unaffable", NULL, 4, ids, NULL, NULL, &n));
    CHECK(n == 4 && ids[1] == 7 && ids[2] == 8, "tail of a split word: %d %d", ids[1], ids[2]);
    ts_tokenizer_set_truncation(t, -5); /* any negative: back to the start */
    CHECK_OK(ts_encode(t, six, NULL, 4, ids, NULL, NULL, &n));
    CHECK(n == 4 && ids[1] == 9 && ids[2] == 10, "reset to the start");
    ts_tokenizer_free(t);
}

static void test_vocab_errors(void) {
    const char *missing = tmp_path("no_such_vocab.txt");
    CHECK(ts_tokenizer_load(missing, 1) == NULL, "missing file loads");
    CHECK_ERRMSG(missing);

    const char *empty = tmp_path("empty.txt");
    write_str(empty, "");
    CHECK(ts_tokenizer_load(empty, 1) == NULL, "empty file loads");
    CHECK_ERRMSG(empty, "empty");

    const char *bad = tmp_path("bad_utf8.txt");
    write_str(bad, "[PAD]\n[UNK]\nab\xff\n[CLS]\n[SEP]\n");
    CHECK(ts_tokenizer_load(bad, 1) == NULL, "bad UTF-8 loads");
    CHECK_ERRMSG(bad, ":3:", "UTF-8");

    const char *nul = tmp_path("nul.txt");
    write_file(nul, "[PAD]\n[UNK]\n[CLS]\n[SEP]\na\0b\n", 28);
    CHECK(ts_tokenizer_load(nul, 1) == NULL, "NUL byte loads");
    CHECK_ERRMSG(nul, ":5:");

    const char *nounk = tmp_path("nounk.txt");
    write_str(nounk, "[PAD]\n[CLS]\n[SEP]\nhello\n");
    CHECK(ts_tokenizer_load(nounk, 1) == NULL, "a vocab without [UNK] loads");
    CHECK_ERRMSG(nounk, "[UNK]");

    CHECK(ts_tokenizer_load(NULL, 1) == NULL, "NULL path");
    CHECK(ts_tokenizer_vocab_size(NULL) == 0 && ts_token_to_id(NULL, "x") == -1, "NULL tokenizer");
    ts_tokenizer_free(NULL);

    /* CRLF, trailing white space, a repeated token (the last line wins), no final newline */
    const char *dup = tmp_path("dup.txt");
    write_str(dup, "[PAD]\r\n[UNK]  \r\n[CLS]\t\n[SEP]\nhello\nworld\nhello\n\nend");
    ts_tokenizer *t = ts_tokenizer_load(dup, 1);
    CHECK(t != NULL, "load: %s", ts_last_error());
    if (!t) return;
    CHECK(ts_tokenizer_vocab_size(t) == 9, "size %d", ts_tokenizer_vocab_size(t));
    CHECK(ts_token_to_id(t, "[UNK]") == 1 && ts_token_to_id(t, "[CLS]") == 2, "trimmed specials");
    CHECK(ts_token_to_id(t, "hello") == 6, "hello -> %d (want the last line, 6)", ts_token_to_id(t, "hello"));
    CHECK(strcmp(ts_id_to_token(t, 4), "hello") == 0 && ts_token_to_id(t, "end") == 8, "ids");
    CHECK(ts_token_to_id(t, "[MASK]") == -1, "no [MASK]");
    CHECK_IDS(t, "[MASK] hello", 1, 1, 1, 6); /* [MASK] is not special here: [ mask ] -> unk */
    ts_tokenizer_free(t);
}

/* Random bytes through tokenize and encode: no crash, only TS_OK. */
static void test_fuzz_bytes(void) {
    ts_tokenizer *t = small_tok(1);
    if (!t) return;
    tu_rng r = tu_rng_seed(7);
    char buf[600];
    int32_t ids[2048], types[64], mask[64];
    int bad = 0;
    for (int k = 0; k < 3000; k++) {
        int len = (int)tu_randint(&r, 512);
        for (int i = 0; i < len; i++) {
            uint64_t v = tu_next(&r);
            buf[i] = (char)(v % 4 == 0 ? (v >> 8) % 128 : (v >> 8) & 0xff); /* a mix of ASCII and high bytes */
            if (!buf[i]) buf[i] = ' ';
        }
        buf[len] = 0;
        int n;
        bad += ts_tokenize(t, buf, ids, 2048, &n) != TS_OK;
        bad += ts_encode(t, buf, k % 2 ? buf : NULL, 64, ids, types, mask, &n) != TS_OK;
    }
    CHECK(bad == 0, "%d fuzz calls failed: %s", bad, ts_last_error());
    ts_tokenizer_free(t);
}

/* ------------------------------------------------------------------ vocabulary builder */

static char *read_all(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long sz = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)sz + 1);
    *n = fread(b, 1, (size_t)sz, f);
    b[*n] = 0;
    fclose(f);
    return b;
}

static void test_vocab_build(void) {
    const char *c1 = tmp_path("corpus1.txt"), *c2 = tmp_path("corpus2.txt");
    FILE *f = fopen(c1, "wb");
    for (int i = 0; i < 50; i++)
        fprintf(f, "The cat sat on the mat. The dog sat on the log! Cats and dogs, running and jumping.\n");
    for (int i = 0; i < 2; i++) fprintf(f, "Ünïcödé wörds, naïve café; 日本語 テキスト.\n");
    fprintf(f, "rare: ☃ appears once\n"); /* a character seen once is left out */
    fclose(f);
    f = fopen(c2, "wb");
    for (int i = 0; i < 30; i++) fprintf(f, "the runner runs; the jumper jumps; unrunnable.\n");
    fclose(f);
    const char *files[2] = {c1, c2};
    const char *out = tmp_path("built_vocab.txt"), *out2 = tmp_path("built_vocab2.txt");
    CHECK_OK(ts_vocab_build(files, 2, 120, 1, out));
    CHECK_OK(ts_vocab_build(files, 2, 120, 1, out2));
    size_t n1 = 0, n2 = 0;
    char *a = read_all(out, &n1), *b = read_all(out2, &n2);
    CHECK(a && b && n1 == n2 && memcmp(a, b, n1) == 0, "two builds differ");
    CHECK(a && strncmp(a, "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n", 30) == 0, "specials first: %.40s", a ? a : "");
    int lines = 0;
    for (size_t i = 0; a && i < n1; i++) lines += a[i] == '\n';
    CHECK(lines <= 120 && lines > 60, "%d lines", lines);
    free(a);
    free(b);

    ts_tokenizer *t = ts_tokenizer_load(out, 1);
    CHECK(t != NULL, "load built vocab: %s", ts_last_error());
    if (t) {
        CHECK(ts_token_to_id(t, "the") > 4 && ts_token_to_id(t, "sat") > 4, "frequent words are tokens");
        CHECK(ts_token_to_id(t, "##s") > 4 && ts_token_to_id(t, "c") > 4, "characters are tokens");
        CHECK(ts_token_to_id(t, "unicode") > 4 || ts_token_to_id(t, "u") > 4, "accents stripped in the alphabet");
        CHECK(ts_token_to_id(t, "日") > 4, "CJK characters");
        CHECK(ts_token_to_id(t, "☃") < 0, "a character seen once is in the alphabet");
        int32_t ids[256];
        int n = 0;
        CHECK_OK(ts_tokenize(t, "the cats and dogs running, the runner unrunnable. Naïve café 日本語", ids, 256, &n));
        int unk = 0;
        for (int i = 0; i < n; i++) unk += ids[i] == 1;
        CHECK(unk == 0, "%d [UNK] in corpus text", unk);
        ts_tokenizer_free(t);
    }

    /* a vocabulary too small for the alphabet keeps the most frequent characters */
    CHECK_OK(ts_vocab_build(files, 1, 12, 1, out));
    a = read_all(out, &n1);
    lines = 0;
    for (size_t i = 0; a && i < n1; i++) lines += a[i] == '\n';
    CHECK(lines == 12, "%d lines for vocab_size 12", lines);
    free(a);

    /* cased keeps capitals */
    CHECK_OK(ts_vocab_build(files, 2, 200, 0, out));
    t = ts_tokenizer_load(out, 0);
    CHECK(t && ts_token_to_id(t, "T") > 4, "cased alphabet has T");
    ts_tokenizer_free(t);

    /* errors */
    const char *missing = tmp_path("no_corpus.txt");
    const char *bad_files[2] = {c1, missing};
    CHECK_STATUS(ts_vocab_build(bad_files, 2, 100, 1, out), TS_ERR_IO);
    CHECK_ERRMSG(missing);
    CHECK_STATUS(ts_vocab_build(files, 2, 4, 1, out), TS_ERR_ARG);
    CHECK_STATUS(ts_vocab_build(files, 0, 100, 1, out), TS_ERR_ARG);
    CHECK_STATUS(ts_vocab_build(NULL, 1, 100, 1, out), TS_ERR_ARG);
    const char *blank = tmp_path("blank.txt");
    write_str(blank, "   \n\n\t\n");
    const char *blank_files[1] = {blank};
    CHECK_STATUS(ts_vocab_build(blank_files, 1, 100, 1, out), TS_ERR_ARG);
    CHECK_ERRMSG("no words");
    CHECK_STATUS(ts_vocab_build(files, 2, 100, 1, tmp_path("no_dir/vocab.txt")), TS_ERR_IO);
}

/* ------------------------------------------------------------------ main */

static void cleanup(void) {
    if (!tmpdir[0]) return;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmpdir);
}

int main(int argc, char **argv) {
    tu_args(argc, argv);
    tmp_path("x"); /* create the directory before forking cases */
    RUN(test_parity_wordpiece);
    RUN(test_parity_encode);
    RUN(test_wordpiece_small);
    RUN(test_encode_layout);
    RUN(test_encode_truncation);
    RUN(test_vocab_errors);
    RUN(test_fuzz_bytes);
    RUN(test_vocab_build);
    cleanup();
    return tu_finish("test_tokenizer");
}
