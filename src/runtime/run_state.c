/*
 * run_state.c — the whole training state of a program in one checkpoint directory, written
 * atomically, so a killed run resumes exactly where its last complete checkpoint left it:
 *
 *   DIR/model.safetensors   every parameter, f32, Hugging Face names (loadable by ts_program_load)
 *   DIR/state.safetensors   every persistent non-parameter value (TS_V_STATE: optimizer moments,
 *                           momentum buffers, step counters) by name; "__metadata__" holds the
 *                           program step (which seeds dropout) as "step"
 *   DIR/trainer.json        the caller's JSON (data-loader position, loss scale, host RNG, ...)
 *
 * Writing: DIR.tmp-XXXXXX is filled, every file and the directory fsynced, then the old DIR (if
 * any) is renamed to DIR.old, the new one renamed to DIR, the parent fsynced and DIR.old deleted.
 * A crash at any point leaves a complete DIR, or no DIR but a complete DIR.old (the recovery
 * rule: a load of DIR falls back to DIR.old when DIR is missing), plus perhaps a stale DIR.tmp-*
 * that loads ignore and the next save or rotation deletes.
 *
 * Also: ts_checkpoint_check (validate without a program), ts_checkpoint_rotate (keep the newest
 * N step-numbered checkpoints "<prefix><digits>") and ts_checkpoint_latest (the newest valid one).
 *
 * Replicas (a program whose optimizer sums over R > 1 ranks): every rank saves together. Rank 0
 * makes DIR.tmp-XXXXXX and tells the others its name; each rank r writes its part,
 *   DIR/part-<r>.safetensors   its share of the optimizer state (ZeRO-1: the moments of the
 *                              parameters it owns; nothing without sharding) and, in
 *                              "__metadata__", "rank_json": its own JSON (its data reader's position)
 * then the ranks agree that every part was written, and only then rank 0 writes the replicated
 * files above (state.safetensors with "ranks": R in its metadata) and moves the directory into
 * place. A checkpoint is complete only when every part is there: ts_checkpoint_check refuses one
 * that lacks a part, so a resume never picks it.
 */
#define _GNU_SOURCE /* nftw */
#include "comm/comm.h"
#include "io/safetensors.h"
#include "runtime/program.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#define MODEL_FILE "model.safetensors"
#define STATE_FILE "state.safetensors"
#define TRAINER_FILE "trainer.json"
#define STATE_FORMAT "tessera-train-state-1"

/* ---------------------------------------------------------------- small file-system helpers */

static char *join(const char *a, const char *b) {
    size_t n = strlen(a) + strlen(b) + 2;
    char *s = malloc(n);
    if (s) snprintf(s, n, "%s/%s", a, b);
    return s;
}

static char *cat(const char *a, const char *b) {
    size_t n = strlen(a) + strlen(b) + 1;
    char *s = malloc(n);
    if (s) snprintf(s, n, "%s%s", a, b);
    return s;
}

static int is_dir(const char *path) {
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
}

static int exists(const char *path) {
    struct stat sb;
    return lstat(path, &sb) == 0;
}

static int fsync_path(const char *path, int dir) {
    int fd = open(path, (dir ? O_RDONLY | O_DIRECTORY : O_RDONLY) | O_CLOEXEC);
    if (fd < 0) return -1;
    int rc = fsync(fd);
    if (rc != 0 && (errno == EINVAL || errno == EROFS)) rc = 0; /* file systems without fsync */
    close(fd);
    return rc;
}

/* The directory holding path ("." when it has no slash), malloc'd; NULL when out of memory. */
static char *parent_of(const char *path) {
    char *d = strdup(path);
    if (!d) return NULL;
    size_t n = strlen(d);
    while (n > 1 && d[n - 1] == '/') d[--n] = 0; /* "a/b/" -> "a/b" */
    char *slash = strrchr(d, '/');
    if (!slash) { free(d); return strdup("."); }
    if (slash == d) slash[1] = 0;
    else *slash = 0;
    return d;
}

static int rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
    (void)sb; (void)flag; (void)ftw;
    return remove(path);
}

/* Delete a directory tree (no-op when path does not exist). 0 on success. */
static int rm_tree(const char *path) {
    if (!exists(path)) return 0;
    return nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* Write a whole small file and fsync it. */
static ts_status write_small(const char *path, const char *text) {
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (fd < 0) return ts_err(TS_ERR_IO, "%s: cannot create: %s", path, strerror(errno));
    size_t n = strlen(text), o = 0;
    while (o < n) {
        ssize_t w = write(fd, text + o, n - o);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            ts_status s = ts_err(TS_ERR_IO, "%s: write failed: %s", path, strerror(errno));
            close(fd);
            return s;
        }
        o += (size_t)w;
    }
    if (fsync(fd) != 0 && errno != EINVAL && errno != EROFS) {
        ts_status s = ts_err(TS_ERR_IO, "%s: fsync failed: %s", path, strerror(errno));
        close(fd);
        return s;
    }
    if (close(fd) != 0) return ts_err(TS_ERR_IO, "%s: close failed: %s", path, strerror(errno));
    return TS_OK;
}

