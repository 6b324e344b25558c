/*
 * squad_jsonl.c — questions as JSON lines (tessera_tasks.h): {"question": ..., "context": ...} a
 * line, read as a SQuAD document of one paragraph per line (ids "1", "2", ... in order) and
 * featurized as ts_squad_parse does.
 */
#include "common/app.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* JSON lines -> a SQuAD document (one paragraph per line), printed into *json. */
static ts_status jsonl_to_squad(const char *text, size_t size, const char *name, char **json) {
    cJSON *root = cJSON_CreateObject(), *data = cJSON_AddArrayToObject(root, "data");
    cJSON *art = cJSON_CreateObject();
    cJSON_AddItemToArray(data, art);
    cJSON *pars = cJSON_AddArrayToObject(art, "paragraphs");
    long lineno = 0, n = 0;
    ts_status rc = TS_OK;
    const char *end = text + size, *next;
    for (const char *line = text; !rc && line < end; line = next) {
        const char *nl = memchr(line, '\n', (size_t)(end - line));
        size_t len = nl ? (size_t)(nl - line) : (size_t)(end - line);
        next = nl ? nl + 1 : end;
        lineno++;
        size_t k = 0;
        while (k < len && (line[k] == ' ' || line[k] == '\t' || line[k] == '\r')) k++;
        if (k == len) continue; /* blank */
        cJSON *obj = cJSON_ParseWithLength(line, len);
        const cJSON *q = cJSON_GetObjectItemCaseSensitive(obj, "question");
        const cJSON *c = cJSON_GetObjectItemCaseSensitive(obj, "context");
        const char *bad = !cJSON_IsObject(obj) ? "not a JSON object"
                          : !cJSON_IsString(q) ? "no \"question\" string"
                          : !cJSON_IsString(c) ? "no \"context\" string"
                                               : NULL;
        if (bad) {
            rc = ts_set_error(TS_ERR_ARG, "%s:%ld: %s (each line is {\"question\": ..., \"context\": ...})", name,
                              lineno, bad);
        } else {
            char id[32];
            snprintf(id, sizeof id, "%ld", ++n);
            cJSON *par = cJSON_CreateObject(), *qas, *qa = cJSON_CreateObject();
            cJSON_AddItemToArray(pars, par);
            cJSON_AddStringToObject(par, "context", c->valuestring);
            qas = cJSON_AddArrayToObject(par, "qas");
            cJSON_AddItemToArray(qas, qa);
            cJSON_AddStringToObject(qa, "id", id);
            cJSON_AddStringToObject(qa, "question", q->valuestring);
        }
        cJSON_Delete(obj);
    }
    if (!rc && !(*json = cJSON_PrintUnformatted(root))) rc = ts_set_error(TS_ERR_NOMEM, "out of memory");
    cJSON_Delete(root);
    return rc;
}

ts_squad *ts_squad_parse_jsonl(const char *name, const char *text, size_t len, const ts_tokenizer *tok,
                               const ts_squad_opts *so) {
    char *json = NULL;
    if (jsonl_to_squad(text, len, name, &json) != TS_OK) return NULL;
    ts_squad *s = ts_squad_parse(name, json, strlen(json), tok, so);
    free(json);
    return s;
}
