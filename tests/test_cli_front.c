/*
 * test_cli_front.c — the front door of the `tessera` command (cli/main.c) and the licence files:
 *  - `tessera --help` (also `help`, `-h`) groups the subcommands under headings, and lists each of
 *    the dispatch table's (commands[] in cli/main.c, read from the source) once; each of them
 *    answers `--help` with exit 0, and `tessera help NAME` is `tessera NAME --help`;
 *  - the help's example lines run as they are, in order, on a labelled file;
 *  - `tessera version`, `-V` and `--version` print the same, and in a git checkout the commit is
 *    one of the repository's, not "unknown";
 *  - an unknown subcommand (or flag before it) is one line on stderr with the closest match, exit
 *    2; `tessera` alone is a short usage on stderr, exit 2;
 *  - progress on long phases: with TESSERA_PROGRESS_SECONDS tiny, a fine-tuning's log (stdout not a
 *    terminal) has step lines between its epochs' lines and its scoring pass a line on stderr; a
 *    run of seconds with the default period prints neither;
 *  - LICENSE is the Apache License 2.0 with the project's copyright line, and THIRD_PARTY.md names
 *    every data/ folder and npm package scripts/install-deps.sh fetches (read from the script).
 */
#include "test_util.h"
#include "cli_util.h"

#include <ctype.h>

#ifndef TS_SOURCE_DIR
#define TS_SOURCE_DIR "."
#endif

#define MAX_NAMES 64

/* The whole of TS_SOURCE_DIR/rel as a malloc'd string, or NULL. */
static char *source_file(const char *rel) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", TS_SOURCE_DIR, rel);
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    static char buf[1 << 20];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    return strdup(buf);
}

/* The names of cli/main.c's dispatch table: each `{"NAME", cli_` inside `commands[] = {` ... `};`. */
static int table_names(char names[][32]) {
    char *src = source_file("cli/main.c");
    CHECK(src != NULL, "cannot read %s/cli/main.c", TS_SOURCE_DIR);
    if (!src) return 0;
    int n = 0;
    char *p = strstr(src, "commands[] = {"), *end = p ? strstr(p, "\n};") : NULL;
    CHECK(p && end, "no commands[] table in cli/main.c");
    for (p = p ? strstr(p, "{\"") : NULL; p && p < end && n < MAX_NAMES; p = strstr(p + 1, "{\"")) {
        char *q = strchr(p + 2, '"');
        if (q && !strncmp(q, "\", cli_", 7) && q - p - 2 < 32)
            snprintf(names[n++], 32, "%.*s", (int)(q - p - 2), p + 2);
    }
    free(src);
    return n;
}

/* The subcommands the help in out_text lists: before "Examples", the lines "  NAME  summary"; and
 * the number of group headings above them (a line "Heading:" at the margin, after the usage). */
static int help_names(char names[][32], int *groups) {
    int n = 0;
    *groups = 0;
    const char *end = strstr(out_text, "\nExamples");
    CHECK(end != NULL, "no Examples in the help:\n%s", out_text);
    if (!end) return 0;
    for (const char *p = strchr(out_text, '\n'); p && p < end; p = strchr(p + 1, '\n')) {
        const char *line = p + 1, *eol = strchr(line, '\n');
        if (!eol || line >= end) break;
        if (isupper((unsigned char)line[0]) && eol[-1] == ':') ++*groups;
        else if (!strncmp(line, "  ", 2) && islower((unsigned char)line[2]) && n < MAX_NAMES) {
            CHECK(*groups > 0, "subcommand listed before any group heading: %.60s", line);
            sscanf(line + 2, "%31s", names[n++]);
        }
    }
    return n;
}

static void test_help_groups(void) {
    static char table[MAX_NAMES][32], listed[MAX_NAMES][32];
    int ntable = table_names(table), groups = 0;
    CHECK(ntable >= 19, "cli/main.c's commands[] has %d names", ntable);
    int rc = tessera(NULL, "--help");
    CHECK_RAN(rc, 0);
    CHECK(err_text[0] == 0, "--help wrote to stderr: %s", err_text);
    static char help[sizeof out_text];
    snprintf(help, sizeof help, "%s", out_text);
    int nlisted = help_names(listed, &groups);
    CHECK(groups >= 4, "%d group headings in the help:\n%s", groups, help);
    CHECK(nlisted == ntable, "the help lists %d subcommands, commands[] has %d:\n%s", nlisted, ntable, help);
    for (int i = 0; i < ntable; i++) {
        int seen = 0;
        for (int k = 0; k < nlisted; k++) seen += !strcmp(table[i], listed[k]);
        CHECK(seen == 1, "'%s' is listed %d times in the help", table[i], seen);
    }
    CHECK(strstr(help, "README.md and docs/"), "no pointer to the documentation:\n%s", help);
    /* the other spellings print the same */
    const char *same[] = {"help", "-h"};
    for (int i = 0; i < 2; i++) {
        rc = tessera(NULL, "%s", same[i]);
        CHECK(rc == 0 && !strcmp(out_text, help), "tessera %s: exit %d, not the --help text:\n%s", same[i], rc,
              out_text);
    }
    /* every listed subcommand answers --help, and `tessera help NAME` is the same */
    for (int k = 0; k < nlisted; k++) {
        rc = tessera(NULL, "%s --help", listed[k]);
        char head[64];
        snprintf(head, sizeof head, "usage: tessera %.31s", listed[k]);
        CHECK(rc == 0 && !strncmp(out_text, head, strlen(head)), "%s --help: exit %d: %.300s%.300s", listed[k], rc,
              out_text, err_text);
        static char own[sizeof out_text];
        snprintf(own, sizeof own, "%s", out_text);
        rc = tessera(NULL, "help %s", listed[k]);
        CHECK(rc == 0 && !strcmp(out_text, own), "tessera help %s: exit %d, not its --help", listed[k], rc);
    }
}

