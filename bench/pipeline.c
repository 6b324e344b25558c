/*
 * bench/pipeline.c — the pipeline's idle time (bubble) beside 1F1B's theory.
 *
 * A BERT for pre-training (8 layers x 256 hidden, seq 64, batch 4 a micro-batch) runs as a
 * pipeline of S = 2 and 4 stages (cpu:0 .. cpu:S-1, the layers split evenly, the embeddings with
 * the first and the heads with the last) with M = 8 and 16 micro-batches a step. After a warm-up
 * step, 3 steps are timed; the bubble is 1 - (the stages' busy time) / (devices x wall time),
 * printed beside the theoretical (S-1)/(M+S-1) of 1F1B with equal stages, and the step time beside
 * the same graph on one device. Each device gets cores / S threads (at least one): with more
 * devices than cores they share cores, so a device waits for a core as well as for its inputs,
 * and the figures say how this machine runs it, not only the schedule.
 *
 * Usage: pipeline [steps, default 3].
 */
#include "tessera_apps.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

enum { B = 4, T = 64, LAYERS = 8, HIDDEN = 256 };

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static ts_program *build(int S, int M) {
    ts_bert_config c;
    ts_bert_config_default(&c);
    c.vocab_size = 2000, c.hidden_size = HIDDEN, c.num_hidden_layers = LAYERS, c.num_attention_heads = 4;
    c.intermediate_size = 4 * HIDDEN, c.max_position_embeddings = T, c.max_predictions_per_seq = 10;
    int ls[LAYERS];
    for (int l = 0; l < LAYERS; l++) ls[l] = l * S / LAYERS;
    c.layer_stages = ls, c.embedding_stage = 0, c.head_stage = S - 1;
    const char *devs[8];
    char names[8][16];
    for (int s = 0; s < S; s++) snprintf(names[s], sizeof names[s], "cpu:%d", s), devs[s] = names[s];
    ts_bert_train_opts o = {.struct_size = sizeof o, .cfg = &c, .head = TS_BERT_PRETRAINING, .batch = B, .seq = T,
                            .seed = 1, .optimizer = TS_OPTIM_ADAMW, .weight_decay = 0.01f, .accumulation = M,
                            .steps_per_call = 1, .stage_devices = S > 1 ? devs : NULL, .nstage_devices = S > 1 ? S : 0,
                            .train_fetches = (const char *[]){"loss"}, .ntrain_fetches = 1};
    ts_program *p = NULL;
    if (ts_bert_train_programs(&o, &p, NULL) != TS_OK) {
        fprintf(stderr, "bench_pipeline: %s\n", ts_last_error());
        exit(1);
    }
    ts_batch_buf bb;
    if (!ts_batch_buf_init_slices(&bb, B, T, 2, M, 10)) exit(1);
    for (int64_t i = 0; i < (int64_t)M * B * T; i++) {
        ((int32_t *)ts_tensor_data(bb.ids))[i] = (int32_t)(5 + i * 7 % 1990);
        ((int32_t *)ts_tensor_data(bb.mask))[i] = 1;
        ((int32_t *)ts_tensor_data(bb.labels))[i] = i % 7 ? -100 : (int32_t)(i % 2000);
    }
    for (int k = 0; k < M; k++) ts_batch_buf_compact(&bb, k);
    ts_tensor *lr = ts_tensor_new(TS_F32, 1, (int64_t[]){M});
    for (int k = 0; k < M; k++) ((float *)ts_tensor_data(lr))[k] = 1e-4f;
    if (ts_batch_buf_feed(&bb, p, 1) || ts_program_feed(p, "lr", lr)) {
        fprintf(stderr, "bench_pipeline: %s\n", ts_last_error());
        exit(1);
    }
    ts_batch_buf_free(&bb);
    ts_tensor_free(lr);
    return p;
}

static double run_steps(ts_program *p, int steps) {
    if (ts_program_run(p) != TS_OK) { /* warm-up */
        fprintf(stderr, "bench_pipeline: %s\n", ts_last_error());
        exit(1);
    }
    ts_program_pipeline_reset_stats(p);
    double t0 = now_s();
    for (int i = 0; i < steps; i++)
        if (ts_program_run(p) != TS_OK) {
            fprintf(stderr, "bench_pipeline: %s\n", ts_last_error());
            exit(1);
        }
    return (now_s() - t0) / steps;
}

int main(int argc, char **argv) {
    int steps = argc > 1 ? atoi(argv[1]) : 3;
    if (steps < 1) steps = 3;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    printf("pipeline: BERT %d layers x %d hidden, batch %d x %d a micro-batch, pre-training, %ld cores; %d timed "
           "steps after one warm-up\n\n", LAYERS, HIDDEN, B, T, cores, steps);
    printf("%3s %3s | %8s %8s | %12s %12s | %s\n", "S", "M", "bubble", "theory", "step (s)", "1 device (s)",
           "threads per device");
    printf("-----------------------------------------------------------------------------\n");
    const int Ss[2] = {2, 4}, Ms[2] = {8, 16};
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++) {
            int S = Ss[i], M = Ms[j];
            ts_program *one = build(1, M);
            double t1 = run_steps(one, steps);
            ts_program_free(one);
            ts_program *p = build(S, M);
            double ts = run_steps(p, steps), wall, bubble;
            ts_program_pipeline_stats(p, &wall, &bubble);
            ts_stage_info si = {.struct_size = sizeof si};
            ts_program_stage_info(p, 0, &si);
            printf("%3d %3d | %7.1f%% %7.1f%% | %12.3f %12.3f | %d%s\n", S, M, 100 * bubble,
                   100.0 * (S - 1) / (M + S - 1), ts, t1, si.threads, S > cores ? " (more devices than cores)" : "");
            ts_program_free(p);
        }
    return 0;
}
