/*
 * http1.h — HTTP/1.1 requests read from bytes (RFC 9112), for `tessera serve`'s own server
 * (http.c): the request line and headers, and a chunked body decoded as it arrives. Pure
 * functions of their input (no I/O), so that a fuzzer drives them (fuzz/fuzz_http1.c). Every
 * refusal comes with the status to answer and a message naming what is wrong.
 */
#ifndef TS_SERVE_HTTP1_H
#define TS_SERVE_HTTP1_H

#include <stddef.h>
#include <stdint.h>

enum { HTTP1_MAX_TARGET = 2048 };

/* A request's head as the server needs it. */
typedef struct http1_head {
    char method[16];
    char target[HTTP1_MAX_TARGET]; /* the request target as sent ("/v2/models/m/infer") */
    int minor;                     /* HTTP/1.minor: 0 or 1 */
    int64_t content_length;        /* -1: no Content-Length */
    int chunked;                   /* Transfer-Encoding: chunked */
    int keep_alive;                /* the connection stays open after the answer */
    int expect_continue;           /* Expect: 100-continue */
} http1_head;

/* The head at the start of buf[0 .. len) (empty lines before the request line skipped): its length
 * through the blank line that ends it when it is whole and valid; 0 when more bytes are needed
 * and what came so far could start a valid head; -1 when it is not one: *status (400, 414, 431,
 * 501, 505 or 417) and msg say why. A head longer than max_head is refused (431) as soon as that
 * many bytes came without its end; a request line that cannot be one (a method that is not a
 * token, a control byte) as soon as the byte arrives. */
int http1_parse_head(const char *buf, size_t len, size_t max_head, http1_head *h, int *status, char *msg,
                     size_t msgcap);

/* A chunked body decoded as its bytes arrive: chunk sizes in hex with optional extensions, each
 * chunk's data then CRLF, a last chunk of size 0, optional trailer lines, a blank line. */
typedef struct http1_chunks {
    int state;
    int digits;     /* hex digits of the size line so far */
    uint64_t left;  /* bytes of the current chunk still to come, or its size being read */
    size_t line;    /* bytes of the current extension or trailer line */
} http1_chunks;

/* Decode in[0 .. n): data bytes are appended to out[*out_len ..] (room out_cap). *used gets the
 * bytes of in consumed. Returns 1 when the body ended (bytes after it in `in` are the next
 * request's), 0 when all of in was taken and more is needed, -1 when the framing is wrong (msg
 * says where; answer 400), -2 when the data would pass out_cap (answer 413). */
int http1_chunks_feed(http1_chunks *c, const char *in, size_t n, size_t *used, char *out, size_t out_cap,
                      size_t *out_len, char *msg, size_t msgcap);

#endif
