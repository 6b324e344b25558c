/*
 * squad_eval.c — SQuAD evaluation: the best answer span of an example from the model's start
 * and end logits (run_squad's n-best decoding, mapped back to the original context through the
 * pieces' byte spans), and the official v1.1 exact-match and F1 metrics.
 */
#include "data/squad.h"

#include <math.h>

#include "text/unicode.h"

/* ------------------------------------------------------------------ normalization
 * The official script: lower(), drop string.punctuation, replace \b(a|an|the)\b with a space,
 * split on white space. Lower-casing is Unicode's full mapping; a "word character" for \b is a
 * letter, digit or underscore, approximated past ASCII as anything that is not white space or
 * punctuation. */

static int ascii_punct(uint32_t c) { return c < 128 && c > 32 && c != 127 && !((c | 32) >= 'a' && (c | 32) <= 'z') && !(c >= '0' && c <= '9'); }
static int is_space(uint32_t c) { return (ts_uc_flags(c) & TS_UC_SPACE) || (c >= 0x1c && c <= 0x1f); }
static int is_word(uint32_t c) {
    if (c < 128) return (c >= '0' && c <= '9') || ((c | 32) >= 'a' && (c | 32) <= 'z') || c == '_';
    return !is_space(c) && !(ts_uc_flags(c) & TS_UC_PUNCT);
}

typedef struct words {
    char *buf;          /* the normalized words, each NUL-terminated */
    const char **w;     /* sorted */
    size_t n;
} words;

static int is_article(const uint32_t *c, size_t n) {
    return (n == 1 && c[0] == 'a') || (n == 2 && c[0] == 'a' && c[1] == 'n') ||
           (n == 3 && c[0] == 't' && c[1] == 'h' && c[2] == 'e');
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }

/* Normalize s into its words (the unsorted order is the text's: joined with single spaces they
 * are the normalized string). 0 on out of memory. */
static int normalize(const char *s, words *out, int sort) {
    memset(out, 0, sizeof *out);
    size_t len = strlen(s);
    uint32_t *cp = malloc((len * TS_UC_MAX_LOWER + 1) * sizeof *cp);
    out->buf = malloc(len * 4 * TS_UC_MAX_LOWER + 2);
    out->w = malloc((len + 1) * sizeof *out->w);
    if (!cp || !out->buf || !out->w) {
        free(cp);
        free(out->buf);
        free(out->w);
        return 0;
    }
    size_t n = 0;
    for (size_t i = 0; i < len;) { /* lower case, punctuation dropped */
        size_t adv;
        uint32_t c = ts_utf8_decode((const unsigned char *)s + i, len - i, &adv), low[TS_UC_MAX_LOWER];
        i += adv;
        int k = ts_uc_lower(c, low);
        for (int j = 0; j < k; j++)
            if (!ascii_punct(low[j])) cp[n++] = low[j];
    }
    /* words: runs of non-space; articles are runs of word characters equal to a / an / the,
     * which become spaces (so "the-" never arises: punctuation is gone already) */
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        if (is_space(cp[i])) {
            i++;
            continue;
        }
        size_t j = i;
        while (j < n && !is_space(cp[j])) j++;
        /* inside [i, j): drop article runs of word characters */
        size_t start = o;
        for (size_t a = i; a < j;) {
            size_t b = a;
            if (is_word(cp[a])) {
                while (b < j && is_word(cp[b])) b++;
                if (is_article(cp + a, b - a)) { /* a space: ends the current word */
                    if (o > start) {
                        out->buf[o++] = 0;
                        out->w[out->n++] = out->buf + start;
                        start = o;
                    }
                    a = b;
                    continue;
                }
            } else {
                b = a + 1;
            }
            for (size_t k = a; k < b; k++) o += (size_t)ts_utf8_encode(cp[k], out->buf + o);
            a = b;
        }
        if (o > start) {
            out->buf[o++] = 0;
            out->w[out->n++] = out->buf + start;
        }
        i = j;
    }
    free(cp);
    if (sort) qsort(out->w, out->n, sizeof *out->w, cmp_str);
    return 1;
}

