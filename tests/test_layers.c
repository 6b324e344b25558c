/*
 * test_layers.c — every folder of src/ (and cli/) includes only folders below it. Reads each
 * #include "..." of every .c, .h and .def file under src/ and cli/ (from TS_SOURCE_DIR), maps the
 * including file and the included header to their folders, and fails, naming the file, the line
 * and the include, on one that climbs (a folder on a higher row, or another folder on the same
 * row) and on any circle between folders.
 *
 * The order is the table `rows` below, the same rows as the diagram in docs/architecture.md:
 * change both together (the last case checks that every folder of the table is in the document).
 * A sub-folder listed in the table (backend/cpu, graph/passes) is an entry of its own; one not
 * listed is part of its parent's entry. The public headers (tessera.h, tessera_backend.h) may be
 * included anywhere; an include without a folder ("cli.h", "onnx.pb-c.h", generated in the
 * build) is one of the including folder's own.
 */
#include "test_util.h"

#include <dirent.h>
#include <sys/stat.h>

/* The order of layers, bottom row first (docs/architecture.md: keep in sync). A folder may
 * include only folders on lower rows. */
static const struct {
    const char *dir; /* relative to src/, or "cli" */
    int row;
} rows[] = {
    {"core", 0},
    {"comm", 1}, {"io", 1}, {"text", 1}, {"vision", 1}, {"audio", 1},
    {"graph", 2}, {"data", 2},
    {"ops", 3}, {"models", 3},
    {"graph/passes", 4}, {"optim", 4}, {"backend", 4}, {"onnx", 4},
    {"backend/cpu", 5},
    {"runtime", 6},
    {"train", 7}, {"ocr", 7}, {"speech", 7},
    {"plan", 8}, {"serve", 8},
    {"cli", 9},
};
enum { NDIRS = sizeof rows / sizeof rows[0] };

/* The entry of folder `dir` ("graph/passes"): its own, else its nearest listed parent's (an
 * unlisted sub-folder is part of its parent's layer); -1 for a top folder not in the table. */
static int row_index(const char *dir) {
    size_t len = strlen(dir);
    for (;;) {
        for (int i = 0; i < NDIRS; i++)
            if (strlen(rows[i].dir) == len && !strncmp(rows[i].dir, dir, len)) return i;
        while (len > 0 && dir[len - 1] != '/') len--;
        if (len == 0) return -1;
        len--; /* drop the '/' */
    }
}

/* What one include is, from folder `from` (a rows entry) naming header `inc`. */
typedef enum { INC_OK, INC_PUBLIC, INC_UNKNOWN, INC_CLIMBS, INC_SIDEWAYS } inc_kind;

/* Classify `inc` included from folder index `from`; *to receives the included folder's index
 * (-1 for a public header or an unknown folder). */
static inc_kind classify(int from, const char *inc, int *to) {
    *to = -1;
    if (!strcmp(inc, "tessera.h") || !strcmp(inc, "tessera_backend.h")) return INC_PUBLIC;
    const char *slash = strrchr(inc, '/');
    if (!slash) {
        *to = from;
        return INC_OK;
    }
    char dir[256];
    snprintf(dir, sizeof dir, "%.*s", (int)(slash - inc), inc);
    *to = row_index(dir);
    if (*to < 0) return INC_UNKNOWN;
    if (*to == from) return INC_OK;
    if (rows[*to].row > rows[from].row) return INC_CLIMBS;
    if (rows[*to].row == rows[from].row) return INC_SIDEWAYS;
    return INC_OK;
}

/* The folder graph seen so far: edge[a][b] = an include from folder a to folder b. */
static unsigned char edge[NDIRS][NDIRS];
/* The first include that made each edge, for messages. */
static char edge_where[NDIRS][NDIRS][160];

/* The #include "..." of one line, into inc; 0 when the line is not one. */
static int include_of(const char *line, char *inc, size_t cap) {
    const char *p = line;
    while (*p == ' ' || *p == '\t') p++;
    if (*p++ != '#') return 0;
    while (*p == ' ' || *p == '\t') p++;
    if (strncmp(p, "include", 7)) return 0;
    p += 7;
    while (*p == ' ' || *p == '\t') p++;
    if (*p++ != '"') return 0;
    const char *end = strchr(p, '"');
    if (!end || (size_t)(end - p) >= cap) return 0;
    snprintf(inc, cap, "%.*s", (int)(end - p), p);
    return 1;
}

