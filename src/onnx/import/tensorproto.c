/*
 * tensorproto.c — ONNX data types and TensorProto decoding: which ONNX element types have a
 * tessera dtype, and a TensorProto (initializer, Constant value, attribute tensor) read into a
 * host tensor from raw_data or from its typed repeated field.
 *
 * Types: FLOAT, FLOAT16, BFLOAT16, INT32, INT64, UINT8 map to the dtype of the same name; BOOL
 * to u8 (0 / 1). INT8 tensors (initializers, Constant values: a QDQ model's quantized weights and
 * zero points) are decoded into f32 holding their integers exactly; the importer marks such a
 * value (onnx_val.i8) and only the quantization ops take it; INT8 graph inputs stay refused.
 * DOUBLE, the other integer widths, STRING and complex types are refused: tessera
 * has no such dtype, and narrowing a DOUBLE to f32 silently would change results. Tensors with
 * external data (data_location EXTERNAL) are refused, naming the tensor.
 */
#include "onnx/onnx_imp.h"

#include <stdio.h>

enum { /* TensorProto.DataType */
    T_UNDEFINED = 0, T_FLOAT = 1, T_UINT8 = 2, T_INT8 = 3, T_UINT16 = 4, T_INT16 = 5, T_INT32 = 6,
    T_INT64 = 7, T_STRING = 8, T_BOOL = 9, T_FLOAT16 = 10, T_DOUBLE = 11, T_UINT32 = 12, T_UINT64 = 13,
    T_COMPLEX64 = 14, T_COMPLEX128 = 15, T_BFLOAT16 = 16,
};

int onnx_dtype(int32_t t, ts_dtype *out) {
    ts_dtype d;
    switch (t) {
    case T_FLOAT: d = TS_F32; break;
    case T_FLOAT16: d = TS_F16; break;
    case T_BFLOAT16: d = TS_BF16; break;
    case T_INT32: d = TS_I32; break;
    case T_INT64: d = TS_I64; break;
    case T_UINT8:
    case T_BOOL: d = TS_U8; break;
    default: return 0;
    }
    if (out) *out = d;
    return 1;
}

int32_t onnx_type_of(ts_dtype t) {
    switch (t) {
    case TS_F32: return T_FLOAT;
    case TS_F16: return T_FLOAT16;
    case TS_BF16: return T_BFLOAT16;
    case TS_I32: return T_INT32;
    case TS_I64: return T_INT64;
    case TS_U8: return T_UINT8;
    default: return T_UNDEFINED;
    }
}

const char *onnx_type_name(int32_t t) {
    static const char *const names[] = {"UNDEFINED", "FLOAT", "UINT8", "INT8", "UINT16", "INT16",
                                        "INT32", "INT64", "STRING", "BOOL", "FLOAT16", "DOUBLE",
                                        "UINT32", "UINT64", "COMPLEX64", "COMPLEX128", "BFLOAT16"};
    static _Thread_local char buf[32];
    if (t >= 0 && t < (int32_t)(sizeof names / sizeof *names)) return names[t];
    snprintf(buf, sizeof buf, "type %d", (int)t);
    return buf;
}

/* Bytes one element takes in raw_data (0 for types without a fixed size). */
static size_t raw_size(int32_t t) {
    switch (t) {
    case T_FLOAT: case T_INT32: case T_UINT32: return 4;
    case T_INT64: case T_UINT64: case T_DOUBLE: return 8;
    case T_FLOAT16: case T_BFLOAT16: case T_INT16: case T_UINT16: return 2;
    case T_UINT8: case T_INT8: case T_BOOL: return 1;
    default: return 0;
    }
}

