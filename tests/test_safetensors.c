/*
 * test_safetensors.c — the safetensors reader and writer and program checkpoints:
 *  - round trips of f32 / bf16 / f16 / i32 / i64 / u8 tensors (rank 0, zero-size), metadata,
 *    deterministic bytes, sorted header, 8-byte header padding, aligned data;
 *  - the writer's bytes against the format's reference serializations, and hand-built files
 *    (bytes written here from the spec, not by our writer) read back;
 *  - bad files: truncated at several points, a header length past the file, invalid JSON or
 *    UTF-8, unknown dtype, offsets that disagree with the shape, overlaps, gaps, trailing bytes,
 *    duplicates — each an error naming the file and the tensor, never a crash;
 *  - atomic saves: a failing save (file size limit mid-write, a directory in the way, a missing
 *    directory) leaves the old file intact and no temp file behind;
 *  - ts_program_save / ts_program_load: exact round trip into a second program, strict and
 *    non-strict missing parameters, wrong shape / dtype, bf16 and f16 checkpoints into f32
 *    parameters and f32 checkpoints into bf16 parameters.
 */
#include "test_util.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <sys/resource.h>
#include <sys/stat.h>

/* ------------------------------------------------------------------ file helpers */

static char tdir[256];

/* A fresh directory for this case: tdir. */
static void make_dir(void) {
    snprintf(tdir, sizeof tdir, "/tmp/ts_st_XXXXXX");
    if (!mkdtemp(tdir)) { perror("mkdtemp"); exit(1); }
}

static void remove_dir(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    char p[512];
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        struct stat sb;
        if (lstat(p, &sb) == 0 && S_ISDIR(sb.st_mode)) remove_dir(p);
        else unlink(p);
    }
    closedir(d);
    rmdir(dir);
}

static const char *path_in(char *buf, const char *name) {
    snprintf(buf, 512, "%s/%s", tdir, name);
    return buf;
}

static void write_bytes(const char *path, const void *b, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(b, 1, n, f) != n || fclose(f) != 0) { perror(path); exit(1); }
}

/* The whole file; *n its size. NULL if unreadable. */
static uint8_t *read_bytes(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long sz = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = malloc((size_t)sz + 1);
    *n = fread(b, 1, (size_t)sz, f);
    fclose(f);
    return b;
}

/* A file: 8-byte LE length of header, the header text, then the data. */
static void write_st(const char *path, const char *header, const void *data, size_t ndata) {
    size_t hn = strlen(header);
    uint8_t *b = malloc(8 + hn + ndata + 1);
    uint64_t n = hn;
    for (int i = 0; i < 8; i++) b[i] = (uint8_t)(n >> (8 * i));
    memcpy(b + 8, header, hn);
    if (ndata) memcpy(b + 8 + hn, data, ndata);
    write_bytes(path, b, 8 + hn + ndata);
    free(b);
}

/* Entries in tdir whose name contains ".tmp.". */
static int count_temp_files(void) {
    DIR *d = opendir(tdir);
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)))
        if (strstr(e->d_name, ".tmp.")) n++;
    if (d) closedir(d);
    return n;
}

/* Opening must fail; the message must hold the path and each word. TS_TEST_VERBOSE=1 prints it. */
#define EXPECT_BAD(path, ...)                                                                      \
    do {                                                                                           \
        ts_safetensors *st_ = ts_safetensors_open(path);                                           \
        CHECK(st_ == NULL, "opening %s should fail", path);                                        \
        ts_safetensors_close(st_);                                                                 \
        CHECK_ERRMSG(path, __VA_ARGS__);                                                           \
        if (getenv("TS_TEST_VERBOSE")) printf("  %s\n", ts_last_error());                         \
    } while (0)

/* ------------------------------------------------------------------ round trips */