/* Check every include of file `rel` (a path under TS_SOURCE_DIR) of folder index `from`. */
static void check_file(const char *rel, int from, int *nincludes) {
    char path[2048];
    snprintf(path, sizeof path, "%s/%s", TS_SOURCE_DIR, rel);
    FILE *f = fopen(path, "r");
    CHECK(f, "cannot open %s", path);
    if (!f) return;
    char line[4096], inc[256];
    for (int ln = 1; fgets(line, sizeof line, f); ln++) {
        if (!include_of(line, inc, sizeof inc)) continue;
        (*nincludes)++;
        int to;
        inc_kind k = classify(from, inc, &to);
        CHECK(k != INC_UNKNOWN, "%s:%d: #include \"%s\": its folder is not in the order of layers (rows in "
              "tests/test_layers.c and docs/architecture.md)", rel, ln, inc);
        CHECK(k != INC_CLIMBS, "%s:%d: #include \"%s\" climbs: %s (row %d) may not include %s (row %d)", rel, ln,
              inc, rows[from].dir, rows[from].row, rows[to].dir, rows[to].row);
        CHECK(k != INC_SIDEWAYS, "%s:%d: #include \"%s\" goes sideways: %s and %s are both on row %d", rel, ln,
              inc, rows[from].dir, rows[to].dir, rows[from].row);
        if (to >= 0 && to != from && !edge[from][to]) {
            edge[from][to] = 1;
            snprintf(edge_where[from][to], sizeof edge_where[from][to], "%.140s:%d", rel, ln);
        }
    }
    fclose(f);
}

/* Walk folder `rel` (under TS_SOURCE_DIR) and its sub-folders; `dir` is its rows name. */
static void walk(const char *rel, const char *dir, int *nfiles, int *nincludes) {
    char path[2048];
    snprintf(path, sizeof path, "%s/%s", TS_SOURCE_DIR, rel);
    DIR *d = opendir(path);
    CHECK(d, "cannot open the folder %s", path);
    if (!d) return;
    int from = row_index(dir);
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.') continue;
        char sub[1024], subdir[512];
        snprintf(sub, sizeof sub, "%.700s/%.255s", rel, e->d_name);
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", TS_SOURCE_DIR, sub);
        if (stat(path, &st)) continue;
        if (S_ISDIR(st.st_mode)) {
            snprintf(subdir, sizeof subdir, "%.200s%s%.255s", dir, *dir ? "/" : "", e->d_name);
            walk(sub, subdir, nfiles, nincludes);
            continue;
        }
        size_t n = strlen(e->d_name);
        int source = (n > 2 && (!strcmp(e->d_name + n - 2, ".c") || !strcmp(e->d_name + n - 2, ".h"))) ||
                     (n > 4 && !strcmp(e->d_name + n - 4, ".def"));
        if (!source) continue;
        CHECK(from >= 0, "%s: its folder '%s' is not in the order of layers (rows in tests/test_layers.c and "
              "docs/architecture.md)", sub, dir);
        if (from < 0) continue;
        (*nfiles)++;
        check_file(sub, from, nincludes);
    }
    closedir(d);
}

/* A circle through folder v, by depth-first search over edge[][]: state 1 on the path, 2 done.
 * On finding one, writes it into msg ("a -> b -> a") and returns 1. */
static int find_circle(int v, int *state, int *path, int depth, char *msg, size_t cap) {
    state[v] = 1;
    path[depth] = v;
    for (int w = 0; w < NDIRS; w++) {
        if (!edge[v][w]) continue;
        if (state[w] == 1) {
            size_t o = 0;
            int start = depth;
            while (path[start] != w) start--;
            for (int i = start; i <= depth; i++)
                o += (size_t)snprintf(msg + o, o < cap ? cap - o : 0, "%s (%s) -> ", rows[path[i]].dir,
                                      edge_where[path[i]][i < depth ? path[i + 1] : w]);
            snprintf(msg + o, o < cap ? cap - o : 0, "%s", rows[w].dir);
            return 1;
        }
        if (!state[w] && find_circle(w, state, path, depth + 1, msg, cap)) return 1;
    }
    state[v] = 2;
    return 0;
}

