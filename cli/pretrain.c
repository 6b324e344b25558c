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
 * library's ts_pretrain_run (src/train/pretrain_run.c).
 */
#include <math.h>
#include <unistd.h>

#include "cli.h"
#include "pipeline_opts.h"
#include "train_common.h"

static const char *USAGE =
    "usage: tessera pretrain --vocab vocab.txt --corpus FILE... --out DIR [options]\n"
    "  Pretrains a BERT on text files: one sentence a line, a blank line between documents.\n"
    "  Model:    --layers 4  --hidden 256  --heads 4  --intermediate 1024  --max-len 128  --dropout 0.1\n"
    "  Training: --batch 32  --max-steps N (default 1000)  --max-minutes M (stop by time; 0: none)\n"
    "            --lr 5e-4 (peak; linear warm-up over --warmup 0.05 of the run, then linear decay)\n"
    "            --optimizer adamw|lamb|sgd (default adamw; lamb: layer-wise trust ratios, as BERT's\n"
    "            large-batch recipe, biases and LayerNorm weights without weight decay or trust ratio;\n"
    "            sgd: --momentum M, default 0)\n"
    "            --weight-decay 0.01 (not on biases and LayerNorm weights)  --max-grad-norm X (clip\n"
    "            the gradients to global norm X, as BERT's recipe with 1.0; default 0: no clipping)\n"
    "            --seed 0  --wwm (whole-word masking)  --mask-prob 0.15\n"
    "            --untie-embeddings (the MLM decoder gets a weight of its own instead of the word\n"
    "            embeddings', written as tie_word_embeddings false: a short pretraining then leaves\n"
    "            the input embeddings to the encoder's gradient alone)\n"
    "            --cased (keep case and accents, for a vocabulary from tessera vocab --cased;\n"
    "            default uncased; remembered as do_lower_case in config.json)\n"
    "            --max-predictions P (masked positions per sequence, at most; the MLM head runs on\n"
    "            those only, as Google's run_pretraining; default ceil(max-len x mask-prob), 20\n"
    "            for 128; 0: no cap, the head on every position)\n"
    "            --threads N  --bf16 (bf16 matrix products, f32 master weights)\n"
    "            --fp16 (fp16 matrix products with dynamic loss scaling, f32 master weights)\n"
    "            --accumulation N (micro-batches of --batch per optimizer step, default 1: the\n"
    "            effective batch is batch x N; --max-steps counts optimizer steps)\n"
    "            --device-iterations K (optimizer steps per call into the compiled program,\n"
    "            default 1; --max-steps, --save-every, --eval-every, --stop-after: multiples of K)\n"
    "            --recompute (recompute each layer's forward in the backward: less memory, same result)\n"
    "  Devices:  --devices DEV  one program on device DEV (e.g. opencl:0; default cpu)\n"
    "  Pipeline: --devices cpu:0,cpu:1,...  run the model as a pipeline over these devices (the cores\n"
    "            shared among them; more devices than cores oversubscribe), stages in 1F1B order\n"
    "            --stages SPEC|auto  which device runs what: \"0:emb,heads 1:0-3 2:4-7 3:8-11\" (device\n"
    "            index: emb, heads, layers N or A-B; the seed system's layout for 12 layers), or auto\n"
    "            (default: time each part, then balance the layers over the devices)\n"
    "            --micro-batches M  micro-batches of --batch per step (a pipeline: default 2 x devices; the\n"
    "            effective batch is batch x M; the same as --accumulation)\n"
    "            --deterministic (bit-identical runs for a seed: pins --threads, default all CPUs,\n"
    "            and refuses --max-minutes)\n"
    "  Output:   --save-every N (steps; default only at the end)  --eval-every K (default 100)\n"
    "            --eval-batches N (held-out batches, default 4)\n"
    "            --profile (print to stdout, at the end, where the training step's time went: the share\n"
    "            outside kernels, then time per op type, per layer and per shape, see\n"
    "            ts_program_profile_report; the first step, a warm-up, is left out; not with --devices)\n"
    "  Resume:   --save-every N also writes a full-state checkpoint DIR/checkpoints/step-NNNNNN\n"
    "            (parameters, AdamW state, step and dropout seed, the data reader's position),\n"
    "            atomically; --keep N keeps the newest N (default 3).\n"
    "            --resume DIR continues from the newest valid checkpoint of an earlier run's --out\n"
    "            DIR (or from DIR itself when it is one checkpoint; --out defaults to DIR); a\n"
    "            newer checkpoint that is cut short or corrupt is skipped with a message naming it.\n"
    "            Give the same options and corpus (--max-steps may change): the result is the same,\n"
    "            bit for bit, as one uninterrupted run (unless --max-minutes stops or shapes it).\n"
    "            --stop-after N ends this invocation after step N, with a checkpoint there, keeping\n"
    "            the schedule of --max-steps (to train in pieces).\n"
    CLI_REPLICA_USAGE
    CLI_DEVICE_USAGE
    "  --config FILE  a JSON object of these options, keys without '--' (flags override it)\n";

