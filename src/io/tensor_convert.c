/*
 * tensor_convert.c — a tensor converted to another dtype where no value changes meaning
 * (tessera_tasks.h): between float types, between integer types within range, booleans (u8)
 * from 0 / 1; as `tessera run` feeds stored tensors to an ONNX model's declared inputs.
 */
#include "core/core.h"

static int is_float(ts_dtype d) { return d == TS_F32 || d == TS_F16 || d == TS_BF16; }

static double get(const ts_tensor *t, int64_t i) {
    const void *p = ts_tensor_data((ts_tensor *)t);
    uint16_t h;
    float f;
    switch (ts_tensor_dtype(t)) {
    case TS_F32: return ((const float *)p)[i];
    case TS_F16: h = ((const uint16_t *)p)[i], ts_f16_to_f32(&h, &f, 1); return f;
    case TS_BF16: h = ((const uint16_t *)p)[i], ts_bf16_to_f32(&h, &f, 1); return f;
    case TS_I32: return ((const int32_t *)p)[i];
    case TS_I64: return (double)((const int64_t *)p)[i];
    default: return ((const uint8_t *)p)[i];
    }
}

ts_tensor *ts_tensor_convert_exact(ts_tensor *t, ts_dtype want) {
    ts_dtype have = ts_tensor_dtype(t);
    if (have == want) return t;
    if (is_float(want) != is_float(have)) {
        ts_set_error(TS_ERR_DTYPE, "is %s but the model's input is %s", ts_dtype_name(have), ts_dtype_name(want));
        return NULL;
    }
    ts_tensor *o = ts_tensor_new(want, ts_tensor_ndim(t), ts_tensor_shape(t));
    if (!o) return NULL;
    void *d = ts_tensor_data(o);
    int64_t n = ts_tensor_numel(t);
    double lo = want == TS_I32 ? -2147483648.0 : want == TS_U8 ? 0 : -9223372036854775808.0;
    double hi = want == TS_I32 ? 2147483647.0 : want == TS_U8 ? 255 : 9223372036854775807.0;
    for (int64_t i = 0; i < n; i++) {
        double v = get(t, i);
        if (!is_float(want) && (v < lo || v > hi)) {
            ts_set_error(TS_ERR_RUNTIME, "element %lld is %.0f, outside %s's range", (long long)i, v,
                         ts_dtype_name(want));
            ts_tensor_free(o);
            return NULL;
        }
        switch (want) {
        case TS_F32: ((float *)d)[i] = (float)v; break;
        case TS_F16: { float f = (float)v; ts_f32_to_f16(&f, (uint16_t *)d + i, 1); break; }
        case TS_BF16: { float f = (float)v; ts_f32_to_bf16(&f, (uint16_t *)d + i, 1); break; }
        case TS_I32: ((int32_t *)d)[i] = (int32_t)v; break;
        case TS_I64: ((int64_t *)d)[i] = ts_tensor_dtype(t) == TS_I64 ? ((const int64_t *)ts_tensor_data(t))[i] : (int64_t)v; break;
        default: ((uint8_t *)d)[i] = (uint8_t)v; break;
        }
    }
    return o;
}

