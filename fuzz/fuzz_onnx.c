/*
 * fuzz_onnx.c — libFuzzer target for the ONNX importer (src/onnx/): the input is parsed with
 * ts_onnx_load_bytes (protobuf-c's generated parser, then the model's checks); a model that loads
 * is imported into a graph for its declared input shapes (a dynamic dim taken as 2), once for
 * inference and once with trainable parameters. A malformed model must be refused with an error,
 * never crash, leak, read out of bounds or allocate without bound (protobuf lengths, dims,
 * shapes computed at import).
 */
#include "fuzz_util.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    fuzz_dir(); /* one OpenMP thread */
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    ts_onnx *m = ts_onnx_load_bytes(data, size, "fuzz.onnx");
    if (!m) {
        if (!ts_last_error()[0]) abort(); /* a refusal always says why */
        return 0;
    }
    int n = ts_onnx_num_inputs(m);
    int *ndims = calloc((size_t)n + 1, sizeof *ndims);
    int64_t(*shapes)[TS_MAX_DIMS] = calloc((size_t)n + 1, sizeof *shapes);
    const int64_t **sp = calloc((size_t)n + 1, sizeof *sp);
    int ok = ndims && shapes && sp;
    for (int i = 0; ok && i < n; i++) {
        ts_dtype dt;
        ndims[i] = ts_onnx_input_shape(m, i, &dt, shapes[i]);
        if (ndims[i] < 0) ok = 0; /* rank unknown: nothing to import with */
        for (int d = 0; d < ndims[i]; d++)
            if (shapes[i][d] < 0) shapes[i][d] = 2;
        sp[i] = shapes[i];
        if (!ts_onnx_input_name(m, i)) abort();
    }
    for (int j = 0; j < ts_onnx_num_outputs(m); j++)
        if (!ts_onnx_output_name(m, j)) abort();
    for (int trainable = 0; ok && trainable < 2; trainable++) {
        ts_graph *g = ts_graph_new();
        ts_value outs[64];
        ts_onnx_import_opts o = {.trainable = trainable};
        ts_status s = ts_onnx_num_outputs(m) <= 64 ? ts_onnx_import(m, g, ndims, sp, &o, outs) : TS_OK;
        if (s != TS_OK && !ts_last_error()[0]) abort();
        ts_graph_free(g);
    }
    free(ndims);
    free(shapes);
    free(sp);
    ts_onnx_free(m);
    return 0;
}