static void test_roundtrip(void) {
    make_dir();
    char p[512], p2[512];
    path_in(p, "rt.safetensors");
    float f[6] = {1.5f, -2.25f, 3e-8f, 1e30f, -0.f, 7.f}, scalar = 42.5f;
    uint16_t bf[4] = {0x3f80, 0xc000, 0x7f80, 0x0001}, hf[8] = {0x3c00, 0xbc00, 0x7bff, 0x0001, 0, 0x8000, 0x3555, 0x7c00};
    int32_t i32[5] = {0, -1, 2147483647, -2147483647 - 1, 12345};
    int64_t i64 = -9007199254740993ll;
    uint8_t u8[3] = {0, 1, 255};
    ts_tensor *t[8] = {
        ts_tensor_from(TS_F32, DIMS(2, 3), f),     ts_tensor_from(TS_BF16, DIMS(4), bf),
        ts_tensor_from(TS_F16, DIMS(2, 2, 2), hf), ts_tensor_from(TS_I32, DIMS(5), i32),
        ts_tensor_from(TS_I64, 0, NULL, &i64),     ts_tensor_from(TS_U8, DIMS(3, 1), u8),
        ts_tensor_from(TS_F32, 0, NULL, &scalar),  ts_tensor_new(TS_F32, DIMS(0, 3)),
    };
    const char *names[8] = {"z.f32", "bert.emb.bf16", "m\"q\\uote", "a.i32", "i64.scalar", "u8\tctl", "f32.scalar", "empty"};
    CHECK_OK(ts_safetensors_save(p, 8, names, (const ts_tensor *const *)t, "{\"format\": \"pt\", \"note\": \"h\\u00e9\"}"));
    CHECK(count_temp_files() == 0, "a temp file was left behind");
    ts_safetensors *st = ts_safetensors_open(p);
    CHECK(st != NULL, "open: %s", ts_last_error());
    if (st) {
        CHECK(ts_safetensors_count(st) == 8, "count %d", ts_safetensors_count(st));
        for (int i = 1; i < ts_safetensors_count(st); i++)
            CHECK(strcmp(ts_safetensors_name(st, i - 1), ts_safetensors_name(st, i)) < 0, "names not sorted");
        CHECK(ts_safetensors_name(st, 8) == NULL && ts_safetensors_name(st, -1) == NULL, "name out of range");
        CHECK(ts_safetensors_metadata(st, "format") && !strcmp(ts_safetensors_metadata(st, "format"), "pt"), "metadata");
        CHECK(ts_safetensors_metadata(st, "note") && !strcmp(ts_safetensors_metadata(st, "note"), "h\xc3\xa9"), "utf-8 metadata");
        CHECK(ts_safetensors_metadata(st, "nope") == NULL, "unknown metadata key");
        for (int i = 0; i < 8; i++) {
            ts_tensor *g = NULL;
            CHECK_OK(ts_safetensors_get(st, names[i], &g));
            CHECK(tu_bitwise_equal(g, t[i]), "tensor '%s' differs after the round trip", names[i]);
            ts_dtype dt;
            int nd = -1;
            int64_t sh[TS_MAX_DIMS];
            CHECK_OK(ts_safetensors_info(st, names[i], &dt, &nd, sh));
            CHECK(dt == ts_tensor_dtype(t[i]) && nd == ts_tensor_ndim(t[i]), "info of '%s'", names[i]);
            ts_tensor_free(g);
        }
        ts_tensor *g = NULL;
        CHECK_STATUS(ts_safetensors_get(st, "missing", &g), TS_ERR_NOT_FOUND);
        CHECK_ERRMSG(p, "missing");
        CHECK(g == NULL, "out set on error");
        ts_safetensors_close(st);
    }
    /* the bytes: header sorted by name, padded to 8, every tensor aligned to its element size */
    size_t n = 0;
    uint8_t *b = read_bytes(p, &n);
    uint64_t hn = 0;
    memcpy(&hn, b, 8);
    CHECK(hn % 8 == 0 && 8 + hn <= n, "header length %llu is not a multiple of 8", (unsigned long long)hn);
    cJSON *root = cJSON_ParseWithLength((const char *)b + 8, hn);
    CHECK(root != NULL, "our header is not JSON");
    const char *prev = "";
    int k = 0;
    for (cJSON *it = root ? root->child : NULL; it; it = it->next, k++) {
        if (!strcmp(it->string, "__metadata__")) { CHECK(k == 0, "__metadata__ is not first"); continue; }
        CHECK(strcmp(prev, it->string) < 0, "header not sorted: '%s' after '%s'", it->string, prev);
        prev = it->string;
        cJSON *off = cJSON_GetObjectItem(it, "data_offsets");
        const char *dt = cJSON_GetObjectItem(it, "dtype")->valuestring;
        int es = !strcmp(dt, "I64") ? 8 : (!strcmp(dt, "F32") || !strcmp(dt, "I32")) ? 4 : (dt[0] == 'U') ? 1 : 2;
        CHECK((int64_t)cJSON_GetArrayItem(off, 0)->valuedouble % es == 0, "'%s' (%s) is not aligned", it->string, dt);
    }
    cJSON_Delete(root);
    /* deterministic: same tensors in another order, same bytes */
    ts_tensor *rt[8];
    const char *rn[8];
    for (int i = 0; i < 8; i++) { rt[i] = t[7 - i]; rn[i] = names[7 - i]; }
    path_in(p2, "rt2.safetensors");
    CHECK_OK(ts_safetensors_save(p2, 8, rn, (const ts_tensor *const *)rt, "{\"note\": \"h\\u00e9\", \"format\": \"pt\"}"));
    size_t n2 = 0;
    uint8_t *b2 = read_bytes(p2, &n2);
    CHECK(b2 && n2 == n && memcmp(b, b2, n) == 0, "saving the same tensors in another order gives other bytes");
    free(b);
    free(b2);
    /* bad arguments to save */
    const char *dup[2] = {"x", "x"};
    const ts_tensor *two[2] = {t[0], t[1]};
    CHECK_STATUS(ts_safetensors_save(p2, 2, dup, two, NULL), TS_ERR_ARG);
    CHECK_ERRMSG("'x'", "twice");
    const char *meta_name[1] = {"__metadata__"};
    CHECK_STATUS(ts_safetensors_save(p2, 1, meta_name, two, NULL), TS_ERR_ARG);
    CHECK_STATUS(ts_safetensors_save(p2, 1, names, two, "[1, 2]"), TS_ERR_ARG);
    CHECK_STATUS(ts_safetensors_save(p2, 1, names, two, "{\"a\": 3}"), TS_ERR_ARG);
    CHECK_STATUS(ts_safetensors_save(p2, 1, names, two, "{not json"), TS_ERR_ARG);
    CHECK_STATUS(ts_safetensors_save(p2, 1, names, two, "{} x"), TS_ERR_ARG);
    CHECK_STATUS(ts_safetensors_save(NULL, 1, names, two, NULL), TS_ERR_ARG);
    const ts_tensor *none[1] = {NULL};
    CHECK_STATUS(ts_safetensors_save(p2, 1, names, none, NULL), TS_ERR_ARG);
    CHECK(ts_safetensors_open(NULL) == NULL, "open(NULL)");
    CHECK(ts_safetensors_count(NULL) == 0 && ts_safetensors_name(NULL, 0) == NULL, "NULL handle");
    for (int i = 0; i < 8; i++) ts_tensor_free(t[i]);
    remove_dir(tdir);
}

