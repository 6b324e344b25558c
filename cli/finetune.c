/*
 * finetune.c — `tessera finetune`: train a pretrained model directory for a task. --task classify
 * (the default) trains a sequence classifier (BertForSequenceClassification) on a labelled TSV /
 * CSV / JSONL file of single texts or, with --text-b-column, text pairs ([CLS] a [SEP] b [SEP],
 * token types 0 then 1). The rows are deduplicated, then split into train and test (so no text is
 * in both), unless --eval gives the test rows; AdamW with a linear warm-up and decay fed as the
 * "lr" input; after each epoch the test accuracy is measured with an inference program and
 * printed beside the majority-class baseline. Writes config.json (with id2label),
 * model.safetensors and vocab.txt to --out, and a metrics.jsonl log. --task qa is question
 * answering on SQuAD (finetune_qa.c).
 */
#include <math.h>
#include <unistd.h>

#include "cli.h"
#include "finetune.h"
#include "pipeline_opts.h"
#include "train_common.h"

static const char *USAGE =
    "usage: tessera finetune --model DIR --train FILE --out DIR [options]\n"
    "  Fine-tunes the model in DIR (from tessera pretrain) for a task:\n";

/* Train rows and test rows, from the files (ts_classify_rows_load). 0, or the exit code. */
static int load_data(const ft_opts *o, ts_text_dataset **train, ts_text_dataset **test) {
    ts_classify_rows_opts ro = {
        .struct_size = sizeof ro, .name = "tessera finetune", .out = ts_write_stdio, .out_ctx = stdout,
        .err = cli_write_err, .err_ctx = stderr, .train = o->train, .dev = o->dev, .test_split = o->test_split,
        .text = {.text_column = o->text_col, .text_b_column = o->text_b_col, .label_column = o->label_col},
        .split_seed = (uint64_t)(o->split_seed >= 0 ? o->split_seed : o->seed)};
    ts_status st = ts_classify_rows_load(&ro, train, test);
    return st == TS_OK ? 0 : st == TS_ERR_ARG ? 2 : 1;
}

/* A classification run: what its model directory and checkpoints need. */
typedef struct cls_run {
    const ft_opts *o;
    ts_bert_config cfg;
    ts_model_meta meta;
    ts_tokenizer *tok;
    ts_text_dataset *train, *test;
    ts_program *tp, *ip;
    int seq;
    char vocab[4200];
} cls_run;

static int cls_save(void *ctx) {
    cls_run *r = ctx;
    return cli_model_dir_save("finetune", r->o->out, r->tp, &r->cfg, "BertForSequenceClassification", r->vocab, &r->meta);
}

static int cls_checkpoint(void *ctx, int64_t step) {
    cls_run *r = ctx;
    return ft_ckpt_save(r->o, "classify", r->seq, 0, 0, step, r->tp);
}

