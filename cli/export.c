/*
 * export.c — `tessera export`: a BERT model directory written as an ONNX model (opset 17) for one
 * fixed batch shape, through ts_bert_export_onnx.
 *
 *   tessera export --out OUT.onnx --model DIR [--batch B] [--max-len T] [--init-random SEED]
 *
 * DIR is read as `tessera run` reads it: config.json (its "architectures" picks the head) and
 * model.safetensors, loaded strictly by tessera's names (a bare BertModel checkpoint, whose names
 * lack "bert.", which `tessera run` renames, is refused here). The model is built for inference (no dropout) for batches of B sequences of
 * T tokens, and exported with
 *   inputs   input_ids, token_type_ids, attention_mask: int32 [B, T] (mask 1 keep, 0 padding)
 *   outputs  the head's outputs by name, float [..], as `tessera run` writes them
 *   weights  the loaded parameters, as initializers named as in model.safetensors.
 * The shape is fixed: ONNX's symbolic dimensions (dim_param) are not written, so another batch
 * shape needs another export.
 * A calibrated int8 directory (tessera quantize --calib: config.json's "quantization" record holds
 * the activation scales) is exported with its int8 matmuls in QDQ form (ts_onnx_export_qdq:
 * QuantizeLinear / DequantizeLinear, INT8 weights per output channel), which ONNX Runtime runs on
 * its int8 kernels and tessera imports back onto its own. A dynamic one has no QDQ form (its
 * activation scales are taken per run): it is exported in f32, saying so.
 */
#include "cli.h"
#include "tessera_apps.h"
#include "train_common.h"

static const char *USAGE =
    "usage: tessera export --out OUT.onnx --model DIR [--batch B] [--max-len T] [--init-random SEED]\n"
    "  Writes the BERT model of DIR (config.json + model.safetensors, as `tessera run` reads them) as an\n"
    "  ONNX model (opset 17) that infers on batches of a fixed shape [B, T].\n";

typedef struct export_opts {
    const char *onnx, *model;
    int batch, seq_len, seed, threads;
} export_opts;

/* Export the model of o (ts_bert_export_onnx) and describe what was written. */
static int export_model(const export_opts *o, const ts_bert_config *cfg) {
    char config_path[4200], weights_path[4200];
    if (!cli_path_join(config_path, sizeof config_path, o->model, "config.json") ||
        !cli_path_join(weights_path, sizeof weights_path, o->model, "model.safetensors"))
        return cli_fail("export", "--model: ", 2);
    ts_quant_record q;
    if (cli_model_quant_load("export", o->model, &q)) return 2;
    if (q.mode == TS_QUANT_DYNAMIC)
        fprintf(stderr, "tessera export: %s is int8 with dynamic quantization, which has no QDQ form (its activation "
                "scales are taken per run): writing the f32 model (tessera quantize --calib DATA makes a calibrated "
                "copy that exports in QDQ form)\n", o->model);
    ts_bert_export_opts eo = {.struct_size = sizeof eo, .batch = o->batch, .seq = o->seq_len,
                              .weights = o->seed < 0 ? weights_path : NULL, .seed = (uint64_t)(o->seed > 0 ? o->seed : 0),
                              .load_flags = cli_load_flags(1), .threads = o->threads,
                              .memory_limit = (size_t)(cli_dev.memory_gib * 1073741824.0),
                              .quant_scales = q.mode == TS_QUANT_STATIC ? q.scales : NULL,
                              .nquant_scales = q.mode == TS_QUANT_STATIC ? q.nscales : 0};
    ts_bert_export_info in;
    ts_status st = ts_bert_export_onnx(cfg, &eo, o->onnx, &in);
    int nq = eo.nquant_scales;
    ts_quant_record_free(&q);
    if (st != TS_OK) {
        if (in.failed_at == TS_BERT_EXPORT_BUILD)
            fprintf(stderr, "tessera export: %s (model %s, batch %d x seq %d)\n", cli_error(), config_path,
                    o->batch, in.seq);
        else
            fprintf(stderr, "tessera export: %s\n", cli_error());
        return in.failed_at ? 2 : 1;
    }
    printf("tessera export: %s (%d layers, hidden %d) for batch %d x seq %d -> %s\n", ts_bert_head_name(cfg->head),
           cfg->num_hidden_layers, cfg->hidden_size, o->batch, in.seq, o->onnx);
    printf("tessera export: inputs input_ids, token_type_ids, attention_mask (int32 [%d, %d]); outputs", o->batch,
           in.seq);
    for (int i = 0; i < in.noutputs; i++) {
        printf("%s %s [", i ? "," : "", in.names[i]);
        for (int d = 0; d < in.ndims[i]; d++) printf("%s%lld", d ? ", " : "", (long long)in.shapes[i][d]);
        printf("]");
    }
    printf("; weights %s\n", o->seed >= 0 ? "random (--init-random)" : weights_path);
    if (nq) printf("tessera export: int8 matmuls in QDQ form (QuantizeLinear / DequantizeLinear), %d calibrated "
                   "activation scales\n", nq);
    return 0;
}

