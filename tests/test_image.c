/*
 * test_image.c — the image decoders (apps/vision/): PNG and JPEG files made at run time by
 * ImageMagick's `convert` from PPM / PGM / PAM files written here (so the expected pixels are the
 * ones written), decoded by ts_image_read and compared:
 *  - PNG in every colour type and depth ImageMagick writes: 8-bit RGB, interlaced RGB, palette,
 *    16-bit RGB, 8- and 16-bit gray, 1-bit gray, RGBA and gray + alpha (composited on white):
 *    exact (within 1 for the compositing's rounding);
 *  - JPEG: baseline, progressive, gray and CMYK: close to the source (JPEG is lossy);
 *  - bad files: a text file, an empty file, a directory, a missing file, every truncation of a
 *    PNG and a JPEG, a PNG with a flipped byte: each refused with a message naming the file and
 *    what is wrong, never a crash;
 *  - ts_image_write_png round trip, ts_image_resize (bilinear as OpenCV's pixel centres and
 *    clamping give it; bicubic against a Catmull-Rom spline written another way) and
 *    ts_image_rotate.
 * Skipped (exit 77) when `convert` is not installed (Debian: imagemagick).
 */
#define _GNU_SOURCE
#include "tessera_apps.h"
#include "test_util.h"

#include <ftw.h>
#include <sys/stat.h>

static char tdir[256];

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
    (void)sb, (void)flag, (void)ftw;
    return remove(path);
}

static const char *at(const char *name) {
    static char pool[64][512];
    static int k;
    char *p = pool[k++ % 64];
    snprintf(p, 512, "%s/%s", tdir, name);
    return p;
}

static void write_bytes(const char *name, const void *data, size_t n) {
    FILE *f = fopen(at(name), "wb");
    CHECK(f && fwrite(data, 1, n, f) == n && fclose(f) == 0, "cannot write %s", name);
}

static size_t read_bytes(const char *name, uint8_t **out) {
    FILE *f = fopen(at(name), "rb");
    if (!f) return 0;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    *out = malloc((size_t)n + 1);
    size_t got = fread(*out, 1, (size_t)n, f);
    fclose(f);
    return got;
}

/* `convert ARGS` in the test directory; 0 on success. */
static int convert(const char *args) {
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "cd '%s' && convert %s 2>convert.err", tdir, args);
    int rc = system(cmd);
    CHECK(rc == 0, "convert %s failed (exit %d)", args, rc);
    return rc;
}

/* ------------------------------------------------------------------ reference pictures */

#define W 37 /* odd sizes: rows that are not a multiple of anything */
#define H 23

/* A picture with smooth gradients (JPEG keeps those well) and at most 6 x 6 x 6 colours on the
 * exact grid (so a palette PNG holds it losslessly). */
static void ref_rgb(uint8_t *rgb, int quantized) {
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) {
            uint8_t *p = rgb + 3 * (y * W + x);
            int r = x * 255 / (W - 1), g = y * 255 / (H - 1), b = (x + y) * 255 / (W + H - 2);
            if (quantized) r = r / 51 * 51, g = g / 51 * 51, b = b / 51 * 51;
            p[0] = (uint8_t)r, p[1] = (uint8_t)g, p[2] = (uint8_t)b;
        }
}

static void write_ppm(const char *name, const uint8_t *rgb) {
    char hdr[64];
    int n = snprintf(hdr, sizeof hdr, "P6\n%d %d\n255\n", W, H);
    uint8_t *buf = malloc((size_t)n + W * H * 3);
    memcpy(buf, hdr, (size_t)n);
    memcpy(buf + n, rgb, W * H * 3);
    write_bytes(name, buf, (size_t)n + W * H * 3);
    free(buf);
}

static void write_pgm(const char *name, const uint8_t *gray) {
    char hdr[64];
    int n = snprintf(hdr, sizeof hdr, "P5\n%d %d\n255\n", W, H);
    uint8_t *buf = malloc((size_t)n + W * H);
    memcpy(buf, hdr, (size_t)n);
    memcpy(buf + n, gray, W * H);
    write_bytes(name, buf, (size_t)n + W * H);
    free(buf);
}

