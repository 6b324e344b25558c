/*
 * test_layers.c — every folder of the tree includes only folders below it. Reads each
 * #include "..." of every .c, .h and .def file under src/ (the core), apps/ (the applications)
 * and cli/ (the command), and of the public headers (include/, apps/include/), from
 * TS_SOURCE_DIR; maps the including file and the included header to their folders, and fails,
 * naming the file, the line and the include, on one that climbs (a folder on a higher row, or
 * another folder on the same row), on any circle between folders, on an application reaching
 * into the core's folders and on the core including an application's header.
 *
 * The order is the table `rows` below, the same rows as the diagram in docs/architecture.md:
 * change both together (the last case checks that every folder of the table is in the document).
 * Its entries are paths from the repository's root (tests/test_layer_symbols.py reads them with
 * the regex \{"([a-z/]+)", (\d+)\}: keep the form {"dir", N}). A sub-folder listed in the table
 * (src/backend/cpu, src/graph/passes) is an entry of its own; one not listed is part of its
 * parent's entry.
 *
 * How an include is read:
 *  - a name without a folder that starts with "tessera" ("tessera.h", "tessera_apps.h",
 *    "tessera_ops.h", generated in the build) is a public header, allowed from anywhere — except
 *    that the core (src/, include/) includes no application header (tessera_apps.h and the other
 *    names of apps/include/);
 *  - any other name without a folder ("cli.h", "onnx.pb-c.h") is one of the including folder's own;
 *  - a name with a folder ("graph/ir.h") is looked up under the including file's top folder:
 *    "src/graph" from a file under src/, "apps/graph" from one under apps/. An application never
 *    includes a header of src/ (it is compiled without src/ on its include path), and the command
 *    includes only public headers and its own;
 *  - the public headers themselves (include/, apps/include/) include only public headers.
 */
#include "test_util.h"

#include <dirent.h>
#include <sys/stat.h>

/* The order of layers, bottom row first (docs/architecture.md: keep in sync). A folder may
 * include only folders on lower rows. */
static const struct {
    const char *dir; /* from the repository's root */
    int row;
} rows[] = {
    {"src/core", 0},
    {"src/comm", 1}, {"src/io", 1},
    {"src/graph", 2},
    {"src/ops", 3},
    {"src/graph/passes", 4}, {"src/optim", 4}, {"src/backend", 4}, {"src/onnx", 4},
    {"src/backend/cpu", 5},
    {"src/runtime", 6},
    {"apps/common", 7},
    {"apps/text", 8}, {"apps/vision", 8}, {"apps/audio", 8},
    {"apps/data", 9},
    {"apps/models", 10},
    {"apps/train", 11}, {"apps/ocr", 11}, {"apps/speech", 11},
    {"apps/plan", 12}, {"apps/serve", 12},
    {"cli", 13},
};
enum { NDIRS = sizeof rows / sizeof rows[0] };

/* The including "folder" of a public header (include/, apps/include/): not a row of the table;
 * such a header includes only public headers. */
enum { FROM_PUBLIC_CORE = -2, FROM_PUBLIC_APPS = -3 };

/* The entry of folder `dir` ("src/graph/passes"): its own, else its nearest listed parent's (an
 * unlisted sub-folder is part of its parent's layer); -1 for a folder not in the table. */
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

/* Whether entry `i` is under top folder `top` ("src", "apps"). */
static int under(int i, const char *top) {
    size_t n = strlen(top);
    return i >= 0 && !strncmp(rows[i].dir, top, n) && rows[i].dir[n] == '/';
}

/* Whether `inc` (a name without a folder) is an application's public header: tessera_apps.h and
 * the names of apps/include/ (those of today, and any header found there). */
static int app_header(const char *inc) {
    static const char *const known[] = {"tessera_apps.h", "tessera_bert.h", "tessera_ocr.h", "tessera_plan.h",
                                        "tessera_serve.h", "tessera_speech.h", "tessera_tasks.h", "tessera_text.h"};
    for (size_t i = 0; i < sizeof known / sizeof *known; i++)
        if (!strcmp(inc, known[i])) return 1;
    char path[1024];
    struct stat st;
    snprintf(path, sizeof path, "%s/apps/include/%.255s", TS_SOURCE_DIR, inc);
    return !stat(path, &st);
}

