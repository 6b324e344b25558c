# _abi.py — the integer constants of the C API (include/tessera*.h) that the package passes to or
# reads from libtessera, named as in C: status codes, dtypes, ops' sub-functions and modes,
# initializers, optimizers, schedules, load flags, BERT heads. Every other module uses these
# names, never the numbers. tests/test_python_abi.py checks each value against the headers (the
# table tools/gen_abi_layout.c writes at build time), so a name here must be one the C tool lists.

# tessera_types.h
TS_MAX_DIMS = 8

TS_OK = 0
TS_ERR_ARG = 1
TS_ERR_SHAPE = 2
TS_ERR_DTYPE = 3
TS_ERR_NOT_FOUND = 4
TS_ERR_IO = 5
TS_ERR_NOMEM = 6
TS_ERR_UNSUPPORTED = 7
TS_ERR_RUNTIME = 8
TS_ERR_COMM = 9

TS_F32 = 0
TS_BF16 = 1
TS_F16 = 2
TS_I32 = 3
TS_I64 = 4
TS_U8 = 5

TS_MATH_ABS = 0
TS_MATH_NEG = 1
TS_MATH_FLOOR = 2
TS_MATH_CEIL = 3
TS_MATH_ROUND = 4
TS_MATH_SIGN = 5
TS_MATH_RECIPROCAL = 6
TS_MATH_SIN = 7
TS_MATH_COS = 8
TS_MATH_TAN = 9
TS_MATH_ASIN = 10
TS_MATH_ACOS = 11
TS_MATH_ATAN = 12
TS_MATH_SINH = 13
TS_MATH_COSH = 14
TS_MATH_ASINH = 15
TS_MATH_ACOSH = 16
TS_MATH_ATANH = 17
TS_MATH_ERF = 18
TS_MATH_SOFTPLUS = 19
TS_MATH_SOFTSIGN = 20
TS_MATH_ELU = 21
TS_MATH_SELU = 22
TS_MATH_CELU = 23
TS_MATH_LEAKY_RELU = 24
TS_MATH_THRESHOLDED_RELU = 25
TS_MATH_SHRINK = 26

TS_BIN_EQUAL = 0
TS_BIN_LESS = 1
TS_BIN_LESS_EQUAL = 2
TS_BIN_GREATER = 3
TS_BIN_GREATER_EQUAL = 4
TS_BIN_AND = 5
TS_BIN_OR = 6
TS_BIN_XOR = 7
TS_BIN_MIN = 8
TS_BIN_MAX = 9
TS_BIN_MOD = 10
TS_BIN_FMOD = 11

TS_REDUCE_NONE = 0
TS_REDUCE_SUM = 1
TS_REDUCE_MEAN = 2

TS_PAD_CONSTANT = 0
TS_PAD_REFLECT = 1
TS_PAD_EDGE = 2

TS_RESIZE_NEAREST = 0
TS_RESIZE_LINEAR = 1
TS_COORD_HALF_PIXEL = 0
TS_ROUND_PREFER_FLOOR = 0

TS_LR_CONSTANT = 0
TS_LR_LINEAR = 1
TS_LR_COSINE = 2
TS_LR_POLYNOMIAL = 3

# tessera_core.h
TS_NONE = -1  # no value (ts_value), e.g. an op's optional input left out

TS_INIT_ZEROS = 0
TS_INIT_ONES = 1
TS_INIT_CONST = 2
TS_INIT_UNIFORM = 3
TS_INIT_NORMAL = 4

# tessera_train.h
TS_OPTIM_SGD = 0
TS_OPTIM_ADAMW = 1
TS_OPTIM_LAMB = 2

# tessera_checkpoint.h: ts_program_load's flags
TS_LOAD_STRICT = 1
TS_LOAD_ALLOW_NONFINITE = 2

# tessera_text.h
TS_IGNORE_INDEX = -100

# tessera_bert.h
TS_BERT_SEQ_CLASSIFICATION = 3
TS_BERT_QUESTION_ANSWERING = 4
TS_TRUNC_HEAD = 0

# tessera_tasks.h: answer decoding, as run_squad
TS_SQUAD_N_BEST = 20
TS_SQUAD_MAX_ANSWER_LEN = 30

# tessera_tasks.h: ts_finetune_run's tasks (ts_finetune_kind)
TS_FINETUNE_AUTO = 0
TS_FINETUNE_CLASSIFY = 1
TS_FINETUNE_QA = 2

STATUS_NAMES = {v: k for k, v in globals().items() if k == "TS_OK" or k.startswith("TS_ERR_")}
