/*
 * charset.c — the recogniser's classes from PaddleOCR's keys file (ppocr_keys_v1.txt: one
 * character a line, UTF-8): class 0 is CTC's blank, classes 1..K the K lines in order, and class
 * K + 1 the space (PaddleOCR's use_space_char, on for its Chinese models). The count must match
 * the model's last dimension; ocr.c checks it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/app.h"
#include "ocr/ocr_impl.h"

void ocr_charset_free(ocr_charset *cs) {
    if (!cs) return;
    for (int i = 0; i < cs->n; i++) free(cs->chars[i]);
    free(cs->chars);
    free(cs->ascii);
    free(cs);
}

/* Append class s[0..len) to cs; -1 out of memory. */
static int add(ocr_charset *cs, int *cap, const char *s, size_t len) {
    if (cs->n == *cap) {
        int ncap = *cap ? *cap * 2 : 256;
        char **c = realloc(cs->chars, sizeof *c * (size_t)ncap);
        if (!c) return -1;
        cs->chars = c;
        uint8_t *a = realloc(cs->ascii, (size_t)ncap);
        if (!a) return -1;
        cs->ascii = a;
        *cap = ncap;
    }
    char *copy = malloc(len + 1);
    if (!copy) return -1;
    memcpy(copy, s, len);
    copy[len] = 0;
    cs->chars[cs->n] = copy;
    cs->ascii[cs->n] = len == 1 && s[0] >= 0x20 && s[0] <= 0x7e;
    cs->n++;
    return 0;
}

ocr_charset *ocr_charset_load(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        ts_set_error(TS_ERR_IO, "%s: cannot open the recogniser's character list: %s", path, strerror(errno));
        return NULL;
    }
    ocr_charset *cs = calloc(1, sizeof *cs);
    int cap = 0, bad = !cs || add(cs, &cap, "", 0) != 0;
    char line[256];
    int lineno = 0;
    while (!bad && fgets(line, sizeof line, f)) {
        lineno++;
        size_t len = strlen(line);
        if (len == sizeof line - 1 && line[len - 1] != '\n') {
            ts_set_error(TS_ERR_IO, "%s:%d: a line of more than %zu bytes; the file holds one character a line", path,
                         lineno, sizeof line - 2);
            fclose(f);
            ocr_charset_free(cs);
            return NULL;
        }
        if (len && line[len - 1] == '\n') len--;
        if (len && line[len - 1] == '\r') len--;
        bad = add(cs, &cap, line, len) != 0;
    }
    int err = ferror(f);
    fclose(f);
    if (!bad && lineno == 0) {
        ts_set_error(TS_ERR_IO, "%s: the character list is empty", path);
        ocr_charset_free(cs);
        return NULL;
    }
    if (bad || err || add(cs, &cap, " ", 1) != 0) {
        ts_set_error(bad ? TS_ERR_NOMEM : TS_ERR_IO, "%s: %s", path, bad ? "out of memory" : "read failed");
        ocr_charset_free(cs);
        return NULL;
    }
    return cs;
}