/* Read a whole small file (at most 64 MiB) into a NUL-terminated malloc'd string. */
static ts_status read_small(const char *path, char **out) {
    size_t n = 0;
    char *b = *out = ts_read_file_max(path, (size_t)64 << 20, &n);
    if (!b) return ts_last_status();
    if (strlen(b) != n) { free(b); *out = NULL; return ts_err(TS_ERR_IO, "%s: holds a NUL byte; not JSON", path); }
    return TS_OK;
}

/* DIR, or DIR.old when DIR is missing (the recovery rule). malloc'd; NULL when neither exists, or
 * when out of memory with *oom set. */
static char *resolve_dir(const char *dir, int *oom) {
    if (is_dir(dir)) {
        char *d = strdup(dir);
        *oom = !d;
        return d;
    }
    char *old = cat(dir, ".old");
    *oom = !old;
    if (old && !exists(dir) && is_dir(old)) return old;
    free(old);
    return NULL;
}

/* Remove stale "<base>.tmp-*" siblings of a checkpoint directory left by an interrupted save. */
static void remove_stale_tmps(const char *dir) {
    char *parent = parent_of(dir);
    const char *base = strrchr(dir, '/');
    base = base ? base + 1 : dir;
    char *pat = cat(base, ".tmp-");
    DIR *d = pat && parent ? opendir(parent) : NULL; /* out of memory: they stay, as after a crash */
    if (d) {
        struct dirent *e;
        size_t pl = strlen(pat);
        while ((e = readdir(d)))
            if (strncmp(e->d_name, pat, pl) == 0) {
                char *p = join(parent, e->d_name);
                if (p) rm_tree(p);
                free(p);
            }
        closedir(d);
    }
    free(pat);
    free(parent);
}

/* ---------------------------------------------------------------- the program's state values */

/* Persistent non-parameter values with a buffer and a name: the ones a checkpoint holds. */
static int is_saved_state(const ts_program *p, int v) {
    const ts_val *x = &ts_program_graph(p)->vals[v];
    return x->kind == TS_V_STATE && x->name && ts_program_holds(p, v);
}

enum { ALL_STATE = 0, REPLICATED_STATE = 1, SHARDED_STATE = 2 };
/* Of the saved state, the part `which` asks for (a rank's share of the optimizer state, or the rest). */
static int in_part(const ts_program *p, int v, int which) {
    return is_saved_state(p, v) &&
           (which == ALL_STATE || (which == SHARDED_STATE) == (ts_program_graph(p)->vals[v].sharded != 0));
}

static int replicas_of(const ts_program *p) {
    const ts_graph *g = ts_program_graph(p);
    return g->replicas > 1 ? g->replicas : 1;
}

typedef struct state_ctx {
    const ts_program *p;
    const int *ids;
} state_ctx;

static ts_status fill_state(void *c, int i, void *dst) {
    const state_ctx *sc = c;
    const ts_val *x = &ts_program_graph(sc->p)->vals[sc->ids[i]];
    (void)x;
    return ts_value_read(sc->p, sc->ids[i], dst);
}

/* Write the state values of part `which` to path, with "format" and "step" and the nx metadata
 * pairs xkey / xval (a NULL value is left out). */
static ts_status save_states(const ts_program *p, const char *path, int which, int nx, const char *const *xkey,
                             const char *const *xval) {
    const ts_graph *g = ts_program_graph(p);
    int nv = g->nvals, n = 0;
    int *ids = malloc(sizeof(int) * (size_t)(nv + 1));
    ts_st_out *t = calloc((size_t)nv + 1, sizeof *t);
    if (!ids || !t) { free(ids); free(t); return ts_err(TS_ERR_NOMEM, "%s: out of memory", path); }
    for (int v = 0; v < nv; v++)
        if (in_part(p, v, which)) {
            const ts_val *x = &g->vals[v];
            ids[n] = v;
            t[n++] = (ts_st_out){x->name, x->dtype, x->ndim, x->shape, NULL};
        }
    char step[32];
    snprintf(step, sizeof step, "%" PRIu64, ts_program_step(p));
    const char *key[8] = {"format", "step"}, *val[8] = {STATE_FORMAT, step};
    int nmeta = 2;
    for (int i = 0; i < nx && nmeta < 8; i++)
        if (xval[i]) key[nmeta] = xkey[i], val[nmeta++] = xval[i];
    state_ctx sc = {p, ids};
    ts_status s = ts_st_write(path, n, t, nmeta, key, val, fill_state, &sc);
    free(ids);
    free(t);
    return s;
}

