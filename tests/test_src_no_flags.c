/*
 * test_src_no_flags.c — the libraries never speak in the command's flags. Reads every .c and .h
 * file under src/ (the core, libtessera) and apps/ (the applications, libtessera_apps), from
 * TS_SOURCE_DIR, and fails, naming the file and the line, on a string literal that holds a flag
 * spelling ("--" then a letter, as in "--resume"). Comments may name flags; string literals may
 * not: the libraries' messages name a field, a struct or a file, and the command (cli/) maps them
 * to its flags. The first case checks the scanner itself.
 */
#include "test_util.h"

#include "core/core.h" /* ts_read_file */

#include <ctype.h>
#include <dirent.h>
#include <sys/stat.h>

/* Scan C text: count the string literals holding "--x" (x a lower-case letter), each a failed
 * check naming the file and line when `report`. Comments and character literals are skipped. */
static int scan(const char *text, const char *name, int report) {
    int line = 1, hits = 0;
    for (const char *p = text; *p; p++) {
        if (*p == '\n') line++;
        else if (p[0] == '/' && p[1] == '/') {
            while (*p && *p != '\n') p++;
            if (!*p) break;
            line++;
        } else if (p[0] == '/' && p[1] == '*') {
            for (p += 2; *p && !(p[0] == '*' && p[1] == '/'); p++) line += *p == '\n';
            if (!*p) break;
            p++;
        } else if (*p == '\'') {
            for (p++; *p && *p != '\''; p++)
                if (*p == '\\' && p[1]) p++;
            if (!*p) break;
        } else if (*p == '"') {
            int start = line, hit = 0;
            for (p++; *p && *p != '"'; p++) {
                if (*p == '\\' && p[1]) {
                    p++;
                    continue;
                }
                if (*p == '\n') line++;
                if (p[0] == '-' && p[1] == '-' && islower((unsigned char)p[2])) hit = 1;
            }
            if (hit) {
                hits++;
                if (report) CHECK(0, "%s:%d: a string literal spells a command-line flag", name, start);
            }
            if (!*p) break;
        }
    }
    return hits;
}

static void test_scanner(void) {
    CHECK(scan("x = \"--resume %s\";", "a", 0) == 1, "a flag in a string");
    CHECK(scan("/* --resume */ x = \"resume\"; // --resume\n", "b", 0) == 0, "flags in comments");
    CHECK(scan("x = '-'; y = \"a \\\" --no\"; z = \"-- 1\";", "c", 0) == 1, "escapes; \"-- 1\" is no flag");
    CHECK(scan("while (n > 1 && d[n - 1] == '/') d[--n] = 0;", "d", 0) == 0, "--n outside a string");
}

static void walk(const char *dir, int *nfiles) {
    DIR *d = opendir(dir);
    CHECK(d != NULL, "cannot open %s", dir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        struct stat st;
        if (stat(path, &st) != 0) continue;
        if (S_ISDIR(st.st_mode)) {
            walk(path, nfiles);
            continue;
        }
        size_t n = strlen(e->d_name);
        if (n < 3 || (strcmp(e->d_name + n - 2, ".c") && strcmp(e->d_name + n - 2, ".h"))) continue;
        char *text = ts_read_file(path, NULL);
        CHECK(text != NULL, "%s", ts_last_error());
        if (!text) continue;
        scan(text, path + strlen(TS_SOURCE_DIR) + 1, 1);
        free(text);
        (*nfiles)++;
    }
    closedir(d);
}

/* The core (src/) and the applications (apps/), both library code. */
static void test_src_speaks_no_flags(void) {
    int nsrc = 0, napps = 0;
    walk(TS_SOURCE_DIR "/src", &nsrc);
    walk(TS_SOURCE_DIR "/apps", &napps);
    printf("  %d files under src/ and %d under apps/ read\n", nsrc, napps);
    CHECK(nsrc > 100, "only %d files read under src/", nsrc);
    CHECK(napps > 50, "only %d files read under apps/", napps);
}

int main(int argc, char **argv) {
    tu_args(argc, argv);
    RUN(test_scanner);
    RUN(test_src_speaks_no_flags);
    return tu_finish("test_src_no_flags");
}
