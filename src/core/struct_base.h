/*
 * struct_base.h — the base layout of every struct of the core's public headers that may grow (the struct_size rule of
 * tessera.h), one constant each, in one place: TS_BASE_<type> is the end of the base layout's last
 * field (its sizeof then only adds tail padding, which is never read: ts_struct_read). The base
 * layout is the struct as 0.1.0 had it (include/ at 4182ab5, the last commit before a struct_size
 * struct grew; tests/abi_0_1_0/include holds those headers), or, for a struct added since, as it
 * was added. A base never changes: appending a field changes sizeof, not these. Read and write
 * the structs through TS_STRUCT_READ / TS_STRUCT_WRITE (core.h), which name the constant.
 */
#ifndef TS_STRUCT_BASE_H
#define TS_STRUCT_BASE_H

#include <stddef.h>
#include <string.h>

#include "tessera.h"


/* In 0.1.0. The six that grew since end where their first appended field would start, had it
 * been appended past sizeof (ts_compile_opts.strict_device sits in the 0.1.0 tail padding). */
#define TS_BASE_ts_compile_opts TS_FIELD_END(ts_compile_opts, profile)        /* then strict_device */
#define TS_BASE_ts_memory TS_FIELD_END(ts_memory, weight_copies)              /* then quantized */
#define TS_BASE_ts_stage_info TS_FIELD_END(ts_stage_info, busy_s)
#define TS_BASE_ts_optim_opts TS_FIELD_END(ts_optim_opts, shard_state)
#define TS_BASE_ts_sgd_opts TS_FIELD_END(ts_sgd_opts, nesterov)
#define TS_BASE_ts_loss_scale_opts TS_FIELD_END(ts_loss_scale_opts, growth_interval)
#define TS_BASE_ts_lr_schedule_opts TS_FIELD_END(ts_lr_schedule_opts, num_cycles)
#define TS_BASE_ts_onnx_import_opts TS_FIELD_END(ts_onnx_import_opts, nfrozen)  /* then values */
#define TS_BASE_ts_train_spec TS_FIELD_END(ts_train_spec, comm)
/* Added since 0.1.0, as they were added. */
#define TS_BASE_ts_onnx_export_opts TS_FIELD_END(ts_onnx_export_opts, nquant_scales)

/* ts_stage_memory (in ts_stage_info and ts_plan_stage) is ts_memory's base layout, field for field. */
_Static_assert(sizeof(ts_stage_memory) == TS_BASE_SIZEOF(ts_memory), "ts_stage_memory is ts_memory's base layout");
_Static_assert(offsetof(ts_stage_memory, nodes) == offsetof(ts_memory, nodes) &&
                   offsetof(ts_stage_memory, weight_copies) == offsetof(ts_memory, weight_copies),
               "ts_stage_memory is ts_memory's base layout");

/* The fixed copy of a program's memory that a stage's report holds. */
static inline ts_stage_memory ts_stage_memory_of(const ts_memory *m) {
    ts_stage_memory s;
    memcpy(&s, m, sizeof s);
    s.struct_size = sizeof s;
    return s;
}

#endif
