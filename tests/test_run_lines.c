/*
 * test_run_lines.c — the library's pieces of a training command (tessera_tasks.h) without the
 * CLI: metrics rows and the progress line through a ts_write_fn, a long phase's progress
 * (ts_progress_to, ts_phase_*: silent by default, a line a period in a log, one line redrawn and
 * cleared on a terminal; a training run's log line a period), the steps of an epoch
 * (ts_epoch_steps), a text encoded whole (ts_encode_all), and the struct_size check of
 * ts_pretrain_run, ts_train_epochs, the fine-tuning tasks, ts_classify_rows_load and
 * ts_bert_infer_build.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tessera_apps.h"
#include "test_util.h"

/* A ts_write_fn that appends to a string. */
typedef struct capture {
    char buf[4096];
    size_t n;
} capture;

static void cap_write(void *ctx, const char *text, size_t len) {
    capture *c = ctx;
    if (c->n + len >= sizeof c->buf) len = sizeof c->buf - 1 - c->n;
    memcpy(c->buf + c->n, text, len);
    c->n += len;
    c->buf[c->n] = 0;
}

static void test_metrics_and_progress(void) {
    capture c = {0};
    ts_metrics_write(cap_write, &c, "\"step\": %d, \"loss\": %.2f", 3, 1.5);
    CHECK(!strcmp(c.buf, "{\"step\": 3, \"loss\": 1.50}\n"), "metrics row: %s", c.buf);
    ts_metrics_write(NULL, NULL, "\"x\": 1"); /* no writer: nothing */
    c.n = 0, c.buf[0] = 0;
    ts_progress p;
    ts_progress_init(&p, 10, 0, 0, cap_write, &c);
    ts_progress_step(&p, 1, 2.0, 100);
    CHECK(c.n == 0, "a progress line drawn off a terminal: %s", c.buf);
    ts_progress_print(&p, "line %d\n", 1);
    CHECK(!strcmp(c.buf, "line 1\n"), "print: %s", c.buf);
    c.n = 0, c.buf[0] = 0;
    ts_progress_init(&p, 10, 0, 1, cap_write, &c);
    ts_progress_step(&p, 10, 2.0, 100);
    CHECK(!strncmp(c.buf, "\rstep 10/10  loss 2.0000  100.0 seq/s  ETA 0s", 45), "tty line: %s", c.buf);
    ts_progress_print(&p, "done\n");
    CHECK(strstr(c.buf, "\r") && strstr(c.buf, "\rdone\n"), "the line cleared before a print: %s", c.buf);
}

static void test_phase(void) {
    capture c = {0};
    ts_phase ph;
    ts_phase_begin(&ph, "scoring", "rows", 4); /* no writer yet: nothing anywhere */
    usleep(2000);
    ts_phase_step(&ph, 1);
    ts_phase_end(&ph);
    ts_progress_to("tessera x", cap_write, &c, 0, 1e-6); /* a log, a line every microsecond */
    ts_phase_begin(&ph, "scoring", "rows", 4);
    usleep(2000);
    ts_phase_step(&ph, 2);
    ts_phase_end(&ph);
    CHECK(!strncmp(c.buf, "tessera x: scoring 2/4 rows (50%), ", 35) && strstr(c.buf, " s left\n") &&
          !strchr(c.buf, '\r'), "a log's line: '%s'", c.buf);
    c.n = 0, c.buf[0] = 0;
    ts_progress p; /* a training run's log line, at the same period */
    ts_progress_init(&p, 10, 0, 0, cap_write, &c);
    usleep(2000);
    ts_progress_step(&p, 1, 2.0, 100);
    CHECK(!strncmp(c.buf, "step 1/10: loss 2.0000, 100.0 seq/s, ETA ", 41), "a training log's line: '%s'", c.buf);
    c.n = 0, c.buf[0] = 0;
    ts_progress_to("tessera x", cap_write, &c, 1, 0); /* a terminal: one line, redrawn, cleared */
    ts_phase_begin(&ph, "computing features", "clips", 8);
    usleep(110000);
    ts_phase_step(&ph, 2);
    ts_phase_step(&ph, 3); /* within a tenth of a second: not redrawn */
    CHECK(!strncmp(c.buf, "\rtessera x: computing features 2/8 clips (25%), ", 48) && !strchr(c.buf, '\n') &&
          !strstr(c.buf, "3/8"), "a terminal's line: '%s'", c.buf);
    size_t drawn = c.n;
    ts_phase_end(&ph);
    CHECK(c.n > drawn && c.buf[drawn] == '\r' && c.buf[c.n - 1] == '\r', "cleared at the end: '%s'", c.buf + drawn);
    ts_progress_to(NULL, NULL, NULL, 0, 0);
}