int cli_export(int argc, char **argv) {
    export_opts o = {.batch = 1, .seed = -1};
    const cli_opt opts[] = {
        {"out", CLI_STR, &o.onnx, 0, "OUT.onnx",
         "the ONNX file to write (atomically).", "onnx"},
        {"model", CLI_STR, &o.model, 0, "DIR",
         "the model directory; config.json's \"architectures\" picks the head."},
        {"batch", CLI_INT, &o.batch, 1, "B",
         "sequences a batch (default 1)."},
        {"max-len", CLI_INT, &o.seq_len, 1, "T",
         "tokens a sequence (default: 128, or max_position_embeddings when smaller).", "seq-len"},
        {"init-random", CLI_INT, &o.seed, 0, "SEED",
         "do not read model.safetensors: parameters drawn from SEED as the model\n"
         "initialises them (to try an export without a checkpoint)."},
        {"threads", CLI_INT, &o.threads, 0, "N",
         "worker threads while compiling (default: OpenMP's)."},
        CLI_DEVICE_OPTS,
        CLI_LOAD_OPTS,
        {NULL, CLI_TEXT, NULL, 0, NULL,
         "Inputs of the ONNX model: input_ids, token_type_ids, attention_mask, int32 [B, T]. Outputs: the\n"
         "head's, by name (BertModel: last_hidden_state, pooler_output; classifiers: logits; ...), float.\n"
         "An audio classifier's DIR (from tessera audio-train) exports its head, or its CNN, on its\n"
         "features: input features [1, 192] (or mel [1, 1, T, 32]), output logits [1, labels].\n"
         "Exit codes: 0 written, 1 failed while exporting, 2 bad flags or files.\n"},
    };
    cli_optset os;
    int rc = cli_opts_parse(&os, "export", USAGE, opts, (int)(sizeof opts / sizeof *opts), argc, argv);
    if (rc != 1) goto done;
    rc = 2;
    if (!o.onnx || !o.model) {
        fprintf(stderr, "tessera export: %s is required\n(tessera export --help shows the usage)\n",
                !o.onnx ? "--out FILE" : "--model DIR");
        goto done;
    }
    if (ts_audio_clf_is_dir(o.model)) { /* from tessera audio-train */
        rc = cli_export_audio(o.model, o.onnx, o.threads);
        goto done;
    }
    char config_path[4200];
    ts_bert_config cfg = {.struct_size = sizeof cfg};
    if (!cli_path_join(config_path, sizeof config_path, o.model, "config.json") ||
        ts_bert_config_load(config_path, &cfg) != TS_OK) {
        fprintf(stderr, "tessera export: --model: %s\n", cli_error());
        goto done;
    }
    if (o.seq_len > cfg.max_position_embeddings) {
        fprintf(stderr, "tessera export: --max-len %d is longer than the model's max_position_embeddings %d (%s)\n",
                o.seq_len, cfg.max_position_embeddings, config_path);
        goto done;
    }
    rc = export_model(&o, &cfg);
done:
    cli_opts_free(&os);
    return rc;
}
