/*
 * test_cli_quant.c — `tessera quantize` (cli/quantize.c) on a tiny fine-tuned classifier:
 *  - --dynamic --eval prints the float and int8 accuracy side by side and writes the copy, whose
 *    config.json records the quantization and whose other files are the model's;
 *  - `tessera eval` of the copy (its programs int8, from the config) gives the int8 accuracy
 *    quantize printed, and `predict` runs it;
 *  - a missing --dynamic, --max-drop without --eval, an already quantized model, --out equal to
 *    --model: errors naming them; --max-drop refuses to write a copy that loses too much (checked
 *    with --max-drop 0 when int8 lost accuracy on the data; skipped when it lost none);
 *  - --calib (static int8) with each method: the copy's config records the mode, the method and a
 *    scale per weight matmul; `tessera eval` of it gives the int8 accuracy quantize printed;
 *  - a QA model calibrated on a SQuAD file: EM / F1 float and int8 printed, eval of the copy
 *    gives the int8 F1, and a classifier's .tsv as its calibration set is refused;
 *  - bad calibration input: an empty set, a file of another task (QA JSON lines for a
 *    classifier), --samples 0, an unknown --method, --dynamic with --calib: errors naming them,
 *    nothing written;
 *  - run, eval and predict name the int8 mode (dynamic, calibrated) of the copies they run, f32
 *    of a float model; finished model directories (pretrain's, finetune's, the copy) hold no
 *    .tessera.lock; `quantize` without flags names the --model it needs.
 */
#include "test_util.h"
#include "cli_util.h"

/* Is there an entry `name` (relative to dir), empty or not? */
static int present(const char *name) {
    char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return access(path, F_OK) == 0;
}

static void test_quantize(void) {
    write_corpus("corpus.txt");
    write_labelled("data.tsv");
    int rc = tessera(NULL, "vocab --out vocab.txt --size 100 corpus.txt");
    CHECK_RAN(rc, 0);
    rc = tessera(NULL, "pretrain --vocab vocab.txt --corpus corpus.txt --out pre --layers 1 --hidden 32 --heads 2 "
                       "--intermediate 64 --max-len 32 --batch 4 --max-steps 2 --threads 1");
    CHECK_RAN(rc, 0);
    rc = tessera(NULL, "finetune --model pre --train data.tsv --out ft --test-split 0 --epochs 10 --batch 4 "
                       "--max-len 16 --lr 2e-3 --threads 1");
    CHECK_RAN(rc, 0);

    rc = tessera(NULL, "quantize --model ft --dynamic --out ft8 --eval data.tsv --max-drop 50 --threads 1");
    CHECK_RAN(rc, 0);
    double acc_f = printed_number("accuracy float "), acc_q = printed_number("int8 ");
    printf("  %s", out_text);
    CHECK(acc_f >= 0 && acc_q >= 0 && fabs(acc_f - acc_q) <= 50, "quantize printed float %.2f, int8 %.2f", acc_f, acc_q);
    static char cfg[1 << 14];
    read_into("ft8/config.json", cfg, sizeof cfg);
    CHECK(strstr(cfg, "\"quantization\": {\"mode\": \"dynamic\"") != NULL, "ft8/config.json: %s", cfg);
    CHECK(same_bytes("ft/model.safetensors", "ft8/model.safetensors") && same_bytes("ft/vocab.txt", "ft8/vocab.txt"),
          "the copy's weights or vocabulary differ from the model's");

    rc = tessera(NULL, "eval --model ft8 --data data.tsv --threads 1");
    CHECK_RAN(rc, 0);
    double acc_e = printed_number("accuracy ");
    CHECK(fabs(acc_e - acc_q) < 1e-6, "eval of the int8 copy: %.2f%%, quantize's int8 figure %.2f%%", acc_e, acc_q);
    rc = tessera(NULL, "predict --model ft8 --text \"the cat runs\" --threads 1");
    CHECK_RAN(rc, 0);
    /* the finished directories hold no run lock; the copy has none either */
    CHECK(!present("pre/.tessera.lock") && !present("ft/.tessera.lock") && !present("ft8/.tessera.lock"),
          "a finished model directory holds .tessera.lock");

    if (acc_q < acc_f) {
        rc = tessera(NULL, "quantize --model ft --dynamic --out ft9 --eval data.tsv --max-drop 0 --threads 1");
        CHECK_FAILS(rc, "--max-drop");
        CHECK(!exists("ft9/config.json"), "a refused copy was written");
    }
}

/* Each command that runs a model says how: run's summary line, eval's and predict's note name the
 * int8 mode of a quantized copy (dynamic or calibrated), never f32 for it; a float model stays f32. */
