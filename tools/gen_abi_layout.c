/*
 * gen_abi_layout.c — writes abi_layout.json: the layout of every public struct that the Python
 * package (python/tessera) mirrors with ctypes (its size, and each field's offset and size), and
 * the values of the constants the package passes as ints (python/tessera/_abi.py), as the C
 * compiler sees them in include/. Built and run by CMake at build time (`gen_abi_layout
 * <out.json>`); tests/test_python_abi.py compares the package with it, struct by struct, field
 * by field, by name.
 *
 * The fields are listed by hand, every field of each struct in declaration order: a field added
 * to one of these structs goes here and into python/tessera/_lib.py. The program checks that the
 * fields listed cover the struct (each starts within its alignment of the one before, and the
 * struct is the last one's end rounded up to the struct's alignment) and fails (exit 1, naming
 * the struct and field) when not, so a field left out here is caught unless it fits in padding.
 */
#include <stddef.h>
#include <stdio.h>

#include "tessera_apps.h"

static FILE *out;
static const char *sname;
static size_t ssize, salign, send;
static int nstruct, nfield, failed;

static void struct_begin(const char *name, size_t size, size_t align) {
    sname = name, ssize = size, salign = align, send = 0, nfield = 0;
    fprintf(out, "%s    \"%s\": {\"size\": %zu, \"fields\": [", nstruct++ ? ",\n" : "", name, size);
}

static void field(const char *name, size_t off, size_t size, size_t align) {
    if (off < send || off - send >= align) {
        fprintf(stderr, "gen_abi_layout: %s.%s at offset %zu: the field listed before it ends at %zu (a field "
                        "missing or out of order in tools/gen_abi_layout.c)\n", sname, name, off, send);
        failed = 1;
    }
    send = off + size;
    fprintf(out, "%s\n        {\"name\": \"%s\", \"offset\": %zu, \"size\": %zu}", nfield++ ? "," : "", name, off,
            size);
}

static void struct_end(void) {
    if ((send + salign - 1) / salign * salign != ssize) {
        fprintf(stderr, "gen_abi_layout: %s is %zu bytes but its fields listed end at %zu (a field missing in "
                        "tools/gen_abi_layout.c)\n", sname, ssize, send);
        failed = 1;
    }
    fprintf(out, "]}");
}

static int nconst;
static void constant(const char *name, long long v) {
    fprintf(out, "%s    \"%s\": %lld", nconst++ ? ",\n" : "", name, v);
}

#define STRUCT(T) struct_begin(#T, sizeof(T), _Alignof(T))
#define FIELD(T, f) field(#f, offsetof(T, f), sizeof(((T *)0)->f), __alignof__(((T *)0)->f))
#define CONST(c) constant(#c, (long long)(c))

