/*
 * options.h — the one flag parser of every `tessera` subcommand (cli/options.c).
 *
 * A subcommand describes its options in one table: each entry names the flag, its kind, where
 * its value goes, and its help text. From that table come the parse of argv, the keys of
 * `--config FILE` (a JSON object, read first; the flags override it), the `--help` text, the
 * "unknown flag" error with its "did you mean", and the notice for an old spelling.
 */
#ifndef CLI_OPTIONS_H
#define CLI_OPTIONS_H

#include <stdio.h>

/* The kinds of entry.
 *   CLI_STR    `--name VALUE`: a const char * (pointing into argv or the config)
 *   CLI_INT    an int >= min
 *   CLI_FLOAT  a finite double >= 0
 *   CLI_FLAG   `--name`: an int set to 1 (true or false in the config)
 *   CLI_LIST   `--name A B ...`, the values up to the next flag, into a cli_strlist; given again
 *              it adds to them; on the command line it replaces the config's list
 *   CLI_ARGS   the positional arguments (at most one entry: the table's other arguments are flags),
 *              into a cli_strlist; `arg` names them in the usage, `name` is their config key
 *   CLI_TEXT   no option: `help` is printed as it is at this place in the usage (a section) */
typedef enum { CLI_STR, CLI_INT, CLI_FLOAT, CLI_FLAG, CLI_LIST, CLI_ARGS, CLI_TEXT } cli_kind;

/* A list's strings (they point into argv or the config; freed by cli_opts_free). */
typedef struct cli_strlist {
    const char **v;
    int n;
} cli_strlist;

/* One entry. `old` is a former spelling of the flag (and config key), accepted for one release
 * with a one-line notice on stderr naming the new one. */
typedef struct cli_opt {
    const char *name; /* the flag without "--" and the config key; NULL for CLI_TEXT */
    cli_kind kind;
    void *ptr;
    int min;          /* CLI_INT: the smallest value; CLI_STR, CLI_LIST, CLI_ARGS: 1 when required
                         (the parse refuses a run without it; the synopsis names it) */
    const char *arg;  /* the value's name in the usage ("DIR"); NULL for a flag */
    const char *help; /* one or more lines ('\n' between them); the first follows the flag */
    const char *old;  /* a former spelling, or NULL */
} cli_opt;

/* What a parse holds on to (the config's JSON, the lists); free with cli_opts_free. */
typedef struct cli_optset {
    const cli_opt *opts;
    int nopts;
    void *json;
} cli_optset;

/* Parse argv (argv[0] is the subcommand's name, skipped) against opts[0 .. nopts) for
 * `tessera cmd`. `usage` is the head of the help text: what the subcommand does, after the
 * synopsis made from the table ("usage: tessera CMD --model DIR ... [options]", the required
 * entries) unless it starts with "usage:" itself; the option lines are made from the table and
 * `--config FILE` is added. Errors go to
 * stderr as "tessera CMD: message", then a line pointing at --help. Then
 * cli_opts_check_shared runs. Returns 1 to go on,
 * 0 when --help printed the usage to stdout, 2 on a usage error. Free s with cli_opts_free
 * whatever the result. */
int cli_opts_parse(cli_optset *s, const char *cmd, const char *usage, const cli_opt *opts, int nopts, int argc,
                   char **argv);
/* The entry named `name` in s's table, or NULL. */
const cli_opt *cli_opts_find(const cli_optset *s, const char *name);
/* Free what the parse holds (the lists are emptied, the STR values from the config dangle). */
void cli_opts_free(cli_optset *s);
/* Print the usage of `tessera cmd`'s table: the synopsis (see cli_opts_parse), `usage`, then a line
 * per option (help lines indented under it). */
void cli_opts_usage(FILE *f, const char *cmd, const char *usage, const cli_opt *opts, int nopts);

/* The checks of the options every subcommand shares, run after a parse that succeeded (defined by
 * the command, cli/train_common.c): --threads at most ts_max_threads(), --device-profile read into
 * cli_dev. 0, or prints the error and returns 2. */
int cli_opts_check_shared(const char *cmd, const cli_optset *s);
/* After those checks (defined by the command, cli/main.c): the command-wide flags applied to what
 * the subcommand was given. With --strict-device, each device its options "device" and "devices"
 * name (one, or several separated by ',') gets option "fallback" "none" (ts_device_set_option):
 * every program compiled for it refuses a node it has no kernel for. */
void cli_opts_device_flags(const cli_optset *s);

#endif
