/*
 * serve.c — `tessera serve`: an inference server over HTTP/1.1 for fine-tuned models (the engine
 * is src/serve/). Flags are read here; the server starts (every model loaded and compiled first),
 * prints the address it listens on, and runs until SIGTERM or SIGINT, when it stops accepting,
 * answers every request already accepted and exits 0.
 *
 *   tessera serve --model NAME=DIR_OR_ONNX... [--port 8000] [--host 127.0.0.1] [--max-batch 32]
 *                 [--max-delay-ms 5] [--devices cpu] [--threads N] [--queue N] [--max-body BYTES]
 *                 [--timeout S] [--max-connections N]
 */
#include <signal.h>

#include "cli.h"

static const char *USAGE =
    "usage: tessera serve --model NAME=DIR... [options]\n"
    "  Serves fine-tuned models (DIR from tessera finetune: a text classifier or question answering)\n"
    "  over HTTP/1.1 with the KServe v2 / Triton JSON protocol: GET /v2/health/live, /v2/health/ready,\n"
    "  /v2/models/NAME, POST /v2/models/NAME/infer (tensors input_ids, token_type_ids, attention_mask\n"
    "  [B, T]); for texts POST /v1/models/NAME:predict {\"instances\": [\"text\", ...]} (QA: instances\n"
    "  {\"question\": ..., \"context\": ...}); GET /metrics (Prometheus). Requests to a model are batched:\n"
    "  gathered until --max-batch rows or --max-delay-ms, run at the shortest compiled sequence length\n"
    "  that holds them. SIGTERM or SIGINT: stop accepting, answer what was accepted, exit 0.\n"
    "  --model NAME=DIR   a model served as NAME (letters, digits, . _ -); repeat for more. NAME=FILE.onnx:\n"
    "                     an ONNX model, v2 infer only (inputs [batch, fixed dims...]); DIR of PaddleOCR's\n"
    "                     models (as tessera ocr reads them): POST an image's bytes to :predict\n"
    "  --host H           the address to listen on (default 127.0.0.1)\n"
    "  --port P           the port (default 8000; 0: a free one, printed at start)\n"
    "  --max-batch N      rows run together, at most (default 32; 1: no batching)\n"
    "  --max-delay-ms MS  how long a batch waits for more requests after its first (default 5)\n"
    "  --devices DEV      the device the models run on (default cpu)\n"
    "  --threads N        CPU threads per run (default: all)\n"
    "  --queue N          requests waiting per model before 503 + Retry-After (default 256)\n"
    "  --max-body BYTES   the largest request body (default 16777216): 413 past it\n"
    "  --timeout S        a connection idle or sending this long is closed (default 30)\n"
    "  --max-connections N  connections open at once (default 512)\n";

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

/* A non-negative integer flag up to max into *out: 0, or 2 with the message. */
static int non_negative(const char *v, const char *flag, long max, int *out) {
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (errno || end == v || *end || x < 0 || x > max) {
        fprintf(stderr, "tessera serve: %s wants an integer from 0 to %ld, not '%s'\n", flag, max, v);
        return 2;
    }
    *out = (int)x;
    return 0;
}

/* One flag at argv[*i]. 0, 2 (bad), or -1 (not a flag of serve). */
static int parse_flag(serve_args *a, int argc, char **argv, int *i, int *bad) {
    const char *v;
    int x;
    ts_serve_opts *o = &a->o;
#define VAL(flag) (v = cli_value(argc, argv, i, flag, "serve", bad))
    if (VAL("--model")) return add_model(a, v);
    if (VAL("--host")) return o->host = v, 0;
    if (VAL("--port")) return non_negative(v, "--port", 65535, &o->port);
    if (VAL("--max-delay-ms")) {
        if (non_negative(v, "--max-delay-ms", 60000, &o->max_delay_ms)) return 2;
        if (!o->max_delay_ms) o->max_delay_ms = -1; /* ts_serve_opts: 0 is the default, -1 no wait */
        return 0;
    }
    if (VAL("--devices")) {
        if (strchr(v, ',')) return fprintf(stderr, "tessera serve: --devices: one device for now, not '%s'\n", v), 2;
        return o->device = v, 0;
    }
    if (VAL("--max-body")) return non_negative(v, "--max-body", INT_MAX, &x) ? 2 : (o->max_body = (size_t)x, 0);
    struct { const char *flag; int *dst; } ints[] = {{"--max-batch", &o->max_batch}, {"--threads", &o->threads},
        {"--queue", &o->queue_cap}, {"--timeout", &o->timeout_s}, {"--max-connections", &o->max_connections}};
    for (size_t k = 0; k < sizeof ints / sizeof *ints; k++)
        if (VAL(ints[k].flag)) return (*ints[k].dst = cli_positive(v, ints[k].flag, "serve")) < 0 ? 2 : 0;
#undef VAL
    return *bad ? 2 : -1;
}

static int parse(serve_args *a, int argc, char **argv) {
    a->o = (ts_serve_opts){.struct_size = sizeof a->o, .host = "127.0.0.1", .port = 8000, .max_batch = 32,
                           .max_delay_ms = 5, .device = "cpu", .queue_cap = 256, .max_body = 16u << 20,
                           .timeout_s = 30, .max_connections = 512};
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) return fputs(USAGE, stdout), -1;
        int bad = 0, rc = parse_flag(a, argc, argv, &i, &bad);
        if (rc > 0) return rc;
        if (rc < 0) {
            fprintf(stderr, "tessera serve: unknown argument '%s'\n(tessera serve --help shows the usage)\n", argv[i]);
            return 2;
        }
    }
    if (!a->n) {
        fprintf(stderr, "tessera serve: --model NAME=DIR is required\n(tessera serve --help shows the usage)\n");
        return 2;
    }
    return 0;
}

int cli_serve(int argc, char **argv) {
    serve_args a = {0};
    int rc = parse(&a, argc, argv);
    if (rc) {
        rc = rc < 0 ? 0 : rc;
        goto done;
    }
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
    for (int i = 0; i < a.n; i++) free(a.names[i]);
    free(a.names);
    free(a.dirs);
    return rc;
}