static int run(const ft_opts *o) {
    cls_run r = {.o = o};
    ts_finetune_task *task = NULL;
    int rc = 2;
    FILE *metrics = NULL;
    if (!(r.tok = cli_model_dir_open("finetune", o->model, &r.cfg, &r.meta))) return 2;
    ts_model_meta_free(&r.meta); /* the pretrained model's labels, if any, are replaced */
    if ((rc = load_data(o, &r.train, &r.test))) goto done;
    rc = 2;
    /* Without --max-len: 128, or the model's positions when fewer (only a length the user gave is
     * refused). Nothing is loaded from a random start, so its position table may be as long as the
     * sequences (the demo's spam filter reads 256 tokens with a 128-position pretrained shape). */
    r.seq = o->max_len ? o->max_len
            : !o->random_init && r.cfg.max_position_embeddings < 128 ? r.cfg.max_position_embeddings : 128;
    if (o->random_init && r.seq > r.cfg.max_position_embeddings) r.cfg.max_position_embeddings = r.seq;
    if (r.seq > r.cfg.max_position_embeddings) {
        fprintf(stderr, "tessera finetune: --max-len %d exceeds the model's %d positions\n", r.seq,
                r.cfg.max_position_embeddings);
        goto done;
    }
    if (r.seq < (o->text_b_col ? 4 : 3)) {
        fprintf(stderr, "tessera finetune: --max-len %d cannot hold [CLS] text [SEP]%s\n", r.seq,
                o->text_b_col ? " text_b [SEP]" : "");
        goto done;
    }
    int nl = ts_text_dataset_num_labels(r.train);
    r.meta.max_len = r.seq; /* meta.lowercase stays the pretrained model's do_lower_case */
    r.meta.truncation = o->truncation;
    ts_truncation_apply(r.tok, r.meta.truncation, r.seq);
    if (o->text_b_col && !(r.meta.text_b_column = strdup(o->text_b_col))) goto oom;
    r.meta.nlabels = nl;
    r.meta.labels = calloc((size_t)nl, sizeof *r.meta.labels);
    if (!r.meta.labels) goto oom;
    for (int i = 0; i < nl; i++)
        if (!(r.meta.labels[i] = strdup(ts_text_dataset_label_name(r.train, i)))) goto oom;
    r.cfg.num_labels = nl;
    r.cfg.head = TS_BERT_SEQ_CLASSIFICATION;
    if (o->bf16) r.cfg.compute_dtype = TS_BF16;
    if (o->fp16) r.cfg.compute_dtype = TS_F16;
    r.cfg.recompute = o->recompute;

    rc = 1;
    const int B = o->batch;
    cli_train_loop loop;
    if ((rc = ft_loop_opts(o, &r.cfg, TS_BERT_SEQ_CLASSIFICATION, r.seq, &loop))) goto done;
    rc = 1;
    if (cli_bert_programs("finetune", &r.cfg, TS_BERT_SEQ_CLASSIFICATION, B, r.seq, (uint64_t)o->seed, o->threads, 1,
                         (float)o->wd, (const char *[]){"loss"}, 1, &r.tp, (const char *[]){"logits"}, 1, &r.ip, &loop))
        goto done;
    ft_describe(o, r.tp, NULL);
    char path[4200];
    if (!cli_path_join(path, sizeof path, o->model, "model.safetensors") ||
        !cli_path_join(r.vocab, sizeof r.vocab, o->model, "vocab.txt")) {
        rc = cli_fail("finetune", "--model: ", 2);
        goto done;
    }
    int nmissing = ts_program_num_params(r.tp);
    if (o->random_init) {
        printf("tessera finetune: --random-init: %s's shape and vocabulary, no weights loaded\n", o->model);
    } else if (ts_program_load(r.tp, path, cli_load_flags(0), &nmissing) != TS_OK) {
        fprintf(stderr, "tessera finetune: %s\n", cli_error());
        goto done;
    }
    if (!o->random_init && nmissing == ts_program_num_params(r.tp)) {
        fprintf(stderr, "tessera finetune: %s holds none of the model's parameters\n", path);
        goto done;
    }
    int64_t step = 0;
    if (o->resume && ft_ckpt_resume(o, "classify", r.seq, 0, 0, r.tp, &step)) {
        rc = 2;
        goto done;
    }
    if ((rc = cli_out_lock("finetune", o->out))) goto done;
    rc = 1;
    if (!(metrics = o->resume ? cli_metrics_append(o->out, "finetune") : cli_metrics_open(o->out, "finetune")))
        goto done;
    ft_describe(o, r.tp, metrics);

    int64_t ntrain = ts_text_dataset_size(r.train);
    int64_t total = ft_steps_per_epoch(o, ntrain) * o->epochs;
    if (o->max_steps && o->max_steps < total) total = o->max_steps;
    printf("tessera finetune: %d labels (", nl);
    for (int i = 0; i < nl; i++) printf("%s%s", i ? ", " : "", r.meta.labels[i]);
    printf("), %d layers x %d hidden, %d of %d parameters new, %lld steps of %d x %d tokens, %s, lr %g\n",
           r.cfg.num_hidden_layers, r.cfg.hidden_size, nmissing, ts_program_num_params(r.tp), (long long)total, B, r.seq,
           ts_optim_kind_name((ts_optim_kind)cli_optimizer_parse("finetune", o->optimizer)), o->lr);
    ts_finetune_task_opts to = ft_task_opts(o, r.tp, r.ip, r.seq, loop.device_iterations, metrics);
    to.tok = r.tok, to.train_rows = r.train, to.test_rows = r.test, to.test_every = o->test_every;
    to.labels = (const char *const *)r.meta.labels, to.ctx = &r, to.save = cls_save, to.checkpoint = cls_checkpoint;
    ts_epoch_task t;
    if (!(task = ts_classify_task_new(&to, &t))) goto oom;
    rc = ft_train_loop(o, &t, step, metrics);
    goto done;
oom:
    fprintf(stderr, "tessera finetune: out of memory\n");
    rc = 1;
done:
    if (metrics) fclose(metrics);
    ts_finetune_task_free(task);
    ts_program_free(r.tp);
    ts_program_free(r.ip);
    ts_text_dataset_free(r.train);
    ts_text_dataset_free(r.test);
    ts_model_meta_free(&r.meta);
    ts_tokenizer_free(r.tok);
    return rc;
}

