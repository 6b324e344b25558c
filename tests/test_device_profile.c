/*
 * test_device_profile.c — device profiles (tessera_plan.h, apps/plan/profile*.c): the built-in
 * profiles (ipu-mk2, ipu-bow, h200) load with their public figures and a source for every
 * figure; a profile saved and loaded back is the same; a truncated, non-JSON, negative-figure,
 * missing-field, misspelt-field file is each an error naming the file and the field; names are
 * found in $TESSERA_PROFILE_PATH before the cache and the installed ones, an unknown name lists
 * the known ones; ts_profile_gemm_flops is exact at measured shapes and monotonic between them;
 * a quick measure of "cpu" gives positive rates, a f32 GEMM between 1 GFLOP/s and 10 TFLOP/s, and
 * rates of the fused attention op in f32 (and bf16 where the CPU has bf16 GEMMs), which round-trip.
 * Each case works in a fresh temporary folder that is also the cache ($XDG_CACHE_HOME).
 */
#include "tessera_apps.h"
#include "test_util.h"

#include "plan/plan.h"

#include <sys/stat.h>

static char tmp[128];

/* A fresh temporary folder as the cache; no $TESSERA_PROFILE_PATH. */
static void fresh(void) {
    snprintf(tmp, sizeof tmp, "/tmp/ts_profile_XXXXXX");
    if (!mkdtemp(tmp)) {
        perror("mkdtemp");
        exit(1);
    }
    setenv("XDG_CACHE_HOME", tmp, 1);
    unsetenv("TESSERA_PROFILE_PATH");
}

static void clean(void) {
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
    if (system(cmd)) fprintf(stderr, "could not remove %s\n", tmp);
}

static char *read_all(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *buf = calloc(1, 1 << 16);
    size_t n = buf ? fread(buf, 1, (1 << 16) - 1, f) : 0;
    (void)n;
    fclose(f);
    return buf;
}

static void write_file(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    if (!f) {
        perror(path);
        exit(1);
    }
    fputs(text, f);
    fclose(f);
}

/* text with the first `from` replaced by `to` (a new string). */
static char *replaced(const char *text, const char *from, const char *to) {
    const char *at = strstr(text, from);
    if (!at) return NULL;
    size_t n = strlen(text) + strlen(to) + 1;
    char *out = malloc(n);
    snprintf(out, n, "%.*s%s%s", (int)(at - text), text, to, at + strlen(from));
    return out;
}

/* Every figure of p has a "field: " line in its sources. */
static void check_sources(const ts_device_profile *p) {
    static const char *const fields[] = {"memory_bytes", "streaming_bytes", "peak_flops", "mem_bw", "link_bw",
                                         "link_latency", "host_bw", "host_latency", "devices_per_host",
                                         "eff_matmul", "eff_mem", "node_overhead"};
    for (size_t i = 0; i < sizeof fields / sizeof *fields; i++) {
        char key[64];
        snprintf(key, sizeof key, "%s: ", fields[i]);
        CHECK(strstr(p->sources, key) != NULL, "%s: no source for %s", p->name, fields[i]);
    }
}