/* DIR/part-<rank>.safetensors, malloc'd. */
static char *part_path(const char *dir, int rank) {
    char name[64];
    snprintf(name, sizeof name, "part-%d.safetensors", rank);
    return join(dir, name);
}

/* ---------------------------------------------------------------- save */

/* Make the temporary directory d.tmp-XXXXXX (into tmp, malloc'd). */
static ts_status make_tmp(const char *d, char **tmp) {
    *tmp = cat(d, ".tmp-XXXXXX");
    if (!*tmp) return ts_err(TS_ERR_NOMEM, "ts_program_save_state: out of memory");
    if (!mkdtemp(*tmp)) {
        free(*tmp), *tmp = NULL;
        return ts_err(TS_ERR_IO, "%s: cannot create a temporary directory next to it: %s", d, strerror(errno));
    }
    chmod(*tmp, 0755);
    return TS_OK;
}

/* Into tmp: the parameters, the state of part `which` (with nx metadata pairs) and trainer.json;
 * then swap tmp into place as d. On failure tmp is removed. */
static ts_status write_and_swap(const ts_program *p, const char *d, char *tmp, int which, int nx,
                                const char *const *xkey, const char *const *xval, const char *extra_json) {
    char *old = cat(d, ".old"), *parent = parent_of(d);
    char *fm = join(tmp, MODEL_FILE), *fs = join(tmp, STATE_FILE), *ft = join(tmp, TRAINER_FILE);
    ts_status s = TS_OK;
    int made = 1;
    if (!old || !parent || !fm || !fs || !ft) { s = ts_err(TS_ERR_NOMEM, "ts_program_save_state: out of memory"); goto done; }
    /* each file is written to a temp name, fsynced and renamed, and the directory fsynced */
    if ((s = ts_program_save(p, fm, TS_F32))) goto done;
    if ((s = save_states(p, fs, which, nx, xkey, xval))) goto done;
    if ((s = write_small(ft, extra_json ? extra_json : "{}"))) goto done;
    if (fsync_path(tmp, 1) != 0) { s = ts_err(TS_ERR_IO, "%s: cannot fsync: %s", tmp, strerror(errno)); goto done; }

    /* swap into place: DIR -> DIR.old, DIR.tmp -> DIR, then DIR.old goes */
    if (is_dir(d)) {
        if (rm_tree(old) != 0) { s = ts_err(TS_ERR_IO, "%s: cannot remove: %s", old, strerror(errno)); goto done; }
        if (rename(d, old) != 0) { s = ts_err(TS_ERR_IO, "%s: cannot move aside to %s: %s", d, old, strerror(errno)); goto done; }
    } else if (exists(d)) {
        s = ts_err(TS_ERR_IO, "%s: exists and is not a directory", d);
        goto done;
    }
    if (rename(tmp, d) != 0) {
        s = ts_err(TS_ERR_IO, "%s: cannot move the new checkpoint into place: %s", d, strerror(errno));
        goto done;
    }
    made = 0;
    if (fsync_path(parent, 1) != 0) { s = ts_err(TS_ERR_IO, "%s: cannot fsync: %s", parent, strerror(errno)); goto done; }
    if (rm_tree(old) != 0) s = ts_err(TS_ERR_IO, "%s: saved, but the previous checkpoint %s could not be removed: %s", d, old, strerror(errno));
    fsync_path(parent, 1);
done:
    if (made) rm_tree(tmp);
    free(fm);
    free(fs);
    free(ft);
    free(old);
    free(parent);
    return s;
}

