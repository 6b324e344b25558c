/*
 * cli_util.h — running the built `tessera` command from a test: a temporary directory to work
 * in, files written into it, `tessera ARGS` run there with stdout / stderr captured, checks on
 * the exit code and messages, and a tiny pretrained BERT (vocabulary + a few pretraining steps)
 * for the fine-tuning tests to start from. Used by tests/test_cli_*.c; include after
 * test_util.h.
 *
 * The command's path comes from TS_CLI (set by CMake to the built `tessera`); without it the
 * tests look for ./tessera (ctest runs tests in the build directory) and skip (exit 77) when it
 * is absent.
 */
#ifndef TS_CLI_UTIL_H
#define TS_CLI_UTIL_H

#include <limits.h>
#include <sys/stat.h>

#ifndef TS_CLI
#define TS_CLI "./tessera"
#endif

static char dir[64], cli[4096]; /* the temporary directory; the command's absolute path */
static char out_text[1 << 16], err_text[1 << 16];

__attribute__((unused)) static void write_str(const char *name, const char *s) {
    char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    if (!f) {
        perror(path);
        exit(1);
    }
    fputs(s, f);
    fclose(f);
}

__attribute__((unused)) static void read_into(const char *name, char *buf, size_t cap) {
    char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(buf, 1, cap - 1, f) : 0;
    buf[n] = 0;
    if (f) fclose(f);
}

__attribute__((unused)) static int exists(const char *name) {
    char path[256];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return stat(path, &st) == 0 && st.st_size > 0;
}

/* Are files a and b (relative to dir) the same, byte for byte (and both readable)? */
__attribute__((unused)) static int same_bytes(const char *a, const char *b) {
    char pa[300], pb[300];
    snprintf(pa, sizeof pa, "%s/%s", dir, a);
    snprintf(pb, sizeof pb, "%s/%s", dir, b);
    FILE *fa = fopen(pa, "rb"), *fb = fopen(pb, "rb");
    int same = fa && fb, ca = 0, cb;
    while (same && ca != EOF) {
        ca = fgetc(fa), cb = fgetc(fb);
        same = ca == cb;
    }
    if (fa) fclose(fa);
    if (fb) fclose(fb);
    return same;
}

/* Run `tessera ARGS` in dir with stdin from `in` (NULL: /dev/null); stdout and stderr land in
 * out_text / err_text. Returns the exit code, or -1 when it died from a signal. */
__attribute__((format(printf, 2, 3), unused)) static int tessera(const char *in, const char *fmt, ...) {
    char args[2048], cmd[8192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    if (in) write_str("stdin.txt", in);
    snprintf(cmd, sizeof cmd, "cd '%s' && '%s' %s <%s >stdout.txt 2>stderr.txt", dir, cli, args,
             in ? "stdin.txt" : "/dev/null");
    int st = system(cmd);
    read_into("stdout.txt", out_text, sizeof out_text);
    read_into("stderr.txt", err_text, sizeof err_text);
    if (st == -1 || !WIFEXITED(st)) return -1;
    return WEXITSTATUS(st);
}

#define CHECK_RAN(rc, want)                                                                                    \
    CHECK((rc) == (want) && !strstr(err_text, "Sanitizer"), "exit %d, want %d\nstdout: %s\nstderr: %s", rc, want, \
          out_text, err_text)

/* The number the last command printed on stdout right after `label` (e.g. "accuracy "), or -1. */
static inline double printed_number(const char *label) {
    const char *a = strstr(out_text, label);
    return a ? atof(a + strlen(label)) : -1;
}

/* Failure: non-zero exit (not a crash), stderr holds `needle`. */
#define CHECK_FAILS(rc, needle)                                                                                  \
    CHECK((rc) > 0 && strstr(err_text, needle) && !strstr(err_text, "Sanitizer"),                                \
          "exit %d, want non-zero with \"%s\" on stderr\nstderr: %s", rc, needle, err_text)

/* The little world of the generated data: animals and what they do. */
__attribute__((unused)) static const char *WORDS_A[] = {"cat", "dog", "bird", "fish", "horse", "mouse"};
__attribute__((unused)) static const char *WORDS_B[] = {"runs", "sleeps", "eats", "jumps", "swims", "sings"};

/* A pretraining corpus of 8 documents of 6 sentences, blank lines between documents, as file
 * `name` in dir. */
__attribute__((unused)) static void write_corpus(const char *name) {
    static char corpus[16384];
    size_t n = 0;
    for (int d = 0; d < 8; d++) {
        for (int s = 0; s < 6; s++)
            n += (size_t)snprintf(corpus + n, sizeof corpus - n, "the %s %s and the %s %s quickly.\n",
                                  WORDS_A[(d + s) % 6], WORDS_B[(d * s) % 6], WORDS_A[(s + 3) % 6], WORDS_B[(d + 1) % 6]);
        n += (size_t)snprintf(corpus + n, sizeof corpus - n, "\n");
    }
    write_str(name, corpus);
}

/* 40 labelled rows "label<TAB>text" under a header: "pos" rows talk about cats and dogs, "neg"
 * rows about fish, horses and mice; the numbers make every row distinct. */
__attribute__((unused)) static void write_labelled(const char *name) {
    static char tsv[8192];
    size_t n = (size_t)snprintf(tsv, sizeof tsv, "label\ttext\n");
    for (int i = 0; i < 40; i++)
        n += (size_t)snprintf(tsv + n, sizeof tsv - n, "%s\tthe %s %s %d times\n", i % 2 ? "pos" : "neg",
                              i % 2 ? WORDS_A[i % 2] : WORDS_A[3 + i % 3], WORDS_B[i % 6], i);
    write_str(name, tsv);
}

/* Find the command and make the temporary directory /tmp/<name>_XXXXXX. Returns 0 to go on, 1
 * on failure; skips the test (tu_skip: exit 77, a failure with CI=true) when the command is not
 * built. */
static int cli_setup(const char *name) {
    if (access(TS_CLI, X_OK) != 0) tu_skip("%s is not built", TS_CLI);
    if (!realpath(TS_CLI, cli)) { /* the commands run in the temporary directory */
        perror(TS_CLI);
        return 1;
    }
    snprintf(dir, sizeof dir, "/tmp/%s_XXXXXX", name);
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    return 0;
}

/* Remove the temporary directory (kept, and named, when TS_TEST_KEEP is set). */
static void cli_cleanup(const char *name) {
    if (getenv("TS_TEST_KEEP")) {
        printf("%s: kept %s\n", name, dir);
        return;
    }
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "%s: could not remove %s\n", name, dir);
}

#endif