static void test_builtin_profiles(void) {
    fresh();
    ts_device_profile p = {.struct_size = sizeof p};
    CHECK_OK(ts_device_profile_load("ipu-mk2", &p));
    CHECK(!strcmp(p.name, "ipu-mk2") && !p.measured, "name %s", p.name);
    CHECK(p.memory_bytes == 900e6, "Mk2 memory %g", p.memory_bytes);
    CHECK(p.peak_flops[TS_F16] == 250e12 && p.peak_flops[TS_F32] == 62.5e12 && p.peak_flops[TS_BF16] == 0,
          "Mk2 peaks %g %g %g", p.peak_flops[TS_F32], p.peak_flops[TS_BF16], p.peak_flops[TS_F16]);
    CHECK(p.mem_bw == 47.5e12 && p.link_bw == 320e9, "Mk2 bandwidths %g %g", p.mem_bw, p.link_bw);
    CHECK(p.streaming_bytes > 0 && p.streaming_bw > 0, "Mk2 streaming memory %g", p.streaming_bytes);
    CHECK(strstr(p.sources, "eff_matmul: calibrated: ") != NULL, "Mk2: eff_matmul without its calibration source");
    CHECK(strstr(p.description, "1,472 tiles") && strstr(p.description, "1.33 GHz"), "Mk2: %s", p.description);
    check_sources(&p);

    CHECK_OK(ts_device_profile_load("ipu-bow", &p));
    CHECK(p.memory_bytes == 900e6 && p.peak_flops[TS_F16] == 350e12 && p.mem_bw == 65e12 && p.link_bw == 320e9,
          "Bow figures %g %g %g", p.memory_bytes, p.peak_flops[TS_F16], p.mem_bw);
    CHECK(strstr(p.description, "1.85 GHz") != NULL, "Bow: %s", p.description);
    check_sources(&p);

    CHECK_OK(ts_device_profile_load(TS_SOURCE_DIR "/profiles/h200.json", &p)); /* by path */
    CHECK(!strcmp(p.name, "h200") && p.memory_bytes == 141e9 && p.mem_bw == 4.8e12, "H200 %g %g", p.memory_bytes, p.mem_bw);
    CHECK(p.peak_flops[TS_BF16] == 989e12 && p.peak_flops[TS_F16] == 989e12 && p.peak_flops[TS_F32] == 67e12,
          "H200 peaks %g %g %g", p.peak_flops[TS_F32], p.peak_flops[TS_BF16], p.peak_flops[TS_F16]);
    CHECK(p.link_bw == 450e9 && strstr(p.sources, "900 GB/s"), "H200 NVLink %g each way", p.link_bw);
    CHECK(p.devices_per_host == 8, "H200 per host %d", p.devices_per_host);
    check_sources(&p);
    clean();
}

static void test_round_trip(void) {
    fresh();
    ts_device_profile a = {.struct_size = sizeof a}, b = {.struct_size = sizeof b};
    CHECK_OK(ts_device_profile_load("h200", &a));
    a.measured = 1;
    a.ngemm = 3;
    a.gemm[0] = (ts_gemm_point){1024, 768, 768, TS_BF16, 7.123456789012345e14};
    a.gemm[1] = (ts_gemm_point){8, 768, 3072, TS_F32, 1.0 / 3.0 * 1e13};
    a.gemm[2] = (ts_gemm_point){128, 128, 64, TS_F16, 2.5e11};
    a.node_overhead = 1.0 / 7.0 * 1e-5;
    CHECK(a.attention_fwd_flops[TS_F32] == 0 && a.attention_bwd_flops[TS_BF16] == 0,
          "a hand-written profile has no attention rates");
    a.attention_fwd_flops[TS_F32] = 1.0 / 3.0 * 1e11, a.attention_bwd_flops[TS_F32] = 2.0e11;
    a.attention_fwd_flops[TS_BF16] = 3.0e11, a.attention_bwd_flops[TS_BF16] = 1.0 / 7.0 * 1e12;
    char path[256];
    snprintf(path, sizeof path, "%s/sub/dir/h200-copy.json", tmp); /* folders made */
    CHECK_OK(ts_device_profile_save(path, &a));
    memset(&b, 0xab, sizeof b);
    CHECK_OK(ts_device_profile_load(path, &b));
    CHECK(!strcmp(a.name, b.name) && !strcmp(a.description, b.description) && !strcmp(a.sources, b.sources),
          "strings differ:\n%s\n%s", a.sources, b.sources);
    CHECK(a.measured == b.measured && a.devices_per_host == b.devices_per_host && a.ngemm == b.ngemm, "ints differ");
    double fa[] = {a.memory_bytes, a.streaming_bytes, a.streaming_bw, a.mem_bw, a.link_bw, a.link_latency, a.host_bw,
                   a.host_latency, a.eff_mem, a.node_overhead, a.peak_flops[0], a.peak_flops[1], a.peak_flops[2],
                   a.eff_matmul[0], a.eff_matmul[1], a.eff_matmul[2]};
    double fb[] = {b.memory_bytes, b.streaming_bytes, b.streaming_bw, b.mem_bw, b.link_bw, b.link_latency, b.host_bw,
                   b.host_latency, b.eff_mem, b.node_overhead, b.peak_flops[0], b.peak_flops[1], b.peak_flops[2],
                   b.eff_matmul[0], b.eff_matmul[1], b.eff_matmul[2]};
    for (size_t i = 0; i < sizeof fa / sizeof *fa; i++) CHECK(fa[i] == fb[i], "figure %zu: %.17g vs %.17g", i, fa[i], fb[i]);
    for (int d = 0; d < 3; d++)
        CHECK(a.attention_fwd_flops[d] == b.attention_fwd_flops[d] && a.attention_bwd_flops[d] == b.attention_bwd_flops[d],
              "attention rates of dtype %d: %.17g %.17g vs %.17g %.17g", d, a.attention_fwd_flops[d],
              a.attention_bwd_flops[d], b.attention_fwd_flops[d], b.attention_bwd_flops[d]);
    for (int i = 0; i < a.ngemm && i < b.ngemm; i++)
        CHECK(a.gemm[i].m == b.gemm[i].m && a.gemm[i].n == b.gemm[i].n && a.gemm[i].k == b.gemm[i].k &&
                  a.gemm[i].dtype == b.gemm[i].dtype && a.gemm[i].flops == b.gemm[i].flops,
              "gemm %d differs", i);
    clean();
}

