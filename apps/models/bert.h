/*
 * bert.h — the parts BERT is built from (apps/models/bert.c), for code inside the library that
 * assembles BERT differently from ts_bert_build: a pipeline that places layers on stages, a
 * scenario model that reuses the encoder. The public entry points (ts_bert_config_load,
 * ts_bert_build) are declared in tessera.h.
 *
 * Shapes: B batch, T sequence, C hidden, H heads of D = C / H, F intermediate, V vocabulary.
 * Every part adds its parameters under Hugging Face names and returns TS_NONE after recording
 * an error in the graph (like every builder call).
 */
#ifndef TS_MODELS_BERT_H
#define TS_MODELS_BERT_H

#include "common/app.h"

/* a b (op(a) op(b) with trans_a / trans_b, as ts_matmul) of f32 values in cfg->compute_dtype:
 * f32, or for bf16 both operands cast to bf16 (one cast per use), the bf16 matmul (f32
 * accumulation) and the product cast back to f32. Returns f32. */
ts_value bert_matmul(ts_graph *g, const ts_bert_config *cfg, ts_value a, ts_value b, int trans_a,
                     int trans_b);

/* y = x W^T + b: W "<name>.weight" [out, in] ~ normal(cfg->initializer_range), b "<name>.bias"
 * [out] = 0; the product by bert_matmul (so in cfg->compute_dtype), the bias added in f32. */
ts_value bert_dense(ts_graph *g, const ts_bert_config *cfg, const char *name, ts_value x, int in,
                    int out);

/* The same in f32 whatever the config, with an explicit std (for code without a config). */
ts_value bert_linear(ts_graph *g, const char *name, ts_value x, int in, int out, float std);

/* LayerNorm over the last axis with "<name>.weight" [C] = 1 and "<name>.bias" [C] = 0. */
ts_value bert_layer_norm(ts_graph *g, const char *name, ts_value x, int C, float eps);

/* The configured activation (GELU erf / tanh, ReLU). */
ts_value bert_act(ts_graph *g, const ts_bert_config *cfg, ts_value x);

/* input_ids, token_type_ids i32 [B, T] -> x [B, T, C]:
 * dropout(LN(word[ids] + position[0:T] + token_type[tt])); with position_ids i32 [B, T] (packed
 * rows; TS_NONE: 0 .. T-1) position[position_ids] instead of position[0:T]. */
ts_value bert_embeddings(ts_graph *g, const ts_bert_config *cfg, ts_value input_ids,
                         ts_value token_type_ids, ts_value position_ids, int T);

/* attention_mask [B, T] (i32 or f32, 1 keep / 0 pad) -> additive mask [B, 1, 1, T]:
 * (1 - m) * -10000. */
ts_value bert_extended_mask(ts_graph *g, ts_value attention_mask, int B, int T);

/* Packed rows: seq [B, T] (i32 or f32), each token's sequence index (1 .. S, 0 padding) ->
 * block-diagonal additive mask [B, 1, T, T]: 0 where seq[b, i] == seq[b, j] > 0, else -10000. */
ts_value bert_pack_mask(ts_graph *g, ts_value seq, int B, int T);

/* Encoder layer `layer` ("bert.encoder.layer.<layer>."): x [B, T, C] -> [B, T, C]. */
ts_value bert_layer(ts_graph *g, const ts_bert_config *cfg, int layer, ts_value x, ts_value mask,
                    int B, int T);

/* pooler_output [B, C] = tanh(x[:, 0] Wp^T + bp) ("bert.pooler.dense"). */
ts_value bert_pooler(ts_graph *g, const ts_bert_config *cfg, ts_value x, int B);

/* The pooler on given rows: first [N, C] -> tanh(first Wp^T + bp) [N, C]. */
ts_value bert_pooler_rows(ts_graph *g, const ts_bert_config *cfg, ts_value first);

/* MLM logits [B, T, V] = LN(act(x Wt^T + bt)) E^T + bias, E the word embeddings (tied). */
ts_value bert_mlm_logits(ts_graph *g, const ts_bert_config *cfg, ts_value x);

/* NULL when cfg is usable for building, else buf holding a message that names the field. */
const char *bert_config_problem(const ts_bert_config *cfg, char *buf, size_t cap);

#endif /* TS_MODELS_BERT_H */
