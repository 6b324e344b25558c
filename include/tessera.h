/*
 * tessera.h — the public API of libtessera, the core of tessera, a static-graph deep-learning
 * framework in C. This header includes every part of the core, one header per subject:
 *
 *   tessera_core.h       version, TS_API, status and errors, tensors, graphs, programs
 *   tessera_graph_ops.h  the graph builder's ops (the name tessera_ops.h is kept for the op
 *                        contract of backends, beside tessera_backend.h)
 *   tessera_train.h      backward pass, recomputation, stages, optimizers, schedules, training loop
 *   tessera_checkpoint.h safetensors, parameters and training checkpoints
 *   tessera_devices.h    replicas: the communicator between processes
 *   tessera_onnx.h       ONNX import, sessions, export
 *   tessera_support.h    for libraries built on the core: errors, struct versioning, files, clock
 *   tessera_backend.h    (not included here) backends from the host's side: loading plugins,
 *                        registering a table; it includes tessera_plugin.h, the device ABI,
 *                        which is all a plugin includes (with tessera_ops.h and tessera_types.h)
 *
 * The applications built on this API — BERT, text, images, audio, speech, OCR, the planner,
 * serving — are a second library, libtessera_apps, with its own header tessera_apps.h and no ABI
 * promise (apps/include/tessera_apps.h says what it does promise). Nothing here depends on it.
 *
 * The model of use, front to back:
 *
 *   ts_graph *g = ts_graph_new();
 *   ts_value x = ts_input(g, "x", TS_F32, 2, (int64_t[]){64, 784});
 *   ts_value w = ts_param(g, "fc.weight", TS_F32, 2, (int64_t[]){784, 10}, ts_init_normal(0.02f));
 *   ts_value y = ts_matmul(g, x, w, 0, 0);
 *   ...
 *   ts_backward(g, loss);                       // appends the backward pass to the same graph
 *   ts_sgd(g, ts_scalar(g, 0.1f), 0.9f, 0.0f);  // appends the optimizer update
 *   ts_program *p = ts_compile(g, &(ts_compile_opts){ .device = "cpu", .fetches = ... });
 *   ts_program_feed(p, "x", batch); ts_program_run(p); ts_program_fetch(p, "loss", &out);
 *
 * Conventions
 *  - Every handle is opaque. Every name has the ts_ prefix. Every function of the shared library
 *    is declared with TS_API; nothing else is exported.
 *  - Calls that can fail return ts_status (TS_OK == 0) or NULL / TS_NONE; the reason is then in
 *    ts_last_error(), a message that names the op, tensor, file or flag at fault.
 *  - Graph builder calls return a ts_value. On a bad argument they return TS_NONE and record the
 *    error in the graph; later calls that receive TS_NONE also return TS_NONE, and ts_compile()
 *    refuses a graph with a recorded error, reporting the first one. So model code can build a
 *    whole graph and check once.
 *  - Shapes are int64_t arrays, row-major, at most TS_MAX_DIMS dims. A rank-0 tensor is a scalar.
 *  - Parameter names follow Hugging Face state-dict conventions; the gradient of parameter
 *    "a.b.weight" is the value named "a.b.weight@GRAD" (Paddle's convention).
 *  - No FILE * crosses the API: text goes to a path or to a ts_write_fn callback.
 *
 * Structs that may grow start with `size_t struct_size`; within a major version they only get
 * fields appended, each past the sizeof of the last release (a struct's tail padding is not
 * reused). Each has a base layout: its fields in 0.1.0, or, for a struct added since, the fields
 * it was added with. One rule versions them all, so a program built against an older header keeps
 * working with a newer library:
 *  - A struct the caller passes in (every *_opts, ts_train_spec): struct_size is the sizeof the caller was
 *    compiled with; 0 means the base layout, so {.device = "cpu"} and {0} work as in 0.1.0; a
 *    size below the base layout's is TS_ERR_ARG, naming the function and the struct; a larger one
 *    is read up to what this library knows, and a field beyond the caller's size takes its
 *    default. A struct reached through a pointer in another is read by its own struct_size.
 *  - A struct the library fills (ts_memory, ts_stage_info): the caller sets struct_size first, to
 *    sizeof (0: the base layout); the library writes at most that many bytes, never more, and sets
 *    struct_size to the bytes it wrote. An array of them has the stride of its first element's
 *    struct_size, which every element shares.
 *  - A function that sets up a struct the caller has not fills its base layout, struct_size = the
 *    base layout's size: set struct_size to sizeof (and the fields added since) after it to use
 *    more. ts_optim_defaults and ts_loss_scale_defaults return theirs by value, the whole struct,
 *    so those structs keep their base layout: a new option there is a new function.
 *  - No growable struct is embedded by value in another, where its growth would move the fields
 *    after it: ts_stage_info holds a stage's memory as ts_stage_memory (0.1.0's ts_memory fields,
 *    fixed: ts_program_memory reports those added since).
 * Structs of a fixed meaning do not grow: values (ts_init, ts_comm_stats, ts_stage_memory,
 * ts_node_work, the training loop's report, hooks and result) and op attributes as ONNX defines
 * them (ts_conv_opts, ts_pool_opts, ts_resize_opts, ts_tfidf_opts): a new option there is a new
 * function. (The device ABI of tessera_plugin.h versions its tables on its own terms:
 * docs/backend-abi.md.) The applications' structs (tessera_apps.h) follow the same rule, with
 * the helpers of tessera_support.h.
 *
 * Ownership
 *  - What a call returns as a new object — ts_*_new, ts_compile, ts_*_load, ts_*_open, a tensor
 *    through a ts_tensor ** — belongs to the caller, who frees it once with the matching
 *    ts_*_free / ts_*_close. The free function of every opaque object accepts NULL.
 *  - Arguments are borrowed for the duration of the call; what a call keeps it copies (tensors
 *    fed or made constants, names, options), except where its documentation says it borrows
 *    (ts_onnx_session_new keeps the model, readers keep their tokenizer): those must outlive the
 *    object that borrows them. A graph may be freed as soon as ts_compile returns.
 *  - Strings returned as const char * belong to tessera: static ones (ts_version, ts_dtype_name,
 *    ts_status_name) live for the process, an object's (ts_program_param_name) as long as the
 *    object, and ts_last_error()'s until the next failing call on the same thread.
 *
 * Threads
 *  - The last error (ts_last_error, ts_last_status) is per thread.
 *  - Different objects may be used from different threads at once: two threads may each build a
 *    graph, compile it and run the program, as long as the two programs are on different devices
 *    ("cpu:1" and "cpu:2": a device is driven from one thread at a time, see
 *    docs/backend-abi.md); two programs on one device are run one after the other.
 *  - One object is used from one thread at a time: tessera takes no lock on a graph, program,
 *    session, reader or dataset. Objects documented as read-only after loading (a tokenizer) may
 *    be shared. A pipelined program runs its stages on threads of its own inside ts_program_run.
 *  - The communicator's collectives are called from one thread at a time (tessera_devices.h).
 */
#ifndef TESSERA_H
#define TESSERA_H

#include "tessera_core.h"
#include "tessera_graph_ops.h"
#include "tessera_train.h"
#include "tessera_checkpoint.h"
#include "tessera_devices.h"
#include "tessera_onnx.h"
#include "tessera_support.h"

#endif /* TESSERA_H */