static void structs(void) {
    /* tessera_core.h */
    STRUCT(ts_init);
    FIELD(ts_init, kind);
    FIELD(ts_init, a);
    FIELD(ts_init, b);
    struct_end();

    STRUCT(ts_compile_opts);
    FIELD(ts_compile_opts, struct_size);
    FIELD(ts_compile_opts, device);
    FIELD(ts_compile_opts, num_threads);
    FIELD(ts_compile_opts, nfetch);
    FIELD(ts_compile_opts, fetches);
    FIELD(ts_compile_opts, inference);
    FIELD(ts_compile_opts, no_fusion);
    FIELD(ts_compile_opts, device_iterations);
    FIELD(ts_compile_opts, memory_limit);
    FIELD(ts_compile_opts, stage_devices);
    FIELD(ts_compile_opts, nstage_devices);
    FIELD(ts_compile_opts, skip_param_init);
    FIELD(ts_compile_opts, profile);
    FIELD(ts_compile_opts, strict_device);
    FIELD(ts_compile_opts, plan_only);
    FIELD(ts_compile_opts, quantize);
    FIELD(ts_compile_opts, quant_scales);
    FIELD(ts_compile_opts, nquant_scales);
    struct_end();

    STRUCT(ts_memory);
    FIELD(ts_memory, struct_size);
    FIELD(ts_memory, params);
    FIELD(ts_memory, grads);
    FIELD(ts_memory, optimizer_state);
    FIELD(ts_memory, activations);
    FIELD(ts_memory, workspace);
    FIELD(ts_memory, intermediates_total);
    FIELD(ts_memory, nodes);
    FIELD(ts_memory, fused);
    FIELD(ts_memory, grad_buckets);
    FIELD(ts_memory, weight_copies);
    FIELD(ts_memory, quantized);
    struct_end();

    /* tessera_graph_ops.h */
    STRUCT(ts_conv_opts);
    FIELD(ts_conv_opts, stride);
    FIELD(ts_conv_opts, pad);
    FIELD(ts_conv_opts, dilation);
    FIELD(ts_conv_opts, groups);
    struct_end();

    STRUCT(ts_pool_opts);
    FIELD(ts_pool_opts, kernel);
    FIELD(ts_pool_opts, stride);
    FIELD(ts_pool_opts, pad);
    FIELD(ts_pool_opts, dilation);
    FIELD(ts_pool_opts, ceil_mode);
    FIELD(ts_pool_opts, count_include_pad);
    struct_end();

    STRUCT(ts_resize_opts);
    FIELD(ts_resize_opts, mode);
    FIELD(ts_resize_opts, coord);
    FIELD(ts_resize_opts, round);
    FIELD(ts_resize_opts, scale);
    struct_end();

    /* tessera_train.h */
    STRUCT(ts_optim_opts);
    FIELD(ts_optim_opts, struct_size);
    FIELD(ts_optim_opts, kind);
    FIELD(ts_optim_opts, weight_decay);
    FIELD(ts_optim_opts, momentum);
    FIELD(ts_optim_opts, dampening);
    FIELD(ts_optim_opts, nesterov);
    FIELD(ts_optim_opts, beta1);
    FIELD(ts_optim_opts, beta2);
    FIELD(ts_optim_opts, eps);
    FIELD(ts_optim_opts, no_decay);
    FIELD(ts_optim_opts, nno_decay);
    FIELD(ts_optim_opts, max_grad_norm);
    FIELD(ts_optim_opts, accumulation_steps);
    FIELD(ts_optim_opts, no_trust);
    FIELD(ts_optim_opts, nno_trust);
    FIELD(ts_optim_opts, comm);
    FIELD(ts_optim_opts, bucket_bytes);
    FIELD(ts_optim_opts, shard_state);
    FIELD(ts_optim_opts, round_nearest);
    FIELD(ts_optim_opts, rounding_seed);
    FIELD(ts_optim_opts, updates_in_backward);
    struct_end();

    STRUCT(ts_lr_schedule_opts);
    FIELD(ts_lr_schedule_opts, struct_size);
    FIELD(ts_lr_schedule_opts, kind);
    FIELD(ts_lr_schedule_opts, lr);
    FIELD(ts_lr_schedule_opts, warmup_steps);
    FIELD(ts_lr_schedule_opts, total_steps);
    FIELD(ts_lr_schedule_opts, lr_end);
    FIELD(ts_lr_schedule_opts, power);
    FIELD(ts_lr_schedule_opts, num_cycles);
    struct_end();

    /* tessera_bert.h */
    STRUCT(ts_bert_config);
    FIELD(ts_bert_config, struct_size);
    FIELD(ts_bert_config, vocab_size);
    FIELD(ts_bert_config, hidden_size);
    FIELD(ts_bert_config, num_hidden_layers);
    FIELD(ts_bert_config, num_attention_heads);
    FIELD(ts_bert_config, intermediate_size);
    FIELD(ts_bert_config, max_position_embeddings);
    FIELD(ts_bert_config, type_vocab_size);
    FIELD(ts_bert_config, hidden_act);
    FIELD(ts_bert_config, hidden_dropout_prob);
    FIELD(ts_bert_config, attention_probs_dropout_prob);
    FIELD(ts_bert_config, classifier_dropout);
    FIELD(ts_bert_config, layer_norm_eps);
    FIELD(ts_bert_config, initializer_range);
    FIELD(ts_bert_config, num_labels);
    FIELD(ts_bert_config, head);
    FIELD(ts_bert_config, architecture);
    FIELD(ts_bert_config, attention_mask_dtype);
    FIELD(ts_bert_config, compute_dtype);
    FIELD(ts_bert_config, recompute);
    FIELD(ts_bert_config, layer_stages);
    FIELD(ts_bert_config, embedding_stage);
    FIELD(ts_bert_config, head_stage);
    FIELD(ts_bert_config, untie_word_embeddings);
    FIELD(ts_bert_config, max_predictions_per_seq);
    FIELD(ts_bert_config, max_sequences_per_pack);
    FIELD(ts_bert_config, eager_attention);
    struct_end();

    STRUCT(ts_model_meta);
    FIELD(ts_model_meta, max_len);
    FIELD(ts_model_meta, lowercase);
    FIELD(ts_model_meta, labels);
    FIELD(ts_model_meta, nlabels);
    FIELD(ts_model_meta, text_b_column);
    FIELD(ts_model_meta, doc_stride);
    FIELD(ts_model_meta, max_query_len);
    FIELD(ts_model_meta, truncation);
    struct_end();

    STRUCT(ts_bert_train_opts);
    FIELD(ts_bert_train_opts, struct_size);
    FIELD(ts_bert_train_opts, cfg);
    FIELD(ts_bert_train_opts, head);
    FIELD(ts_bert_train_opts, batch);
    FIELD(ts_bert_train_opts, seq);
    FIELD(ts_bert_train_opts, seed);
    FIELD(ts_bert_train_opts, threads);
    FIELD(ts_bert_train_opts, infer_threads);
    FIELD(ts_bert_train_opts, optimizer);
    FIELD(ts_bert_train_opts, weight_decay);
    FIELD(ts_bert_train_opts, max_grad_norm);
    FIELD(ts_bert_train_opts, momentum);
    FIELD(ts_bert_train_opts, accumulation);
    FIELD(ts_bert_train_opts, steps_per_call);
    FIELD(ts_bert_train_opts, memory_limit);
    FIELD(ts_bert_train_opts, stage_devices);
    FIELD(ts_bert_train_opts, nstage_devices);
    FIELD(ts_bert_train_opts, train_fetches);
    FIELD(ts_bert_train_opts, infer_fetches);
    FIELD(ts_bert_train_opts, ntrain_fetches);
    FIELD(ts_bert_train_opts, ninfer_fetches);
    FIELD(ts_bert_train_opts, comm);
    FIELD(ts_bert_train_opts, shard_state);
    FIELD(ts_bert_train_opts, bucket_bytes);
    FIELD(ts_bert_train_opts, skip_param_init);
    FIELD(ts_bert_train_opts, profile);
    FIELD(ts_bert_train_opts, plan_only);
    FIELD(ts_bert_train_opts, quantize);
    FIELD(ts_bert_train_opts, quant_scales);
    FIELD(ts_bert_train_opts, nquant_scales);
    FIELD(ts_bert_train_opts, device);
    FIELD(ts_bert_train_opts, weight_dtype);
    FIELD(ts_bert_train_opts, round_nearest);
    struct_end();

    /* tessera_text.h */
    STRUCT(ts_batch);
    FIELD(ts_batch, input_ids);
    FIELD(ts_batch, token_type_ids);
    FIELD(ts_batch, attention_mask);
    FIELD(ts_batch, labels);
    FIELD(ts_batch, next_sentence_label);
    FIELD(ts_batch, start_positions);
    FIELD(ts_batch, end_positions);
    struct_end();

    STRUCT(ts_batch_buf);
    FIELD(ts_batch_buf, ids);
    FIELD(ts_batch_buf, types);
    FIELD(ts_batch_buf, mask);
    FIELD(ts_batch_buf, labels);
    FIELD(ts_batch_buf, nsp);
    FIELD(ts_batch_buf, b);
    FIELD(ts_batch_buf, slices);
    FIELD(ts_batch_buf, batch);
    FIELD(ts_batch_buf, seq);
    FIELD(ts_batch_buf, predictions);
    FIELD(ts_batch_buf, positions);
    FIELD(ts_batch_buf, plabels);
    struct_end();

    STRUCT(ts_text_opts);
    FIELD(ts_text_opts, struct_size);
    FIELD(ts_text_opts, format);
    FIELD(ts_text_opts, text_column);
    FIELD(ts_text_opts, text_b_column);
    FIELD(ts_text_opts, label_column);
    FIELD(ts_text_opts, no_header);
    FIELD(ts_text_opts, labels);
    FIELD(ts_text_opts, nlabels);
    struct_end();

    STRUCT(ts_squad_opts);
    FIELD(ts_squad_opts, struct_size);
    FIELD(ts_squad_opts, max_seq_len);
    FIELD(ts_squad_opts, doc_stride);
    FIELD(ts_squad_opts, max_query_len);
    FIELD(ts_squad_opts, relocate_answers);
    struct_end();

    /* tessera_tasks.h */
    STRUCT(ts_bert_infer_opts);
    FIELD(ts_bert_infer_opts, struct_size);
    FIELD(ts_bert_infer_opts, cfg);
    FIELD(ts_bert_infer_opts, batch);
    FIELD(ts_bert_infer_opts, seq);
    FIELD(ts_bert_infer_opts, seed);
    FIELD(ts_bert_infer_opts, device);
    FIELD(ts_bert_infer_opts, threads);
    FIELD(ts_bert_infer_opts, profile);
    FIELD(ts_bert_infer_opts, memory_limit);
    FIELD(ts_bert_infer_opts, weights);
    FIELD(ts_bert_infer_opts, load_flags);
    FIELD(ts_bert_infer_opts, name);
    FIELD(ts_bert_infer_opts, err);
    FIELD(ts_bert_infer_opts, err_ctx);
    FIELD(ts_bert_infer_opts, config_path);
    FIELD(ts_bert_infer_opts, inputs);
    FIELD(ts_bert_infer_opts, quantize);
    FIELD(ts_bert_infer_opts, quant_scales);
    FIELD(ts_bert_infer_opts, nquant_scales);
    struct_end();

    STRUCT(ts_finetune_run_opts);
    FIELD(ts_finetune_run_opts, struct_size);
    FIELD(ts_finetune_run_opts, name);
    FIELD(ts_finetune_run_opts, out);
    FIELD(ts_finetune_run_opts, out_ctx);
    FIELD(ts_finetune_run_opts, tty);
    FIELD(ts_finetune_run_opts, err);
    FIELD(ts_finetune_run_opts, err_ctx);
    FIELD(ts_finetune_run_opts, metrics);
    FIELD(ts_finetune_run_opts, metrics_ctx);
    FIELD(ts_finetune_run_opts, model_dir);
    FIELD(ts_finetune_run_opts, train_file);
    FIELD(ts_finetune_run_opts, eval_file);
    FIELD(ts_finetune_run_opts, out_dir);
    FIELD(ts_finetune_run_opts, resume);
    FIELD(ts_finetune_run_opts, task);
    FIELD(ts_finetune_run_opts, text_column);
    FIELD(ts_finetune_run_opts, text_b_column);
    FIELD(ts_finetune_run_opts, label_column);
    FIELD(ts_finetune_run_opts, truncate);
    FIELD(ts_finetune_run_opts, test_split);
    FIELD(ts_finetune_run_opts, split_seed);
    FIELD(ts_finetune_run_opts, test_every);
    FIELD(ts_finetune_run_opts, random_init);
    FIELD(ts_finetune_run_opts, doc_stride);
    FIELD(ts_finetune_run_opts, max_query_len);
    FIELD(ts_finetune_run_opts, max_answer_len);
    FIELD(ts_finetune_run_opts, n_best);
    FIELD(ts_finetune_run_opts, relocate_answers);
    FIELD(ts_finetune_run_opts, optimizer);
    FIELD(ts_finetune_run_opts, lr);
    FIELD(ts_finetune_run_opts, warmup);
    FIELD(ts_finetune_run_opts, weight_decay);
    FIELD(ts_finetune_run_opts, max_grad_norm);
    FIELD(ts_finetune_run_opts, momentum);
    FIELD(ts_finetune_run_opts, epochs);
    FIELD(ts_finetune_run_opts, batch);
    FIELD(ts_finetune_run_opts, max_len);
    FIELD(ts_finetune_run_opts, max_steps);
    FIELD(ts_finetune_run_opts, accumulation);
    FIELD(ts_finetune_run_opts, device_iterations);
    FIELD(ts_finetune_run_opts, max_minutes);
    FIELD(ts_finetune_run_opts, seed);
    FIELD(ts_finetune_run_opts, save_every);
    FIELD(ts_finetune_run_opts, keep);
    FIELD(ts_finetune_run_opts, stop_after);
    FIELD(ts_finetune_run_opts, threads);
    FIELD(ts_finetune_run_opts, bf16);
    FIELD(ts_finetune_run_opts, fp16);
    FIELD(ts_finetune_run_opts, recompute);
    FIELD(ts_finetune_run_opts, deterministic);
    FIELD(ts_finetune_run_opts, profile);
    FIELD(ts_finetune_run_opts, memory_limit);
    FIELD(ts_finetune_run_opts, load_flags);
    FIELD(ts_finetune_run_opts, devices);
    FIELD(ts_finetune_run_opts, stages);
    FIELD(ts_finetune_run_opts, micro_batches);
    FIELD(ts_finetune_run_opts, comm);
    FIELD(ts_finetune_run_opts, shard);
    FIELD(ts_finetune_run_opts, pack);
    FIELD(ts_finetune_run_opts, precision);
    FIELD(ts_finetune_run_opts, round_nearest);
    struct_end();

    /* tessera_ocr.h */
    STRUCT(ts_image);
    FIELD(ts_image, width);
    FIELD(ts_image, height);
    FIELD(ts_image, rgb);
    struct_end();

    STRUCT(ts_ocr_opts);
    FIELD(ts_ocr_opts, struct_size);
    FIELD(ts_ocr_opts, models_dir);
    FIELD(ts_ocr_opts, det_model);
    FIELD(ts_ocr_opts, rec_model);
    FIELD(ts_ocr_opts, cls_model);
    FIELD(ts_ocr_opts, keys);
    FIELD(ts_ocr_opts, lang);
    FIELD(ts_ocr_opts, no_cls);
    FIELD(ts_ocr_opts, num_threads);
    FIELD(ts_ocr_opts, limit_side_len);
    FIELD(ts_ocr_opts, det_thresh);
    FIELD(ts_ocr_opts, box_thresh);
    FIELD(ts_ocr_opts, unclip_ratio);
    FIELD(ts_ocr_opts, drop_score);
    FIELD(ts_ocr_opts, device);
    FIELD(ts_ocr_opts, strict_device);
    FIELD(ts_ocr_opts, quantize);
    struct_end();

    STRUCT(ts_ocr_line);
    FIELD(ts_ocr_line, box);
    FIELD(ts_ocr_line, text);
    FIELD(ts_ocr_line, confidence);
    struct_end();
}

