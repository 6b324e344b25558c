/*
 * mnist_cnn.c — a LeNet-style convolutional network trained on the MNIST digits with tessera: the
 * model-zoo entry for the vision ops (ts_conv2d, ts_max_pool2d).
 *
 *   ./build/examples/mnist_cnn [DATA_DIR] [--epochs N] [--target PERCENT] [--device D] [--steps N] [--int8]
 *       DATA_DIR  default data/mnist (`bash scripts/install-deps.sh` fetches it)
 *       --epochs  passes over the 8,000 training digits (default 12; the ctest mnist_cnn_example runs
 *                 4 at --target 97)
 *       --target  the test accuracy, in percent, the run must reach to exit 0 (default 98.5)
 *       --device  where both programs run (default cpu; opencl:0 with the OpenCL plugin on
 *                 TESSERA_PLUGIN_PATH): the same model, no other change
 *       --steps   batches per epoch, at most (default all; for a short comparison of devices)
 *       --int8    also score the trained model with an int8 inference program (ts_compile_opts.quantize:
 *                 both convolutions and both linear layers on int8 weights per output channel and
 *                 int8 activations per batch) and print float and int8 accuracy side by side; exit
 *                 0 only if int8 is also within 0.3 points of float (TS_MNIST_INT8=1 does the same)
 *
 * The model (NCHW; B images a batch), LeNet-5's shape with more channels:
 *   x [B, 1, 28, 28]
 *   conv1  5x5, 1 -> 16 channels, padding 2   -> relu -> max pool 2x2   [B, 16, 14, 14]
 *   conv2  5x5, 16 -> 32 channels, padding 2  -> relu -> max pool 2x2   [B, 32, 7, 7]
 *   flatten [B, 1568] -> fc1 1568 -> 128 -> relu -> dropout 0.3 -> fc2 128 -> 10 = logits
 * Parameters start as PyTorch initialises Conv2d and Linear (uniform +-1/sqrt(fan_in)).
 * Training: the recipe of examples/mnist.c (the MLP) — AdamW with a cosine-decayed learning rate,
 * cross-entropy, the same 8,000 / 2,000 split — with training images warped at random (turned,
 * scaled and shifted a little, mnist_data.h); after each epoch the weights are copied into an
 * inference program (no dropout) to score the held-out digits. Exit status 0 only at or above the
 * target accuracy.
 *
 * Chosen by trying, on 2 shared cores: 8 and 16 channels with shifts alone ended at 98.15%
 * (12 epochs), 16 and 32 with shifts alone at 98.60% (15 epochs); with the warps, 12 epochs reach
 * 98.90% (106 s of CPU time; 280 s wall on 2 cores shared with other work) and 4 epochs 97.70%
 * (34 s of CPU time).
 *
 * Only the public API (tessera.h) is used.
 */
#include "tessera.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mnist_data.h"

/* ---------------------------------------------------------------- settings */

enum { BATCH = 100 };
static const int C1 = 16, C2 = 32, HIDDEN = 128; /* channels of the convolutions, width of fc1 */
static const float DROPOUT = 0.3f;
/* training images are warped at random: turned up to +-12 degrees, scaled by 1 +- 0.1, shifted up to
 * +-2 pixels each way */
static const float TURN_DEG = 12.f, SCALE = 0.1f, SHIFT = 2.f;
static const float LR = 2e-3f, WEIGHT_DECAY = 0.01f;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void check(ts_status s, const char *what) {
    if (s != TS_OK) {
        fprintf(stderr, "mnist_cnn: %s failed: %s (%s)\n", what, ts_last_error(), ts_status_name(s));
        exit(1);
    }
}

/* ---------------------------------------------------------------- the model */

