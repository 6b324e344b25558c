/*
 * reply.c — the JSON bodies `tessera serve` answers with: errors {"error": "..."}, KServe v2
 * infer responses (named FP32 outputs with shape and row-major data), /v1 :predict predictions
 * (a classifier's label, its probability and every label's; a QA model's answer span), and a
 * model's v2 metadata (its inputs and outputs); the same for an ONNX model (outputs of their own
 * dtypes and shapes); an OCR model's lines (text, confidence, the four corners).
 * Numbers are printed so that they read back exactly: a probability (a double) as the shortest
 * decimal that reads back to the same double, an FP32 output as the shortest that reads back to the
 * same float (what the library computed, bit for bit).
 */
#include "serve/serve.h"

#include "common/json_number.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

/* f as the shortest decimal that reads back to exactly f as a float (6 to 9 digits). */
static cJSON *exact_f32(float f) {
    char text[40];
    if (!isfinite(f)) return cJSON_CreateNull();
    for (int digits = 6; digits <= 9; digits++) {
        snprintf(text, sizeof text, "%.*g", digits, (double)f);
        if (strtof(text, NULL) == f) break;
    }
    return cJSON_CreateRaw(text);
}

static char *print_free(cJSON *root) {
    char *s = root ? cJSON_PrintUnformatted(root) : NULL;
    cJSON_Delete(root);
    return s;
}

char *serve_reply_error(const char *msg) {
    cJSON *root = cJSON_CreateObject();
    if (root) cJSON_AddStringToObject(root, "error", msg);
    return print_free(root);
}

/* {"name", "datatype", "shape": [a, b]} added to array arr; the object, for its data. */
static cJSON *tensor_desc(cJSON *arr, const char *name, const char *dtype, double a, double b) {
    cJSON *t = cJSON_CreateObject();
    cJSON_AddItemToArray(arr, t);
    cJSON_AddStringToObject(t, "name", name);
    cJSON_AddStringToObject(t, "datatype", dtype);
    cJSON *shape = cJSON_AddArrayToObject(t, "shape");
    cJSON_AddItemToArray(shape, cJSON_CreateNumber(a));
    cJSON_AddItemToArray(shape, cJSON_CreateNumber(b));
    return t;
}

char *serve_reply_infer(const serve_model *m, const serve_job *j) {
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "model_name", m->name);
    if (j->in.id[0]) cJSON_AddStringToObject(root, "id", j->in.id);
    cJSON *outs = cJSON_AddArrayToObject(root, "outputs");
    static const char *const qa_names[2] = {"start_logits", "end_logits"};
    for (int k = 0; k < (m->sig.qa ? 2 : 1); k++) {
        cJSON *t = tensor_desc(outs, m->sig.qa ? qa_names[k] : "logits", "FP32", j->in.rows, j->ncols);
        cJSON *data = cJSON_AddArrayToObject(t, "data");
        size_t n = (size_t)j->in.rows * j->ncols;
        for (size_t i = 0; i < n; i++) cJSON_AddItemToArray(data, exact_f32(j->out[k][i]));
    }
    return print_free(root);
}

/* A classifier's prediction of row i: label, probability, every label's probability. */
static cJSON *classified(const serve_model *m, const serve_job *j, int i) {
    int c = j->ncols;
    double p[c > 0 ? c : 1];
    for (int k = 0; k < c; k++) p[k] = 0;
    ts_classify_softmax_add(j->out[0] + (size_t)i * c, c, p);
    int best = 0;
    for (int k = 1; k < c; k++)
        if (p[k] > p[best]) best = k;
    cJSON *o = cJSON_CreateObject(), *all = cJSON_CreateObject();
    const char *name = best < m->meta.nlabels && m->meta.labels[best] ? m->meta.labels[best] : "?";
    cJSON_AddStringToObject(o, "label", name);
    cJSON_AddItemToObject(o, "probability", ts_json_exact(p[best]));
    for (int k = 0; k < c && k < m->meta.nlabels; k++)
        cJSON_AddItemToObject(all, m->meta.labels[k] ? m->meta.labels[k] : "?", ts_json_exact(p[k]));
    cJSON_AddItemToObject(o, "probabilities", all);
    return o;
}

