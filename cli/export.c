/*
 * export.c — `tessera export`: a BERT model directory (ts_bert_export_dir) or an audio classifier
 * written as an ONNX model: the flags, and the printing of what was written.
 */
#include "cli.h"
#include "speech_io.h"
#include "train_common.h"

static const char *USAGE =
    "  Writes the BERT model of DIR (config.json + model.safetensors, as `tessera run` reads them) as an\n"
    "  ONNX model (opset 17) for batches [B, T] (--dynamic-batch: any batch of T tokens). The weights\n"
    "  are loaded by tessera's names (a bare BertModel checkpoint, which `tessera run` renames, is refused). A\n"
    "  calibrated int8 DIR (tessera quantize --calib) is written with its int8 matmuls in QDQ form\n"
    "  (QuantizeLinear / DequantizeLinear); a dynamic one has no QDQ form and is written in f32.\n";

typedef struct export_opts {
    const char *onnx, *model;
    int batch, seq_len, seed, threads, dynamic_batch, int64_inputs;
} export_opts;

/* Export the model of o (ts_bert_export_dir) and describe what was written: the exit code. */
static int export_model(const export_opts *o) {
    ts_bert_export_dir_opts eo = {.struct_size = sizeof eo, .model_dir = o->model, .path = o->onnx, .batch = o->batch,
                                  .max_len = o->seq_len, .init_random = o->seed >= 0,
                                  .seed = (uint64_t)(o->seed > 0 ? o->seed : 0), .load_flags = cli_load_flags(1),
                                  .threads = o->threads, .memory_limit = (size_t)(cli_dev.memory_gib * 1073741824.0),
                                  .dynamic_batch = o->dynamic_batch, .int64_inputs = o->int64_inputs};
    ts_bert_export_dir_report r = {.struct_size = sizeof r};
    ts_status st = ts_bert_export_dir(&eo, &r);
    if (r.quant_mode == TS_QUANT_DYNAMIC)
        fprintf(stderr, "tessera export: %s is int8 with dynamic quantization, which has no QDQ form (its activation "
                "scales are taken per run): writing the f32 model (tessera quantize --calib DATA makes a calibrated "
                "copy that exports in QDQ form)\n", o->model);
    if (st != TS_OK) {
        fprintf(stderr, "tessera export: %s\n", cli_error());
        return st == TS_ERR_ARG ? 2 : 1;
    }
    const ts_bert_export_info *in = &r.info;
    char batch[16];
    snprintf(batch, sizeof batch, o->dynamic_batch ? "batch" : "%d", o->batch);
    printf("tessera export: %s (%d layers, hidden %d) for batch %s x seq %d -> %s\n", ts_bert_head_name(r.cfg.head),
           r.cfg.num_hidden_layers, r.cfg.hidden_size, batch, in->seq, o->onnx);
    printf("tessera export: inputs input_ids, token_type_ids, attention_mask (%s [%s, %d]); outputs",
           o->int64_inputs ? "int64" : "int32", batch, in->seq);
    for (int i = 0; i < in->noutputs; i++) {
        printf("%s %s [", i ? "," : "", in->names[i]);
        if (o->dynamic_batch) printf("batch");
        for (int d = o->dynamic_batch; d < in->ndims[i]; d++)
            printf(d ? ", %lld" : "%lld", (long long)in->shapes[i][d]);
        printf("]");
    }
    printf("; weights %s\n", o->seed >= 0 ? "random (--init-random)" : r.weights);
    if (r.nquant_scales)
        printf("tessera export: int8 matmuls in QDQ form (QuantizeLinear / DequantizeLinear), %d calibrated "
               "activation scales\n", r.nquant_scales);
    return 0;
}

/* An audio classifier (from tessera audio-train) exported (ts_audio_clf_export_onnx): the exit code. */
static int export_audio(const char *model, const char *onnx, int threads) {
    ts_audio_clf *c = cli_audio_clf_open("export", model, threads);
    if (!c) return 2;
    int rc = 0;
    if (ts_audio_clf_export_onnx(c, onnx)) rc = cli_fail("export", "", 1);
    else {
        int scratch = ts_audio_clf_get_kind(c) == TS_AUDIO_CLF_SCRATCH;
        int64_t F = ts_audio_clf_feature_size(c);
        printf("tessera export: audio classifier (%s) -> %s: input %s [1, %s%lld%s], output logits [1, %d]\n",
               scratch ? "scratch CNN" : "head on the openWakeWord embedding", onnx, scratch ? "mel" : "features",
               scratch ? "1, " : "", (long long)(scratch ? F / 32 : F), scratch ? ", 32" : "",
               ts_audio_clf_num_labels(c));
    }
    ts_audio_clf_free(c);
    return rc;
}

int cli_export(int argc, char **argv) {
    export_opts o = {.batch = 1, .seed = -1};
    const cli_opt opts[] = {
        {"out", CLI_STR, &o.onnx, 1, "OUT.onnx",
         "the ONNX file to write (atomically).", "onnx"},
        {"model", CLI_STR, &o.model, 1, "DIR",
         "the model directory; config.json's \"architectures\" picks the head."},
        {"batch", CLI_INT, &o.batch, 1, "B",
         "sequences a batch (default 1)."},
        {"max-len", CLI_INT, &o.seq_len, 1, "T",
         "tokens a sequence (default: 128, or max_position_embeddings when smaller).", "seq-len"},
        {"init-random", CLI_INT, &o.seed, 0, "SEED",
         "do not read model.safetensors: parameters drawn from SEED as the model\n"
         "initialises them (to try an export without a checkpoint)."},
        {"dynamic-batch", CLI_FLAG, &o.dynamic_batch, 0, NULL, "the batch dim symbolic: any batch of T tokens."},
        {"int64-inputs", CLI_FLAG, &o.int64_inputs, 0, NULL, "inputs int64, as Hugging Face's exports."},
        {"threads", CLI_INT, &o.threads, 0, "N",
         "worker threads while compiling (default: OpenMP's)."},
        CLI_DEVICE_OPTS,
        CLI_LOAD_OPTS,
        {NULL, CLI_TEXT, NULL, 0, NULL,
         "Inputs of the ONNX model: input_ids, token_type_ids, attention_mask, int32 [B, T] (int64 with\n"
         "--int64-inputs; [batch, T] with --dynamic-batch). Outputs: the\n"
         "head's, by name (BertModel: last_hidden_state, pooler_output; classifiers: logits; ...), float.\n"
         "An audio classifier's DIR (from tessera audio-train) exports its head, or its CNN, on its\n"
         "features: input features [1, 192] (or mel [1, 1, T, 32]), output logits [1, labels].\n"
         "Exit codes: 0 written, 1 failed while exporting, 2 bad flags or files.\n"},
    };
    cli_optset os;
    int rc = cli_opts_parse(&os, "export", USAGE, opts, (int)(sizeof opts / sizeof *opts), argc, argv);
    if (rc == 1) rc = ts_audio_clf_is_dir(o.model) ? export_audio(o.model, o.onnx, o.threads) : export_model(&o);
    cli_opts_free(&os);
    return rc;
}
