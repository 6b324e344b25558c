/*
 * model_dir.c — model directories as Hugging Face lays them out: config.json (the BERT config and
 * what tessera adds: the training length, the labels, the text-pair column, the QA windows, the
 * truncation, tessera quantize's int8 record), model.safetensors and vocab.txt, each written
 * atomically; and the output directory's lock (its file removed when the process exits). See
 * "Training runs" in tessera.h.
 */
#include "common/app.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

void ts_model_meta_free(ts_model_meta *m) {
    if (!m) return;
    for (int i = 0; i < m->nlabels; i++) free(m->labels[i]);
    free(m->labels);
    free(m->text_b_column);
    m->labels = NULL;
    m->nlabels = 0;
    m->text_b_column = NULL;
}

const char *const ts_truncation_names[3] = {"head", "tail", "head+tail"};

int ts_truncation_parse(const char *value) {
    for (int i = 0; value && i < 3; i++)
        if (!strcmp(value, ts_truncation_names[i])) return i;
    return -1;
}

void ts_truncation_apply(ts_tokenizer *tok, int mode, int max_len) {
    int room = max_len - 2; /* [CLS] and [SEP] */
    ts_tokenizer_set_truncation(tok, mode == TS_TRUNC_TAIL ? 0 : mode == TS_TRUNC_HEAD_TAIL ? room / 4 : -1);
}

/* The output directories this process locked: each lock file is removed as the process exits
 * (normally: exit or a return from main), so that no finished model directory keeps one. The
 * flock, not the file, is what excludes a second run: the file is unlinked while the lock is
 * still held, then closed; a run that opened the file just before the unlink finds, once it holds
 * the lock, that the name no longer leads to its file, and takes the lock again on a new one
 * (lock_file). A crash or SIGKILL leaves the file, unlocked: the next run locks it as it is. */
typedef struct held_lock {
    int dirfd, fd; /* the directory (as opened when locked: a directory removed and made again is
                      another) and its lock file */
    long pid;      /* the process that locked it: a forked child's exit leaves it alone */
    struct held_lock *next;
} held_lock;
static held_lock *held;
static pthread_mutex_t held_mu = PTHREAD_MUTEX_INITIALIZER;

#define LOCK_NAME ".tessera.lock"

/* Does LOCK_NAME in dirfd still name the file open as fd? */
static int lock_file_current(int dirfd, int fd) {
    struct stat a, b;
    return fstat(fd, &a) == 0 && fstatat(dirfd, LOCK_NAME, &b, AT_SYMLINK_NOFOLLOW) == 0 && a.st_dev == b.st_dev &&
           a.st_ino == b.st_ino;
}

static void unlock_at_exit(void) {
    pthread_mutex_lock(&held_mu);
    for (held_lock *h = held, *next; h; h = next) {
        next = h->next;
        if (h->pid == (long)getpid()) { /* still holding the flock: nobody else can be using this file */
            if (lock_file_current(h->dirfd, h->fd)) unlinkat(h->dirfd, LOCK_NAME, 0);
            close(h->fd);
            close(h->dirfd);
        }
        free(h);
    }
    held = NULL;
    pthread_mutex_unlock(&held_mu);
}

/* Open and flock dirfd/LOCK_NAME (dir names it in messages): the locked fd into *out, or an error
 * (TS_ERR_RUNTIME with *other_pid when another process holds it). */
static ts_status lock_file(const char *dir, int dirfd, int *out, long *other_pid) {
    for (int tries = 0; tries < 100; tries++) {
        int fd = openat(dirfd, LOCK_NAME, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0666);
        if (fd < 0) return ts_set_error(TS_ERR_IO, "%s: cannot create %s/%s: %s", dir, dir, LOCK_NAME, strerror(errno));
        if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
            int busy = errno == EWOULDBLOCK;
            char pid[32] = "";
            ssize_t n = busy ? pread(fd, pid, sizeof pid - 1, 0) : -1;
            pid[n > 0 ? n : 0] = 0;
            close(fd);
            if (!busy)
                return ts_set_error(TS_ERR_IO, "%s: cannot lock %s/%s: %s", dir, dir, LOCK_NAME, strerror(errno));
            if (other_pid) *other_pid = strtol(pid, NULL, 10);
            return ts_set_error(TS_ERR_RUNTIME, "%s is being written by another run (pid %ld)", dir,
                                strtol(pid, NULL, 10));
        }
        if (lock_file_current(dirfd, fd)) {
            *out = fd;
            return TS_OK;
        }
        close(fd); /* its holder removed it as it exited, after we opened it: try again */
    }
    return ts_set_error(TS_ERR_IO, "%s: cannot lock %s/%s: it keeps being replaced", dir, dir, LOCK_NAME);
}