/* The help's examples, each "  tessera ..." under "Examples", run in order where reviews.tsv is. */
static void test_examples(void) {
    int rc = tessera(NULL, "--help");
    CHECK_RAN(rc, 0);
    static char help[sizeof out_text];
    snprintf(help, sizeof help, "%s", out_text);
    const char *p = strstr(help, "\nExamples");
    CHECK(p != NULL, "no Examples:\n%s", help);
    if (!p) return;
    write_labelled("reviews.tsv");
    int n = 0;
    for (p = strchr(p + 1, '\n'); p && !strncmp(p + 1, "  tessera ", 10); p = strchr(p + 1, '\n')) {
        char line[512];
        size_t len = strcspn(p + 11, "\n");
        snprintf(line, sizeof line, "%.*s", (int)len, p + 11);
        rc = tessera(NULL, "%s", line);
        CHECK_RAN(rc, 0);
        CHECK(rc == 0, "the example `tessera %s` failed", line);
        n++;
    }
    CHECK(n >= 2, "%d example lines", n);
}

/* The hash after "(commit " in out_text, into h. */
static void commit_of(char *h, size_t cap) {
    const char *c = strstr(out_text, "(commit ");
    size_t n = c ? strcspn(c + 8, ",) \n") : 0;
    snprintf(h, cap, "%.*s", (int)n, c ? c + 8 : "");
}

static void test_version(void) {
    int rc = tessera(NULL, "--version");
    CHECK_RAN(rc, 0);
    static char want[sizeof out_text];
    snprintf(want, sizeof want, "%s", out_text);
    char head[64];
    snprintf(head, sizeof head, "tessera %s (commit ", ts_version());
    CHECK(!strncmp(want, head, strlen(head)), "--version: %s", want);
    const char *other[] = {"-V", "version"};
    for (int i = 0; i < 2; i++) {
        rc = tessera(NULL, "%s", other[i]);
        CHECK(rc == 0 && !strcmp(out_text, want), "tessera %s: exit %d:\n%s\nnot as --version:\n%s", other[i], rc,
              out_text, want);
    }
    snprintf(out_text, sizeof out_text, "%s", want);
    char hash[64];
    commit_of(hash, sizeof hash);
    char git[4200];
    snprintf(git, sizeof git, "git -C '%s' rev-parse --git-dir >/dev/null 2>&1", TS_SOURCE_DIR);
    if (system(git) != 0) {
        tu_skip_part("%s is not a git checkout (or git is missing): the commit may say unknown", TS_SOURCE_DIR);
        return;
    }
    size_t hex = strspn(hash, "0123456789abcdef");
    CHECK(strlen(hash) >= 7 && hex == strlen(hash), "the commit is '%s', not a hash, in a git checkout", hash);
    /* one of the repository's commits (the build names the one it was configured from) */
    snprintf(git, sizeof git, "git -C '%s' cat-file -e '%s^{commit}' 2>/dev/null", TS_SOURCE_DIR, hash);
    CHECK(hex >= 7 && system(git) == 0, "commit '%s' is not in %s", hash, TS_SOURCE_DIR);
}

/* stderr is exactly one line holding `want` */
static void check_one_line(int rc, const char *want) {
    CHECK(rc == 2, "exit %d, want 2: %s", rc, err_text);
    CHECK(strstr(err_text, want) && strchr(err_text, '\n') == err_text + strlen(err_text) - 1,
          "stderr is not the one line \"%s\":\n%s", want, err_text);
    CHECK(out_text[0] == 0, "stdout: %s", out_text);
}

static void test_unknown(void) {
    check_one_line(tessera(NULL, "pretrian --out x"),
                   "tessera: unknown subcommand 'pretrian' (did you mean 'pretrain'?); tessera --help lists them");
    check_one_line(tessera(NULL, "zzzz"), "tessera: unknown subcommand 'zzzz'; tessera --help lists them");
    check_one_line(tessera(NULL, "help vocba"), "unknown subcommand 'vocba' (did you mean 'vocab'?)");
    check_one_line(tessera(NULL, "--verison"), "unknown flag '--verison' (did you mean '--version'?)");
    /* no subcommand: the usage, on stderr */
    int rc = tessera(NULL, "%s", "");
    CHECK(rc == 2 && !strncmp(err_text, "usage: tessera SUBCOMMAND", 25) && strstr(err_text, " pretrain ") &&
              out_text[0] == 0,
          "tessera alone: exit %d\nstdout: %s\nstderr: %s", rc, out_text, err_text);
}

