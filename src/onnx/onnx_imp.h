/*
 * onnx_imp.h — the importer's internal interface: what the core (import/: load.c, import.c, ctx.c,
 * attrs.c, fold.c) offers the op-mapping families (map/<family>.c) and what they give back.
 *
 * A family file exports a table of ts_onnx_op entries {op type, opsets, import function}; the
 * registry (map/registry.c) reads the families' tables as one list in which each op type appears
 * once, and for each node the importer takes the entry whose op type matches, when its opset range
 * holds the model's opset. An import function reads its node through the helpers below and either
 *  - sets every output: a graph value (onnx_set) or, when it could compute the result at import
 *    time (constant folding of shape arithmetic), a host tensor (onnx_set_known); or
 *  - refuses the node with onnx_unsupported() (a valid node this importer cannot take: an
 *    attribute value, a dtype, a dynamic shape) or onnx_invalid() (a node that breaks the ONNX
 *    spec), which record "node 'NAME' (OpType): ..." and return an error status. The importer
 *    goes on with the next nodes (those that read a refused node's outputs are skipped silently)
 *    and fails once at the end, listing every refusal.
 * Builder calls that fail record an error in the graph; onnx_check turns it into the node's
 * refusal and clears it, so one node's failure does not stop the import of the others.
 * Attributes: every attribute a node carries must be read through a getter (onnx_attr_*); one
 * left unread after the import function returns refuses the node ("attribute 'x' is not
 * supported"), so an unhandled attribute can never be silently ignored.
 */
#ifndef TS_ONNX_IMP_H
#define TS_ONNX_IMP_H

#include "core/core.h"
#include "graph/ir.h"
#include "onnx.pb-c.h"
#include "onnx/onnx_testing.h"

#define TS_ONNX_MIN_OPSET 9
#define TS_ONNX_MAX_OPSET 17

typedef Onnx__NodeProto ts_onnx_node;
typedef struct ts_onnx_ctx ts_onnx_ctx;

/* ------------------------------------------------------------------ op tables */

/* Import one node: TS_OK after setting its outputs, else the status onnx_unsupported /
 * onnx_invalid / onnx_check returned. */
typedef ts_status (*ts_onnx_import_fn)(ts_onnx_ctx *cx, const ts_onnx_node *n);

typedef struct ts_onnx_op {
    const char *op_type;  /* "Conv" */
    int since, until;     /* the ai.onnx opsets this entry covers, inclusive (within 9..17) */
    ts_onnx_import_fn import;
} ts_onnx_op;

/* The inputs ONNX requires of op_type at opset (arity.c): the importer refuses a node that lacks
 * one (as invalid) before any mapping sees it, so mappings may read inputs 0 .. n - 1 without
 * checking onnx_has_in; 0 for an op it does not list. */
int onnx_required_inputs(const char *op_type, int opset);
/* The entry for op_type at opset, or NULL (map/registry.c). */
const ts_onnx_op *onnx_find_op(const char *op_type, int opset);
/* 1 when the registry has op_type, at any opset. */
int onnx_known_op_type(const char *op_type);

/* ------------------------------------------------------------------ the model (load.c) */

struct ts_onnx {
    Onnx__ModelProto *model;  /* protobuf-c's unpacked message */
    char *what;               /* the file name (or the bytes' name) for messages */
    int opset;
    int ninputs;              /* graph inputs that are not initializers */
    const Onnx__ValueInfoProto **inputs;
    ts_dtype *in_dtype;
    int *in_ndim;
    int64_t (*in_shape)[TS_MAX_DIMS];
    int noutputs;
    const Onnx__ValueInfoProto **outputs;
    size_t nbytes;            /* the serialized model's size: bounds what folding may make */
};

/* 1 when the serialized model's graphs / attributes / types nest at most 64 levels deep (a
 * bound protobuf-c's recursive parser lacks), checked on the raw bytes (nesting.c). */
int onnx_nesting_ok(const void *data, size_t n);
/* ONNX TensorProto.DataType -> tessera dtype: 1 and *out, or 0 for a type tessera has no dtype
 * for (DOUBLE, STRING, the unsigned and 8/16-bit integers other than UINT8, complex, ...).
 * BOOL becomes TS_U8 (0 / 1). */