/* A PAM with `depth` channels (2: gray + alpha, 4: RGB + alpha). */
static void write_pam(const char *name, const uint8_t *px, int depth) {
    char hdr[160];
    int n = snprintf(hdr, sizeof hdr, "P7\nWIDTH %d\nHEIGHT %d\nDEPTH %d\nMAXVAL 255\nTUPLTYPE %s\nENDHDR\n", W, H,
                     depth, depth == 2 ? "GRAYSCALE_ALPHA" : "RGB_ALPHA");
    size_t nb = (size_t)W * H * (size_t)depth;
    uint8_t *buf = malloc((size_t)n + nb);
    memcpy(buf, hdr, (size_t)n);
    memcpy(buf + n, px, nb);
    write_bytes(name, buf, (size_t)n + nb);
    free(buf);
}

/* The decoded image must be W x H; returns the largest |difference| from want (RGB) and sets
 * *mean to the mean one. */
static int compare(const char *file, const ts_image *im, const uint8_t *want, double *mean) {
    CHECK(im != NULL, "%s: %s", file, ts_last_error());
    if (!im) return 999;
    CHECK(im->width == W && im->height == H, "%s: %d x %d, want %d x %d", file, im->width, im->height, W, H);
    if (im->width != W || im->height != H) return 999;
    int worst = 0;
    double sum = 0;
    for (int i = 0; i < W * H * 3; i++) {
        int d = abs((int)im->rgb[i] - (int)want[i]);
        if (d > worst) worst = d;
        sum += d;
    }
    if (mean) *mean = sum / (W * H * 3);
    return worst;
}

static void expect_exact(const char *file, const uint8_t *want, int tol) {
    ts_image *im = ts_image_read(at(file));
    int worst = compare(file, im, want, NULL);
    CHECK(worst <= tol, "%s: a pixel differs by %d (allowed %d)", file, worst, tol);
    ts_image_free(im);
}

/* ------------------------------------------------------------------ cases */

static void test_png_variants(void) {
    uint8_t rgb[W * H * 3], q[W * H * 3], gray[W * H], gray_rgb[W * H * 3], bw[W * H], bw_rgb[W * H * 3];
    ref_rgb(rgb, 0);
    ref_rgb(q, 1);
    for (int i = 0; i < W * H; i++) {
        gray[i] = (uint8_t)(i * 7 % 256);
        bw[i] = (i / W + i % W) % 3 ? 255 : 0;
        for (int c = 0; c < 3; c++) gray_rgb[3 * i + c] = gray[i], bw_rgb[3 * i + c] = bw[i];
    }
    write_ppm("ref.ppm", rgb);
    write_ppm("q.ppm", q);
    write_pgm("gray.pgm", gray);
    write_pgm("bw.pgm", bw);

    convert("ref.ppm -define png:color-type=2 -define png:bit-depth=8 rgb8.png");
    expect_exact("rgb8.png", rgb, 0);
    convert("ref.ppm -interlace PNG -define png:color-type=2 interlaced.png");
    expect_exact("interlaced.png", rgb, 0);
    convert("q.ppm PNG8:palette.png");
    expect_exact("palette.png", q, 0);
    convert("ref.ppm -depth 16 PNG48:rgb16.png");
    expect_exact("rgb16.png", rgb, 0);
    convert("gray.pgm -define png:color-type=0 -define png:bit-depth=8 gray8.png");
    expect_exact("gray8.png", gray_rgb, 0);
    convert("gray.pgm -depth 16 -define png:color-type=0 -define png:bit-depth=16 gray16.png");
    expect_exact("gray16.png", gray_rgb, 0);
    convert("bw.pgm -define png:color-type=0 -define png:bit-depth=1 gray1.png");
    expect_exact("gray1.png", bw_rgb, 0);

    /* ImageMagick must really have written those types: the IHDR's bit depth and colour type
     * (bytes 24 and 25 of the file). */
    static const struct {
        const char *file;
        int depth, type;
    } ihdr[] = {{"rgb8.png", 8, 2}, {"palette.png", 8, 3}, {"rgb16.png", 16, 2},
                {"gray8.png", 8, 0}, {"gray16.png", 16, 0}, {"gray1.png", 1, 0}};
    for (size_t i = 0; i < sizeof ihdr / sizeof *ihdr; i++) {
        uint8_t *b = NULL;
        size_t n = read_bytes(ihdr[i].file, &b);
        CHECK(n > 26 && b[24] == ihdr[i].depth && b[25] == ihdr[i].type, "%s: bit depth %d, colour type %d; want %d, %d",
              ihdr[i].file, n > 26 ? b[24] : -1, n > 26 ? b[25] : -1, ihdr[i].depth, ihdr[i].type);
        free(b);
    }
}