/* Our writer's bytes against the serializations the format's reference implementation
 * produces (its own unit tests): one f32 tensor, the empty file, metadata only. */
static void test_reference_bytes(void) {
    make_dir();
    char p[512];
    path_in(p, "ref.safetensors");
    float v[6] = {0, 1, 2, 3, 4, 5};
    struct { const char *name, *header; int ndim; int64_t shape[4]; const char *meta; } cases[] = {
        {"attn.0", "{\"attn.0\":{\"dtype\":\"F32\",\"shape\":[1,2,3],\"data_offsets\":[0,24]}}", 3, {1, 2, 3}, NULL},
        {"attn0", "{\"attn0\":{\"dtype\":\"F32\",\"shape\":[1,1,2,3],\"data_offsets\":[0,24]}}       ", 4, {1, 1, 2, 3}, NULL},
        {NULL, "{}      ", 0, {0}, NULL},
        {NULL, "{\"__metadata__\":{\"framework\":\"pt\"}}     ", 0, {0}, "{\"framework\":\"pt\"}"},
    };
    for (int c = 0; c < 4; c++) {
        ts_tensor *t = cases[c].name ? ts_tensor_from(TS_F32, cases[c].ndim, cases[c].shape, v) : NULL;
        const ts_tensor *ts[1] = {t};
        const char *nm[1] = {cases[c].name};
        CHECK_OK(ts_safetensors_save(p, t ? 1 : 0, nm, ts, cases[c].meta));
        size_t hn = strlen(cases[c].header), nd = t ? 24 : 0, n = 0;
        uint8_t *want = calloc(1, 8 + hn + nd), *got = read_bytes(p, &n);
        want[0] = (uint8_t)hn;
        memcpy(want + 8, cases[c].header, hn);
        if (nd) memcpy(want + 8 + hn, v, nd);
        CHECK(got && n == 8 + hn + nd && memcmp(got, want, n) == 0, "case %d: bytes differ from the reference", c);
        ts_safetensors *st = ts_safetensors_open(p);
        CHECK(st && ts_safetensors_count(st) == (t ? 1 : 0), "case %d: reopen: %s", c, ts_last_error());
        ts_safetensors_close(st);
        free(want);
        free(got);
        ts_tensor_free(t);
    }
    remove_dir(tdir);
}

/* A file built byte by byte from the spec: unpadded header (so the data is not 8-aligned),
 * entries in arbitrary order, dtypes tessera lacks, BOOL, extra entry fields. */
static void test_hand_built(void) {
    make_dir();
    char p[512];
    path_in(p, "hand.safetensors");
    const char *hdr =
        "{\"b\":{\"dtype\":\"I64\",\"shape\":[2],\"data_offsets\":[8,24]},"
        " \"a\" : {\"shape\":[2], \"dtype\":\"F32\", \"data_offsets\":[0,8]},\n"
        "\"h\":{\"dtype\":\"F16\",\"shape\":[1],\"data_offsets\":[26,28]},"
        "\"bf\":{\"dtype\":\"BF16\",\"shape\":[1],\"data_offsets\":[24,26],\"extra\":1},"
        "\"d\":{\"dtype\":\"F64\",\"shape\":[],\"data_offsets\":[28,36]},"
        "\"flag\":{\"dtype\":\"BOOL\",\"shape\":[3],\"data_offsets\":[36,39]},"
        "\"e\":{\"dtype\":\"I32\",\"shape\":[0,4],\"data_offsets\":[39,39]},"
        "\"__metadata__\":{\"k\":\"v\"}} \t";
    static const uint8_t data[39] = {
        0x00, 0x00, 0xc0, 0x3f, 0x00, 0x00, 0x00, 0xc0, /* a: 1.5f, -2.0f */
        0x07, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, /* b: 7, -1 */
        0x80, 0x3f,                                     /* bf: 1.0 */
        0x00, 0xbc,                                     /* h: -1.0 */
        0, 0, 0, 0, 0, 0, 0xf0, 0x3f,                   /* d: 1.0 (F64) */
        1, 0, 1,                                        /* flag */
    };
    write_st(p, hdr, data, sizeof data);
    ts_safetensors *st = ts_safetensors_open(p);
    CHECK(st != NULL, "open: %s", ts_last_error());
    if (!st) { remove_dir(tdir); return; }
    CHECK(ts_safetensors_count(st) == 7, "count %d", ts_safetensors_count(st));
    CHECK(!strcmp(ts_safetensors_name(st, 0), "a") && !strcmp(ts_safetensors_name(st, 6), "h"), "sorted names");
    CHECK(ts_safetensors_metadata(st, "k") && !strcmp(ts_safetensors_metadata(st, "k"), "v"), "metadata");
    ts_tensor *t = NULL;
    if (CHECK_OK(ts_safetensors_get(st, "a", &t)) == TS_OK) {
        CHECK(ts_tensor_dtype(t) == TS_F32 && ts_tensor_ndim(t) == 1 && ts_tensor_shape(t)[0] == 2 &&
                  tu_f32(t)[0] == 1.5f && tu_f32(t)[1] == -2.f, "a");
        ts_tensor_free(t);
    }
    if (CHECK_OK(ts_safetensors_get(st, "b", &t)) == TS_OK) {
        int64_t *d = ts_tensor_data(t);
        CHECK(ts_tensor_dtype(t) == TS_I64 && d[0] == 7 && d[1] == -1, "b");
        ts_tensor_free(t);
    }
    if (CHECK_OK(ts_safetensors_get(st, "bf", &t)) == TS_OK) {
        CHECK(ts_tensor_dtype(t) == TS_BF16 && *(uint16_t *)ts_tensor_data(t) == 0x3f80, "bf");
        ts_tensor_free(t);
    }
    if (CHECK_OK(ts_safetensors_get(st, "h", &t)) == TS_OK) {
        float x;
        ts_f16_to_f32(ts_tensor_data(t), &x, 1);
        CHECK(ts_tensor_dtype(t) == TS_F16 && x == -1.f, "h");
        ts_tensor_free(t);
    }
    if (CHECK_OK(ts_safetensors_get(st, "flag", &t)) == TS_OK) {
        uint8_t *d = ts_tensor_data(t);
        CHECK(ts_tensor_dtype(t) == TS_U8 && d[0] == 1 && d[1] == 0 && d[2] == 1, "BOOL reads as u8");
        ts_tensor_free(t);
    }
    if (CHECK_OK(ts_safetensors_get(st, "e", &t)) == TS_OK) {
        CHECK(ts_tensor_numel(t) == 0 && ts_tensor_ndim(t) == 2 && ts_tensor_shape(t)[1] == 4, "zero-size");
        ts_tensor_free(t);
    }
    CHECK_STATUS(ts_safetensors_get(st, "d", &t), TS_ERR_UNSUPPORTED);
    CHECK_ERRMSG(p, "'d'", "F64");
    ts_safetensors_close(st);

    /* a program loads the hand-built F32 / BF16 / F16 tensors, converting to its dtypes */
    ts_graph *g = ts_graph_new();
    ts_param(g, "a", TS_BF16, DIMS(2), ts_init_zeros());
    ts_value bfv = ts_param(g, "bf", TS_F32, DIMS(1), ts_init_zeros());
    ts_name(g, ts_add(g, bfv, ts_param(g, "h", TS_F32, DIMS(1), ts_init_zeros())), "sum");
    ts_program *pr = ts_compile(g, &(ts_compile_opts){.inference = 1});
    CHECK(pr != NULL, "compile: %s", ts_last_error());
    if (pr) {
        int miss = -1;
        CHECK_OK(ts_program_load(pr, p, 1, &miss));
        CHECK(miss == 0, "missing %d", miss);
        ts_tensor *a = NULL, *b = NULL, *h = NULL;
        CHECK_OK(ts_program_get_param(pr, "a", &a));
        CHECK_OK(ts_program_get_param(pr, "bf", &b));
        CHECK_OK(ts_program_get_param(pr, "h", &h));
        if (a && b && h) {
            uint16_t *ad = ts_tensor_data(a);
            CHECK(ad[0] == 0x3fc0 && ad[1] == 0xc000, "f32 -> bf16 load: %04x %04x", ad[0], ad[1]);
            CHECK(tu_f32(b)[0] == 1.f && tu_f32(h)[0] == -1.f, "bf16 / f16 -> f32 load");
        }
        ts_tensor_free(a);
        ts_tensor_free(b);
        ts_tensor_free(h);
        ts_program_free(pr);
    }
    ts_graph_free(g);
    remove_dir(tdir);
}

