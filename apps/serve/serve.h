/*
 * serve.h — `tessera serve`'s engine: models loaded for inference (a fine-tuned BERT directory),
 * request bodies decoded into jobs, a batcher per model that gathers jobs into one run of a
 * program compiled at start for a sequence-length bucket and a batch size (the batch padded only
 * to the next size compiled, or run in parts where that is cheaper; one model's programs share
 * one copy of its weights), Prometheus metrics, and the HTTP/1.1
 * server of its own that ties them (KServe v2 / Triton JSON, and /v1 :predict for text).
 *
 * Files: request.c (JSON bodies -> jobs; what fuzz/fuzz_serve_request.c calls), model.c
 * (loading, buckets, running one batch), batcher.c (the queue and its thread), metrics.c,
 * reply.c (JSON answers), http.c (HTTP/1.1 connections; http1.c reads requests), server.c (start, drain, stop).
 *
 * Errors, the library's one convention: a function that fails returns its ts_status (NULL for a
 * pointer, -1 for a count) and records the message with ts_set_error, as this thread's last error
 * (ts_last_error); an HTTP request is handled on one thread, which reads it right after the call
 * that failed and answers with it. Only a job's failure on the batcher's thread crosses threads,
 * so it travels in the job (serve_job.code, .err).
 */
#ifndef TS_SERVE_H
#define TS_SERVE_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "common/app.h"

#define SERVE_MAX_BUCKETS 8
#define SERVE_MAX_BATCHES 10
#define SERVE_NAME_MAX 64

/* ------------------------------------------------------------------ what a model takes */

/* A model's inputs as requests must give them: BERT's input_ids, token_type_ids,
 * attention_mask, each [B, T] with B <= max_batch, T <= max_seq. */
typedef struct serve_sig {
    int max_batch, max_seq;
    int vocab, type_vocab;
    int qa;      /* question answering: /v1 instances are {"question", "context"} objects */
    int pairs;   /* a text-pair classifier: /v1 instances are "text<TAB>text_b" or [text, text_b] */
} serve_sig;

/* A decoded /v2 infer body: rows x T tokens per input ([rows, T] int32 each; types and mask
 * defaulted to 0 and 1 when absent); id: the request's "id" (or ""). */
typedef struct serve_tensors {
    int rows, T;
    int32_t *ids, *types, *mask;
    char id[SERVE_NAME_MAX];
} serve_tensors;

/* A decoded /v1 :predict body: n texts (a pair: text_b[i] non-NULL; QA: question in text,
 * context in text_b). */
typedef struct serve_texts {
    int n;
    char **text, **text_b;
} serve_texts;

/* An ONNX model's inputs: each [batch, d1, ...] of its declared dtype, dims after the first
 * fixed; requests give [b, d1, ...] with b <= batch, every input the same b. */
#define SERVE_MAX_IO 16
typedef struct serve_io {
    char name[SERVE_NAME_MAX];
    ts_dtype dtype;
    int ndim;
    int64_t shape[TS_MAX_DIMS]; /* shape[0]: the batch */
} serve_io;
typedef struct serve_onnx_sig {
    int batch, nin;
    serve_io in[SERVE_MAX_IO];
} serve_onnx_sig;

/* Decode a v2 infer body for an ONNX model of signature sig: in[0 .. sig->nin) get new tensors
 * [*rows, d1, ...] (the caller frees them), id[SERVE_NAME_MAX] the request's "id". TS_OK, or
 * TS_ERR_ARG with the reason (TS_ERR_NOMEM: "out of memory"; nothing to free then), which the
 * server answers with a 400. (request_onnx.c) */
ts_status serve_decode_named(const serve_onnx_sig *sig, const char *body, size_t len, ts_tensor **in, int *rows,
                             char *id);