static void words_free(words *w) {
    free(w->buf);
    free(w->w);
}

/* EM and F1 of normalized words p against t (both in text order; copies are sorted for F1). */
static void em_f1(const words *p, const words *t, double *em, double *f1) {
    int same = p->n == t->n;
    for (size_t i = 0; same && i < p->n; i++) same = strcmp(p->w[i], t->w[i]) == 0;
    *em = same;
    const char **a = malloc((p->n + 1) * sizeof *a), **b = malloc((t->n + 1) * sizeof *b);
    *f1 = 0;
    if (!a || !b) {
        free(a);
        free(b);
        *f1 = same; /* out of memory: the exact answer is still right */
        return;
    }
    memcpy(a, p->w, p->n * sizeof *a);
    memcpy(b, t->w, t->n * sizeof *b);
    qsort(a, p->n, sizeof *a, cmp_str);
    qsort(b, t->n, sizeof *b, cmp_str);
    size_t i = 0, j = 0, common = 0;
    while (i < p->n && j < t->n) {
        int c = strcmp(a[i], b[j]);
        if (c == 0) common++, i++, j++;
        else if (c < 0) i++;
        else j++;
    }
    free(a);
    free(b);
    if (common == 0) return;
    double prec = (double)common / (double)p->n, rec = (double)common / (double)t->n;
    *f1 = 2 * prec * rec / (prec + rec);
}

void ts_squad_metric(const char *prediction, const char *const *truths, int ntruths, double *em, double *f1) {
    double best_em = 0, best_f1 = 0;
    words p;
    if (prediction && truths && normalize(prediction, &p, 0)) {
        for (int k = 0; k < ntruths; k++) {
            words t;
            if (!truths[k] || !normalize(truths[k], &t, 0)) continue;
            double e, f;
            em_f1(&p, &t, &e, &f);
            if (e > best_em) best_em = e;
            if (f > best_f1) best_f1 = f;
            words_free(&t);
        }
        words_free(&p);
    }
    if (em) *em = best_em;
    if (f1) *f1 = best_f1;
}

ts_status ts_squad_score(const ts_squad *s, const char *const *predictions, double *em, double *f1) {
    if (!s || !predictions) return ts_set_error(TS_ERR_ARG, "ts_squad_score: NULL squad or predictions");
    double se = 0, sf = 0;
    for (int64_t i = 0; i < s->nex; i++) {
        double e, f;
        ts_squad_metric(predictions[i], (const char *const *)s->ex[i].answers, s->ex[i].nanswers, &e, &f);
        se += e;
        sf += f;
    }
    double n = s->nex ? (double)s->nex : 1;
    if (em) *em = 100 * se / n;
    if (f1) *f1 = 100 * sf / n;
    return TS_OK;
}

/* ------------------------------------------------------------------ span decoding */

/* The k highest of x[0..n) in best[], by value then index (as a stable sort), NaN left out;
 * returns how many. */
static int top_k(const float *x, int n, int k, int *best) {
    int m = 0;
    for (int i = 0; i < n; i++) {
        if (isnan(x[i])) continue;
        if (m == k && !(x[i] > x[best[m - 1]])) continue;
        int j = m < k ? m++ : m - 1;
        while (j > 0 && x[i] > x[best[j - 1]]) {
            best[j] = best[j - 1];
            j--;
        }
        best[j] = i;
    }
    return m;
}

/* Is feature fi the window in which context piece d has the most context on both sides
 * (run_squad's _check_is_max_context: the first window wins a tie)? */
static int max_context(const ts_squad *s, const sq_example *e, int64_t fi, int32_t d) {
    int64_t best = -1;
    double best_score = 0;
    for (int64_t g = e->first_feature; g < e->first_feature + e->nfeatures; g++) {
        const sq_feature *f = &s->feat[g];
        if (d < f->doc_start || d >= f->doc_start + f->doc_len) continue;
        int32_t left = d - f->doc_start, right = f->doc_start + f->doc_len - 1 - d;
        double score = (left < right ? left : right) + 0.01 * f->doc_len;
        if (best < 0 || score > best_score) best = g, best_score = score;
    }
    return best == fi;
}

