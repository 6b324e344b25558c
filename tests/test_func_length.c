/*
 * test_func_length.c — the rule "no function in src/, apps/ or cli/ longer than 120 lines,
 * generated tables aside": every function definition in the .c files of src/ and apps/ (at any
 * depth) and cli/ (its own level) of the tree at TS_SOURCE_DIR is found and measured, from the
 * line of its name to the line of its closing brace; one longer than MAX_LINES fails, named by
 * file, line, function and length.
 *  - GENERATED: files of generated tables, not read (apps/text/unicode_tables.c).
 * The scanner is C's surface: comments, strings, character constants and preprocessor lines are
 * skipped; a `{` at file scope right after the `)` of `name(...)` opens a function. A file whose
 * braces do not balance that way (a brace inside #if / #else) fails, naming the file.
 * test_scanner checks the scanner on made-up source: that a long function is found (so the
 * rule can fail), and that tables, strings and comments are not mistaken for functions.
 * test_cli_size: the command's own files (the .c and .h files of cli/) hold at most MAX_CLI_LINES lines
 * in all, the bound that keeps cli/ to flags and printing (docs/architecture.md).
 */
#define _GNU_SOURCE /* nftw */
#include <dirent.h>
#include <ftw.h>
#include <sys/stat.h>

#include "test_util.h"

#define MAX_LINES 120
#define MAX_CLI_LINES 3500

static const char *const GENERATED[] = {"apps/text/unicode_tables.c"};

/* One function definition: its name, the line of its name, its length in lines. */
typedef struct {
    char name[128];
    int line, len;
} func;

/* ------------------------------------------------------------------ the scanner */

/* A token of the file-scope text that may precede a function body: an identifier, or any other
 * single character ('"' stands for a string or character constant, '0' for a number). */
typedef struct {
    char c; /* 'a' for an identifier */
    const char *s;
    int n, line;
} token;

/* Skip from s (at a '"' or '\'') past the constant's closing quote; counts lines. */
static const char *skip_quoted(const char *s, int *line) {
    char q = *s++;
    while (*s && *s != q) {
        if (*s == '\\' && s[1]) s++;
        if (*s == '\n') (*line)++;
        s++;
    }
    return *s ? s + 1 : s;
}

/* Skip a comment at s ("//" or "/ *"); counts lines. */
static const char *skip_comment(const char *s, int *line) {
    if (s[1] == '/') {
        while (*s && *s != '\n') s++;
        return s;
    }
    for (s += 2; *s && !(s[0] == '*' && s[1] == '/'); s++)
        if (*s == '\n') (*line)++;
    return *s ? s + 2 : s;
}

/* Skip a preprocessor line at s (its '#'), with its continuations; stops at the newline. */
static const char *skip_directive(const char *s, int *line) {
    while (*s && *s != '\n') {
        if (s[0] == '\\' && s[1] == '\n') {
            (*line)++;
            s += 2;
        } else if (s[0] == '/' && (s[1] == '*' || s[1] == '/')) {
            s = skip_comment(s, line);
        } else {
            s++;
        }
    }
    return s;
}

/* The function whose body opens after head[0..n): the name before the '(' that matches the
 * last ')', when that name is an identifier; NULL otherwise (a struct, a table, an initialiser). */
static const token *function_name(const token *head, int n) {
    if (n < 3 || head[n - 1].c != ')') return NULL;
    int depth = 0, i = n - 1;
    for (; i >= 0; i--) {
        if (head[i].c == ')') depth++;
        if (head[i].c == '(' && --depth == 0) break;
    }
    if (i < 1 || head[i - 1].c != 'a') return NULL;
    return &head[i - 1];
}

/* The function definitions of C source `text` into out[0..cap); returns how many, or -1 when
 * its braces do not balance (*bad_line: where the scan lost its way). */
