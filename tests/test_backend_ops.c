/*
 * test_backend_ops.c — one conformance suite for every op on every device (as ggml's
 * test-backend-ops): each op of src/graph/ops.def is built in one or more small graphs (the cases
 * below: typical, odd and size-1 shapes — none empty: tessera refuses a 0 dim where a tensor
 * enters a graph; f32 and, where the op takes them, bf16 and f16),
 * run forward — and, for a differentiable op, its gradient: loss = sum(op(x) * r) for a fixed
 * random r, ts_backward, every input's gradient — on the CPU (the reference kernels) and on every
 * device under test, with the same random inputs, and the results compared with a tolerance per
 * dtype (max |error| <= rtol (1 + max |reference|): f32 1e-4, f16 2e-3, bf16 1e-2; integers
 * exact). Training-step cases (optimizers, clipping, schedules, accumulation, loss scaling) compare
 * every parameter after two steps; forward cases with weights (parameters of an inference
 * program) run, take new weights and run again, so a device's prepacked weights or kept casts
 * must follow them.
 *
 * Devices under test: with `--plugin PATH` (ts_backend_load; may be repeated), device 0 of that
 * plugin's backend only; else device 0 of every backend other than "cpu" registered after loading
 * every libtessera-*.so of $TESSERA_PLUGIN_PATH's directories; with none, "cpu:1" (a second
 * device context of the CPU backend) against "cpu". `--list` adds to the summary the ops each
 * device runs natively and those it refuses, by name; `--help` prints the usage.
 * `--all-devices` tests every device of each backend (at most BO_MAX_DEV in all); `--device NAME`
 * that device alone (scripts/gpu-check.sh: each GPU in turn).
 * Each case is compiled for the device with strict_device = 1: a compile refused with
 * TS_ERR_UNSUPPORTED counts the case as unsupported on that device (printed, not a failure); a
 * device that compiles a case and gets it wrong fails, naming device, op, case, shape and error.
 * Each op is one case of the test framework (`test_backend_ops matmul` runs the matmul cases);
 * "coverage" checks first that every op of ops.def has a case (a new op without one fails) or is
 * in bo_excluded with its reason; "selftest" that a device refusing an op is counted and one
 * getting it wrong is caught. The summary per device gives ops tested, run natively, unsupported
 * (listed), wrong (must be 0) and the cases run.
 */
#include <sys/mman.h>
#include <dirent.h>

#include "test_util.h"
#include "tessera_backend.h"

#include "comm/comm.h"
#include "graph/opdef.h"
#include "ops/op.h" /* ts_sum_to: cast_sum_to's case */

/* ------------------------------------------------------------------ cases */

#define BO_MAXIN 8
#define BO_MAXOUT 4
#define BO_MAX_DEV 8

typedef struct bo_shape {
    int nd;
    int64_t d[TS_MAX_DIMS];
} bo_shape;
/* SH(7, 13): a shape literal; SH0: rank 0 (a scalar). */
#define SH(...) {(int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), {__VA_ARGS__}}
#define SH0 {0, {0}}

enum { BO_F32 = 1, BO_BF16 = 2, BO_F16 = 4, BO_FLOATS = 7 };
/* How an input's values are drawn: uniform in [lo, hi); integers in [lo, hi); uniform with NaN,
 * +inf and -inf sprinkled in. */
enum { BO_UNIF = 0, BO_INT, BO_SPECIAL };
/* What a case compares: outputs of a forward program; outputs of a training-mode program (no
 * backward: dropout); the parameters after two steps of a graph whose builder appended its own
 * backward pass and optimizer. */
enum { BO_FWD = 0, BO_TRAIN_FWD, BO_STEP };

typedef struct bo_ctx bo_ctx;
typedef struct bo_case bo_case;
typedef void (*bo_build_fn)(bo_ctx *c, const bo_case *k);

struct bo_case {
    const char *op;     /* the op of ops.def it is for */
    bo_build_fn build;
    bo_shape a, b;      /* shapes; what they mean is the builder's */
    int64_t i[7];       /* integer parameters (op, axis, flags ...), the builder's */
    float f[2];
    unsigned dtypes;    /* BO_F32 | BO_BF16 | BO_F16: the case's float dtype (0: f32 only) */
    int grad;           /* also compare the gradients of its float inputs */
    int mode;           /* BO_FWD, BO_TRAIN_FWD, BO_STEP */
    int fused;          /* the reference must have fused at least one node (fused_elementwise) */
};

typedef struct bo_input {
    char name[16];
    ts_dtype dt;
    bo_shape s;
    double lo, hi;
    int gen;
    int param;          /* a parameter (gradient mode): set with ts_program_set_param */
} bo_input;

/* A case being built: the graph, its inputs (with how to draw them) and outputs. */
struct bo_ctx {
    ts_graph *g;
    ts_dtype dt;        /* the case's float dtype */
    int grad;           /* gradient mode: differentiable inputs are parameters */
    int nin;
    bo_input in[BO_MAXIN];
    int nout;
    ts_value out[BO_MAXOUT];
};

