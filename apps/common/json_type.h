/*
 * json_type.h — the name of a cJSON node's type as error messages say it ("a number", "an
 * array"), for every reader of a JSON file that names what it found where it wanted another type.
 */
#ifndef TS_APPS_JSON_TYPE_H
#define TS_APPS_JSON_TYPE_H

#include <cjson/cJSON.h>

static inline const char *ts_json_type(const cJSON *j) {
    if (!j) return "nothing";
    if (cJSON_IsNull(j)) return "null";
    if (cJSON_IsBool(j)) return "a boolean";
    if (cJSON_IsNumber(j)) return "a number";
    if (cJSON_IsString(j)) return "a string";
    if (cJSON_IsArray(j)) return "an array";
    return "an object";
}

#endif
