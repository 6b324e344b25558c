/*
 * lib_terms.c — the library's errors as the command says them. The library names what is wrong
 * in its own terms (a field, a struct, a load flag), never in the command's flags; cli_error()
 * is ts_last_error() with the flag that such a term stands for added, and cli_write_err does the
 * same to the lines a library run writes, so that a user of the command reads which flag to give.
 */
#define _GNU_SOURCE /* memmem */
#include "cli.h"

/* A library term, and the flag of the command that sets it. */
static const struct {
    const char *term, *flag;
} TERMS[] = {
    {"TS_LOAD_ALLOW_NONFINITE", "--allow-nonfinite"},
    {"ts_squad_opts.relocate_answers", "--relocate-answers"},
    {"the communicator's timeout", "--comm-timeout"},
};

/* The flag of the first term text[0 .. len) names, or NULL. */
static const char *flag_of(const char *text, size_t len) {
    for (size_t i = 0; i < sizeof TERMS / sizeof *TERMS; i++)
        if (memmem(text, len, TERMS[i].term, strlen(TERMS[i].term))) return TERMS[i].flag;
    return NULL;
}

const char *cli_error(void) {
    static _Thread_local char buf[8192];
    const char *e = ts_last_error(), *flag = flag_of(e, strlen(e));
    if (!flag) return e;
    snprintf(buf, sizeof buf, "%s (the command's %s)", e, flag);
    return buf;
}

void cli_write_err(void *ctx, const char *text, size_t len) {
    FILE *f = ctx ? ctx : stderr;
    const char *flag = flag_of(text, len);
    if (!flag || !len || text[len - 1] != '\n') {
        fwrite(text, 1, len, f);
        return;
    }
    fprintf(f, "%.*s (the command's %s)\n", (int)(len - 1), text, flag);
}
