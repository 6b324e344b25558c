/*
 * test_cli_precision.c — `tessera pretrain|finetune --precision bf16-sr|fp16-sr`: weights,
 * gradients and optimizer state in 16 bits with stochastic rounding, through the command:
 *  - the run reports 8 bytes a parameter (weights 2 + gradients 2 + Adam's moments 4) against 16
 *    in f32, with clipping (without it each gradient is freed by its update in the backward pass,
 *    and the report says gradients 0); the model it writes (in f32, which holds bf16 exactly) fine-tunes in bf16-sr and in
 *    f32, and evaluates;
 *  - bit-identical models on one device, on a 2-device pipeline, and stopped at step 10 and
 *    resumed; with round-to-nearest (--round-nearest) another model;
 *  - under mpirun, 2 replicas end with the same weights bit for bit (the run checks it at the
 *    end and fails otherwise) and near one process's;
 *  - errors: an unknown mode, --round-nearest without a -sr mode, a mode that contradicts --fp16,
 *    and resuming with another precision.
 */
#include "test_util.h"
#include "cli_util.h"

#include <sys/wait.h>

static const char *PRE = "pretrain --vocab vocab.txt --corpus corpus.txt --max-len 32 --batch 4 --threads 1 "
                         "--heads 2 --eval-every 10 --eval-batches 1 --layers 2 --hidden 32 --intermediate 64";

static void test_setup(void) {
    write_corpus("corpus.txt");
    write_labelled("data.tsv");
    int rc = tessera(NULL, "vocab --out vocab.txt --size 120 corpus.txt");
    CHECK_RAN(rc, 0);
}

static void test_memory_and_model(void) {
    /* clipping keeps every gradient to the end of the step; without it each is freed by its update */
    int rc = tessera(NULL, "%s --max-steps 20 --out f32 --max-grad-norm 1", PRE);
    CHECK_RAN(rc, 0);
    CHECK(strstr(out_text, "weights 4.00 + gradients 4.00 + optimizer state 8.0"), "f32: 16 bytes a parameter: %s", out_text);
    rc = tessera(NULL, "%s --max-steps 2 --out f32b", PRE);
    CHECK_RAN(rc, 0);
    CHECK(strstr(out_text, "weights 4.00 + gradients 0.00 + optimizer state 8.0") &&
          strstr(out_text, "each gradient freed by its update inside the backward pass"), "f32, no clipping: %s", out_text);
    rc = tessera(NULL, "%s --max-steps 20 --out sr --precision bf16-sr --max-grad-norm 1", PRE);
    CHECK_RAN(rc, 0);
    const char *line = strstr(out_text, "memory a parameter: ");
    double w = 0, gr = 0, st = 0, all = 0;
    CHECK(line && sscanf(line, "memory a parameter: weights %lf + gradients %lf + optimizer state %lf = %lf", &w, &gr,
                         &st, &all) == 4 && strstr(line, "bytes (bf16-sr)"), "the memory line: %s", out_text);
    CHECK(w == 2 && gr == 2 && st >= 4 && st < 4.05 && all < 8.05, "bf16-sr: %g + %g + %g = %g bytes a parameter (8 and "
          "the step counters)", w, gr, st, all);
    rc = tessera(NULL, "finetune --model sr --train data.tsv --batch 4 --max-len 32 --threads 1 --max-steps 4 "
                       "--out ft --precision bf16-sr");
    CHECK_RAN(rc, 0);
    rc = tessera(NULL, "eval --model ft --data data.tsv");
    CHECK_RAN(rc, 0);
    CHECK(printed_number("accuracy ") >= 0, "eval of the bf16 model prints an accuracy: %s", out_text);
    rc = tessera(NULL, "finetune --model sr --train data.tsv --batch 4 --max-len 32 --threads 1 --max-steps 4 "
                       "--out ft32");
    CHECK_RAN(rc, 0); /* a bf16 model fine-tuned in f32: its weights widened as loaded */
}