/* The replicated save of the top of the file: every rank of the program's communicator. */
static ts_status save_replicated(const ts_program *p, const char *d, const char *extra_json, const char *rank_json) {
    ts_comm *c = ts_comm_by_id(ts_program_graph(p)->comm_id);
    if (!c) return ts_err(TS_ERR_COMM, "%s: the program's communicator is gone (finalized?)", d);
    int rank = ts_comm_rank(c), R = ts_comm_size(c);
    char name[4096] = "";
    char *tmp = NULL;
    ts_status s = TS_OK;
    if (rank == 0) {
        remove_stale_tmps(d);
        if (!(s = make_tmp(d, &tmp))) snprintf(name, sizeof name, "%s", tmp);
    }
    ts_status cs = ts_comm_broadcast(c, name, sizeof name, 0);
    if (cs) { free(tmp); return cs; }
    if (!name[0]) { free(tmp); return s ? s : ts_err(TS_ERR_IO, "%s: rank 0 could not create the checkpoint's directory", d); }
    /* every rank's part, then the agreement that all are there */
    char *part = part_path(name, rank), rk[16], nr[16];
    snprintf(rk, sizeof rk, "%d", rank);
    snprintf(nr, sizeof nr, "%d", R);
    static const char *const pkey[] = {"rank", "ranks", "rank_json"};
    const char *pval[] = {rk, nr, rank_json ? rank_json : "{}"};
    s = part ? save_states(p, part, SHARDED_STATE, 3, pkey, pval) : ts_err(TS_ERR_NOMEM, "%s: out of memory", d);
    free(part);
    char mine[1024] = "";
    if (s) snprintf(mine, sizeof mine, "%s", ts_last_error());
    int32_t failed = s != TS_OK;
    if ((cs = ts_comm_allreduce(c, &failed, 1, TS_I32))) { free(tmp); return cs; }
    if (failed) {
        if (rank == 0) rm_tree(name);
        free(tmp);
        return s ? ts_err(s, "%s", mine)
                 : ts_err(TS_ERR_IO, "%s: %d rank%s could not write their part of the checkpoint", d, (int)failed,
                          failed > 1 ? "s" : "");
    }
    if (rank == 0) {
        static const char *const skey[] = {"ranks"};
        const char *sval[] = {nr};
        s = write_and_swap(p, d, tmp, REPLICATED_STATE, 1, skey, sval, extra_json);
        if (s) snprintf(mine, sizeof mine, "%s", ts_last_error());
    }
    free(tmp);
    int32_t ok = s == TS_OK;
    if ((cs = ts_comm_broadcast(c, &ok, sizeof ok, 0))) return cs;
    if (rank == 0) return s ? ts_err(s, "%s", mine) : TS_OK;
    return ok ? TS_OK : ts_err(TS_ERR_IO, "%s: rank 0 could not complete the checkpoint", d);
}

ts_status ts_program_save_state(const ts_program *p, const char *dir, const char *extra_json) {
    return ts_program_save_state_parts(p, dir, extra_json, NULL);
}

ts_status ts_program_save_state_parts(const ts_program *p, const char *dir, const char *extra_json,
                                      const char *rank_json) {
    if (!p || !dir || !*dir)
        return ts_err(TS_ERR_ARG, "ts_program_save_state: %s is NULL", !p ? "program" : "directory");
    const char *js[2] = {extra_json, rank_json};
    for (int k = 0; k < 2; k++) {
        if (!js[k]) continue;
        cJSON *j = cJSON_ParseWithOpts(js[k], NULL, 1);
        int ok = j != NULL;
        cJSON_Delete(j);
        if (!ok) return ts_err(TS_ERR_ARG, "%s: ts_program_save_state: %s is not valid JSON", dir,
                               k ? "rank_json" : "extra_json");
    }
    size_t dl = strlen(dir);
    while (dl > 1 && dir[dl - 1] == '/') dl--; /* "ckpt/" names "ckpt" */
    char *d = malloc(dl + 1);
    if (!d) return ts_err(TS_ERR_NOMEM, "ts_program_save_state: out of memory");
    memcpy(d, dir, dl);
    d[dl] = 0;
    ts_status s;
    if (replicas_of(p) > 1) {
        s = save_replicated(p, d, extra_json, rank_json);
    } else {
        remove_stale_tmps(d);
        char *tmp = NULL;
        static const char *const key[] = {"rank_json"};
        const char *val[] = {rank_json};
        if (!(s = make_tmp(d, &tmp))) s = write_and_swap(p, d, tmp, ALL_STATE, 1, key, val, extra_json);
        free(tmp);
    }
    free(d);
    return s;
}

/* ---------------------------------------------------------------- validation and load */

/* An opened checkpoint: both tensor files mapped, the JSON read, the step parsed. */
typedef struct ckpt {
    char *dir, *fm, *fs, *ft;
    ts_safetensors *model, *state;
    ts_safetensors *part;      /* the loading rank's part (replicas) */
    char *json;
    uint64_t step;
    int ranks;                 /* 1, or the replicas that wrote it (each a part) */
} ckpt;

static void ckpt_close(ckpt *c) {
    ts_safetensors_close(c->model);
    ts_safetensors_close(c->state);
    ts_safetensors_close(c->part);
    free(c->dir);
    free(c->fm);
    free(c->fs);
    free(c->ft);
    free(c->json);
    memset(c, 0, sizeof *c);
}