/* The first circle between folders in edge[][], into msg; 0 when there is none. */
static int circle(char *msg, size_t cap) {
    int state[NDIRS] = {0}, path[NDIRS];
    for (int v = 0; v < NDIRS; v++)
        if (!state[v] && find_circle(v, state, path, 0, msg, cap)) return 1;
    return 0;
}

/* The checker itself catches what it is for: a climb, a sideways include, an unknown folder and
 * a circle (so a tree that passes is a tree that was checked). */
static void test_checker_fails_on_bad_includes(void) {
    int to, graph = row_index("graph"), ops = row_index("ops"), runtime = row_index("runtime");
    CHECK(graph >= 0 && ops >= 0 && runtime >= 0, "the table lost graph, ops or runtime");
    CHECK(classify(graph, "ops/op.h", &to) == INC_CLIMBS && to == ops, "graph including ops/op.h not caught");
    CHECK(classify(row_index("graph/passes"), "runtime/program.h", &to) == INC_CLIMBS, "passes -> runtime not caught");
    CHECK(classify(row_index("optim"), "backend/backend.h", &to) == INC_SIDEWAYS, "optim -> backend not caught");
    CHECK(classify(ops, "nowhere/x.h", &to) == INC_UNKNOWN, "an unknown folder not caught");
    CHECK(row_index("graph/passes") != graph && row_index("onnx/sub") == row_index("onnx") &&
          row_index("graph/nowhere/deep") == graph && row_index("") < 0, "sub-folders mapped wrong");
    CHECK(classify(runtime, "graph/ir.h", &to) == INC_OK, "runtime -> graph refused");
    CHECK(classify(graph, "tessera.h", &to) == INC_PUBLIC, "the public header refused");
    CHECK(classify(ops, "bcast.h", &to) == INC_OK && to == ops, "a folder's own header refused");
    char inc[256];
    CHECK(include_of("  #  include \"graph/ir.h\" /* x */\n", inc, sizeof inc) && !strcmp(inc, "graph/ir.h"),
          "an indented include not read");
    CHECK(!include_of("#include <stdio.h>\n", inc, sizeof inc), "a system include read as ours");
    memset(edge, 0, sizeof edge);
    edge[graph][ops] = edge[ops][runtime] = edge[runtime][graph] = 1;
    char msg[1024];
    CHECK(circle(msg, sizeof msg) && strstr(msg, "graph") && strstr(msg, "runtime"), "a circle not found");
    memset(edge, 0, sizeof edge);
    edge[runtime][ops] = edge[ops][graph] = 1;
    CHECK(!circle(msg, sizeof msg), "a circle found where there is none: %s", msg);
}

/* Every include under src/ and cli/ goes down, and no circle joins folders. */
static void test_includes_go_down(void) {
    memset(edge, 0, sizeof edge);
    int nfiles = 0, nincludes = 0;
    walk("src", "", &nfiles, &nincludes);
    walk("cli", "cli", &nfiles, &nincludes);
    CHECK(nfiles > 100 && nincludes > 200, "read only %d files, %d includes", nfiles, nincludes);
    char msg[2048];
    CHECK(!circle(msg, sizeof msg), "a circle between folders: %s", msg);
    printf("    %d files, %d includes\n", nfiles, nincludes);
}

/* docs/architecture.md names every folder of the table (the document and the table are one
 * order, written twice). */
static void test_order_in_docs(void) {
    char path[1024];
    snprintf(path, sizeof path, "%s/docs/architecture.md", TS_SOURCE_DIR);
    FILE *f = fopen(path, "r");
    CHECK(f, "cannot open %s", path);
    if (!f) return;
    static char doc[1 << 16];
    size_t n = fread(doc, 1, sizeof doc - 1, f);
    doc[n] = 0;
    fclose(f);
    for (int i = 0; i < NDIRS; i++) {
        char name[160];
        snprintf(name, sizeof name, "%s%s/", strcmp(rows[i].dir, "cli") ? "src/" : "", rows[i].dir);
        CHECK(strstr(doc, name), "docs/architecture.md does not name %s (row %d of tests/test_layers.c)", name,
              rows[i].row);
    }
}

int main(void) {
    RUN(test_checker_fails_on_bad_includes);
    RUN(test_includes_go_down);
    RUN(test_order_in_docs);
    return tu_finish("test_layers");
}