/* Loading `text` (written to tmp/name) fails with code, the message naming the file and `field`. */
static void check_bad(const char *name, const char *text, ts_status code, const char *field) {
    char path[256];
    snprintf(path, sizeof path, "%s/%s", tmp, name);
    write_file(path, text ? text : "");
    ts_device_profile p = {.struct_size = sizeof p};
    CHECK_STATUS(ts_device_profile_load(path, &p), code);
    CHECK_ERRMSG(path, field);
}

static void test_bad_files(void) {
    fresh();
    char *good = read_all(TS_SOURCE_DIR "/profiles/h200.json");
    CHECK(good != NULL, "cannot read the h200 profile");
    if (!good) return;
    char *half = strdup(good);
    half[strlen(half) / 2] = 0;
    check_bad("truncated.json", half, TS_ERR_IO, "not a JSON profile: invalid JSON at line");
    check_bad("text.json", "peak_flops = 1e12\n", TS_ERR_IO, "not a JSON profile");
    check_bad("array.json", "[1, 2]", TS_ERR_ARG, "expected a JSON object");
    char *t = replaced(good, "\"mem_bw\": 4.8e12", "\"mem_bw\": -4.8e12");
    check_bad("negative.json", t, TS_ERR_ARG, "\"mem_bw\" must be > 0");
    free(t);
    t = replaced(good, "\"link_latency\": 2e-6", "\"link_latency\": -1");
    check_bad("negative2.json", t, TS_ERR_ARG, "\"link_latency\" must be >= 0");
    free(t);
    t = replaced(good, "\"memory_bytes\": 141e9,", "");
    check_bad("missing.json", t, TS_ERR_ARG, "\"memory_bytes\" is missing");
    free(t);
    t = replaced(good, ", \"f16\": 989e12}", "}");
    check_bad("missing_dtype.json", t, TS_ERR_ARG, "\"peak_flops.f16\" is missing");
    free(t);
    t = replaced(good, "\"mem_bw\"", "\"mem_bww\"");
    check_bad("misspelt.json", t, TS_ERR_ARG, "\"mem_bww\" is not a profile field");
    free(t);
    t = replaced(good, "\"devices_per_host\": 8", "\"devices_per_host\": 2.5");
    check_bad("fraction.json", t, TS_ERR_ARG, "\"devices_per_host\" must be an integer");
    free(t);
    t = replaced(good, "\"name\": \"h200\"", "\"name\": \"a/b\"");
    check_bad("badname.json", t, TS_ERR_ARG, "\"name\"");
    free(t);
    t = replaced(good, "\"sources\": {", "\"gemm\": [{\"m\": 8, \"n\": 8, \"k\": 8, \"dtype\": \"f64\", \"flops\": 1}], \"sources\": {");
    check_bad("gemm.json", t, TS_ERR_ARG, "\"gemm[0].dtype\"");
    free(t);
    /* a source's key names a figure: one longer than 63 characters (which the saved file could not
     * hold as written) is refused, found by fuzz_device_profile */
    t = replaced(good, "\"sources\": {", "\"sources\": {\"m_a_key_of_seventy_characters_that_names_no_figure_of_a_profile_xx\": \"x\", ");
    check_bad("longkey.json", t, TS_ERR_ARG, "a key longer than 63 characters");
    free(t);
    ts_device_profile p = {.struct_size = sizeof p};
    char path[256];
    snprintf(path, sizeof path, "%s/absent.json", tmp);
    CHECK_STATUS(ts_device_profile_load(path, &p), TS_ERR_NOT_FOUND);
    CHECK_ERRMSG(path);
    free(half);
    free(good);
    clean();
}