int onnx_dtype(int32_t onnx_type, ts_dtype *out);
/* The ONNX type's name ("FLOAT", "INT64", "DOUBLE", "type 99"), in a static buffer per call site
 * (valid until the next call on this thread). */
const char *onnx_type_name(int32_t onnx_type);
/* ts_dtype -> ONNX data type (the inverse of onnx_dtype; U8 -> UINT8). */
int32_t onnx_type_of(ts_dtype t);
/* Decode a TensorProto (raw_data or the typed fields) into a new host tensor. NULL with a
 * message in err naming the tensor and the problem (unsupported type, external data, a size
 * that does not match the dims). */
ts_tensor *onnx_tensor_decode(const Onnx__TensorProto *t, char *err, size_t cap);
/* The graph's initializer called name, or NULL (import.c). */
const Onnx__TensorProto *onnx_initializer(const ts_onnx *m, const char *name);

/* ------------------------------------------------------------------ the import context */

/* One ONNX value name's state during import. */
typedef struct onnx_val {
    ts_value v;          /* its graph value, TS_NONE until one is made */
    ts_tensor *known;    /* its value when known at import time (owned), else NULL */
    int init;            /* an initializer: known holds its data */
    int param;           /* an initializer made a trainable parameter: known holds its data
                            but onnx_known does not return it (it changes in training) */
    int dead;            /* produced by a refused node */
    int i8;              /* an INT8 value, held as f32 integers in -128..127 (an INT8 initializer,
                            or QuantizeLinear with an INT8 zero point): INT8 has no tessera dtype,
                            and the 8-bit quantization ops compose in f32 (map/quant.c) */
    int producer;        /* index of the node that produced it, -1 for inputs / initializers */
    int consumers;       /* how many node inputs and graph outputs read it */
} onnx_val;

struct ts_onnx_ctx {
    ts_graph *g;
    const ts_onnx *m;
    int opset;
    int trainable;                 /* float initializers become parameters */
    const char *const *frozen;
    int nfrozen;
    /* names -> onnx_val (open addressing over a power-of-two table) */
    char **names;
    onnx_val *vals;
    int nvals, cap;
    int *slots;
    int nslots;
    /* the node being imported */
    const ts_onnx_node *node;
    int node_index;
    uint64_t attr_read;            /* bit a: attribute a was read */
    int node_refused;
    int *wanted;                   /* NULL, or per graph input: 1 when a refused node read it (a value
                                      the import may need known: a shape, axes, scales) */
    int graph_failed;              /* a builder call failed: the graph takes no more nodes */
    /* refusals so far: count and the "; "-joined messages */
    int nerrors;
    ts_status first_code;
    char *errors;
    size_t errlen, errcap;
    /* strings and tensors handed to import functions (freed with the context) */
    void **owned;
    int nowned, capowned;
    ts_tensor **owned_t;
    int nowned_t, capowned_t;
    /* Out of memory: an allocation of the context (a name, a table, a message, an owned string or
     * tensor) or of a node's mapping failed. Sticky: the import stops taking nodes and fails with
     * TS_ERR_NOMEM. onnx_define then returns `sink`, a dead value of no name, so that its callers
     * need no check. */
    int nomem;
    onnx_val sink;
};

/* For the core (ctx.c, attrs.c, import.c): the value of a name (NULL if none yet) / made on
 * first use (out of memory: cx->sink, never NULL); its graph value (see onnx_in); memory and
 * tensors freed with the context (onnx_own: NULL, with p freed and the context out of memory,
 * when p is NULL or cannot be kept); a refusal message recorded (one of TS_ERR_NOMEM marks the
 * context out of memory); the context out of memory (onnx_nomem); the context freed. */