/* A float input of dtype dt and shape s, drawn from [lo, hi) (gen); a parameter in gradient mode
 * when diff, and always when diff is 2 (a weight: in an inference program the device may keep a
 * prepacked copy or a kept cast of it); a parameter is f32, cast to dt, as autocast does. */
static ts_value bo_input_add(bo_ctx *c, ts_dtype dt, bo_shape s, double lo, double hi, int gen, int diff) {
    if (c->nin >= BO_MAXIN) return TS_NONE;
    bo_input *in = &c->in[c->nin];
    snprintf(in->name, sizeof in->name, "x%d", c->nin);
    c->nin++;
    in->dt = dt;
    in->s = s;
    in->lo = lo;
    in->hi = hi;
    in->gen = gen;
    in->param = (c->grad && diff) || diff == 2;
    if (!in->param) return ts_input(c->g, in->name, dt, s.nd, s.d);
    in->dt = TS_F32;
    ts_value p = ts_param(c->g, in->name, TS_F32, s.nd, s.d, ts_init_zeros());
    return dt == TS_F32 ? p : ts_cast(c->g, p, dt);
}
/* The usual float input: the case's dtype, differentiable. */
static ts_value bo_x(bo_ctx *c, bo_shape s, double lo, double hi) {
    return bo_input_add(c, c->dt, s, lo, hi, BO_UNIF, 1);
}
/* An f32 input, differentiable or not. */
static ts_value bo_f32(bo_ctx *c, bo_shape s, double lo, double hi, int diff) {
    return bo_input_add(c, TS_F32, s, lo, hi, BO_UNIF, diff);
}
/* A weight: a parameter of the case's dtype, in forward programs too. */
static ts_value bo_w(bo_ctx *c, bo_shape s, double lo, double hi) {
    return bo_input_add(c, c->dt, s, lo, hi, BO_UNIF, 2);
}
/* An integer (or u8) input drawn from [lo, hi). */
static ts_value bo_int(bo_ctx *c, ts_dtype dt, bo_shape s, int64_t lo, int64_t hi) {
    return bo_input_add(c, dt, s, (double)lo, (double)hi, BO_INT, 0);
}
static void bo_out(bo_ctx *c, ts_value v) {
    if (c->nout < BO_MAXOUT) c->out[c->nout++] = v;
}
static int bo_is_float(ts_dtype t) { return t == TS_F32 || t == TS_BF16 || t == TS_F16; }
/* The case's float dtype when the case takes it, else dt. */
static ts_dtype bo_dt(const bo_ctx *c, const bo_case *k) { return k->dtypes ? c->dt : TS_F32; }

#include "backend_ops_cases.h"

/* Ops no case can build, with the reason (counted and printed). */
static const struct {
    const char *op, *why;
} bo_excluded[] = {
    {NULL, NULL},
};

/* ------------------------------------------------------------------ devices and results */

typedef struct bo_stat {
    int runs, grad_runs;    /* case runs compared (forward, gradient) */
    int refused, wrong;     /* case runs refused with TS_ERR_UNSUPPORTED, wrong */
    int reached;            /* the op ran on the device in some case */
    char refused_what[200];  /* the first refused case */
} bo_stat;

/* Shared with the forked cases (tu_run): what every case found on every device. */
typedef struct bo_shared {
    bo_stat st[BO_MAX_DEV][TS_OP_COUNT];
    int variants_skipped;   /* bf16 / f16 variants the op does not take */
} bo_shared;

static char bo_dev[BO_MAX_DEV][64];
static int bo_ndev;
static bo_shared *bo_sh;
static const char *bo_ref = "cpu";
static int bo_expect_wrong; /* the self-test: a wrong result is what it wants */

static int bo_op_id(const char *name) {
    for (int i = 0; i < TS_OP_COUNT; i++)
        if (!strcmp(ts_op_get(i)->name, name)) return i;
    return -1;
}

/* ------------------------------------------------------------------ building a case */

static const char *bo_dtname(ts_dtype t) { return ts_dtype_name(t); }

static void bo_shape_str(char *buf, size_t cap, bo_shape s) {
    size_t o = (size_t)snprintf(buf, cap, "[");
    for (int i = 0; i < s.nd && o < cap; i++) o += (size_t)snprintf(buf + o, cap - o, "%s%lld", i ? "," : "", (long long)s.d[i]);
    if (o < cap) snprintf(buf + o, cap - o, "]");
}

/* "matmul #3 bf16 [7,13] [13,5] i={1,0}": names one variant of a case in messages. */
static void bo_case_str(char *buf, size_t cap, const bo_case *k, int idx, ts_dtype dt, int grad) {
    char a[64], b[64];
    bo_shape_str(a, sizeof a, k->a);
    bo_shape_str(b, sizeof b, k->b);
    snprintf(buf, cap, "%s #%d %s%s a=%s b=%s i={%lld,%lld,%lld,%lld}", k->op, idx, bo_dtname(dt),
             grad ? " gradient" : "", a, k->b.nd ? b : "-", (long long)k->i[0], (long long)k->i[1],
             (long long)k->i[2], (long long)k->i[3]);
}

