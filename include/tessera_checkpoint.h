/*
 * tessera_checkpoint.h — files of tensors: safetensors read and written, a program's parameters
 * loaded and saved, and whole training checkpoints (save, load, check, rotate, find).
 * Part of the public API; include "tessera.h", which includes every part. */
#ifndef TESSERA_CHECKPOINT_H
#define TESSERA_CHECKPOINT_H

#include "tessera_core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- checkpoints (safetensors) */
/* The safetensors format (Hugging Face): an 8-byte little-endian header length, a JSON header
 * {"<name>": {"dtype", "shape", "data_offsets"}, "__metadata__": {str: str}}, then the raw
 * row-major little-endian data. Every error message names the file and, where there is one, the
 * tensor; a malformed or truncated file is TS_ERR_IO and never crashes. */

/* An open safetensors file: memory-mapped read-only until ts_safetensors_close. */
typedef struct ts_safetensors ts_safetensors;

/* Open, map and validate a file: header length within the file, UTF-8 JSON header, every entry's
 * dtype known, shape non-negative, data_offsets consistent with shape x dtype size and the tensors
 * tiling the data exactly (as the format's reference reader requires). Tensors of dtypes tessera
 * has no type for (F64, I8, U16, F8_*, ...) are accepted here and refused by ts_safetensors_get.
 * NULL on failure (see ts_last_error()). The file must not be truncated while it is open. */
TS_API ts_safetensors *ts_safetensors_open(const char *path);
/* Unmap and free (NULL is a no-op). */
TS_API void ts_safetensors_close(ts_safetensors *st);
/* Number of tensors, and the i-th name (sorted by name; NULL when i is out of range). */
TS_API int ts_safetensors_count(const ts_safetensors *st);
TS_API const char *ts_safetensors_name(const ts_safetensors *st, int i);
/* A "__metadata__" value by key, or NULL. Valid until close. */
TS_API const char *ts_safetensors_metadata(const ts_safetensors *st, const char *key);
/* dtype, rank and shape of a tensor without reading its data (any output may be NULL).
 * TS_ERR_NOT_FOUND for an unknown name; TS_ERR_UNSUPPORTED when the dtype has no tessera type or
 * the rank exceeds TS_MAX_DIMS. BOOL reads as TS_U8. */
TS_API ts_status ts_safetensors_info(const ts_safetensors *st, const char *name, ts_dtype *dtype, int *ndim,
                              int64_t shape[TS_MAX_DIMS]);
/* A new tensor holding a copy of the named tensor, in its stored dtype (nothing is converted).
 * Errors as ts_safetensors_info. */
TS_API ts_status ts_safetensors_get(const ts_safetensors *st, const char *name, ts_tensor **out);
/* Write n named tensors to path, atomically: a temp file in the same directory is written,
 * flushed and fsynced, then renamed over path and the directory fsynced; on any failure the
 * previous file at path is untouched and the temp file removed. The header is sorted by name and
 * padded with spaces to a multiple of 8 bytes; the data is ordered by element size, largest
 * first, then by name, so every tensor is aligned to its element size. metadata_json is NULL or a
 * JSON object of string values ("{\"format\": \"pt\"}"), stored as "__metadata__". Names must
 * be unique and not "__metadata__". */
TS_API ts_status ts_safetensors_save(const char *path, int n, const char *const *names,
                              const ts_tensor *const *tensors, const char *metadata_json);

/* Load every parameter of p by name from a safetensors file. A stored dtype among F32 / BF16 /
 * F16 converts to the parameter's dtype (so a bf16 checkpoint loads into f32 parameters and the
 * other way round); any other dtype mismatch is TS_ERR_DTYPE, a shape mismatch TS_ERR_SHAPE
 * naming the tensor and both shapes. Tensors in the file that p has no parameter for are ignored.
 * flags, or-ed:
 *   TS_LOAD_STRICT            a parameter missing from the file is TS_ERR_NOT_FOUND, naming it
 *                             (the first few) and saying how many are missing; without it,
 *                             missing parameters keep their values;
 *   TS_LOAD_ALLOW_NONFINITE   load tensors holding NaN or inf. Without it such a tensor is
 *                             TS_ERR_IO, naming the file, the tensor, how many values and the
 *                             first one's index (a model with NaN weights computes NaN).
 * (flags 0 and 1 are the non-strict and strict loads of earlier versions.)
 * Either way *nmissing (when not NULL) receives the number of p's parameters the file lacks.
 * Everything is checked before anything is copied: on an error p's parameters are unchanged. */
