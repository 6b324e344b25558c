/*
 * fd_check.h — the finite-difference gradient harness shared by test_grad_ops.c and
 * test_grad_block.c.
 *
 * A case declares parameters (name, shape, how to draw their values) and a builder that turns
 * them into one or more outputs. The harness
 *   1. adds a fixed random constant R_k per output and the loss L = sum_k reduce_sum(out_k * R_k),
 *      calls ts_backward and compiles a training program (inference = 0) fetching the outputs,
 *      the loss and every "<param>@GRAD";
 *   2. sets every parameter (declared ones and any the builder created) to random values with
 *      ts_program_set_param, pins the run step (ts_program_set_step) so dropout masks repeat,
 *      runs once and fetches the analytic gradients, and checks the program's loss against
 *      sum(out * R) computed on the host;
 *   3. optionally compares the outputs with a host reference computed in double;
 *   4. for each checked parameter element computes the central difference
 *      (L(p + e) - L(p - e)) / (2e), where L is recomputed on the host in double from the
 *      fetched f32 outputs (sum of out * R), so the only f32 rounding is in the forward pass.
 *      These runs use a second program of the same graph compiled for inference (forward only,
 *      so cheaper; its outputs are first checked against the training program's), or the
 *      training program itself when the case sets fd_train (dropout is the identity at
 *      inference);
 *   5. reports max |num - ana| / max(1, |ana|) over the checked elements and CHECKs it against
 *      the tolerance (default 1e-2).
 * Programs are compiled with num_threads = 1: the tensors are tiny, and on a busy machine every
 * OpenMP barrier of a 2-thread team costs milliseconds (test_runtime compares thread counts).
 */
#ifndef FD_CHECK_H
#define FD_CHECK_H

#include "test_util.h"

#define FD_MAXP 24
#define FD_MAXOUT 4

/* How a parameter's test values are drawn. */
enum {
    GEN_UNIF = 0,   /* uniform [-1, 1) */
    GEN_POS,        /* uniform [0.5, 2): sqrt, log, pow bases, divisors */
    GEN_SIGNED_POS, /* +-uniform [0.5, 2): divisors of either sign */
    GEN_AWAY0,      /* +-uniform [0.1, 1): relu, away from its kink */
    GEN_DISTINCT,   /* a shuffled grid with step 0.05: no ties within 2 * eps (reduce_max) */
    GEN_GAMMA,      /* uniform [0.5, 1.5): layer-norm scales */
    GEN_SMALL,      /* uniform [-0.1, 0.1): biases */
    GEN_WEIGHT,     /* uniform [-0.5, 0.5): projection weights */
};

typedef struct fd_host {
    int np;
    const char *name[FD_MAXP];
    int nd[FD_MAXP];
    int64_t shape[FD_MAXP][TS_MAX_DIMS];
    float *val[FD_MAXP];
} fd_host;

/* Host values of parameter `name` (NULL when absent). */
__attribute__((unused))
static const float *fd_param_val(const fd_host *h, const char *name) {
    for (int i = 0; i < h->np; i++)
        if (strcmp(h->name[i], name) == 0) return h->val[i];
    return NULL;
}

typedef struct fd_out {
    int nd;
    int64_t shape[TS_MAX_DIMS];
    int64_t n;
    double *ref; /* the reference writes its expected output here */
} fd_out;

/* Build outputs from the declared parameters p[]; return the number of outputs (<= FD_MAXOUT). */
typedef int (*fd_build_fn)(ts_graph *g, const ts_value *p, ts_value *outs, const void *ctx);
/* Expected outputs in double from the parameters' host values. */
typedef void (*fd_ref_fn)(const fd_host *h, fd_out *outs, int nout, const void *ctx);

typedef struct fd_spec {
    const char *name;
    int np;
    struct {
        const char *name;
        int gen;
        int nd;
        int64_t shape[TS_MAX_DIMS];
    } p[FD_MAXP];
    fd_build_fn build;
    fd_ref_fn ref;
    const void *ctx;
    int (*gen_for)(const char *name); /* draw rule of parameters the builder makes itself */
    double eps;                       /* default 1e-2 */
    double tol;                       /* default 1e-2 */
    double ref_tol;                   /* default 1e-4 (|out - ref| / max(1, |ref|)) */
    int max_check;                    /* elements checked per parameter, default 64 (sampled) */
    uint64_t seed;
    int no_fusion;                    /* compile with the fusion pass off */
    int per_param;                    /* print one line per parameter too */
    int fd_train;                     /* evaluate L with the training program (dropout) */
} fd_spec;