/* Open and validate the files of a checkpoint on their own (no program). */
static ts_status ckpt_open(const char *dir, ckpt *c) {
    memset(c, 0, sizeof *c);
    int oom = 0;
    c->dir = resolve_dir(dir, &oom);
    if (!c->dir) {
        if (oom) return ts_err(TS_ERR_NOMEM, "%s: out of memory", dir);
        if (exists(dir)) return ts_err(TS_ERR_IO, "%s: not a checkpoint directory", dir);
        return ts_err(TS_ERR_NOT_FOUND, "%s: no such checkpoint (nor %s.old)", dir, dir);
    }
    c->fm = join(c->dir, MODEL_FILE);
    c->fs = join(c->dir, STATE_FILE);
    c->ft = join(c->dir, TRAINER_FILE);
    if (!c->fm || !c->fs || !c->ft) { ckpt_close(c); return ts_err(TS_ERR_NOMEM, "%s: out of memory", dir); }
    ts_status s;
    if ((s = ts_st_open(c->fm, &c->model)) || (s = ts_st_open(c->fs, &c->state)) || (s = read_small(c->ft, &c->json))) {
        ckpt_close(c);
        return s;
    }
    cJSON *j = cJSON_ParseWithOpts(c->json, NULL, 1);
    int ok = j != NULL;
    cJSON_Delete(j);
    if (!ok) { s = ts_err(TS_ERR_IO, "%s: not valid JSON (truncated?)", c->ft); ckpt_close(c); return s; }
    const char *fmt = ts_safetensors_metadata(c->state, "format");
    const char *step = ts_safetensors_metadata(c->state, "step");
    if (!fmt || strcmp(fmt, STATE_FORMAT) != 0) {
        s = ts_err(TS_ERR_IO, "%s: not a tessera training state (metadata \"format\" is %s%s%s, expected \"%s\")",
                   c->fs, fmt ? "\"" : "", fmt ? fmt : "missing", fmt ? "\"" : "", STATE_FORMAT);
        ckpt_close(c);
        return s;
    }
    char *end = NULL;
    errno = 0;
    unsigned long long v = step && *step >= '0' && *step <= '9' ? strtoull(step, &end, 10) : 0;
    if (!step || !end || *end || errno) {
        s = ts_err(TS_ERR_IO, "%s: metadata \"step\" is %s, expected a decimal integer", c->fs, step ? step : "missing");
        ckpt_close(c);
        return s;
    }
    c->step = (uint64_t)v;
    /* replicas: every rank's part, of the same step */
    const char *nr = ts_safetensors_metadata(c->state, "ranks");
    c->ranks = nr ? atoi(nr) : 1;
    if (c->ranks < 1 || c->ranks > 1 << 20) {
        s = ts_err(TS_ERR_IO, "%s: metadata \"ranks\" is %s", c->fs, nr);
        ckpt_close(c);
        return s;
    }
    for (int r = 0; r < c->ranks && c->ranks > 1; r++) {
        char *pp = part_path(c->dir, r);
        ts_safetensors *pt = NULL;
        s = pp ? ts_st_open(pp, &pt) : ts_err(TS_ERR_NOMEM, "%s: out of memory", dir);
        if (s == TS_ERR_NOT_FOUND || (s && !exists(pp)))
            s = ts_err(TS_ERR_IO, "%s: the part of rank %d of %d is missing: the checkpoint is incomplete", c->dir, r,
                       c->ranks);
        const char *ps = s ? NULL : ts_safetensors_metadata(pt, "step");
        const char *prk = s ? NULL : ts_safetensors_metadata(pt, "rank");
        if (!s && (!ps || strcmp(ps, step) != 0 || !prk || atoi(prk) != r))
            s = ts_err(TS_ERR_IO, "%s: its step %s or rank %s is not the checkpoint's (%s, %d)", pp, ps ? ps : "missing",
                       prk ? prk : "missing", step, r);
        ts_safetensors_close(pt);
        free(pp);
        if (s) {
            ckpt_close(c);
            return s;
        }
    }
    return TS_OK;
}

static int is_float(ts_dtype t) { return t == TS_F32 || t == TS_BF16 || t == TS_F16; }

/* *k = the entry of x in st, checked against x (exact shape; dtype equal, or float <-> float
 * when convert != 0). */
static ts_status match(const ts_safetensors *st, const ts_val *x, int convert, int *kout) {
    char b1[160], b2[160];
    int k = *kout = ts_st_find(st, x->name);
    if (k < 0) return ts_err(TS_ERR_NOT_FOUND, "%s: tensor '%s' is missing", st->path, x->name);
    const ts_st_entry *e = &st->e[k];
    if (e->ndim != x->ndim || memcmp(e->shape, x->shape, sizeof(int64_t) * (size_t)x->ndim) != 0)
        return ts_err(TS_ERR_SHAPE, "%s: tensor '%s': shape %s in the file, but the program's has shape %s", st->path,
                      x->name, e->ndim > TS_MAX_DIMS ? "(rank > 8)" : ts_shape_str(e->ndim, e->shape, b1, sizeof b1),
                      ts_shape_str(x->ndim, x->shape, b2, sizeof b2));
    if (e->dtype != x->dtype && !(convert && is_float(e->dtype) && is_float(x->dtype)))
        return ts_err(TS_ERR_DTYPE, "%s: tensor '%s' is %s in the file, but the program's is %s", st->path, x->name,
                      ts_st_dtype_name(e->st_dtype), ts_dtype_name(x->dtype));
    return TS_OK;
}

ts_status ts_checkpoint_check(const char *dir) {
    if (!dir) return ts_err(TS_ERR_ARG, "ts_checkpoint_check: directory is NULL");
    ckpt c;
    ts_status s = ckpt_open(dir, &c);
    if (!s) ckpt_close(&c);
    return s;
}