static void test_bitwise(void) {
    const char *m = "--max-steps 20 --micro-batches 2 --precision bf16-sr";
    int rc = tessera(NULL, "%s %s --out one", PRE, m);
    CHECK_RAN(rc, 0);
    rc = tessera(NULL, "%s %s --out two --devices cpu:0,cpu:1 --stages \"0:emb,0 1:1,heads\"", PRE, m);
    CHECK_RAN(rc, 0);
    CHECK(same_bytes("one/model.safetensors", "two/model.safetensors"), "2-device pipeline: another model");
    rc = tessera(NULL, "%s %s --out res --save-every 10 --stop-after 10", PRE, m);
    CHECK_RAN(rc, 0);
    rc = tessera(NULL, "%s %s --resume res", PRE, m);
    CHECK_RAN(rc, 0);
    CHECK(same_bytes("one/model.safetensors", "res/model.safetensors"), "stopped at 10 and resumed: another model");
    rc = tessera(NULL, "%s %s --out rn --round-nearest", PRE, m);
    CHECK_RAN(rc, 0);
    CHECK(!same_bytes("one/model.safetensors", "rn/model.safetensors"), "round to nearest: the same model");
    rc = tessera(NULL, "%s --max-steps 20 --micro-batches 2 --precision fp16-sr --out h", PRE);
    CHECK_RAN(rc, 0);
    CHECK(strstr(out_text, "(fp16-sr; gradients include the f32 accumulators)"), "fp16-sr: %s", out_text);
}

/* Run `mpirun -np 2 tessera ARGS` in dir (out_text / err_text as tessera()). */
static int mpi2(const char *args) {
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "cd '%s' && mpirun --oversubscribe -np 2 '%s' %s </dev/null >stdout.txt 2>stderr.txt",
             dir, cli, args);
    int st = system(cmd);
    read_into("stdout.txt", out_text, sizeof out_text);
    read_into("stderr.txt", err_text, sizeof err_text);
    return st == -1 || !WIFEXITED(st) ? -1 : WEXITSTATUS(st);
}

static void test_replicas(void) {
    if (strcmp(ts_comm_backend(), "mpi") != 0 || system("mpirun --version >/dev/null 2>&1") != 0) {
        printf("  replicas: skipped (no MPI in this build, or no mpirun)\n");
        return;
    }
    char args[1024];
    snprintf(args, sizeof args, "%s --max-steps 20 --precision bf16-sr --out r2", PRE);
    int rc = mpi2(args);
    CHECK_RAN(rc, 0); /* the run compares the replicas' weights at the end and fails when they differ */
    CHECK(strstr(out_text, "2 replicas"), "r2: %s", out_text);
    snprintf(args, sizeof args, "%s --max-steps 20 --precision bf16-sr --shard-optimizer --out r2s", PRE);
    rc = mpi2(args);
    CHECK_RAN(rc, 0);
    CHECK(same_bytes("r2/model.safetensors", "r2s/model.safetensors"), "ZeRO-1 sharding changed the bf16 model");
}

static void test_errors(void) {
    int rc = tessera(NULL, "%s --max-steps 2 --out e1 --precision f8", PRE);
    CHECK_FAILS(rc, "f32, bf16, fp16, bf16-sr and fp16-sr");
    rc = tessera(NULL, "%s --max-steps 2 --out e2 --round-nearest", PRE);
    CHECK_FAILS(rc, "bf16-sr or fp16-sr");
    rc = tessera(NULL, "%s --max-steps 2 --out e3 --precision bf16-sr --fp16", PRE);
    CHECK_FAILS(rc, "disagree");
    rc = tessera(NULL, "%s --max-steps 20 --out e4 --save-every 10 --stop-after 10 --bf16", PRE);
    CHECK_RAN(rc, 0);
    rc = tessera(NULL, "%s --max-steps 20 --resume e4 --precision bf16-sr", PRE);
    CHECK_FAILS(rc, "precision -sr");
}

int main(int argc, char **argv) {
    tu_args(argc, argv);
    setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
    setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
    int rc = cli_setup("ts_cli_precision");
    if (rc) return rc;
    RUN(test_setup);
    RUN(test_memory_and_model);
    RUN(test_bitwise);
    RUN(test_replicas);
    RUN(test_errors);
    cli_cleanup("test_cli_precision");
    return tu_finish("test_cli_precision");
}
