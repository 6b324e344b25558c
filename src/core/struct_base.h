/*
 * struct_base.h — the base layout of every public struct that may grow (the struct_size rule of
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

/* The end of field f of struct type T: where the layout that ends with f ends. */
#define TS_FIELD_END(T, f) (offsetof(T, f) + sizeof(((T *)0)->f))
/* What sizeof gave for T's base layout: TS_BASE_T rounded up to T's alignment. */
#define TS_BASE_SIZEOF(T) ((TS_BASE_##T + _Alignof(T) - 1) / _Alignof(T) * _Alignof(T))

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
#define TS_BASE_ts_ocr_opts TS_FIELD_END(ts_ocr_opts, drop_score)               /* then device */
#define TS_BASE_ts_pretrain_opts TS_FIELD_END(ts_pretrain_opts, num_shards)
#define TS_BASE_ts_text_opts TS_FIELD_END(ts_text_opts, nlabels)
#define TS_BASE_ts_squad_opts TS_FIELD_END(ts_squad_opts, relocate_answers)
#define TS_BASE_ts_bert_config TS_FIELD_END(ts_bert_config, max_predictions_per_seq)
#define TS_BASE_ts_train_spec TS_FIELD_END(ts_train_spec, comm)
#define TS_BASE_ts_bert_train_opts TS_FIELD_END(ts_bert_train_opts, profile)    /* then plan_only */
#define TS_BASE_ts_bert_export_opts TS_FIELD_END(ts_bert_export_opts, memory_limit) /* then quant_scales */

/* Added since 0.1.0, as they were added (git log -S 'struct ts_xxx' -- include/). */
#define TS_BASE_ts_bert_infer_opts TS_FIELD_END(ts_bert_infer_opts, inputs)     /* then quantize */
#define TS_BASE_ts_pretrain_run_opts TS_FIELD_END(ts_pretrain_run_opts, comm)
#define TS_BASE_ts_epochs_opts TS_FIELD_END(ts_epochs_opts, shard)
#define TS_BASE_ts_classify_rows_opts TS_FIELD_END(ts_classify_rows_opts, split_seed)
#define TS_BASE_ts_finetune_task_opts TS_FIELD_END(ts_finetune_task_opts, checkpoint)
#define TS_BASE_ts_device_profile TS_FIELD_END(ts_device_profile, sources)      /* then mem_bw_thread */
#define TS_BASE_ts_plan_request TS_FIELD_END(ts_plan_request, stream_state)
#define TS_BASE_ts_serve_opts TS_FIELD_END(ts_serve_opts, max_connections)
#define TS_BASE_ts_kws_opts TS_FIELD_END(ts_kws_opts, num_threads)
#define TS_BASE_ts_vad_opts TS_FIELD_END(ts_vad_opts, num_threads)
#define TS_BASE_ts_audio_clf_opts TS_FIELD_END(ts_audio_clf_opts, num_threads)
#define TS_BASE_ts_audio_clf_train_opts TS_FIELD_END(ts_audio_clf_train_opts, seed)
/* ts_plan_layout as it was added can no longer be served (bdaf4a1 inserted fields into the
 * ts_plan_stage it holds, and ts_memory inside that grew): its base is the layout since
 * ts_plan_stage.mem became the fixed ts_stage_memory. */
#define TS_BASE_ts_plan_layout TS_FIELD_END(ts_plan_layout, command)

/* ts_stage_memory (in ts_stage_info and ts_plan_stage) is ts_memory's base layout, field for field. */
_Static_assert(sizeof(ts_stage_memory) == TS_BASE_SIZEOF(ts_memory), "ts_stage_memory is ts_memory's base layout");
_Static_assert(offsetof(ts_stage_memory, nodes) == offsetof(ts_memory, nodes) &&
                   offsetof(ts_stage_memory, weight_copies) == offsetof(ts_memory, weight_copies),
               "ts_stage_memory is ts_memory's base layout");

/* ts_text_columns (in ts_classify_rows_opts) is ts_text_opts's base layout. */
_Static_assert(sizeof(ts_text_columns) == TS_BASE_SIZEOF(ts_text_opts) &&
                   offsetof(ts_text_columns, nlabels) == offsetof(ts_text_opts, nlabels),
               "ts_text_columns is ts_text_opts's base layout");

/* The fixed copy of a program's memory that a stage's report holds. */
static inline ts_stage_memory ts_stage_memory_of(const ts_memory *m) {
    ts_stage_memory s;
    memcpy(&s, m, sizeof s);
    s.struct_size = sizeof s;
    return s;
}

#endif
