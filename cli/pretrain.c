/*
 * pretrain.c — `tessera pretrain`: pretrain a BERT (BertForPreTraining: masked LM + next
 * sentence prediction) from scratch on plain-text files, with the data pipeline's examples
 * (src/data: sentence pairs, 80/10/10 dynamic masking). A few documents of the corpus are held
 * out (every 50th, split off into a temporary file beside the output) and a fixed set of batches
 * drawn from them measures MLM and NSP accuracy every --eval-every steps. Prints a progress line
 * on a terminal, appends every step to DIR/metrics.jsonl, and writes config.json +
 * model.safetensors + vocab.txt to --out (each file atomically) at the end and every
 * --save-every steps, together with a full-state checkpoint (ts_pretrain_ckpt_save) from which
 * --resume continues the run exactly. --profile prints, at the end, where the training step's
 * time went (ts_program_profile_report; the first step, a warm-up, left out).
 *
 * Here: the flags, the model's config, the --out lock and the programs; the run itself is the
 * library's ts_pretrain_run (apps/train/pretrain_run.c).
 */
#include <math.h>
#include <unistd.h>

#include "cli.h"
#include "pipeline_opts.h"
#include "train_common.h"

static const char *USAGE =
    "usage: tessera pretrain --vocab vocab.txt --corpus FILE... --out DIR [options]\n"
    "  Pretrains a BERT on text files: one sentence a line, a blank line between documents.\n";

typedef struct pt_opts {
    const char *vocab, *out;
    cli_strlist corpus;
    int layers, hidden, heads, inter, max_len, batch, max_steps, seed, save_every, eval_every, eval_batches;
    int threads, wwm, bf16, keep, stop_after, recompute, deterministic, untie;
    int fp16, accumulation, device_iterations, max_predictions, cased, profile;
    const char *resume, *optimizer, *devices, *stages, *device;
    int micro_batches;
    double max_minutes, lr, warmup, wd, dropout, mask_prob, max_grad_norm, momentum;
} pt_opts;

/* What the run holds besides its options: the vocabulary, the model's config, the programs. */
typedef struct pt_run {
    ts_tokenizer *tok;
    ts_bert_config cfg;
    cli_train_loop loop;
    ts_program *tp, *ip;
    const ts_stage_plan *pipe; /* --devices */
} pt_run;

/* The vocabulary and the model's config from the flags (and with --devices its stages). 0 or
 * the exit code, with the message printed. */
static int pt_model(const pt_opts *o, pt_run *R) {
    if (!(R->tok = ts_tokenizer_load(o->vocab, !o->cased))) {
        fprintf(stderr, "tessera pretrain: --vocab %s: %s\n", o->vocab, cli_error());
        return 2;
    }
    if (ts_token_to_id(R->tok, "[MASK]") < 0) {
        fprintf(stderr, "tessera pretrain: --vocab %s has no [MASK] token\n", o->vocab);
        return 2;
    }
    for (int i = 0; i < o->corpus.n; i++)
        if (access(o->corpus.v[i], R_OK) != 0) {
            fprintf(stderr, "tessera pretrain: --corpus %s: %s\n", o->corpus.v[i], strerror(errno));
            return 2;
        }
    ts_bert_config *cfg = &R->cfg;
    ts_bert_config_default(cfg);
    cfg->vocab_size = ts_tokenizer_vocab_size(R->tok);
    cfg->hidden_size = o->hidden;
    cfg->num_hidden_layers = o->layers;
    cfg->num_attention_heads = o->heads;
    cfg->intermediate_size = o->inter;
    cfg->max_position_embeddings = o->max_len;
    cfg->hidden_dropout_prob = cfg->attention_probs_dropout_prob = (float)o->dropout;
    cfg->head = TS_BERT_PRETRAINING;
    if (o->bf16) cfg->compute_dtype = TS_BF16;
    if (o->fp16) cfg->compute_dtype = TS_F16;
    cfg->recompute = o->recompute;
    cfg->max_predictions_per_seq = o->max_predictions;
    cfg->untie_word_embeddings = o->untie;
    const int N = o->accumulation, S = N * o->device_iterations; /* S batches per call */
    R->loop = (cli_train_loop){.accumulation = N, .device_iterations = S, .max_grad_norm = (float)o->max_grad_norm,
                               .optimizer = o->optimizer, .momentum = (float)o->momentum, .profile = o->profile};
    static ts_stage_plan pp; /* --devices: the pipeline (cfg points into it) */
    R->loop.device = cli_pipe_one_device(o->devices, o->stages); /* one program on that device */
    if (o->devices && !R->loop.device) { /* a pipeline */
        int rc;
        if (cli_pipe_parse("pretrain", o->devices, o->stages, o->layers, &pp)) return 2;
        if (pp.automatic && (rc = cli_pipe_measure("pretrain", cfg, TS_BERT_PRETRAINING, o->batch, o->max_len, N, &pp)))
            return rc;
        R->loop.pipe = R->pipe = &pp;
    }
    if (o->hidden % o->heads) {
        fprintf(stderr, "tessera pretrain: --hidden %d is not a multiple of --heads %d\n", o->hidden, o->heads);
        return 2;
    }
    if (ts_bert_config_check(cfg) != TS_OK) { /* the flags are the config's fields */
        fprintf(stderr, "tessera pretrain: the model's config (from --vocab, --hidden, --layers, --heads, "
                        "--intermediate, --max-len): %s\n", cli_error());
        return 2;
    }
    cli_dev.sizes_from = "--vocab's size, --hidden, --layers, --intermediate, --max-len";
    return 0;
}