/* Decode a POST /v2/models/NAME/infer body of len bytes for a model of signature sig into out.
 * TS_OK, or TS_ERR_ARG with the reason (bad JSON, an unknown input, a wrong shape, datatype or
 * value; TS_ERR_NOMEM: "out of memory"), answered with a 400. out is cleared either way
 * (serve_tensors_free). */
ts_status serve_decode_infer(const serve_sig *sig, const char *body, size_t len, serve_tensors *out);
void serve_tensors_free(serve_tensors *t);
/* Decode a POST /v1/models/NAME:predict body {"instances": [...]} into out: TS_OK, or the error
 * as serve_decode_infer's. */
ts_status serve_decode_texts(const serve_sig *sig, const char *body, size_t len, serve_texts *out);
void serve_texts_free(serve_texts *t);

/* ------------------------------------------------------------------ metrics (metrics.c) */

#define SERVE_LAT_BUCKETS 14
#define SERVE_BATCH_BUCKETS 9
typedef struct serve_hist {
    uint64_t count[SERVE_LAT_BUCKETS + 1]; /* per bucket (not cumulative), the last +Inf */
    double sum;
    uint64_t n;
} serve_hist;

typedef struct serve_metrics {
    pthread_mutex_t mu;
    int ncodes;
    int code[16];
    uint64_t by_code[16];
    serve_hist queue, compute, total, batch, ran;
} serve_metrics;

void serve_metrics_init(serve_metrics *m);
void serve_metrics_destroy(serve_metrics *m);
/* One request answered with HTTP status `code`. */
void serve_metrics_request(serve_metrics *m, int code, double total_s);
/* One batch of `rows` run as `ran` rows (padded to the programs' batches): the seconds each of
 * its jobs waited, and the run's. */
void serve_metrics_batch(serve_metrics *m, int rows, int ran, const double *queue_s, int njobs, double compute_s);
/* Every family in Prometheus text format, each over the n metrics m[i] labelled model=names[i]
 * (the queue depth of each: depth[i]), into a malloc'd string (NULL out of memory). */
char *serve_metrics_text(serve_metrics *const *m, const char *const *names, const int *depth, int n);

/* ------------------------------------------------------------------ models and jobs (model.c, batcher.c) */

/* One request on its way through a model's queue. */
typedef struct serve_job {
    serve_tensors in;        /* rows x T; an ONNX model's: rows and id alone */
    ts_tensor *tin[SERVE_MAX_IO], *tout[SERVE_MAX_IO]; /* an ONNX model's inputs and outputs */
    ts_image *image;         /* an OCR model's upload, and the lines read in it */
    ts_ocr_line *lines;
    int nlines;
    ts_squad *squad;         /* a QA /v1 request: its windows (in unused); run alone */
    float *out[2];           /* [rows, C] logits, or start / end logits [rows, T] (QA: [F, max_seq]) */
    int ncols;               /* C, or T */
    int code;                /* 0 when done well, else the HTTP status; err the reason */
    char err[256];
    double t_enq, t_start, t_done;
    int done;
    struct serve_job *next;
} serve_job;