/* The data/ folders install-deps.sh fills: each `NAME="$ROOT/data/PATH"` assignment, PATH's last
 * part dropped when it is a file (has a '.'). */
static int deps_folders(const char *script, char folders[][96]) {
    int n = 0;
    for (const char *p = strstr(script, "=\"$ROOT/data/"); p && n < MAX_NAMES; p = strstr(p + 1, "=\"$ROOT/data/")) {
        const char *path = p + 8; /* "data/..." */
        size_t len = strcspn(path, "\"\n");
        size_t last = len; /* the last '/' */
        while (last > 0 && path[last - 1] != '/') last--;
        if (last > 0 && memchr(path + last, '.', len - last)) len = last - 1;
        snprintf(folders[n++], 96, "%.*s", (int)len, path);
    }
    return n;
}

static void test_licences(void) {
    char *lic = source_file("LICENSE");
    CHECK(lic && !strncmp(lic, "Copyright 2026 the tessera authors\n", 35) && strstr(lic, "Apache License") &&
              strstr(lic, "Version 2.0, January 2004") && strstr(lic, "END OF TERMS AND CONDITIONS"),
          "LICENSE is missing or not the Apache License 2.0 with the copyright line");
    free(lic);
    char *third = source_file("THIRD_PARTY.md"), *deps = source_file("scripts/install-deps.sh");
    CHECK(third != NULL, "no THIRD_PARTY.md in %s", TS_SOURCE_DIR);
    CHECK(deps != NULL, "no scripts/install-deps.sh in %s", TS_SOURCE_DIR);
    if (third && deps) {
        static char folders[MAX_NAMES][96];
        int n = deps_folders(deps, folders);
        CHECK(n >= 5, "install-deps.sh fills %d data/ folders (the parse found too few)", n);
        for (int i = 0; i < n; i++) CHECK(strstr(third, folders[i]), "THIRD_PARTY.md does not name %s", folders[i]);
        /* and every npm package it fetches, NAME@VERSION as the script spells it */
        int npm = 0;
        for (const char *p = strstr(deps, "$(npm_fetch "); p; p = strstr(p + 1, "$(npm_fetch ")) {
            char spec[128];
            if (sscanf(p + 12, "%127s", spec) != 1) continue;
            CHECK(strstr(third, spec), "THIRD_PARTY.md does not name %s", spec);
            npm++;
        }
        CHECK(npm >= 5, "install-deps.sh fetches %d npm packages (the parse found too few)", npm);
        CHECK(strstr(third, "CC BY-NC-SA 4.0") && strstr(third, "tessera kws"),
              "THIRD_PARTY.md does not say openWakeWord's licence and who uses it");
    }
    free(third);
    free(deps);
}

static void test_progress(void) {
    write_corpus("corpus.txt");
    write_labelled("rows.tsv");
    CHECK_RAN(tessera(NULL, "vocab --out v.txt --size 120 corpus.txt"), 0);
    CHECK_RAN(tessera(NULL, "pretrain --vocab v.txt --corpus corpus.txt --out pre --layers 1 --hidden 16 --heads 2 "
                            "--intermediate 32 --max-len 32 --threads 1 --max-steps 2"), 0);
    const char *ft = "finetune --model pre --train rows.tsv --out %s --epochs 1 --batch 4 --max-len 32 --threads 1";
    setenv("TESSERA_PROGRESS_SECONDS", "1e-6", 1);
    int rc = tessera(NULL, ft, "ft1");
    unsetenv("TESSERA_PROGRESS_SECONDS");
    CHECK(rc == 0 && strstr(out_text, "step 1/") && strstr(out_text, "loss ") && strstr(out_text, "ETA "),
          "a log's step lines: %d\n%s%s", rc, out_text, err_text);
    CHECK(strstr(err_text, "tessera finetune: scoring ") && strstr(err_text, " rows ("), "the scoring pass:\n%s", err_text);
    rc = tessera(NULL, ft, "ft2");
    CHECK(rc == 0 && !strstr(out_text, "step 1/") && !strstr(err_text, "scoring"), "the default period: %d\n%s%s", rc,
          out_text, err_text);
}

int main(int argc, char **argv) {
    tu_args(argc, argv);
    int rc = cli_setup("ts_cli_front");
    if (rc) return rc;
    RUN(test_help_groups);
    RUN(test_examples);
    RUN(test_version);
    RUN(test_unknown);
    RUN(test_licences);
    RUN(test_progress);
    cli_cleanup("ts_cli_front");
    return tu_finish("test_cli_front");
}
