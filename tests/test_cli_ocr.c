/*
 * test_cli_ocr.c — `tessera ocr` (cli/ocr.c, apps/ocr/) end to end on the PP-OCRv4 models of
 * data/ocr: lines of ordinary English and Chinese sentences (digits, punctuation, mixed case,
 * common characters) drawn at run time by ImageMagick with Noto Sans CJK, 12 lines an image at
 * 24, 32 and 48 pixels in each language, must each be read back exactly and in order:
 *  - English at 24 px with --lang en, at 32 px as a JPEG, at 48 px;
 *  - Chinese at 24 and 48 px, at 32 px with --json (parsed with cJSON: an array of objects with
 *    a 4-point box inside the image, the text and a confidence);
 *  - the English lines at 24 px turned 180 degrees: the direction classifier turns each line back,
 *    and the lines come bottom line first;
 *  - every box inside the image, each line's box below the one before, confidences in (0.5, 1];
 *  - English at 24 px and Chinese at 32 px with --int8 (int8 convolutions and matmuls): the same
 *    lines, exact; `tessera run --int8` on the detector alone gives probabilities close to f32's;
 *  - an image without text gives no lines (and "[]" with --json), exit 0; also with the old
 *    spelling --devices cpu (now --device), which prints a notice;
 *  - bad input is refused with exit 2 and a message naming what is wrong: no image, a missing
 *    file, a text file, a truncated PNG, a models directory without the models (--model-store,
 *    and the old spelling --models with its notice), --lang fr, --threads 0.
 * The lines are drawn with Pango and the "Noto Sans CJK SC" face when ImageMagick has Pango,
 * else with label: and the Noto CJK font file fc-list finds. Skipped (exit 77) without the
 * models (bash scripts/install-deps.sh fetches them), ImageMagick or the Noto CJK fonts
 * (Debian: imagemagick, fonts-noto-cjk).
 */
#include "test_util.h"

#include "cli_util.h"

#include <cjson/cJSON.h>

#ifndef TS_SOURCE_DIR
#define TS_SOURCE_DIR "."
#endif
#define MODELS TS_SOURCE_DIR "/data/ocr"

#define NLINES 12

static const char *const EN[NLINES] = {
    "The museum opens at 9 on Sundays.",    "Tom bought 3 apples and 2 pears.",
    "Her flight lands in Tokyo at 6:45 pm.", "Room 12 is on the second floor.",
    "We walked 8 miles along the river.",   "The price dropped to $19.99 today.",
    "Please sign the form and return it.",  "My phone number ends in 4821.",
    "Lunch is served from noon until 2.",   "The library closes early on Fridays.",
    "Anna plays the piano every evening.",  "Turn left after the red bridge.",
};

static const char *const CH[NLINES] = {
    "我们明天早上八点出发。", "这家饭店的菜很好吃。",   "他每天坐地铁去上班。",   "请把窗户打开，谢谢。",
    "图书馆在学校的东边。",   "我的生日是五月十二日。", "今年夏天特别热。",       "她买了3本中文书。",
    "周末我们一起去爬山吧！", "电影晚上七点半开始。",   "孩子们在花园里玩游戏。", "这条路上的车越来越多。",
};

static int use_pango;    /* draw with pango: and the SC face, else label: and font_file */
static char font_file[1024];

/* ------------------------------------------------------------------ drawing */

/* Append s to buf in single quotes for sh (a ' inside becomes '\''). */
static void append_quoted(char *buf, size_t cap, const char *s) {
    size_t n = strlen(buf);
    if (n + 2 >= cap) return;
    buf[n++] = '\'';
    for (; *s && n + 5 < cap; s++) {
        if (*s == '\'') {
            memcpy(buf + n, "'\\''", 4);
            n += 4;
        } else {
            buf[n++] = *s;
        }
    }
    buf[n++] = '\'';
    buf[n] = 0;
}

/* Draw the lines, one under the other (a gap of half the type size), 20 white pixels around,
 * black on white, into dir/name (its format from its extension); turned 180 degrees if asked. */