ts_tensor *onnx_tensor_decode(const Onnx__TensorProto *t, char *err, size_t cap) {
    const char *name = t->name && *t->name ? t->name : "(unnamed)";
    int32_t type = t->has_data_type ? t->data_type : T_UNDEFINED;
    ts_dtype dt;
    if (t->has_data_location && t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL) {
        snprintf(err, cap, "tensor '%s' keeps its data in an external file, which tessera does not read", name);
        return NULL;
    }
    if (t->segment) {
        snprintf(err, cap, "tensor '%s' is a segment of a larger tensor, which tessera does not read", name);
        return NULL;
    }
    if (type == T_INT8) dt = TS_F32;
    else if (!onnx_dtype(type, &dt)) {
        snprintf(err, cap, "tensor '%s' has element type %s, which tessera has no dtype for", name,
                 onnx_type_name(type));
        return NULL;
    }
    if (t->n_dims > TS_MAX_DIMS) {
        snprintf(err, cap, "tensor '%s' has rank %zu; tessera takes at most %d dims", name, t->n_dims, TS_MAX_DIMS);
        return NULL;
    }
    int64_t shape[TS_MAX_DIMS], numel = 1;
    for (size_t i = 0; i < t->n_dims; i++) {
        shape[i] = t->dims[i];
        if (shape[i] < 0 || (shape[i] > 0 && numel > INT64_MAX / shape[i])) {
            snprintf(err, cap, "tensor '%s' has dim %zu = %lld", name, i, (long long)shape[i]);
            return NULL;
        }
        numel *= shape[i];
    }
    size_t esz = raw_size(type);
    /* where the elements are: raw bytes, or one typed field; its length must equal numel */
    size_t have;
    const char *field;
    if (t->has_raw_data) {
        have = t->raw_data.len / esz;
        field = "raw_data";
        if (t->raw_data.len % esz) have = (size_t)-1;
    } else if (type == T_FLOAT) {
        have = t->n_float_data, field = "float_data";
    } else if (type == T_INT64) {
        have = t->n_int64_data, field = "int64_data";
    } else {
        have = t->n_int32_data, field = "int32_data";
    }
    if (have != (uint64_t)numel) {
        snprintf(err, cap, "tensor '%s' has %lld elements by its dims but %s holds %s%zu", name,
                 (long long)numel, field, have == (size_t)-1 ? "a partial element after " : "",
                 have == (size_t)-1 ? t->raw_data.len / esz : have);
        return NULL;
    }
    ts_tensor *out = ts_tensor_new(dt, (int)t->n_dims, shape);
    if (!out) {
        snprintf(err, cap, "tensor '%s': %s", name, ts_last_error());
        return NULL;
    }
    void *d = out->data;
    if (type == T_INT8) {
        for (int64_t i = 0; i < numel; i++)
            ((float *)d)[i] = t->has_raw_data ? (float)(int8_t)t->raw_data.data[i] : (float)(int8_t)t->int32_data[i];
        return out;
    }
    if (t->has_raw_data) { /* little-endian, as this host; BOOL bytes normalised to 0 / 1 */
        if (numel) memcpy(d, t->raw_data.data, (size_t)numel * esz);
        if (type == T_BOOL)
            for (int64_t i = 0; i < numel; i++) ((uint8_t *)d)[i] = ((uint8_t *)d)[i] != 0;
        return out;
    }
    for (int64_t i = 0; i < numel; i++) {
        switch (type) {
        case T_FLOAT: ((float *)d)[i] = t->float_data[i]; break;
        case T_INT64: ((int64_t *)d)[i] = t->int64_data[i]; break;
        case T_INT32: ((int32_t *)d)[i] = t->int32_data[i]; break;
        case T_FLOAT16:
        case T_BFLOAT16: ((uint16_t *)d)[i] = (uint16_t)t->int32_data[i]; break;
        case T_BOOL: ((uint8_t *)d)[i] = t->int32_data[i] != 0; break;
        default: ((uint8_t *)d)[i] = (uint8_t)t->int32_data[i]; break; /* UINT8 */
        }
    }
    return out;
}

ts_tensor *ts_onnx_tensor_file(const char *path, char *name, size_t cap) {
    if (name && cap) name[0] = 0;
    size_t len = 0; /* read it all: test tensors are small, and a pipe has no size */
    uint8_t *buf = (uint8_t *)ts_read_file_max(path, (size_t)1 << 31, &len);
    if (!buf) return NULL;
    Onnx__TensorProto *tp = onnx__tensor_proto__unpack(NULL, len, buf);
    free(buf);
    if (!tp) {
        ts_err(TS_ERR_IO, "%s: not a serialized ONNX TensorProto", path);
        return NULL;
    }
    char err[512];
    ts_tensor *t = onnx_tensor_decode(tp, err, sizeof err);
    if (!t) ts_err(TS_ERR_UNSUPPORTED, "%s: %s", path, err);
    if (t && name && cap) snprintf(name, cap, "%s", tp->name ? tp->name : "");
    onnx__tensor_proto__free_unpacked(tp, NULL);
    return t;
}