ts_status ts_program_load_state(ts_program *p, const char *dir, char **extra_json_out) {
    return ts_program_load_state_parts(p, dir, extra_json_out, NULL);
}

ts_status ts_program_load_state_parts(ts_program *p, const char *dir, char **extra_json_out, char **rank_json_out) {
    if (extra_json_out) *extra_json_out = NULL;
    if (rank_json_out) *rank_json_out = NULL;
    if (!p || !dir) return ts_err(TS_ERR_ARG, "ts_program_load_state: %s is NULL", p ? "directory" : "program");
    ckpt c;
    ts_status s = ckpt_open(dir, &c);
    if (s) return s;
    int R = replicas_of(p), rank = R > 1 ? ts_program_graph(p)->replica : 0;
    if (c.ranks != R) {
        s = ts_err(TS_ERR_ARG, "%s: written by %d rank%s, but this program is %s%d (resume with the same number of "
                   "ranks: mpirun -np %d)", c.dir, c.ranks, c.ranks == 1 ? "" : "s", R > 1 ? "one of " : "", R, c.ranks);
        ckpt_close(&c);
        return s;
    }
    if (R > 1) {
        char *pp = part_path(c.dir, rank);
        s = pp ? ts_st_open(pp, &c.part) : ts_err(TS_ERR_NOMEM, "ts_program_load_state: out of memory");
        free(pp);
        if (s) { ckpt_close(&c); return s; }
    }
    const ts_safetensors *sharded_from = R > 1 ? c.part : c.state;
    /* validate everything before the program is touched */
    const ts_graph *g = ts_program_graph(p);
    int nv = g->nvals;
    int *idx = malloc(sizeof(int) * (size_t)(nv + 1));
    if (!idx) { ckpt_close(&c); return ts_err(TS_ERR_NOMEM, "ts_program_load_state: out of memory"); }
    for (int v = 0; v < nv && !s; v++) {
        idx[v] = -1;
        const ts_val *x = &g->vals[v];
        if (x->kind == TS_V_PARAM && ts_program_holds(p, v)) s = match(c.model, x, 1, &idx[v]);
        else if (is_saved_state(p, v)) s = match(x->sharded ? sharded_from : c.state, x, 0, &idx[v]);
    }
    /* then copy */
    void *tmp = NULL;
    for (int v = 0; v < nv && !s; v++) {
        if (idx[v] < 0) continue;
        const ts_val *x = &g->vals[v];
        const ts_safetensors *st = x->kind == TS_V_PARAM ? c.model : x->sharded ? sharded_from : c.state;
        const ts_st_entry *e = &st->e[idx[v]];
        const void *src = ts_st_bytes(st, idx[v]);
        size_t bytes = ts_val_bytes(x);
        if (e->dtype != x->dtype) {
            tmp = malloc(bytes ? bytes : 1);
            if (!tmp) { s = ts_err(TS_ERR_NOMEM, "%s: tensor '%s': out of memory", st->path, x->name); break; }
            ts_st_convert(e->dtype, src, x->dtype, tmp, ts_val_numel(x));
            src = tmp;
        }
        (void)bytes;
        s = ts_value_write(p, v, src);
        free(tmp);
        tmp = NULL;
    }
    free(tmp);
    free(idx);
    if (!s) {
        ts_program_set_step(p, c.step);
        if (extra_json_out) {
            *extra_json_out = c.json;
            c.json = NULL;
        }
        const char *rj = ts_safetensors_metadata(R > 1 ? c.part : c.state, "rank_json");
        if (rank_json_out && rj && !(*rank_json_out = strdup(rj))) {
            s = ts_err(TS_ERR_NOMEM, "%s: out of memory", dir);
            if (extra_json_out) free(*extra_json_out), *extra_json_out = NULL;
        }
    }
    ckpt_close(&c);
    return s;
}

/* ---------------------------------------------------------------- rotation and the latest */

typedef struct entry {
    char *name;
    uint64_t step;
} entry;

static int cmp_entry_desc(const void *a, const void *b) {
    const entry *x = a, *y = b;
    return x->step < y->step ? 1 : x->step > y->step ? -1 : strcmp(x->name, y->name);
}

/* Step of "<prefix><digits>" (with old != 0: "<prefix><digits>.old"); -1 when name is not one. */
static int parse_name(const char *name, const char *prefix, int old, uint64_t *step) {
    size_t pl = strlen(prefix);
    if (strncmp(name, prefix, pl) != 0) return -1;
    const char *s = name + pl;
    size_t nd = 0;
    uint64_t v = 0;
    while (s[nd] >= '0' && s[nd] <= '9') {
        if (v > (UINT64_MAX - 9) / 10) return -1;
        v = v * 10 + (uint64_t)(s[nd] - '0');
        nd++;
    }
    if (nd == 0) return -1;
    if (strcmp(s + nd, old ? ".old" : "") != 0) return -1;
    *step = v;
    return 0;
}