static void test_png_alpha(void) {
    uint8_t rgba[W * H * 4], ga[W * H * 2], want[W * H * 3], want_g[W * H * 3];
    tu_rng r = tu_rng_seed(5);
    for (int i = 0; i < W * H; i++) {
        for (int c = 0; c < 4; c++) rgba[4 * i + c] = (uint8_t)tu_randint(&r, 256);
        if (i % 5 == 0) rgba[4 * i + 3] = 0;   /* fully transparent: white */
        if (i % 5 == 1) rgba[4 * i + 3] = 255; /* opaque: the colour */
        ga[2 * i] = rgba[4 * i], ga[2 * i + 1] = rgba[4 * i + 3];
        /* a over white: a c + (1 - a) 255, with a in [0, 1] */
        double a = rgba[4 * i + 3] / 255.0;
        for (int c = 0; c < 3; c++) {
            want[3 * i + c] = (uint8_t)lround(a * rgba[4 * i + c] + (1 - a) * 255);
            want_g[3 * i + c] = (uint8_t)lround(a * ga[2 * i] + (1 - a) * 255);
        }
    }
    write_pam("rgba.pam", rgba, 4);
    write_pam("ga.pam", ga, 2);
    convert("rgba.pam PNG32:rgba.png");
    expect_exact("rgba.png", want, 1);
    convert("ga.pam -define png:color-type=4 graya.png");
    expect_exact("graya.png", want_g, 1);
    uint8_t *b = NULL;
    size_t n = read_bytes("graya.png", &b);
    CHECK(n > 26 && b[25] == 4, "graya.png: colour type %d, want 4 (gray + alpha)", n > 26 ? b[25] : -1);
    free(b);
}

static void test_jpeg_variants(void) {
    uint8_t rgb[W * H * 3], gray[W * H], gray_rgb[W * H * 3];
    ref_rgb(rgb, 0);
    for (int i = 0; i < W * H; i++) {
        gray[i] = (uint8_t)(40 + (i % W) * 4 + (i / W) * 2);
        for (int c = 0; c < 3; c++) gray_rgb[3 * i + c] = gray[i];
    }
    write_ppm("ref.ppm", rgb);
    write_pgm("gray.pgm", gray);
    convert("ref.ppm -quality 95 -sampling-factor 1x1 baseline.jpg");
    convert("ref.ppm -quality 95 -interlace JPEG progressive.jpg");
    convert("gray.pgm -quality 95 gray.jpg");
    convert("ref.ppm -quality 95 -colorspace CMYK cmyk.jpg");
    static const struct {
        const char *file;
        int gray;
        double mean_tol;
    } cases[] = {{"baseline.jpg", 0, 2.0}, {"progressive.jpg", 0, 4.0}, {"gray.jpg", 1, 2.0}, {"cmyk.jpg", 0, 4.0}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        ts_image *im = ts_image_read(at(cases[i].file));
        double mean = 0;
        int worst = compare(cases[i].file, im, cases[i].gray ? gray_rgb : rgb, &mean);
        CHECK(mean <= cases[i].mean_tol && worst <= 40, "%s: mean |difference| %.2f (allowed %.1f), largest %d",
              cases[i].file, mean, cases[i].mean_tol, worst);
        if (im && cases[i].gray)
            for (int p = 0; p < W * H; p++)
                if (im->rgb[3 * p] != im->rgb[3 * p + 1] || im->rgb[3 * p] != im->rgb[3 * p + 2]) {
                    CHECK(0, "%s: pixel %d is not gray", cases[i].file, p);
                    break;
                }
        ts_image_free(im);
    }
    /* the file really is CMYK: a JPEG SOF with 4 components */
    uint8_t *b = NULL;
    size_t n = read_bytes("cmyk.jpg", &b);
    int comps = -1;
    for (size_t i = 2; i + 9 < n; i++)
        if (b[i] == 0xff && (b[i + 1] == 0xc0 || b[i + 1] == 0xc2)) {
            comps = b[i + 9];
            break;
        }
    CHECK(comps == 4, "cmyk.jpg has %d components, want 4", comps);
    free(b);
}

