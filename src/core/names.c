/*
 * names.c — the closest of a list of names to a word that names none of them (ts_closest_name):
 * what a "did you mean" says after an unknown subcommand, flag or model name.
 */
#include "core/core.h"

#include <string.h>

/* The edit distance of a and b (insertions, deletions, substitutions), capped at 9. */
static int distance(const char *a, const char *b) {
    size_t na = strlen(a), nb = strlen(b);
    if (na > 40 || nb > 40) return 9;
    int d[41][41];
    for (size_t i = 0; i <= na; i++) d[i][0] = (int)i;
    for (size_t j = 0; j <= nb; j++) d[0][j] = (int)j;
    for (size_t i = 1; i <= na; i++)
        for (size_t j = 1; j <= nb; j++) {
            int best = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
            if (d[i - 1][j] + 1 < best) best = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < best) best = d[i][j - 1] + 1;
            d[i][j] = best;
        }
    return d[na][nb] < 9 ? d[na][nb] : 9;
}

const char *ts_closest_name(const char *word, const char *const *names, int n) {
    const char *best = NULL, *prefix = NULL;
    int bd = 3, nprefix = 0;
    size_t wl = word ? strlen(word) : 0;
    for (int i = 0; word && names && i < n; i++) {
        if (!names[i]) continue;
        int d = distance(word, names[i]);
        if (d < bd) bd = d, best = names[i];
        if (wl >= 3 && !strncmp(names[i], word, wl)) prefix = names[i], nprefix++;
    }
    return best ? best : nprefix == 1 ? prefix : NULL;
}