/* Build variant (dt, grad) of case k into c. TS_OK, or the graph's first error. */
static ts_status bo_build(bo_ctx *c, const bo_case *k, ts_dtype dt, int grad, uint64_t seed) {
    memset(c, 0, sizeof *c);
    c->g = ts_graph_new();
    if (!c->g) return TS_ERR_NOMEM;
    ts_graph_set_seed(c->g, seed);
    c->dt = dt;
    c->grad = grad || k->mode == BO_STEP; /* a training step's builder trains its parameters */
    k->build(c, k);
    ts_status s = ts_graph_status(c->g);
    if (s) return s;
    char name[16];
    for (int j = 0; j < c->nout; j++) {
        snprintf(name, sizeof name, "y%d", j);
        if (ts_name(c->g, c->out[j], name) == TS_NONE) return ts_graph_status(c->g);
    }
    if (!grad) return TS_OK;
    /* loss = sum over the float outputs of sum(out * r), r fixed random */
    tu_rng r = tu_rng_seed(seed ^ 0x5eed);
    ts_value loss = TS_NONE;
    for (int j = 0; j < c->nout; j++) {
        ts_dtype odt = ts_value_dtype(c->g, c->out[j]);
        if (!bo_is_float(odt)) continue;
        int64_t sh[TS_MAX_DIMS];
        int nd = ts_value_shape(c->g, c->out[j], sh);
        ts_tensor *rt = tu_rand_tensor(&r, nd, sh, -1.0, 1.0);
        ts_value o = odt == TS_F32 ? c->out[j] : ts_cast(c->g, c->out[j], TS_F32);
        ts_value t = ts_reduce_sum(c->g, ts_mul(c->g, o, ts_constant(c->g, rt)), 0, NULL, 0);
        ts_tensor_free(rt);
        loss = loss == TS_NONE ? t : ts_add(c->g, loss, t);
    }
    if (loss == TS_NONE) return ts_set_error(TS_ERR_ARG, "case has no float output to differentiate");
    s = ts_graph_status(c->g);
    return s ? s : ts_backward(c->g, loss);
}

/* The host tensors fed to c's inputs, drawn with seed (the same for every device). */
static ts_tensor **bo_make_data(const bo_ctx *c, uint64_t seed) {
    ts_tensor **t = calloc((size_t)c->nin + 1, sizeof *t);
    tu_rng r = tu_rng_seed(seed);
    for (int j = 0; t && j < c->nin; j++) {
        const bo_input *in = &c->in[j];
        t[j] = ts_tensor_new(in->dt, in->s.nd, in->s.d);
        if (!t[j]) continue;
        int64_t n = ts_tensor_numel(t[j]);
        void *d = ts_tensor_data(t[j]);
        for (int64_t e = 0; e < n; e++) {
            double v = in->gen == BO_INT ? (double)(in->lo + (double)tu_randint(&r, (int64_t)(in->hi - in->lo)))
                                         : tu_uniform(&r, in->lo, in->hi);
            if (in->gen == BO_SPECIAL && tu_unif(&r) < 0.25) {
                static const double sp[3] = {NAN, INFINITY, -INFINITY};
                v = sp[tu_randint(&r, 3)];
            }
            float f = (float)v;
            switch (in->dt) {
            case TS_F32: ((float *)d)[e] = f; break;
            case TS_BF16: ts_f32_to_bf16(&f, (uint16_t *)d + e, 1); break;
            case TS_F16: ts_f32_to_f16(&f, (uint16_t *)d + e, 1); break;
            case TS_I32: ((int32_t *)d)[e] = (int32_t)v; break;
            case TS_I64: ((int64_t *)d)[e] = (int64_t)v; break;
            case TS_U8: ((uint8_t *)d)[e] = (uint8_t)v; break;
            default: break;
            }
        }
    }
    return t;
}

static void bo_free_list(ts_tensor **t, int n) {
    for (int j = 0; t && j < n; j++) ts_tensor_free(t[j]);
    free(t);
}

/* ------------------------------------------------------------------ running a case */

/* What one device made of a case: the tensors compared, by name. */
typedef struct bo_result {
    int n;
    char name[32][48];
    ts_tensor *t[32];
} bo_result;

static void bo_result_free(bo_result *r) {
    for (int j = 0; j < r->n; j++) ts_tensor_free(r->t[j]);
    r->n = 0;
}

/* The names a variant compares: outputs, or the gradients of its parameters. */
static int bo_fetch_names(const bo_ctx *c, int grad, char names[][48], int cap) {
    int n = 0;
    if (!grad) {
        for (int j = 0; j < c->nout && n < cap; j++) snprintf(names[n++], 48, "y%d", j);
        return n;
    }
    for (int j = 0; j < c->nin && n < cap; j++) {
        if (!c->in[j].param) continue;
        snprintf(names[n], 48, "%s@GRAD", c->in[j].name);
        if (ts_lookup(c->g, names[n]) != TS_NONE) n++;
    }
    return n;
}

