/*
 * quantize_dir.c — an int8 copy of a model directory (tessera_tasks.h: ts_quantize_model_dir,
 * what `tessera quantize` does): the options checked, the model read, the static scales
 * calibrated (calibrate.c), the float and int8 models scored (quantize_eval.c), and the copy
 * written: the model's files, and a config.json recording the quantization, which every reader
 * of a model directory compiles its programs with (ts_quant_record_load):
 *   "quantization": {"mode": "dynamic", "weights": "int8 per channel", "activations": "int8 per tensor, per run"}
 *   "quantization": {"mode": "static", "method": "entropy", "samples": 256, "weights": "int8 per channel",
 *                    "activations": "int8 per tensor, calibrated", "scales": {"<weight>": 0.0123, ...}}
 * Each file is written atomically into a sibling directory OUT.tmp-PID, which is then renamed to
 * OUT (or, when OUT holds files already, its files moved in one by one, config.json last): a
 * failure leaves no partial copy. A weight name holds no '"' or '\' (the writer refuses one).
 */
#include "common/app.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "train/quantize_impl.h"

static const char *const METHODS[] = {"minmax", "percentile", "entropy"}; /* TS_CALIB_* order */

const char *ts_calib_method_name(int method) { return method >= 0 && method < 3 ? METHODS[method] : "?"; }

int ts_calib_method_parse(const char *name) {
    for (int i = 0; name && i < 3; i++)
        if (!strcmp(name, METHODS[i])) return i;
    ts_set_error(TS_ERR_ARG, "calibration method '%s': minmax, percentile or entropy", name ? name : "(null)");
    return -1;
}

ts_squad_opts qz_squad_opts(const ts_model_meta *meta) { return ts_squad_opts_of_model(meta, 1); }

tr_program_opts qz_program_opts(const qz_run *R, const ts_quant_record *q) {
    return (tr_program_opts){.batch = R->o.batch, .seq = R->meta.max_len, .threads = R->o.threads,
                             .memory_limit = R->o.memory_limit, .load_flags = R->o.load_flags,
                             .quantize = q ? q->mode : TS_QUANT_NONE, .scales = q ? q->scales : NULL,
                             .nscales = q ? q->nscales : 0};
}

/* The record's JSON text ("quantization": {...}), malloc'd: dynamic, or static with the method,
 * samples and scales. NULL, error set (out of memory, a weight name holding '"' or '\'). */
static char *record_json(const ts_quantize_opts *o, const ts_quant_record *q) {
    size_t cap = 512 + (size_t)q->nscales * 32, len = 0;
    for (int i = 0; i < q->nscales; i++) cap += strlen(q->scales[i].weight);
    char *s = malloc(cap);
    if (!s) return ts_set_error(TS_ERR_NOMEM, "out of memory"), NULL;
    if (o->mode == TS_QUANT_DYNAMIC) {
        snprintf(s, cap, "\"quantization\": {\"mode\": \"dynamic\", \"weights\": \"int8 per channel\", "
                         "\"activations\": \"int8 per tensor, per run\"}");
        return s;
    }
    len += (size_t)snprintf(s, cap, "\"quantization\": {\"mode\": \"static\", \"method\": \"%s\", \"samples\": %d, "
                            "\"weights\": \"int8 per channel\", \"activations\": \"int8 per tensor, calibrated\", "
                            "\"scales\": {", METHODS[o->method], o->samples);
    for (int i = 0; i < q->nscales; i++) {
        if (strpbrk(q->scales[i].weight, "\"\\")) {
            free(s);
            return ts_set_error(TS_ERR_ARG, "weight name '%s' holds '\"' or '\\'", q->scales[i].weight), NULL;
        }
        len += (size_t)snprintf(s + len, cap - len, "%s\n    \"%s\": %.9g", i ? "," : "", q->scales[i].weight,
                                (double)q->scales[i].scale);
    }
    snprintf(s + len, cap - len, "}}");
    return s;
}

/* ts_write_atomic_with's body: the bytes of the FILE * ctx. */
static ts_status copy_body(FILE *f, void *ctx) {
    char buf[1 << 16];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, ctx)) > 0)
        if (fwrite(buf, 1, n, f) != n) break;
    return ferror((FILE *)ctx) ? ts_set_error(TS_ERR_IO, "read failed: %s", strerror(errno)) : TS_OK;
}