typedef struct serve_model {
    char name[SERVE_NAME_MAX];
    char dir[1024];
    /* an ONNX model (onnx_model.c): its session, compiled at start for [batch, ...] */
    ts_onnx *onnx;
    ts_onnx_session *sess;
    serve_onnx_sig osig;
    int nout;
    char out_name[SERVE_MAX_IO][SERVE_NAME_MAX];
    int one_job;             /* an output not [batch, ...], or OCR: requests run one at a time */
    ts_ocr *ocr;             /* an OCR model: a folder of PaddleOCR's models, as tessera ocr reads */
    ts_bert_config cfg;
    ts_model_meta meta;
    int quant_mode;          /* tessera quantize's record: TS_QUANT_DYNAMIC / STATIC, or NONE */
    int quant_ops;           /* the int8 nodes of one program (ts_memory.quantized) */
    ts_tokenizer *tok;
    serve_sig sig;
    int nbuckets;
    int bucket[SERVE_MAX_BUCKETS];         /* sequence lengths, increasing; the last max_seq */
    int nbatches;
    int batch[SERVE_MAX_BATCHES];          /* batch sizes, increasing: 1, 2, 4, ... below max_batch, then it */
    /* batch[k] x bucket[i], all reading prog[nbuckets - 1][nbatches - 1]'s parameters */
    ts_program *prog[SERVE_MAX_BUCKETS][SERVE_MAX_BATCHES];
    ts_batch_buf bb[SERVE_MAX_BUCKETS][SERVE_MAX_BATCHES];
    double cost[SERVE_MAX_BUCKETS][SERVE_MAX_BATCHES]; /* seconds a run of each, timed at start */
    int max_delay_ms, queue_cap;
    /* the queue (batcher.c) */
    pthread_mutex_t mu;
    pthread_cond_t arrived, finished;
    serve_job *head, *tail;
    int depth;
    int stop;
    pthread_t thread;
    int started;
    serve_job **batch_jobs;  /* the batcher's: [max_batch] */
    double *batch_waited;
    serve_metrics metrics;
} serve_model;

/* How the server and its models run (defaults filled in by ts_serve_start). */
typedef ts_serve_opts serve_opts;

/* Load `name`=`dir` (a fine-tuned classifier or QA model directory) and compile its programs,
 * one per sequence bucket and batch size, sharing one copy of the weights. TS_OK, or the error
 * ("model DIR: ..."; ts_set_error). */
ts_status serve_model_load(serve_model *m, const char *name, const char *dir, const serve_opts *o);
void serve_model_free(serve_model *m);
/* The same for an ONNX file (onnx_model.c); and running a batch of its jobs (rows in all at most
 * its batch). */
ts_status serve_onnx_load(serve_model *m, const char *path, const serve_opts *o);
void serve_onnx_free(serve_model *m);
int serve_onnx_run(serve_model *m, serve_job **jobs, int n, int *ran);
/* Run jobs[0 .. n) (their rows at most max_batch in all, or one QA job) as one batch; each
 * job's out / code filled: in one run of the smallest batch size that holds the rows, or in parts
 * where the programs' costs timed at start say that is cheaper. Returns the rows run; *ran the
 * rows the programs ran (padded). */
int serve_model_run(serve_model *m, serve_job **jobs, int n, int *ran);

/* Start / stop m's batcher thread (TS_OK, or TS_ERR_RUNTIME "cannot start a thread"). */
ts_status serve_batcher_start(serve_model *m);
void serve_batcher_stop(serve_model *m);
/* Queue job j and wait for its answer: TS_OK (j->code, j->out set), or TS_ERR_RUNTIME when the
 * queue is full ("model M: the queue is full (N requests); try again": a 503). */
ts_status serve_submit(serve_model *m, serve_job *j);
void serve_job_free(serve_job *j);

/* Tokenize texts for m into a job's tensors (rows x the longest encoding). TS_OK, or TS_ERR_ARG
 * naming the instance that cannot be encoded (a 400), TS_ERR_NOMEM (a 500). */
ts_status serve_texts_encode(const serve_model *m, const serve_texts *t, serve_tensors *out);

/* body[0 .. len) parsed as a JSON object (cJSON_Delete it), or NULL with TS_ERR_ARG naming what
 * is wrong: where the JSON breaks (byte, line, column, the text there) or what the value is instead. */
struct cJSON *serve_json_object(const char *body, size_t len);

/* ------------------------------------------------------------------ answers (reply.c) */

/* The JSON answers (malloc'd strings; NULL out of memory). */
char *serve_reply_error(const char *msg);
char *serve_reply_infer(const serve_model *m, const serve_job *j);
char *serve_reply_predict(const serve_model *m, const serve_job *j, const serve_texts *t);
char *serve_reply_metadata(const serve_model *m);
char *serve_reply_infer_onnx(const serve_model *m, const serve_job *j);
char *serve_reply_ocr(const serve_job *j);
char *serve_reply_metadata_onnx(const serve_model *m);