/* The options a resume keeps, from the flags. */
static ts_pretrain_shape pt_shape(const pt_opts *o, const pt_run *R) {
    return (ts_pretrain_shape){
        .layers = o->layers, .hidden = o->hidden, .heads = o->heads, .inter = o->inter, .max_len = o->max_len,
        .batch = o->batch, .seed = o->seed, .wwm = o->wwm, .cased = o->cased, .bf16 = o->bf16,
        .vocab_size = R->cfg.vocab_size, .max_steps = o->max_steps, .lr = o->lr, .warmup = o->warmup,
        .wd = o->wd, .max_grad_norm = o->max_grad_norm, .dropout = o->dropout, .mask_prob = o->mask_prob,
        .deterministic = o->deterministic, .threads = o->deterministic ? o->threads : 0, .fp16 = o->fp16,
        .accumulation = o->accumulation, .max_predictions = o->max_predictions,
        .optimizer = ts_optim_kind_parse(o->optimizer), .momentum = o->momentum, .ranks = cli_rep.size,
        .shard = cli_rep.shard_optimizer};
}

/* The programs (first: a model or batch too large for the device is refused before the corpus
 * is read; the inference program scores the held-out set), then the run (ts_pretrain_run). The
 * exit code. */
static int pt_go(const pt_opts *o, pt_run *R) {
    int rc;
    if ((rc = cli_out_lock("pretrain", o->out))) return rc;
    if (cli_bert_programs("pretrain", &R->cfg, TS_BERT_PRETRAINING, o->batch, o->max_len, (uint64_t)o->seed,
                          o->threads, 1, (float)o->wd, (const char *[]){"loss", "mlm_loss", "nsp_loss"}, 3, &R->tp,
                          (const char *[]){"prediction_logits", "seq_relationship_logits", "mlm_loss"}, 3, &R->ip,
                          &R->loop))
        return 1;
    if (R->pipe) ts_stage_plan_describe(R->pipe, R->tp, o->accumulation, "tessera pretrain", ts_write_stdio, stdout, 0);
    ts_pretrain_shape shape = pt_shape(o, R);
    ts_pretrain_run_opts ro = {
        .struct_size = sizeof ro, .name = "tessera pretrain", .out = ts_write_stdio, .out_ctx = stdout,
        .tty = isatty(fileno(stdout)), .err = cli_write_err, .err_ctx = stderr, .tok = R->tok, .vocab = o->vocab,
        .cfg = &R->cfg, .train = R->tp, .infer = R->ip, .pipe = R->pipe, .shape = &shape, .corpus = o->corpus.v,
        .ncorpus = o->corpus.n, .out_dir = o->out, .resume = o->resume, .device_iterations = o->device_iterations,
        .eval_every = o->eval_every, .eval_batches = o->eval_batches, .save_every = o->save_every, .keep = o->keep,
        .stop_after = o->stop_after, .profile = o->profile, .max_minutes = o->max_minutes, .comm = cli_rep.comm};
    ts_status st = ts_pretrain_run(&ro);
    return st == TS_OK ? 0 : st == TS_ERR_ARG ? 2 : 1;
}