#define TS_LOAD_STRICT 1
#define TS_LOAD_ALLOW_NONFINITE 2
TS_API ts_status ts_program_load(ts_program *p, const char *path, int flags, int *nmissing);
/* Write every parameter of p to path (as ts_safetensors_save, atomically), converted to dtype
 * (TS_F32, TS_BF16 or TS_F16), with "__metadata__" {"format": "pt"} as Hugging Face expects. */
TS_API ts_status ts_program_save(const ts_program *p, const char *path, ts_dtype dtype);

/* The whole training state, for an exact resume (apps/train/run_state.c). A checkpoint is a
 * directory DIR holding
 *   model.safetensors  every parameter in f32 (as ts_program_save; loadable by ts_program_load),
 *   state.safetensors  every persistent non-parameter value by name (optimizer state such as
 *                      "<param>@MOMENT1", "<param>@STEP"), "__metadata__" {"format":
 *                      "tessera-train-state-1", "step": the program step, which seeds dropout},
 *   trainer.json       the caller's JSON (data-loader state, loss scale, host RNG, ...).
 * Saving is atomic: DIR.tmp-XXXXXX is written, every file and the directory fsynced; then an
 * existing DIR is renamed to DIR.old, the new one renamed to DIR, the parent fsynced and DIR.old
 * deleted. A crash at any point leaves a complete DIR, or (between the two renames) no DIR and a
 * complete DIR.old. Recovery rule: every load / check / listing below takes DIR.old when DIR is
 * missing; stale DIR.tmp-* directories are never read and are deleted by the next save of DIR and
 * by ts_checkpoint_rotate. One writer per DIR at a time.
 * extra_json is NULL ("{}") or valid JSON (TS_ERR_ARG otherwise). */
TS_API ts_status ts_program_save_state(const ts_program *p, const char *dir, const char *extra_json);
/* Restore parameters (converted to the parameters' dtype), every state value and the program
 * step from a checkpoint written by ts_program_save_state. Every file is validated first (a
 * missing, truncated or corrupt file, a missing tensor, a shape or dtype mismatch is an error
 * naming the file and tensor) and on any error the program is unchanged. Tensors in the files
 * that the program lacks are ignored. *extra_json_out (when not NULL) receives a malloc'd copy of
 * trainer.json; free() it. */
TS_API ts_status ts_program_load_state(ts_program *p, const char *dir, char **extra_json_out);
/* The same with a second JSON text that is this rank's own (a data reader's position): saved
 * beside the state (rank_json may be NULL) and handed back in *rank_json_out (malloc'd; NULL when
 * the checkpoint has none). A program whose optimizer sums over replicas (ts_optim_opts.comm) is
 * saved by every rank of the communicator together — call it on each, as a collective: each rank
 * writes DIR/part-<rank>.safetensors (its rank_json, and its share of the optimizer state with
 * shard_state), rank 0 the parameters, the rest of the state and extra_json, and the directory
 * appears only once every part is written (so ts_checkpoint_check refuses one missing a part). A
 * load by such a program reads its rank's part and needs a checkpoint of as many ranks. */
TS_API ts_status ts_program_save_state_parts(const ts_program *p, const char *dir, const char *extra_json,
                                      const char *rank_json);
TS_API ts_status ts_program_load_state_parts(ts_program *p, const char *dir, char **extra_json_out, char **rank_json_out);
/* Validate a checkpoint directory without a program: both safetensors files well formed and
 * complete, trainer.json valid JSON, the step present. TS_OK or the error ts_program_load_state
 * would report for the files themselves. */
TS_API ts_status ts_checkpoint_check(const char *dir);
/* Keep the newest `keep` (>= 1) step-numbered checkpoints "<prefix><digits>" (e.g. "ckpt-000100",
 * ordered by the number) directly under parent_dir and delete the older ones (with their .old
 * copies; every such directory counts, valid or not), and any stale "<prefix><digits>.tmp-*"
 * left by interrupted saves, and a DIR.old beside its complete DIR. Other entries are left alone. */
TS_API ts_status ts_checkpoint_rotate(const char *parent_dir, const char *prefix, int keep);
/* The path ("parent_dir/<prefix><digits>", at most cap bytes with its NUL) of the newest
 * checkpoint under parent_dir that passes ts_checkpoint_check. A newer one that fails (a file
 * truncated by a crash or on purpose) is skipped with a line on stderr naming it and the reason,
 * so a run resumes from the one before. TS_ERR_NOT_FOUND when there is none. */
TS_API ts_status ts_checkpoint_latest(const char *parent_dir, const char *prefix, char *out, size_t cap);

#ifdef __cplusplus
}
#endif
#endif /* TESSERA_CHECKPOINT_H */
