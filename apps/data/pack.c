/*
 * pack.c — sequence packing (tessera_text.h: ts_pack_sequences): several short sequences placed
 * in one row of T tokens, by Graphcore's shortest-pack-first histogram packing (Krell et al.
 * 2021), so that a batch carries fewer padding slots; and the per-token marks of a packed row
 * (sequence index, position within the sequence) that the readers write.
 *
 * SPFHP as implemented: sequences longest first; open rows are kept in lists by the room they
 * have left (0 .. T); a sequence of length l goes to the first row of the list with the least
 * room r >= l (best fit), which moves to list r - l unless it is full or holds S sequences; with
 * no such row a new one opens. O(n (T + log n)).
 */
#include "data/data.h"

/* Sequence indices by length, longest first, equal lengths by index (a stable counting sort). */
static void longest_first(const int *lengths, int64_t n, int T, int64_t *by_len, int64_t *count) {
    memset(count, 0, (size_t)(T + 2) * sizeof *count);
    for (int64_t i = 0; i < n; i++) count[T - lengths[i] + 1]++;
    for (int l = 1; l <= T + 1; l++) count[l] += count[l - 1];
    for (int64_t i = 0; i < n; i++) by_len[count[T - lengths[i]]++] = i;
}

ts_status ts_pack_sequences(const int *lengths, int64_t n, int row_len, int max_per_row, int64_t *order,
                            int64_t *row_start, int64_t *nrows, double *efficiency) {
    int T = row_len, S = max_per_row;
    if (nrows) *nrows = 0;
    if (efficiency) *efficiency = 1;
    if (!order || !row_start || !nrows || (n > 0 && !lengths) || n < 0)
        return ts_set_error(TS_ERR_ARG, "ts_pack_sequences: NULL lengths, order, row_start or nrows, or n %lld < 0",
                            (long long)n);
    if (T < 1 || S < 1)
        return ts_set_error(TS_ERR_ARG, "ts_pack_sequences: row_len %d and max_per_row %d must be at least 1", T, S);
    int64_t real = 0;
    for (int64_t i = 0; i < n; i++) {
        if (lengths[i] < 1 || lengths[i] > T)
            return ts_set_error(TS_ERR_ARG, "ts_pack_sequences: lengths[%lld] = %d is outside [1, row_len %d]",
                                (long long)i, lengths[i], T);
        real += lengths[i];
    }
    row_start[0] = 0;
    if (n == 0) return TS_OK;
    /* rows: room left, sequences held, the next row in the same room list; members as a chain */
    int64_t *by_len = malloc((size_t)n * sizeof *by_len), *count = malloc((size_t)(T + 2) * sizeof *count);
    int64_t *head = malloc((size_t)(T + 1) * sizeof *head), *tail = malloc((size_t)(T + 1) * sizeof *tail);
    int64_t *next = malloc((size_t)n * sizeof *next), *row_of = malloc((size_t)n * sizeof *row_of);
    int *room = malloc((size_t)n * sizeof *room), *held = malloc((size_t)n * sizeof *held);
    ts_status st = TS_OK;
    if (!by_len || !count || !head || !tail || !next || !row_of || !room || !held) {
        st = ts_set_error(TS_ERR_NOMEM, "ts_pack_sequences: out of memory for %lld sequences", (long long)n);
        goto done;
    }
    longest_first(lengths, n, T, by_len, count);
    for (int r = 0; r <= T; r++) head[r] = tail[r] = -1;
    int64_t rows = 0;
    for (int64_t k = 0; k < n; k++) {
        int64_t i = by_len[k];
        int l = lengths[i], r = l;
        while (r <= T && head[r] < 0) r++;
        int64_t row;
        if (r <= T) { /* the first row of the tightest list that fits: taken off it */
            row = head[r];
            head[r] = next[row];
            if (head[r] < 0) tail[r] = -1;
        } else {
            row = rows++;
            room[row] = T, held[row] = 0;
        }
        row_of[i] = row;
        room[row] -= l, held[row]++;
        if (room[row] > 0 && held[row] < S) { /* still open: at the end of its new list */
            int nr = room[row];
            next[row] = -1;
            if (tail[nr] >= 0) next[tail[nr]] = row;
            else head[nr] = row;
            tail[nr] = row;
        }
    }
    /* order: the rows' members, rows in opening order, members in placing order */
    for (int64_t r = 0; r <= rows; r++) row_start[r] = 0;
    for (int64_t i = 0; i < n; i++) row_start[row_of[i] + 1]++;
    for (int64_t r = 0; r < rows; r++) row_start[r + 1] += row_start[r];
    int64_t *fill = next; /* the next free entry of each row (rows <= n) */
    for (int64_t r = 0; r < rows; r++) fill[r] = row_start[r];
    for (int64_t k = 0; k < n; k++) order[fill[row_of[by_len[k]]]++] = by_len[k];
    *nrows = rows;
    if (efficiency) *efficiency = (double)real / ((double)rows * T);
done:
    free(by_len), free(count), free(head), free(tail), free(next), free(row_of), free(room), free(held);
    return st;
}

void ts_pack_mark(int32_t *seq_index, int32_t *position_ids, int off, int len, int index) {
    for (int t = 0; t < len; t++) {
        if (seq_index) seq_index[off + t] = index;
        if (position_ids) position_ids[off + t] = t;
    }
}