static int run(const pt_opts *o) {
    pt_run R = {0};
    int rc = pt_model(o, &R);
    if (!rc) rc = pt_go(o, &R);
    ts_program_free(R.tp);
    ts_program_free(R.ip);
    ts_tokenizer_free(R.tok);
    return rc;
}

/* The options of this run (one command per process) and their table. */
static pt_opts pt;
static const cli_opt OPTS[] = {
    {"vocab", CLI_STR, &pt.vocab, 0, "FILE", "the WordPiece vocabulary (tessera vocab's --out)"},
    {"corpus", CLI_LIST, &pt.corpus, 0, "FILE", "text files: one sentence a line, a blank line between documents"},
    {"out", CLI_STR, &pt.out, 0, "DIR", "the model directory to write"},
    {NULL, CLI_TEXT, NULL, 0, NULL, "  Model:\n"},
    {"layers", CLI_INT, &pt.layers, 1, "N", "encoder layers (default 4)"},
    {"hidden", CLI_INT, &pt.hidden, 1, "N", "hidden size (default 256)"},
    {"heads", CLI_INT, &pt.heads, 1, "N", "attention heads (default 4)"},
    {"intermediate", CLI_INT, &pt.inter, 1, "N", "feed-forward size (default 1024)"},
    {"max-len", CLI_INT, &pt.max_len, 8, "N", "tokens per sequence (default 128)"},
    {"dropout", CLI_FLOAT, &pt.dropout, 0, "P", "dropout probability (default 0.1)"},
    {"untie-embeddings", CLI_FLAG, &pt.untie, 0, NULL,
     "the MLM decoder gets a weight of its own instead of the word\n"
     "embeddings', written as tie_word_embeddings false: a short pretraining then\n"
     "leaves the input embeddings to the encoder's gradient alone"},
    {"cased", CLI_FLAG, &pt.cased, 0, NULL,
     "keep case and accents, for a vocabulary from tessera vocab --cased\n"
     "(default uncased; remembered as do_lower_case in config.json)"},
    {NULL, CLI_TEXT, NULL, 0, NULL, "  Training:\n"},
    {"batch", CLI_INT, &pt.batch, 1, "N", "sequences per micro-batch (default 32)"},
    {"max-steps", CLI_INT, &pt.max_steps, 1, "N", "optimizer steps (default 1000)"},
    {"max-minutes", CLI_FLOAT, &pt.max_minutes, 0, "M", "stop by time (0: no limit)"},
    {"lr", CLI_FLOAT, &pt.lr, 0, "X", "peak learning rate (default 5e-4; linear warm-up, then linear decay)"},
    {"warmup", CLI_FLOAT, &pt.warmup, 0, "F", "fraction of the run spent warming up (default 0.05)"},
    {"optimizer", CLI_STR, &pt.optimizer, 0, "adamw|lamb|sgd",
     "default adamw; lamb: layer-wise trust ratios, as BERT's large-batch\n"
     "recipe, biases and LayerNorm weights without weight decay or trust ratio"},
    {"momentum", CLI_FLOAT, &pt.momentum, 0, "M", "sgd's momentum (default 0)"},
    {"weight-decay", CLI_FLOAT, &pt.wd, 0, "X", "decoupled weight decay (default 0.01; not on biases and LayerNorm)"},
    {"max-grad-norm", CLI_FLOAT, &pt.max_grad_norm, 0, "X",
     "clip the gradients to global norm X, as BERT's recipe with 1.0\n"
     "(default 0: no clipping)"},
    {"seed", CLI_INT, &pt.seed, 0, "N", "initialisation, masking and dropout (default 0)"},
    {"wwm", CLI_FLAG, &pt.wwm, 0, NULL, "whole-word masking"},
    {"mask-prob", CLI_FLOAT, &pt.mask_prob, 0, "P", "the share of positions masked (default 0.15)"},
    {"max-predictions", CLI_INT, &pt.max_predictions, 0, "P",
     "masked positions per sequence, at most; the MLM head runs on those\n"
     "only, as Google's run_pretraining (default ceil(max-len x mask-prob),\n"
     "20 for 128; 0: no cap, the head on every position)"},
    {"threads", CLI_INT, &pt.threads, 0, "N", "CPU threads (default: all)"},
    {"bf16", CLI_FLAG, &pt.bf16, 0, NULL, "bf16 matrix products, f32 master weights"},
    {"fp16", CLI_FLAG, &pt.fp16, 0, NULL, "fp16 matrix products with dynamic loss scaling, f32 master weights"},
    {"accumulation", CLI_INT, &pt.accumulation, 1, "N",
     "micro-batches of --batch per optimizer step (default 1: the effective\n"
     "batch is batch x N; --max-steps counts optimizer steps)"},
    {"device-iterations", CLI_INT, &pt.device_iterations, 1, "K",
     "optimizer steps per call into the compiled program (default 1;\n"
     "--max-steps, --save-every, --eval-every, --stop-after: multiples of K)"},
    {"recompute", CLI_FLAG, &pt.recompute, 0, NULL,
     "recompute each layer's forward in the backward: less memory, same result"},
    {"deterministic", CLI_FLAG, &pt.deterministic, 0, NULL,
     "bit-identical runs for a seed: pins --threads (default all CPUs) and\n"
     "refuses --max-minutes"},
    {NULL, CLI_TEXT, NULL, 0, NULL, "  Devices and pipelines:\n"},
    {"device", CLI_STR, &pt.device, 0, "DEV", "one program on device DEV (e.g. opencl:0; default cpu)"},
    {"devices", CLI_STR, &pt.devices, 0, "LIST",
     "cpu:0,cpu:1,...: run the model as a pipeline over these devices (the\n"
     "cores shared among them; more devices than cores oversubscribe), stages\n"
     "in 1F1B order (one device: as --device)"},
    {"stages", CLI_STR, &pt.stages, 0, "SPEC|auto",
     "which device runs what: \"0:emb,heads 1:0-3 2:4-7 3:8-11\" (device\n"
     "index: emb, heads, layers N or A-B; the seed system's layout for 12\n"
     "layers), or auto (default: time each part, then balance the layers)"},
    {"micro-batches", CLI_INT, &pt.micro_batches, 1, "M",
     "micro-batches of --batch per step (a pipeline: default 2 x devices;\n"
     "the effective batch is batch x M; the same as --accumulation)"},
    {NULL, CLI_TEXT, NULL, 0, NULL, "  Output:\n"},
    {"save-every", CLI_INT, &pt.save_every, 0, "N",
     "write --out every N steps (default: only at the end), and a full-state\n"
     "checkpoint DIR/checkpoints/step-NNNNNN (parameters, AdamW state, step and\n"
     "dropout seed, the data reader's position), atomically"},
    {"keep", CLI_INT, &pt.keep, 1, "N", "checkpoints kept, the newest (default 3)"},
    {"eval-every", CLI_INT, &pt.eval_every, 1, "K", "score the held-out batches every K steps (default 100)"},
    {"eval-batches", CLI_INT, &pt.eval_batches, 0, "N", "held-out batches (default 4)"},
    CLI_PROFILE_OPT(&pt.profile),
    {NULL, CLI_TEXT, NULL, 0, NULL, "  Resume:\n"},
    {"resume", CLI_STR, &pt.resume, 0, "DIR",
     "continue from the newest valid checkpoint of an earlier run's --out DIR\n"
     "(or from DIR itself when it is one checkpoint; --out defaults to DIR); a\n"
     "newer checkpoint cut short or corrupt is skipped with a message naming it.\n"
     "Give the same options and corpus (--max-steps may change): the result is\n"
     "the same, bit for bit, as one uninterrupted run (unless --max-minutes\n"
     "stops or shapes it)"},
    {"stop-after", CLI_INT, &pt.stop_after, 1, "N",
     "end this invocation after step N, with a checkpoint there, keeping the\n"
     "schedule of --max-steps (to train in pieces)"},
    CLI_REPLICA_OPTS,
    CLI_DEVICE_OPTS,
};