static void test_lookup(void) {
    fresh();
    char dir[256], path[300];
    snprintf(dir, sizeof dir, "%s/mine", tmp);
    mkdir(dir, 0777);
    char *good = read_all(TS_SOURCE_DIR "/profiles/h200.json");
    CHECK(good != NULL, "cannot read the h200 profile");
    if (!good) return;
    char *small = replaced(good, "\"memory_bytes\": 141e9", "\"memory_bytes\": 1e9");
    snprintf(path, sizeof path, "%s/h200.json", dir);
    write_file(path, small);
    char *mine = replaced(good, "\"name\": \"h200\"", "\"name\": \"mydev\"");
    snprintf(path, sizeof path, "%s/mydev.json", dir);
    write_file(path, mine);
    setenv("TESSERA_PROFILE_PATH", dir, 1);
    ts_device_profile p = {.struct_size = sizeof p};
    CHECK_OK(ts_device_profile_load("h200", &p));
    CHECK(p.memory_bytes == 1e9, "TESSERA_PROFILE_PATH comes first: memory %g", p.memory_bytes);
    CHECK_OK(ts_device_profile_load("mydev", &p));
    CHECK(!strcmp(p.name, "mydev"), "name %s", p.name);

    /* the cache: a profile saved at the cache path of a device is what its name loads */
    CHECK_OK(ts_device_profile_cache_path("cpu", path, sizeof path));
    CHECK(strstr(path, tmp) == path && strstr(path, "/tessera/profiles/cpu.json"), "cache path %s", path);
    p.measured = 1;
    snprintf(p.name, sizeof p.name, "cpu");
    p.memory_bytes = 12345;
    CHECK_OK(ts_device_profile_save(path, &p));
    CHECK_OK(ts_device_profile_load("cpu", &p));
    CHECK(p.memory_bytes == 12345 && p.measured, "the cached cpu profile: memory %g", p.memory_bytes);

    CHECK_STATUS(ts_device_profile_load("no-such-device", &p), TS_ERR_NOT_FOUND);
    CHECK_ERRMSG("no-such-device", "ipu-mk2", "ipu-bow", "h200", "mydev", dir);

    char listed[8192] = "";
    FILE *f = fmemopen(listed, sizeof listed - 1, "w");
    CHECK_OK(ts_device_profile_list(ts_write_stdio, f));
    fclose(f);
    CHECK(strstr(listed, "mydev") && strstr(listed, "ipu-mk2") && strstr(listed, "ipu-bow") && strstr(listed, "cpu"),
          "list:\n%s", listed);
    const char *h = strstr(listed, "\nh200 ");
    double gb = 0;
    CHECK(h && !strstr(h + 1, "\nh200 ") && sscanf(h + 1, "h200 %lf GB", &gb) == 1 && gb == 1.0,
          "the first h200 found only:\n%s", listed);
    free(small);
    free(mine);
    free(good);
    clean();
}