char *serve_reply_predict(const serve_model *m, const serve_job *j, const serve_texts *t) {
    cJSON *root = cJSON_CreateObject();
    cJSON *preds = cJSON_AddArrayToObject(root, "predictions");
    for (int i = 0; i < t->n; i++) {
        if (!m->sig.qa) {
            cJSON_AddItemToArray(preds, classified(m, j, i));
            continue;
        }
        char *ans = ts_squad_answer(j->squad, i, j->out[0], j->out[1], TS_SQUAD_N_BEST, TS_SQUAD_MAX_ANSWER_LEN);
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "answer", ans ? ans : "");
        cJSON_AddItemToArray(preds, o);
        free(ans);
    }
    return print_free(root);
}

char *serve_reply_metadata(const serve_model *m) {
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "name", m->name);
    cJSON *v = cJSON_AddArrayToObject(root, "versions");
    cJSON_AddItemToArray(v, cJSON_CreateString("1"));
    cJSON_AddStringToObject(root, "platform", "tessera_bert");
    cJSON *ins = cJSON_AddArrayToObject(root, "inputs");
    static const char *const in_names[3] = {"input_ids", "token_type_ids", "attention_mask"};
    for (int i = 0; i < 3; i++) tensor_desc(ins, in_names[i], "INT64", -1, -1);
    cJSON *outs = cJSON_AddArrayToObject(root, "outputs");
    if (m->sig.qa) {
        tensor_desc(outs, "start_logits", "FP32", -1, -1);
        tensor_desc(outs, "end_logits", "FP32", -1, -1);
    } else {
        tensor_desc(outs, "logits", "FP32", -1, m->meta.nlabels);
    }
    cJSON *p = cJSON_AddObjectToObject(root, "parameters");
    cJSON_AddNumberToObject(p, "max_batch", m->sig.max_batch);
    cJSON_AddNumberToObject(p, "max_sequence_length", m->sig.max_seq);
    cJSON_AddStringToObject(p, "task", m->sig.qa ? "question_answering" : "classification");
    if (m->quant_mode) { /* a directory from tessera quantize: how, and how many nodes run int8 */
        cJSON_AddStringToObject(p, "quantization", m->quant_mode == TS_QUANT_STATIC ? "int8 static" : "int8 dynamic");
        cJSON_AddNumberToObject(p, "int8_ops", m->quant_ops);
    }
    if (!m->sig.qa) {
        cJSON *labels = cJSON_AddArrayToObject(p, "labels");
        for (int k = 0; k < m->meta.nlabels; k++)
            cJSON_AddItemToArray(labels, cJSON_CreateString(m->meta.labels[k] ? m->meta.labels[k] : "?"));
    }
    return print_free(root);
}

static const char *kserve_dtype(ts_dtype d) {
    static const char *const names[] = {"FP32", "BF16", "FP16", "INT32", "INT64", "UINT8"};
    return (unsigned)d < sizeof names / sizeof *names ? names[d] : "?";
}

/* {"name", "datatype", "shape": dims[0 .. nd)} added to arr. */
static cJSON *tensor_desc_n(cJSON *arr, const char *name, const char *dtype, int nd, const int64_t *dims) {
    cJSON *t = cJSON_CreateObject();
    cJSON_AddItemToArray(arr, t);
    cJSON_AddStringToObject(t, "name", name);
    cJSON_AddStringToObject(t, "datatype", dtype);
    cJSON *shape = cJSON_AddArrayToObject(t, "shape");
    for (int d = 0; d < nd; d++) cJSON_AddItemToArray(shape, cJSON_CreateNumber((double)dims[d]));
    return t;
}