ts_status ts_squad_best_span(const ts_squad *s, int64_t example, const float *start_logits,
                             const float *end_logits, int n_best, int max_answer_len, size_t *begin,
                             size_t *len, float *score) {
    if (begin) *begin = 0;
    if (len) *len = 0;
    if (score) *score = -INFINITY;
    if (!s || !start_logits || !end_logits) return ts_set_error(TS_ERR_ARG, "ts_squad_best_span: NULL squad or logits");
    if (example < 0 || example >= s->nex)
        return ts_set_error(TS_ERR_ARG, "ts_squad_best_span: example %lld outside [0, %lld)", (long long)example,
                            (long long)s->nex);
    if (n_best <= 0) n_best = 20;
    if (max_answer_len <= 0) max_answer_len = 30;
    int T = s->o.max_seq_len;
    if (n_best > T) n_best = T;
    int *bs = malloc((size_t)n_best * 2 * sizeof *bs), *be = bs + n_best;
    if (!bs) return ts_set_error(TS_ERR_NOMEM, "ts_squad_best_span: out of memory");
    const sq_example *e = &s->ex[example];
    const sq_para *p = &s->paras[e->para];
    float best = -INFINITY;
    int32_t best_s = -1, best_e = -1;
    for (int64_t fi = e->first_feature; fi < e->first_feature + e->nfeatures; fi++) {
        const sq_feature *f = &s->feat[fi];
        const float *sl = start_logits + (size_t)fi * T, *el = end_logits + (size_t)fi * T;
        int ns = top_k(sl, T, n_best, bs), ne = top_k(el, T, n_best, be);
        int32_t off = e->nq + 2;
        for (int a = 0; a < ns; a++) {
            int32_t st = bs[a] - off;
            if (st < 0 || st >= f->doc_len) continue;
            if (!max_context(s, e, fi, f->doc_start + st)) continue;
            for (int b = 0; b < ne; b++) {
                int32_t en = be[b] - off;
                if (en < 0 || en >= f->doc_len || en < st || en - st + 1 > max_answer_len) continue;
                float sc = sl[bs[a]] + el[be[b]];
                if (sc > best) {
                    best = sc;
                    best_s = f->doc_start + st;
                    best_e = f->doc_start + en;
                }
            }
        }
    }
    free(bs);
    if (best_s >= 0) {
        size_t b0 = (size_t)p->begin[best_s], e0 = (size_t)p->end[best_e];
        if (begin) *begin = b0;
        if (len) *len = e0 > b0 ? e0 - b0 : 0;
        if (score) *score = best;
    }
    return TS_OK;
}

ts_status ts_squad_evaluate(const ts_squad *s, const float *start_logits, const float *end_logits, int n_best,
                            int max_answer_len, double *em, double *f1) {
    if (!s || !start_logits || !end_logits) return ts_set_error(TS_ERR_ARG, "ts_squad_evaluate: NULL squad or logits");
    double se = 0, sf = 0;
    char *text = NULL;
    size_t cap = 0;
    for (int64_t i = 0; i < s->nex; i++) {
        size_t b, n;
        ts_status st = ts_squad_best_span(s, i, start_logits, end_logits, n_best, max_answer_len, &b, &n, NULL);
        if (st != TS_OK) {
            free(text);
            return st;
        }
        if (n + 1 > cap) {
            char *t = realloc(text, n + 1);
            if (!t) {
                free(text);
                return ts_set_error(TS_ERR_NOMEM, "ts_squad_evaluate: out of memory");
            }
            text = t;
            cap = n + 1;
        }
        memcpy(text, s->paras[s->ex[i].para].context + b, n);
        text[n] = 0;
        double e, f;
        ts_squad_metric(text, (const char *const *)s->ex[i].answers, s->ex[i].nanswers, &e, &f);
        se += e;
        sf += f;
    }
    free(text);
    double n = s->nex ? (double)s->nex : 1;
    if (em) *em = 100 * se / n;
    if (f1) *f1 = 100 * sf / n;
    return TS_OK;
}
