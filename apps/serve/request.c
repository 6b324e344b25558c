/*
 * request.c — request bodies decoded into what a model runs: a KServe v2 infer body's named
 * tensors (input_ids, token_type_ids, attention_mask as [B, T] integers, data flat or nested in
 * row-major order) and a /v1 :predict body's instances (texts, text pairs, or QA questions with
 * their contexts). Every fault fails with the reason a client can act on recorded as the
 * thread's error (ts_set_error: TS_ERR_ARG, TS_ERR_NOMEM out of memory), which http.c answers as a 400.
 * Pure: no model, no server, so fuzz/fuzz_serve_request.c calls it directly.
 */
#include "serve/serve.h"

#include "common/json_number.h"
#include "common/json_type.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const INPUTS[3] = {"input_ids", "token_type_ids", "attention_mask"};

void serve_tensors_free(serve_tensors *t) {
    free(t->ids), free(t->types), free(t->mask);
    memset(t, 0, sizeof *t);
}

void serve_texts_free(serve_texts *t) {
    for (int i = 0; i < t->n; i++) free(t->text[i]), free(t->text_b ? t->text_b[i] : NULL);
    free(t->text), free(t->text_b);
    memset(t, 0, sizeof *t);
}

cJSON *serve_json_object(const char *body, size_t len) {
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(body, len, &end, 0);
    if (!root) {
        size_t at = end && end >= body && end <= body + len ? (size_t)(end - body) : len, line = 1, col = 1;
        for (size_t i = 0; i < at; i++) {
            col = body[i] == '\n' ? 1 : col + 1;
            line += body[i] == '\n';
        }
        if (at >= len)
            ts_set_error(TS_ERR_ARG, "the body is not valid JSON: it ends at byte %zu before the value does", len);
        else
            ts_set_error(TS_ERR_ARG, "the body is not valid JSON: at byte %zu (line %zu, column %zu), near '%.*s'",
                         at, line, col, (int)(len - at < 16 ? len - at : 16), body + at); /* body: not NUL-ended */
        return NULL;
    }
    if (!cJSON_IsObject(root)) {
        ts_set_error(TS_ERR_ARG, "the body is %s, not a JSON object", ts_json_type(root));
        cJSON_Delete(root);
        return NULL;
    }
    return root;
}

/* Whether the KServe datatype names an integer type. */
static int int_datatype(const char *d) {
    static const char *const ok[] = {"INT64", "INT32", "INT16", "INT8", "UINT64", "UINT32", "UINT16", "UINT8"};
    for (size_t i = 0; i < sizeof ok / sizeof *ok; i++)
        if (!strcmp(d, ok[i])) return 1;
    return 0;
}

/* Flatten data (numbers, or arrays of them nested) into dst[0 .. want) within [lo, hi]; *n counts
 * the numbers seen. TS_OK, or TS_ERR_ARG with the reason. */
static ts_status flatten(const cJSON *data, int32_t *dst, long want, long *n, long lo, long hi, const char *name,
                         int depth) {
    if (depth > 8) return ts_set_error(TS_ERR_ARG, "input %s: data nested too deep", name);
    if (cJSON_IsArray(data)) {
        ts_status st = TS_OK;
        for (const cJSON *e = data->child; e && !st; e = e->next)
            st = flatten(e, dst, want, n, lo, hi, name, depth + 1);
        return st;
    }
    if (!cJSON_IsNumber(data))
        return ts_set_error(TS_ERR_ARG, "input %s: data holds a value that is not a number", name);
    double v = data->valuedouble;
    char text[40];
    if (v != floor(v))
        return ts_set_error(TS_ERR_ARG, "input %s: element %ld is %s, not an integer", name, *n,
                            ts_json_number_text(v, text));
    if (v < (double)lo || v > (double)hi)
        return ts_set_error(TS_ERR_ARG, "input %s: element %ld is %s, outside %ld .. %ld", name, *n,
                            ts_json_number_text(v, text), lo, hi);
    if (*n < want) dst[*n] = (int32_t)v;
    ++*n;
    return TS_OK;
}

/* Input `in` (one element of "inputs") into out: which one, its shape checked against the
 * first's (*B, *T: 0 before). TS_OK or the error (ts_set_error). */