/* The step-numbered checkpoints under parent, newest first. A step whose DIR is missing but
 * whose DIR.old exists is listed by its DIR name (resolve_dir then finds DIR.old). */
/* Rename path to path.del-PID, sync its parent, then delete it. 0 (also when path does not
 * exist) or -1 with errno. */
static int remove_aside(const char *path) {
    struct stat st;
    if (lstat(path, &st) != 0) return errno == ENOENT ? 0 : -1;
    char suffix[32];
    snprintf(suffix, sizeof suffix, ".del-%ld", (long)getpid());
    char *aside = cat(path, suffix), *parent = aside ? parent_of(path) : NULL;
    int rc = -1;
    if (!parent) errno = ENOMEM;
    else if (rename(path, aside) == 0) {
        fsync_path(parent, 1);
        rc = rm_tree(aside);
    }
    free(aside);
    free(parent);
    return rc;
}

static ts_status list_ckpts(const char *parent, const char *prefix, entry **out, int *n) {
    *out = NULL;
    *n = 0;
    DIR *d = opendir(parent);
    if (!d) return ts_err(TS_ERR_IO, "%s: cannot open the checkpoint directory: %s", parent, strerror(errno));
    entry *v = NULL;
    int cnt = 0, cap = 0;
    ts_status s = TS_OK;
    struct dirent *e;
    while ((e = readdir(d))) {
        uint64_t step;
        int old = 0;
        if (parse_name(e->d_name, prefix, 0, &step) != 0) {
            if (parse_name(e->d_name, prefix, 1, &step) != 0) continue;
            old = 1;
        }
        char *name = strdup(e->d_name);
        if (!name) { s = ts_err(TS_ERR_NOMEM, "%s: out of memory", parent); break; }
        if (old) name[strlen(name) - 4] = 0;
        int dup = 0;
        for (int i = 0; i < cnt && !dup; i++) dup = strcmp(v[i].name, name) == 0;
        if (dup) { free(name); continue; }
        if (cnt == cap) {
            cap = cap ? 2 * cap : 16;
            entry *nv = realloc(v, sizeof *v * (size_t)cap);
            if (!nv) { free(name); s = ts_err(TS_ERR_NOMEM, "%s: out of memory", parent); break; }
            v = nv;
        }
        v[cnt++] = (entry){name, step};
    }
    closedir(d);
    if (s) {
        for (int i = 0; i < cnt; i++) free(v[i].name);
        free(v);
        return s;
    }
    if (cnt) qsort(v, (size_t)cnt, sizeof *v, cmp_entry_desc);
    *out = v;
    *n = cnt;
    return TS_OK;
}

static void free_list(entry *v, int n) {
    for (int i = 0; i < n; i++) free(v[i].name);
    free(v);
}

ts_status ts_checkpoint_rotate(const char *parent_dir, const char *prefix, int keep) {
    if (!parent_dir || !prefix || !*prefix)
        return ts_err(TS_ERR_ARG, "ts_checkpoint_rotate: %s is NULL or empty", !parent_dir ? "parent_dir" : "prefix");
    if (keep < 1) return ts_err(TS_ERR_ARG, "%s: ts_checkpoint_rotate: keep is %d, must be at least 1", parent_dir, keep);
    entry *v;
    int n;
    ts_status s = list_ckpts(parent_dir, prefix, &v, &n);
    if (s) return s;
    for (int i = 0; i < n; i++) {
        char *path = join(parent_dir, v[i].name);
        if (!path) { s = ts_err(TS_ERR_NOMEM, "%s: out of memory", parent_dir); break; }
        char *old = cat(path, ".old");
        if (!old) { free(path); s = ts_err(TS_ERR_NOMEM, "%s: out of memory", parent_dir); break; }
        if (i >= keep) {
            /* the newest copy of this step goes first: a crash leaves at worst an older one; each
             * is renamed aside (DIR.del-PID, a name no listing takes for a checkpoint) before it is
             * deleted, so a kill mid-deletion never leaves a half-deleted one under its own name */
            if (remove_aside(path) != 0 || remove_aside(old) != 0)
                s = ts_err(TS_ERR_IO, "%s: cannot remove an old checkpoint: %s", path, strerror(errno));
        } else if (is_dir(path) && rm_tree(old) != 0) { /* DIR is complete: DIR.old is left over */
            s = ts_err(TS_ERR_IO, "%s: cannot remove: %s", old, strerror(errno));
        }
        free(old);
        free(path);
        if (s) break;
    }
    free_list(v, n);
    if (s) return s;
    /* temp dirs of interrupted saves, "<prefix><digits>.tmp-*", and of interrupted deletions,
     * "<prefix><digits>.del-*", whether or not the step exists */
    DIR *d = opendir(parent_dir);
    if (!d) return ts_err(TS_ERR_IO, "%s: cannot open the checkpoint directory: %s", parent_dir, strerror(errno));
    struct dirent *e;
    size_t pl = strlen(prefix);
    while ((e = readdir(d))) {
        const char *q = e->d_name;
        if (strncmp(q, prefix, pl) != 0) continue;
        q += pl;
        if (!(*q >= '0' && *q <= '9')) continue;
        while (*q >= '0' && *q <= '9') q++;
        if (strncmp(q, ".tmp-", 5) != 0 && strncmp(q, ".del-", 5) != 0) continue;
        char *path = join(parent_dir, e->d_name);
        if (path && rm_tree(path) != 0)
            s = ts_err(TS_ERR_IO, "%s: cannot remove a stale temporary checkpoint: %s", path, strerror(errno));
        free(path);
    }
    closedir(d);
    return s;
}

