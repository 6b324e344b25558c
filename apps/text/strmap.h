/*
 * strmap.h — an interning table of byte strings: each distinct string gets the next id (0, 1,
 * ...), and a string finds its id by hash. Strings live in one arena. Used by the vocabulary
 * builder for the corpus' distinct words and for the learned pieces.
 */
#ifndef TS_TEXT_STRMAP_H
#define TS_TEXT_STRMAP_H

#include <stddef.h>
#include <stdint.h>

typedef struct ts_strmap {
    char *arena; /* the strings, each followed by a NUL */
    size_t alen, acap;
    size_t *off;   /* [n] id -> offset into arena */
    uint32_t *len; /* [n] bytes */
    int32_t n, cap;
    int32_t *slots; /* open addressing: id, or -1 */
    size_t nslots;
} ts_strmap;

/* Id of s[0..len), added when new (*added = 1 then). -1 on out of memory. added may be NULL. */
int32_t ts_strmap_intern(ts_strmap *m, const char *s, size_t len, int *added);
/* Id of s[0..len), or -1. */
int32_t ts_strmap_find(const ts_strmap *m, const char *s, size_t len);
static inline const char *ts_strmap_str(const ts_strmap *m, int32_t id) { return m->arena + m->off[id]; }
void ts_strmap_free(ts_strmap *m);

#endif
