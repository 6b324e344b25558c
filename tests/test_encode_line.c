/*
 * test_encode_line.c — ts_encode_line (a line as `tessera tokenize` encodes it) without the
 * command: a line whole, NUL bytes dropped, a pair split at its first tab (no tab: an empty B),
 * --max-len's truncation and --pad's count, and a NULL argument refused.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tessera_apps.h"
#include "test_util.h"

static void test_lines(void) {
    char path[] = "/tmp/test_encode_line_vocab_XXXXXX";
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
    char line[64] = "the c\0at";
    CHECK_OK(ts_encode_line(tok, line, 8, 0, 0, 0, &ids, &cap, &n));
    CHECK(n == 4 && ids[0] == 2 && ids[1] == 5 && ids[2] == 6 && ids[3] == 3, "NUL dropped: %d ids", n);
    snprintf(line, sizeof line, "the cat\tsat");
    CHECK_OK(ts_encode_line(tok, line, strlen(line), 1, 0, 0, &ids, &cap, &n));
    const int32_t pair[] = {2, 5, 6, 3, 7, 3};
    CHECK(n == 6 && !memcmp(ids, pair, sizeof pair), "pair: %d ids", n);
    snprintf(line, sizeof line, "cat");
    CHECK_OK(ts_encode_line(tok, line, strlen(line), 1, 0, 0, &ids, &cap, &n));
    CHECK(n == 4 && ids[1] == 6 && ids[2] == 3 && ids[3] == 3, "no tab: an empty B (%d ids)", n);
    snprintf(line, sizeof line, "the cat sat the cat");
    CHECK_OK(ts_encode_line(tok, line, strlen(line), 0, 4, 0, &ids, &cap, &n));
    CHECK(n == 4 && ids[3] == 3, "max_len 4: %d ids", n);
    snprintf(line, sizeof line, "cat");
    CHECK_OK(ts_encode_line(tok, line, strlen(line), 0, 8, 1, &ids, &cap, &n));
    CHECK(n == 8 && cap >= 8 && ids[3] == 0 && ids[7] == 0, "padded to 8: %d ids", n);
    CHECK_STATUS(ts_encode_line(tok, NULL, 0, 0, 0, 0, &ids, &cap, &n), TS_ERR_ARG);
    free(ids);
    ts_tokenizer_free(tok);
}

int main(int argc, char **argv) {
    tu_args(argc, argv);
    RUN(test_lines);
    return tu_finish("test_encode_line");
}