ts_status ts_checkpoint_latest(const char *parent_dir, const char *prefix, char *out, size_t cap) {
    if (out && cap) out[0] = 0;
    if (!parent_dir || !prefix || !*prefix || !out || !cap)
        return ts_err(TS_ERR_ARG, "ts_checkpoint_latest: NULL or empty argument");
    entry *v;
    int n;
    ts_status s = list_ckpts(parent_dir, prefix, &v, &n);
    if (s) return s;
    s = ts_err(TS_ERR_NOT_FOUND, "%s: no valid checkpoint named %s<step>", parent_dir, prefix);
    for (int i = 0; i < n; i++) {
        char *path = join(parent_dir, v[i].name);
        if (!path) { s = ts_err(TS_ERR_NOMEM, "%s: out of memory", parent_dir); break; }
        ts_status c = ts_checkpoint_check(path);
        if (c == TS_OK) {
            if (strlen(path) + 1 > cap) s = ts_err(TS_ERR_ARG, "%s: the path does not fit in %zu bytes", path, cap);
            else { memcpy(out, path, strlen(path) + 1); s = TS_OK; }
            free(path);
            break;
        }
        fprintf(stderr, "tessera: skipping checkpoint %s: %s\n", path, ts_last_error());
        free(path);
    }
    if (s == TS_ERR_NOT_FOUND) s = ts_err(TS_ERR_NOT_FOUND, "%s: no valid checkpoint named %s<step>", parent_dir, prefix);
    free_list(v, n);
    return s;
}

/* ---------------------------------------------------------------- a run's checkpoints */

ts_status ts_train_checkpoint_save(const char *out, int64_t step, const ts_program *p, const char *trainer_json,
                                   int keep) {
    return ts_train_checkpoint_save_parts(out, step, p, trainer_json, NULL, keep);
}

ts_status ts_train_checkpoint_save_parts(const char *out, int64_t step, const ts_program *p, const char *trainer_json,
                                         const char *rank_json, int keep) {
    char parent[4200], path[4300], name[64];
    snprintf(name, sizeof name, TS_CKPT_PREFIX "%06lld", (long long)step);
    ts_status s = ts_path_join(parent, sizeof parent, out, TS_CKPT_DIR);
    if (s || (s = ts_path_join(path, sizeof path, parent, name)) || (s = ts_make_dirs(parent))) return s;
    if ((s = ts_program_save_state_parts(p, path, trainer_json, rank_json))) return s;
    if (replicas_of(p) > 1 && ts_program_graph(p)->replica != 0) return TS_OK; /* rank 0 rotates */
    return ts_checkpoint_rotate(parent, TS_CKPT_PREFIX, keep);
}

ts_status ts_train_checkpoint_find(const char *resume, char *path, size_t cap) {
    char probe[4300];
    ts_status s = ts_path_join(probe, sizeof probe, resume, TRAINER_FILE);
    if (s) return s;
    if (access(probe, F_OK) == 0) {
        if (ts_checkpoint_check(resume) != TS_OK) return ts_err(ts_last_status(), "%s: %s", resume, ts_last_error());
        return ts_path_join(path, cap, NULL, resume);
    }
    struct stat st;
    int found = stat(resume, &st) == 0;
    if (!found || !S_ISDIR(st.st_mode))
        return ts_err(TS_ERR_NOT_FOUND, "%s: %s", resume, found ? "not a directory" : strerror(errno));
    if ((s = ts_path_join(probe, sizeof probe, resume, TS_CKPT_DIR))) return s;
    const char *parent = is_dir(probe) ? probe : resume;
    if (ts_checkpoint_latest(parent, TS_CKPT_PREFIX, path, cap) != TS_OK)
        return ts_err(TS_ERR_NOT_FOUND, "%s: no valid checkpoint (" TS_CKPT_PREFIX "NNNNNN) in %s", resume, parent);
    return TS_OK;
}