/* Element i of t as a double (f32, i32, i64, u8; 16-bit floats do not come out of a session). */
static double element(ts_tensor *t, int64_t i) {
    const void *p = ts_tensor_data(t);
    switch (ts_tensor_dtype(t)) {
    case TS_F32: return ((const float *)p)[i];
    case TS_I32: return ((const int32_t *)p)[i];
    case TS_I64: return (double)((const int64_t *)p)[i];
    case TS_U8: return ((const uint8_t *)p)[i];
    default: return 0;
    }
}

/* Element i of t as JSON, exactly: an f32 read back as the same float, an int64 in all its digits. */
static cJSON *element_json(ts_tensor *t, int64_t i) {
    char text[32];
    if (ts_tensor_dtype(t) == TS_F32) return exact_f32(((const float *)ts_tensor_data(t))[i]);
    if (ts_tensor_dtype(t) != TS_I64) return cJSON_CreateNumber(element(t, i)); /* int32, uint8: exact */
    snprintf(text, sizeof text, "%lld", (long long)((const int64_t *)ts_tensor_data(t))[i]);
    return cJSON_CreateRaw(text);
}

char *serve_reply_infer_onnx(const serve_model *m, const serve_job *j) {
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "model_name", m->name);
    if (j->in.id[0]) cJSON_AddStringToObject(root, "id", j->in.id);
    cJSON *outs = cJSON_AddArrayToObject(root, "outputs");
    for (int k = 0; k < m->nout; k++) {
        ts_tensor *t = j->tout[k];
        cJSON *d = tensor_desc_n(outs, m->out_name[k], kserve_dtype(ts_tensor_dtype(t)), ts_tensor_ndim(t),
                                 ts_tensor_shape(t));
        cJSON *data = cJSON_AddArrayToObject(d, "data");
        for (int64_t i = 0; i < ts_tensor_numel(t); i++) cJSON_AddItemToArray(data, element_json(t, i));
    }
    return print_free(root);
}

char *serve_reply_metadata_onnx(const serve_model *m) {
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "name", m->name);
    cJSON *v = cJSON_AddArrayToObject(root, "versions");
    cJSON_AddItemToArray(v, cJSON_CreateString("1"));
    cJSON_AddStringToObject(root, "platform", "onnx");
    cJSON *ins = cJSON_AddArrayToObject(root, "inputs");
    for (int k = 0; k < m->osig.nin; k++) {
        const serve_io *io = &m->osig.in[k];
        int64_t dims[TS_MAX_DIMS];
        memcpy(dims, io->shape, sizeof dims);
        dims[0] = -1;
        tensor_desc_n(ins, io->name, kserve_dtype(io->dtype), io->ndim, dims);
    }
    cJSON *outs = cJSON_AddArrayToObject(root, "outputs");
    for (int k = 0; k < m->nout; k++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "name", m->out_name[k]);
        cJSON_AddItemToArray(outs, o);
    }
    cJSON *p = cJSON_AddObjectToObject(root, "parameters");
    cJSON_AddNumberToObject(p, "max_batch", m->osig.batch);
    return print_free(root);
}

char *serve_reply_ocr(const serve_job *j) {
    cJSON *root = cJSON_CreateObject();
    cJSON *lines = cJSON_AddArrayToObject(root, "lines");
    for (int i = 0; i < j->nlines; i++) {
        const ts_ocr_line *l = &j->lines[i];
        cJSON *o = cJSON_CreateObject(), *box = cJSON_CreateArray();
        cJSON_AddStringToObject(o, "text", l->text ? l->text : "");
        cJSON_AddNumberToObject(o, "confidence", l->confidence);
        for (int c = 0; c < 4; c++) {
            cJSON *pt = cJSON_CreateArray();
            cJSON_AddItemToArray(pt, cJSON_CreateNumber(l->box[c][0]));
            cJSON_AddItemToArray(pt, cJSON_CreateNumber(l->box[c][1]));
            cJSON_AddItemToArray(box, pt);
        }
        cJSON_AddItemToObject(o, "box", box);
        cJSON_AddItemToArray(lines, o);
    }
    return print_free(root);
}
