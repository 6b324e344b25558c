/* strmap.c — the string interning table (see strmap.h): FNV-1a hash, linear probing, load <= 1/2. */
#include "text/strmap.h"

#include <stdlib.h>
#include <string.h>

static uint64_t fnv1a(const char *s, size_t n) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

static size_t slot_of(const ts_strmap *m, const char *s, size_t len) {
    size_t mask = m->nslots - 1;
    for (size_t i = (size_t)fnv1a(s, len) & mask;; i = (i + 1) & mask) {
        int32_t id = m->slots[i];
        if (id < 0 || (m->len[id] == len && memcmp(m->arena + m->off[id], s, len) == 0)) return i;
    }
}

int32_t ts_strmap_find(const ts_strmap *m, const char *s, size_t len) {
    if (!m->nslots) return -1;
    return m->slots[slot_of(m, s, len)];
}

static int rehash(ts_strmap *m, size_t nslots) {
    int32_t *slots = malloc(nslots * sizeof *slots);
    if (!slots) return 0;
    memset(slots, 0xff, nslots * sizeof *slots);
    free(m->slots);
    m->slots = slots;
    m->nslots = nslots;
    for (int32_t id = 0; id < m->n; id++) m->slots[slot_of(m, m->arena + m->off[id], m->len[id])] = id;
    return 1;
}

int32_t ts_strmap_intern(ts_strmap *m, const char *s, size_t len, int *added) {
    if (added) *added = 0;
    if (len > UINT32_MAX || m->n == INT32_MAX) return -1;
    if ((size_t)(m->n + 1) * 2 > m->nslots && !rehash(m, m->nslots ? m->nslots * 2 : 1024)) return -1;
    size_t slot = slot_of(m, s, len);
    if (m->slots[slot] >= 0) return m->slots[slot];
    if (m->n == m->cap) {
        int32_t cap = m->cap ? (m->cap > INT32_MAX / 2 ? INT32_MAX : m->cap * 2) : 1024;
        size_t *off = realloc(m->off, (size_t)cap * sizeof *off);
        if (off) m->off = off;
        uint32_t *l = realloc(m->len, (size_t)cap * sizeof *l);
        if (l) m->len = l;
        if (!off || !l) return -1;
        m->cap = cap;
    }
    if (m->alen + len + 1 > m->acap) {
        size_t acap = m->acap ? m->acap : 65536;
        while (m->alen + len + 1 > acap) acap *= 2;
        char *a = realloc(m->arena, acap);
        if (!a) return -1;
        m->arena = a;
        m->acap = acap;
    }
    memcpy(m->arena + m->alen, s, len);
    m->arena[m->alen + len] = 0;
    m->off[m->n] = m->alen;
    m->len[m->n] = (uint32_t)len;
    m->alen += len + 1;
    m->slots[slot] = m->n;
    if (added) *added = 1;
    return m->n++;
}

void ts_strmap_free(ts_strmap *m) {
    free(m->arena);
    free(m->off);
    free(m->len);
    free(m->slots);
    memset(m, 0, sizeof *m);
}