/* What one include is, from folder `from` (a rows entry or FROM_PUBLIC_*) naming header `inc`. */
typedef enum {
    INC_OK,
    INC_PUBLIC,
    INC_UNKNOWN,
    INC_CLIMBS,
    INC_SIDEWAYS,
    INC_APPS_INTO_CORE, /* apps/ including a header of src/ */
    INC_CORE_APP_HEADER, /* src/ or include/ including an application's header */
    INC_NOT_PUBLIC,      /* cli/ or a public header including a folder's header */
} inc_kind;

/* Classify `inc` included from folder index `from`; *to receives the included folder's index
 * (-1 for a public header or an unknown folder). */
static inc_kind classify(int from, const char *inc, int *to) {
    *to = -1;
    const char *slash = strrchr(inc, '/');
    int core = from == FROM_PUBLIC_CORE || under(from, "src");
    if (!slash && !strncmp(inc, "tessera", 7)) return core && app_header(inc) ? INC_CORE_APP_HEADER : INC_PUBLIC;
    if (from < 0) return INC_NOT_PUBLIC; /* a public header: nothing but public headers */
    if (!slash) {
        *to = from;
        return INC_OK;
    }
    char dir[512];
    if (under(from, "src") || under(from, "apps"))
        snprintf(dir, sizeof dir, "%s/%.*s", under(from, "src") ? "src" : "apps", (int)(slash - inc), inc);
    else
        return INC_NOT_PUBLIC; /* cli/: public headers and its own */
    *to = row_index(dir);
    if (*to < 0) {
        if (under(from, "apps")) {
            snprintf(dir, sizeof dir, "src/%.*s", (int)(slash - inc), inc);
            if (row_index(dir) >= 0) return INC_APPS_INTO_CORE;
        }
        return INC_UNKNOWN;
    }
    if (*to == from) return INC_OK;
    if (rows[*to].row > rows[from].row) return INC_CLIMBS;
    if (rows[*to].row == rows[from].row) return INC_SIDEWAYS;
    return INC_OK;
}

/* The name of `from` in messages. */
static const char *from_name(int from) {
    return from == FROM_PUBLIC_CORE ? "include" : from == FROM_PUBLIC_APPS ? "apps/include" : rows[from].dir;
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

/* Check every include of file `rel` (a path under TS_SOURCE_DIR) of folder index `from` (a rows
 * entry, or FROM_PUBLIC_* for a public header). */
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
        CHECK(k != INC_APPS_INTO_CORE, "%s:%d: #include \"%s\" reaches into the core's src/: apps/ includes only "
              "public headers and apps/ folders", rel, ln, inc);
        CHECK(k != INC_CORE_APP_HEADER, "%s:%d: #include \"%s\": the core includes no application header (%s is "
              "core, apps/include/ is the applications')", rel, ln, inc, from_name(from));
        CHECK(k != INC_NOT_PUBLIC, "%s:%d: #include \"%s\": %s/ includes only public headers%s", rel, ln, inc,
              from_name(from), from >= 0 ? " and its own" : "");
        CHECK(k != INC_CLIMBS, "%s:%d: #include \"%s\" climbs: %s (row %d) may not include %s (row %d)", rel, ln,
              inc, rows[from].dir, rows[from].row, rows[to].dir, rows[to].row);
        CHECK(k != INC_SIDEWAYS, "%s:%d: #include \"%s\" goes sideways: %s and %s are both on row %d", rel, ln,
              inc, rows[from].dir, rows[to].dir, rows[from].row);
        if (from >= 0 && to >= 0 && to != from && !edge[from][to]) {
            edge[from][to] = 1;
            snprintf(edge_where[from][to], sizeof edge_where[from][to], "%.140s:%d", rel, ln);
        }
    }
    fclose(f);
}

/* The including folder of the files of folder `rel` (a path from the root): its rows entry, or
 * FROM_PUBLIC_* for the public headers' folders. */
static int folder_of(const char *rel) {
    if (!strcmp(rel, "include")) return FROM_PUBLIC_CORE;
    if (!strcmp(rel, "apps/include")) return FROM_PUBLIC_APPS;
    return row_index(rel);
}

