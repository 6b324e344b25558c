/*
 * fuzz_util.h — helpers shared by the libFuzzer targets in fuzz/ (static functions, one copy per
 * target): a scratch directory made once per process with mkdtemp, the fuzz input written to a
 * file there (the same names are rewritten every iteration), and a tiny WordPiece vocabulary for
 * the readers that need a tokenizer.
 */
#ifndef TS_FUZZ_UTIL_H
#define TS_FUZZ_UTIL_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tessera_apps.h"

#define FUZZ_MAX_FILES 16
/* Not every target uses every helper. */
#define FUZZ_HELPER static __attribute__((unused))

static char fuzz_dir_path[512];
static char fuzz_files[FUZZ_MAX_FILES][640];
static int fuzz_nfiles;

/* atexit: remove the files written and the directory (only what this process made). */
FUZZ_HELPER void fuzz_cleanup(void) {
    for (int i = 0; i < fuzz_nfiles; i++) unlink(fuzz_files[i]);
    if (fuzz_dir_path[0]) rmdir(fuzz_dir_path);
}

/* The per-process scratch directory under $TMPDIR (or /tmp), made on the first call. Also keeps
 * OpenMP to one thread (unless OMP_NUM_THREADS is set): the parsers are serial, and idle OpenMP
 * threads would only take CPU from the fuzzer. */
FUZZ_HELPER const char *fuzz_dir(void) {
    if (fuzz_dir_path[0]) return fuzz_dir_path;
    setenv("OMP_NUM_THREADS", "1", 0);
    const char *tmp = getenv("TMPDIR");
    if (!tmp || !*tmp) tmp = "/tmp";
    snprintf(fuzz_dir_path, sizeof fuzz_dir_path, "%s/tessera-fuzz-XXXXXX", tmp);
    if (!mkdtemp(fuzz_dir_path)) {
        perror("fuzz: mkdtemp");
        abort();
    }
    atexit(fuzz_cleanup);
    return fuzz_dir_path;
}

/* The path of file `name` in the scratch directory (a stable pointer, one slot per name). */
FUZZ_HELPER const char *fuzz_path(const char *name) {
    const char *dir = fuzz_dir();
    char want[sizeof fuzz_files[0]];
    snprintf(want, sizeof want, "%s/%s", dir, name);
    for (int i = 0; i < fuzz_nfiles; i++)
        if (!strcmp(fuzz_files[i], want)) return fuzz_files[i];
    if (fuzz_nfiles == FUZZ_MAX_FILES) {
        fprintf(stderr, "fuzz: more than %d scratch file names\n", FUZZ_MAX_FILES);
        abort();
    }
    memcpy(fuzz_files[fuzz_nfiles], want, sizeof want);
    return fuzz_files[fuzz_nfiles++];
}

/* Write data[0..size) to file `name` in the scratch directory (replacing it); returns its path. */
FUZZ_HELPER const char *fuzz_write(const char *name, const uint8_t *data, size_t size) {
    const char *path = fuzz_path(name);
    FILE *f = fopen(path, "wb");
    if (!f || (size && fwrite(data, 1, size, f) != size) || fclose(f) != 0) {
        perror(path);
        abort();
    }
    return path;
}

/* A tiny uncased vocabulary: the five special tokens, some words, "##" pieces and characters. */
static const char fuzz_tiny_vocab[] =
    "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n"
    "the\na\nan\nof\nin\non\nis\nwas\nwhat\nwhere\nwho\nwhen\ndid\ncat\ndog\nsat\nmat\nfox\n"
    "quick\nbrown\nlazy\njump\nover\nparis\nfrance\ncapital\nriver\ncity\nun\naff\nplay\nrun\n"
    "##s\n##ed\n##ing\n##er\n##ly\n##able\n##aff\n##e\n##a\n##n\n##t\n"
    ".\n,\n?\n!\n'\n\"\n-\n(\n)\n0\n1\n2\n3\n##0\n##1\na\nb\nc\nd\ne\nt\ns\n##b\n##c\n##d\n";

/* Load the tiny vocabulary (written to the scratch directory) as an uncased tokenizer; aborts on
 * failure, since then no input could be tested. */
FUZZ_HELPER ts_tokenizer *fuzz_tiny_tokenizer(void) {
    const char *path = fuzz_write("tiny-vocab.txt", (const uint8_t *)fuzz_tiny_vocab, sizeof fuzz_tiny_vocab - 1);
    ts_tokenizer *tok = ts_tokenizer_load(path, 1);
    if (!tok) {
        fprintf(stderr, "fuzz: cannot load the tiny vocabulary: %s\n", ts_last_error());
        abort();
    }
    return tok;
}

#endif /* TS_FUZZ_UTIL_H */