static ts_status decode_input(const serve_sig *sig, const cJSON *in, serve_tensors *out, int32_t **slot_of[3], int *B,
                              int *T) {
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(in, "name");
    if (!cJSON_IsString(name)) return ts_set_error(TS_ERR_ARG, "an input without a \"name\" string");
    int k = 0;
    while (k < 3 && strcmp(name->valuestring, INPUTS[k])) k++;
    if (k == 3)
        return ts_set_error(TS_ERR_ARG,
                            "unknown input '%.64s': the model takes input_ids, token_type_ids, attention_mask",
                            name->valuestring);
    if (*slot_of[k]) return ts_set_error(TS_ERR_ARG, "input %s given twice", INPUTS[k]);
    const cJSON *dt = cJSON_GetObjectItemCaseSensitive(in, "datatype");
    if (!cJSON_IsString(dt)) return ts_set_error(TS_ERR_ARG, "input %s: no \"datatype\" string", INPUTS[k]);
    if (!int_datatype(dt->valuestring))
        return ts_set_error(TS_ERR_ARG, "input %s: datatype %.32s, but the model takes integers (INT64 or INT32)",
                            INPUTS[k], dt->valuestring);
    const cJSON *shape = cJSON_GetObjectItemCaseSensitive(in, "shape");
    if (!cJSON_IsArray(shape) || cJSON_GetArraySize(shape) != 2)
        return ts_set_error(TS_ERR_ARG, "input %s: \"shape\" must be [batch, sequence length]", INPUTS[k]);
    double b = cJSON_GetArrayItem(shape, 0)->valuedouble, t = cJSON_GetArrayItem(shape, 1)->valuedouble;
    if (!cJSON_IsNumber(cJSON_GetArrayItem(shape, 0)) || !cJSON_IsNumber(cJSON_GetArrayItem(shape, 1)) || b < 1 ||
        t < 1 || b != floor(b) || t != floor(t))
        return ts_set_error(TS_ERR_ARG, "input %s: shape entries must be positive integers", INPUTS[k]);
    char bt[40], tt[40];
    ts_json_number_text(b, bt), ts_json_number_text(t, tt);
    if (b > sig->max_batch)
        return ts_set_error(TS_ERR_ARG, "input %s: batch %s is more than the server's max batch %d", INPUTS[k], bt,
                            sig->max_batch);
    if (t > sig->max_seq)
        return ts_set_error(TS_ERR_ARG, "input %s: sequence length %s is more than the model's %d", INPUTS[k], tt,
                            sig->max_seq);
    if (*B && (*B != (int)b || *T != (int)t))
        return ts_set_error(TS_ERR_ARG, "input %s: shape [%s, %s] differs from the other inputs' [%d, %d]", INPUTS[k],
                            bt, tt, *B, *T);
    *B = (int)b, *T = (int)t;
    long want = (long)b * (long)t, n = 0;
    int32_t *dst = malloc((size_t)want * sizeof *dst);
    if (!dst) return ts_set_error(TS_ERR_NOMEM, "out of memory");
    *slot_of[k] = dst;
    const cJSON *data = cJSON_GetObjectItemCaseSensitive(in, "data");
    if (!cJSON_IsArray(data)) return ts_set_error(TS_ERR_ARG, "input %s: no \"data\" array", INPUTS[k]);
    long hi = k == 0 ? sig->vocab - 1 : k == 1 ? sig->type_vocab - 1 : 1;
    ts_status st = flatten(data, dst, want, &n, 0, hi, INPUTS[k], 0);
    if (st) return st;
    if (n != want)
        return ts_set_error(TS_ERR_ARG, "input %s: data holds %ld values, shape [%d, %d] wants %ld", INPUTS[k], n, *B,
                            *T, want);
    (void)out;
    return TS_OK;
}