static int draw(const char *name, int px, const char *const *lines, int n, int turn) {
    static char cmd[16384];
    snprintf(cmd, sizeof cmd, "cd '%s' && convert -background white -fill black ", dir);
    if (!use_pango) {
        strcat(cmd, "-font ");
        append_quoted(cmd, sizeof cmd, font_file);
        snprintf(cmd + strlen(cmd), sizeof cmd - strlen(cmd), " -pointsize %d ", px);
    }
    for (int i = 0; i < n; i++) {
        char item[512];
        if (use_pango)
            snprintf(item, sizeof item, "pango:<span font=\"Noto Sans CJK SC %dpx\">%s</span>", px, lines[i]);
        else
            snprintf(item, sizeof item, "label:%s", lines[i]);
        append_quoted(cmd, sizeof cmd, item);
        strcat(cmd, " ");
    }
    snprintf(cmd + strlen(cmd), sizeof cmd - strlen(cmd),
             "-splice 0x%d -append -bordercolor white -border 20 %s -quality 92 '%s' 2>convert.err", px / 2,
             turn ? "-rotate 180" : "", name);
    int rc = system(cmd);
    CHECK(rc == 0, "drawing %s failed (exit %d): %s", name, rc, cmd);
    return rc == 0;
}

/* ------------------------------------------------------------------ reading the output */

typedef struct {
    float box[4][2];
    float conf;
    char text[256];
} line;

/* Parse `tessera ocr`'s lines "x,y x,y x,y x,y<TAB>conf<TAB>text" from out_text. */
static int parse_lines(line *out, int cap) {
    int n = 0;
    for (char *p = out_text; *p && n < cap; n++) {
        char *end = strchr(p, '\n');
        if (!end) end = p + strlen(p);
        line *l = &out[n];
        int used = 0;
        if (sscanf(p, "%f,%f %f,%f %f,%f %f,%f\t%f\t%n", &l->box[0][0], &l->box[0][1], &l->box[1][0], &l->box[1][1],
                   &l->box[2][0], &l->box[2][1], &l->box[3][0], &l->box[3][1], &l->conf, &used) != 9 ||
            used == 0 || p + used > end) {
            CHECK(0, "output line %d is not \"box<TAB>confidence<TAB>text\": %.*s", n + 1, (int)(end - p), p);
            return n;
        }
        snprintf(l->text, sizeof l->text, "%.*s", (int)(end - p - used), p + used);
        p = *end ? end + 1 : end;
    }
    return n;
}

/* Parse --json output into out; returns the count (-1 when it is not the expected JSON). */
static int parse_json(line *out, int cap) {
    cJSON *a = cJSON_Parse(out_text);
    CHECK(a && cJSON_IsArray(a), "--json output is not a JSON array: %s", out_text);
    if (!a || !cJSON_IsArray(a)) {
        cJSON_Delete(a);
        return -1;
    }
    int n = 0;
    cJSON *o;
    cJSON_ArrayForEach(o, a) {
        if (n == cap) break;
        cJSON *box = cJSON_GetObjectItemCaseSensitive(o, "box"), *text = cJSON_GetObjectItemCaseSensitive(o, "text");
        cJSON *conf = cJSON_GetObjectItemCaseSensitive(o, "confidence");
        int ok = cJSON_IsArray(box) && cJSON_GetArraySize(box) == 4 && cJSON_IsString(text) && cJSON_IsNumber(conf);
        for (int k = 0; ok && k < 4; k++) {
            cJSON *pt = cJSON_GetArrayItem(box, k);
            ok = cJSON_IsArray(pt) && cJSON_GetArraySize(pt) == 2 && cJSON_IsNumber(cJSON_GetArrayItem(pt, 0)) &&
                 cJSON_IsNumber(cJSON_GetArrayItem(pt, 1));
            if (ok)
                out[n].box[k][0] = (float)cJSON_GetArrayItem(pt, 0)->valuedouble,
                out[n].box[k][1] = (float)cJSON_GetArrayItem(pt, 1)->valuedouble;
        }
        CHECK(ok, "--json element %d is not {\"box\": [[x, y] x 4], \"text\": ..., \"confidence\": ...}", n);
        if (!ok) break;
        snprintf(out[n].text, sizeof out[n].text, "%s", text->valuestring);
        out[n].conf = (float)conf->valuedouble;
        n++;
    }
    cJSON_Delete(a);
    return n;
}