/* --task, or qa when the model directory already holds a question-answering model. */
static int run_task(const ft_opts *o) {
    int task = CLI_TASK_CLASSIFY;
    if (o->task) {
        if ((task = cli_task_parse("finetune", o->task)) < 0) return 2;
    } else {
        ts_bert_config cfg;
        char path[4200];
        ts_bert_config_default(&cfg);
        if (cli_path_join(path, sizeof path, o->model, "config.json") && ts_bert_config_load(path, &cfg) == TS_OK &&
            cfg.head == TS_BERT_QUESTION_ANSWERING)
            task = CLI_TASK_QA;
    }
    if (task == CLI_TASK_QA) {
        const char *cls_only = o->text_b_col   ? "--text-b-column"
                               : o->truncate   ? "--truncate"
                               : o->random_init ? "--random-init"
                                                : NULL;
        if (cls_only) {
            fprintf(stderr, "tessera finetune: %s is for --task classify, not qa\n", cls_only);
            return 2;
        }
        return cli_finetune_qa(o);
    }
    const char *qa_only = o->doc_stride      ? "--doc-stride"
                          : o->max_query_len ? "--max-query-len"
                          : o->max_answer_len ? "--max-answer-len"
                          : o->n_best        ? "--n-best"
                          : o->relocate_answers ? "--relocate-answers"
                                             : NULL;
    if (qa_only) {
        fprintf(stderr, "tessera finetune: %s is for --task qa\n", qa_only);
        return 2;
    }
    return run(o);
}