/* A parameter drawn uniformly from +-1/sqrt(fan_in) (PyTorch's default for Conv2d and Linear). */
static ts_value param(ts_graph *g, const char *layer, const char *what, int ndim, const int64_t *shape,
                      int64_t fan_in) {
    char name[64];
    snprintf(name, sizeof name, "%s.%s", layer, what);
    float bound = 1.0f / sqrtf((float)fan_in);
    return ts_param(g, name, TS_F32, ndim, shape, ts_init_uniform(-bound, bound));
}

/* relu(conv k x k, same padding) then 2x2 max pooling: [B, in, H, W] -> [B, out, H/2, W/2]. */
static ts_value conv_block(ts_graph *g, const char *layer, ts_value x, int64_t in, int64_t out, int k) {
    int64_t fan_in = in * k * k;
    ts_value w = param(g, layer, "weight", 4, (int64_t[]){out, in, k, k}, fan_in);
    ts_value b = param(g, layer, "bias", 1, (int64_t[]){out}, fan_in);
    ts_conv_opts co = {.pad = {k / 2, k / 2, k / 2, k / 2}};
    ts_value y = ts_relu(g, ts_conv2d(g, x, w, b, &co));
    ts_pool_opts po = {.kernel = {2, 2}, .stride = {2, 2}};
    return ts_max_pool2d(g, y, &po);
}

/* y = x W^T + b, W [out, in] (PyTorch's Linear). */
static ts_value linear(ts_graph *g, const char *layer, ts_value x, int64_t in, int64_t out) {
    ts_value w = param(g, layer, "weight", 2, (int64_t[]){out, in}, in);
    ts_value b = param(g, layer, "bias", 1, (int64_t[]){out}, in);
    return ts_add(g, ts_matmul(g, x, w, 0, 1), b);
}

/* ---------------------------------------------------------------- evaluation */

/* Accuracy of the inference program on the 2,000 held-out digits. */
static double evaluate(ts_program *infer, ts_tensor *xb, const mnist_set *d) {
    int correct = 0;
    float *x = ts_tensor_data(xb);
    for (int b = 0; b < MNIST_TEST / BATCH; b++) {
        const int *idx = d->order + d->ntrain + b * BATCH;
        for (int i = 0; i < BATCH; i++) mnist_pixels(d, idx[i], NULL, x + (size_t)i * MNIST_PIXELS);
        check(ts_program_feed(infer, "x", xb), "feed x");
        check(ts_program_run(infer), "inference run");
        ts_tensor *out;
        check(ts_program_fetch(infer, "logits", &out), "fetch logits");
        const float *l = ts_tensor_data(out);
        for (int i = 0; i < BATCH; i++) {
            int best = 0;
            for (int c = 1; c < MNIST_CLASSES; c++)
                if (l[i * MNIST_CLASSES + c] > l[i * MNIST_CLASSES + best]) best = c;
            correct += best == d->labels[idx[i]];
        }
        ts_tensor_free(out);
    }
    return (double)correct / MNIST_TEST;
}

/* ---------------------------------------------------------------- main */

static void usage_exit(const char *why) {
    fprintf(stderr, "mnist_cnn: %s\nusage: mnist_cnn [DATA_DIR] [--epochs N] [--target PERCENT] [--device D] [--steps N] "
            "[--int8]\n", why);
    exit(2);
}