/* src copied to dst atomically; config.json (record non-NULL) with the record added last. */
static ts_status copy_file(const char *src, const char *dst, const char *record) {
    if (!record) {
        FILE *in = fopen(src, "rb");
        if (!in) return ts_set_error(TS_ERR_IO, "cannot read %s: %s", src, strerror(errno));
        ts_status st = ts_write_atomic_with(dst, copy_body, in);
        fclose(in);
        return st == TS_OK ? TS_OK : tr_err_prefixed(st, "%s", src);
    }
    size_t len = 0;
    char *s = ts_read_file(src, &len), *close = s ? strrchr(s, '}') : NULL; /* the object's closing brace */
    if (!close) {
        free(s);
        return s ? ts_set_error(TS_ERR_ARG, "%s is not a JSON object", src) : ts_last_status();
    }
    size_t head = (size_t)(close - s), rlen = strlen(record);
    char *t = malloc(head + rlen + 8);
    ts_status st = t ? TS_OK : ts_set_error(TS_ERR_NOMEM, "out of memory");
    if (t) {
        memcpy(t, s, head);
        int n = sprintf(t + head, ",\n  %s\n}\n", record);
        st = ts_write_atomic(dst, t, head + (size_t)n);
    }
    free(t), free(s);
    return st;
}

/* Remove directory dir and the files in it (nothing when it is not there). */
static void remove_dir(const char *dir) {
    DIR *d = opendir(dir);
    char p[4200];
    for (struct dirent *e; d && (e = readdir(d));)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") && ts_path_join(p, sizeof p, dir, e->d_name) == TS_OK)
            unlink(p);
    if (d) closedir(d);
    rmdir(dir);
}

/* Every regular file of model_dir (its run lock aside) into dir, config.json with record. */
static ts_status copy_all(const char *model_dir, const char *dir, const char *record) {
    DIR *d = opendir(model_dir);
    if (!d) return ts_set_error(TS_ERR_ARG, "model_dir %s: %s", model_dir, strerror(errno));
    ts_status st = TS_OK;
    for (struct dirent *e; !st && (e = readdir(d));) {
        char src[4200], dst[4200];
        struct stat sb;
        if (!strcmp(e->d_name, ".tessera.lock")) continue;
        if ((st = ts_path_join(src, sizeof src, model_dir, e->d_name)) || (st = ts_path_join(dst, sizeof dst, dir, e->d_name)))
            break;
        if (stat(src, &sb) != 0 || !S_ISREG(sb.st_mode)) continue;
        st = copy_file(src, dst, !strcmp(e->d_name, "config.json") ? record : NULL);
    }
    closedir(d);
    return st;
}

/* The files of tmp moved into the existing directory out, config.json last. */
static ts_status move_into(const char *tmp, const char *out) {
    DIR *d = opendir(tmp);
    if (!d) return ts_set_error(TS_ERR_IO, "%s: %s", tmp, strerror(errno));
    ts_status st = TS_OK;
    char src[4200], dst[4200];
    for (struct dirent *e; !st && (e = readdir(d));) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") || !strcmp(e->d_name, "config.json")) continue;
        if (!(st = ts_path_join(src, sizeof src, tmp, e->d_name)) && !(st = ts_path_join(dst, sizeof dst, out, e->d_name)) &&
            rename(src, dst) != 0)
            st = ts_set_error(TS_ERR_IO, "out_dir %s: cannot move %s into it: %s", out, e->d_name, strerror(errno));
    }
    closedir(d);
    if (!st && !(st = ts_path_join(src, sizeof src, tmp, "config.json")) &&
        !(st = ts_path_join(dst, sizeof dst, out, "config.json")) && rename(src, dst) != 0)
        st = ts_set_error(TS_ERR_IO, "out_dir %s: cannot move config.json into it: %s", out, strerror(errno));
    return st;
}

/* out's parent made, then the copy written into OUT.tmp-PID and put in place. */
static ts_status write_copy(const char *model_dir, const char *out, const char *record) {
    char tmp[4200], parent[4200];
    if (snprintf(tmp, sizeof tmp, "%s.tmp-%ld", out, (long)getpid()) >= (int)sizeof tmp - 64)
        return ts_set_error(TS_ERR_ARG, "out_dir %s: path too long", out);
    snprintf(parent, sizeof parent, "%s", out);
    size_t n = strlen(parent);
    while (n > 1 && parent[n - 1] == '/') parent[--n] = 0;
    char *slash = strrchr(parent, '/');
    if (slash && slash != parent) *slash = 0;
    ts_status st = slash && slash != parent ? ts_make_dirs(parent) : TS_OK;
    if (st) return tr_err_prefixed(TS_ERR_IO, "out_dir %s", out);
    remove_dir(tmp); /* a stale one of a process of the same pid */
    if (mkdir(tmp, 0777) != 0)
        return ts_set_error(TS_ERR_IO, "out_dir %s: cannot create %s: %s", out, tmp, strerror(errno));
    st = copy_all(model_dir, tmp, record);
    if (!st && rename(tmp, out) != 0) { /* out holds files already (or is no directory) */
        struct stat sb;
        if ((errno == EEXIST || errno == ENOTEMPTY) && stat(out, &sb) == 0 && S_ISDIR(sb.st_mode))
            st = move_into(tmp, out);
        else
            st = ts_set_error(TS_ERR_IO, "out_dir %s: cannot put the copy in place: %s", out, strerror(errno));
    }
    remove_dir(tmp);
    return st;
}

