/*
 * fuzz_http1.c — libFuzzer target for `tessera serve`'s HTTP/1.1 reader (apps/serve/http1.c). The
 * first byte picks what the rest is: bit 0 clear, a request head (http1_parse_head), bit 0 set, a
 * chunked body (http1_chunks_feed); the second byte is where the input is cut in two. Findings
 * besides a crash, a leak or undefined behaviour:
 *  - a head: a whole one has its length within the input, a method and a target; a refusal has a
 *    status among 400, 414, 417, 431, 501, 505 and a message; an input of a whole head read in
 *    any shorter prefix is "more needed" (0), never refused nor whole, so a server reading it in
 *    pieces decides as one reading it at once;
 *  - a chunked body: fed in two pieces, the same outcome, the same bytes used and the same data as
 *    fed at once.
 */
#include "serve/http1.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_HEAD = 16384, OUT_CAP = 4096 };

static void fail(const char *what) {
    fprintf(stderr, "fuzz_http1: %s\n", what);
    abort();
}

static void head(const char *in, size_t n, size_t cut) {
    http1_head h;
    int status;
    char msg[200];
    int rc = http1_parse_head(in, n, MAX_HEAD, &h, &status, msg, sizeof msg);
    if (rc > 0 && ((size_t)rc > n || !h.method[0] || !h.target[0] || status))
        fail("a whole head with no method, no target, or past the input");
    if (rc < 0 && (!msg[0] || (status != 400 && status != 414 && status != 417 && status != 431 && status != 501 &&
                               status != 505)))
        fail("a refusal without a message or with an unexpected status");
    if (rc == 0 && n >= MAX_HEAD) fail("more bytes wanted past the head's limit");
    if (rc > 0 && cut < (size_t)rc && http1_parse_head(in, cut, MAX_HEAD, &h, &status, msg, sizeof msg) != 0)
        fail("a prefix of a whole head was not 'more needed'");
}

static void chunks(const char *in, size_t n, size_t cut) {
    static char a[OUT_CAP], b[OUT_CAP];
    char msg[200];
    http1_chunks c1 = {0}, c2 = {0};
    size_t u1 = 0, l1 = 0, u2 = 0, l2 = 0, u3 = 0;
    int r1 = http1_chunks_feed(&c1, in, n, &u1, a, OUT_CAP, &l1, msg, sizeof msg);
    int r2 = http1_chunks_feed(&c2, in, cut, &u2, b, OUT_CAP, &l2, msg, sizeof msg);
    if (r2 == 0) { /* all of the first piece taken: the rest */
        r2 = http1_chunks_feed(&c2, in + cut, n - cut, &u3, b, OUT_CAP, &l2, msg, sizeof msg);
        u2 += u3;
    }
    if (u1 > n || l1 > OUT_CAP) fail("used or decoded past the input or the room");
    if (r1 != r2 || l1 != l2 || memcmp(a, b, l1) || (r1 != 0 && u1 != u2))
        fail("two pieces decoded differently from one");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 2) return 0;
    const char *in = (const char *)data + 2;
    size_t n = size - 2, cut = n ? data[1] % (n + 1) : 0;
    if (data[0] & 1) chunks(in, n, cut);
    else head(in, n, cut);
    return 0;
}
