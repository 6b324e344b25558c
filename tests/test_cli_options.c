/*
 * test_cli_options.c — the one flag parser of every `tessera` subcommand (cli/options.c), checked
 * through the command on each subcommand that `tessera --help` lists:
 *  - `--help` exits 0 with the usage on stdout: its synopsis, option lines made from the table
 *    (each of their flags is then accepted, not refused as unknown), and `--config FILE`;
 *  - an unknown flag is refused the same way everywhere: exit 2, "tessera CMD: unknown flag
 *    '--x'" and the pointer to --help, and a misspelt flag gets "did you mean";
 *  - `--config FILE` is read by every subcommand (a key that is no option is named);
 *  - an unknown subcommand gets "did you mean"; --version names the commit and the features;
 *  - an old spelling still works with a one-line notice, and --device / --devices exclude each
 *    other in pretrain;
 *  - the values of a parse, the parser compiled in: lists from the config and the command line.
 */
#include "test_util.h"
#include "cli_util.h"

/* The parser itself, for the cases that look at the values it sets (test_lists): compiled in,
 * with the command's functions it calls given here. */
#include "../cli/options.c"
#include "core/core.h" /* ts_read_file */

int cli_opts_check_shared(const char *cmd, const cli_optset *s) {
    (void)cmd, (void)s;
    return 0;
}
char *cli_read_text(const char *path, size_t *len) { return ts_read_file(path, len); }
void cli_opts_device_flags(const cli_optset *s) { (void)s; }
static int terms_used; /* cli_terms_use was given the table */
void cli_terms_use(const struct cli_opt *opts, int nopts, const cli_term *terms, int nterms) {
    (void)terms, (void)nterms;
    terms_used = opts != NULL && nopts > 0;
}

#include <ctype.h>

#define MAX_CMDS 40

static char cmds[MAX_CMDS][32];
static int ncmds;

/* The subcommands `tessera --help` lists: under its group headings, before "Examples", each a line
 * "  NAME  what it does" (tests/test_cli_front.c checks the groups and that the list is complete). */
