/*
 * bcast.h — numpy broadcasting for kernels: the strides of each operand against the output
 * shape (0 along broadcast dims), and the byte offsets of one output row.
 */
#ifndef TS_BCAST_H
#define TS_BCAST_H

#include "graph/ir.h"

typedef struct ts_bcast {
    int nd;                          /* output rank (>= 1; a scalar output is [1]) */
    int64_t shape[TS_MAX_DIMS];      /* output shape */
    int64_t st[3][TS_MAX_DIMS];      /* element strides of up to 3 operands */
    int64_t rows, cols;              /* cols = last dim; rows = numel / cols */
} ts_bcast;

/* Operand k (0..nops-1) has rank nd_k and shape sh_k; out has rank no and shape so. */
static inline void ts_bcast_init(ts_bcast *b, int no, const int64_t *so, int nops, const int *nd,
                                 const int64_t *const *sh) {
    memset(b, 0, sizeof *b);
    b->nd = no ? no : 1;
    for (int i = 0; i < b->nd; i++) b->shape[i] = no ? so[i] : 1;
    for (int k = 0; k < nops; k++) {
        int64_t s = 1;
        for (int i = b->nd - 1; i >= 0; i--) {
            int j = i - (b->nd - nd[k]);
            int64_t d = j >= 0 ? sh[k][j] : 1;
            b->st[k][i] = d == 1 ? 0 : s;
            s *= d;
        }
    }
    b->cols = b->shape[b->nd - 1];
    b->rows = b->cols ? ts_numel(b->nd, b->shape) / b->cols : 0;
}

/* Element offsets of operand k at the start of output row r. */
static inline int64_t ts_bcast_row(const ts_bcast *b, int k, int64_t r) {
    int64_t off = 0;
    for (int i = b->nd - 2; i >= 0; i--) {
        int64_t d = b->shape[i];
        off += (r % d) * b->st[k][i];
        r /= d;
    }
    return off;
}

#endif