static void test_gemm_rates(void) {
    ts_device_profile p = {.struct_size = sizeof p, .mem_bw = 1e11, .eff_mem = 0.5};
    p.peak_flops[TS_F32] = 1e12, p.eff_matmul[TS_F32] = 0.5;
    p.peak_flops[TS_BF16] = 4e12, p.eff_matmul[TS_BF16] = 0.25;
    CHECK(ts_profile_gemm_flops(&p, 512, 512, 512, TS_F32) == 0.5e12, "no table: peak x eff");
    CHECK(ts_profile_gemm_flops(&p, 512, 512, 512, TS_F16) == 0, "no f16: 0");
    CHECK(ts_profile_mem_bw(&p) == 0.5e11, "mem_bw x eff_mem");
    p.ngemm = 4, p.eff_matmul[TS_F32] = p.eff_matmul[TS_BF16] = 1; /* as measured */
    p.gemm[0] = (ts_gemm_point){64, 64, 64, TS_F32, 1e9};
    p.gemm[1] = (ts_gemm_point){256, 256, 256, TS_F32, 1e10};
    p.gemm[2] = (ts_gemm_point){1024, 768, 768, TS_F32, 5e10};
    p.gemm[3] = (ts_gemm_point){128, 128, 128, TS_BF16, 3e9};
    for (int i = 0; i < 4; i++)
        CHECK(ts_profile_gemm_flops(&p, p.gemm[i].m, p.gemm[i].n, p.gemm[i].k, p.gemm[i].dtype) == p.gemm[i].flops,
              "exact at measured point %d", i);
    double prev = 0;
    for (int64_t n = 8; n <= 4096; n += n / 8) { /* sizes growing: the rate never falls */
        double f = ts_profile_gemm_flops(&p, n, n, n, TS_F32);
        CHECK(f >= prev && f > 0, "n %lld: %g after %g", (long long)n, f, prev);
        prev = f;
    }
    double mid = ts_profile_gemm_flops(&p, 128, 128, 128, TS_F32);
    CHECK(mid > 1e9 && mid < 1e10, "between the points: %g", mid);
    CHECK(fabs(ts_profile_gemm_flops(&p, 8192, 8192, 8192, TS_F32) - 5e10) < 1e-9 * 5e10, "beyond the largest: its rate");
    double tiny = ts_profile_gemm_flops(&p, 32, 64, 64, TS_F32);
    CHECK(fabs(tiny - 0.5e9) < 1e-3 * 0.5e9, "half the smallest measured size: half its rate, %g", tiny);
    p.eff_matmul[TS_F32] = 0.5; /* a run's calibration: a factor on the measured rates */
    CHECK(ts_profile_gemm_flops(&p, 1024, 768, 768, TS_F32) == 2.5e10, "eff_matmul 0.5 halves a measured rate");
    CHECK(ts_profile_gemm_flops(&p, 128, 128, 128, TS_BF16) == 3e9, "bf16's own eff_matmul (1) leaves its rate");
    CHECK(ts_profile_gemm_flops(&p, 64, 64, 64, TS_F16) == 0, "no f16 anywhere: 0");
    CHECK(ts_profile_gemm_flops(&p, 0, 64, 64, TS_F32) == 0 && ts_profile_gemm_flops(NULL, 8, 8, 8, TS_F32) == 0, "bad");
}