/* Set c's parameters from data. */
static ts_status bo_set_params(const bo_ctx *c, ts_program *p, ts_tensor **data) {
    ts_status s = TS_OK;
    for (int j = 0; j < c->nin && !s; j++) {
        if (!c->in[j].param) continue;
        ts_tensor *now = NULL; /* a parameter stored in 16 bits (ts_graph_store_params) takes the f32 data rounded */
        s = ts_program_get_param(p, c->in[j].name, &now);
        ts_dtype dt = now ? ts_tensor_dtype(now) : TS_F32;
        if (!s && dt != TS_F32 && ts_tensor_dtype(data[j]) == TS_F32) {
            size_t n = (size_t)ts_tensor_numel(now);
            if (dt == TS_BF16) ts_f32_to_bf16(ts_tensor_data(data[j]), ts_tensor_data(now), n);
            else ts_f32_to_f16(ts_tensor_data(data[j]), ts_tensor_data(now), n);
            s = ts_program_set_param(p, c->in[j].name, now);
        } else if (!s) {
            s = ts_program_set_param(p, c->in[j].name, data[j]);
        }
        ts_tensor_free(now);
    }
    return s;
}

/* Compile c for device (strict: refuse what it lacks), feed data, run, fetch into r. A training
 * step runs twice; a forward program with weights runs, takes new weights (data2) and runs again
 * (what a device derived from the first ones must be remade). The status of the first failure;
 * *stage says which ("compile", ...). */
static ts_status bo_exec(const bo_ctx *c, const bo_case *k, int grad, ts_tensor **data, ts_tensor **data2,
                         const char *device, int strict, bo_result *r, const char **stage, int *fused) {
    char names[32][48];
    const char *fetch[32];
    int nf = k->mode == BO_STEP ? 0 : bo_fetch_names(c, grad, names, 32);
    for (int j = 0; j < nf; j++) fetch[j] = names[j];
    ts_compile_opts o = {.struct_size = sizeof o, .device = device, .nfetch = nf, .fetches = nf ? fetch : NULL,
                         .inference = k->mode == BO_FWD && !grad};
    o.strict_device = strict;
    *stage = "compile";
    ts_program *p = ts_compile(c->g, &o);
    if (!p) return ts_last_status();
    ts_status s = TS_OK;
    *stage = "feed";
    s = bo_set_params(c, p, data);
    for (int j = 0; j < c->nin && !s; j++)
        if (!c->in[j].param) s = ts_program_feed(p, c->in[j].name, data[j]);
    if (fused) {
        ts_memory m = {.struct_size = sizeof m};
        *fused = ts_program_memory(p, &m) == TS_OK ? m.fused : -1;
    }
    if (!s) *stage = "run";
    int again = k->mode == BO_STEP;
    for (int j = 0; j < c->nin; j++) again |= !grad && k->mode == BO_FWD && c->in[j].param;
    s = s ? s : ts_program_run(p);
    if (!s && again && k->mode != BO_STEP) s = bo_set_params(c, p, data2);
    if (!s && again) s = ts_program_run(p);
    if (!s) *stage = "fetch";
    if (k->mode == BO_STEP) {
        for (int j = 0; j < ts_program_num_params(p) && !s && r->n < 32; j++) {
            snprintf(r->name[r->n], 48, "%s", ts_program_param_name(p, j));
            s = ts_program_get_param(p, r->name[r->n], &r->t[r->n]);
            if (!s) r->n++;
        }
    }
    for (int j = 0; j < nf && !s; j++) {
        snprintf(r->name[r->n], 48, "%s", names[j]);
        s = ts_program_fetch(p, names[j], &r->t[r->n]);
        if (!s) r->n++;
    }
    ts_program_free(p);
    return s;
}

static double bo_get(const ts_tensor *t, int64_t i) {
    const void *d = ts_tensor_data((ts_tensor *)t);
    float f;
    switch (ts_tensor_dtype(t)) {
    case TS_F32: return ((const float *)d)[i];
    case TS_BF16: ts_bf16_to_f32((const uint16_t *)d + i, &f, 1); return f;
    case TS_F16: ts_f16_to_f32((const uint16_t *)d + i, &f, 1); return f;
    case TS_I32: return ((const int32_t *)d)[i];
    case TS_I64: return (double)((const int64_t *)d)[i];
    case TS_U8: return ((const uint8_t *)d)[i];
    default: return NAN;
    }
}

/* The tolerance on max |a - b| relative to 1 + max |ref|: exact for integers. */
static double bo_rtol(ts_dtype t) {
    switch (t) {
    case TS_F32: return 1e-4;
    case TS_BF16: return 1e-2;
    case TS_F16: return 2e-3;
    default: return 0;
    }
}