ts_status ts_out_dir_lock(const char *dir, long *other_pid) {
    if (other_pid) *other_pid = 0;
    ts_status s = ts_make_dirs(dir);
    if (s) return s;
    held_lock *h = calloc(1, sizeof *h);
    if (!h) return ts_set_error(TS_ERR_NOMEM, "%s: out of memory", dir);
    h->pid = (long)getpid();
    if ((h->dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
        free(h);
        return ts_set_error(TS_ERR_IO, "%s: cannot open the directory: %s", dir, strerror(errno));
    }
    if ((s = lock_file(dir, h->dirfd, &h->fd, other_pid))) {
        close(h->dirfd);
        free(h);
        return s;
    }
    char pid[32];
    int len = snprintf(pid, sizeof pid, "%ld\n", h->pid);
    if (ftruncate(h->fd, 0) != 0 || pwrite(h->fd, pid, (size_t)len, 0) != len) { /* only informative */ }
    static int registered;
    pthread_mutex_lock(&held_mu);
    if (!registered) registered = atexit(unlock_at_exit) == 0;
    h->next = held;
    held = h;
    pthread_mutex_unlock(&held_mu);
    return TS_OK; /* fds stay open: the lock lasts until the process exits, then the file goes */
}

/* A float as the shortest decimal that reads back as it (0.1f -> 0.1, not 0.10000000149). */
static double short_float(float x) {
    char buf[32];
    snprintf(buf, sizeof buf, "%.7g", (double)x);
    return strtod(buf, NULL);
}

static const char *act_name(ts_bert_act a) {
    return a == TS_BERT_RELU ? "relu" : a == TS_BERT_GELU_TANH ? "gelu_new" : "gelu";
}

const char *ts_bert_head_name(ts_bert_head h) {
    static const char *const names[] = {"BertModel", "BertForPreTraining", "BertForMaskedLM",
                                        "BertForSequenceClassification", "BertForQuestionAnswering"};
    return (unsigned)h < sizeof names / sizeof *names ? names[h] : "BertModel";
}

ts_status ts_bert_config_save(const char *path, const ts_bert_config *cfg, const ts_model_meta *meta) {
    ts_bert_config c;
    if (!path || !cfg) return ts_set_error(TS_ERR_ARG, "ts_bert_config_save: NULL argument");
    if (TS_STRUCT_READ(&c, cfg, ts_bert_config, "ts_bert_config_save")) return TS_ERR_ARG;
    cfg = &c;
    ts_model_meta none = {.lowercase = 1};
    if (!meta) meta = &none;
    cJSON *j = cJSON_CreateObject();
    if (!j) return ts_set_error(TS_ERR_NOMEM, "ts_bert_config_save: out of memory");
    cJSON *arch = cJSON_AddArrayToObject(j, "architectures");
    cJSON_AddItemToArray(arch, cJSON_CreateString(ts_bert_head_name(cfg->head)));
    cJSON_AddStringToObject(j, "model_type", "bert");
    cJSON_AddNumberToObject(j, "vocab_size", cfg->vocab_size);
    cJSON_AddNumberToObject(j, "hidden_size", cfg->hidden_size);
    cJSON_AddNumberToObject(j, "num_hidden_layers", cfg->num_hidden_layers);
    cJSON_AddNumberToObject(j, "num_attention_heads", cfg->num_attention_heads);
    cJSON_AddNumberToObject(j, "intermediate_size", cfg->intermediate_size);
    cJSON_AddNumberToObject(j, "max_position_embeddings", cfg->max_position_embeddings);
    cJSON_AddNumberToObject(j, "type_vocab_size", cfg->type_vocab_size);
    cJSON_AddStringToObject(j, "hidden_act", act_name(cfg->hidden_act));
    cJSON_AddNumberToObject(j, "hidden_dropout_prob", short_float(cfg->hidden_dropout_prob));
    cJSON_AddNumberToObject(j, "attention_probs_dropout_prob", short_float(cfg->attention_probs_dropout_prob));
    if (cfg->classifier_dropout < 0) cJSON_AddNullToObject(j, "classifier_dropout");
    else cJSON_AddNumberToObject(j, "classifier_dropout", short_float(cfg->classifier_dropout));
    cJSON_AddNumberToObject(j, "layer_norm_eps", short_float(cfg->layer_norm_eps));
    cJSON_AddNumberToObject(j, "initializer_range", short_float(cfg->initializer_range));
    cJSON_AddStringToObject(j, "position_embedding_type", "absolute");
    if (cfg->untie_word_embeddings) cJSON_AddBoolToObject(j, "tie_word_embeddings", 0);
    if (meta->nlabels > 0) {
        cJSON *id2 = cJSON_AddObjectToObject(j, "id2label"), *l2 = cJSON_AddObjectToObject(j, "label2id");
        for (int i = 0; i < meta->nlabels; i++) {
            char k[16];
            snprintf(k, sizeof k, "%d", i);
            cJSON_AddStringToObject(id2, k, meta->labels[i]);
            cJSON_AddNumberToObject(l2, meta->labels[i], i);
        }
    }
    cJSON_AddBoolToObject(j, "do_lower_case", meta->lowercase);
    if (meta->max_len > 0) cJSON_AddNumberToObject(j, "tessera_max_len", meta->max_len);
    if (meta->text_b_column) cJSON_AddStringToObject(j, "tessera_text_b_column", meta->text_b_column);
    if (meta->doc_stride > 0) cJSON_AddNumberToObject(j, "tessera_doc_stride", meta->doc_stride);
    if (meta->max_query_len > 0) cJSON_AddNumberToObject(j, "tessera_max_query_len", meta->max_query_len);
    if (meta->truncation > TS_TRUNC_HEAD && meta->truncation <= TS_TRUNC_HEAD_TAIL)
        cJSON_AddStringToObject(j, "tessera_truncation", ts_truncation_names[meta->truncation]);
    char *text = cJSON_Print(j);
    cJSON_Delete(j);
    if (!text) return ts_set_error(TS_ERR_NOMEM, "ts_bert_config_save: out of memory");
    size_t tl = strlen(text);
    char *withnl = realloc(text, tl + 2);
    if (withnl) text = withnl, text[tl++] = '\n', text[tl] = 0;
    ts_status s = ts_write_atomic(path, text, tl);
    free(text);
    return s;
}

ts_status ts_model_save_dir(const char *dir, const ts_program *p, const ts_bert_config *cfg, const char *vocab_path,
                            const ts_model_meta *meta) {
    char path[4200];
    ts_status s = ts_make_dirs(dir);
    if (s || (s = ts_path_join(path, sizeof path, dir, "model.safetensors"))) return s;
    if ((s = ts_program_save(p, path, TS_F32))) return s;
    size_t len;
    char *vocab = ts_read_file(vocab_path, &len);
    if (!vocab) return ts_last_status();
    s = ts_path_join(path, sizeof path, dir, "vocab.txt");
    if (!s) s = ts_write_atomic(path, vocab, len);
    free(vocab);
    if (s) return s;
    if ((s = ts_path_join(path, sizeof path, dir, "config.json"))) return s; /* last: a directory with it is complete */
    if ((s = ts_bert_config_save(path, cfg, meta))) return s;
    int dfd = open(dir, O_RDONLY); /* make the renames durable */
    if (dfd >= 0) fsync(dfd), close(dfd);
    return TS_OK;
}

ts_tokenizer *ts_model_load_dir(const char *dir, ts_bert_config *cfg, ts_model_meta *meta) {
    char path[4200];
    memset(meta, 0, sizeof *meta);
    meta->lowercase = 1;
    if (ts_path_join(path, sizeof path, dir, "config.json")) return NULL;
    if (ts_bert_config_load(path, cfg) != TS_OK) return NULL; /* an output struct: cfg->struct_size is the caller's */
    size_t len;
    char *text = ts_read_file(path, &len);
    cJSON *j = text ? cJSON_ParseWithLength(text, len) : NULL;
    int oom = !text && ts_last_status() == TS_ERR_NOMEM;
    free(text);
    if (!j) {
        if (!oom) ts_set_error(TS_ERR_IO, "%s: cannot read it back", path);
        return NULL;
    }
    const cJSON *ml = cJSON_GetObjectItemCaseSensitive(j, "tessera_max_len");
    meta->max_len = cJSON_IsNumber(ml) && ml->valuedouble > 1 && ml->valuedouble < 1e7 ? ml->valueint : 128;
    if (meta->max_len > cfg->max_position_embeddings) meta->max_len = cfg->max_position_embeddings;
    const cJSON *lc = cJSON_GetObjectItemCaseSensitive(j, "do_lower_case");
    if (cJSON_IsBool(lc)) meta->lowercase = cJSON_IsTrue(lc);
    const cJSON *tb = cJSON_GetObjectItemCaseSensitive(j, "tessera_text_b_column");
    if (cJSON_IsString(tb) && !(meta->text_b_column = strdup(tb->valuestring))) {
        cJSON_Delete(j);
        ts_set_error(TS_ERR_NOMEM, "%s: out of memory", path);
        return NULL;
    }
    const cJSON *ds = cJSON_GetObjectItemCaseSensitive(j, "tessera_doc_stride");
    const cJSON *mq = cJSON_GetObjectItemCaseSensitive(j, "tessera_max_query_len");
    meta->doc_stride = cJSON_IsNumber(ds) && ds->valuedouble >= 1 && ds->valuedouble < 1e6 ? ds->valueint : 0;
    meta->max_query_len = cJSON_IsNumber(mq) && mq->valuedouble >= 1 && mq->valuedouble < 1e6 ? mq->valueint : 0;
    const cJSON *tr = cJSON_GetObjectItemCaseSensitive(j, "tessera_truncation");
    if (tr && (!cJSON_IsString(tr) || (meta->truncation = ts_truncation_parse(tr->valuestring)) < 0)) {
        ts_set_error(TS_ERR_ARG, "%s: \"tessera_truncation\" must be \"head\", \"tail\" or \"head+tail\"", path);
        ts_model_meta_free(meta);
        cJSON_Delete(j);
        return NULL;
    }
    const cJSON *id2 = cJSON_GetObjectItemCaseSensitive(j, "id2label");
    int n = cJSON_IsObject(id2) ? cJSON_GetArraySize(id2) : 0;
    if (n > 0) {
        meta->labels = calloc((size_t)n, sizeof *meta->labels);
        meta->nlabels = meta->labels ? n : 0;
        for (int i = 0; i < meta->nlabels; i++) {
            char k[16];
            snprintf(k, sizeof k, "%d", i);
            const cJSON *v = cJSON_GetObjectItemCaseSensitive(id2, k);
            meta->labels[i] = strdup(cJSON_IsString(v) ? v->valuestring : k);
        }
    }
    cJSON_Delete(j);
    if (ts_path_join(path, sizeof path, dir, "vocab.txt")) {
        ts_model_meta_free(meta);
        return NULL;
    }
    ts_tokenizer *tok = ts_tokenizer_load(path, meta->lowercase);
    if (!tok) {
        ts_model_meta_free(meta);
        return NULL;
    }
    if (ts_tokenizer_vocab_size(tok) > cfg->vocab_size) {
        ts_set_error(TS_ERR_ARG, "%s has %d tokens, more than the config's vocab_size %d", path,
                     ts_tokenizer_vocab_size(tok), cfg->vocab_size);
        ts_tokenizer_free(tok);
        ts_model_meta_free(meta);
        return NULL;
    }
    ts_truncation_apply(tok, meta->truncation, meta->max_len);
    return tok;
}

/* ---------------------------------------------------------------- the quantization record
 * The "quantization" record of config.json, written by `tessera quantize` (cli/quantize.c) and read
 * by everything that compiles a model directory (tessera run / eval / predict / export / serve):
 *   "quantization": {"mode": "dynamic", "weights": "int8 per channel", "activations": "int8 per tensor, per run"}
 *   "quantization": {"mode": "static", "method": "entropy", "samples": 256, "weights": "int8 per channel",
 *                    "activations": "int8 per tensor, calibrated", "scales": {"<weight>": 0.0123, ...}}
 */

void ts_quant_record_free(ts_quant_record *r) {
    if (!r) return;
    for (int i = 0; i < r->nscales; i++) free((char *)r->scales[i].weight);
    free(r->scales);
    memset(r, 0, sizeof *r);
}

/* The scales object sc into r. TS_OK, or TS_ERR_ARG naming the entry that is not a number > 0. */
static ts_status read_scales(const cJSON *sc, ts_quant_record *r, const char *path) {
    int n = cJSON_GetArraySize(sc);
    r->scales = calloc((size_t)(n > 0 ? n : 1), sizeof *r->scales);
    if (!r->scales) return ts_set_error(TS_ERR_NOMEM, "%s: out of memory reading the scales", path);
    for (const cJSON *e = sc->child; e; e = e->next) {
        double v = cJSON_IsNumber(e) ? e->valuedouble : NAN;
        if (!(v > 0) || !isfinite(v) || !e->string)
            return ts_set_error(TS_ERR_ARG, "%s: \"quantization\" scale \"%s\" is not a finite number above 0", path,
                                e->string ? e->string : "?");
        char *name = strdup(e->string);
        if (!name) return ts_set_error(TS_ERR_NOMEM, "%s: out of memory reading the scales", path);
        r->scales[r->nscales++] = (ts_quant_scale){name, (float)v};
    }
    return TS_OK;
}

ts_status ts_quant_record_load(const char *dir, ts_quant_record *r) {
    memset(r, 0, sizeof *r);
    char path[4200];
    size_t len;
    ts_status rs = ts_path_join(path, sizeof path, dir ? dir : ".", "config.json");
    if (rs) return rs;
    if (access(path, R_OK) != 0) return TS_OK; /* no config: no record (the caller's own load names it) */
    char *buf = ts_read_file(path, &len);
    if (!buf)
        return ts_last_status() == TS_ERR_NOMEM ? TS_ERR_NOMEM : ts_set_error(TS_ERR_IO, "%s: cannot be read", path);
    cJSON *root = cJSON_ParseWithLength(buf, len);
    free(buf);
    const cJSON *q = root ? cJSON_GetObjectItemCaseSensitive(root, "quantization") : NULL;
    const cJSON *mode = q ? cJSON_GetObjectItemCaseSensitive(q, "mode") : NULL;
    ts_status st = TS_OK;
    if (q && !cJSON_IsString(mode)) {
        st = ts_set_error(TS_ERR_ARG, "%s: the \"quantization\" record has no \"mode\"", path);
    } else if (q && !strcmp(mode->valuestring, "dynamic")) {
        r->mode = TS_QUANT_DYNAMIC;
    } else if (q && !strcmp(mode->valuestring, "static")) {
        r->mode = TS_QUANT_STATIC;
        const cJSON *sc = cJSON_GetObjectItemCaseSensitive(q, "scales");
        if (!cJSON_IsObject(sc) || !sc->child)
            st = ts_set_error(TS_ERR_ARG,
                              "%s: the \"quantization\" record of mode \"static\" has no \"scales\" object "
                              "({\"<weight>\": scale, ...}); quantize the model again",
                              path);
        else
            st = read_scales(sc, r, path);
    } else if (q) {
        st = ts_set_error(TS_ERR_ARG, "%s: \"quantization\" mode \"%s\" is not \"dynamic\" or \"static\"", path,
                          mode->valuestring);
    }
    cJSON_Delete(root);
    if (st) ts_quant_record_free(r);
    return st;
}