/* The size of an image in dir, as ImageMagick sees it. */
static void image_size(const char *name, int *w, int *h) {
    char cmd[600];
    snprintf(cmd, sizeof cmd, "cd '%s' && identify -format '%%w %%h' '%s' > size.txt", dir, name);
    *w = *h = 0;
    if (system(cmd) != 0) return;
    char buf[64];
    read_into("size.txt", buf, sizeof buf);
    sscanf(buf, "%d %d", w, h);
}

/* ------------------------------------------------------------------ one image */

static int total_exact, total_lines;

/* OCR dir/name (with the extra flags) and compare with want[0..n): every line exact, in order;
 * boxes inside the image and top to bottom. Prints a summary line. */
static void read_back(const char *what, const char *name, const char *flags, const char *const *want, int n, int json) {
    double t0 = tu_now();
    int rc = tessera(NULL, "ocr %s %s", name, flags);
    double dt = tu_now() - t0;
    CHECK_RAN(rc, 0);
    static line got[64];
    int m = json ? parse_json(got, 64) : parse_lines(got, 64);
    int w, h;
    image_size(name, &w, &h);
    int exact = 0;
    for (int i = 0; i < n; i++) {
        int same = i < m && strcmp(got[i].text, want[i]) == 0;
        exact += same;
        CHECK(same, "%s, line %d: read \"%s\", want \"%s\"", what, i + 1, i < m ? got[i].text : "(nothing)", want[i]);
    }
    CHECK(m == n, "%s: %d lines read, want %d\nstdout: %s", what, m, n, out_text);
    for (int i = 0; i < m; i++) {
        int inside = 1;
        for (int k = 0; k < 4; k++)
            inside &= got[i].box[k][0] >= 0 && got[i].box[k][0] < w && got[i].box[k][1] >= 0 && got[i].box[k][1] < h;
        CHECK(inside, "%s, line %d: a corner outside the %d x %d image", what, i + 1, w, h);
        CHECK(got[i].box[0][0] < got[i].box[1][0] && got[i].box[0][1] < got[i].box[3][1],
              "%s, line %d: corners not top-left, top-right, bottom-right, bottom-left", what, i + 1);
        CHECK(got[i].conf > 0.5f && got[i].conf <= 1.0f, "%s, line %d: confidence %g", what, i + 1, got[i].conf);
        if (i > 0)
            CHECK(got[i].box[0][1] > got[i - 1].box[3][1] - 0.5f * (got[i - 1].box[3][1] - got[i - 1].box[0][1]),
                  "%s, line %d starts above line %d", what, i + 1, i);
    }
    printf("    %-34s %2d of %2d lines exact (%d x %d pixels, %.1f s)\n", what, exact, n, w, h, dt);
    fflush(stdout);
    total_exact += exact;
    total_lines += n;
}

/* ------------------------------------------------------------------ cases */

/* The sanitizer build reads each path once (a language flag, JPEG, --json, a turned image, the
 * OpenCL plugin) and leaves the other sizes, which run the same code on more pixels, to the
 * release build: each reading takes about 25 s under ASan, and the suite has a time budget. */
#if defined(__SANITIZE_ADDRESS__)
static const int every_size = 0;
#else
static const int every_size = 1;
#endif

static void test_english(void) {
    if (draw("en24.png", 24, EN, NLINES, 0)) read_back("English, 24 px, --lang en", "en24.png", "--lang en", EN, NLINES, 0);
    if (draw("en32.jpg", 32, EN, NLINES, 0)) read_back("English, 32 px, JPEG", "en32.jpg", "", EN, NLINES, 0);
    if (every_size && draw("en48.png", 48, EN, NLINES, 0)) read_back("English, 48 px", "en48.png", "", EN, NLINES, 0);
    printf("    English: %d of %d lines exact\n", total_exact, total_lines);
}

static void test_chinese(void) {
    if (every_size && draw("ch24.png", 24, CH, NLINES, 0)) read_back("Chinese, 24 px", "ch24.png", "", CH, NLINES, 0);
    if (draw("ch32.png", 32, CH, NLINES, 0)) read_back("Chinese, 32 px, --json", "ch32.png", "--json", CH, NLINES, 1);
    if (every_size && draw("ch48.png", 48, CH, NLINES, 0)) read_back("Chinese, 48 px", "ch48.png", "", CH, NLINES, 0);
    if (!every_size) printf("    (sanitizer build: the 24 and 48 px Chinese and 48 px English images are read by the release build)\n");
    printf("    Chinese: %d of %d lines exact\n", total_exact, total_lines);
}