/* The options read and checked, the defaults filled in. */
static ts_status read_opts(qz_run *R, const ts_quantize_opts *in) {
    ts_status st = TS_STRUCT_READ(&R->o, in, ts_quantize_opts, "ts_quantize_model_dir");
    ts_quantize_opts *o = &R->o;
    if (st) return st;
    if (!o->model_dir || !*o->model_dir || !o->out_dir || !*o->out_dir)
        return ts_set_error(TS_ERR_ARG, "%s is required", !o->model_dir || !*o->model_dir ? "model_dir" : "out_dir");
    if (o->mode != TS_QUANT_DYNAMIC && o->mode != TS_QUANT_STATIC)
        return ts_set_error(TS_ERR_ARG, "mode %d: TS_QUANT_DYNAMIC or TS_QUANT_STATIC", o->mode);
    if ((o->mode == TS_QUANT_STATIC) != (o->calib_file != NULL))
        return ts_set_error(TS_ERR_ARG, o->calib_file ? "calib_file is for static int8 (TS_QUANT_STATIC), not dynamic"
                                                      : "calib_file is required for static int8 (TS_QUANT_STATIC)");
    if (o->samples < 0) return ts_set_error(TS_ERR_ARG, "samples %d: the calibration rows, at least 1", o->samples);
    if (o->method < 0 || o->method > 2)
        return ts_set_error(TS_ERR_ARG, "method %d: not a TS_CALIB_* method", o->method);
    if (o->batch < 0 || o->threads < 0)
        return ts_set_error(TS_ERR_ARG, "%s below 0", o->batch < 0 ? "batch" : "threads");
    if (!o->samples) o->samples = 256;
    if (!o->batch) o->batch = 32;
    if (!o->text_column) o->text_column = "text";
    if (!o->label_column) o->label_column = "label";
    ts_quant_record r;
    if (ts_quant_record_load(o->model_dir, &r) == TS_OK && r.mode != TS_QUANT_NONE) {
        ts_quant_record_free(&r);
        return ts_set_error(TS_ERR_ARG, "model_dir %s is quantized already (its config.json has \"quantization\")",
                            o->model_dir);
    }
    ts_err_clear();
    if (!strcmp(o->model_dir, o->out_dir))
        return ts_set_error(TS_ERR_ARG, "out_dir is model_dir (%s); write the int8 copy elsewhere", o->out_dir);
    return TS_OK;
}

/* The model read: its config, labels and vocabulary, and its task. */
static ts_status open_model(qz_run *R) {
    R->cfg.struct_size = sizeof R->cfg;
    if (!(R->tok = ts_model_load_dir(R->o.model_dir, &R->cfg, &R->meta)))
        return tr_err_prefixed(TS_ERR_ARG, "model_dir %s", R->o.model_dir);
    R->qa = R->cfg.head == TS_BERT_QUESTION_ANSWERING;
    if (!R->qa && (R->cfg.head != TS_BERT_SEQ_CLASSIFICATION || R->meta.nlabels <= 0))
        return ts_set_error(TS_ERR_ARG,
                            "model_dir %s is not a fine-tuned model (architecture '%s'; a sequence classifier "
                            "or a question-answering model)",
                            R->o.model_dir, R->cfg.architecture[0] ? R->cfg.architecture : "none");
    R->rep.task = R->qa ? TS_FINETUNE_QA : TS_FINETUNE_CLASSIFY;
    return TS_OK;
}

ts_status ts_quantize_model_dir(const ts_quantize_opts *o, ts_quantize_report *report) {
    qz_run *R = calloc(1, sizeof *R);
    if (!R) return ts_set_error(TS_ERR_NOMEM, "out of memory");
    R->q.mode = TS_QUANT_DYNAMIC;
    ts_status st = report ? TS_STRUCT_WRITE(report, &R->rep, ts_quantize_report, "ts_quantize_model_dir") : TS_OK;
    int report_ok = report && !st; /* its struct_size checked: the last write cannot fail */
    if (!st) st = read_opts(R, o);
    if (!st) st = open_model(R);
    if (!st && R->o.mode == TS_QUANT_STATIC) st = qz_calibrate(R);
    if (!st && R->o.eval_file) st = qz_evaluate(R);
    if (!st && R->o.eval_file && R->o.max_drop >= 0 && R->rep.drop > R->o.max_drop)
        st = ts_set_error(TS_ERR_RUNTIME, "int8 loses %.2f points on %s, more than max_drop %g: %s not written",
                          R->rep.drop, R->o.eval_file, R->o.max_drop, R->o.out_dir);
    char *record = st ? NULL : record_json(&R->o, &R->q);
    if (!st && !record) st = ts_last_status();
    if (!st && !(st = write_copy(R->o.model_dir, R->o.out_dir, record))) R->rep.written = 1;
    free(record);
    if (report_ok) TS_STRUCT_WRITE(report, &R->rep, ts_quantize_report, "ts_quantize_model_dir");
    ts_quant_record_free(&R->q);
    ts_tokenizer_free(R->tok);
    ts_model_meta_free(&R->meta);
    free(R);
    return st;
}