ts_status serve_decode_infer(const serve_sig *sig, const char *body, size_t len, serve_tensors *out) {
    memset(out, 0, sizeof *out);
    cJSON *root = serve_json_object(body, len);
    ts_status rc = TS_OK;
    int B = 0, T = 0;
    int32_t **slot_of[3] = {&out->ids, &out->types, &out->mask};
    if (!root) {
        rc = TS_ERR_ARG;
        goto done;
    }
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(root, "id");
    if (cJSON_IsString(id)) snprintf(out->id, sizeof out->id, "%s", id->valuestring);
    const cJSON *inputs = cJSON_GetObjectItemCaseSensitive(root, "inputs");
    if (!cJSON_IsArray(inputs) || !inputs->child) {
        rc = ts_set_error(TS_ERR_ARG, "no \"inputs\" array");
        goto done;
    }
    for (const cJSON *in = inputs->child; in && !rc; in = in->next)
        rc = cJSON_IsObject(in) ? decode_input(sig, in, out, slot_of, &B, &T)
                                : ts_set_error(TS_ERR_ARG, "an element of \"inputs\" is not an object");
    if (!rc && !out->ids) rc = ts_set_error(TS_ERR_ARG, "input input_ids is missing");
    out->rows = B, out->T = T;
    size_t n = (size_t)B * (size_t)T;
    if (!rc && !out->types && (out->types = calloc(n, sizeof *out->types)) == NULL)
        rc = ts_set_error(TS_ERR_NOMEM, "out of memory");
    if (!rc && !out->mask) {
        if (!(out->mask = malloc(n * sizeof *out->mask))) rc = ts_set_error(TS_ERR_NOMEM, "out of memory");
        for (size_t i = 0; !rc && i < n; i++) out->mask[i] = 1;
    }
done:
    cJSON_Delete(root);
    if (rc) serve_tensors_free(out);
    return rc;
}

/* Instance i into t: a string (a pair's first tab splits it), [a, b], or for QA an object with
 * "question" and "context". TS_OK or the error (ts_set_error). */
static ts_status decode_instance(const serve_sig *sig, const cJSON *e, int i, serve_texts *t) {
    const char *a = NULL, *b = NULL;
    if (sig->qa) {
        const cJSON *q = cJSON_GetObjectItemCaseSensitive(e, "question");
        const cJSON *c = cJSON_GetObjectItemCaseSensitive(e, "context");
        if (!cJSON_IsString(q) || !cJSON_IsString(c))
            return ts_set_error(
                TS_ERR_ARG, "instance %d: a question-answering model wants {\"question\": ..., \"context\": ...}", i);
        a = q->valuestring, b = c->valuestring;
    } else if (cJSON_IsString(e)) {
        a = e->valuestring;
    } else if (sig->pairs && cJSON_IsArray(e) && cJSON_GetArraySize(e) == 2 && cJSON_IsString(e->child) &&
               cJSON_IsString(e->child->next)) {
        a = e->child->valuestring, b = e->child->next->valuestring;
    } else {
        return ts_set_error(TS_ERR_ARG, "instance %d: want a string%s", i,
                            sig->pairs ? " or a pair [text, text_b]" : "");
    }
    const char *tab = sig->pairs && !b ? strchr(a, '\t') : NULL;
    if (sig->pairs && !b && !tab)
        return ts_set_error(TS_ERR_ARG,
                            "instance %d: the model classifies text pairs: give [text, text_b] or text<TAB>text_b", i);
    t->text[i] = tab ? strndup(a, (size_t)(tab - a)) : strdup(a);
    if (tab) b = tab + 1;
    if (b) t->text_b[i] = strdup(b);
    if (!t->text[i] || (b && !t->text_b[i])) return ts_set_error(TS_ERR_NOMEM, "out of memory");
    return TS_OK;
}

ts_status serve_decode_texts(const serve_sig *sig, const char *body, size_t len, serve_texts *out) {
    memset(out, 0, sizeof *out);
    cJSON *root = serve_json_object(body, len);
    ts_status rc = TS_OK;
    const cJSON *inst = root ? cJSON_GetObjectItemCaseSensitive(root, "instances") : NULL;
    if (!root) {
        rc = TS_ERR_ARG;
    } else if (!cJSON_IsArray(inst) || !inst->child) {
        rc = ts_set_error(TS_ERR_ARG, "no \"instances\" array (of one or more texts)");
    } else {
        int n = cJSON_GetArraySize(inst);
        if (!sig->qa && n > sig->max_batch)
            rc = ts_set_error(TS_ERR_ARG, "%d instances: more than the server's max batch %d", n, sig->max_batch);
        else if (!(out->text = calloc((size_t)n, sizeof *out->text)) ||
                 !(out->text_b = calloc((size_t)n, sizeof *out->text_b)))
            rc = ts_set_error(TS_ERR_NOMEM, "out of memory");
        else
            out->n = n;
        int i = 0;
        for (const cJSON *e = inst->child; e && !rc; e = e->next, i++) rc = decode_instance(sig, e, i, out);
    }
    cJSON_Delete(root);
    if (rc) serve_texts_free(out);
    return rc;
}