static void test_epoch_steps(void) {
    CHECK(ts_epoch_steps(10, 4, 1, 1, 1) == 3, "10 rows of 4: 3 steps, the last short");
    CHECK(ts_epoch_steps(10, 2, 2, 1, 1) == 3, "accumulation 2 x 2 rows");
    CHECK(ts_epoch_steps(10, 2, 1, 2, 1) == 4, "device iterations 2: whole calls only");
    CHECK(ts_epoch_steps(3, 2, 1, 2, 1) == 0, "3 rows do not fill one call of 2 x 2");
    CHECK(ts_epoch_steps(10, 2, 1, 1, 2) == 3, "two replicas take 4 rows a step");
}

static void test_struct_size(void) {
    ts_pretrain_run_opts po = {.struct_size = 5};
    CHECK_STATUS(ts_pretrain_run(&po), TS_ERR_ARG);
    CHECK_ERRMSG("ts_pretrain_run_opts.struct_size");
    ts_pretrain_run_opts empty = {.struct_size = sizeof empty};
    CHECK_STATUS(ts_pretrain_run(&empty), TS_ERR_ARG);
    ts_epochs_opts eo = {.struct_size = 5};
    ts_epoch_task t = {0};
    CHECK_STATUS(ts_train_epochs(&eo, &t, 0), TS_ERR_ARG);
    CHECK_ERRMSG("ts_epochs_opts.struct_size");
    ts_epochs_opts e2 = {.struct_size = sizeof e2, .batch = 1};
    CHECK_STATUS(ts_train_epochs(&e2, &t, 0), TS_ERR_ARG);
    ts_finetune_task_opts fo = {.struct_size = 5};
    CHECK(ts_classify_task_new(&fo, &t) == NULL && ts_squad_task_new(&fo, &t) == NULL, "a task of a bad size");
    CHECK_ERRMSG("ts_finetune_task_opts");
    ts_classify_rows_opts ro = {.struct_size = 5};
    ts_text_dataset *train = NULL, *test = NULL;
    CHECK_STATUS(ts_classify_rows_load(&ro, &train, &test), TS_ERR_ARG);
    ts_bert_infer_opts bo = {.struct_size = 5};
    ts_program *p = NULL;
    const char *fetch[8];
    int nf = 0;
    CHECK_STATUS(ts_bert_infer_build(&bo, &p, fetch, &nf, NULL), TS_ERR_ARG);
}

/* [CLS] A [SEP] (B [SEP]) with nothing cut, the buffer grown from NULL and reused. */
static void test_encode_all(void) {
    char path[] = "/tmp/test_run_lines_vocab_XXXXXX";
    int fd = mkstemp(path);
    const char *vocab = "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nthe\ncat\nsat\n";
    CHECK(fd >= 0 && write(fd, vocab, strlen(vocab)) == (ssize_t)strlen(vocab), "mkstemp / write");
    if (fd >= 0) close(fd);
    ts_tokenizer *tok = ts_tokenizer_load(path, 1);
    unlink(path);
    CHECK(tok != NULL, "ts_tokenizer_load: %s", ts_last_error());
    if (!tok) return;
    int32_t *ids = NULL;
    int cap = 0, n = 0;
    CHECK_OK(ts_encode_all(tok, "the cat sat", "cat", &ids, &cap, &n));
    const int32_t pair[] = {2, 5, 6, 7, 3, 6, 3};
    CHECK(n == 7 && !memcmp(ids, pair, sizeof pair), "pair: %d ids", n);
    CHECK_OK(ts_encode_all(tok, "The", NULL, &ids, &cap, &n));
    CHECK(n == 3 && ids[0] == 2 && ids[1] == 5 && ids[2] == 3, "single: %d ids", n);
    CHECK_OK(ts_encode_all(tok, "", "", &ids, &cap, &n));
    CHECK(n == 3 && ids[0] == 2 && ids[1] == 3 && ids[2] == 3, "empty pair: %d ids", n);
    free(ids);
    ts_tokenizer_free(tok);
}

int main(int argc, char **argv) {
    tu_args(argc, argv);
    RUN(test_metrics_and_progress);
    RUN(test_phase);
    RUN(test_epoch_steps);
    RUN(test_struct_size);
    RUN(test_encode_all);
    return tu_finish("test_run_lines");
}
