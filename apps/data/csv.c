/*
 * csv.c — a streaming reader of delimited records: CSV as RFC 4180 has it (fields separated by
 * commas, a field in double quotes may hold commas, line breaks and doubled "" quotes; lines end
 * in LF or CRLF) and TSV without quoting (fields separated by tabs, as GLUE's files are read).
 * Reads one physical line at a time, so files larger than memory stream; every record knows the
 * line it began on, for error messages.
 */
#include "data/data.h"

#include <errno.h>

ts_status ts_csv_open(ts_csv *c, const char *path, char sep, int quoting) {
    memset(c, 0, sizeof *c);
    c->path = path;
    c->sep = sep;
    c->quoting = quoting;
    c->f = fopen(path, "rb");
    if (!c->f) return ts_set_error(TS_ERR_IO, "cannot open '%s': %s", path, strerror(errno));
    unsigned char bom[3];
    size_t got = fread(bom, 1, 3, c->f);
    if (!(got == 3 && bom[0] == 0xEF && bom[1] == 0xBB && bom[2] == 0xBF)) rewind(c->f);
    return TS_OK;
}

void ts_csv_close(ts_csv *c) {
    if (c->f) fclose(c->f);
    free(c->raw);
    free(c->buf);
    free(c->field);
    memset(c, 0, sizeof *c);
}

static int put(ts_csv *c, char ch) {
    if (c->len + 1 >= c->cap) {
        size_t n = c->cap ? c->cap * 2 : 1024;
        char *b = realloc(c->buf, n);
        if (!b) return 0;
        c->buf = b;
        c->cap = n;
    }
    c->buf[c->len++] = ch;
    return 1;
}

/* End the current field (NUL-terminate it) and start the next at the current length. */
static int end_field(ts_csv *c) {
    if (!put(c, 0)) return 0;
    if (c->nfield + 1 >= c->fieldcap) {
        int n = c->fieldcap ? c->fieldcap * 2 : 16;
        size_t *f = realloc(c->field, (size_t)n * sizeof *f);
        if (!f) return 0;
        c->field = f;
        c->fieldcap = n;
    }
    c->field[++c->nfield] = c->len;
    return 1;
}

/* Next physical line into c->raw; its length without the line break in *n, the break's length
 * (0, 1 or 2) in *brk. 0 at the end of the file. */
static int read_line(ts_csv *c, size_t *n, size_t *brk, ts_status *st) {
    errno = 0;
    ssize_t got = getline(&c->raw, &c->rawcap, c->f);
    if (got < 0) {
        if (ferror(c->f))
            *st = ts_set_error(TS_ERR_IO, "%s:%lld: read error: %s", c->path, (long long)c->line + 1,
                               strerror(errno ? errno : EIO));
        return 0;
    }
    c->line++;
    size_t len = (size_t)got, b = 0;
    if (len && c->raw[len - 1] == '\n') len--, b++;
    if (b && len && c->raw[len - 1] == '\r') len--, b++;
    *n = len;
    *brk = b;
    return 1;
}

ts_status ts_csv_next(ts_csv *c, int *nfields) {
    *nfields = 0;
    ts_status st = TS_OK;
    size_t n, brk;
    for (;;) { /* skip blank lines */
        if (!read_line(c, &n, &brk, &st)) return st;
        if (n > 0) break;
    }
    c->rec_line = c->line;
    if (!c->field) {
        c->field = malloc(16 * sizeof *c->field);
        if (!c->field) goto oom;
        c->fieldcap = 16;
    }
    c->len = 0;
    c->nfield = 0;
    c->field[0] = 0;
    if (!c->quoting) {
        for (size_t i = 0; i < n; i++) {
            if (c->raw[i] == c->sep) {
                if (!end_field(c)) goto oom;
            } else if (!put(c, c->raw[i])) {
                goto oom;
            }
        }
        if (!end_field(c)) goto oom;
        *nfields = c->nfield;
        return TS_OK;
    }

    /* RFC 4180: states at the start of a field, inside an unquoted field, inside quotes, and
     * just after a closing quote. */
    enum { START, PLAIN, QUOTED, AFTER } s = START;
    size_t i = 0;
    for (;;) {
        if (i == n) { /* end of the physical line */
            if (s == QUOTED) { /* the line break belongs to the field */
                if (brk == 2 && !put(c, '\r')) goto oom;
                if (brk && !put(c, '\n')) goto oom;
                if (!read_line(c, &n, &brk, &st)) {
                    if (st != TS_OK) return st;
                    return ts_set_error(TS_ERR_IO, "%s:%lld: a quoted field is not closed before the end of the file",
                                        c->path, (long long)c->rec_line);
                }
                i = 0;
                continue;
            }
            if (!end_field(c)) goto oom;
            break;
        }
        char ch = c->raw[i++];
        switch (s) {
        case START:
            if (ch == '"') {
                s = QUOTED;
                break;
            }
            s = PLAIN;
            /* fall through */
        case PLAIN:
            if (ch == c->sep) {
                if (!end_field(c)) goto oom;
                s = START;
            } else if (!put(c, ch)) {
                goto oom;
            }
            break;
        case QUOTED:
            if (ch == '"') s = AFTER;
            else if (!put(c, ch)) goto oom;
            break;
        case AFTER:
            if (ch == '"') { /* "" inside quotes */
                if (!put(c, '"')) goto oom;
                s = QUOTED;
            } else if (ch == c->sep) {
                if (!end_field(c)) goto oom;
                s = START;
            } else {
                return ts_set_error(
                    TS_ERR_IO,
                    "%s:%lld: '%c' after the closing quote of field %d (a quote inside a quoted field is written \"\")",
                    c->path, (long long)c->line, ch, c->nfield + 1);
            }
            break;
        }
    }
    *nfields = c->nfield;
    return TS_OK;
oom:
    return ts_set_error(TS_ERR_NOMEM, "%s:%lld: out of memory", c->path, (long long)c->rec_line);
}
