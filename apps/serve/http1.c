/*
 * http1.c — HTTP/1.1 requests read from bytes (http1.h): the head (request line and headers) and a
 * chunked body, strictly enough that a server can answer every malformed request with a status
 * and a reason (RFC 9112: a request line "METHOD SP TARGET SP HTTP/1.x", header lines "NAME:
 * VALUE" without obsolete folding, one Content-Length of digits, Transfer-Encoding chunked only and
 * never beside a Content-Length).
 */
#include "serve/http1.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

enum { MAX_HEADERS = 100, MAX_EXT = 4096, MAX_TRAILER = 8192 };

__attribute__((format(printf, 5, 6))) static int fail(int *status, char *msg, size_t cap, int code, const char *fmt,
                                                      ...) {
    va_list ap;
    va_start(ap, fmt);
    if (cap) vsnprintf(msg, cap, fmt, ap);
    va_end(ap);
    *status = code;
    return -1;
}

/* RFC 9110's tchar: what a method or a header name is made of. */
static int tchar(unsigned char c) { return isalnum(c) || (c && strchr("!#$%&'*+-.^_`|~", c)); }

/* A byte a field value may hold: visible ASCII, space, tab, or obs-text. */
static int value_byte(unsigned char c) { return c == '\t' || (c >= 0x20 && c != 0x7f); }

/* The request line line[0 .. n) (no line break) into h. 0, or -1 with the status. */
static int request_line(const char *line, size_t n, http1_head *h, int *status, char *msg, size_t cap) {
    size_t m = 0;
    while (m < n && tchar((unsigned char)line[m])) m++;
    if (m == 0 || m >= n || line[m] != ' ')
        return fail(status, msg, cap, 400, "the request line is not METHOD TARGET HTTP/1.x");
    if (m >= sizeof h->method) return fail(status, msg, cap, 501, "the method is longer than 15 bytes");
    memcpy(h->method, line, m), h->method[m] = 0;
    size_t t0 = m + 1, t = t0;
    while (t < n && line[t] != ' ') {
        unsigned char c = (unsigned char)line[t++];
        if (c < 0x21 || c > 0x7e) return fail(status, msg, cap, 400, "a byte 0x%02x in the request target", c);
    }
    if (t == t0) return fail(status, msg, cap, 400, "the request line has no target");
    if (t - t0 >= HTTP1_MAX_TARGET)
        return fail(status, msg, cap, 414, "the request target is longer than %d bytes", HTTP1_MAX_TARGET - 1);
    memcpy(h->target, line + t0, t - t0), h->target[t - t0] = 0;
    const char *v = line + t + 1;
    size_t vn = t < n ? n - t - 1 : 0;
    if (t >= n || vn != 8 || strncmp(v, "HTTP/", 5) || !isdigit((unsigned char)v[5]) || v[6] != '.' ||
        !isdigit((unsigned char)v[7]))
        return fail(status, msg, cap, 400, "the request line does not end in HTTP/1.0 or HTTP/1.1");
    if (v[5] != '1') return fail(status, msg, cap, 505, "HTTP/%c.%c is not supported (HTTP/1.0 and 1.1 are)", v[5], v[7]);
    h->minor = v[7] == '0' ? 0 : 1;
    return 0;
}

/* What the connection headers said, folded into h at the end. */
typedef struct seen {
    int close, keep, headers;
} seen;