static int scan_functions(const char *text, func *out, int cap, int *bad_line) {
    enum { HEAD = 4096 };
    static token head[HEAD];
    int nhead = 0, depth = 0, line = 1, nfound = 0, at_line_start = 1;
    func open = {0};
    *bad_line = 0;
    for (const char *s = text; *s;) {
        char c = *s;
        if (c == '\n') {
            line++, s++, at_line_start = 1;
            continue;
        }
        if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v') {
            s++;
            continue;
        }
        if (c == '#' && at_line_start) {
            s = skip_directive(s, &line);
            continue;
        }
        at_line_start = 0;
        if (c == '/' && (s[1] == '/' || s[1] == '*')) {
            s = skip_comment(s, &line);
            continue;
        }
        token t = {c, s, 1, line};
        if (c == '"' || c == '\'') {
            t.c = '"';
            s = skip_quoted(s, &line);
        } else if (c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) {
            t.c = 'a';
            while (*s == '_' || (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9')) s++;
            t.n = (int)(s - t.s);
        } else if (c >= '0' && c <= '9') {
            t.c = '0';
            while (*s == '.' || *s == '_' || (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9')) s++;
        } else {
            s++;
        }
        if (t.c == '{') {
            if (depth == 0) {
                const token *name = function_name(head, nhead);
                open.line = 0;
                if (name) {
                    snprintf(open.name, sizeof open.name, "%.*s", name->n, name->s);
                    open.line = name->line;
                }
                nhead = 0;
            }
            depth++;
        } else if (t.c == '}') {
            if (--depth < 0) {
                *bad_line = line;
                return -1;
            }
            if (depth == 0 && open.line) {
                open.len = line - open.line + 1;
                if (nfound < cap) out[nfound++] = open;
                open.line = 0;
            }
            if (depth == 0) nhead = 0;
        } else if (depth == 0) {
            if (t.c == ';') {
                nhead = 0;
            } else {
                if (nhead == HEAD) { /* a very long declaration: keep its end */
                    memmove(head, head + HEAD / 2, sizeof *head * (HEAD / 2));
                    nhead = HEAD / 2;
                }
                head[nhead++] = t;
            }
        }
    }
    if (depth != 0) {
        *bad_line = line;
        return -1;
    }
    return nfound;
}

/* ------------------------------------------------------------------ the tree */

static char *read_text(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    size_t got = buf ? fread(buf, 1, (size_t)n, f) : 0;
    fclose(f);
    if (!buf) return NULL;
    buf[got] = 0;
    return buf;
}

static char *files[4096];
static int nfiles;

/* Collects every .c file under the folder walked (nftw callback). */
static int collect(const char *path, const struct stat *sb, int type, struct FTW *ftw) {
    (void)sb, (void)ftw;
    size_t n = strlen(path);
    if (type == FTW_F && n > 2 && !strcmp(path + n - 2, ".c") && nfiles < (int)(sizeof files / sizeof *files))
        files[nfiles++] = strdup(path);
    return 0;
}

static int by_path(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Every .c file of src/ and apps/ (recursively) and cli/ (its own level), measured. */
static void test_tree(void) {
    const char *root = TS_SOURCE_DIR;
    const char *const tops[] = {"src", "apps", "cli"};
    for (size_t t = 0; t < sizeof tops / sizeof *tops; t++) {
        char dir[4096];
        snprintf(dir, sizeof dir, "%s/%s", root, tops[t]);
        int before = nfiles;
        CHECK(nftw(dir, collect, 32, FTW_PHYS) == 0, "cannot walk %s", dir);
        CHECK(nfiles > before, "no .c file found under %s", dir);
    }
    qsort(files, (size_t)nfiles, sizeof *files, by_path);
    int nfunc = 0, nread = 0, longest = 0;
    const size_t rootlen = strlen(root) + 1;
    static func fns[8192];
    for (int i = 0; i < nfiles; i++) {
        const char *rel = files[i] + rootlen; /* src/..., apps/... or cli/... */
        int generated = 0;
        for (size_t g = 0; g < sizeof GENERATED / sizeof *GENERATED; g++) generated |= !strcmp(rel, GENERATED[g]);
        if (generated || (!strncmp(rel, "cli/", 4) && strchr(rel + 4, '/'))) continue;
        char *text = read_text(files[i]);
        CHECK(text != NULL, "cannot read %s", files[i]);
        if (!text) continue;
        int bad = 0, n = scan_functions(text, fns, (int)(sizeof fns / sizeof *fns), &bad);
        free(text);
        CHECK(n >= 0, "%s:%d: the braces do not balance when preprocessor lines are skipped (a brace "
              "inside #if / #else?): write it so that they do", rel, bad);
        nread++;
        for (int f = 0; f < n; f++) {
            nfunc++;
            if (fns[f].len > longest) longest = fns[f].len;
            CHECK(fns[f].len <= MAX_LINES, "%s:%d: function %s is %d lines, longer than %d: cut it into named steps",
                  rel, fns[f].line, fns[f].name, fns[f].len, MAX_LINES);
        }
    }
    CHECK(nread > 100 && nfunc > 1000, "only %d files and %d functions found under %s", nread, nfunc, root);
    printf("  %d files, %d functions, the longest %d lines\n", nread, nfunc, longest);
    for (int i = 0; i < nfiles; i++) free(files[i]);
}

/* Every line of the .c and .h files of cli/ (its own level), counted. */
static void test_cli_size(void) {
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/cli", TS_SOURCE_DIR);
    DIR *d = opendir(dir);
    CHECK(d != NULL, "cannot open %s", dir);
    if (!d) return;
    long lines = 0;
    int nread = 0;
    for (struct dirent *e; (e = readdir(d));) {
        size_t n = strlen(e->d_name);
        if (n < 3 || e->d_name[n - 2] != '.' || (e->d_name[n - 1] != 'c' && e->d_name[n - 1] != 'h')) continue;
        char path[8192];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        char *text = read_text(path);
        CHECK(text != NULL, "cannot read %s", path);
        if (!text) continue;
        for (const char *p = text; *p; p++) lines += *p == '\n';
        free(text);
        nread++;
    }
    closedir(d);
    CHECK(nread > 10, "only %d files under %s", nread, dir);
    CHECK(lines <= MAX_CLI_LINES, "cli/ holds %ld lines (.c and .h), more than %d: logic belongs in apps/ or src/",
          lines, MAX_CLI_LINES);
    printf("  cli/: %d files, %ld lines (at most %d)\n", nread, lines, MAX_CLI_LINES);
}

/* ------------------------------------------------------------------ the scanner, checked */

/* `name(...) {` then n body lines and `}`: a function of n + 2 lines, into buf. */
static size_t write_function(char *buf, size_t cap, const char *name, int nbody) {
    size_t o = (size_t)snprintf(buf, cap, "static int %s(int a, const char *b) {\n", name);
    for (int i = 0; i < nbody && o < cap; i++) o += (size_t)snprintf(buf + o, cap - o, "    a += b[%d];\n", i);
    o += (size_t)snprintf(buf + o, cap - o, "    return a;\n}\n");
    return o;
}

static void test_scanner(void) {
    static char text[65536];
    size_t o = 0;
    o += (size_t)snprintf(text + o, sizeof text - o,
                          "/* a comment { with braces } */\n"
                          "#include <stdio.h>\n"
                          "#define BODY(x) { return (x); }\n"
                          "#define LONG_MACRO(x) \\\n    do { \\\n    } while (0)\n"
                          "static const int table[] = {1, 2, 3};\n"
                          "struct point { int x, y; };\n"
                          "static const struct point origin = (struct point){0, 0};\n"
                          "int prototype(int a);\n"
                          "__attribute__((unused)) static int short_one(void) { return '{'; }\n");
    o += write_function(text + o, sizeof text - o, "exactly_max", MAX_LINES - 3); /* + return: 120 lines */
    o += (size_t)snprintf(text + o, sizeof text - o, "static const char *s = \"}\";\n// a } in a comment\n");
    int long_line = 1;
    for (size_t i = 0; i < o; i++) long_line += text[i] == '\n';
    o += write_function(text + o, sizeof text - o, "too_long", MAX_LINES - 2); /* 121 lines */
    snprintf(text + o, sizeof text - o, "static void (*hook)(void) = 0;\nstatic void last(void)\n{\n}\n");
    func fns[8];
    int bad = 0, n = scan_functions(text, fns, 8, &bad);
    CHECK(n == 4, "%d functions found, want 4 (short_one, exactly_max, too_long, last)", n);
    if (n != 4) return;
    CHECK(!strcmp(fns[0].name, "short_one") && fns[0].len == 1, "%s %d", fns[0].name, fns[0].len);
    CHECK(!strcmp(fns[1].name, "exactly_max") && fns[1].len == MAX_LINES, "%s %d", fns[1].name, fns[1].len);
    CHECK(!strcmp(fns[2].name, "too_long") && fns[2].len == MAX_LINES + 1 && fns[2].line == long_line,
          "%s at line %d (want %d), %d lines", fns[2].name, fns[2].line, long_line, fns[2].len);
    CHECK(!strcmp(fns[3].name, "last") && fns[3].len == 3, "%s %d", fns[3].name, fns[3].len);
    /* braces that do not balance once a preprocessor branch is skipped */
    CHECK(scan_functions("#if A\nint f(void) {\n#else\nint f(int x) {\n#endif\n  return 0;\n}\n", fns, 8, &bad) < 0,
          "unbalanced braces accepted");
}

int main(int argc, char **argv) {
    tu_args(argc, argv);
    RUN(test_scanner);
    RUN(test_tree);
    RUN(test_cli_size);
    return tu_finish("test_func_length");
}