static void test_measure_cpu(void) {
    fresh();
    ts_device_profile p = {.struct_size = sizeof p};
    CHECK_OK(ts_device_profile_measure("cpu", 1, &p));
    CHECK(p.measured && !strcmp(p.name, "cpu"), "measured %d %s", p.measured, p.name);
    CHECK(p.peak_flops[TS_F32] >= 1e9 && p.peak_flops[TS_F32] <= 1e13, "f32 GEMM rate %g", p.peak_flops[TS_F32]);
    CHECK(p.eff_matmul[TS_F32] == 1 && p.eff_mem == 1, "efficiencies 1");
    CHECK(p.mem_bw > 1e8 && p.link_bw > 0 && p.memory_bytes > 0 && p.node_overhead >= 0 && p.link_latency >= 0,
          "mem_bw %g link_bw %g memory %g overhead %g", p.mem_bw, p.link_bw, p.memory_bytes, p.node_overhead);
    CHECK(p.ngemm >= 6, "%d GEMMs", p.ngemm);
    for (int i = 0; i < p.ngemm; i++) CHECK(p.gemm[i].flops > 0, "gemm %d rate %g", i, p.gemm[i].flops);
    /* the fused attention op, as it runs: at most the device's best f32 GEMM rate by far */
    CHECK(p.attention_fwd_flops[TS_F32] > 1e8 && p.attention_bwd_flops[TS_F32] > 1e8 &&
              p.attention_fwd_flops[TS_F32] < 4 * p.peak_flops[TS_F32],
          "attention f32 forward %g, backward %g FLOP/s", p.attention_fwd_flops[TS_F32], p.attention_bwd_flops[TS_F32]);
    CHECK((p.peak_flops[TS_BF16] > 0) == (p.attention_fwd_flops[TS_BF16] > 0) && p.attention_fwd_flops[TS_F16] == 0,
          "attention bf16 %g (bf16 GEMMs %g), f16 %g", p.attention_fwd_flops[TS_BF16], p.peak_flops[TS_BF16],
          p.attention_fwd_flops[TS_F16]);
    CHECK(strstr(p.sources, "attention_fwd_flops: measured") && strstr(p.sources, "attention_bwd_flops: measured"),
          "no source for the attention rates:\n%s", p.sources);
    CHECK(strstr(p.sources, "measured by tessera profile-device on") != NULL, "sources:\n%s", p.sources);
    check_sources(&p);
    char path[256];
    snprintf(path, sizeof path, "%s/cpu.json", tmp);
    CHECK_OK(ts_device_profile_save(path, &p));
    ts_device_profile q = {.struct_size = sizeof q};
    CHECK_OK(ts_device_profile_load(path, &q));
    /* every measured figure reads back bit for bit (cJSON's own printing was one ulp off at times) */
    int same = q.ngemm == p.ngemm && q.mem_bw == p.mem_bw && q.link_bw == p.link_bw;
    for (int d = 0; d < 3; d++) same &= q.peak_flops[d] == p.peak_flops[d];
    for (int i = 0; i < p.ngemm && same; i++) same &= q.gemm[i].flops == p.gemm[i].flops;
    for (int d = 0; d < 3; d++)
        same &= q.attention_fwd_flops[d] == p.attention_fwd_flops[d] && q.attention_bwd_flops[d] == p.attention_bwd_flops[d];
    CHECK(same, "measured profile round trip: f32 %.17g vs %.17g", q.peak_flops[TS_F32], p.peak_flops[TS_F32]);
    p.mem_bw = NAN;
    CHECK_STATUS(ts_device_profile_save(path, &p), TS_ERR_ARG);
    CHECK_ERRMSG("\"mem_bw\" is not a finite number");
    CHECK_STATUS(ts_device_profile_measure("nodevice:0", 1, &p), TS_ERR_NOT_FOUND);
    clean();
}

int main(int argc, char **argv) {
    tu_args(argc, argv);
    RUN(test_builtin_profiles);
    RUN(test_round_trip);
    RUN(test_bad_files);
    RUN(test_lookup);
    RUN(test_gemm_rates);
    RUN(test_measure_cpu);
    return tu_finish("test_device_profile");
}
