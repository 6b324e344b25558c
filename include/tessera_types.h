/*
 * tessera_types.h — the few types that the public API and the device ABI share, and nothing that
 * needs linking: the status codes, the dtypes, the largest rank, the export macro. Included by
 * tessera_core.h (the public API) and by tessera_plugin.h (what a plugin sees), so a plugin gets
 * these without the library's function declarations.
 */
#ifndef TESSERA_TYPES_H
#define TESSERA_TYPES_H

/* Marks a declaration as part of the shared library's ABI: the library is built with
 * -fvisibility=hidden, so only what carries TS_API is exported (tests/test_exports.sh checks that
 * libtessera.so exports exactly what the headers declare so). */
#define TS_API __attribute__((visibility("default")))

#define TS_MAX_DIMS 8

/* What every call that can fail returns; the message is the thread's last error (ts_last_error
 * in the library, host->error in a plugin). */
typedef enum ts_status {
    TS_OK = 0,
    TS_ERR_ARG,         /* a bad argument: NULL handle, bad axis, bad option */
    TS_ERR_SHAPE,       /* shapes do not agree */
    TS_ERR_DTYPE,       /* a dtype the op does not accept */
    TS_ERR_NOT_FOUND,   /* unknown name: feed, fetch, parameter, device */
    TS_ERR_IO,          /* a file could not be read or written, or is malformed */
    TS_ERR_NOMEM,       /* allocation failed */
    TS_ERR_UNSUPPORTED, /* valid request that this build or device cannot do */
    TS_ERR_RUNTIME,     /* a kernel found bad data at run time (e.g. an index out of range) */
    TS_ERR_COMM,        /* a collective between ranks failed or timed out (a rank died or hung) */
} ts_status;

typedef enum ts_dtype {
    TS_F32 = 0,
    TS_BF16,
    TS_F16,
    TS_I32,
    TS_I64,
    TS_U8, /* bytes, and booleans (0 / 1) for ts_where */
    TS_DTYPE_COUNT
} ts_dtype;

/* The sub-functions and modes of ops, as nodes of a plan carry them in their attributes: the op
 * contract (tessera_ops.h) fixes these numbers, and the graph builder (tessera_graph_ops.h, the
 * learning-rate schedule of tessera_train.h) takes them as arguments. */
typedef enum ts_math_fn {
    TS_MATH_ABS = 0, TS_MATH_NEG, TS_MATH_FLOOR, TS_MATH_CEIL,
    TS_MATH_ROUND,            /* to the nearest integer, halves to even */
    TS_MATH_SIGN,             /* -1, 0 or 1 */
    TS_MATH_RECIPROCAL,       /* 1 / x */
    TS_MATH_SIN, TS_MATH_COS, TS_MATH_TAN, TS_MATH_ASIN, TS_MATH_ACOS, TS_MATH_ATAN,
    TS_MATH_SINH, TS_MATH_COSH, TS_MATH_ASINH, TS_MATH_ACOSH, TS_MATH_ATANH, TS_MATH_ERF,
    TS_MATH_SOFTPLUS,         /* log(1 + e^x) */
    TS_MATH_SOFTSIGN,         /* x / (1 + |x|) */
    TS_MATH_ELU,              /* x > 0 ? x : alpha (e^x - 1) */
    TS_MATH_SELU,             /* beta (x > 0 ? x : alpha (e^x - 1)); ONNX: alpha 1.67326, gamma = beta 1.0507 */
    TS_MATH_CELU,             /* max(0, x) + min(0, alpha (e^(x / alpha) - 1)), alpha != 0 */
    TS_MATH_LEAKY_RELU,       /* x < 0 ? alpha x : x */
    TS_MATH_THRESHOLDED_RELU, /* x > alpha ? x : 0 */
    TS_MATH_SHRINK,           /* x < -alpha ? x + beta : x > alpha ? x - beta : 0 (ONNX lambd, bias) */
    TS_MATH_COUNT
} ts_math_fn;
/* ts_attention's layouts (tessera_graph_ops.h): where heads and positions sit in q, k, v, y. */
typedef enum ts_attn_layout { TS_ATTN_BHTD = 0, TS_ATTN_BTHD = 1 } ts_attn_layout;
typedef enum ts_binop {
    TS_BIN_EQUAL = 0, TS_BIN_LESS, TS_BIN_LESS_EQUAL, TS_BIN_GREATER, TS_BIN_GREATER_EQUAL, /* -> u8 0 / 1 */
    TS_BIN_AND, TS_BIN_OR, TS_BIN_XOR, /* u8 operands (non-zero is true) -> u8 0 / 1 */
    TS_BIN_MIN, TS_BIN_MAX,            /* NaN if either is NaN; f32 differentiable (ties: a) */
    TS_BIN_MOD,                        /* a - b floor(a / b), the sign of b (Python's %) */
    TS_BIN_FMOD,                       /* a - b trunc(a / b), the sign of a (C's fmod and %) */
    TS_BIN_ADD, TS_BIN_SUB, TS_BIN_MUL, /* f32: ts_add, ts_sub, ts_mul */
    TS_BIN_DIV,                        /* f32: ts_div; integers: truncated toward zero */
    TS_BIN_SHL, TS_BIN_SHR,            /* integers (logical shifts; a shift >= the width gives 0) */
    TS_BIN_COUNT
} ts_binop;
typedef enum ts_scatter_reduce { TS_SCATTER_NONE = 0, TS_SCATTER_ADD, TS_SCATTER_MUL } ts_scatter_reduce;
typedef enum ts_reduction { TS_REDUCE_NONE = 0, TS_REDUCE_SUM, TS_REDUCE_MEAN } ts_reduction;
typedef enum ts_pad_mode { TS_PAD_CONSTANT = 0, TS_PAD_REFLECT, TS_PAD_EDGE } ts_pad_mode;
typedef enum ts_grid_mode { TS_GRID_BILINEAR = 0, TS_GRID_NEAREST, TS_GRID_BICUBIC } ts_grid_mode;
typedef enum ts_grid_padding { TS_GRID_ZEROS = 0, TS_GRID_BORDER, TS_GRID_REFLECTION } ts_grid_padding;
typedef enum ts_tfidf_mode { TS_TFIDF_TF = 0, TS_TFIDF_IDF, TS_TFIDF_TFIDF } ts_tfidf_mode;
typedef enum ts_resize_mode { TS_RESIZE_NEAREST = 0, TS_RESIZE_LINEAR } ts_resize_mode;
typedef enum ts_resize_coord {
    TS_COORD_HALF_PIXEL = 0, TS_COORD_ASYMMETRIC, TS_COORD_ALIGN_CORNERS, TS_COORD_PYTORCH_HALF_PIXEL
} ts_resize_coord;
typedef enum ts_resize_round {
    TS_ROUND_PREFER_FLOOR = 0, TS_ROUND_PREFER_CEIL, TS_ROUND_FLOOR, TS_ROUND_CEIL
} ts_resize_round;
typedef enum ts_lr_kind { TS_LR_CONSTANT = 0, TS_LR_LINEAR, TS_LR_COSINE, TS_LR_POLYNOMIAL } ts_lr_kind;

#endif /* TESSERA_TYPES_H */