/* Walk folder `rel` (under TS_SOURCE_DIR, a path from the root) and its sub-folders. */
static void walk(const char *rel, int *nfiles, int *nincludes) {
    char path[2048];
    snprintf(path, sizeof path, "%s/%s", TS_SOURCE_DIR, rel);
    DIR *d = opendir(path);
    CHECK(d, "cannot open the folder %s", path);
    if (!d) return;
    int from = folder_of(rel);
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.') continue;
        char sub[1024];
        snprintf(sub, sizeof sub, "%.700s/%.255s", rel, e->d_name);
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", TS_SOURCE_DIR, sub);
        if (stat(path, &st)) continue;
        if (S_ISDIR(st.st_mode)) {
            walk(sub, nfiles, nincludes);
            continue;
        }
        size_t n = strlen(e->d_name);
        int source = (n > 2 && (!strcmp(e->d_name + n - 2, ".c") || !strcmp(e->d_name + n - 2, ".h"))) ||
                     (n > 4 && !strcmp(e->d_name + n - 4, ".def"));
        if (!source) continue;
        CHECK(from != -1, "%s: its folder '%s' is not in the order of layers (rows in tests/test_layers.c and "
              "docs/architecture.md)", sub, rel);
        if (from == -1) continue;
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

/* The checker itself catches what it is for: a climb, a sideways include, an unknown folder, an
 * application reaching into src/, the core including an application's header, the command or a
 * public header including a folder's header, and a circle (so a tree that passes is a tree that
 * was checked). */
static void test_checker_fails_on_bad_includes(void) {
    int to, graph = row_index("src/graph"), ops = row_index("src/ops"), runtime = row_index("src/runtime");
    int text = row_index("apps/text"), data = row_index("apps/data"), train = row_index("apps/train");
    int common = row_index("apps/common"), cli = row_index("cli");
    CHECK(graph >= 0 && ops >= 0 && runtime >= 0, "the table lost src/graph, src/ops or src/runtime");
    CHECK(text >= 0 && data >= 0 && train >= 0 && common >= 0 && cli >= 0,
          "the table lost apps/text, apps/data, apps/train, apps/common or cli");
    CHECK(row_index("graph") < 0 && row_index("src") < 0 && row_index("apps") < 0, "a bare folder name found");
    /* the core's rows */
    CHECK(classify(graph, "ops/op.h", &to) == INC_CLIMBS && to == ops, "graph including ops/op.h not caught");
    CHECK(classify(row_index("src/graph/passes"), "runtime/program.h", &to) == INC_CLIMBS,
          "passes -> runtime not caught");
    CHECK(classify(row_index("src/optim"), "backend/backend.h", &to) == INC_SIDEWAYS, "optim -> backend not caught");
    CHECK(classify(ops, "nowhere/x.h", &to) == INC_UNKNOWN, "an unknown folder not caught");
    CHECK(row_index("src/graph/passes") != graph && row_index("src/onnx/sub") == row_index("src/onnx") &&
          row_index("src/graph/nowhere/deep") == graph && row_index("") < 0, "sub-folders mapped wrong");
    CHECK(classify(runtime, "graph/ir.h", &to) == INC_OK && to == graph, "runtime -> graph refused");
    CHECK(classify(graph, "tessera.h", &to) == INC_PUBLIC, "the public header refused");
    CHECK(classify(graph, "tessera_support.h", &to) == INC_PUBLIC, "tessera_support.h refused");
    CHECK(classify(ops, "bcast.h", &to) == INC_OK && to == ops, "a folder's own header refused");
    /* the core includes no application header */
    CHECK(classify(runtime, "tessera_apps.h", &to) == INC_CORE_APP_HEADER, "core -> tessera_apps.h not caught");
    CHECK(classify(graph, "tessera_bert.h", &to) == INC_CORE_APP_HEADER, "core -> tessera_bert.h not caught");
    CHECK(classify(FROM_PUBLIC_CORE, "tessera_tasks.h", &to) == INC_CORE_APP_HEADER,
          "include/ -> tessera_tasks.h not caught");
    CHECK(classify(FROM_PUBLIC_CORE, "tessera_core.h", &to) == INC_PUBLIC, "include/ -> tessera_core.h refused");
    CHECK(classify(FROM_PUBLIC_CORE, "core/core.h", &to) == INC_NOT_PUBLIC, "include/ -> core/core.h not caught");
    /* the applications: their own folders, resolved under apps/, never src/ */
    CHECK(classify(data, "text/unicode.h", &to) == INC_OK && to == text, "apps/data -> apps/text refused");
    CHECK(classify(text, "common/app.h", &to) == INC_OK && to == common, "apps/text -> apps/common refused");
    CHECK(classify(text, "data/data.h", &to) == INC_CLIMBS && to == data, "apps/text -> apps/data not caught");
    CHECK(classify(row_index("apps/ocr"), "speech/speech_impl.h", &to) == INC_SIDEWAYS,
          "apps/ocr -> apps/speech not caught");
    CHECK(classify(train, "graph/ir.h", &to) == INC_APPS_INTO_CORE, "apps/train -> src/graph not caught");
    CHECK(classify(row_index("apps/plan"), "backend/backend.h", &to) == INC_APPS_INTO_CORE,
          "apps/plan -> src/backend not caught");
    CHECK(classify(text, "core/core.h", &to) == INC_APPS_INTO_CORE, "apps/text -> src/core not caught");
    CHECK(classify(train, "graph/passes/passes.h", &to) == INC_APPS_INTO_CORE, "apps -> src/graph/passes not caught");
    CHECK(classify(train, "nowhere/x.h", &to) == INC_UNKNOWN, "an unknown apps folder not caught");
    CHECK(classify(train, "tessera_apps.h", &to) == INC_PUBLIC && classify(train, "tessera.h", &to) == INC_PUBLIC,
          "an application refused a public header");
    CHECK(classify(FROM_PUBLIC_APPS, "tessera_text.h", &to) == INC_PUBLIC, "apps/include -> tessera_text.h refused");
    CHECK(classify(FROM_PUBLIC_APPS, "text/unicode.h", &to) == INC_NOT_PUBLIC,
          "apps/include -> apps/text not caught");
    /* the command: public headers and its own */
    CHECK(classify(cli, "cli.h", &to) == INC_OK && to == cli, "cli's own header refused");
    CHECK(classify(cli, "tessera_apps.h", &to) == INC_PUBLIC, "cli -> tessera_apps.h refused");
    CHECK(classify(cli, "graph/ir.h", &to) == INC_NOT_PUBLIC && classify(cli, "plan/plan.h", &to) == INC_NOT_PUBLIC,
          "cli reaching into a folder not caught");
    char inc[256];
    CHECK(include_of("  #  include \"graph/ir.h\" /* x */\n", inc, sizeof inc) && !strcmp(inc, "graph/ir.h"),
          "an indented include not read");
    CHECK(!include_of("#include <stdio.h>\n", inc, sizeof inc), "a system include read as ours");
    memset(edge, 0, sizeof edge);
    edge[graph][ops] = edge[ops][runtime] = edge[runtime][graph] = 1;
    char msg[1024];
    CHECK(circle(msg, sizeof msg) && strstr(msg, "src/graph") && strstr(msg, "src/runtime"), "a circle not found");
    memset(edge, 0, sizeof edge);
    edge[runtime][ops] = edge[ops][graph] = edge[train][data] = edge[data][text] = 1;
    CHECK(!circle(msg, sizeof msg), "a circle found where there is none: %s", msg);
}

/* Every include under src/, apps/ and cli/ goes down, no circle joins folders, and the public
 * headers include only public headers. */
static void test_includes_go_down(void) {
    memset(edge, 0, sizeof edge);
    int nfiles = 0, nincludes = 0;
    const char *const tops[] = {"src", "apps", "cli", "include"};
    for (size_t i = 0; i < sizeof tops / sizeof *tops; i++) {
        int f0 = nfiles, i0 = nincludes;
        walk(tops[i], &nfiles, &nincludes);
        printf("    %s/: %d files, %d includes\n", tops[i], nfiles - f0, nincludes - i0);
        CHECK(nfiles - f0 > 5, "only %d files read under %s/", nfiles - f0, tops[i]);
    }
    CHECK(nfiles > 100 && nincludes > 200, "read only %d files, %d includes", nfiles, nincludes);
    char msg[2048];
    CHECK(!circle(msg, sizeof msg), "a circle between folders: %s", msg);
    printf("    %d files, %d includes in all\n", nfiles, nincludes);
}

/* docs/architecture.md names every folder of the table as "<dir>/" (the document and the table
 * are one order, written twice). */
static void test_order_in_docs(void) {
    char path[1024];
    snprintf(path, sizeof path, "%s/docs/architecture.md", TS_SOURCE_DIR);
    FILE *f = fopen(path, "r");
    CHECK(f, "cannot open %s", path);
    if (!f) return;
    static char doc[1 << 17];
    size_t n = fread(doc, 1, sizeof doc - 1, f);
    doc[n] = 0;
    fclose(f);
    for (int i = 0; i < NDIRS; i++) {
        char name[160];
        snprintf(name, sizeof name, "%s/", rows[i].dir);
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