static void test_precision_said(void) {
    int64_t ids[2 * 8], shape[2] = {2, 8};
    for (int i = 0; i < 2 * 8; i++) ids[i] = (i * 37) % 80 + 5;
    ts_tensor *t = ts_tensor_from(TS_I64, 2, shape, ids);
    char path[256];
    snprintf(path, sizeof path, "%s/in.safetensors", dir);
    CHECK_OK(ts_safetensors_save(path, 1, (const char *[]){"input_ids"}, (const ts_tensor *const *)&t, NULL));
    ts_tensor_free(t);
    static const struct {
        const char *model, *flags, *said;
    } runs[] = {{"ft", "", ", f32 on cpu"}, {"ft8", "", ", int8 dynamic on cpu"},
                {"fts-entropy", "", ", int8 calibrated on cpu"}, {"ft", "--int8", ", int8 dynamic on cpu"}};
    for (int k = 0; k < 4; k++) {
        int rc = tessera(NULL, "run --model %s %s --inputs in.safetensors --outputs o.safetensors --threads 1",
                         runs[k].model, runs[k].flags);
        CHECK_RAN(rc, 0);
        CHECK(strstr(out_text, runs[k].said), "run --model %s %s: want \"%s\": %s", runs[k].model, runs[k].flags,
              runs[k].said, out_text);
    }
    static const struct {
        const char *model, *eval_said, *predict_said;
    } evals[] = {{"ft8", "data.tsv (int8 dynamic model): accuracy", "ft8 runs int8 dynamic"},
                 {"fts-entropy", "data.tsv (int8 calibrated model): accuracy", "fts-entropy runs int8 calibrated"},
                 {"ft ft8", "data.tsv (int8 and f32 members): accuracy", "the ensemble runs int8 and f32 members"}};
    for (int k = 0; k < 3; k++) {
        int rc = tessera(NULL, "eval --model %s --data data.tsv --threads 1", evals[k].model);
        CHECK_RAN(rc, 0);
        CHECK(strstr(out_text, evals[k].eval_said), "eval --model %s: %s", evals[k].model, out_text);
        rc = tessera(NULL, "predict --model %s --text \"the cat runs\" --threads 1", evals[k].model);
        CHECK_RAN(rc, 0);
        CHECK(strstr(err_text, evals[k].predict_said) && !strstr(out_text, "int8"), "predict --model %s: %s%s",
              evals[k].model, err_text, out_text);
    }
    int rc = tessera(NULL, "eval --model ft --data data.tsv --threads 1");
    CHECK_RAN(rc, 0);
    CHECK(strstr(out_text, "data.tsv: accuracy") && !strstr(out_text, "int8"), "eval of the float model: %s", out_text);
    rc = tessera(NULL, "predict --model ft --text \"the cat runs\" --threads 1");
    CHECK_RAN(rc, 0);
    CHECK(!strstr(err_text, "int8"), "predict of the float model: %s", err_text);
}

static void test_bad_input(void) {
    int rc = tessera(NULL, "quantize");
    const char *want = "tessera quantize: --model DIR is required\n";
    CHECK(rc == 2 && !strncmp(err_text, want, strlen(want)), "no flags: exit %d: %s", rc, err_text);
    rc = tessera(NULL, "quantize --model ft --out x");
    CHECK_FAILS(rc, "--dynamic");
    rc = tessera(NULL, "quantize --model ft --dynamic --out x --max-drop 1");
    CHECK_FAILS(rc, "--max-drop needs --eval");
    rc = tessera(NULL, "quantize --model ft8 --dynamic --out x");
    CHECK_FAILS(rc, "quantized already");
    rc = tessera(NULL, "quantize --model ft --dynamic --out ft");
    CHECK_FAILS(rc, "--out is --model");
    rc = tessera(NULL, "quantize --model no_such_dir --dynamic --out x");
    CHECK_FAILS(rc, "no_such_dir");
}

static void test_calibrated(void) {
    static const char *const methods[] = {"minmax", "percentile", "entropy"};
    for (int m = 0; m < 3; m++) {
        char cmd[512], dir[64];
        snprintf(dir, sizeof dir, "fts-%s", methods[m]);
        snprintf(cmd, sizeof cmd, "quantize --model ft --calib data.tsv --samples 12 --method %s --out %s --eval data.tsv "
                 "--batch 4 --threads 1", methods[m], dir);
        int rc = tessera(NULL, cmd);
        CHECK_RAN(rc, 0);
        printf("  %s", out_text);
        double acc_f = printed_number("accuracy float "), acc_q = printed_number("int8 ");
        CHECK(strstr(out_text, "calibrated on 12 rows") != NULL, "%s: %s", methods[m], out_text);
        CHECK(acc_f >= 0 && acc_q >= 0 && fabs(acc_f - acc_q) <= 50, "float %.2f, int8 %.2f", acc_f, acc_q);
        static char cfg[1 << 15], want[128];
        snprintf(cmd, sizeof cmd, "%s/config.json", dir);
        read_into(cmd, cfg, sizeof cfg);
        snprintf(want, sizeof want, "\"mode\": \"static\", \"method\": \"%s\", \"samples\": 12", methods[m]);
        CHECK(strstr(cfg, want) && strstr(cfg, "\"bert.encoder.layer.0.attention.self.query.weight\": ") &&
              strstr(cfg, "\"classifier.weight\": "), "%s: %s", cmd, cfg);
        snprintf(cmd, sizeof cmd, "eval --model %s --data data.tsv --batch 4 --threads 1", dir);
        rc = tessera(NULL, cmd);
        CHECK_RAN(rc, 0);
        double acc_e = printed_number("accuracy ");
        CHECK(fabs(acc_e - acc_q) < 1e-6, "eval of %s: %.2f%%, quantize's int8 figure %.2f%%", dir, acc_e, acc_q);
    }
    int rc = tessera(NULL, "predict --model fts-entropy --text \"the cat runs\" --threads 1");
    CHECK_RAN(rc, 0);
    /* tessera export writes a calibrated copy in QDQ form (test_qdq.c checks what it computes) */
    rc = tessera(NULL, "export --out q.onnx --model fts-percentile --batch 2 --max-len 16 --threads 1");
    CHECK_RAN(rc, 0);
    CHECK(strstr(out_text, "int8 matmuls in QDQ form"), "export: %s", out_text);
    char path[256], cmd[600];
    snprintf(path, sizeof path, "%s/q.onnx", dir);
    snprintf(cmd, sizeof cmd, "grep -q DequantizeLinear '%s'", path);
    CHECK(system(cmd) == 0, "%s holds no DequantizeLinear", path);
}

