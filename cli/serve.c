/*
 * serve.c — `tessera serve`: an inference server over HTTP/1.1 for fine-tuned models (the engine
 * is apps/serve/). Flags are read here (one option table, cli_opts_parse); the server starts
 * (every model loaded and compiled first), prints the address it listens on, and runs until
 * SIGTERM or SIGINT, when it stops accepting, answers every request already accepted and exits 0.
 *
 *   tessera serve --model NAME=DIR_OR_ONNX... [--port 8000] [--host 127.0.0.1] [--max-batch 32]
 *                 [--max-delay-ms 5] [--device cpu] [--threads N] [--queue N] [--max-body BYTES]
 *                 [--timeout S] [--max-connections N]
 */
#include <signal.h>

#include "cli.h"
#include "options.h"

static const char *USAGE =
    "usage: tessera serve --model NAME=DIR... [options]\n"
    "  Serves fine-tuned models (DIR from tessera finetune: a text classifier or question answering)\n"
    "  over HTTP/1.1 with the KServe v2 / Triton JSON protocol: GET /v2/health/live, /v2/health/ready,\n"
    "  /v2/models/NAME, POST /v2/models/NAME/infer (tensors input_ids, token_type_ids, attention_mask\n"
    "  [B, T]); for texts POST /v1/models/NAME:predict {\"instances\": [\"text\", ...]} (QA: instances\n"
    "  {\"question\": ..., \"context\": ...}); GET /metrics (Prometheus). Requests to a model are batched:\n"
    "  gathered until --max-batch rows or --max-delay-ms, run at the shortest compiled sequence length\n"
    "  that holds them. SIGTERM or SIGINT: stop accepting, answer what was accepted, exit 0.\n";

typedef struct serve_args {
    char **names, **dirs;
    int n;
    ts_serve_opts o;
} serve_args;

/* --model NAME=DIR into a. 0 or 2 with the message. */
static int add_model(serve_args *a, const char *v) {
    const char *eq = strchr(v, '=');
    size_t len = eq ? (size_t)(eq - v) : 0;
    if (!eq || !len || !eq[1] || len >= 64 || strspn(v, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOP"
                                                                    "QRSTUVWXYZ0123456789._-") != len) {
        fprintf(stderr, "tessera serve: --model wants NAME=DIR (NAME of letters, digits, . _ -), not '%s'\n", v);
        return 2;
    }
    for (int i = 0; i < a->n; i++)
        if (strlen(a->names[i]) == len && !strncmp(a->names[i], v, len)) {
            fprintf(stderr, "tessera serve: --model %.*s given twice\n", (int)len, v);
            return 2;
        }
    char **nn = realloc(a->names, (size_t)(a->n + 1) * sizeof *nn);
    if (nn) a->names = nn;
    char **dd = realloc(a->dirs, (size_t)(a->n + 1) * sizeof *dd);
    if (dd) a->dirs = dd;
    if (!nn || !dd || !(a->names[a->n] = strndup(v, len))) return fprintf(stderr, "tessera serve: out of memory\n"), 1;
    a->dirs[a->n++] = (char *)eq + 1;
    return 0;
}

/* 0 when v is at most max, else 2 after the message. */
static int at_most(const char *flag, int v, int max) {
    if (v <= max) return 0;
    fprintf(stderr, "tessera serve: %s wants an integer from 0 to %d, not '%d'\n", flag, max, v);
    return 2;
}

/* The checks after the parse, the models into a: 0, or 1 / 2 after the message. */
static int check(serve_args *a, const cli_strlist *models, int max_body) {
    ts_serve_opts *o = &a->o;
    int rc = 0;
    if (!models->n) fprintf(stderr, "tessera serve: --model NAME=DIR is required\n"), rc = 2;
    if (!rc) rc = at_most("--port", o->port, 65535);
    if (!rc) rc = at_most("--max-delay-ms", o->max_delay_ms, 60000);
    if (!rc && strchr(o->device, ','))
        fprintf(stderr, "tessera serve: --device: one device for now, not '%s'\n", o->device), rc = 2;
    for (int i = 0; i < models->n && !rc; i++) rc = add_model(a, models->v[i]);
    if (rc == 2) fputs("(tessera serve --help shows the usage)\n", stderr);
    if (!o->max_delay_ms) o->max_delay_ms = -1; /* ts_serve_opts: 0 is the default, -1 no wait */
    o->max_body = (size_t)max_body;
    return rc;
}