/* Header line line[0 .. n) into h. 0, or -1 with the status. */
static int header_line(const char *line, size_t n, http1_head *h, seen *s, int *status, char *msg, size_t cap) {
    if (++s->headers > MAX_HEADERS) return fail(status, msg, cap, 431, "more than %d header lines", MAX_HEADERS);
    if (line[0] == ' ' || line[0] == '\t')
        return fail(status, msg, cap, 400, "a header line folded onto the one before (obsolete folding) is refused");
    size_t k = 0;
    while (k < n && tchar((unsigned char)line[k])) k++;
    if (k == 0 || k >= n || line[k] != ':')
        return fail(status, msg, cap, 400, "header line %d is not NAME: VALUE", s->headers);
    const char *name = line;
    size_t nl = k, a = k + 1, b = n;
    while (a < b && (line[a] == ' ' || line[a] == '\t')) a++;
    while (b > a && (line[b - 1] == ' ' || line[b - 1] == '\t')) b--;
    for (size_t i = a; i < b; i++)
        if (!value_byte((unsigned char)line[i]))
            return fail(status, msg, cap, 400, "header %.*s holds a control byte 0x%02x", (int)(nl > 64 ? 64 : nl),
                        name, (unsigned char)line[i]);
    const char *v = line + a;
    size_t vn = b - a;
#define IS(s) (nl == sizeof s - 1 && !strncasecmp(name, s, nl))
#define VALUE_IS(s) (vn == sizeof s - 1 && !strncasecmp(v, s, vn))
    if (IS("content-length")) {
        int64_t x = 0;
        size_t i = 0;
        for (; i < vn && i < 18 && isdigit((unsigned char)v[i]); i++) x = x * 10 + (v[i] - '0');
        if (vn == 0 || i != vn)
            return fail(status, msg, cap, 400, "Content-Length '%.*s' is not a number of bytes", (int)(vn > 32 ? 32 : vn),
                        v);
        if (h->content_length >= 0 && h->content_length != x)
            return fail(status, msg, cap, 400, "two Content-Length headers that differ");
        h->content_length = x;
    } else if (IS("transfer-encoding")) {
        if (!VALUE_IS("chunked"))
            return fail(status, msg, cap, 501, "Transfer-Encoding '%.*s' is not supported (chunked is)",
                        (int)(vn > 32 ? 32 : vn), v);
        if (h->chunked) return fail(status, msg, cap, 400, "Transfer-Encoding: chunked twice");
        h->chunked = 1;
    } else if (IS("connection")) {
        for (size_t i = 0; i < vn;) { /* a comma-separated list of options */
            size_t j = i;
            while (j < vn && v[j] != ',') j++;
            size_t x = i, y = j;
            while (x < y && (v[x] == ' ' || v[x] == '\t')) x++;
            while (y > x && (v[y - 1] == ' ' || v[y - 1] == '\t')) y--;
            if (y - x == 5 && !strncasecmp(v + x, "close", 5)) s->close = 1;
            if (y - x == 10 && !strncasecmp(v + x, "keep-alive", 10)) s->keep = 1;
            i = j + 1;
        }
    } else if (IS("expect")) {
        if (!VALUE_IS("100-continue"))
            return fail(status, msg, cap, 417, "Expect '%.*s' is not supported (100-continue is)", (int)(vn > 32 ? 32 : vn),
                        v);
        h->expect_continue = 1;
    }
#undef IS
#undef VALUE_IS
    return 0;
}

/* Bytes that come before the end of a request line that cannot become one: a control byte, or a
 * method that is not a token followed by a space. 0, or -1 with the status. */
static int early_line(const char *p, size_t n, int *status, char *msg, size_t cap) {
    size_t m = 0;
    while (m < n && tchar((unsigned char)p[m])) m++;
    if (m < n && (m == 0 || p[m] != ' ')) {
        unsigned char c = (unsigned char)p[m];
        if (c != '\r' || m + 1 < n) return fail(status, msg, cap, 400, "the request line is not METHOD TARGET HTTP/1.x");
    }
    if (m >= 16) return fail(status, msg, cap, 501, "the method is longer than 15 bytes");
    for (size_t i = m; i < n; i++) {
        unsigned char c = (unsigned char)p[i];
        if ((c < 0x20 && !(c == '\r' && i + 1 == n)) || c == 0x7f)
            return fail(status, msg, cap, 400, "a control byte 0x%02x in the request line", c);
    }
    if (n > HTTP1_MAX_TARGET + 32)
        return fail(status, msg, cap, 414, "the request target is longer than %d bytes", HTTP1_MAX_TARGET - 1);
    return 0;
}

int http1_parse_head(const char *buf, size_t len, size_t max_head, http1_head *h, int *status, char *msg,
                     size_t msgcap) {
    memset(h, 0, sizeof *h);
    h->content_length = -1;
    *status = 0;
    if (msgcap) msg[0] = 0;
    size_t i = 0;
    while (i < len && (buf[i] == '\r' || buf[i] == '\n')) i++; /* empty lines before the request line */
    if (i >= max_head) return fail(status, msg, msgcap, 431, "more than %zu bytes before a request line", max_head);
    const char *eol = memchr(buf + i, '\n', len - i);
    if (!eol) {
        if (early_line(buf + i, len - i, status, msg, msgcap)) return -1;
        return len >= max_head ? fail(status, msg, msgcap, 431, "the request's head is longer than %zu bytes", max_head)
                               : 0;
    }
    size_t n = (size_t)(eol - (buf + i));
    if (n && buf[i + n - 1] == '\r') n--;
    for (size_t k = 0; k < n; k++) {
        unsigned char c = (unsigned char)buf[i + k];
        if (c < 0x20 || c == 0x7f) return fail(status, msg, msgcap, 400, "a control byte 0x%02x in the request line", c);
    }
    if (request_line(buf + i, n, h, status, msg, msgcap)) return -1;
    seen s = {0};
    for (const char *p = eol + 1;;) {
        const char *q = memchr(p, '\n', (size_t)(buf + len - p));
        if (!q || (size_t)(q + 1 - buf) > max_head) {
            if ((size_t)(q ? q + 1 - buf : (const char *)buf + len - buf) >= max_head)
                return fail(status, msg, msgcap, 431, "the request's head is longer than %zu bytes", max_head);
            return 0;
        }
        size_t ln = (size_t)(q - p);
        if (ln && p[ln - 1] == '\r') ln--;
        if (ln == 0) { /* the blank line: the head is whole */
            if (h->chunked && h->content_length >= 0)
                return fail(status, msg, msgcap, 400, "Content-Length and Transfer-Encoding: chunked together");
            if (h->chunked && h->minor == 0)
                return fail(status, msg, msgcap, 400, "Transfer-Encoding: chunked in an HTTP/1.0 request");
            h->keep_alive = h->minor ? !s.close : s.keep && !s.close;
            return (int)(q + 1 - buf);
        }
        if (header_line(p, ln, h, &s, status, msg, msgcap)) return -1;
        p = q + 1;
    }
}