/* ------------------------------------------------------------------ bad files */

static void test_truncated(void) {
    make_dir();
    char p[512], q[512];
    path_in(p, "full.safetensors");
    path_in(q, "cut.safetensors");
    float v[12] = {0};
    ts_tensor *a = ts_tensor_from(TS_F32, DIMS(3, 4), v), *b = ts_tensor_new(TS_I64, DIMS(5));
    const ts_tensor *ts[2] = {a, b};
    const char *nm[2] = {"bert.pooler.dense.weight", "ids"};
    CHECK_OK(ts_safetensors_save(p, 2, nm, ts, NULL));
    size_t n = 0;
    uint8_t *full = read_bytes(p, &n);
    uint64_t hn;
    memcpy(&hn, full, 8);
    size_t cuts[] = {0, 3, 7, 8, 8 + (size_t)hn / 2, 8 + (size_t)hn - 1, 8 + (size_t)hn, 8 + (size_t)hn + 40, n - 1};
    for (size_t c = 0; c < sizeof cuts / sizeof cuts[0]; c++) {
        write_bytes(q, full, cuts[c]);
        ts_safetensors *st = ts_safetensors_open(q);
        CHECK(st == NULL, "a file cut at byte %zu of %zu opened", cuts[c], n);
        ts_safetensors_close(st);
        CHECK_ERRMSG(q, "truncated");
        if (cuts[c] >= 8 + hn) CHECK_ERRMSG("tensor '", "data_offsets", "exceed the file's data size");
        else if (cuts[c] >= 8) CHECK_ERRMSG("header length");
    }
    /* the data cut inside the first tensor stored (ids, i64 [0, 40]): both are out of range */
    write_bytes(q, full, 8 + (size_t)hn + 20);
    EXPECT_BAD(q, "tensor '", "exceed the file's data size 20", "truncated");
    /* ...and inside the second: names the f32 tensor */
    write_bytes(q, full, n - 1);
    EXPECT_BAD(q, "'bert.pooler.dense.weight'", "data_offsets [40, 88]", "exceed the file's data size 87");
    /* the program load path reports the same, as a status */
    ts_graph *g = ts_graph_new();
    ts_name(g, ts_scale(g, ts_param(g, "ids", TS_F32, DIMS(5), ts_init_zeros()), 2.f, 0.f), "y");
    ts_program *pr = ts_compile(g, &(ts_compile_opts){.inference = 1});
    if (pr) {
        CHECK_STATUS(ts_program_load(pr, q, 0, NULL), TS_ERR_IO);
        CHECK_ERRMSG(q, "truncated");
        char nf[512];
        CHECK_STATUS(ts_program_load(pr, path_in(nf, "no-such-file.safetensors"), 0, NULL), TS_ERR_IO);
        CHECK_ERRMSG(nf, "No such file");
        ts_program_free(pr);
    }
    ts_graph_free(g);
    free(full);
    ts_tensor_free(a);
    ts_tensor_free(b);
    remove_dir(tdir);
}