int cli_pretrain(int argc, char **argv) {
    pt = (pt_opts){.layers = 4, .hidden = 256, .heads = 4, .inter = 1024, .max_len = 128, .batch = 32,
                 .max_steps = 1000, .eval_every = 100, .eval_batches = 4, .lr = 5e-4, .warmup = 0.05, .wd = 0.01,
                 .dropout = 0.1, .mask_prob = 0.15, .keep = 3, .accumulation = 1, .device_iterations = 1,
                 .max_predictions = -1, .optimizer = "adamw"};
    cli_optset os;
    int rc = cli_opts_parse(&os, "pretrain", USAGE, OPTS, (int)(sizeof OPTS / sizeof *OPTS), argc, argv);
    if (rc == 1) {
        char probe[4300];
        if (pt.max_predictions < 0) /* Google's max_predictions_per_seq: 20 for 128 tokens at 15% */
            pt.max_predictions = (int)ceil(pt.max_len * pt.mask_prob);
        if (!pt.out && pt.resume && cli_path_join(probe, sizeof probe, pt.resume, "trainer.json") &&
            access(probe, F_OK) != 0)
            pt.out = pt.resume; /* an earlier run's directory: continue in it */
        const char *missing = !pt.vocab ? "--vocab FILE" : !pt.corpus.n ? "--corpus FILE..." : !pt.out ? "--out DIR" : NULL;
        rc = 2;
        if (missing)
            fprintf(stderr, "tessera pretrain: %s is required\n(tessera pretrain --help shows the usage)\n", missing);
        else if (cli_pipe_device("pretrain", pt.device, &pt.devices))
            ;
        else if (pt.warmup > 1 || pt.dropout >= 1 || pt.mask_prob <= 0 || pt.mask_prob >= 1)
            fprintf(stderr, "tessera pretrain: --warmup must be at most 1, --dropout below 1, --mask-prob in (0, 1)\n");
        else if (pt.max_predictions > pt.max_len)
            fprintf(stderr, "tessera pretrain: --max-predictions %d is more than --max-len %d\n", pt.max_predictions,
                    pt.max_len);
        else if (pt.bf16 && pt.fp16)
            fprintf(stderr, "tessera pretrain: --bf16 and --fp16 exclude each other\n");
        else if (pt.profile && pt.devices && !cli_pipe_one_device(pt.devices, pt.stages))
            fprintf(stderr, "tessera pretrain: --profile is not supported with --devices (a pipelined program is not "
                            "profiled); profile the step on one device, without --devices\n");
        else if (cli_pipe_micro("pretrain", pt.devices, pt.stages, pt.micro_batches, &pt.accumulation, pt.fp16))
            ;
        else if (cli_optimizer_parse("pretrain", pt.optimizer) < 0)
            ;
        else if (pt.momentum >= 1 || (pt.momentum > 0 && strcmp(pt.optimizer, "sgd")))
            fprintf(stderr, "tessera pretrain: --momentum %g: SGD's momentum, below 1 (with --optimizer sgd)\n",
                    pt.momentum);
        else if (pt.device_iterations > 64 || pt.accumulation > 4096)
            fprintf(stderr, "tessera pretrain: --device-iterations %d is above 64 or --accumulation %d above 4096\n",
                    pt.device_iterations, pt.accumulation);
        else if (pt.device_iterations > 1 &&
                 (pt.max_steps % pt.device_iterations || pt.save_every % pt.device_iterations ||
                  pt.eval_every % pt.device_iterations || pt.stop_after % pt.device_iterations))
            fprintf(stderr, "tessera pretrain: --max-steps %d, --save-every %d, --eval-every %d and --stop-after %d must "
                            "be multiples of --device-iterations %d (each call into the program runs that many steps)\n",
                    pt.max_steps, pt.save_every, pt.eval_every, pt.stop_after, pt.device_iterations);
        else if (cli_replicas_setup("pretrain", &pt.threads))
            ;
        else if (!pt.deterministic || !(rc = cli_deterministic_setup("pretrain", &pt.threads, pt.max_minutes)))
            rc = run(&pt);
        cli_out_finish("pretrain", rc);
    }
    cli_opts_free(&os);
    return rc;
}