onnx_val *onnx_lookup(ts_onnx_ctx *cx, const char *name);
onnx_val *onnx_define(ts_onnx_ctx *cx, const char *name);
ts_value onnx_graph_value(ts_onnx_ctx *cx, onnx_val *v, const char *name);
void *onnx_own(ts_onnx_ctx *cx, void *p);
const ts_tensor *onnx_own_tensor(ts_onnx_ctx *cx, ts_tensor *t);
void onnx_record(ts_onnx_ctx *cx, ts_status code, const char *msg);
void onnx_nomem(ts_onnx_ctx *cx);
void onnx_ctx_free(ts_onnx_ctx *cx);
/* Fold node n on the host when every input is known and its op is one of those shape
 * arithmetic uses that fold_ops.c lists (Equal, Not, Floor, Min, ReduceProd, ...): 1 with the
 * outcome in *st, or 0 when it is not such a node (fold_ops.c). */
int onnx_fold_node(ts_onnx_ctx *cx, const ts_onnx_node *n, ts_status *st);
/* The first attribute of n that its mapping never read, or NULL (attrs.c). */
const char *onnx_attr_unread(const ts_onnx_ctx *cx, const ts_onnx_node *n);

/* Import the nodes of an If's branch (a subgraph without inputs whose nodes read values of the
 * enclosing graphs by name) into the context, as nodes of the main graph are: their outputs join
 * the context's names; a refused node is recorded and its outputs are dead. The node being
 * imported (the If) is the current node again on return. TS_OK, or an error once a builder
 * failure stopped the graph (import.c). */
ts_status onnx_import_branch(ts_onnx_ctx *cx, const Onnx__GraphProto *b);

/* Node index i of the graph (for import functions that look at a producer). */
const ts_onnx_node *onnx_node_at(const ts_onnx_ctx *cx, int i);
/* "node 'NAME' (OpType)" or, for a node without a name, "node #I (OpType, output 'Y')" (a node of
 * an If's branch, index -1: "node (OpType, output 'Y')"). */
const char *onnx_node_desc(const ts_onnx_node *n, int index, char *buf, size_t cap);

/* ------------------------------------------------------------------ refusing a node */

