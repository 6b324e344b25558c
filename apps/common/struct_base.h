/*
 * struct_base.h — the base layout of every growable struct of the applications' headers
 * (apps/include; the struct_size rule of tessera.h, helpers in tessera_support.h): TS_BASE_<type>
 * is the end of the base layout's last field. The base layout is the struct as 0.1.0 had it
 * (tests/abi_0_1_0/include), or, for a struct added since, as it was added. A base never changes.
 * The core's own are in src/core/struct_base.h.
 */
#ifndef TS_APPS_STRUCT_BASE_H
#define TS_APPS_STRUCT_BASE_H

#include <stddef.h>

#include "tessera_apps.h"

/* In 0.1.0. */
#define TS_BASE_ts_ocr_opts TS_FIELD_END(ts_ocr_opts, drop_score)               /* then device */
#define TS_BASE_ts_pretrain_opts TS_FIELD_END(ts_pretrain_opts, num_shards)
#define TS_BASE_ts_text_opts TS_FIELD_END(ts_text_opts, nlabels)
#define TS_BASE_ts_squad_opts TS_FIELD_END(ts_squad_opts, relocate_answers)
#define TS_BASE_ts_bert_config TS_FIELD_END(ts_bert_config, max_predictions_per_seq)
#define TS_BASE_ts_bert_train_opts TS_FIELD_END(ts_bert_train_opts, profile)    /* then plan_only */
#define TS_BASE_ts_bert_export_opts TS_FIELD_END(ts_bert_export_opts, memory_limit) /* then quant_scales */

/* Added since 0.1.0, as they were added (git log -S 'struct ts_xxx' -- include/ apps/include/). */
#define TS_BASE_ts_bert_infer_opts TS_FIELD_END(ts_bert_infer_opts, inputs)     /* then quantize */
#define TS_BASE_ts_pretrain_run_opts TS_FIELD_END(ts_pretrain_run_opts, comm)
#define TS_BASE_ts_finetune_run_opts TS_FIELD_END(ts_finetune_run_opts, shard)
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
#define TS_BASE_ts_quantize_opts TS_FIELD_END(ts_quantize_opts, load_flags)
#define TS_BASE_ts_quantize_report TS_FIELD_END(ts_quantize_report, written)
#define TS_BASE_ts_ensemble_opts TS_FIELD_END(ts_ensemble_opts, result_ctx)
#define TS_BASE_ts_onnx_run_opts TS_FIELD_END(ts_onnx_run_opts, quantize)
#define TS_BASE_ts_onnx_run_report TS_FIELD_END(ts_onnx_run_report, outputs)
#define TS_BASE_ts_bow_run_opts TS_FIELD_END(ts_bow_run_opts, weight_decay)
#define TS_BASE_ts_bow_run_report TS_FIELD_END(ts_bow_run_report, majority)
#define TS_BASE_ts_text_split_opts TS_FIELD_END(ts_text_split_opts, nsubsets)
#define TS_BASE_ts_text_split_report TS_FIELD_END(ts_text_split_report, ntest)
#define TS_BASE_ts_pretrain_job_opts TS_FIELD_END(ts_pretrain_job_opts, shard)
#define TS_BASE_ts_bert_run_opts TS_FIELD_END(ts_bert_run_opts, err_ctx)
#define TS_BASE_ts_bert_run_report TS_FIELD_END(ts_bert_run_report, program)
#define TS_BASE_ts_ensemble_eval_opts TS_FIELD_END(ts_ensemble_eval_opts, split_seed)
#define TS_BASE_ts_ensemble_eval_report TS_FIELD_END(ts_ensemble_eval_report, baseline)
#define TS_BASE_ts_bert_export_dir_opts TS_FIELD_END(ts_bert_export_dir_opts, memory_limit)
#define TS_BASE_ts_bert_export_dir_report TS_FIELD_END(ts_bert_export_dir_report, info)
#define TS_BASE_ts_model_program_opts TS_FIELD_END(ts_model_program_opts, err_ctx)
/* ts_plan_layout as it was added can no longer be served (bdaf4a1 inserted fields into the
 * ts_plan_stage it holds, and ts_memory inside that grew): its base is the layout since
 * ts_plan_stage.mem became the fixed ts_stage_memory. */
#define TS_BASE_ts_plan_layout TS_FIELD_END(ts_plan_layout, command)

/* ts_text_columns (in ts_classify_rows_opts) is ts_text_opts's base layout. */
_Static_assert(sizeof(ts_text_columns) == TS_BASE_SIZEOF(ts_text_opts) &&
                   offsetof(ts_text_columns, nlabels) == offsetof(ts_text_opts, nlabels),
               "ts_text_columns is ts_text_opts's base layout");

#endif
