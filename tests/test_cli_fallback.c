/*
 * test_cli_fallback.c — the CPU fallback in every layout, proved by a randomized device: the CPU
 * backend built as a plugin (backends/cpu/plugin.c) claims, with TESSERA_CPUPLUGIN_FRACTION=0.5
 * and TESSERA_CPUPLUGIN_SEED=S, a pseudo-random half of the (op, dtype) pairs, so each seed cuts
 * the graph at other places and tessera runs the rest on its CPU fallback, with host copies
 * between the parts. The plugin computes what it claims with the CPU's own kernels, so every
 * run must equal the built-in CPU's, bit for bit: the parameters written (model.safetensors)
 * and the losses and held-out figures of every step (metrics.jsonl, timings left out).
 *
 * Layouts, each against the same layout on the built-in CPU (`cpu` for the plugin's devices):
 *   one     one device, one program (training and the held-out evaluation on it)
 *   mixed2  a 2-stage pipeline, the random device then cpu:1
 *   rec4    4 stages alternating the random device and the CPU, with --recompute
 *   bf16    one device, bf16 matrix products
 *   fp16    one device, fp16 matrix products with dynamic loss scaling (a pipeline has none yet)
 *   acc4    one device, 4 micro-batches accumulated a step
 *   rep2    2 replicas under mpirun, each on the random device (skipped without MPI)
 * for pretraining, then fine-tuning a classifier from the CPU's pretrained model; and for each
 * seed, inference on one device: `tessera run --device` (every output tensor, byte for byte) and
 * `tessera predict --device` (the printed labels and probabilities). The release
 * build runs 20 seeds (TS_FALLBACK_SEEDS overrides), the sanitizer build 2 (each run is ~10x
 * slower there, and the point of that build is a clean memory report, which few seeds give).
 * Also: a device that claims no op at all trains through every layout the same way. tessera checks
 * the one-thread-per-device rule at every call: in rec4 two devices of the plugin run on two
 * threads at once, each with a CPU fallback context of its own.
 */
#include "test_util.h"
#include "cli_util.h"

#ifndef TS_CPU_PLUGIN
#define TS_CPU_PLUGIN "plugins/libtessera-cpuplugin.so"
#endif

static const char *PRE = "pretrain --vocab vocab.txt --corpus corpus.txt --max-len 24 --batch 2 --threads 1 --heads 2 "
                         "--layers 4 --hidden 32 --intermediate 64 --max-steps 3 --eval-every 3 --eval-batches 1 "
                         "--dropout 0.1";
static const char *FT = "finetune --model base --train data.tsv --max-len 24 --batch 2 --threads 1 --max-steps 3 "
                        "--epochs 1";

typedef struct layout {
    const char *name;
    const char *flags; /* with %s for the device of stages 0 and 2 (the random one, or cpu) */
    int ranks;         /* > 1: under mpirun */
} layout;

static const layout LAYOUTS[] = {
    {"one", "--device %s:0", 1},
    {"mixed2", "--devices %s:0,cpu:1 --stages \"0:emb,0-1 1:2-3,heads\"", 1},
    {"rec4", "--devices %s:0,cpu:1,%s:2,cpu:3 --stages \"0:emb,0 1:1 2:2 3:3,heads\" --recompute", 1},
    {"bf16", "--device %s:0 --bf16", 1},
    {"fp16", "--devices %s:0 --fp16", 1},
    {"acc4", "--devices %s:0 --accumulation 4", 1},
    {"rep2", "--devices %s:0", 2},
};
enum { NLAYOUTS = sizeof LAYOUTS / sizeof LAYOUTS[0] };

static int have_mpi;