/* Compare a device's tensor with the reference's: 0 when they agree, else 1 with the message. */
static int bo_compare(const ts_tensor *ref, const ts_tensor *got, char *msg, size_t cap) {
    if (!tu_same_shape(ref, got)) {
        snprintf(msg, cap, "dtype or shape differ: %s rank %d vs %s rank %d", bo_dtname(ts_tensor_dtype(ref)),
                 ts_tensor_ndim(ref), bo_dtname(ts_tensor_dtype(got)), ts_tensor_ndim(got));
        return 1;
    }
    double maxref = 0, maxerr = 0;
    int64_t at = -1, n = ts_tensor_numel(ref);
    for (int64_t i = 0; i < n; i++) {
        double a = bo_get(ref, i), b = bo_get(got, i);
        if (isfinite(a) && fabs(a) > maxref) maxref = fabs(a);
        double e = (isnan(a) && isnan(b)) || a == b ? 0 : isfinite(a) && isfinite(b) ? fabs(a - b) : INFINITY;
        if (e > maxerr) maxerr = e, at = i;
    }
    double tol = bo_rtol(ts_tensor_dtype(ref)) * (1 + maxref);
    if (maxerr <= tol) return 0;
    snprintf(msg, cap, "max |error| %.3g > %.3g (at element %lld: reference %.7g, device %.7g)", maxerr, tol,
             (long long)at, bo_get(ref, at), bo_get(got, at));
    return 1;
}

/* Mark every op in c's graph as reached on device d. */
static void bo_mark_reached(const bo_ctx *c, int d) {
    for (int i = 0; i < c->g->nnodes; i++) bo_sh->st[d][c->g->nodes[i].op].reached = 1;
}

/* One variant of a case on the reference and on every device under test. */
static void bo_variant(const bo_case *k, int idx, ts_dtype dt, int grad) {
    char what[200];
    bo_case_str(what, sizeof what, k, idx, dt, grad);
    int op = bo_op_id(k->op);
    uint64_t seed = 1000u * (uint64_t)idx + 7u * (uint64_t)dt + (uint64_t)grad;
    bo_ctx c;
    ts_status s = bo_build(&c, k, dt, grad, seed);
    if (s) {
        if (dt != TS_F32 && s == TS_ERR_DTYPE) {
            bo_sh->variants_skipped++;
            if (getenv("TS_TEST_VERBOSE")) printf("  %s: skipped: %s\n", what, ts_last_error());
        }
        else CHECK(0, "%s: building the graph failed: %s: %s", what, ts_status_name(s), ts_last_error());
        ts_graph_free(c.g);
        return;
    }
    ts_tensor **data = bo_make_data(&c, seed), **data2 = bo_make_data(&c, seed + 1);
    bo_result ref = {0};
    const char *stage;
    int fused = 0;
    s = bo_exec(&c, k, grad, data, data2, bo_ref, 0, &ref, &stage, &fused);
    CHECK(s == TS_OK, "%s on the reference %s: %s failed: %s: %s", what, bo_ref, stage, ts_status_name(s),
          ts_last_error());
    if (k->fused && !grad) CHECK(fused > 0, "%s: the reference fused %d nodes, expected at least one", what, fused);
    for (int d = 0; d < bo_ndev && s == TS_OK; d++) {
        bo_stat *st = &bo_sh->st[d][op];
        bo_result got = {0};
        ts_status sd = bo_exec(&c, k, grad, data, data2, bo_dev[d], 1, &got, &stage, NULL);
        if (sd == TS_ERR_UNSUPPORTED && !strcmp(stage, "compile")) {
            st->refused++;
            if (!st->refused_what[0]) snprintf(st->refused_what, sizeof st->refused_what, "%s", what);
            printf("  %s: %s: unsupported: %.300s\n", bo_dev[d], what, ts_last_error());
            bo_result_free(&got);
            continue;
        }
        CHECK(sd == TS_OK, "%s on %s: %s failed: %s: %s", what, bo_dev[d], stage, ts_status_name(sd), ts_last_error());
        if (grad) st->grad_runs++;
        else st->runs++;
        int bad = sd != TS_OK;
        for (int j = 0; j < ref.n && !bad; j++) {
            char msg[256];
            if (j >= got.n || !bo_compare(ref.t[j], got.t[j], msg, sizeof msg)) continue;
            char sh[64] = "[";
            for (int e = 0; e < ts_tensor_ndim(ref.t[j]); e++)
                snprintf(sh + strlen(sh), sizeof sh - strlen(sh), "%s%lld", e ? "," : "",
                         (long long)ts_tensor_shape(ref.t[j])[e]);
            if (bo_expect_wrong) printf("  (expected) WRONG on %s: %s: %s %s: %s\n", bo_dev[d], what, ref.name[j],
                                        strcat(sh, "]"), msg);
            else CHECK(0, "WRONG on %s: %s: %s %s: %s", bo_dev[d], what, ref.name[j], strcat(sh, "]"), msg);
            bad = 1;
        }
        if (bad) st->wrong++;
        else bo_mark_reached(&c, d);
        if (!bad && k->fused) st->reached = 1; /* made by fusion: not a node of the graph built */
        bo_result_free(&got);
    }
    bo_result_free(&ref);
    bo_free_list(data, c.nin);
    bo_free_list(data2, c.nin);
    ts_graph_free(c.g);
}

static const char *bo_cur_op;