static void test_bad_headers(void) {
    make_dir();
    char p[512];
    path_in(p, "bad.safetensors");
    uint8_t zeros[64] = {0};
    /* header length beyond the file / beyond the format's limit */
    uint8_t b[16] = {0};
    uint64_t big = 9;
    memcpy(b, &big, 8);
    memcpy(b + 8, "{}      ", 8);
    write_bytes(p, b, 16);
    EXPECT_BAD(p, "header length 9", "exceeds", "truncated");
    big = 1ull << 40;
    memcpy(b, &big, 8);
    write_bytes(p, b, 16);
    EXPECT_BAD(p, "header length 1099511627776", "limit");
    big = ~0ull;
    memcpy(b, &big, 8);
    write_bytes(p, b, 16);
    EXPECT_BAD(p, "header length");
    /* invalid JSON, trailing garbage, not an object, not UTF-8, not starting with '{' */
    write_st(p, "{\"a\": {\"dtype\": \"F32\", ", NULL, 0);
    EXPECT_BAD(p, "not valid JSON");
    write_st(p, "{} x", NULL, 0);
    EXPECT_BAD(p, "after the header");
    write_st(p, "{}\0\0", NULL, 0); /* strlen stops at the NULs: a valid "{}" header */
    ts_safetensors *ok = ts_safetensors_open(p);
    CHECK(ok != NULL, "'{}' should open: %s", ts_last_error());
    ts_safetensors_close(ok);
    write_st(p, " {}", NULL, 0);
    EXPECT_BAD(p, "'{'");
    write_st(p, "{\"\xff\": 1}", NULL, 0);
    EXPECT_BAD(p, "UTF-8");
    write_st(p, "{\"a\": 1}", NULL, 0);
    EXPECT_BAD(p, "'a'", "not an object");
    /* entries */
    write_st(p, "{\"w\":{\"dtype\":\"F128\",\"shape\":[2],\"data_offsets\":[0,8]}}", zeros, 8);
    EXPECT_BAD(p, "'w'", "unknown dtype", "F128");
    write_st(p, "{\"w\":{\"dtype\":7,\"shape\":[2],\"data_offsets\":[0,8]}}", zeros, 8);
    EXPECT_BAD(p, "'w'", "dtype");
    write_st(p, "{\"w\":{\"dtype\":\"F32\",\"data_offsets\":[0,8]}}", zeros, 8);
    EXPECT_BAD(p, "'w'", "shape");
    write_st(p, "{\"w\":{\"dtype\":\"F32\",\"shape\":[2,-1],\"data_offsets\":[0,8]}}", zeros, 8);
    EXPECT_BAD(p, "'w'", "shape[1]", "-1");
    write_st(p, "{\"w\":{\"dtype\":\"F32\",\"shape\":[2.5],\"data_offsets\":[0,8]}}", zeros, 8);
    EXPECT_BAD(p, "'w'", "shape[0]");
    write_st(p, "{\"w\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296,4294967296],\"data_offsets\":[0,8]}}", zeros, 8);
    EXPECT_BAD(p, "'w'", "overflows");
    write_st(p, "{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,12]}}", zeros, 12);
    EXPECT_BAD(p, "'w'", "data_offsets [0, 12]", "12 bytes", "[2]", "needs 8");
    write_st(p, "{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,0]}}", zeros, 8);
    EXPECT_BAD(p, "'w'", "data_offsets");
    write_st(p, "{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0]}}", zeros, 8);
    EXPECT_BAD(p, "'w'", "data_offsets");
    write_st(p, "{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,\"8\"]}}", zeros, 8);
    EXPECT_BAD(p, "'w'", "data_offsets");
    write_st(p, "{\"w\":{\"dtype\":\"F4\",\"shape\":[3],\"data_offsets\":[0,2]}}", zeros, 2);
    EXPECT_BAD(p, "'w'", "whole bytes");
    /* tiling: overlap, gap, bytes after the last tensor, gap at the start */
    write_st(p, "{\"u\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                "\"v\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}", zeros, 12);
    EXPECT_BAD(p, "'v'", "overlap", "'u'");
    write_st(p, "{\"u\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                "\"v\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[12,20]}}", zeros, 20);
    EXPECT_BAD(p, "'v'", "gap of 4 bytes", "'u'");
    write_st(p, "{\"u\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}", zeros, 12);
    EXPECT_BAD(p, "'u'", "gap");
    write_st(p, "{\"u\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", zeros, 9);
    EXPECT_BAD(p, "1 bytes of data follow the last tensor", "'u'");
    write_st(p, "{}", zeros, 3);
    EXPECT_BAD(p, "no tensors", "3 bytes");
    /* duplicates and bad metadata */
    write_st(p, "{\"u\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
                "\"u\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", zeros, 8);
    EXPECT_BAD(p, "'u'", "twice");
    write_st(p, "{\"__metadata__\":{\"a\":1}}", NULL, 0);
    EXPECT_BAD(p, "__metadata__", "'a'", "not a string");
    write_st(p, "{\"__metadata__\":[]}", NULL, 0);
    EXPECT_BAD(p, "__metadata__");
    /* too short, empty, a directory, missing */
    write_bytes(p, zeros, 5);
    EXPECT_BAD(p, "5 bytes", "truncated");
    write_bytes(p, zeros, 0);
    EXPECT_BAD(p, "0 bytes");
    EXPECT_BAD(tdir, "not a regular file");
    char m[512];
    EXPECT_BAD(path_in(m, "missing.safetensors"), "cannot open");
    remove_dir(tdir);
}