/* ------------------------------------------------------------------ chunked bodies */

enum { C_SIZE, C_EXT, C_SIZE_LF, C_DATA, C_DATA_CR, C_DATA_LF, C_TRAILER, C_TRAILER_LINE, C_TRAILER_LF, C_END_LF };

static int hexval(unsigned char c) { return isdigit(c) ? c - '0' : isxdigit(c) ? (tolower(c) - 'a' + 10) : -1; }

/* The size line ended: the chunk's data next, or the trailer after the last chunk. */
static void size_done(http1_chunks *c) {
    c->state = c->left ? C_DATA : C_TRAILER;
    c->digits = 0;
}

int http1_chunks_feed(http1_chunks *c, const char *in, size_t n, size_t *used, char *out, size_t out_cap,
                      size_t *out_len, char *msg, size_t msgcap) {
    int st = 0;
#define BAD(...) return *used = i, fail(&st, msg, msgcap, 400, __VA_ARGS__)
    size_t i = 0;
    while (i < n) {
        unsigned char ch = (unsigned char)in[i];
        switch (c->state) {
        case C_SIZE: {
            int v = hexval(ch);
            if (v >= 0) {
                if (c->digits == 15) BAD("a chunk size of more than 15 hexadecimal digits");
                c->left = c->left * 16 + (uint64_t)v, c->digits++, i++;
            } else if (!c->digits) {
                BAD("a chunk size is not a hexadecimal number (byte 0x%02x)", ch);
            } else if (ch == ';' || ch == ' ' || ch == '\t') {
                c->state = C_EXT, c->line = 0, i++;
            } else if (ch == '\r') {
                c->state = C_SIZE_LF, i++;
            } else if (ch == '\n') {
                size_done(c), i++;
            } else {
                BAD("a chunk size followed by byte 0x%02x, not a line end", ch);
            }
            break;
        }
        case C_EXT:
            if (ch == '\r') c->state = C_SIZE_LF;
            else if (ch == '\n') size_done(c);
            else if ((ch < 0x20 && ch != '\t') || ch == 0x7f) BAD("a control byte 0x%02x in a chunk extension", ch);
            else if (++c->line > MAX_EXT) BAD("a chunk extension longer than %d bytes", MAX_EXT);
            i++;
            break;
        case C_SIZE_LF:
            if (ch != '\n') BAD("a chunk size line ends in CR without LF");
            size_done(c), i++;
            break;
        case C_DATA: {
            if (c->left > out_cap - *out_len) /* the whole chunk, so that pieces decide as the whole does */
                return *used = i, fail(&st, msg, msgcap, 413, "the body is too large"), -2;
            size_t take = n - i < c->left ? n - i : (size_t)c->left;
            memcpy(out + *out_len, in + i, take);
            *out_len += take, i += take, c->left -= take;
            if (!c->left) c->state = C_DATA_CR;
            break;
        }
        case C_DATA_CR:
            if (ch == '\r') c->state = C_DATA_LF;
            else if (ch == '\n') c->state = C_SIZE, c->left = 0;
            else BAD("a chunk's data is longer than its size");
            i++;
            break;
        case C_DATA_LF:
            if (ch != '\n') BAD("a chunk's data ends in CR without LF");
            c->state = C_SIZE, c->left = 0, i++;
            break;
        case C_TRAILER:
            if (ch == '\r') c->state = C_END_LF, i++;
            else if (ch == '\n') return *used = i + 1, 1;
            else c->state = C_TRAILER_LINE, c->line = 0;
            break;
        case C_TRAILER_LINE:
            if (ch == '\r') c->state = C_TRAILER_LF;
            else if (ch == '\n') c->state = C_TRAILER;
            else if ((ch < 0x20 && ch != '\t') || ch == 0x7f) BAD("a control byte 0x%02x in a trailer line", ch);
            else if (++c->line > MAX_TRAILER) BAD("a trailer line longer than %d bytes", MAX_TRAILER);
            i++;
            break;
        case C_TRAILER_LF:
            if (ch != '\n') BAD("a trailer line ends in CR without LF");
            c->state = C_TRAILER, i++;
            break;
        case C_END_LF:
            if (ch != '\n') BAD("the chunked body's last line ends in CR without LF");
            return *used = i + 1, 1;
        default:
            BAD("the chunked decoder is in no state");
        }
    }
#undef BAD
    *used = n;
    return 0;
}