static void list_commands(void) {
    ncmds = 0;
    int rc = tessera(NULL, "--help");
    CHECK_RAN(rc, 0);
    const char *end = strstr(out_text, "\nExamples");
    CHECK(end != NULL, "no examples after the subcommands: %s", out_text);
    if (!end) return;
    for (const char *p = out_text; p && p < end && ncmds < MAX_CMDS; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
        if (!strncmp(p, "  ", 2) && islower((unsigned char)p[2])) sscanf(p + 2, "%31s", cmds[ncmds++]);
    CHECK(ncmds >= 19, "%d subcommands listed", ncmds);
}

/* The flags of the usage's option lines ("  --name ..." at the start of a line), into names. */
static int option_lines(const char *usage, char names[][48], int cap) {
    int n = 0;
    for (const char *p = usage; p && *p && n < cap; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
        if (strncmp(p, "  --", 4)) continue;
        int k = 0;
        while (k < 47 && (isalnum((unsigned char)p[2 + k]) || p[2 + k] == '-')) names[n][k] = p[2 + k], k++;
        names[n][k] = 0;
        n++;
    }
    return n;
}

static int cur; /* the subcommand of test_one_command: set before each case forks */

static void test_one_command(void) {
    {
        const char *cmd = cmds[cur];
        int rc = tessera(NULL, "%s --help", cmd);
        char head[64];
        snprintf(head, sizeof head, "usage: tessera %s", cmd);
        CHECK(rc == 0 && !strncmp(out_text, head, strlen(head)), "%s --help: exit %d: %.200s", cmd, rc, out_text);
        CHECK(strstr(out_text, "\n  --config FILE "), "%s --help has no --config line", cmd);
        static char usage[1 << 16];
        snprintf(usage, sizeof usage, "%s", out_text);
        static char names[128][48];
        int n = option_lines(usage, names, 128);
        CHECK(n >= 1, "%s --help lists %d options", cmd, n);
        /* every flag the usage lists is one the parser takes: it is not refused as unknown */
        for (int i = 0; i < n; i++) {
            if (!strcmp(names[i], "--help")) continue;
            /* followed by an unknown flag, so that nothing runs: the listed one is taken (a flag), or
             * wants a value (one with a value), and the unknown one is refused */
            tessera(NULL, "%s %s --no-such-flag", cmd, names[i]);
            char refused[96];
            snprintf(refused, sizeof refused, "unknown flag '%.47s'", names[i]);
            CHECK(!strstr(err_text, refused), "%s %s (listed in its usage) refused: %s", cmd, names[i], err_text);
            CHECK(!strstr(err_text, "Sanitizer"), "%s %s: %s", cmd, names[i], err_text);
        }
        /* an unknown flag: the same refusal everywhere */
        rc = tessera(NULL, "%s --no-such-flag 1", cmd);
        char want[256];
        snprintf(want, sizeof want, "tessera %s: unknown flag '--no-such-flag'\n(tessera %s --help shows the usage)\n",
                 cmd, cmd);
        CHECK(rc == 2 && strstr(err_text, want), "%s --no-such-flag: exit %d: %s", cmd, rc, err_text);
        /* a misspelt flag (its last letter dropped) names the one meant */
        if (n > 0 && strlen(names[0]) > 5) {
            char typo[48];
            snprintf(typo, sizeof typo, "%.*s", (int)strlen(names[0]) - 1, names[0]);
            rc = tessera(NULL, "%s %s x", cmd, typo);
            char mean[96];
            snprintf(mean, sizeof mean, "(did you mean %s?)", names[0]);
            CHECK(rc == 2 && strstr(err_text, mean), "%s %s: exit %d: %s", cmd, typo, rc, err_text);
        }
        /* --config: every subcommand reads it, and names a key that is no option */
        write_str("bad.json", "{\"no_such_key\": 1}");
        rc = tessera(NULL, "%s --config bad.json", cmd);
        CHECK(rc == 2 && strstr(err_text, "--config bad.json: unknown key \"no_such_key\""), "%s --config: exit %d: %s",
              cmd, rc, err_text);
        write_str("trunc.json", "{\"threads\": ");
        rc = tessera(NULL, "%s --config trunc.json", cmd);
        CHECK(rc == 2 && strstr(err_text, "--config trunc.json: not a JSON object"), "%s truncated --config: %d: %s",
              cmd, rc, err_text);
    }
}

static void test_subcommand_typo(void) {
    int rc = tessera(NULL, "pretrian");
    CHECK(rc == 2 && strstr(err_text, "unknown subcommand 'pretrian' (did you mean 'pretrain'?)"), "exit %d: %s", rc,
          err_text);
    rc = tessera(NULL, "zzzz");
    CHECK(rc == 2 && strstr(err_text, "unknown subcommand 'zzzz'; tessera --help lists them\n"), "exit %d: %s", rc,
          err_text);
}

/* --version: the library's version and the commit the build was configured from */
static void test_version(void) {
    int rc = tessera(NULL, "--version");
    char want[64];
    snprintf(want, sizeof want, "tessera %s (commit ", ts_version());
    CHECK(rc == 0 && !strncmp(out_text, want, strlen(want)) && strstr(out_text, "devices in this build: cpu"),
          "exit %d: %s", rc, out_text);
    /* and the features of both libraries, as they say them (ts_build_features, ts_apps_build_features) */
    const char *core = ts_build_features(), *apps = ts_apps_build_features();
    char line[2][160];
    snprintf(line[0], sizeof line[0], "\nfeatures of libtessera: %s\n", *core ? core : "(none)");
    snprintf(line[1], sizeof line[1], "\nfeatures of libtessera_apps: %s\n", *apps ? apps : "(none)");
    CHECK(strstr(out_text, line[0]) && strstr(out_text, line[1]) && strstr(out_text, "\nalso on in this build: "),
          "the features are not as the libraries say (%s%s): %s", line[0], line[1], out_text);
}

static void test_old_spellings(void) {
    /* eval --devices (one device) is now --device: accepted, with a notice, then the next error */
    int rc = tessera(NULL, "eval --model nowhere --data x.tsv --devices cpu");
    CHECK(rc == 2 && strstr(err_text, "tessera eval: --devices is now --device (the old spelling is accepted"),
          "exit %d: %s", rc, err_text);
    CHECK(strstr(err_text, "nowhere"), "the run went on to the model: %s", err_text);
    /* in a config file too */
    write_str("old.json", "{\"devices\": \"cpu\", \"model\": \"nowhere\", \"data\": \"x.tsv\"}");
    rc = tessera(NULL, "eval --config old.json");
    CHECK(rc == 2 && strstr(err_text, "config key devices is now config key device"), "exit %d: %s", rc, err_text);
    /* pretrain: --device is one device, --devices a list; not both */
    write_str("v.txt", "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\na\n");
    write_str("c.txt", "a a a\n");
    rc = tessera(NULL, "pretrain --vocab v.txt --corpus c.txt --out o --device cpu --devices cpu:0,cpu:1");
    CHECK(rc == 2 && strstr(err_text, "--device cpu and --devices cpu:0,cpu:1 exclude each other"), "exit %d: %s", rc,
          err_text);
    CHECK(!exists("o"), "a refused run made its --out");
}

/* Values: a list given twice gathers both; the config's list is replaced by the flags'. */
static void test_values(void) {
    write_str("cfg.json", "{\"max-len\": 0}");
    int rc = tessera(NULL, "tokenize --vocab v.txt --config cfg.json");
    CHECK(rc == 2 && strstr(err_text, "\"max-len\" wants an integer") , "exit %d: %s", rc, err_text);
    rc = tessera(NULL, "eval --model a --data x --batch 0");
    CHECK(rc == 2 && strstr(err_text, "tessera eval: --batch wants an integer >= 1, not '0'"), "exit %d: %s", rc,
          err_text);
    rc = tessera(NULL, "eval --model a --data");
    CHECK(rc == 2 && strstr(err_text, "tessera eval: --data needs a value"), "exit %d: %s", rc, err_text);
    rc = tessera(NULL, "eval --data --model a");
    CHECK(rc == 2 && strstr(err_text, "--data needs a value before --model"), "exit %d: %s", rc, err_text);
    rc = tessera(NULL, "eval --relocate-answers=1 --model a --data x");
    CHECK(rc == 2 && strstr(err_text, "--relocate-answers takes no value"), "exit %d: %s", rc, err_text);
}

/* Lists: the config's list is replaced by the command line's first value, and a list flag given
 * again adds to it (--corpus x --corpus=y z: x, y, z); positional arguments the same; free
 * empties them. An int below its minimum is refused with the flag named. */
static void test_lists(void) {
    write_str("lists.json", "{\"layers\": 3, \"lr\": 0.5, \"corpus\": [\"a.txt\", \"b.txt\"], \"wwm\": true, "
                            "\"files\": [\"f1\"]}");
    char cfg[128];
    snprintf(cfg, sizeof cfg, "%s/lists.json", dir);
    int layers = 1, wwm = 0;
    double lr = 0;
    const char *out = NULL;
    cli_strlist corpus = {0}, files = {0};
    const cli_opt opts[] = {{"layers", CLI_INT, &layers, 1, "N", "layers", NULL}, {"lr", CLI_FLOAT, &lr, 0, "X", "lr", NULL},
                            {"corpus", CLI_LIST, &corpus, 0, "F", "files", NULL}, {"wwm", CLI_FLAG, &wwm, 0, NULL, "wwm", NULL},
                            {"out", CLI_STR, &out, 0, "D", "out", NULL}, {"files", CLI_ARGS, &files, 0, "F...", "args", NULL}};
    cli_optset s;
    char *keep[] = {"t", "--config", cfg, "--layers=4", "--out", "dir", NULL};
    CHECK(cli_opts_parse(&s, "t", "usage\n", opts, 6, 6, keep) == 1, "parse");
    CHECK(layers == 4 && lr == 0.5 && wwm == 1 && out && !strcmp(out, "dir"), "values %d %g %d", layers, lr, wwm);
    CHECK(corpus.n == 2 && !strcmp(corpus.v[1], "b.txt") && files.n == 1, "the config's lists kept");
    cli_opts_free(&s);
    CHECK(corpus.n == 0 && corpus.v == NULL && files.n == 0 && files.v == NULL, "free empties the lists");
    /* a list takes the values up to the next flag: p2 is positional after --layers 2 */
    char *twice[] = {"t", "--config", cfg, "p1", "--corpus", "x", "--layers", "2", "p2", "--corpus=y", "z", NULL};
    CHECK(cli_opts_parse(&s, "t", "usage\n", opts, 6, 11, twice) == 1, "parse twice");
    CHECK(corpus.n == 3 && !strcmp(corpus.v[0], "x") && !strcmp(corpus.v[1], "y") && !strcmp(corpus.v[2], "z"),
          "--corpus x --corpus=y z: %d values", corpus.n);
    CHECK(files.n == 2 && !strcmp(files.v[0], "p1") && !strcmp(files.v[1], "p2"), "positional: %d values", files.n);
    cli_opts_free(&s);
    char *low[] = {"t", "--layers", "0", NULL};
    CHECK(cli_opts_parse(&s, "t", "usage\n", opts, 6, 3, low) == 2 && layers == 2, "a value below min accepted");
    cli_opts_free(&s);
}

/* Required entries (min 1): refused when missing, named in the synopsis, the rest "[options]". */
static void test_required(void) {
    const char *model = NULL;
    int n = 0;
    cli_strlist files = {0};
    const cli_opt opts[] = {{"model", CLI_STR, &model, 1, "DIR", "model", NULL},
                            {"n", CLI_INT, &n, 0, "N", "n", NULL},
                            {"files", CLI_ARGS, &files, 1, "FILE...", "args", NULL}};
    cli_optset s;
    char *none[] = {"t", "f1", NULL}, *both[] = {"t", "--model", "m", "f1", NULL};
    char *nofile[] = {"t", "--model", "m", NULL};
    CHECK(cli_opts_parse(&s, "t", "  what t does\n", opts, 3, 2, none) == 2, "a missing --model accepted");
    cli_opts_free(&s);
    CHECK(cli_opts_parse(&s, "t", "  what t does\n", opts, 3, 3, nofile) == 2, "missing positionals accepted");
    cli_opts_free(&s);
    terms_used = 0;
    CHECK(cli_opts_parse(&s, "t", "  what t does\n", opts, 3, 4, both) == 1 && !strcmp(model, "m") && files.n == 1,
          "a complete command line refused");
    CHECK(terms_used, "the table was not registered for the library's words (cli_terms_use)");
    cli_opts_free(&s);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    cli_opts_usage(f, "t", "  what t does\n", opts, 3);
    fclose(f);
    const char *want = "usage: tessera t --model DIR [options] FILE...\n  what t does\n";
    CHECK(text && !strncmp(text, want, strlen(want)), "synopsis: %s", text ? text : "(none)");
    free(text);
}

int main(int argc, char **argv) {
    tu_args(argc, argv);
    int rc = cli_setup("ts_cli_options");
    if (rc) return rc;
    list_commands(); /* in the parent: the cases below inherit the list */
    for (cur = 0; cur < ncmds; cur++) {
        char name[64];
        snprintf(name, sizeof name, "command_%s", cmds[cur]);
        tu_run(name, test_one_command, 300);
    }
    RUN(test_subcommand_typo);
    RUN(test_version);
    RUN(test_old_spellings);
    RUN(test_values);
    RUN(test_lists);
    RUN(test_required);
    cli_cleanup("ts_cli_options");
    return tu_finish("test_cli_options");
}