/* ------------------------------------------------------------------ atomic saves */

static void test_atomic_save(void) {
    make_dir();
    char p[512], d[512], nd[512];
    path_in(p, "ckpt.safetensors");
    float small[4] = {1, 2, 3, 4};
    ts_tensor *old = ts_tensor_from(TS_F32, DIMS(4), small), *big = ts_tensor_new(TS_F32, DIMS(1 << 18));
    const char *nm[1] = {"w"};
    const ts_tensor *o1[1] = {old}, *b1[1] = {big};
    CHECK_OK(ts_safetensors_save(p, 1, nm, o1, NULL));
    size_t n0 = 0, n1 = 0;
    uint8_t *before = read_bytes(p, &n0);

    /* the write fails midway: a 64 KiB file size limit against a 1 MiB tensor */
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit saved, lim = {65536, 65536};
    getrlimit(RLIMIT_FSIZE, &saved);
    lim.rlim_max = saved.rlim_max;
    CHECK(setrlimit(RLIMIT_FSIZE, &lim) == 0, "setrlimit");
    CHECK_STATUS(ts_safetensors_save(p, 1, nm, b1, NULL), TS_ERR_IO);
    CHECK_ERRMSG(p, "write failed");
    setrlimit(RLIMIT_FSIZE, &saved);
    uint8_t *after = read_bytes(p, &n1);
    CHECK(after && n1 == n0 && memcmp(before, after, n0) == 0, "the old file changed after a failed save");
    CHECK(count_temp_files() == 0, "a temp file was left after a failed save");
    free(after);

    /* a directory where the file should go: rename fails, the directory stays, no temp file */
    path_in(d, "adir");
    mkdir(d, 0755);
    CHECK_STATUS(ts_safetensors_save(d, 1, nm, o1, NULL), TS_ERR_IO);
    CHECK_ERRMSG(d);
    struct stat sb;
    CHECK(stat(d, &sb) == 0 && S_ISDIR(sb.st_mode), "the directory was replaced");
    CHECK(count_temp_files() == 0, "a temp file was left after a failed rename");

    /* a directory that does not exist */
    snprintf(nd, sizeof nd, "%s/no/such/dir/x.safetensors", tdir);
    CHECK_STATUS(ts_safetensors_save(nd, 1, nm, o1, NULL), TS_ERR_IO);
    CHECK_ERRMSG(nd, "temporary");

    /* the program save path fails the same way and leaves the old file */
    ts_graph *g = ts_graph_new();
    ts_name(g, ts_scale(g, ts_param(g, "w", TS_F32, DIMS(1 << 18), ts_init_ones()), 2.f, 0.f), "y");
    ts_program *pr = ts_compile(g, &(ts_compile_opts){.inference = 1});
    if (pr) {
        CHECK(setrlimit(RLIMIT_FSIZE, &lim) == 0, "setrlimit");
        CHECK_STATUS(ts_program_save(pr, p, TS_F32), TS_ERR_IO);
        setrlimit(RLIMIT_FSIZE, &saved);
        after = read_bytes(p, &n1);
        CHECK(after && n1 == n0 && memcmp(before, after, n0) == 0, "the old file changed after a failed program save");
        CHECK(count_temp_files() == 0, "a temp file was left after a failed program save");
        free(after);
        /* and a successful save replaces it */
        CHECK_OK(ts_program_save(pr, p, TS_F32));
        ts_safetensors *st = ts_safetensors_open(p);
        ts_dtype dt;
        int nd2 = 0;
        int64_t sh[TS_MAX_DIMS];
        CHECK(st && ts_safetensors_info(st, "w", &dt, &nd2, sh) == TS_OK && nd2 == 1 && sh[0] == 1 << 18,
              "the new file: %s", ts_last_error());
        ts_safetensors_close(st);
        ts_program_free(pr);
    }
    ts_graph_free(g);
    CHECK(count_temp_files() == 0, "temp files left");
    free(before);
    ts_tensor_free(old);
    ts_tensor_free(big);
    remove_dir(tdir);
}

/* ------------------------------------------------------------------ program checkpoints */

/* loss = mean((x @ w + b)^2) + mean(e^2), with SGD; params w [3, 5], b [5], e [2, 2] */
static ts_graph *small_graph(ts_dtype wdtype) {
    ts_graph *g = ts_graph_new();
    ts_graph_set_seed(g, 7);
    ts_value x = ts_input(g, "x", TS_F32, DIMS(4, 3));
    ts_value w = ts_param(g, "enc.w", wdtype, DIMS(3, 5), ts_init_normal(0.5f));
    ts_value b = ts_param(g, "enc.b", TS_F32, DIMS(5), ts_init_uniform(-1, 1));
    ts_value e = ts_param(g, "emb", TS_F32, DIMS(2, 2), ts_init_normal(1.f));
    if (wdtype != TS_F32) w = ts_cast(g, w, TS_F32);
    ts_value y = ts_add(g, ts_matmul(g, x, w, 0, 0), b);
    ts_value loss = ts_add(g, ts_reduce_mean(g, ts_mul(g, y, y), 0, NULL, 0),
                           ts_reduce_mean(g, ts_mul(g, e, e), 0, NULL, 0));
    ts_name(g, loss, "loss");
    if (wdtype == TS_F32) {
        ts_backward(g, loss);
        ts_sgd(g, ts_scalar(g, 0.1f), 0.f, 0.f);
    }
    return g;
}