/* The options of this run (one command per process) and their table. */
static ft_opts ft;
static const cli_opt OPTS[] = {
    {"model", CLI_STR, &ft.model, 0, "DIR",
     "the pretrained model directory (tessera pretrain's --out)"},
    {"train", CLI_STR, &ft.train, 0, "FILE",
     "the training data (its kind: --task)"},
    {"out", CLI_STR, &ft.out, 0, "DIR",
     "the fine-tuned model directory to write"},
    {"task", CLI_STR, &ft.task, 0, "classify|qa",
     "classify (default): a sequence classifier on FILE (.tsv or .csv with a\n"
     "header, or .jsonl); labels are the file's distinct values, sorted\n"
     "qa: extractive question answering (BertForQuestionAnswering) on a SQuAD\n"
     "v1.1 JSON file; the encoder's weights load from DIR, qa_outputs.* are new\n"
     "(inferred when DIR is already a question-answering model)"},
    {"eval", CLI_STR, &ft.dev, 0, "FILE",
     "held-out data. classify: test on FILE instead of a split of --train;\n"
     "qa: a SQuAD file scored (EM / F1, the official v1.1 way) after each epoch", "dev"},
    {NULL, CLI_TEXT, NULL, 0, NULL, "  Classification:\n"},
    {"text-column", CLI_STR, &ft.text_col, 0, "NAME",
     "column / key of the text (default text)"},
    {"text-b-column", CLI_STR, &ft.text_b_col, 0, "NAME",
     "column / key of a second text: a text-pair classifier, rows encoded\n"
     "[CLS] text [SEP] text_b [SEP] (token types 0, then 1); remembered in\n"
     "config.json for tessera eval and predict"},
    {"label-column", CLI_STR, &ft.label_col, 0, "NAME",
     "column / key of the label (default label)"},
    {"test-split", CLI_FLOAT, &ft.test_split, 0, "F",
     "fraction held out for testing, after deduplication (default 0.2; 0: none)"},
    {"truncate", CLI_STR, &ft.truncate, 0, "HOW",
     "what of a text longer than --max-len the model sees: head (default: its\n"
     "start), tail (its end) or head+tail (the first quarter of the room from\n"
     "the start, the rest from the end: greeting and signature); remembered\n"
     "in config.json for tessera eval and predict"},
    {NULL, CLI_TEXT, NULL, 0, NULL, "  Question answering (run_squad's windows and decoding):\n"},
    {"doc-stride", CLI_INT, &ft.doc_stride, 1, "N",
     "context pieces between the starts of a context's windows\n"
     "(default min(128, max-len / 3))"},
    {"max-query-len", CLI_INT, &ft.max_query_len, 1, "N",
     "question pieces kept (default min(64, max-len / 4))"},
    {"max-answer-len", CLI_INT, &ft.max_answer_len, 1, "N",
     "pieces in a predicted answer, at most (default 30)"},
    {"n-best", CLI_INT, &ft.n_best, 1, "N",
     "start / end candidates per window (default 20)"},
    {"relocate-answers", CLI_FLAG, &ft.relocate_answers, 0, NULL,
     "take an answer that is not at its answer_start at its nearest occurrence in\n"
     "the context (as Hugging Face's scripts do); by default such a file is refused"},
    {NULL, CLI_TEXT, NULL, 0, NULL, "  Training:\n"},
    {"epochs", CLI_INT, &ft.epochs, 1, "N",
     "passes over the training rows (default 3)"},
    {"batch", CLI_INT, &ft.batch, 1, "N",
     "sequences per step (default 32)"},
    {"max-len", CLI_INT, &ft.max_len, 3, "N",
     "tokens per sequence (default min(128, the model's positions) for classify,\n"
     "min(384, the model's positions) for qa)"},
    {"lr", CLI_FLOAT, &ft.lr, 0, "X",
     "peak learning rate (default 1e-4)"},
    {"warmup", CLI_FLOAT, &ft.warmup, 0, "F",
     "fraction of the steps spent warming up (default 0.1)"},
    {"weight-decay", CLI_FLOAT, &ft.wd, 0, "X",
     "AdamW decoupled weight decay (default 0.01; not on biases and LayerNorm\n"
     "weights)"},
    {"max-grad-norm", CLI_FLOAT, &ft.max_grad_norm, 0, "X",
     "clip the gradients to global norm X (Hugging Face's Trainer uses 1.0;\n"
     "default 0: no clipping)"},
    {"optimizer", CLI_STR, &ft.optimizer, 0, "NAME",
     "adamw (default), lamb (layer-wise trust ratio; biases and LayerNorm\n"
     "weights without weight decay or trust ratio) or sgd (--momentum M,\n"
     "default 0); recorded in checkpoints"},
    {"momentum", CLI_FLOAT, &ft.momentum, 0, "M",
     "sgd's momentum (default 0)"},
    {"accumulation", CLI_INT, &ft.accumulation, 1, "N",
     "micro-batches of --batch per optimizer step (default 1: the effective\n"
     "batch is batch x N; an epoch's last step may hold fewer)"},
    {"device", CLI_STR, &ft.device, 0, "DEV",
     "one device (opencl:0, a plugin's): one program on it (default cpu)"},
    {"devices", CLI_STR, &ft.devices, 0, "LIST",
     "several devices (cpu:0,cpu:1,...): a pipeline over them, stages in 1F1B\n"
     "order (one device: as --device)"},
    {"stages", CLI_STR, &ft.stages, 0, "SPEC|auto",
     "which device runs what (\"0:emb 1:0-1 2:2-3,heads\", as tessera pretrain\n"
     "--help explains; default auto: balanced by measured time)"},
    {"micro-batches", CLI_INT, &ft.micro_batches, 1, "M",
     "micro-batches per step (a pipeline: default 2 x devices; = --accumulation)"},
    {"device-iterations", CLI_INT, &ft.device_iterations, 1, "K",
     "optimizer steps per call into the compiled program (default 1; the\n"
     "rows of an epoch that do not fill a call are left out of it;\n"
     "--max-steps, --save-every, --stop-after: multiples of K)"},
    {"max-steps", CLI_INT, &ft.max_steps, 0, "N",
     "stop after N steps (default: epochs x batches)"},
    {"max-minutes", CLI_FLOAT, &ft.max_minutes, 0, "M",
     "stop training after M minutes (then test and save; 0: no limit)"},
    {"save-every", CLI_INT, &ft.save_every, 0, "N",
     "also write --out every N steps (default: only at the end), and a\n"
     "full-state checkpoint OUT/checkpoints/step-NNNNNN (parameters, AdamW\n"
     "state, step); --keep N keeps the newest N (default 3)"},
    {"keep", CLI_INT, &ft.keep, 1, "N",
     "checkpoints kept (default 3)"},
    {"resume", CLI_STR, &ft.resume, 0, "DIR",
     "continue from the newest valid checkpoint of an earlier run's --out DIR\n"
     "(--out defaults to DIR); the same options and data are required, and\n"
     "the result is the same, bit for bit, as one run (without --max-minutes)"},
    {"stop-after", CLI_INT, &ft.stop_after, 1, "N",
     "end this invocation after step N, with a checkpoint there"},
    {"seed", CLI_INT, &ft.seed, 0, "N",
     "shuffling, split and dropout (default 42)"},
    {"split-seed", CLI_INT, &ft.split_seed, 0, "N",
     "the train/test split's alone (default: --seed), so that models trained\n"
     "with other seeds hold out the same rows (an ensemble for tessera eval)"},
    {"threads", CLI_INT, &ft.threads, 0, "N",
     "CPU threads (default: all)"},
    {"bf16", CLI_FLAG, &ft.bf16, 0, NULL,
     "bf16 matrix products (mixed precision; master weights stay f32)"},
    {"fp16", CLI_FLAG, &ft.fp16, 0, NULL,
     "fp16 matrix products with dynamic loss scaling (master weights f32)"},
    CLI_PROFILE_OPT(&ft.profile),
    {"recompute", CLI_FLAG, &ft.recompute, 0, NULL,
     "recompute each layer's forward in the backward (less memory, same result)"},
    {"test-every", CLI_INT, &ft.test_every, 0, "N",
     "classify: score the test rows after every N-th epoch and the last (default\n"
     "1; 0: after the last only)"},
    {"random-init", CLI_FLAG, &ft.random_init, 0, NULL,
     "classify: DIR's shape and vocabulary, but not its weights: every parameter\n"
     "drawn fresh from --seed (BERT's initialisation), as a baseline of what\n"
     "pretraining buys; --max-len may then exceed DIR's positions (the new\n"
     "model gets --max-len of them)"},
    {"deterministic", CLI_FLAG, &ft.deterministic, 0, NULL,
     "bit-identical runs for a seed: pins --threads (default all CPUs) and\n"
     "refuses --max-minutes"},
    CLI_DEVICE_OPTS,
    CLI_LOAD_OPTS,
    CLI_REPLICA_OPTS,
};