/* Each cut of the file (every length from 0 to its size - 1, in steps) is refused by name. */
static void expect_truncations_refused(const char *file, const char *kind) {
    uint8_t *b = NULL;
    size_t n = read_bytes(file, &b);
    CHECK(n > 100, "%s: %zu bytes", file, n);
    int failed_right = 0, tried = 0;
    for (size_t cut = 0; cut < n; cut += cut < 64 ? 1 : 7) {
        tried++;
        ts_image *im = ts_image_decode(b, cut, file);
        const char *msg = ts_last_error();
        if (im) {
            CHECK(0, "%s cut to %zu of %zu bytes decoded", file, cut, n);
            ts_image_free(im);
            continue;
        }
        int named = strstr(msg, file) != NULL;
        int says = cut < 8 ? strstr(msg, "not a PNG or JPEG image") != NULL || strstr(msg, "truncated") != NULL
                           : strstr(msg, "truncated") != NULL || strstr(msg, "corrupt") != NULL;
        if (named && says) failed_right++;
        else CHECK(0, "%s cut to %zu: message \"%s\"", file, cut, msg);
    }
    CHECK(failed_right == tried, "%s: %d of %d truncations refused with a clear message", file, failed_right, tried);
    /* a cut in the middle says "truncated" and the format */
    ts_image *im = ts_image_decode(b, n / 2, file);
    CHECK(!im && strstr(ts_last_error(), "truncated") && strstr(ts_last_error(), kind), "half of %s: \"%s\"", file,
          ts_last_error());
    ts_image_free(im);
    im = ts_image_decode(b, n, file);
    CHECK(im != NULL, "%s whole: %s", file, ts_last_error());
    ts_image_free(im);
    free(b);
}

static void test_bad_files(void) {
    uint8_t rgb[W * H * 3];
    ref_rgb(rgb, 0);
    write_ppm("ref.ppm", rgb);
    convert("ref.ppm -define png:color-type=2 ok.png");
    convert("ref.ppm ok.jpg");

    write_bytes("notes.txt", "hello, this is text and not an image\n", 37);
    ts_image *im = ts_image_read(at("notes.txt"));
    CHECK(!im, "a text file decoded");
    CHECK_ERRMSG(at("notes.txt"), "not a PNG or JPEG image");
    write_bytes("empty.png", "", 0);
    im = ts_image_read(at("empty.png"));
    CHECK(!im, "an empty file decoded");
    CHECK_ERRMSG(at("empty.png"), "not a PNG or JPEG image", "empty");
    im = ts_image_read(at("missing.png"));
    CHECK(!im, "a missing file decoded");
    CHECK_ERRMSG(at("missing.png"), "cannot open");
    im = ts_image_read(tdir);
    CHECK(!im, "a directory decoded");
    CHECK_ERRMSG(tdir);
    /* a PPM is an image, but not one of ours */
    im = ts_image_read(at("ref.ppm"));
    CHECK(!im, "a PPM decoded");
    CHECK_ERRMSG("not a PNG or JPEG image");

    expect_truncations_refused("ok.png", "PNG");
    expect_truncations_refused("ok.jpg", "JPEG");

    /* a flipped byte inside the image data (zlib's stream breaks, or the chunk's CRC), then a bad
     * CRC on the header */
    uint8_t *b = NULL;
    size_t n = read_bytes("ok.png", &b);
    uint8_t *idat = memmem(b, n, "IDAT", 4);
    CHECK(idat && idat + 10 < b + n, "no IDAT in ok.png");
    if (idat && idat + 10 < b + n) {
        idat[8] ^= 0x55;
        im = ts_image_decode(b, n, "flipped.png");
        CHECK(!im, "a PNG with a bad CRC decoded");
        CHECK_ERRMSG("flipped.png", "corrupt PNG");
        ts_image_free(im);
        idat[8] ^= 0x55;
        b[32] ^= 0x01; /* the last byte of IHDR's CRC (IHDR: bytes 8-32 of the file) */
        im = ts_image_decode(b, n, "badcrc.png");
        CHECK(!im, "a PNG with a bad IHDR CRC decoded");
        CHECK_ERRMSG("badcrc.png", "corrupt PNG", "CRC");
        ts_image_free(im);
    }
    free(b);
    /* a JPEG whose header is garbage after the signature */
    static const uint8_t junk[] = {0xff, 0xd8, 0xff, 0x00, 0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0xde};
    im = ts_image_decode(junk, sizeof junk, "junk.jpg");
    CHECK(!im, "a junk JPEG decoded");
    CHECK_ERRMSG("junk.jpg", "JPEG");
    ts_image_free(im);
    /* NULL arguments */
    CHECK(!ts_image_read(NULL), "NULL path");
    CHECK(!ts_image_decode(NULL, 10, "x"), "NULL data");
}