int cli_serve(int argc, char **argv) {
    serve_args a = {.o = {.struct_size = sizeof a.o, .host = "127.0.0.1", .port = 8000, .max_batch = 32,
                          .max_delay_ms = 5, .device = "cpu", .queue_cap = 256, .timeout_s = 30,
                          .max_connections = 512}};
    ts_serve_opts *o = &a.o;
    cli_strlist models = {0};
    int max_body = 16 << 20;
    const cli_opt opts[] = {
        {"model", CLI_LIST, &models, 0, "NAME=DIR",
         "models served as NAME (letters, digits, . _ -): --model a=DIR b=DIR.\n"
         "NAME=FILE.onnx: an ONNX model, v2 infer only (inputs [batch, fixed dims...]);\n"
         "DIR of PaddleOCR's models (as tessera ocr reads them): POST an image's bytes\n"
         "to :predict", NULL},
        {"host", CLI_STR, &o->host, 0, "H", "the address to listen on (default 127.0.0.1)", NULL},
        {"port", CLI_INT, &o->port, 0, "P", "the port (default 8000; 0: a free one, printed at start)", NULL},
        {"max-batch", CLI_INT, &o->max_batch, 1, "N", "rows run together, at most (default 32; 1: no batching)", NULL},
        {"max-delay-ms", CLI_INT, &o->max_delay_ms, 0, "MS",
         "how long a batch waits for more requests after its first (default 5)", NULL},
        {"device", CLI_STR, &o->device, 0, "DEV", "the device the models run on (default cpu)", "devices"},
        {"threads", CLI_INT, &o->threads, 0, "N", "CPU threads per run (default 0: all)", NULL},
        {"queue", CLI_INT, &o->queue_cap, 1, "N",
         "requests waiting per model before 503 + Retry-After (default 256)", NULL},
        {"max-body", CLI_INT, &max_body, 0, "BYTES", "the largest request body (default 16777216): 413 past it", NULL},
        {"timeout", CLI_INT, &o->timeout_s, 1, "S",
         "a connection idle or sending this long is closed (default 30)", NULL},
        {"max-connections", CLI_INT, &o->max_connections, 1, "N", "connections open at once (default 512)", NULL},
    };
    cli_optset os;
    int rc = cli_opts_parse(&os, "serve", USAGE, opts, (int)(sizeof opts / sizeof *opts), argc, argv);
    if (rc != 1 || (rc = check(&a, &models, max_body))) goto done;
    /* SIGTERM and SIGINT are taken by sigwait below, in this thread alone: blocked before the
     * server's threads start, so they inherit the mask */
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGTERM);
    sigaddset(&stop, SIGINT);
    pthread_sigmask(SIG_BLOCK, &stop, NULL);
    ts_serve *s = ts_serve_start(&a.o, (const char *const *)a.names, (const char *const *)a.dirs, a.n);
    if (!s) {
        rc = cli_fail("serve", "", ts_last_status() == TS_ERR_ARG ? 2 : 1);
        goto done;
    }
    printf("tessera serve: listening on http://%s:%d (", a.o.host, ts_serve_port(s));
    for (int i = 0; i < a.n; i++) printf("%s%s", i ? ", " : "", a.names[i]);
    printf(")\n");
    fflush(stdout);
    int sig = 0;
    sigwait(&stop, &sig);
    fprintf(stderr, "tessera serve: %s: answering the requests accepted, then stopping\n",
            sig == SIGTERM ? "SIGTERM" : "SIGINT");
    ts_serve_stop(s);
    fprintf(stderr, "tessera serve: stopped\n");
done:
    cli_opts_free(&os); /* after the server: a.dirs and the options point into its strings */
    for (int i = 0; i < a.n; i++) free(a.names[i]);
    free(a.names);
    free(a.dirs);
    return rc;
}