/* Record "node 'NAME' (OpType): <message>" as unsupported (TS_ERR_UNSUPPORTED returned). */
ts_status onnx_unsupported(ts_onnx_ctx *cx, const ts_onnx_node *n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The same for a node that breaks the ONNX spec (TS_ERR_IO: a malformed model). */
ts_status onnx_invalid(ts_onnx_ctx *cx, const ts_onnx_node *n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* After a builder call returned TS_NONE: the graph's error recorded as this node's refusal (its
 * status code returned) and the graph's sticky error cleared, so the import goes on (a failed
 * builder call adds nothing). onnx_set(cx, n, k, TS_NONE) does this too. Use as
 *   ts_value y = ts_relu(cx->g, x); if (y == TS_NONE) return onnx_check(cx, n);
 * Refusals with codes other than TS_ERR_UNSUPPORTED count as import failures in the conformance
 * test: check what tessera's ops cannot take first and refuse with onnx_unsupported. */
ts_status onnx_check(ts_onnx_ctx *cx, const ts_onnx_node *n);
/* Clear a graph's recorded builder error (ctx.c; for the core). */
void onnx_graph_recover(ts_graph *g);

/* ------------------------------------------------------------------ inputs */

/* Number of inputs the node lists (empty names included). */
int onnx_nin(const ts_onnx_node *n);
/* 1 when input k is present (listed with a non-empty name): 0 for an absent optional input. */
int onnx_has_in(const ts_onnx_node *n, int k);
/* Input k as a graph value: a known host tensor is materialised once as a ts_constant; an
 * initializer made trainable is its ts_param. TS_NONE when absent. */
ts_value onnx_in(ts_onnx_ctx *cx, const ts_onnx_node *n, int k);
/* Input k's value when known at import time (an initializer kept constant, a Constant node, a
 * folded result), else NULL (absent, or computed by the graph). Owned by the context. */
const ts_tensor *onnx_known(ts_onnx_ctx *cx, const ts_onnx_node *n, int k);
/* As onnx_known, but also the data of an initializer made a trainable parameter: for inputs
 * that are buffers rather than weights (BatchNormalization's running mean and variance). */
const ts_tensor *onnx_known_buffer(ts_onnx_ctx *cx, const ts_onnx_node *n, int k);
/* 1 when every present input is known (a node to fold on the host). */
int onnx_all_known(ts_onnx_ctx *cx, const ts_onnx_node *n);
/* dtype and shape of input k (known or graph); returns its rank, -1 when absent. */
int onnx_in_shape(ts_onnx_ctx *cx, const ts_onnx_node *n, int k, int64_t shape[TS_MAX_DIMS]);
ts_dtype onnx_in_dtype(ts_onnx_ctx *cx, const ts_onnx_node *n, int k);
/* How many node inputs and graph outputs read input k's value (for fusions that need a single
 * consumer), and the index of the node that produced it (-1: a graph input or initializer). */
int onnx_in_consumers(ts_onnx_ctx *cx, const ts_onnx_node *n, int k);
int onnx_in_producer(ts_onnx_ctx *cx, const ts_onnx_node *n, int k);
/* Refuse unless input k has one of the dtypes in `ok` (nok of them), naming the op's need
 * (e.g. "f32"): TS_OK or onnx_unsupported's status. */
ts_status onnx_need_dtype(ts_onnx_ctx *cx, const ts_onnx_node *n, int k, const ts_dtype *ok, int nok);
/* onnx_need_dtype for f32 on every present input in [first, last]. */
ts_status onnx_need_f32(ts_onnx_ctx *cx, const ts_onnx_node *n, int first, int last);
/* Input k, which must be known (shapes, axes, pads given as tensors), as int64 values: the
 * count, or -1 after refusing the node (not known, not an integer tensor, more than cap). */
int onnx_known_ints(ts_onnx_ctx *cx, const ts_onnx_node *n, int k, int64_t *out, int cap, const char *what);
/* Input k, which must be a known float/integer tensor of one element, as a double (1), or 0
 * after refusing the node. */
int onnx_known_scalar(ts_onnx_ctx *cx, const ts_onnx_node *n, int k, double *out, const char *what);

/* ------------------------------------------------------------------ outputs */

int onnx_nout(const ts_onnx_node *n);
/* 1 when output k is wanted (listed with a non-empty name). */
int onnx_has_out(const ts_onnx_node *n, int k);
/* Set output k to graph value v; v == TS_NONE is onnx_check's case (a builder call failed).
 * An absent output is ignored. */
ts_status onnx_set(ts_onnx_ctx *cx, const ts_onnx_node *n, int k, ts_value v);
/* Set output k to a host tensor computed at import time (the context takes ownership; NULL is
 * out of memory, refused). */
ts_status onnx_set_known(ts_onnx_ctx *cx, const ts_onnx_node *n, int k, ts_tensor *t);
/* Before computing a result of this shape on the host: 1 when it is within what folding may
 * make for this model (the larger of 2^24 elements and the model's byte size), else 0 after
 * refusing the node. Call it before allocating a result whose size the inputs' values decide
 * (ConstantOfShape, Expand, Range, broadcasts, gathers). */
int onnx_fold_limit(ts_onnx_ctx *cx, const ts_onnx_node *n, int nd, const int64_t *shape);

/* ------------------------------------------------------------------ attributes
 * Getters mark the attribute read. A present attribute of the wrong type refuses the node
 * (onnx_invalid) and returns the default. */

/* 1 when the node carries attribute `name` (marks it read). */
int onnx_attr_has(ts_onnx_ctx *cx, const ts_onnx_node *n, const char *name);
int64_t onnx_attr_int(ts_onnx_ctx *cx, const ts_onnx_node *n, const char *name, int64_t def);
float onnx_attr_float(ts_onnx_ctx *cx, const ts_onnx_node *n, const char *name, float def);
/* The ints / floats into out (at most cap; more refuses the node): the count, or -1 when absent. */
int onnx_attr_ints(ts_onnx_ctx *cx, const ts_onnx_node *n, const char *name, int64_t *out, int cap);
int onnx_attr_floats(ts_onnx_ctx *cx, const ts_onnx_node *n, const char *name, float *out, int cap);
/* A string attribute as a NUL-terminated copy owned by the context, or def when absent. */
const char *onnx_attr_string(ts_onnx_ctx *cx, const ts_onnx_node *n, const char *name, const char *def);
/* A tensor attribute decoded (owned by the context), or NULL when absent or after refusing the
 * node (an undecodable tensor). */
const ts_tensor *onnx_attr_tensor(ts_onnx_ctx *cx, const ts_onnx_node *n, const char *name);
/* A graph attribute (an If's then_branch / else_branch), or NULL when absent or after refusing
 * the node (another type). */
const Onnx__GraphProto *onnx_attr_graph(ts_onnx_ctx *cx, const ts_onnx_node *n, const char *name);
/* Mark an attribute read without using it (one whose every value means the same here). */
void onnx_attr_ignore(ts_onnx_ctx *cx, const ts_onnx_node *n, const char *name);

/* ------------------------------------------------------------------ host arithmetic (fold.c)
 * What import functions use to compute nodes whose inputs are all known. Elements are read and
 * written through double (exact for f32 and for integers below 2^53) except where noted. */

/* Element i of t as a double / as an int64 (floats truncated toward zero). */
double onnx_get_f64(const ts_tensor *t, int64_t i);
int64_t onnx_get_i64(const ts_tensor *t, int64_t i);
/* Store v as element i of t in t's dtype (integers: truncated and wrapped as C converts). */
void onnx_put_f64(ts_tensor *t, int64_t i, double v);
void onnx_put_i64(ts_tensor *t, int64_t i, int64_t v);
/* A new tensor: t converted to dtype (ONNX Cast's rules: float -> int truncates). */
ts_tensor *onnx_host_cast(const ts_tensor *t, ts_dtype dtype);
/* A new rank-1 i64 tensor of n values / a rank-0 one. */
ts_tensor *onnx_host_ints(const int64_t *v, int n);
/* Binary elementwise with numpy broadcasting: out dtype `dt`, f(a_i, b_i) evaluated in int64
 * when both inputs are integer tensors, else in double. NULL when the shapes do not broadcast. */
typedef enum {
    ONNX_ADD, ONNX_SUB, ONNX_MUL, ONNX_DIV, ONNX_POW, ONNX_MOD, ONNX_FMOD, ONNX_MIN, ONNX_MAX,
    ONNX_EQUAL, ONNX_LESS, ONNX_GREATER, ONNX_LESS_EQ, ONNX_GREATER_EQ, ONNX_AND, ONNX_OR, ONNX_XOR,
} onnx_binop;
ts_tensor *onnx_host_binary(onnx_binop op, const ts_tensor *a, const ts_tensor *b, ts_dtype dt);
/* cond ? a : b with broadcasting (out dtype a's). */
ts_tensor *onnx_host_where(const ts_tensor *cond, const ts_tensor *a, const ts_tensor *b);
/* Permute axes / reshape (no copy semantics: new tensors). */
ts_tensor *onnx_host_transpose(const ts_tensor *t, const int *perm);
ts_tensor *onnx_host_reshape(const ts_tensor *t, int ndim, const int64_t *shape);
/* t[starts:ends:steps] over the listed axes (already normalised: 0 <= axis < ndim, starts /
 * ends clamped as ONNX Slice does, steps != 0). */
ts_tensor *onnx_host_slice(const ts_tensor *t, int naxes, const int *axes, const int64_t *starts,
                           const int64_t *ends, const int64_t *steps);
/* Concatenate along axis (same dtype, other dims equal). */
ts_tensor *onnx_host_concat(int n, const ts_tensor *const *ts, int axis);
/* Gather along axis with int64 indices already made non-negative and checked < dim. */
ts_tensor *onnx_host_gather(const ts_tensor *t, const ts_tensor *idx, int axis);
/* Broadcast t to shape. */
ts_tensor *onnx_host_expand(const ts_tensor *t, int ndim, const int64_t *shape);
/* Numpy broadcast of two shapes (ts_broadcast_shape), for callers that check before building. */
int onnx_bcast(int na, const int64_t *a, int nb, const int64_t *b, int64_t *out);

#endif