static inline void fd_init(fd_spec *s, const char *name, fd_build_fn build, const void *ctx) {
    memset(s, 0, sizeof *s);
    s->name = name;
    s->build = build;
    s->ctx = ctx;
}

static inline void fd_param(fd_spec *s, const char *name, int gen, int nd, const int64_t *shape) {
    if (s->np >= FD_MAXP) abort();
    s->p[s->np].name = name;
    s->p[s->np].gen = gen;
    s->p[s->np].nd = nd;
    for (int i = 0; i < nd; i++) s->p[s->np].shape[i] = shape[i];
    s->np++;
}

static void fd_fill(tu_rng *r, int gen, float *v, int64_t n) {
    switch (gen) {
    case GEN_POS: for (int64_t i = 0; i < n; i++) v[i] = (float)tu_uniform(r, 0.5, 2.0); break;
    case GEN_SIGNED_POS:
        for (int64_t i = 0; i < n; i++) v[i] = (float)(tu_uniform(r, 0.5, 2.0) * (tu_next(r) & 1 ? 1 : -1));
        break;
    case GEN_AWAY0:
        for (int64_t i = 0; i < n; i++) v[i] = (float)(tu_uniform(r, 0.1, 1.0) * (tu_next(r) & 1 ? 1 : -1));
        break;
    case GEN_DISTINCT: {
        int64_t *idx = malloc(sizeof(int64_t) * (size_t)(n ? n : 1));
        for (int64_t i = 0; i < n; i++) idx[i] = i;
        tu_shuffle(r, idx, n);
        for (int64_t i = 0; i < n; i++) v[i] = (float)(0.05 * (double)(idx[i] - n / 2));
        free(idx);
        break;
    }
    case GEN_GAMMA: for (int64_t i = 0; i < n; i++) v[i] = (float)tu_uniform(r, 0.5, 1.5); break;
    case GEN_SMALL: for (int64_t i = 0; i < n; i++) v[i] = (float)tu_uniform(r, -0.1, 0.1); break;
    case GEN_WEIGHT: for (int64_t i = 0; i < n; i++) v[i] = (float)tu_uniform(r, -0.5, 0.5); break;
    default: for (int64_t i = 0; i < n; i++) v[i] = (float)tu_uniform(r, -1.0, 1.0); break;
    }
}

typedef struct fd_state {
    int nout;
    char outname[FD_MAXOUT][32];
    int64_t outn[FD_MAXOUT];
    float *R[FD_MAXOUT];
} fd_state;

/* Run program p at the pinned step and return L = sum(out * R) in double (NAN on error). */
static double fd_loss(fd_state *st, ts_program *p, float **keep_out) {
    ts_program_set_step(p, 3);
    ts_status s = ts_program_run(p);
    if (s != TS_OK) {
        CHECK(s == TS_OK, "ts_program_run -> %s: %s", ts_status_name(s), ts_last_error());
        return NAN;
    }
    double L = 0;
    for (int k = 0; k < st->nout; k++) {
        ts_tensor *t = TU_FETCH(p, st->outname[k]);
        if (!t) return NAN;
        const float *o = tu_f32(t);
        for (int64_t i = 0; i < st->outn[k]; i++) L += (double)o[i] * (double)st->R[k][i];
        if (keep_out) memcpy(keep_out[k], o, sizeof(float) * (size_t)st->outn[k]);
        ts_tensor_free(t);
    }
    return L;
}

