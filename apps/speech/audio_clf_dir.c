/*
 * audio_clf_dir.c — an audio classifier's model directory (ts_audio_clf_save / _load / _is_dir)
 * and its ONNX export:
 *   config.json        {"kind": "audio-classifier", "front_end": "embedding" | "mel",
 *                       "labels": [...], "clip_samples": N, "rate": 16000, "seed": S}
 *   model.safetensors  the head's (head.fc1/fc2) or the CNN's (cnn.conv1..3, cnn.fc) parameters
 * written into a sibling directory DIR.tmp-PID that is then renamed to DIR.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/app.h"
#include "speech/speech_impl.h"

#define KIND "audio-classifier"

/* dir/name into buf: buf, or NULL with the error set when it does not fit. */
static const char *join(char *buf, size_t cap, const char *dir, const char *name) {
    return ts_path_join(buf, cap, dir, name) ? NULL : buf;
}

static char *config_json(const ts_audio_clf *c) {
    cJSON *j = cJSON_CreateObject();
    if (!j) return NULL;
    cJSON_AddStringToObject(j, "kind", KIND);
    cJSON_AddStringToObject(j, "front_end", c->kind == TS_AUDIO_CLF_EMBEDDING ? "embedding" : "mel");
    cJSON *l = cJSON_AddArrayToObject(j, "labels");
    for (int i = 0; l && i < c->nlabels; i++) cJSON_AddItemToArray(l, cJSON_CreateString(c->labels[i]));
    cJSON_AddNumberToObject(j, "clip_samples", c->clip);
    cJSON_AddNumberToObject(j, "rate", 16000);
    cJSON_AddNumberToObject(j, "seed", (double)c->seed);
    char *s = cJSON_Print(j);
    cJSON_Delete(j);
    return s;
}

/* Remove the model's files from an existing dir, then the dir (an error if it holds others). */
static ts_status clear_dir(const char *dir) {
    char p[4200];
    struct stat sb;
    if (stat(dir, &sb)) return TS_OK;
    if (join(p, sizeof p, dir, "config.json")) unlink(p);
    if (join(p, sizeof p, dir, "model.safetensors")) unlink(p);
    if (rmdir(dir))
        return ts_set_error(TS_ERR_IO, "%s: cannot replace it (%s): not an audio model directory?", dir,
                            strerror(errno));
    return TS_OK;
}

ts_status ts_audio_clf_save(const ts_audio_clf *c, const char *dir) {
    if (!c || !dir || !*dir) return ts_set_error(TS_ERR_ARG, "ts_audio_clf_save: bad arguments");
    char tmp[4100], p[4200];
    if (snprintf(tmp, sizeof tmp, "%s.tmp-%ld", dir, (long)getpid()) >= (int)sizeof tmp)
        return ts_set_error(TS_ERR_ARG, "ts_audio_clf_save: %s: path too long", dir);
    if (mkdir(tmp, 0755) && errno != EEXIST) return ts_set_error(TS_ERR_IO, "%s: %s", tmp, strerror(errno));
    char *cfg = config_json(c);
    ts_status st = cfg ? TS_OK : ts_set_error(TS_ERR_NOMEM, "audio classifier: out of memory");
    if (!st && !(st = ts_path_join(p, sizeof p, tmp, "config.json"))) st = ts_write_atomic(p, cfg, strlen(cfg));
    if (!st && !(st = ts_path_join(p, sizeof p, tmp, "model.safetensors"))) st = ts_program_save(c->infer, p, TS_F32);
    if (!st) st = clear_dir(dir);
    if (!st && rename(tmp, dir)) st = ts_set_error(TS_ERR_IO, "%s: %s", dir, strerror(errno));
    if (st) clear_dir(tmp);
    free(cfg);
    return st;
}

/* config.json of dir, parsed (NULL with the error set naming it). */
static cJSON *read_config(const char *dir, char *path, size_t cap) {
    if (!join(path, cap, dir, "config.json")) return NULL;
    size_t n = 0;
    char *buf = ts_read_file_max(path, 65535, &n);
    if (!buf) return NULL;
    cJSON *j = cJSON_ParseWithLength(buf, n);
    free(buf);
    if (!j) ts_set_error(TS_ERR_IO, "%s: not JSON", path);
    return j;
}