static void trained(ts_program *p) {
    tu_rng r = tu_rng_seed(3);
    ts_tensor *x = tu_rand_tensor(&r, DIMS(4, 3), -1, 1);
    CHECK_OK(ts_program_feed(p, "x", x));
    CHECK_OK(ts_program_run(p));
    CHECK_OK(ts_program_run(p));
    ts_tensor_free(x);
}

static const char *const pnames[3] = {"enc.w", "enc.b", "emb"};

static void test_program_roundtrip(void) {
    make_dir();
    char p[512];
    path_in(p, "model.safetensors");
    ts_graph *g = small_graph(TS_F32);
    CHECK(ts_graph_status(g) == TS_OK, "graph: %s", ts_last_error());
    ts_program *p1 = ts_compile(g, &(ts_compile_opts){TU_FETCHES("loss")});
    ts_program *p2 = ts_compile(g, &(ts_compile_opts){TU_FETCHES("loss")});
    CHECK(p1 && p2, "compile: %s", ts_last_error());
    if (!p1 || !p2) goto out;
    trained(p1);
    CHECK_OK(ts_program_save(p1, p, TS_F32));
    ts_safetensors *st = ts_safetensors_open(p);
    CHECK(st && ts_safetensors_count(st) == 3 && ts_safetensors_metadata(st, "format") &&
              !strcmp(ts_safetensors_metadata(st, "format"), "pt"), "saved file: %s", ts_last_error());
    ts_safetensors_close(st);
    for (int i = 0; i < 3; i++) {
        ts_tensor *a = NULL, *b = NULL;
        ts_program_get_param(p1, pnames[i], &a);
        ts_program_get_param(p2, pnames[i], &b);
        CHECK(a && b && !tu_bitwise_equal(a, b), "'%s' is the same before loading (training did nothing?)", pnames[i]);
        ts_tensor_free(a);
        ts_tensor_free(b);
    }
    int miss = -1;
    CHECK_OK(ts_program_load(p2, p, 1, &miss));
    CHECK(miss == 0, "missing %d", miss);
    for (int i = 0; i < 3; i++) {
        ts_tensor *a = NULL, *b = NULL;
        ts_program_get_param(p1, pnames[i], &a);
        ts_program_get_param(p2, pnames[i], &b);
        CHECK(tu_bitwise_equal(a, b), "'%s' differs after save -> load", pnames[i]);
        ts_tensor_free(a);
        ts_tensor_free(b);
    }
    /* both programs now compute the same loss */
    tu_rng r = tu_rng_seed(9);
    ts_tensor *x = tu_rand_tensor(&r, DIMS(4, 3), -1, 1);
    ts_program_feed(p1, "x", x);
    ts_program_feed(p2, "x", x);
    ts_program_run(p1);
    ts_program_run(p2);
    ts_tensor *l1 = TU_FETCH(p1, "loss"), *l2 = TU_FETCH(p2, "loss");
    CHECK(tu_bitwise_equal(l1, l2), "losses differ after loading");
    ts_tensor_free(l1);
    ts_tensor_free(l2);
    ts_tensor_free(x);
    CHECK_STATUS(ts_program_save(p1, p, TS_I32), TS_ERR_DTYPE);
    CHECK_STATUS(ts_program_save(NULL, p, TS_F32), TS_ERR_ARG);
    CHECK_STATUS(ts_program_load(NULL, p, 1, NULL), TS_ERR_ARG);
out:
    ts_program_free(p1);
    ts_program_free(p2);
    ts_graph_free(g);
    remove_dir(tdir);
}

static void test_program_missing_and_mismatch(void) {
    make_dir();
    char p[512];
    path_in(p, "part.safetensors");
    ts_graph *g = small_graph(TS_F32);
    ts_program *pr = ts_compile(g, &(ts_compile_opts){.inference = 1});
    CHECK(pr != NULL, "compile: %s", ts_last_error());
    if (!pr) { ts_graph_free(g); remove_dir(tdir); return; }
    ts_tensor *w0 = NULL, *b0 = NULL, *e0 = NULL;
    ts_program_get_param(pr, "enc.w", &w0);
    ts_program_get_param(pr, "enc.b", &b0);
    ts_program_get_param(pr, "emb", &e0);
    /* a file with enc.w (new values) and an extra tensor, lacking enc.b and emb */
    float wv[15], xv[2] = {9, 9};
    for (int i = 0; i < 15; i++) wv[i] = (float)i * 0.25f;
    ts_tensor *w = ts_tensor_from(TS_F32, DIMS(3, 5), wv), *extra = ts_tensor_from(TS_F32, DIMS(2), xv);
    const ts_tensor *ts[2] = {w, extra};
    const char *nm[2] = {"enc.w", "cls.extra"};
    CHECK_OK(ts_safetensors_save(p, 2, nm, ts, NULL));
    int miss = -1;
    CHECK_STATUS(ts_program_load(pr, p, 1, &miss), TS_ERR_NOT_FOUND);
    CHECK_ERRMSG(p, "2 of", "'enc.b'", "'emb'", "missing");
    ts_tensor *now = NULL;
    ts_program_get_param(pr, "enc.w", &now);
    CHECK(tu_bitwise_equal(now, w0), "a failed strict load changed enc.w");
    ts_tensor_free(now);
    CHECK_OK(ts_program_load(pr, p, 0, &miss));
    CHECK(miss == 2, "non-strict load reports %d missing, expected 2", miss);
    ts_program_get_param(pr, "enc.w", &now);
    CHECK(tu_bitwise_equal(now, w), "enc.w was not loaded");
    ts_tensor_free(now);
    ts_program_get_param(pr, "enc.b", &now);
    CHECK(tu_bitwise_equal(now, b0), "a missing enc.b changed");
    ts_tensor_free(now);
    ts_program_get_param(pr, "emb", &now);
    CHECK(tu_bitwise_equal(now, e0), "a missing emb changed");
    ts_tensor_free(now);
    CHECK_OK(ts_program_load(pr, p, 0, NULL));

    /* wrong shape: enc.w stored transposed */
    ts_tensor *wt = ts_tensor_from(TS_F32, DIMS(5, 3), wv);
    const ts_tensor *ts2[1] = {wt};
    CHECK_OK(ts_safetensors_save(p, 1, nm, ts2, NULL));
    CHECK_STATUS(ts_program_load(pr, p, 0, NULL), TS_ERR_SHAPE);
    CHECK_ERRMSG(p, "'enc.w'", "[5, 3]", "[3, 5]");
    /* wrong dtype: i32 into an f32 parameter */
    ts_tensor *wi = ts_tensor_new(TS_I32, DIMS(3, 5));
    const ts_tensor *ts3[1] = {wi};
    CHECK_OK(ts_safetensors_save(p, 1, nm, ts3, NULL));
    CHECK_STATUS(ts_program_load(pr, p, 0, NULL), TS_ERR_DTYPE);
    CHECK_ERRMSG(p, "'enc.w'", "I32", "f32");
    ts_program_get_param(pr, "enc.w", &now);
    CHECK(tu_bitwise_equal(now, w), "a failed load changed enc.w");
    ts_tensor_free(now);
    ts_tensor_free(wt);
    ts_tensor_free(wi);
    ts_tensor_free(w);
    ts_tensor_free(extra);
    ts_tensor_free(w0);
    ts_tensor_free(b0);
    ts_tensor_free(e0);
    ts_program_free(pr);
    ts_graph_free(g);
    remove_dir(tdir);
}