/* Run one case. Returns the max gradient error (negative when the case could not run). */
static double fd_run(const fd_spec *spec) {
    double eps = spec->eps > 0 ? spec->eps : 1e-2, tol = spec->tol > 0 ? spec->tol : 1e-2;
    double ref_tol = spec->ref_tol > 0 ? spec->ref_tol : 1e-4;
    int max_check = spec->max_check > 0 ? spec->max_check : 64;
    tu_rng rng = tu_rng_seed(spec->seed ? spec->seed : 0x5eed + strlen(spec->name));
    double result = -1;
    ts_graph *g = ts_graph_new();
    ts_program *prog = NULL, *fwd = NULL;
    fd_state st;
    memset(&st, 0, sizeof st);
    fd_host h;
    memset(&h, 0, sizeof h);
    float *outs_host[FD_MAXOUT] = {0}, *outs_fwd[FD_MAXOUT] = {0};
    fd_out fo[FD_MAXOUT];
    memset(fo, 0, sizeof fo);
    char *gradname[FD_MAXP] = {0};
    float *grad[FD_MAXP] = {0};
    int gen[FD_MAXP];
    const char *what = "build";

    ts_graph_set_seed(g, 11);
    ts_value pv[FD_MAXP];
    for (int i = 0; i < spec->np; i++)
        pv[i] = ts_param(g, spec->p[i].name, TS_F32, spec->p[i].nd, spec->p[i].shape, ts_init_zeros());
    ts_value outs[FD_MAXOUT];
    for (int k = 0; k < FD_MAXOUT; k++) outs[k] = TS_NONE;
    int nout = spec->build(g, pv, outs, spec->ctx);
    if (ts_graph_status(g) != TS_OK || nout <= 0 || nout > FD_MAXOUT) goto build_error;
    st.nout = nout;
    ts_value loss = TS_NONE;
    for (int k = 0; k < nout; k++) {
        fo[k].nd = ts_value_shape(g, outs[k], fo[k].shape);
        if (fo[k].nd < 0 || ts_value_dtype(g, outs[k]) != TS_F32) {
            CHECK(0, "%s: output %d is not an f32 value", spec->name, k);
            goto done;
        }
        fo[k].n = tu_numel(fo[k].nd, fo[k].shape);
        st.outn[k] = fo[k].n;
        ts_tensor *R = tu_rand_tensor(&rng, fo[k].nd, fo[k].shape, -1.0, 1.0);
        st.R[k] = malloc(sizeof(float) * (size_t)(fo[k].n ? fo[k].n : 1));
        memcpy(st.R[k], tu_f32(R), sizeof(float) * (size_t)fo[k].n);
        ts_value rc = ts_constant(g, R);
        ts_tensor_free(R);
        snprintf(st.outname[k], sizeof st.outname[k], "fd.out%d", k);
        ts_name(g, outs[k], st.outname[k]);
        ts_value prod = ts_mul(g, outs[k], rc);
        ts_value term = fo[k].nd == 0 ? prod : ts_reduce_sum(g, prod, 0, NULL, 0);
        loss = loss == TS_NONE ? term : ts_add(g, loss, term);
        outs_host[k] = malloc(sizeof(float) * (size_t)(fo[k].n ? fo[k].n : 1));
        outs_fwd[k] = malloc(sizeof(float) * (size_t)(fo[k].n ? fo[k].n : 1));
    }
    ts_name(g, loss, "fd.loss");
    what = "loss";
    if (ts_graph_status(g) != TS_OK) goto build_error;
    what = "ts_backward";
    if (ts_backward(g, loss) != TS_OK) goto build_error;

    /* a probe compile lists every parameter, including those the builder made itself */
    {
        const char *f0[FD_MAXOUT];
        for (int k = 0; k < nout; k++) f0[k] = st.outname[k];
        ts_program *probe = ts_compile(
            g, &(ts_compile_opts){.nfetch = nout, .fetches = f0, .no_fusion = spec->no_fusion, .num_threads = 1});
        what = "ts_compile (probe)";
        if (!probe) goto build_error;
        h.np = ts_program_num_params(probe);
        CHECK(h.np <= FD_MAXP, "%s: %d parameters, the harness checks the first %d", spec->name, h.np, FD_MAXP);
        if (h.np > FD_MAXP) h.np = FD_MAXP;
        for (int i = 0; i < h.np; i++) {
            h.name[i] = strdup(ts_program_param_name(probe, i));
            gradname[i] = malloc(strlen(h.name[i]) + 8);
            sprintf(gradname[i], "%s@GRAD", h.name[i]);
        }
        ts_program_free(probe);
    }
    {
        const char *fetch[FD_MAXOUT + 1 + FD_MAXP];
        int nf = 0;
        for (int k = 0; k < nout; k++) fetch[nf++] = st.outname[k];
        fetch[nf++] = "fd.loss";
        for (int i = 0; i < h.np; i++) fetch[nf++] = gradname[i];
        prog = ts_compile(g, &(ts_compile_opts){.device = "cpu", .nfetch = nf, .fetches = fetch, .inference = 0,
                                              .no_fusion = spec->no_fusion, .num_threads = 1});
        what = "ts_compile";
        if (!prog) goto build_error;
        /* the finite differences only need the forward pass: a program compiled for inference,
         * unless the case needs training-mode behaviour (dropout) */
        if (spec->fd_train) {
            fwd = prog;
        } else {
            const char *f0[FD_MAXOUT];
            for (int k = 0; k < nout; k++) f0[k] = st.outname[k];
            fwd = ts_compile(g, &(ts_compile_opts){.nfetch = nout, .fetches = f0, .inference = 1,
                                                   .no_fusion = spec->no_fusion, .num_threads = 1});
            what = "ts_compile (inference)";
            if (!fwd) goto build_error;
        }
    }

    /* parameter values */
    for (int i = 0; i < h.np; i++) {
        ts_tensor *t = NULL;
        if (CHECK_OK(ts_program_get_param(prog, h.name[i], &t)) != TS_OK) goto done;
        h.nd[i] = ts_tensor_ndim(t);
        memcpy(h.shape[i], ts_tensor_shape(t), sizeof(int64_t) * (size_t)h.nd[i]);
        int64_t n = ts_tensor_numel(t);
        gen[i] = spec->gen_for ? spec->gen_for(h.name[i]) : GEN_UNIF;
        for (int j = 0; j < spec->np; j++)
            if (strcmp(spec->p[j].name, h.name[i]) == 0) gen[i] = spec->p[j].gen;
        fd_fill(&rng, gen[i], tu_f32(t), n);
        h.val[i] = malloc(sizeof(float) * (size_t)(n ? n : 1));
        memcpy(h.val[i], tu_f32(t), sizeof(float) * (size_t)n);
        ts_status s = CHECK_OK(ts_program_set_param(prog, h.name[i], t));
        if (!s && fwd != prog) s = CHECK_OK(ts_program_set_param(fwd, h.name[i], t));
        ts_tensor_free(t);
        if (s) goto done;
    }

    /* analytic pass */
    double L0 = fd_loss(&st, prog, outs_host);
    if (isnan(L0)) goto done;
    if (fwd != prog) { /* the two programs compute the same forward */
        if (isnan(fd_loss(&st, fwd, outs_fwd))) goto done;
        double d = 0;
        for (int k = 0; k < nout; k++)
            for (int64_t i = 0; i < fo[k].n; i++)
                d = fmax(d, fabs((double)outs_fwd[k][i] - outs_host[k][i]) / fmax(1.0, fabs(outs_host[k][i])));
        CHECK(d <= 1e-5, "%s: the training and inference programs' outputs differ by %.3e", spec->name, d);
    }
    {
        ts_tensor *lt = TU_FETCH(prog, "fd.loss");
        if (!lt) goto done;
        double lp = tu_f32(lt)[0];
        ts_tensor_free(lt);
        CHECK(fabs(lp - L0) <= 1e-4 * fmax(1.0, fabs(L0)),
              "%s: the program's loss %.9g differs from the host's sum(out*R) %.9g", spec->name, lp, L0);
    }
    for (int i = 0; i < h.np; i++) {
        ts_tensor *t = TU_FETCH(prog, gradname[i]);
        if (!t) goto done;
        int64_t n = tu_numel(h.nd[i], h.shape[i]);
        CHECK(ts_tensor_numel(t) == n && ts_tensor_dtype(t) == TS_F32,
              "%s: %s has %lld elements, its parameter %lld", spec->name, gradname[i],
              (long long)ts_tensor_numel(t), (long long)n);
        if (ts_tensor_numel(t) != n) { ts_tensor_free(t); goto done; }
        grad[i] = malloc(sizeof(float) * (size_t)(n ? n : 1));
        memcpy(grad[i], tu_f32(t), sizeof(float) * (size_t)n);
        ts_tensor_free(t);
    }

    /* forward against the host reference */
    double ref_err = 0;
    if (spec->ref) {
        for (int k = 0; k < nout; k++) fo[k].ref = calloc((size_t)(fo[k].n ? fo[k].n : 1), sizeof(double));
        spec->ref(&h, fo, nout, spec->ctx);
        for (int k = 0; k < nout; k++)
            for (int64_t i = 0; i < fo[k].n; i++) {
                double e = fabs((double)outs_host[k][i] - fo[k].ref[i]) / fmax(1.0, fabs(fo[k].ref[i]));
                if (!(e <= ref_err)) {
                    ref_err = e;
                    if (!(e <= ref_tol))
                        CHECK(e <= ref_tol, "%s: output %d element %lld is %.7g, the reference %.7g",
                              spec->name, k, (long long)i, outs_host[k][i], fo[k].ref[i]);
                }
            }
    }

    /* finite differences */
    double maxerr = 0;
    int checked = 0;
    const char *worst_p = "";
    int64_t worst_i = -1;
    double worst_num = 0, worst_ana = 0;
    for (int i = 0; i < h.np; i++) {
        int64_t n = tu_numel(h.nd[i], h.shape[i]);
        int64_t *idx = malloc(sizeof(int64_t) * (size_t)(n ? n : 1));
        for (int64_t j = 0; j < n; j++) idx[j] = j;
        int64_t m = n;
        if (n > max_check) {
            tu_shuffle(&rng, idx, n);
            m = max_check;
        }
        ts_tensor *t = ts_tensor_from(TS_F32, h.nd[i], h.shape[i], h.val[i]);
        float *tv = tu_f32(t);
        double perr = 0;
        for (int64_t c = 0; c < m; c++) {
            int64_t j = idx[c];
            float v0 = h.val[i][j];
            float vp = (float)(v0 + eps), vm = (float)(v0 - eps);
            tv[j] = vp;
            if (CHECK_OK(ts_program_set_param(fwd, h.name[i], t))) break;
            double Lp = fd_loss(&st, fwd, NULL);
            tv[j] = vm;
            if (CHECK_OK(ts_program_set_param(fwd, h.name[i], t))) break;
            double Lm = fd_loss(&st, fwd, NULL);
            tv[j] = v0;
            if (isnan(Lp) || isnan(Lm)) break;
            double num = (Lp - Lm) / ((double)vp - (double)vm), ana = grad[i][j];
            double e = fabs(num - ana) / fmax(1.0, fabs(ana));
            checked++;
            if (!(e <= perr)) perr = e;
            if (!(e <= maxerr)) {
                maxerr = e;
                worst_p = h.name[i];
                worst_i = j;
                worst_num = num;
                worst_ana = ana;
            }
        }
        if (spec->per_param)
            printf("         %-52s grad err %.2e (%lld of %lld elems)\n", h.name[i], perr, (long long)m,
                   (long long)n);
        ts_program_set_param(fwd, h.name[i], t); /* restore */
        ts_tensor_free(t);
        free(idx);
    }
    result = maxerr;
    if (spec->ref)
        printf("  %-4s %-46s grad err %.2e  fwd err %.2e  (eps %.0e, %d elems)\n",
               maxerr <= tol && ref_err <= ref_tol ? "ok" : "FAIL", spec->name, maxerr, ref_err, eps, checked);
    else
        printf("  %-4s %-46s grad err %.2e  (eps %.0e, %d elems)\n", maxerr <= tol ? "ok" : "FAIL",
               spec->name, maxerr, eps, checked);
    CHECK(maxerr <= tol, "%s: max |num - ana| / max(1, |ana|) = %.3e > %.0e, worst at %s[%lld]: "
          "numeric %.7g, analytic %.7g", spec->name, maxerr, tol, worst_p, (long long)worst_i,
          worst_num, worst_ana);
    CHECK(checked > 0, "%s: no element was checked", spec->name);
    goto done;

build_error:
    printf("  FAIL %-44s (%s failed: %s)\n", spec->name, what, ts_last_error());
    CHECK(0, "%s: %s failed: %s", spec->name, what, ts_last_error());
done:
    fflush(stdout);
    if (fwd != prog) ts_program_free(fwd);
    ts_program_free(prog);
    ts_graph_free(g);
    for (int k = 0; k < FD_MAXOUT; k++) {
        free(st.R[k]);
        free(outs_host[k]);
        free(outs_fwd[k]);
        free(fo[k].ref);
    }
    for (int i = 0; i < FD_MAXP; i++) {
        free((char *)h.name[i]);
        free(h.val[i]);
        free(gradname[i]);
        free(grad[i]);
    }
    return result;
}

#endif /* FD_CHECK_H */