static void test_upside_down(void) {
    const char *reversed[NLINES];
    for (int i = 0; i < NLINES; i++) reversed[i] = EN[NLINES - 1 - i];
    if (draw("turned.png", 24, EN, NLINES, 1))
        read_back("English, 24 px, turned 180 degrees", "turned.png", "", reversed, NLINES, 0);
}

static void test_no_text(void) {
    char cmd[512];
    snprintf(cmd, sizeof cmd, "cd '%s' && convert -size 300x120 xc:white blank.png", dir);
    CHECK(system(cmd) == 0, "convert failed");
    int rc = tessera(NULL, "ocr blank.png");
    CHECK_RAN(rc, 0);
    CHECK(out_text[0] == 0, "an image without text gave: %s", out_text);
    rc = tessera(NULL, "ocr blank.png --json");
    CHECK_RAN(rc, 0);
    CHECK(!strcmp(out_text, "[]\n"), "an image without text gave JSON %s", out_text);
    /* --devices D (one device) is --device D now: the old spelling still runs, with a notice */
    rc = tessera(NULL, "ocr blank.png --devices cpu");
    CHECK_RAN(rc, 0);
    CHECK(out_text[0] == 0 && strstr(err_text, "--devices is now --device"), "--devices cpu gave: %s / %s", out_text,
          err_text);
}

static void test_bad_input(void) {
    int rc = tessera(NULL, "ocr");
    CHECK_FAILS(rc, "IMAGE is required");
    CHECK(rc == 2, "no image: exit %d, want 2", rc);
    rc = tessera(NULL, "ocr missing.png");
    CHECK_FAILS(rc, "missing.png");
    CHECK(rc == 2 && strstr(err_text, "cannot open"), "missing file: exit %d, %s", rc, err_text);
    write_str("notes.png", "this is text, not a picture\n");
    rc = tessera(NULL, "ocr notes.png");
    CHECK_FAILS(rc, "notes.png: not a PNG or JPEG image");
    CHECK(rc == 2, "text file: exit %d, want 2", rc);
    /* the first half of a PNG */
    char cmd[512];
    snprintf(cmd, sizeof cmd, "cd '%s' && convert -size 200x80 xc:white -fill black -draw 'rectangle 20,20 180,60' "
                              "full.png && head -c $(( $(wc -c < full.png) / 2 )) full.png > cut.png", dir);
    CHECK(system(cmd) == 0, "making cut.png failed");
    rc = tessera(NULL, "ocr cut.png");
    CHECK_FAILS(rc, "cut.png: truncated PNG");
    rc = tessera(NULL, "ocr full.png --model-store /nonexistent/models");
    CHECK_FAILS(rc, "/nonexistent/models/ch_PP-OCRv4_det_infer.onnx");
    CHECK(rc == 2 && strstr(err_text, "install-deps.sh"), "missing models: exit %d, %s", rc, err_text);
    /* the old spelling, accepted for one release with a notice */
    rc = tessera(NULL, "ocr full.png --models /nonexistent/models");
    CHECK_FAILS(rc, "/nonexistent/models/ch_PP-OCRv4_det_infer.onnx");
    CHECK(strstr(err_text, "--models is now --model-store"), "no notice for --models: %s", err_text);
    rc = tessera(NULL, "ocr full.png --lang fr");
    CHECK_FAILS(rc, "--lang");
    rc = tessera(NULL, "ocr full.png --threads 0");
    CHECK_FAILS(rc, "--threads");
    rc = tessera(NULL, "ocr full.png --frobnicate");
    CHECK_FAILS(rc, "unknown flag '--frobnicate'");
}

/* ------------------------------------------------------------------ setup */

/* Can we draw the lines? Pango with the SC face, else a Noto CJK font file for label:. Skips
 * (tu_skip) when we cannot. */