/* The cases of op bo_cur_op, every variant. */
static void bo_run_op(void) {
    for (int idx = 0; idx < (int)(sizeof bo_cases / sizeof bo_cases[0]); idx++) {
        const bo_case *k = &bo_cases[idx];
        if (strcmp(k->op, bo_cur_op)) continue;
        static const ts_dtype dts[3] = {TS_F32, TS_BF16, TS_F16};
        for (int t = 0; t < 3; t++) {
            if (!((k->dtypes ? k->dtypes : BO_F32) & (1u << t))) continue;
            bo_variant(k, idx, dts[t], 0);
            if (k->grad) bo_variant(k, idx, dts[t], 1);
        }
    }
}

/* ------------------------------------------------------------------ coverage */

static int bo_is_excluded(int op) {
    for (size_t e = 0; e < sizeof bo_excluded / sizeof bo_excluded[0]; e++)
        if (bo_excluded[e].op && !strcmp(bo_excluded[e].op, ts_op_get(op)->name)) return 1;
    return 0;
}

/* Every op of ops.def has a case (declared for it, or its node in some case's graph: the
 * gradient ops), or is excluded with a reason; every case names an op of ops.def. */
static void test_coverage(void) {
    int covered[TS_OP_COUNT] = {0};
    for (size_t idx = 0; idx < sizeof bo_cases / sizeof bo_cases[0]; idx++) {
        const bo_case *k = &bo_cases[idx];
        int op = bo_op_id(k->op);
        CHECK(op >= 0, "case #%zu names op '%s', which is not in ops.def", idx, k->op);
        if (op < 0) continue;
        covered[op] = 1;
        unsigned m = k->dtypes ? k->dtypes : BO_F32;
        ts_dtype dt = m & BO_F32 ? TS_F32 : m & BO_BF16 ? TS_BF16 : TS_F16;
        for (int grad = 0; grad <= k->grad; grad++) {
            bo_ctx c;
            ts_status s = bo_build(&c, k, dt, grad, 1);
            CHECK(s == TS_OK, "case #%zu (%s%s) does not build: %s", idx, k->op, grad ? ", gradient" : "",
                  ts_last_error());
            int has = 0;
            for (int i = 0; s == TS_OK && i < c.g->nnodes; i++) {
                covered[c.g->nodes[i].op] = 1;
                has |= c.g->nodes[i].op == op;
            }
            CHECK(s != TS_OK || has || k->fused, "case #%zu for %s has no %s node", idx, k->op, k->op);
            ts_graph_free(c.g);
        }
    }
    int nexcl = 0;
    for (int op = 0; op < TS_OP_COUNT; op++) {
        if (bo_is_excluded(op)) {
            nexcl++;
            CHECK(!covered[op], "op %s is excluded but has a case: drop it from bo_excluded", ts_op_get(op)->name);
            continue;
        }
        CHECK(covered[op], "op %s of ops.def has no case in backend_ops_cases.h (add one, or exclude it with "
              "the reason)", ts_op_get(op)->name);
    }
    printf("coverage: %d ops in ops.def, %d with cases, %d excluded\n", TS_OP_COUNT, TS_OP_COUNT - nexcl, nexcl);
    for (size_t e = 0; e < sizeof bo_excluded / sizeof bo_excluded[0]; e++)
        if (bo_excluded[e].op) printf("  excluded: %s: %s\n", bo_excluded[e].op, bo_excluded[e].why);
}

/* ------------------------------------------------------------------ self-test */

/* "bo_wrong": the CPU backend under another name, which refuses math erf and gets exp wrong (0.5
 * added to the first element of its output): the suite must count the one as unsupported and
 * find the other wrong. */
static ts_backend_api bo_wrong_api;
static const ts_backend_api *bo_cpu_api;

static int bo_wrong_supports(void *dev, const ts_abi_node *n, const ts_abi_value *values) {
    if (!strcmp(n->op, "math") && n->iattr[0] == TS_MATH_ERF) return 0;
    return bo_cpu_api->supports ? bo_cpu_api->supports(dev, n, values) : 1;
}

static ts_status bo_wrong_execute(void *dev, void *exe, const ts_abi_plan *plan, ts_buffer ws, uint64_t step) {
    ts_status s = bo_cpu_api->execute(dev, exe, plan, ws, step);
    for (int i = 0; !s && i < plan->nnodes; i++) {
        const ts_abi_node *n = &plan->nodes[i];
        const ts_abi_value *o = &plan->values[n->out[0]];
        if (!strcmp(n->op, "exp") && o->buf.mem && o->dtype == TS_F32)
            ((float *)((char *)o->buf.mem + o->buf.offset))[0] += 0.5f;
    }
    return s;
}

static int bo_case_index(const char *op, int64_t i0) {
    for (int idx = 0; idx < (int)(sizeof bo_cases / sizeof bo_cases[0]); idx++)
        if (!strcmp(bo_cases[idx].op, op) && bo_cases[idx].i[0] == i0) return idx;
    return -1;
}

/* The suite finds a wrong op wrong and counts a refused one, on device slot 0 (its results
 * there put back after). */
