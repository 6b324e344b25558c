/*
 * json_number.h — a double as the shortest decimal that reads back to exactly it (15, 16 or 17
 * significant digits: cJSON's own printing accepts 15 digits that read back within DBL_EPSILON,
 * one unit in the last place away), for JSON that must carry values bit for bit (device profiles,
 * the server's probabilities) and for messages that quote a number a client sent (4294967296,
 * not 4.29497e+09).
 */
#ifndef TS_APPS_JSON_NUMBER_H
#define TS_APPS_JSON_NUMBER_H

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* v into text[40]; "null" when v is not finite (JSON has no NaN or infinity). Returns text. */
static inline char *ts_json_number_text(double v, char text[40]) {
    if (!isfinite(v)) return snprintf(text, 40, "null"), text;
    for (int digits = 15; digits <= 17; digits++) {
        snprintf(text, 40, "%.*g", digits, v);
        if (strtod(text, NULL) == v) break;
    }
    return text;
}

/* v as a cJSON node printed exactly (a raw number; null when not finite). */
static inline cJSON *ts_json_exact(double v) {
    char text[40];
    return isfinite(v) ? cJSON_CreateRaw(ts_json_number_text(v, text)) : cJSON_CreateNull();
}

#endif
