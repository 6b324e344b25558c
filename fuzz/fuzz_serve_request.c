/*
 * fuzz_serve_request.c — libFuzzer target for `tessera serve`'s request decoding
 * (apps/serve/request.c): the first byte picks the body's kind and the model it is for (bit 0: a
 * /v1 :predict body, else a v2 infer body; bit 1: a question-answering model; bit 2: a text-pair
 * classifier; bit 3: a v2 body for an ONNX model with inputs "x" f32 [b, 3] and "ids" i64 [b, 2]),
 * the rest is the body. A body the decoder accepts must hold what the model takes
 * (rows within --max-batch, tokens within the model's length, every id, type and mask in range;
 * texts present); a refused one must fail with TS_ERR_ARG (TS_ERR_NOMEM out of memory) and a
 * reason, the thread's last error, that makes a JSON error. Anything else, a crash, a leak or
 * undefined behaviour, is a finding.
 */
#include "fuzz_util.h"
#include "serve/serve.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    fuzz_dir();
    return 0;
}

static void check_tensors(const serve_sig *sig, const serve_tensors *t) {
    int ok = t->rows >= 1 && t->rows <= sig->max_batch && t->T >= 1 && t->T <= sig->max_seq && t->ids && t->types &&
             t->mask;
    for (long i = 0; ok && i < (long)t->rows * t->T; i++)
        ok = t->ids[i] >= 0 && t->ids[i] < sig->vocab && t->types[i] >= 0 && t->types[i] < sig->type_vocab &&
             (t->mask[i] == 0 || t->mask[i] == 1);
    if (!ok) {
        fprintf(stderr, "fuzz: an accepted infer body decoded to [%d, %d] out of the model's range\n", t->rows, t->T);
        abort();
    }
}

static void check_texts(const serve_sig *sig, const serve_texts *t) {
    int ok = t->n >= 1 && (sig->qa || t->n <= sig->max_batch);
    for (int i = 0; ok && i < t->n; i++) ok = t->text[i] && (!(sig->qa || sig->pairs) || t->text_b[i]);
    if (!ok) {
        fprintf(stderr, "fuzz: an accepted :predict body decoded to %d instances, one without its text\n", t->n);
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    const serve_sig sig = {.max_batch = 8, .max_seq = 32, .vocab = 120, .type_vocab = 2, .qa = (data[0] >> 1) & 1,
                           .pairs = !((data[0] >> 1) & 1) && ((data[0] >> 2) & 1)};
    const char *body = (const char *)data + 1;
    ts_err_clear();
    ts_status code;
    if (data[0] & 8) {
        static serve_onnx_sig osig = {.batch = 4, .nin = 2,
                                      .in = {{"x", TS_F32, 2, {4, 3}}, {"ids", TS_I64, 2, {4, 2}}}};
        ts_tensor *in[SERVE_MAX_IO];
        int rows;
        char id[SERVE_NAME_MAX];
        code = serve_decode_named(&osig, body, size - 1, in, &rows, id);
        for (int k = 0; !code && k < 2; k++) {
            const int64_t *sh = ts_tensor_shape(in[k]);
            if (sh[0] != rows || rows < 1 || rows > 4 || sh[1] != osig.in[k].shape[1] ||
                ts_tensor_dtype(in[k]) != osig.in[k].dtype) {
                fprintf(stderr, "fuzz: an accepted ONNX body decoded to input %d of [%lld, %lld]\n", k,
                        (long long)sh[0], (long long)sh[1]);
                abort();
            }
        }
        for (int k = 0; !code && k < 2; k++) ts_tensor_free(in[k]);
    } else if (data[0] & 1) {
        serve_texts t;
        code = serve_decode_texts(&sig, body, size - 1, &t);
        if (!code) check_texts(&sig, &t);
        serve_texts_free(&t);
    } else {
        serve_tensors t;
        code = serve_decode_infer(&sig, body, size - 1, &t);
        if (!code) check_tensors(&sig, &t);
        serve_tensors_free(&t);
    }
    if (code) {
        const char *err = ts_last_error();
        char *reply = serve_reply_error(err);
        if ((code != TS_ERR_ARG && code != TS_ERR_NOMEM) || ts_last_status() != code || !err[0] || !reply) {
            fprintf(stderr, "fuzz: a refused body gave %s and reason '%s'\n", ts_status_name(code), err);
            abort();
        }
        free(reply);
    }
    return 0;
}
