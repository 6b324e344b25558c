/*
 * lib_terms.c — the library's messages in the command's words (cli.h: cli_terms_use, cli_error,
 * cli_write_err, cli_write_out): the library names fields, never flags; the user reads which flag.
 */
#define _GNU_SOURCE /* memmem */
#include <ctype.h>

#include "cli.h"
#include "train_common.h"

/* A library term that any subcommand may meet, and the flag noted after a message naming it. */
static const struct {
    const char *term, *flag;
} NOTES[] = {
    {"TS_LOAD_ALLOW_NONFINITE", "--allow-nonfinite"},
    {"ts_squad_opts.relocate_answers", "--relocate-answers"},
    {"the communicator's timeout", "--comm-timeout"},
};

/* The running subcommand's option table and exceptions (cli_terms_use). */
static const cli_opt *use_opts;
static int use_nopts, use_nterms;
static const cli_term *use_terms;

void cli_terms_use(const struct cli_opt *opts, int nopts, const cli_term *terms, int nterms) {
    use_opts = opts, use_nopts = nopts, use_terms = terms, use_nterms = nterms;
}

/* The flag of the first term text[0 .. len) names, or NULL. */
static const char *note_of(const char *text, size_t len) {
    for (size_t i = 0; i < sizeof NOTES / sizeof *NOTES; i++)
        if (memmem(text, len, NOTES[i].term, strlen(NOTES[i].term))) return NOTES[i].flag;
    return NULL;
}

static int in_word(char c) { return isalnum((unsigned char)c) || c == '_' || c == '-' || c == '.' || c == '/'; }

/* The table's option spelt as field w[0 .. n) with '-' for '_', or NULL. */
static const cli_opt *opt_named(const char *w, size_t n) {
    for (int i = 0; i < use_nopts; i++) {
        const char *name = use_opts[i].name;
        if (!name || use_opts[i].kind == CLI_TEXT || use_opts[i].kind == CLI_ARGS || strlen(name) != n) continue;
        size_t k = 0;
        while (k < n && (name[k] == w[k] || (name[k] == '-' && w[k] == '_'))) k++;
        if (k == n) return &use_opts[i];
    }
    return NULL;
}

/* The length of field w[0 .. n) without a "_file" or "_dir" ending (model_dir: the flag --model,
 * data_file: --data), or 0 when it has neither. */
static size_t stem_of(const char *w, size_t n) {
    if (n > 5 && !memcmp(w + n - 5, "_file", 5)) return n - 5;
    return n > 4 && !memcmp(w + n - 4, "_dir", 4) ? n - 4 : 0;
}

/* s[0 .. n) starts with a field's value: 1 for " 12", " -1", " \"x\"" or " VALUE:", 2 for one of the
 * choices its usage names ("SPEC|auto": " auto"); else 0. */
static int value_follows(const cli_opt *o, const char *s, size_t n) {
    if (n < 2 || s[0] != ' ') return 0;
    if (isdigit((unsigned char)s[1]) || s[1] == '"' || (n > 2 && s[1] == '-' && isdigit((unsigned char)s[2])))
        return 1;
    for (const char *c = o->arg && strchr(o->arg, '|') ? o->arg : ""; *c; c += *c == '|') {
        size_t len = strcspn(c, "|");
        if (len < n - 1 && !memcmp(s + 1, c, len) && !in_word(s[1 + len])) return 2;
        c += len;
    }
    size_t k = 1;
    while (k < n && s[k] != ' ' && s[k] != '\n') k++;
    return k > 2 && s[k - 1] == ':';
}

/* How the words before text[i] introduce a field there: 2 after "needs " (any field), 1 at a clause's
 * start (the text's, or after ": ") or after another connective, else 0; *valued: 1 after "of ", ", "
 * and "for " (a field with its value only; the others take a boolean's name too). */