static void test_write_png(void) {
    ts_image *im = ts_image_new(W, H, 0);
    CHECK(im != NULL, "ts_image_new: %s", ts_last_error());
    if (!im) return;
    ref_rgb(im->rgb, 0);
    CHECK_OK(ts_image_write_png(im, at("written.png")));
    ts_image *back = ts_image_read(at("written.png"));
    int worst = compare("written.png", back, im->rgb, NULL);
    CHECK(worst == 0, "written.png differs by %d after a round trip", worst);
    /* ImageMagick reads it too, with the same size */
    char cmd[600];
    snprintf(cmd, sizeof cmd, "convert '%s' -format '%%w %%h' info: > '%s'", at("written.png"), at("size.txt"));
    CHECK(system(cmd) == 0, "convert cannot read written.png");
    uint8_t *txt = NULL;
    size_t n = read_bytes("size.txt", &txt);
    int w = 0, h = 0;
    if (n) txt[n] = 0, sscanf((char *)txt, "%d %d", &w, &h);
    CHECK(w == W && h == H, "convert sees %d x %d", w, h);
    free(txt);
    CHECK_STATUS(ts_image_write_png(im, at("no/such/dir/x.png")), TS_ERR_IO);
    CHECK(ts_image_new(0, 5, 0) == NULL && ts_image_new(100000, 100000, 0) == NULL, "bad sizes accepted");
    ts_image_free(back);
    ts_image_free(im);
}

/* The bilinear sample of im at (sx, sy) in input pixel coordinates, clamped as OpenCV does. */
static double sample(const ts_image *im, double sx, double sy, int c) {
    if (sx < 0) sx = 0;
    if (sy < 0) sy = 0;
    if (sx > im->width - 1) sx = im->width - 1;
    if (sy > im->height - 1) sy = im->height - 1;
    int x0 = (int)sx, y0 = (int)sy, x1 = x0 + 1 < im->width ? x0 + 1 : x0, y1 = y0 + 1 < im->height ? y0 + 1 : y0;
    double fx = sx - x0, fy = sy - y0;
#define PX(x, y) im->rgb[3 * ((y) * im->width + (x)) + c]
    return (1 - fy) * ((1 - fx) * PX(x0, y0) + fx * PX(x1, y0)) + fy * ((1 - fx) * PX(x0, y1) + fx * PX(x1, y1));
}

/* Catmull-Rom: the cubic through the 4 nearest samples along each axis, with slopes
 * (p[i+1] - p[i-1]) / 2 at each sample (Keys' kernel with a = -0.5 written as a Hermite spline). */
static double hermite(const double p[4], double t) {
    double m1 = (p[2] - p[0]) / 2, m2 = (p[3] - p[1]) / 2, t2 = t * t, t3 = t2 * t;
    return (2 * t3 - 3 * t2 + 1) * p[1] + (t3 - 2 * t2 + t) * m1 + (-2 * t3 + 3 * t2) * p[2] + (t3 - t2) * m2;
}

static double sample_cubic(const ts_image *im, double sx, double sy, int c) {
    int x0 = (int)floor(sx), y0 = (int)floor(sy);
    double col[4];
    for (int j = 0; j < 4; j++) {
        int y = y0 - 1 + j;
        y = y < 0 ? 0 : y >= im->height ? im->height - 1 : y;
        double row[4];
        for (int i = 0; i < 4; i++) {
            int x = x0 - 1 + i;
            x = x < 0 ? 0 : x >= im->width ? im->width - 1 : x;
            row[i] = PX(x, y);
        }
        col[j] = hermite(row, sx - x0);
    }
    double v = hermite(col, sy - y0);
    return v < 0 ? 0 : v > 255 ? 255 : v;
}
#undef PX