/* ------------------------------------------------------------------ the server (server.c, http.c) */

typedef struct ts_serve serve_server;

/* What http.c needs of the server (server.c). */
serve_model *serve_find_model(serve_server *s, const char *name, size_t len);
int serve_nmodels(const serve_server *s);
serve_model *serve_model_at(serve_server *s, int i);
serve_metrics *serve_server_metrics(serve_server *s);
int serve_draining(const serve_server *s);
/* The largest request body s takes, in bytes (its ts_serve_opts.max_body). */
size_t serve_max_body(const serve_server *s);
void serve_inflight(serve_server *s, int delta);

/* ------------------------------------------------------------------ connections (conns.c) */

/* One open connection: its socket, since when it has been waiting for its request (it opened,
 * or its previous answer went out), whether its request is in and being answered (running: no
 * deadline), whether it came past --max-connections (over: answered 503), whether it was cut. */
typedef struct serve_conn {
    int fd;
    double since;
    int running, over, cut;
    struct serve_conn *prev, *next;
} serve_conn;

/* The open connections and the watchdog thread that enforces the read deadline and answers the
 * connections past the limit that do not send their headers within a second. */
typedef struct serve_conns {
    pthread_mutex_t mu;
    pthread_cond_t wake;
    pthread_t watch;
    int started, stop;
    serve_conn *head;
    int open, max;
    double read_timeout_s;
    uint64_t refused, cut_read, cut_drain;
} serve_conns;

/* What a connection past the limit is answered (503, with Retry-After). */
#define SERVE_FULL_MSG "the server has its most connections open; try again"

/* An answer written straight to socket fd, not waiting for it to take it all (MSG_DONTWAIT): HTTP
 * status code with its reason phrase, {"error": msg} (msg without quotes or backslashes), Retry-After
 * 1 on a 503, and the connection closed after it. For the answers given outside a request's own
 * thread: the watchdog's, and the accepting thread's past every limit. */
void serve_write_raw(int fd, int code, const char *reason, const char *msg);

/* Start the watchdog (TS_OK, or TS_ERR_RUNTIME); stop it and free what is left. */
ts_status serve_conns_init(serve_conns *cs, int max_connections, double read_timeout_s);
void serve_conns_destroy(serve_conns *cs);
/* A connection opened on socket fd (NULL out of memory: it is then not tracked), and closed. */
serve_conn *serve_conns_open(serve_conns *cs, int fd);
void serve_conns_close(serve_conns *cs, serve_conn *c);
/* c's request is in and being answered (running 1), or answered (0: the next one's wait starts). */
void serve_conn_state(serve_conns *cs, serve_conn *c, int running);
/* Count one connection answered 503 for the limit (by http.c). */
void serve_conn_refused(serve_conns *cs);
/* Shut down every connection still open (the drain's end): how many. */
int serve_conns_cut_all(serve_conns *cs);
int serve_conns_open_count(serve_conns *cs);
/* The connection families of /metrics in Prometheus text (malloc'd; NULL out of memory). */
char *serve_conns_metrics_text(serve_conns *cs);

/* The HTTP server (http.c): started listening on o->host:o->port (*port: the port bound), NULL
 * with the error (TS_ERR_IO) when it cannot; quiesce stops accepting connections; stop closes the
 * rest. */
void *serve_http_start(serve_server *s, const serve_opts *o, int *port);
void serve_http_quiesce(void *http);
/* Shut down every connection still open (after the drain timeout): how many. */
int serve_http_cut(void *http);
/* TS_OK in a build with the HTTP server (TS_WITH_SERVE); else TS_ERR_UNSUPPORTED with the reason. */
ts_status serve_http_built(void);
void serve_http_stop(void *http);

#endif
