/*
 * fuzz_cli_options.c — libFuzzer target for the `tessera` command's flag parser (cli/options.c,
 * compiled into this program): the input is a JSON `--config` file, then a NUL byte, then the
 * arguments one a line. The table has an entry of every kind, an old spelling and positional
 * arguments. Whatever the input, the parse returns 0, 1 or 2, a list holds only strings of argv
 * or the config, and a value below an int's minimum is never taken; never a crash, leak or
 * undefined behaviour. The usage is printed once at start (every entry kind through the printer).
 */
#include "fuzz_util.h"

#include "../cli/options.c"
#include "tessera.h"

/* The command's shared checks (cli/train_common.c) are not part of the parser. */
int cli_opts_check_shared(const char *cmd, const cli_optset *s) {
    (void)cmd, (void)s;
    return 0;
}

/* The command's --strict-device hook (cli/main.c): nothing to mark here. */
void cli_opts_device_flags(const cli_optset *s) { (void)s; }

/* The command's registration of the table for the library's words (cli/lib_terms.c): nothing here. */
void cli_terms_use(const struct cli_opt *opts, int nopts, const cli_term *terms, int nterms) {
    (void)opts, (void)nopts, (void)terms, (void)nterms;
}

/* The command's reader (cli/files.c), as the core's. */
char *cli_read_text(const char *path, size_t *len) { return ts_read_file(path, len); }

static const char *str, *need;
static int num, flag;
static double real;
static cli_strlist list, args;

static const cli_opt OPTS[] = {
    {"files", CLI_ARGS, &args, 0, "FILE...", "positional"},
    {"name", CLI_STR, &str, 0, "S", "a string", "old-name"},
    {"need", CLI_STR, &need, 1, "R", "a required string"},
    {"count", CLI_INT, &num, 3, "N", "an int >= 3"},
    {"flag", CLI_FLAG, &flag, 0, NULL, "a flag"},
    {"rate", CLI_FLOAT, &real, 0, "X", "a number"},
    {"items", CLI_LIST, &list, 0, "A", "a list\nover two lines"},
    {NULL, CLI_TEXT, NULL, 0, NULL, "  a section\n"},
};
enum { NOPTS = sizeof OPTS / sizeof *OPTS };

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    fuzz_dir();
    FILE *devnull = fopen("/dev/null", "w");
    if (devnull) {
        cli_opts_usage(devnull, "fuzz", "  what fuzz does (after the synopsis made from the table)\n", OPTS, NOPTS);
        fclose(devnull);
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const uint8_t *nul = memchr(data, 0, size);
    size_t cfg_len = nul ? (size_t)(nul - data) : size;
    const char *cfg = fuzz_write("config.json", data, cfg_len);
    /* argv: "fuzz", "--config", the file (when the input has one), then a line each */
    size_t rest = nul ? size - cfg_len - 1 : 0;
    char *text = malloc(rest + 1);
    char *argv[66];
    int argc = 0;
    argv[argc++] = "fuzz";
    if (nul && cfg_len) argv[argc++] = "--config", argv[argc++] = (char *)cfg;
    if (text) {
        memcpy(text, nul ? nul + 1 : data, rest);
        text[rest] = 0;
        for (char *p = text, *save = NULL, *a; argc < 65 && (a = strtok_r(p, "\n", &save)); p = NULL) argv[argc++] = a;
    }
    argv[argc] = NULL;
    str = need = NULL, num = 3, flag = 0, real = 0;
    cli_optset s;
    int rc = cli_opts_parse(&s, "fuzz", "usage: fuzz\n", OPTS, NOPTS, argc, argv);
    if (rc != 0 && rc != 1 && rc != 2) abort();
    if (rc == 1 && num < 3) abort();
    for (int i = 0; rc == 1 && i < list.n; i++)
        if (!list.v[i]) abort();
    for (int i = 0; rc == 1 && i < args.n; i++)
        if (!args.v[i]) abort();
    cli_opts_free(&s);
    if (list.n || list.v || args.n || args.v) abort(); /* free empties the lists */
    free(text);
    return 0;
}
