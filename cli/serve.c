/*
 * serve.c — `tessera serve`: an inference server over HTTP/1.1 for fine-tuned models (apps/serve:
 * ts_serve_start); here its flags, and the wait for SIGTERM or SIGINT, which stops it.
 */
#include <signal.h>

#include "cli.h"
#include "options.h"

static const char *USAGE =
    "  Serves fine-tuned models (DIR from tessera finetune: a text classifier or question answering)\n"
    "  over HTTP/1.1 with the KServe v2 / Triton JSON protocol: GET /v2/health/live, /v2/health/ready,\n"
    "  /v2/models/NAME, POST /v2/models/NAME/infer (tensors input_ids, token_type_ids, attention_mask\n"
    "  [B, T]); for texts POST /v1/models/NAME:predict {\"instances\": [\"text\", ...]} (QA: instances\n"
    "  {\"question\": ..., \"context\": ...}; at most --max-batch instances a request); GET /metrics\n"
    "  (Prometheus). /v2/models/NAME/versions/1/... is the same model. Requests to a model are batched:\n"
    "  gathered until --max-batch rows or --max-delay-ms, run at the shortest compiled sequence length\n"
    "  that holds them. SIGTERM or SIGINT: stop accepting, answer what was accepted (for at most\n"
    "  --drain-timeout), exit 0.\n";

int cli_serve(int argc, char **argv) {
    ts_serve_opts o = {.struct_size = sizeof o, .host = "127.0.0.1", .port = 8000, .max_batch = 32,
                       .max_delay_ms = 5, .device = "cpu", .queue_cap = 256, .timeout_s = 30, .max_connections = 512,
                       .read_timeout_s = 60, .drain_timeout_s = 20};
    cli_strlist models = {0};
    int max_body = 16 << 20;
    const cli_opt opts[] = {
        {"model", CLI_LIST, &models, 1, "NAME=DIR",
         "models served as NAME (letters, digits, . _ -): --model a=DIR b=DIR.\n"
         "NAME=FILE.onnx: an ONNX model, v2 infer only (inputs [batch, fixed dims...]);\n"
         "DIR of PaddleOCR's models (as tessera ocr reads them): POST an image's bytes\n"
         "to :predict", NULL},
        {"host", CLI_STR, &o.host, 0, "H", "the address to listen on (default 127.0.0.1)", NULL},
        {"port", CLI_INT, &o.port, 0, "P", "the port (default 8000; 0: a free one, printed at start)", NULL},
        {"max-batch", CLI_INT, &o.max_batch, 1, "N", "rows run together, at most (default 32; 1: no batching)", NULL},
        {"max-delay-ms", CLI_INT, &o.max_delay_ms, 0, "MS",
         "how long a batch waits for more requests after its first (default 5)", NULL},
        {"device", CLI_STR, &o.device, 0, "DEV", "the device the models run on (default cpu)", "devices"},
        {"threads", CLI_INT, &o.threads, 0, "N", "CPU threads per run (default 0: all)", NULL},
        {"queue", CLI_INT, &o.queue_cap, 1, "N",
         "requests waiting per model before 503 + Retry-After (default 256)", NULL},
        {"max-body", CLI_INT, &max_body, 0, "BYTES", "the largest request body (default 16777216): 413 past it", NULL},
        {"timeout", CLI_INT, &o.timeout_s, 1, "S",
         "a connection idle or sending this long is closed (default 30)", NULL},
        {"max-connections", CLI_INT, &o.max_connections, 1, "N", "open at once (default 512); past it: 503", NULL},
        {"read-timeout", CLI_INT, &o.read_timeout_s, 1, "S", "a request must arrive within S s, else 408 (60)", NULL},
        {"drain-timeout", CLI_INT, &o.drain_timeout_s, 1, "S", "at SIGTERM, answer for at most S s (default 20)", NULL},
    };
    cli_optset os;
    int rc = cli_opts_parse(&os, "serve", USAGE, opts, (int)(sizeof opts / sizeof *opts), argc, argv);
    if (rc != 1) goto done;
    if (!o.max_delay_ms) o.max_delay_ms = -1; /* ts_serve_opts: 0 is the default, -1 no wait */
    o.max_body = (size_t)max_body;
    /* SIGTERM and SIGINT are taken by sigwait below, in this thread alone: blocked before the
     * server's threads start, so they inherit the mask */
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGTERM);
    sigaddset(&stop, SIGINT);
    pthread_sigmask(SIG_BLOCK, &stop, NULL);
    ts_serve *s = ts_serve_start_models(&o, models.v, models.n);
    if (!s) {
        rc = cli_fail("serve", "", ts_last_status() == TS_ERR_ARG ? 2 : 1);
        goto done;
    }
    printf("tessera serve: listening on http://%s:%d (", o.host, ts_serve_port(s));
    for (int i = 0; i < models.n; i++) printf("%s%.*s", i ? ", " : "", (int)strcspn(models.v[i], "="), models.v[i]);
    printf(")\n");
    fflush(stdout);
    int sig = 0;
    sigwait(&stop, &sig);
    fprintf(stderr, "tessera serve: %s: answering the requests accepted, then stopping\n",
            sig == SIGTERM ? "SIGTERM" : "SIGINT");
    ts_serve_stop(s);
    fprintf(stderr, "tessera serve: stopped\n");
    rc = 0;
done:
    cli_opts_free(&os); /* after the server: the options point into its strings */
    return rc;
}