/* Save as bf16 / f16, load into f32 parameters: the rounded values. And f32 into bf16 params. */
static void test_program_half(void) {
    make_dir();
    char p[512];
    path_in(p, "half.safetensors");
    ts_graph *g = small_graph(TS_F32);
    ts_program *p1 = ts_compile(g, &(ts_compile_opts){TU_FETCHES("loss")});
    ts_program *p2 = ts_compile(g, &(ts_compile_opts){.inference = 1});
    ts_graph *gb = small_graph(TS_BF16);
    ts_program *pb = ts_compile(gb, &(ts_compile_opts){.inference = 1});
    CHECK(p1 && p2 && pb, "compile: %s", ts_last_error());
    if (!p1 || !p2 || !pb) goto out;
    trained(p1);
    for (int half = 0; half < 2; half++) {
        ts_dtype dt = half ? TS_F16 : TS_BF16;
        CHECK_OK(ts_program_save(p1, p, dt));
        ts_safetensors *st = ts_safetensors_open(p);
        ts_dtype got = TS_F32;
        CHECK(st && ts_safetensors_info(st, "enc.w", &got, NULL, NULL) == TS_OK && got == dt, "stored dtype");
        ts_safetensors_close(st);
        CHECK_OK(ts_program_load(p2, p, 1, NULL));
        for (int i = 0; i < 3; i++) {
            ts_tensor *a = NULL, *b = NULL;
            ts_program_get_param(p1, pnames[i], &a);
            ts_program_get_param(p2, pnames[i], &b);
            if (!a || !b) { CHECK(0, "get"); break; }
            int64_t n = ts_tensor_numel(a);
            int bad = 0;
            for (int64_t k = 0; k < n; k++) {
                float v = tu_f32(a)[k], want;
                uint16_t h;
                if (half) { ts_f32_to_f16(&v, &h, 1); ts_f16_to_f32(&h, &want, 1); }
                else { ts_f32_to_bf16(&v, &h, 1); ts_bf16_to_f32(&h, &want, 1); }
                if (memcmp(&want, &tu_f32(b)[k], 4) != 0) bad++;
            }
            CHECK(bad == 0, "%s save -> f32 load: %d values of '%s' are not the rounded ones", ts_dtype_name(dt), bad,
                  pnames[i]);
            ts_tensor_free(a);
            ts_tensor_free(b);
        }
    }
    /* an f32 checkpoint into a program whose enc.w is bf16 */
    CHECK_OK(ts_program_save(p1, p, TS_F32));
    CHECK_OK(ts_program_load(pb, p, 1, NULL));
    ts_tensor *a = NULL, *b = NULL;
    ts_program_get_param(p1, "enc.w", &a);
    ts_program_get_param(pb, "enc.w", &b);
    if (a && b) {
        CHECK(ts_tensor_dtype(b) == TS_BF16, "bf16 param");
        uint16_t want[15];
        ts_f32_to_bf16(tu_f32(a), want, 15);
        CHECK(memcmp(want, ts_tensor_data(b), sizeof want) == 0, "f32 -> bf16 parameter load is not RNE rounding");
    }
    ts_tensor_free(a);
    ts_tensor_free(b);
out:
    ts_program_free(p1);
    ts_program_free(p2);
    ts_program_free(pb);
    ts_graph_free(g);
    ts_graph_free(gb);
    remove_dir(tdir);
}

int main(int argc, char **argv) {
    tu_args(argc, argv);
    RUN(test_roundtrip);
    RUN(test_reference_bytes);
    RUN(test_hand_built);
    RUN(test_truncated);
    RUN(test_bad_headers);
    RUN(test_atomic_save);
    RUN(test_program_roundtrip);
    RUN(test_program_missing_and_mismatch);
    RUN(test_program_half);
    return tu_finish("test_safetensors");
}