static void test_calib_bad_input(void) {
    write_str("empty.tsv", "text\tlabel\n");
    write_str("qa.jsonl", "{\"question\": \"where?\", \"context\": \"the cat lives in paris\"}\n");
    int rc = tessera(NULL, "quantize --model ft --calib empty.tsv --out x");
    CHECK_FAILS(rc, "no rows to calibrate");
    rc = tessera(NULL, "quantize --model ft --calib qa.jsonl --out x");
    CHECK_FAILS(rc, "qa.jsonl");
    CHECK(strstr(err_text, "--calib") && strstr(err_text, "text"), "stderr: %s", err_text);
    rc = tessera(NULL, "quantize --model ft --calib data.tsv --samples 0 --out x");
    CHECK_FAILS(rc, "--samples 0");
    rc = tessera(NULL, "quantize --model ft --calib data.tsv --method kl --out x");
    CHECK_FAILS(rc, "--method kl");
    rc = tessera(NULL, "quantize --model ft --calib data.tsv --dynamic --out x");
    CHECK_FAILS(rc, "give one");
    rc = tessera(NULL, "quantize --model ft --dynamic --method minmax --out x");
    CHECK_FAILS(rc, "--method go with --calib");
    CHECK(!exists("x/config.json"), "a refused copy was written");
}

/* A QA model (fine-tuned briefly: the figures need not be good, only the same through eval). */
static void test_calibrated_qa(void) {
    write_str("qa.json", "{\"version\": \"1.1\", \"data\": [{\"title\": \"t\", \"paragraphs\": [{\"context\": \"the cat "
                         "runs in paris and the dog sleeps in rome.\", \"qas\": [{\"id\": \"1\", \"question\": \"where "
                         "does the cat run?\", \"answers\": [{\"text\": \"paris\", \"answer_start\": 16}]}, {\"id\": "
                         "\"2\", \"question\": \"where does the dog sleep?\", \"answers\": [{\"text\": \"rome\", "
                         "\"answer_start\": 44}]}]}]}]}\n");
    int rc = tessera(NULL, "finetune --task qa --model pre --train qa.json --out ftqa --max-len 32 --batch 2 --epochs 3 "
                           "--threads 1");
    CHECK_RAN(rc, 0);
    rc = tessera(NULL, "quantize --model ftqa --calib qa.json --out ftqa8 --eval qa.json --batch 2 --threads 1");
    CHECK_RAN(rc, 0);
    printf("  %s", out_text);
    CHECK(strstr(out_text, "calibrated on 2 windows") && strstr(out_text, "F1 float "), "%s", out_text);
    const char *at = strstr(out_text, "F1 float ");
    at = at ? strstr(at, "int8 ") : NULL;
    double f1_q = at ? atof(at + 5) : -1;
    rc = tessera(NULL, "eval --model ftqa8 --data qa.json --batch 2 --threads 1");
    CHECK_RAN(rc, 0);
    double f1_e = printed_number("F1 ");
    CHECK(f1_q >= 0 && fabs(f1_e - f1_q) < 1e-6, "eval of the int8 QA copy: F1 %.2f, quantize's int8 F1 %.2f", f1_e,
          f1_q);
    rc = tessera(NULL, "quantize --model ftqa --calib data.tsv --out x");
    CHECK_FAILS(rc, "data.tsv");
    CHECK(!exists("x/config.json"), "a refused copy was written");
}

int main(int argc, char **argv) {
    tu_args(argc, argv);
    int rc = cli_setup("ts_cli_quant");
    if (rc) return rc;
    RUN(test_quantize);
    RUN(test_bad_input);
    RUN(test_calibrated);
    RUN(test_calib_bad_input);
    RUN(test_precision_said);
    RUN(test_calibrated_qa);
    cli_cleanup("test_cli_quant");
    return tu_finish("test_cli_quant");
}