int cli_finetune(int argc, char **argv) {
    ft = (ft_opts){.test_every = 1, .text_col = "text", .label_col = "label", .test_split = 0.2, .lr = 1e-4, .warmup = 0.1,
                 .wd = 0.01, .epochs = 3, .batch = 32, .seed = 42, .split_seed = -1, .keep = 3,
                 .optimizer = "adamw", .accumulation = 1, .device_iterations = 1};
    cli_optset os;
    int rc = cli_opts_parse(&os, "finetune", USAGE, OPTS, (int)(sizeof OPTS / sizeof *OPTS), argc, argv);
    if (rc == 1) {
        char probe[4300];
        if (!ft.out && ft.resume && cli_path_join(probe, sizeof probe, ft.resume, "trainer.json") &&
            access(probe, F_OK) != 0)
            ft.out = ft.resume; /* an earlier run's directory */
        const char *missing = !ft.model ? "--model DIR" : !ft.train ? "--train FILE" : !ft.out ? "--out DIR" : NULL;
        if (missing) {
            fprintf(stderr, "tessera finetune: %s is required\n(tessera finetune --help shows the usage)\n", missing);
            rc = 2;
        } else if (cli_pipe_device("finetune", ft.device, &ft.devices)) {
            rc = 2;
        } else if (ft.test_split >= 1) {
            fprintf(stderr, "tessera finetune: --test-split %g leaves nothing to train on (use a fraction below 1)\n",
                    ft.test_split);
            rc = 2;
        } else if (ft.warmup > 1) {
            fprintf(stderr, "tessera finetune: --warmup %g is a fraction of the steps, at most 1\n", ft.warmup);
            rc = 2;
        } else if (ft.truncate && (ft.truncation = cli_trunc_parse("finetune", ft.truncate)) < 0) {
            rc = 2;
        } else if (ft.bf16 && ft.fp16) {
            fprintf(stderr, "tessera finetune: --bf16 and --fp16 exclude each other\n");
            rc = 2;
        } else if (ft.profile && ft.devices && !cli_pipe_one_device(ft.devices, ft.stages)) {
            fprintf(stderr, "tessera finetune: --profile is not supported with --devices (a pipelined program is not "
                            "profiled); profile the step on one device, without --devices\n");
            rc = 2;
        } else if (cli_optimizer_parse("finetune", ft.optimizer) < 0 ||
                   cli_pipe_micro("finetune", ft.devices, ft.stages, ft.micro_batches, &ft.accumulation, ft.fp16)) {
            rc = 2;
        } else if (ft.momentum >= 1 || (ft.momentum > 0 && strcmp(ft.optimizer, "sgd"))) {
            fprintf(stderr, "tessera finetune: --momentum %g: SGD's momentum, below 1 (with --optimizer sgd)\n",
                    ft.momentum);
            rc = 2;
        } else if (ft.device_iterations > 64 || ft.accumulation > 4096) {
            fprintf(stderr, "tessera finetune: --device-iterations %d is above 64 or --accumulation %d above 4096\n",
                    ft.device_iterations, ft.accumulation);
            rc = 2;
        } else if (ft.device_iterations > 1 && (ft.max_steps % ft.device_iterations || ft.save_every % ft.device_iterations ||
                                               ft.stop_after % ft.device_iterations)) {
            fprintf(stderr, "tessera finetune: --max-steps %d, --save-every %d and --stop-after %d must be multiples of "
                            "--device-iterations %d (each call into the program runs that many steps)\n",
                    ft.max_steps, ft.save_every, ft.stop_after, ft.device_iterations);
            rc = 2;
        } else if (cli_replicas_setup("finetune", &ft.threads)) {
            rc = 2;
        } else if (!ft.deterministic || !(rc = cli_deterministic_setup("finetune", &ft.threads, ft.max_minutes))) {
            rc = run_task(&ft);
        }
        cli_out_finish("finetune", rc);
    }
    cli_opts_free(&os);
    return rc;
}