typedef struct pt_opts {
    const char *vocab, *out;
    ts_strlist corpus;
    int layers, hidden, heads, inter, max_len, batch, max_steps, seed, save_every, eval_every, eval_batches;
    int threads, wwm, bf16, keep, stop_after, recompute, deterministic, untie;
    int fp16, accumulation, device_iterations, max_predictions, cased, profile;
    const char *resume, *optimizer, *devices, *stages;
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
        fprintf(stderr, "tessera pretrain: --vocab %s: %s\n", o->vocab, ts_last_error());
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
                        "--intermediate, --max-len): %s\n", ts_last_error());
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
        .tty = isatty(fileno(stdout)), .err = ts_write_stdio, .err_ctx = stderr, .tok = R->tok, .vocab = o->vocab,
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

int cli_pretrain(int argc, char **argv) {
    pt_opts o = {.layers = 4, .hidden = 256, .heads = 4, .inter = 1024, .max_len = 128, .batch = 32,
                 .max_steps = 1000, .eval_every = 100, .eval_batches = 4, .lr = 5e-4, .warmup = 0.05, .wd = 0.01,
                 .dropout = 0.1, .mask_prob = 0.15, .keep = 3, .accumulation = 1, .device_iterations = 1,
                 .max_predictions = -1, .optimizer = "adamw"};
    const ts_opt opts[] = {
        {"vocab", TS_OPT_STR, &o.vocab, 0},           {"corpus", TS_OPT_LIST, &o.corpus, 0},
        {"out", TS_OPT_STR, &o.out, 0},               {"layers", TS_OPT_INT, &o.layers, 1},
        {"hidden", TS_OPT_INT, &o.hidden, 1},         {"heads", TS_OPT_INT, &o.heads, 1},
        {"intermediate", TS_OPT_INT, &o.inter, 1},    {"max-len", TS_OPT_INT, &o.max_len, 8},
        {"batch", TS_OPT_INT, &o.batch, 1},           {"max-steps", TS_OPT_INT, &o.max_steps, 1},
        {"max-minutes", TS_OPT_FLOAT, &o.max_minutes, 0}, {"lr", TS_OPT_FLOAT, &o.lr, 0},
        {"warmup", TS_OPT_FLOAT, &o.warmup, 0},       {"weight-decay", TS_OPT_FLOAT, &o.wd, 0},
        {"max-grad-norm", TS_OPT_FLOAT, &o.max_grad_norm, 0},
        {"dropout", TS_OPT_FLOAT, &o.dropout, 0},     {"mask-prob", TS_OPT_FLOAT, &o.mask_prob, 0},
        {"seed", TS_OPT_INT, &o.seed, 0},             {"save-every", TS_OPT_INT, &o.save_every, 0},
        {"eval-every", TS_OPT_INT, &o.eval_every, 1}, {"eval-batches", TS_OPT_INT, &o.eval_batches, 0},
        {"threads", TS_OPT_INT, &o.threads, 0},       {"wwm", TS_OPT_FLAG, &o.wwm, 0}, {"untie-embeddings", TS_OPT_FLAG, &o.untie, 0},
        {"cased", TS_OPT_FLAG, &o.cased, 0},
        {"bf16", TS_OPT_FLAG, &o.bf16, 0},            {"keep", TS_OPT_INT, &o.keep, 1},
        {"resume", TS_OPT_STR, &o.resume, 0},         {"stop-after", TS_OPT_INT, &o.stop_after, 1},
        {"recompute", TS_OPT_FLAG, &o.recompute, 0},  {"deterministic", TS_OPT_FLAG, &o.deterministic, 0},
        {"fp16", TS_OPT_FLAG, &o.fp16, 0},            {"accumulation", TS_OPT_INT, &o.accumulation, 1},
        {"device-iterations", TS_OPT_INT, &o.device_iterations, 1},
        {"max-predictions", TS_OPT_INT, &o.max_predictions, 0},
        {"optimizer", TS_OPT_STR, &o.optimizer, 0}, {"momentum", TS_OPT_FLOAT, &o.momentum, 0},
        {"devices", TS_OPT_STR, &o.devices, 0},     {"stages", TS_OPT_STR, &o.stages, 0},
        {"micro-batches", TS_OPT_INT, &o.micro_batches, 1}, {"profile", TS_OPT_FLAG, &o.profile, 0},
        CLI_DEVICE_OPTS,                          CLI_REPLICA_OPTS,
    };
    ts_optset os;
    int rc = cli_opts_parse(&os, "pretrain", USAGE, opts, (int)(sizeof opts / sizeof *opts), argc, argv);
    if (rc == 1) {
        char probe[4300];
        if (o.max_predictions < 0) /* Google's max_predictions_per_seq: 20 for 128 tokens at 15% */
            o.max_predictions = (int)ceil(o.max_len * o.mask_prob);
        if (o.resume) snprintf(probe, sizeof probe, "%s/trainer.json", o.resume);
        if (!o.out && o.resume && access(probe, F_OK) != 0)
            o.out = o.resume; /* an earlier run's directory: continue in it */
        const char *missing = !o.vocab ? "--vocab FILE" : !o.corpus.n ? "--corpus FILE..." : !o.out ? "--out DIR" : NULL;
        rc = 2;
        if (missing)
            fprintf(stderr, "tessera pretrain: %s is required\n(tessera pretrain --help shows the usage)\n", missing);
        else if (o.warmup > 1 || o.dropout >= 1 || o.mask_prob <= 0 || o.mask_prob >= 1)
            fprintf(stderr, "tessera pretrain: --warmup must be at most 1, --dropout below 1, --mask-prob in (0, 1)\n");
        else if (o.max_predictions > o.max_len)
            fprintf(stderr, "tessera pretrain: --max-predictions %d is more than --max-len %d\n", o.max_predictions,
                    o.max_len);
        else if (o.bf16 && o.fp16)
            fprintf(stderr, "tessera pretrain: --bf16 and --fp16 exclude each other\n");
        else if (o.profile && o.devices && !cli_pipe_one_device(o.devices, o.stages))
            fprintf(stderr, "tessera pretrain: --profile is not supported with --devices (a pipelined program is not "
                            "profiled); profile the step on one device, without --devices\n");
        else if (cli_pipe_micro("pretrain", o.devices, o.stages, o.micro_batches, &o.accumulation, o.fp16))
            ;
        else if (cli_optimizer_parse("pretrain", o.optimizer) < 0)
            ;
        else if (o.momentum >= 1 || (o.momentum > 0 && strcmp(o.optimizer, "sgd")))
            fprintf(stderr, "tessera pretrain: --momentum %g: SGD's momentum, below 1 (with --optimizer sgd)\n",
                    o.momentum);
        else if (o.device_iterations > 64 || o.accumulation > 4096)
            fprintf(stderr, "tessera pretrain: --device-iterations %d is above 64 or --accumulation %d above 4096\n",
                    o.device_iterations, o.accumulation);
        else if (o.device_iterations > 1 &&
                 (o.max_steps % o.device_iterations || o.save_every % o.device_iterations ||
                  o.eval_every % o.device_iterations || o.stop_after % o.device_iterations))
            fprintf(stderr, "tessera pretrain: --max-steps %d, --save-every %d, --eval-every %d and --stop-after %d must "
                            "be multiples of --device-iterations %d (each call into the program runs that many steps)\n",
                    o.max_steps, o.save_every, o.eval_every, o.stop_after, o.device_iterations);
        else if (cli_replicas_setup("pretrain", &o.threads))
            ;
        else if (!o.deterministic || !(rc = cli_deterministic_setup("pretrain", &o.threads, o.max_minutes)))
            rc = run(&o);
        cli_out_finish("pretrain", rc);
    }
    ts_options_free(&os);
    return rc;
}