static int find_renderer(void) {
    if (system("convert -version >/dev/null 2>&1") != 0) {
        tu_skip("ImageMagick's convert is not installed (apt-get install imagemagick)");
    }
    FILE *p = popen("fc-list ':family=Noto Sans CJK SC' file 2>/dev/null; fc-list ':lang=zh-cn' file 2>/dev/null", "r");
    char buf[1024];
    int sc = 0;
    while (p && fgets(buf, sizeof buf, p)) {
        char *colon = strrchr(buf, ':');
        if (colon) *colon = 0;
        /* the regular sans face, else any Noto CJK file */
        if (strstr(buf, "CJK") && (!font_file[0] || (strstr(buf, "SansCJK-Regular") && !strstr(font_file, "SansCJK-Regular"))))
            snprintf(font_file, sizeof font_file, "%s", buf);
        if (strstr(buf, "NotoSansCJK")) sc = 1;
    }
    if (p) pclose(p);
    if (!font_file[0]) {
        tu_skip("no Noto CJK font (apt-get install fonts-noto-cjk)");
    }
    use_pango = sc && system("convert -list format 2>/dev/null | grep -q PANGO") == 0;
    printf("test_cli_ocr: drawing text with %s%s\n", use_pango ? "Pango, Noto Sans CJK SC" : "label:, ",
           use_pango ? "" : font_file);
    return 1;
}

/* --int8 (the models' convolutions and weight matmuls in int8, dynamic quantization) reads the
 * same lines as f32 reads above: every one exact. */
static void test_int8(void) {
    if (every_size && draw("i8_en.png", 24, EN, NLINES, 0))
        read_back("English, 24 px, --int8", "i8_en.png", "--int8", EN, NLINES, 0);
    if (draw("i8_ch.png", 32, CH, NLINES, 0)) read_back("Chinese, 32 px, --int8", "i8_ch.png", "--int8", CH, NLINES, 0);
}

/* The probability map of `tessera run` on the detector (--int8 or not) for x in dir/det_in.safetensors,
 * read from dir/NAME; NULL on failure. */
static ts_tensor *run_detector(const char *flags, const char *name) {
    int rc = tessera(NULL, "run --model %s/ch_PP-OCRv4_det_infer.onnx --inputs det_in.safetensors --outputs %s %s",
                     MODELS, name, flags);
    CHECK_RAN(rc, 0);
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    ts_safetensors *st = ts_safetensors_open(path);
    ts_tensor *t = NULL;
    CHECK(st != NULL, "%s", ts_last_error());
    if (st) CHECK_OK(ts_safetensors_get(st, ts_safetensors_name(st, 0), &t));
    ts_safetensors_close(st);
    return t;
}

/* tessera run --int8 on the detector alone (a 64 x 96 picture of two bands of strokes): its
 * probability map stays close to f32's. */
static void test_run_int8(void) {
    enum { H = 64, W = 96 };
    ts_tensor *x = ts_tensor_new(TS_F32, DIMS(1, 3, H, W));
    tu_rng r = tu_rng_seed(29);
    float *xd = ts_tensor_data(x);
    for (int64_t i = 0; i < 3 * H * W; i++) { /* normalised white, with two bands of dark strokes ("text") */
        int64_t h = i / W % H, w = i % W;
        int ink = (h / 8 == 2 || h / 8 == 5) && w > 8 && w < W - 8 && tu_unif(&r) < 0.5;
        xd[i] = ink ? -2.0f : 2.2f;
    }
    char path[512];
    snprintf(path, sizeof path, "%s/det_in.safetensors", dir);
    const char *names[] = {"x"};
    CHECK_OK(ts_safetensors_save(path, 1, names, (const ts_tensor *const *)&x, NULL));
    ts_tensor *f = run_detector("", "det_f32.safetensors"), *q = run_detector("--int8", "det_i8.safetensors");
    if (f && q && ts_tensor_numel(f) == ts_tensor_numel(q)) {
        const float *pf = ts_tensor_data(f), *pq = ts_tensor_data(q);
        int64_t n = ts_tensor_numel(f), flips = 0;
        double mean = 0;
        for (int64_t i = 0; i < n; i++) {
            mean += fabs(pf[i] - pq[i]) / (double)n;
            flips += (pf[i] > 0.3f) != (pq[i] > 0.3f); /* the OCR's text threshold */
        }
        printf("    detector, --int8 vs f32: mean |difference| %.2e, %lld of %lld pixels on the other side of 0.3\n",
               mean, (long long)flips, (long long)n);
        /* The map is a steep sigmoid (DB's binarisation): a pixel at a text edge may swing far on
         * a small change of its logit, so the check is on the mean and the thresholded map. Exactly
         * 0 would mean f32 ran (the option lost on the way). */
        CHECK(mean > 0 && mean < 0.02 && flips <= n / 50, "int8 map off f32's: mean %.3g, %lld pixels flipped", mean,
              (long long)flips);
    } else {
        CHECK(0, "the detector's outputs are missing or differ in size");
    }
    ts_tensor_free(x), ts_tensor_free(f), ts_tensor_free(q);
}

