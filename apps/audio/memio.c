/*
 * memio.c — libsndfile's virtual I/O over memory: decoding bytes already in memory
 * (ts_audio_decode) and writing a WAV file into memory before it is written atomically
 * (ts_audio_write_wav).
 */
#include <stdlib.h>
#include <string.h>

#include "audio/sndfile_io.h"

static sf_count_t mem_len(void *u) { return (sf_count_t)((ts_memio *)u)->len; }

static sf_count_t mem_seek(sf_count_t off, int whence, void *u) {
    ts_memio *m = u;
    sf_count_t base = whence == SEEK_CUR ? (sf_count_t)m->pos : whence == SEEK_END ? (sf_count_t)m->len : 0;
    if (off < -base || off > INT64_MAX / 2) return -1; /* before the start, or absurdly far */
    m->pos = (size_t)(base + off);
    return (sf_count_t)m->pos;
}

static sf_count_t mem_read(void *ptr, sf_count_t count, void *u) {
    ts_memio *m = u;
    const uint8_t *src = m->data ? m->data : m->buf;
    if (count <= 0 || m->pos >= m->len) return 0;
    size_t k = m->len - m->pos;
    if ((uint64_t)count < k) k = (size_t)count;
    memcpy(ptr, src + m->pos, k);
    m->pos += k;
    return (sf_count_t)k;
}

static sf_count_t mem_write(const void *ptr, sf_count_t count, void *u) {
    ts_memio *m = u;
    if (m->data || count < 0) return 0; /* a read-only buffer */
    size_t end = m->pos + (size_t)count;
    if (end > m->cap) {
        size_t cap = m->cap ? m->cap : 4096;
        while (cap < end) cap *= 2;
        uint8_t *bigger = realloc(m->buf, cap);
        if (!bigger) {
            m->nomem = 1;
            return 0;
        }
        m->buf = bigger;
        m->cap = cap;
    }
    if (m->pos > m->len) memset(m->buf + m->len, 0, m->pos - m->len); /* a seek past the end */
    memcpy(m->buf + m->pos, ptr, (size_t)count);
    m->pos = end;
    if (end > m->len) m->len = end;
    return count;
}

static sf_count_t mem_tell(void *u) { return (sf_count_t)((ts_memio *)u)->pos; }

SF_VIRTUAL_IO ts_memio_calls = {mem_len, mem_seek, mem_read, mem_write, mem_tell};