/* Run `tessera --quiet ARGS` (under mpirun with ranks > 1), with the plugin loaded when plugin is set. */
__attribute__((format(printf, 3, 4))) static int run_cli(int ranks, int plugin, const char *fmt, ...) {
    char args[2048], cmd[8192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    char launcher[256] = "";
    if (ranks > 1)
        snprintf(launcher, sizeof launcher, "mpirun --oversubscribe -x TESSERA_CPUPLUGIN_FRACTION "
                 "-x TESSERA_CPUPLUGIN_SEED -np %d ", ranks);
    snprintf(cmd, sizeof cmd, "cd '%s' && %s'%s' --quiet %s%s%s %s </dev/null >stdout.txt 2>stderr.txt", dir, launcher,
             cli, plugin ? "--backend-plugin '" : "", plugin ? TS_CPU_PLUGIN : "", plugin ? "'" : "", args);
    int st = system(cmd);
    read_into("stdout.txt", out_text, sizeof out_text);
    read_into("stderr.txt", err_text, sizeof err_text);
    if (st == -1 || !WIFEXITED(st)) return -1;
    return WEXITSTATUS(st);
}

/* The layout's flags for device kind dev ("cpu" or "cpuplugin"). */
static void flags_of(const layout *l, const char *dev, char *out, size_t cap) {
    snprintf(out, cap, l->flags, dev, dev);
}

/* DIR/metrics.jsonl without its timing fields ("seconds", "seq_per_s", "wall", busy times): what a
 * run computed, for comparing two runs byte for byte. */
static void figures_of(const char *run, char *out, size_t cap) {
    char name[300], buf[1 << 16];
    snprintf(name, sizeof name, "%s/metrics.jsonl", run);
    read_into(name, buf, sizeof buf);
    size_t o = 0;
    for (const char *p = buf; *p && o + 1 < cap;) {
        const char *l = strstr(p, "\"loss\"");
        const char *a = strstr(p, "accuracy\"");
        const char *q = l && (!a || l < a) ? l : a;
        if (!q) break;
        const char *e = q;
        while (*e && *e != ',' && *e != '}') e++;
        o += (size_t)snprintf(out + o, cap - o, "%.*s|", (int)(e - q), q);
        p = e;
    }
    out[o] = 0;
}

/* Pretraining and fine-tuning in layout l on the built-in CPU: the references. */
static void references(const layout *l) {
    char f[512];
    flags_of(l, "cpu", f, sizeof f);
    int rc = run_cli(l->ranks, 0, "%s %s --out ref_%s", PRE, f, l->name);
    CHECK_RAN(rc, 0);
    rc = run_cli(l->ranks, 0, "%s %s --out reff_%s", FT, f, l->name);
    CHECK_RAN(rc, 0);
}

static void test_setup(void) {
    write_corpus("corpus.txt");
    write_labelled("data.tsv");
    int rc = tessera(NULL, "vocab --out vocab.txt --size 120 corpus.txt");
    CHECK_RAN(rc, 0);
    rc = tessera(NULL, "%s --out base", PRE);
    CHECK_RAN(rc, 0);
    rc = tessera(NULL, "%s --out cls", FT); /* the classifier run and predict use */
    CHECK_RAN(rc, 0);
    /* tessera run's inputs: a batch of 2 sequences of 24 token ids */
    int64_t ids[2 * 24], shape[2] = {2, 24};
    for (int i = 0; i < 2 * 24; i++) ids[i] = (i * 37) % 80 + 5;
    ts_tensor *t = ts_tensor_from(TS_I64, 2, shape, ids);
    char path[256];
    snprintf(path, sizeof path, "%s/in.safetensors", dir);
    CHECK_OK(ts_safetensors_save(path, 1, (const char *[]){"input_ids"}, (const ts_tensor *const *)&t, NULL));
    ts_tensor_free(t);
    rc = tessera(NULL, "run --model cls --inputs in.safetensors --outputs run_cpu.safetensors --device cpu");
    CHECK_RAN(rc, 0);
    rc = tessera(NULL, "predict --model cls --data data.tsv");
    CHECK_RAN(rc, 0);
    write_str("predict_cpu.txt", out_text);
}

/* Inference on the random device for one seed: run's outputs and predict's lines, as the CPU's. */
static int check_inference(int seed, const char *fraction) {
    int rc = run_cli(1, 1, "run --model cls --inputs in.safetensors --outputs run_t.safetensors --device cpuplugin");
    CHECK_RAN(rc, 0);
    int same = rc == 0 && same_bytes("run_cpu.safetensors", "run_t.safetensors");
    CHECK(same, "run, seed %d (fraction %s): outputs differ from the CPU's", seed, fraction);
    rc = run_cli(1, 1, "predict --model cls --data data.tsv --device cpuplugin");
    CHECK_RAN(rc, 0);
    static char want[1 << 16];
    read_into("predict_cpu.txt", want, sizeof want);
    int same_p = rc == 0 && want[0] && !strcmp(want, out_text);
    CHECK(same_p, "predict, seed %d (fraction %s): lines differ from the CPU's:\n%.300s\n%.300s", seed, fraction, want,
          out_text);
    return !same || !same_p;
}

/* Every layout over the seeds: bit-identical to the CPU's reference. */
static void run_layouts(int nseeds, const char *fraction) {
    setenv("TESSERA_CPUPLUGIN_FRACTION", fraction, 1);
    for (int k = 0; k < NLAYOUTS; k++) {
        const layout *l = &LAYOUTS[k];
        if (l->ranks > 1 && !have_mpi) continue;
        char f[512], want[8192], got[8192], ref[64], reff[64];
        flags_of(l, "cpuplugin", f, sizeof f);
        snprintf(ref, sizeof ref, "ref_%s", l->name);
        snprintf(reff, sizeof reff, "reff_%s", l->name);
        int bad = 0;
        for (int seed = 0; seed < nseeds && !bad; seed++) {
            char s[32];
            snprintf(s, sizeof s, "%d", seed);
            setenv("TESSERA_CPUPLUGIN_SEED", s, 1);
            int rc = run_cli(l->ranks, 1, "%s %s --out t", PRE, f);
            CHECK_RAN(rc, 0);
            char p1[96], p2[96];
            snprintf(p1, sizeof p1, "%s/model.safetensors", ref);
            figures_of(ref, want, sizeof want), figures_of("t", got, sizeof got);
            int same = rc == 0 && same_bytes(p1, "t/model.safetensors");
            CHECK(same, "%s, seed %d (fraction %s): pretrained parameters differ from the CPU's", l->name, seed, fraction);
            CHECK(want[0] && !strcmp(want, got), "%s, seed %d: figures differ:\n%s\n%s", l->name, seed, want, got);
            bad += !same || strcmp(want, got);
            rc = run_cli(l->ranks, 1, "%s %s --out tf", FT, f);
            CHECK_RAN(rc, 0);
            snprintf(p2, sizeof p2, "%s/model.safetensors", reff);
            figures_of(reff, want, sizeof want), figures_of("tf", got, sizeof got);
            same = rc == 0 && same_bytes(p2, "tf/model.safetensors");
            CHECK(same, "%s, seed %d (fraction %s): fine-tuned parameters differ from the CPU's", l->name, seed, fraction);
            CHECK(want[0] && !strcmp(want, got), "%s, seed %d: fine-tuning figures differ:\n%s\n%s", l->name, seed,
                  want, got);
            bad += !same || strcmp(want, got);
            if (k == 0) bad += check_inference(seed, fraction); /* once per seed */
            char rm[256];
            snprintf(rm, sizeof rm, "rm -rf '%s/t' '%s/tf'", dir, dir);
            if (system(rm) != 0) bad++;
        }
    }
}

/* --devices with one device is one program on it, trained on --batch rows: not a pipeline of
 * 2 micro-batches (as it was); --micro-batches 1 is accepted there and refused by a pipeline. */
static void test_one_device_batch(void) {
    int rc = tessera(NULL, "%s --devices cpu --batch 4 --out b4", PRE);
    CHECK_RAN(rc, 0);
    char met[1 << 16];
    read_into("b4/metrics.jsonl", met, sizeof met);
    CHECK(strstr(met, "{\"batch\": {\"rows\": 4, \"micro_batches\": 1, \"replicas\": 1, \"global\": 4}}"),
          "metrics.jsonl does not say batches of 4:\n%.500s", met);
    CHECK(strstr(out_text, "1 micro-batch of 4 per step (effective batch 4)") && !strstr(out_text, "pipeline"),
          "the run's batch line: %s", out_text);
    rc = tessera(NULL, "%s --devices cpu:1 --micro-batches 1 --out b1", PRE);
    CHECK_RAN(rc, 0);
    CHECK(strstr(out_text, "1 micro-batch of 2 per step (effective batch 2)"), "--micro-batches 1: %s", out_text);
    rc = tessera(NULL, "%s --devices cpu:0,cpu:1 --micro-batches 1 --out b2", PRE);
    CHECK_FAILS(rc, "--micro-batches 1: a pipeline");
}

static void test_references(void) {
    for (int k = 0; k < NLAYOUTS; k++)
        if (LAYOUTS[k].ranks == 1 || have_mpi) references(&LAYOUTS[k]);
}

static int nseeds(void) {
    const char *e = getenv("TS_FALLBACK_SEEDS");
    if (e && atoi(e) > 0) return atoi(e);
#if defined(__SANITIZE_ADDRESS__)
    return 2;
#else
    return 20;
#endif
}

static void test_random_device(void) { run_layouts(nseeds(), "0.5"); }

/* A device that claims nothing: every node on the fallback, in every layout. */
static void test_no_op_device(void) { run_layouts(1, "0"); }

int main(int argc, char **argv) {
    tu_args(argc, argv);
    have_mpi = strcmp(ts_comm_backend(), "mpi") == 0 && system("mpirun --version >/dev/null 2>&1") == 0;
    setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
    setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
    setenv("OMPI_MCA_rmaps_base_oversubscribe", "1", 1);
    int rc = cli_setup("ts_cli_fallback");
    if (rc) return rc;
    if (!have_mpi) printf("test_cli_fallback: no MPI in this build or no mpirun: the replica layout is left out\n");
    RUN(test_setup);
    RUN(test_one_device_batch);
    RUN(test_references);
    tu_run("test_random_device", test_random_device, 1500); /* 20 seeds x 7 layouts x 2 runs */
    RUN(test_no_op_device);
    cli_cleanup("test_cli_fallback");
    return tu_finish("test_cli_fallback");
}