/* The same pictures read on the OpenCL plugin (strict: every op of the three models on the
 * device) give the same text as on the CPU (plugins/ beside ./tessera; no OpenCL device: not run). */
static void test_opencl(void) {
    if (access("plugins/libtessera-opencl.so", R_OK) != 0 || system("clinfo -l 2>/dev/null | grep -q Device") != 0) {
        tu_skip_part("no OpenCL plugin or device: the OCR models on opencl:0 not read");
        return;
    }
    char cwd[4000], path[4100];
    snprintf(path, sizeof path, "%s/plugins", getcwd(cwd, sizeof cwd) ? cwd : ".");
    setenv("TESSERA_PLUGIN_PATH", path, 1);
    char asan[512]; /* PoCL's threads crash LeakSanitizer's tracer at exit (ASan stays on) */
    snprintf(asan, sizeof asan, "%s%sdetect_leaks=0", getenv("ASAN_OPTIONS") ? getenv("ASAN_OPTIONS") : "",
             getenv("ASAN_OPTIONS") ? ":" : "");
    setenv("ASAN_OPTIONS", asan, 1);
    if (draw("ocl_ch.png", 32, CH, NLINES, 0))
        read_back("Chinese, 32 px, opencl:0", "ocl_ch.png", "--device opencl:0 --strict-device --quiet", CH, NLINES, 0);
}

/* The three models on the randomized device (the CPU plugin claiming a seeded half of the ops,
 * tests/test_cli_fallback.c): the CPU fallback cuts the graphs at other places each seed, and
 * every line — boxes, confidences, text — is printed as on the CPU, byte for byte. */
static void test_random_device(void) {
    char cwd[4000], plugin[4100];
    snprintf(plugin, sizeof plugin, "%s/plugins/libtessera-cpuplugin.so", getcwd(cwd, sizeof cwd) ? cwd : ".");
    if (access(plugin, R_OK) != 0) {
        tu_skip_part("no CPU plugin built beside ./tessera: the random device not run");
        return;
    }
    if (!draw("rnd_en.png", 24, EN, NLINES, 0)) return;
    int rc = tessera(NULL, "ocr rnd_en.png --lang en");
    CHECK_RAN(rc, 0);
    static char want[1 << 16];
    snprintf(want, sizeof want, "%s", out_text);
    setenv("TESSERA_CPUPLUGIN_FRACTION", "0.5", 1);
    for (int seed = 0; seed < (every_size ? 3 : 1); seed++) {
        char s[16];
        snprintf(s, sizeof s, "%d", seed);
        setenv("TESSERA_CPUPLUGIN_SEED", s, 1);
        rc = tessera(NULL, "--quiet --backend-plugin '%s' ocr rnd_en.png --lang en --device cpuplugin", plugin);
        CHECK_RAN(rc, 0);
        CHECK(want[0] && !strcmp(want, out_text), "seed %d: the random device read\n%s\nthe CPU\n%s", seed, out_text,
              want);
    }
}

int main(int argc, char **argv) {
    tu_args(argc, argv);
    static const char *files[] = {"ch_PP-OCRv4_det_infer.onnx", "ch_PP-OCRv4_rec_infer.onnx",
                                  "ch_ppocr_mobile_v2.0_cls_infer.onnx", "ppocr_keys_v1.txt"};
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        char path[512];
        snprintf(path, sizeof path, "%s/%s", MODELS, files[i]);
        if (access(path, R_OK) != 0)
            tu_skip("%.400s is missing (bash scripts/install-deps.sh fetches the OCR models)", path);
    }
    find_renderer(); /* skips without ImageMagick or a Noto CJK font */
    int rc = cli_setup("test_cli_ocr");
    if (rc) return rc;
    RUN(test_english);
    RUN(test_chinese);
    RUN(test_upside_down);
    RUN(test_no_text);
    RUN(test_bad_input);
    RUN(test_int8);
    RUN(test_run_int8);
    RUN(test_opencl);
    RUN(test_random_device);
    cli_cleanup("test_cli_ocr");
    return tu_finish("test_cli_ocr");
}