static void test_selftest(void) {
    bo_cpu_api = ts_backend_find("cpu");
    CHECK(bo_cpu_api != NULL, "no cpu backend: %s", ts_last_error());
    if (!bo_cpu_api) return;
    bo_wrong_api = *bo_cpu_api;
    bo_wrong_api.name = "bo_wrong";
    bo_wrong_api.supports = bo_wrong_supports;
    bo_wrong_api.execute = bo_wrong_execute;
    CHECK_OK(ts_backend_register(&bo_wrong_api));
    printf("self-test: bo_wrong, the CPU backend that refuses math erf and gets exp wrong:\n");
    bo_stat saved[TS_OP_COUNT];
    char saved_name[64];
    int saved_n = bo_ndev;
    memcpy(saved, bo_sh->st[0], sizeof saved);
    memcpy(saved_name, bo_dev[0], sizeof saved_name);
    memset(bo_sh->st[0], 0, sizeof saved);
    snprintf(bo_dev[0], sizeof bo_dev[0], "bo_wrong");
    bo_ndev = 1;
    bo_expect_wrong = 1;
    int iexp = bo_case_index("exp", TS_OP_EXP), ierf = bo_case_index("math", TS_MATH_ERF);
    CHECK(iexp >= 0 && ierf >= 0, "no exp or math erf case");
    if (iexp >= 0 && ierf >= 0) {
        bo_variant(&bo_cases[iexp], iexp, TS_F32, 0);
        bo_variant(&bo_cases[ierf], ierf, TS_F32, 0);
        bo_variant(&bo_cases[ierf], ierf, TS_F32, 1);
    }
    const bo_stat *se = &bo_sh->st[0][TS_OP_EXP], *sm = &bo_sh->st[0][TS_OP_MATH];
    CHECK(se->wrong == 1, "an exp that adds 0.5 to an element was found wrong %d times, expected once", se->wrong);
    CHECK(sm->refused == 2 && sm->runs == 0, "a refused math erf was counted refused %d times (expected 2) and run %d",
          sm->refused, sm->runs);
    bo_expect_wrong = 0;
    bo_ndev = saved_n;
    memcpy(bo_sh->st[0], saved, sizeof saved);
    memcpy(bo_dev[0], saved_name, sizeof saved_name);
}

/* ------------------------------------------------------------------ devices */

static void bo_add_device(const char *name) {
    for (int d = 0; d < bo_ndev; d++)
        if (!strcmp(bo_dev[d], name)) return;
    if (bo_ndev < BO_MAX_DEV) snprintf(bo_dev[bo_ndev++], sizeof bo_dev[0], "%s", name);
}

/* The backends of the --plugin files (tested alone), and --list. */
static const char *bo_only_backend[8];
static int bo_nonly, bo_list;

static void bo_load(const char *path) {
    int before = ts_backend_count();
    ts_status s = ts_backend_load(path);
    if (s) tu_skip("the plugin %s could not be loaded: %s: %s", path, ts_status_name(s), ts_last_error());
    printf("loaded plugin %s\n", path);
    for (int b = before; b < ts_backend_count() && bo_nonly < 8; b++) bo_only_backend[bo_nonly++] = ts_backend_at(b)->name;
}

/* Every libtessera-*.so of the directories of $TESSERA_PLUGIN_PATH. */
static void bo_load_plugin_path(void) {
    const char *env = getenv("TESSERA_PLUGIN_PATH");
    if (!env || !*env) return;
    char *dirs = strdup(env), *save = NULL;
    for (char *dir = strtok_r(dirs, ":", &save); dir; dir = strtok_r(NULL, ":", &save)) {
        DIR *dp = opendir(dir);
        if (!dp) continue;
        for (struct dirent *e; (e = readdir(dp));) {
            size_t n = strlen(e->d_name);
            if (strncmp(e->d_name, "libtessera-", 11) || n < 15 || strcmp(e->d_name + n - 3, ".so")) continue;
            char path[4096];
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            bo_load(path);
        }
        closedir(dp);
    }
    free(dirs);
}

static void bo_pick_devices(int all, const char *only) {
    if (only) { /* --device NAME: that device alone */
        bo_add_device(only);
        return;
    }
    for (int b = 0; b < ts_backend_count(); b++) {
        const ts_backend_api *api = ts_backend_at(b);
        if (!api || !strcmp(api->name, "cpu")) continue;
        int chosen = !bo_nonly;
        for (int k = 0; k < bo_nonly; k++) chosen |= !strcmp(bo_only_backend[k], api->name);
        if (!chosen) continue;
        int n = all && api->device_count ? api->device_count() : 1;
        for (int i = 0; i < n; i++) {
            char name[64];
            if (i == 0) snprintf(name, sizeof name, "%s", api->name);
            else snprintf(name, sizeof name, "%s:%d", api->name, i);
            bo_add_device(name);
        }
    }
    if (!bo_ndev) bo_add_device("cpu:1");
}

/* ------------------------------------------------------------------ summary */