int main(int argc, char **argv) {
    const char *dir = "data/mnist";
    int epochs = 12, max_steps = 0;
    double target = 98.5;
    const char *device = "cpu";
    const char *env_int8 = getenv("TS_MNIST_INT8");
    int int8 = env_int8 && !strcmp(env_int8, "1");
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--epochs") && i + 1 < argc) {
            epochs = atoi(argv[++i]);
            if (epochs <= 0) usage_exit("--epochs wants a positive number");
        } else if (!strcmp(argv[i], "--target") && i + 1 < argc) {
            target = atof(argv[++i]);
            if (!(target >= 0 && target <= 100)) usage_exit("--target wants a percentage");
        } else if (!strcmp(argv[i], "--device") && i + 1 < argc) {
            device = argv[++i];
        } else if (!strcmp(argv[i], "--steps") && i + 1 < argc) {
            if ((max_steps = atoi(argv[++i])) <= 0) usage_exit("--steps wants a positive number");
        } else if (!strcmp(argv[i], "--int8")) {
            int8 = 1;
        } else if (argv[i][0] == '-') {
            usage_exit("unknown flag");
        } else {
            dir = argv[i];
        }
    }
    double t_start = now_s();
    uint64_t seed = 20260101;
    mnist_set d = mnist_load(dir, seed);
    int steps_per_epoch = d.ntrain / BATCH;
    if (max_steps && max_steps < steps_per_epoch) steps_per_epoch = max_steps;
    int total_steps = epochs * steps_per_epoch;
    printf("mnist_cnn: %d digits from %s: %d for training, %d for testing\n", d.n, dir,
           steps_per_epoch * BATCH, MNIST_TEST);

    /* One graph: model, loss, backward pass, AdamW (lr fed each step). */
    ts_graph *g = ts_graph_new();
    ts_graph_set_seed(g, 1);
    ts_value x = ts_input(g, "x", TS_F32, 4, (int64_t[]){BATCH, 1, MNIST_SIDE, MNIST_SIDE});
    ts_value y = ts_input(g, "y", TS_I32, 1, (int64_t[]){BATCH});
    ts_value lr = ts_input(g, "lr", TS_F32, 0, NULL);
    ts_value h = conv_block(g, "conv1", x, 1, C1, 5);  /* [B, 16, 14, 14] */
    h = conv_block(g, "conv2", h, C1, C2, 5);           /* [B, 32, 7, 7] */
    int64_t flat = (int64_t)C2 * 7 * 7;
    h = ts_reshape(g, h, 2, (int64_t[]){BATCH, flat});
    h = ts_dropout(g, ts_relu(g, linear(g, "fc1", h, flat, HIDDEN)), DROPOUT);
    ts_value logits = ts_name(g, linear(g, "fc2", h, HIDDEN, MNIST_CLASSES), "logits");
    ts_value loss = ts_name(g, ts_cross_entropy(g, logits, y, -1), "loss");
    check(ts_graph_status(g), "building the graph");
    check(ts_backward(g, loss), "ts_backward");
    check(ts_adamw(g, lr, 0.9f, 0.999f, 1e-8f, WEIGHT_DECAY), "ts_adamw");

    ts_program *train = ts_compile(g, &(ts_compile_opts){.device = device, .nfetch = 1,
                                                         .fetches = (const char *[]){"loss"}});
    if (!train) { fprintf(stderr, "mnist_cnn: compiling the training program: %s\n", ts_last_error()); return 1; }
    ts_program *infer = ts_compile(g, &(ts_compile_opts){.device = device, .nfetch = 1,
                                                         .fetches = (const char *[]){"logits"}, .inference = 1});
    if (!infer) { fprintf(stderr, "mnist_cnn: compiling the inference program: %s\n", ts_last_error()); return 1; }
    ts_program *infer8 = NULL; /* --int8: the same inference program with dynamic int8 quantization */
    if (int8) {
        infer8 = ts_compile(g, &(ts_compile_opts){.struct_size = sizeof(ts_compile_opts), .device = device,
                                                  .nfetch = 1, .fetches = (const char *[]){"logits"}, .inference = 1,
                                                  .quantize = TS_QUANT_DYNAMIC});
        if (!infer8) { fprintf(stderr, "mnist_cnn: compiling the int8 program: %s\n", ts_last_error()); return 1; }
    }
    ts_graph_free(g);

    ts_memory mem = {.struct_size = sizeof mem};
    check(ts_program_memory(train, &mem), "ts_program_memory");
    printf("mnist_cnn: conv5x5(%d)-pool-conv5x5(%d)-pool-fc(%d)-fc(10), dropout %.1f, warps +-%g deg x(1 +- %g) "
           "+-%g px, AdamW lr %g cosine, %d epochs of %d batches of %d\n", C1, C2, HIDDEN, DROPOUT, TURN_DEG, SCALE,
           SHIFT, LR, epochs, steps_per_epoch, BATCH);
    printf("mnist_cnn: %.2f MB of parameters, %.1f MB activation arena, %d nodes\n", mem.params / 1e6,
           mem.activations / 1e6, mem.nodes);

    ts_tensor *xb = ts_tensor_new(TS_F32, 4, (int64_t[]){BATCH, 1, MNIST_SIDE, MNIST_SIDE});
    ts_tensor *yb = ts_tensor_new(TS_I32, 1, (int64_t[]){BATCH});
    ts_tensor *lrb = ts_tensor_new(TS_F32, 0, NULL);
    if (!xb || !yb || !lrb) check(TS_ERR_NOMEM, "allocating batches");
    double acc = 0;
    for (int epoch = 1, step = 0; epoch <= epochs; epoch++) {
        double t0 = now_s(), loss_sum = 0;
        mnist_shuffle(d.order, d.ntrain, &seed); /* the training part only */
        for (int b = 0; b < steps_per_epoch; b++, step++) {
            float *xd = ts_tensor_data(xb);
            int32_t *yd = ts_tensor_data(yb);
            for (int i = 0; i < BATCH; i++) {
                int k = d.order[b * BATCH + i];
                mnist_warp w = mnist_random_warp(&seed, TURN_DEG, SCALE, SHIFT);
                mnist_pixels(&d, k, &w, xd + (size_t)i * MNIST_PIXELS);
                yd[i] = d.labels[k];
            }
            *(float *)ts_tensor_data(lrb) = LR * 0.5f * (1.0f + cosf(3.14159265f * (float)step / (float)total_steps));
            check(ts_program_feed(train, "x", xb), "feed x");
            check(ts_program_feed(train, "y", yb), "feed y");
            check(ts_program_feed(train, "lr", lrb), "feed lr");
            check(ts_program_run(train), "training run");
            ts_tensor *l;
            check(ts_program_fetch(train, "loss", &l), "fetch loss");
            loss_sum += *(float *)ts_tensor_data(l);
            ts_tensor_free(l);
        }
        double t_train = now_s() - t0;
        if (ts_program_copy_params(infer, train) < 0) check(TS_ERR_ARG, "ts_program_copy_params");
        acc = evaluate(infer, xb, &d);
        printf("epoch %2d  loss %.4f  test accuracy %.2f%%  (%.1f s train, %.1f s total)\n", epoch,
               loss_sum / steps_per_epoch, 100 * acc, t_train, now_s() - t_start);
        fflush(stdout);
    }
    int ok = 100 * acc >= target;
    printf("final test accuracy: %.2f%% on %d held-out digits (target %.1f%%): %s, %.1f s\n", 100 * acc, MNIST_TEST,
           target, ok ? "PASS" : "FAIL", now_s() - t_start);
    if (infer8) {
        if (ts_program_copy_params(infer8, train) < 0) check(TS_ERR_ARG, "ts_program_copy_params");
        ts_memory m8 = {.struct_size = sizeof m8};
        check(ts_program_memory(infer8, &m8), "ts_program_memory");
        double acc8 = evaluate(infer8, xb, &d), drop = 100 * (acc - acc8);
        int ok8 = drop <= 0.3;
        printf("int8 (dynamic, %d convolutions and matmuls quantized): test accuracy float %.2f%%, int8 %.2f%%, "
               "drop %.2f points (at most 0.3): %s\n", m8.quantized, 100 * acc, 100 * acc8, drop, ok8 ? "PASS" : "FAIL");
        ok = ok && ok8;
        ts_program_free(infer8);
    }

    ts_tensor_free(xb);
    ts_tensor_free(yb);
    ts_tensor_free(lrb);
    ts_program_free(train);
    ts_program_free(infer);
    mnist_free(&d);
    return ok ? 0 : 1;
}
