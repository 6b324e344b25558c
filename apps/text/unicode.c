/*
 * unicode.c — lookups into the generated Unicode tables (decomposition, lower case), the
 * arithmetic Hangul decomposition, canonical ordering, and UTF-8 decoding / encoding.
 */
#include "text/unicode.h"

/* Index of cp in the sorted array a[0..n), or -1. */
static int find_cp(const uint32_t *a, int n, uint32_t cp) {
    int lo = 0, hi = n - 1;
    while (lo <= hi) {
        int mid = (lo + hi) >> 1;
        if (a[mid] == cp) return mid;
        if (a[mid] < cp) lo = mid + 1;
        else hi = mid - 1;
    }
    return -1;
}

/* Hangul syllables decompose by arithmetic (Unicode §3.12). */
enum { SBASE = 0xAC00, LBASE = 0x1100, VBASE = 0x1161, TBASE = 0x11A7, LCOUNT = 19, VCOUNT = 21,
       TCOUNT = 28, NCOUNT = VCOUNT * TCOUNT, SCOUNT = LCOUNT * NCOUNT };

int ts_uc_decompose(uint32_t cp, uint32_t out[TS_UC_MAX_DECOMP]) {
    if (cp >= SBASE && cp < SBASE + SCOUNT) {
        uint32_t s = cp - SBASE;
        out[0] = LBASE + s / NCOUNT;
        out[1] = VBASE + (s % NCOUNT) / TCOUNT;
        if (s % TCOUNT == 0) return 2;
        out[2] = TBASE + s % TCOUNT;
        return 3;
    }
    if (ts_uc_flags(cp) & TS_UC_DECOMP) {
        int i = find_cp(ts_uc_decomp_cp, ts_uc_ndecomp, cp);
        if (i >= 0) {
            int n = ts_uc_decomp_off[i + 1] - ts_uc_decomp_off[i];
            for (int k = 0; k < n; k++) out[k] = ts_uc_decomp_data[ts_uc_decomp_off[i] + k];
            return n;
        }
    }
    out[0] = cp;
    return 1;
}

void ts_uc_canonical_order(uint32_t *cps, size_t n) {
    size_t i = 0;
    while (i < n) {
        if (ts_uc_ccc(cps[i]) == 0) {
            i++;
            continue;
        }
        size_t end = i;
        while (end < n && ts_uc_ccc(cps[end]) != 0) end++;
        /* insertion sort of cps[i..end) by ccc: stable, and runs are short */
        for (size_t a = i + 1; a < end; a++) {
            uint32_t c = cps[a];
            unsigned k = ts_uc_ccc(c);
            size_t b = a;
            while (b > i && ts_uc_ccc(cps[b - 1]) > k) {
                cps[b] = cps[b - 1];
                b--;
            }
            cps[b] = c;
        }
        i = end;
    }
}

int ts_uc_lower(uint32_t cp, uint32_t out[TS_UC_MAX_LOWER]) {
    if (cp < 128) {
        out[0] = (cp >= 'A' && cp <= 'Z') ? cp + 32 : cp;
        return 1;
    }
    if (ts_uc_flags(cp) & TS_UC_LOWER) {
        int i = find_cp(ts_uc_lower_cp, ts_uc_nlower, cp);
        if (i >= 0) {
            uint32_t v = ts_uc_lower_to[i];
            if (v < 0x110000) {
                out[0] = v;
                return 1;
            }
            const uint32_t *m = ts_uc_lower_multi + 4 * (v - 0x110000);
            for (uint32_t k = 0; k < m[0]; k++) out[k] = m[1 + k];
            return (int)m[0];
        }
    }
    out[0] = cp;
    return 1;
}

uint32_t ts_utf8_decode(const unsigned char *s, size_t n, size_t *adv) {
    unsigned c = s[0];
    *adv = 1;
    if (c < 0x80) return c;
    size_t len;
    uint32_t cp, min;
    if (c >= 0xC2 && c <= 0xDF) len = 2, cp = c & 0x1F, min = 0x80;
    else if (c >= 0xE0 && c <= 0xEF) len = 3, cp = c & 0x0F, min = 0x800;
    else if (c >= 0xF0 && c <= 0xF4) len = 4, cp = c & 0x07, min = 0x10000;
    else return TS_UC_REPLACEMENT; /* continuation byte, C0/C1 overlong lead, F5..FF */
    if (n < len) return TS_UC_REPLACEMENT;
    for (size_t k = 1; k < len; k++) {
        if ((s[k] & 0xC0) != 0x80) return TS_UC_REPLACEMENT;
        cp = (cp << 6) | (s[k] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return TS_UC_REPLACEMENT;
    *adv = len;
    return cp;
}

int ts_utf8_encode(uint32_t cp, char out[4]) {
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}