static void bo_summary(void) {
    int nexcl = 0;
    for (int op = 0; op < TS_OP_COUNT; op++) nexcl += bo_is_excluded(op);
    for (int d = 0; d < bo_ndev; d++) {
        int runs = 0, gruns = 0, refused_runs = 0, native = 0, unsup = 0, wrong = 0, notrun = 0;
        for (int op = 0; op < TS_OP_COUNT; op++) {
            const bo_stat *st = &bo_sh->st[d][op];
            runs += st->runs, gruns += st->grad_runs, refused_runs += st->refused;
            native += st->reached;
            unsup += st->refused > 0;
            wrong += st->wrong > 0;
            notrun += !st->reached && !bo_is_excluded(op);
        }
        printf("== %s against %s: ops tested %d of %d (%d excluded), native %d, unsupported %d, wrong %d; "
               "case runs %d (%d forward, %d gradient), %d refused\n", bo_dev[d], bo_ref,
               tu_names ? tu_nnames : TS_OP_COUNT - nexcl,
               TS_OP_COUNT, nexcl, native, unsup, wrong, runs + gruns, runs, gruns, refused_runs);
        for (int op = 0; op < TS_OP_COUNT; op++) {
            const bo_stat *st = &bo_sh->st[d][op];
            if (st->refused) printf("   unsupported: %s (%d case runs refused; the first: %s)\n", ts_op_get(op)->name,
                                    st->refused, st->refused_what);
            if (st->wrong) printf("   WRONG: %s (%d case runs)\n", ts_op_get(op)->name, st->wrong);
        }
        if (bo_list) { /* --list: by name, what runs natively and what is refused */
            for (int pass = 0; pass < 2; pass++) {
                int n = 0;
                printf("   %s:", pass ? "refused" : "native");
                for (int op = 0; op < TS_OP_COUNT; op++) {
                    const bo_stat *st = &bo_sh->st[d][op];
                    if (pass ? st->refused > 0 : st->reached > 0) printf(" %s", ts_op_get(op)->name), n++;
                }
                printf(" (%d)\n", n);
            }
        }
        /* ops that ran in no case on the device (all cases, when every op was run) */
        for (int op = 0; op < TS_OP_COUNT && !tu_names && notrun; op++)
            if (!bo_sh->st[d][op].reached && !bo_is_excluded(op)) printf("   not run: %s\n", ts_op_get(op)->name);
    }
    if (bo_sh->variants_skipped)
        printf("(%d bf16 / f16 variants skipped: the op does not take that dtype)\n", bo_sh->variants_skipped);
}

int main(int argc, char **argv) {
    tu_args(argc, argv);
    int all = 0;
    const char *only = NULL;
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            printf("usage: test_backend_ops [--plugin PATH]... [--device NAME | --all-devices] [--list] [OP...]\n"
                   "  Runs every op's cases (or those of the OPs named) forward and backward on the devices under\n"
                   "  test and on the CPU, and compares them.\n"
                   "  --plugin PATH   load the backend plugin at PATH and test its device 0 alone (repeatable)\n"
                   "  --device NAME   test that device alone (e.g. opencl:1)\n"
                   "  --all-devices   test every device of each backend under test\n"
                   "  --list          also list, per device, the ops it runs natively and those it refuses\n"
                   "  Without --plugin: every libtessera-*.so of $TESSERA_PLUGIN_PATH's folders, else cpu:1.\n"
                   "  Exit 0 when no device computes an op wrongly (a refused op is counted, not a failure).\n");
            return 0;
        }
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--list")) bo_list = 1;
        else if (!strcmp(argv[i], "--plugin") && i + 1 < argc) bo_load(argv[++i]);
        else if (!strcmp(argv[i], "--device") && i + 1 < argc) only = argv[++i];
        else if (!strcmp(argv[i], "--all-devices")) all = 1;
    }
    /* tu_args took the values of --plugin and --device for case names: drop them from the names */
    for (int j = 1; j + 1 < argc; j++) {
        if (strcmp(argv[j], "--plugin") && strcmp(argv[j], "--device")) continue;
        for (int i = 0; i < tu_nnames; i++)
            if (tu_names[i] == argv[j + 1]) tu_names[i--] = tu_names[--tu_nnames];
    }
    if (tu_names && !tu_nnames) {
        free(tu_names);
        free(tu_name_seen);
        tu_names = NULL;
        tu_name_seen = NULL;
    }
    if (!bo_nonly) bo_load_plugin_path(); /* --plugin: that plugin alone */
    bo_pick_devices(all, only);
    bo_sh = mmap(NULL, sizeof *bo_sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (bo_sh == MAP_FAILED) return 1;
    memset(bo_sh, 0, sizeof *bo_sh);
    printf("devices under test:");
    for (int d = 0; d < bo_ndev; d++) printf(" %s", bo_dev[d]);
    printf(" (reference: %s)\n", bo_ref);
    RUN(test_coverage);
    RUN(test_selftest);
    for (int op = 0; op < TS_OP_COUNT; op++) {
        bo_cur_op = ts_op_get(op)->name;
        int has = 0;
        for (size_t idx = 0; idx < sizeof bo_cases / sizeof bo_cases[0]; idx++) has |= !strcmp(bo_cases[idx].op, bo_cur_op);
        if (has) tu_run(bo_cur_op, bo_run_op, 300);
    }
    bo_summary();
    munmap(bo_sh, sizeof *bo_sh);
    return tu_finish("test_backend_ops");
}