static void test_resize_rotate(void) {
    ts_image *im = ts_image_new(W, H, 0);
    tu_rng r = tu_rng_seed(9);
    for (int i = 0; i < W * H * 3; i++) im->rgb[i] = (uint8_t)tu_randint(&r, 256);
    static const int sizes[][2] = {{W, H}, {2 * W + 3, H + 5}, {W / 3, H / 2}, {1, 1}, {100, 7}};
    for (int interp = 0; interp < 2; interp++)
        for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
            int ow = sizes[k][0], oh = sizes[k][1];
            ts_image *o = ts_image_resize(im, ow, oh, interp ? TS_INTERP_CUBIC : TS_INTERP_LINEAR);
            CHECK(o && o->width == ow && o->height == oh, "resize to %d x %d: %s", ow, oh, ts_last_error());
            if (!o) continue;
            int worst = 0;
            for (int y = 0; y < oh; y++)
                for (int x = 0; x < ow; x++)
                    for (int c = 0; c < 3; c++) {
                        double sx = (x + 0.5) * W / ow - 0.5, sy = (y + 0.5) * H / oh - 0.5;
                        double want = interp ? sample_cubic(im, sx, sy, c) : sample(im, sx, sy, c);
                        int d = (int)fabs(o->rgb[3 * (y * ow + x) + c] - want);
                        if (d > worst) worst = d;
                    }
            CHECK(worst <= 1, "%s resize to %d x %d: off the formula by %d", interp ? "bicubic" : "bilinear", ow, oh, worst);
            if (ow == W && oh == H) CHECK(!memcmp(o->rgb, im->rgb, W * H * 3), "resize to the same size changed pixels");
            ts_image_free(o);
        }
    /* rotations: corners land where a quarter turn counter-clockwise puts them, 4 turns = none */
    ts_image *q1 = ts_image_rotate(im, 1), *q3 = ts_image_rotate(im, -1), *h = ts_image_rotate(im, 2);
    CHECK(q1 && q1->width == H && q1->height == W, "rotate 1: wrong size");
    if (q1 && q3 && h) {
        /* the input's top-right pixel becomes the top-left one after a counter-clockwise turn */
        CHECK(!memcmp(q1->rgb, im->rgb + 3 * (W - 1), 3), "rotate 1: top-left is not the old top-right");
        /* and the bottom-left one after a clockwise turn */
        CHECK(!memcmp(q3->rgb, im->rgb + 3 * (size_t)((H - 1) * W), 3), "rotate -1: top-left is not the old bottom-left");
        CHECK(!memcmp(h->rgb, im->rgb + 3 * (size_t)(W * H - 1), 3), "rotate 2: top-left is not the old bottom-right");
        ts_image *back = ts_image_rotate(q1, 3), *back2 = ts_image_rotate(h, 2);
        CHECK(back && !memcmp(back->rgb, im->rgb, W * H * 3), "rotate 1 then 3 is not the identity");
        CHECK(back2 && !memcmp(back2->rgb, im->rgb, W * H * 3), "rotate 2 twice is not the identity");
        ts_image_free(back);
        ts_image_free(back2);
    }
    ts_image_free(q1);
    ts_image_free(q3);
    ts_image_free(h);
    CHECK(ts_image_resize(im, 0, 3, TS_INTERP_LINEAR) == NULL, "resize to 0 x 3 accepted");
    CHECK(ts_image_resize(im, 3, 3, (ts_interp)7) == NULL, "an unknown interpolation accepted");
    ts_image_free(im);
}

int main(int argc, char **argv) {
    tu_args(argc, argv);
    if (system("convert -version >/dev/null 2>&1") != 0)
        tu_skip("ImageMagick's convert is not installed (apt-get install imagemagick)");
    const char *base = getenv("TMPDIR");
    snprintf(tdir, sizeof tdir, "%s/ts_image_XXXXXX", base && *base ? base : "/tmp");
    if (!mkdtemp(tdir)) {
        perror("mkdtemp");
        return 1;
    }
    RUN(test_png_variants);
    RUN(test_png_alpha);
    RUN(test_jpeg_variants);
    RUN(test_bad_files);
    RUN(test_write_png);
    RUN(test_resize_rotate);
    if (!getenv("TS_TEST_KEEP")) nftw(tdir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    return tu_finish("test_image");
}