int ts_audio_clf_is_dir(const char *dir) {
    char path[4200];
    struct stat sb;
    if (!dir) return 0;
    if (!join(path, sizeof path, dir, "config.json")) return (ts_err_clear(), 0);
    if (stat(path, &sb)) return 0;
    cJSON *j = read_config(dir, path, sizeof path);
    const cJSON *k = cJSON_GetObjectItemCaseSensitive(j, "kind");
    int yes = cJSON_IsString(k) && !strcmp(k->valuestring, KIND);
    cJSON_Delete(j);
    ts_err_clear();
    return yes;
}

ts_audio_clf *ts_audio_clf_load(const char *dir, const char *models_dir, int num_threads) {
    char path[4200];
    cJSON *j = dir ? read_config(dir, path, sizeof path) : NULL;
    if (!j) return dir ? NULL : (ts_set_error(TS_ERR_ARG, "ts_audio_clf_load: no directory"), NULL);
    const cJSON *kind = cJSON_GetObjectItemCaseSensitive(j, "kind"), *fe = cJSON_GetObjectItemCaseSensitive(j, "front_end");
    const cJSON *labels = cJSON_GetObjectItemCaseSensitive(j, "labels"), *clip = cJSON_GetObjectItemCaseSensitive(j, "clip_samples");
    const cJSON *seed = cJSON_GetObjectItemCaseSensitive(j, "seed");
    int n = cJSON_IsArray(labels) ? cJSON_GetArraySize(labels) : 0;
    const char **names = calloc((size_t)(n > 0 ? n : 1), sizeof *names);
    ts_audio_clf *c = NULL;
    int ok = names && cJSON_IsString(kind) && !strcmp(kind->valuestring, KIND) && cJSON_IsString(fe) &&
             (!strcmp(fe->valuestring, "embedding") || !strcmp(fe->valuestring, "mel")) && cJSON_IsNumber(clip);
    for (int i = 0; ok && i < n; i++) {
        const cJSON *s = cJSON_GetArrayItem(labels, i);
        ok = cJSON_IsString(s);
        if (ok) names[i] = s->valuestring;
    }
    if (!ok) {
        ts_set_error(TS_ERR_IO,
                     "%s: not an audio classifier's config (kind \"%s\", front_end \"embedding\" or \"mel\", "
                     "labels, clip_samples)",
                     path, KIND);
        goto done;
    }
    ts_audio_clf_opts o = {.struct_size = sizeof o, .models_dir = models_dir,
                           .kind = strcmp(fe->valuestring, "mel") ? TS_AUDIO_CLF_EMBEDDING : TS_AUDIO_CLF_SCRATCH,
                           .nlabels = n, .labels = names, .clip_samples = (int)clip->valuedouble,
                           .seed = cJSON_IsNumber(seed) ? (uint64_t)seed->valuedouble : 0, .num_threads = num_threads};
    if (!(c = ts_audio_clf_new(&o))) {
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", ts_last_error());
        ts_set_error(ts_last_status() ? ts_last_status() : TS_ERR_ARG, "%s: %s", path, msg);
        goto done;
    }
    if (!join(path, sizeof path, dir, "model.safetensors") || ts_program_load(c->infer, path, TS_LOAD_STRICT, NULL)) {
        ts_audio_clf_free(c);
        c = NULL;
    }
done:
    free(names);
    cJSON_Delete(j);
    return c;
}

ts_status ts_audio_clf_export_onnx(ts_audio_clf *c, const char *path) {
    if (!c || !path) return ts_set_error(TS_ERR_ARG, "ts_audio_clf_export_onnx: bad arguments");
    ts_graph *g = ts_graph_new();
    if (!g) return ts_last_status();
    const char *input;
    ts_value logits = clf_logits(g, c, 1, &input);
    ts_status st = ts_graph_status(g);
    ts_program *p = st ? NULL
                       : ts_compile(g, &(ts_compile_opts){.struct_size = sizeof(ts_compile_opts), .num_threads = c->num_threads,
                                                          .nfetch = 1, .fetches = (const char *[]){"logits"}, .inference = 1});
    if (!st && !p) st = ts_last_status();
    if (!st && ts_program_copy_params(p, c->infer) < 0) st = ts_last_status();
    if (!st) st = ts_onnx_export(g, p, 1, &logits, path);
    ts_program_free(p);
    ts_graph_free(g);
    return st;
}