static int opener_before(const char *text, size_t i, int *valued) {
    static const char *const OPENERS[] = {"needs ", ": ", "and ", "or ", "with ", "use ", "of ", ", ", "for "};
    *valued = 0;
    if (i == 0) return 1;
    for (int k = 0; k < (int)(sizeof OPENERS / sizeof *OPENERS); k++) {
        size_t n = strlen(OPENERS[k]);
        if (i < n || memcmp(text + i - n, OPENERS[k], n) || (isalpha(*OPENERS[k]) && i > n && in_word(text[i - n - 1])))
            continue;
        *valued = k >= 6;
        return k == 0 ? 2 : 1;
    }
    return 0;
}

/* What the word at text[i] stands for (cli.h: cli_terms_use), its length in *m; NULL: itself. */
static const char *term_at(const char *text, size_t len, size_t i, int err, size_t *m, char *flag, size_t cap) {
    for (int k = 0; k < use_nterms; k++) {
        *m = strlen(use_terms[k].term);
        if (*m > len - i || memcmp(text + i, use_terms[k].term, *m) || (i + *m < len && in_word(text[i + *m])))
            continue;
        return use_terms[k].flag;
    }
    for (*m = 0; i + *m < len && (islower((unsigned char)text[i + *m]) || isdigit((unsigned char)text[i + *m]) ||
                                  text[i + *m] == '_');)
        (*m)++;
    if (!*m || (i + *m < len && in_word(text[i + *m]))) return NULL;
    if (*m == 12 && !memcmp(text + i, "memory_limit", 12) && opt_named("device-memory", 13)) /* the limit's flag */
        return cli_dev.device_profile ? "--device-profile's" : "--device-memory";
    const cli_opt *o = opt_named(text + i, *m);
    if (!o && stem_of(text + i, *m)) o = opt_named(text + i, stem_of(text + i, *m));
    if (!o) return NULL;
    int valued = 0, opens = opener_before(text, i, &valued);
    int value = value_follows(o, text + i + *m, len - i - *m);
    int said = memchr(text + i, '_', *m) || (opens && value == 2) ||
               (err && opens && (opens == 2 || value || (!valued && o->kind == CLI_FLAG)));
    if (!said) return NULL;
    snprintf(flag, cap, "--%s", o->name);
    return flag;
}

/* text[0 .. len) in the command's words into buf[cap]: its length, or 0 when no subcommand
 * registered its words or the text does not fit (it is then said as it is). */
static size_t in_flags(const char *text, size_t len, int err, char *buf, size_t cap) {
    if (!use_nopts && !use_nterms) return 0;
    size_t n = 0;
    char flag[128];
    for (size_t i = 0, m; i < len;) {
        const char *to = i == 0 || !in_word(text[i - 1]) ? term_at(text, len, i, err, &m, flag, sizeof flag) : NULL;
        size_t add = to ? strlen(to) : 1;
        if (n + add >= cap) return 0;
        if (to) memcpy(buf + n, to, add), i += m;
        else buf[n] = text[i++];
        n += add;
    }
    return n;
}

const char *cli_error(void) {
    static _Thread_local char buf[8192], words[8192];
    const char *e = ts_last_error();
    size_t n = in_flags(e, strlen(e), 1, words, sizeof words);
    if (n) words[n] = 0, e = words;
    const char *flag = note_of(e, strlen(e));
    if (!flag) return e;
    snprintf(buf, sizeof buf, "%s (the command's %s)", e, flag);
    return buf;
}

void cli_write_err(void *ctx, const char *text, size_t len) {
    FILE *f = ctx ? ctx : stderr;
    char buf[16384];
    size_t n = in_flags(text, len, 1, buf, sizeof buf);
    if (n) text = buf, len = n;
    const char *flag = note_of(text, len);
    if (!flag || !len || text[len - 1] != '\n') {
        fwrite(text, 1, len, f);
        return;
    }
    fprintf(f, "%.*s (the command's %s)\n", (int)(len - 1), text, flag);
}

void cli_write_out(void *ctx, const char *text, size_t len) {
    char buf[16384];
    size_t n = in_flags(text, len, 0, buf, sizeof buf);
    ts_write_stdio(ctx ? ctx : stdout, n ? buf : text, n ? n : len);
}
