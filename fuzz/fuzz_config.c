/*
 * fuzz_config.c — libFuzzer target for the BERT config.json reader (ts_bert_config_load in
 * apps/models/bert.c): the input is written to a file and loaded over ts_bert_config_default's
 * values. A config the loader accepts must also pass ts_bert_config_check (the loader promises
 * the same bounds); anything else must be an error, never a crash, leak or undefined behaviour.
 */
#include "tessera_apps.h"
#include "fuzz_util.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    fuzz_dir();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *path = fuzz_write("config.json", data, size);
    ts_bert_config cfg;
    ts_bert_config_default(&cfg);
    if (ts_bert_config_load(path, &cfg) == TS_OK && ts_bert_config_check(&cfg) != TS_OK) {
        fprintf(stderr, "fuzz: ts_bert_config_load accepted a config that ts_bert_config_check refuses: %s\n",
                ts_last_error());
        abort();
    }
    return 0;
}
