/*
 * test_encode_line.c — ts_encode_line (a line as `tessera tokenize` encodes it) without the
 * command: a line whole, NUL bytes dropped, a pair split at its first tab (no tab: an empty B),
 * --max-len's truncation and --pad's count, and a NULL argument refused; and the lines of a file
 * as one batch (ts_encode_lines_save, `tessera tokenize --out`): each row what ts_encode gives for
 * its line at the batch's length, the length the longest line's or --max-len's, and an empty,
 * missing or too-short request refused.
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

/* A temporary file holding text; its path in path (a mkstemp template). */
static void temp_text(char *path, const char *text) {
    int fd = mkstemp(path);
    CHECK(fd >= 0 && write(fd, text, strlen(text)) == (ssize_t)strlen(text), "mkstemp / write");
    if (fd >= 0) close(fd);
}

/* Row r of the i32 tensor `name` of the safetensors file path equals want[0 .. T). */
static int row_is(const char *path, const char *name, int r, const int32_t *want, int T) {
    ts_safetensors *st = ts_safetensors_open(path);
    ts_tensor *t = NULL;
    int ok = st && ts_safetensors_get(st, name, &t) == TS_OK && ts_tensor_dtype(t) == TS_I32 &&
             !memcmp((int32_t *)ts_tensor_data(t) + (size_t)r * (size_t)T, want, (size_t)T * sizeof *want);
    ts_tensor_free(t);
    ts_safetensors_close(st);
    return ok;
}

static void test_lines_save(void) {
    char vpath[] = "/tmp/test_encode_line_vocab_XXXXXX", lpath[] = "/tmp/test_encode_line_lines_XXXXXX";
    temp_text(vpath, "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nthe\ncat\nsat\n");
    temp_text(lpath, "the cat sat\tthe cat\ncat\n\nsat sat sat sat sat sat\n");
    ts_tokenizer *tok = ts_tokenizer_load(vpath, 1);
    unlink(vpath);
    CHECK(tok != NULL, "ts_tokenizer_load: %s", ts_last_error());
    if (!tok) return unlink(lpath), (void)0;
    char out[] = "/tmp/test_encode_line_out_XXXXXX";
    temp_text(out, "");
    int B = 0, T = 0;
    /* a pair each line; T the longest: [CLS] sat x6 [SEP] [SEP] = 9 */
    CHECK_OK(ts_encode_lines_save(tok, lpath, 1, 0, out, &B, &T));
    CHECK(B == 4 && T == 9, "pairs: [%d, %d], want [4, 9]", B, T);
    const char *a[] = {"the cat sat", "cat", "", "sat sat sat sat sat sat"}, *b[] = {"the cat", "", "", ""};
    for (int r = 0; r < B && T == 9; r++) {
        int32_t ids[9], types[9], mask[9];
        CHECK_OK(ts_encode(tok, a[r], b[r], 9, ids, types, mask, NULL));
        CHECK(row_is(out, "input_ids", r, ids, 9) && row_is(out, "token_type_ids", r, types, 9) &&
              row_is(out, "attention_mask", r, mask, 9), "row %d is not ts_encode's", r);
    }
    const int32_t first[9] = {2, 5, 6, 7, 3, 5, 6, 3, 0}, types0[9] = {0, 0, 0, 0, 0, 1, 1, 1, 0};
    CHECK(row_is(out, "input_ids", 0, first, 9) && row_is(out, "token_type_ids", 0, types0, 9), "row 0's ids");
    /* single texts cut to max_len 4: the tab stays in text A (as a space) */
    CHECK_OK(ts_encode_lines_save(tok, lpath, 0, 4, out, &B, &T));
    const int32_t cut[4] = {2, 5, 6, 3}, one[4] = {1, 1, 1, 1};
    CHECK(B == 4 && T == 4 && row_is(out, "input_ids", 0, cut, 4) && row_is(out, "attention_mask", 0, one, 4),
          "max_len 4: [%d, %d]", B, T);
    CHECK_STATUS(ts_encode_lines_save(tok, lpath, 1, 2, out, NULL, NULL), TS_ERR_ARG); /* no room for 3 specials */
    CHECK_STATUS(ts_encode_lines_save(tok, "/nonexistent/lines.txt", 0, 0, out, NULL, NULL), TS_ERR_IO);
    CHECK(strstr(ts_last_error(), "/nonexistent/lines.txt") != NULL, "names the file: %s", ts_last_error());
    FILE *f = fopen(lpath, "w");
    if (f) fclose(f);
    CHECK_STATUS(ts_encode_lines_save(tok, lpath, 0, 0, out, NULL, NULL), TS_ERR_ARG); /* no lines */
    CHECK(strstr(ts_last_error(), "no lines") != NULL, "says why: %s", ts_last_error());
    CHECK(row_is(out, "input_ids", 0, cut, 4), "a failed call left the previous file");
    unlink(lpath), unlink(out);
    ts_tokenizer_free(tok);
}

int main(int argc, char **argv) {
    tu_args(argc, argv);
    RUN(test_lines);
    RUN(test_lines_save);
    return tu_finish("test_encode_line");
}