static void constants(void) {
    /* tessera_types.h */
    CONST(TS_MAX_DIMS);
    CONST(TS_OK);
    CONST(TS_ERR_ARG);
    CONST(TS_ERR_SHAPE);
    CONST(TS_ERR_DTYPE);
    CONST(TS_ERR_NOT_FOUND);
    CONST(TS_ERR_IO);
    CONST(TS_ERR_NOMEM);
    CONST(TS_ERR_UNSUPPORTED);
    CONST(TS_ERR_RUNTIME);
    CONST(TS_ERR_COMM);
    CONST(TS_F32);
    CONST(TS_BF16);
    CONST(TS_F16);
    CONST(TS_I32);
    CONST(TS_I64);
    CONST(TS_U8);
    CONST(TS_MATH_ABS);
    CONST(TS_MATH_NEG);
    CONST(TS_MATH_FLOOR);
    CONST(TS_MATH_CEIL);
    CONST(TS_MATH_ROUND);
    CONST(TS_MATH_SIGN);
    CONST(TS_MATH_RECIPROCAL);
    CONST(TS_MATH_SIN);
    CONST(TS_MATH_COS);
    CONST(TS_MATH_TAN);
    CONST(TS_MATH_ASIN);
    CONST(TS_MATH_ACOS);
    CONST(TS_MATH_ATAN);
    CONST(TS_MATH_SINH);
    CONST(TS_MATH_COSH);
    CONST(TS_MATH_ASINH);
    CONST(TS_MATH_ACOSH);
    CONST(TS_MATH_ATANH);
    CONST(TS_MATH_ERF);
    CONST(TS_MATH_SOFTPLUS);
    CONST(TS_MATH_SOFTSIGN);
    CONST(TS_MATH_ELU);
    CONST(TS_MATH_SELU);
    CONST(TS_MATH_CELU);
    CONST(TS_MATH_LEAKY_RELU);
    CONST(TS_MATH_THRESHOLDED_RELU);
    CONST(TS_MATH_SHRINK);
    CONST(TS_BIN_EQUAL);
    CONST(TS_BIN_LESS);
    CONST(TS_BIN_LESS_EQUAL);
    CONST(TS_BIN_GREATER);
    CONST(TS_BIN_GREATER_EQUAL);
    CONST(TS_BIN_AND);
    CONST(TS_BIN_OR);
    CONST(TS_BIN_XOR);
    CONST(TS_BIN_MIN);
    CONST(TS_BIN_MAX);
    CONST(TS_BIN_MOD);
    CONST(TS_BIN_FMOD);
    CONST(TS_REDUCE_NONE);
    CONST(TS_REDUCE_SUM);
    CONST(TS_REDUCE_MEAN);
    CONST(TS_PAD_CONSTANT);
    CONST(TS_PAD_REFLECT);
    CONST(TS_PAD_EDGE);
    CONST(TS_RESIZE_NEAREST);
    CONST(TS_RESIZE_LINEAR);
    CONST(TS_COORD_HALF_PIXEL);
    CONST(TS_ROUND_PREFER_FLOOR);
    CONST(TS_LR_CONSTANT);
    CONST(TS_LR_LINEAR);
    CONST(TS_LR_COSINE);
    CONST(TS_LR_POLYNOMIAL);
    /* tessera_core.h */
    CONST(TS_NONE);
    CONST(TS_INIT_ZEROS);
    CONST(TS_INIT_ONES);
    CONST(TS_INIT_CONST);
    CONST(TS_INIT_UNIFORM);
    CONST(TS_INIT_NORMAL);
    /* tessera_train.h */
    CONST(TS_OPTIM_SGD);
    CONST(TS_OPTIM_ADAMW);
    CONST(TS_OPTIM_LAMB);
    /* tessera_checkpoint.h */
    CONST(TS_LOAD_STRICT);
    CONST(TS_LOAD_ALLOW_NONFINITE);
    /* tessera_text.h */
    CONST(TS_IGNORE_INDEX);
    /* tessera_bert.h */
    CONST(TS_BERT_SEQ_CLASSIFICATION);
    CONST(TS_BERT_QUESTION_ANSWERING);
    CONST(TS_TRUNC_HEAD);
    /* tessera_tasks.h */
    CONST(TS_SQUAD_N_BEST);
    CONST(TS_SQUAD_MAX_ANSWER_LEN);
    CONST(TS_FINETUNE_AUTO);
    CONST(TS_FINETUNE_CLASSIFY);
    CONST(TS_FINETUNE_QA);
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: gen_abi_layout OUT.json\n");
        return 2;
    }
    out = fopen(argv[1], "w");
    if (!out) {
        perror(argv[1]);
        return 1;
    }
    fprintf(out, "{\n  \"structs\": {\n");
    structs();
    fprintf(out, "\n  },\n  \"constants\": {\n");
    constants();
    fprintf(out, "\n  }\n}\n");
    if (fclose(out) || failed) {
        if (!failed) perror(argv[1]);
        remove(argv[1]);
        return 1;
    }
    return 0;
}
