/*
 * session.c — ts_onnx_session: inference on an ONNX model whatever the input shapes. Each
 * distinct set of input shapes is imported and compiled once (for inference, fetching every
 * graph output) and kept; the 8 most recently used programs stay, the least recently used one
 * is dropped for a ninth. Inputs are matched to the model's inputs by position and checked
 * against the declared dtype and static dims before anything is built.
 * Inputs whose values decide shapes (a Reshape's target shape, a Resize's scales, Slice's starts
 * fed as graph inputs, as ONNX Runtime allows): when an import is refused at nodes that read
 * graph inputs directly, the session imports again with those inputs' values known (folded at
 * import) and from then on keys its programs on their values as well as on every shape.
 * Inputs the caller fixes (ts_onnx_session_fix) are such inputs from the start. Bound inputs
 * (ts_onnx_session_bind) are fed from their output after the previous run: on the device
 * (ts_program_feed_value) when the same program ran last, else from the host copy kept of it.
 */
#include "onnx/onnx_imp.h"
#include "onnx/onnx_testing.h"

#include <stdio.h>

#define CACHE 8

typedef struct {
    ts_program *p;
    int64_t *shapes; /* every input's dims, back to back */
    int *ndims;
    ts_tensor **vals; /* per input: a copy of its value when the program was built with it known */
    uint64_t used;   /* the run counter when last used */
} entry;

struct ts_onnx_session {
    const ts_onnx *m;
    ts_compile_opts opts;
    char *device;
    const char **fetches;
    int *spec;        /* per input: 1 once an import needed its value known */
    ts_tensor **fixed; /* per input: the value ts_onnx_session_fix gave, or NULL */
    int *bound;       /* per input: the output index it is bound to, or -1 */
    ts_tensor **state; /* per bound input: what the next run feeds (NULL: its initial value) */
    entry *last;      /* the program that ran last, holding the bound outputs' values, or NULL */
    entry cache[CACHE];
    uint64_t clock;
};

ts_onnx_session *ts_onnx_session_new(const ts_onnx *m, const ts_compile_opts *opts) {
    if (!m) {
        ts_err(TS_ERR_ARG, "ts_onnx_session_new: the model is NULL");
        return NULL;
    }
    ts_compile_opts o;
    if (TS_STRUCT_READ(&o, opts, ts_compile_opts, "ts_onnx_session_new")) return NULL;
    ts_onnx_session *s = calloc(1, sizeof *s);
    if (!s) {
        ts_err(TS_ERR_NOMEM, "ts_onnx_session_new: out of memory");
        return NULL;
    }
    s->m = m;
    s->opts = o;
    s->opts.struct_size = sizeof s->opts; /* every field read above: the whole struct from here on */
    s->device = o.device ? strdup(o.device) : NULL;
    s->opts.device = s->device;
    s->fetches = calloc((size_t)m->noutputs + 1, sizeof *s->fetches);
    s->spec = calloc((size_t)m->ninputs + 1, sizeof *s->spec);
    s->fixed = calloc((size_t)m->ninputs + 1, sizeof *s->fixed);
    s->state = calloc((size_t)m->ninputs + 1, sizeof *s->state);
    s->bound = malloc(((size_t)m->ninputs + 1) * sizeof *s->bound);
    if (!s->fetches || !s->spec || !s->fixed || !s->state || !s->bound || (o.device && !s->device)) {
        ts_onnx_session_free(s);
        ts_err(TS_ERR_NOMEM, "ts_onnx_session_new: out of memory");
        return NULL;
    }
    for (int i = 0; i < m->ninputs; i++) s->bound[i] = -1;
    for (int j = 0; j < m->noutputs; j++) s->fetches[j] = m->outputs[j]->name;
    s->opts.fetches = s->fetches;
    s->opts.nfetch = m->noutputs;
    s->opts.inference = 1;
    s->opts.device_iterations = 0; /* one batch a run: the inputs are fed as they come */
    s->opts.stage_devices = NULL;
    s->opts.nstage_devices = 0;
    return s;
}

static void drop(entry *e, int ninputs) {
    for (int i = 0; e->vals && i < ninputs; i++) ts_tensor_free(e->vals[i]);
    free(e->vals);
    ts_program_free(e->p);
    free(e->shapes);
    free(e->ndims);
    memset(e, 0, sizeof *e);
}

void ts_onnx_session_free(ts_onnx_session *s) {
    if (!s) return;
    for (int i = 0; i < CACHE; i++) drop(&s->cache[i], s->m->ninputs);
    for (int i = 0; i < s->m->ninputs; i++) {
        if (s->fixed) ts_tensor_free(s->fixed[i]);
        if (s->state) ts_tensor_free(s->state[i]);
    }
    free(s->fixed);
    free(s->state);
    free(s->bound);
    free(s->fetches);
    free(s->spec);
    free(s->device);
    free(s);
}

/* The inputs fit the model's declared inputs: TS_OK or an error naming the input. */
static ts_status check_inputs(const ts_onnx *m, const ts_tensor *const *in) {
    for (int i = 0; i < m->ninputs; i++) {
        const char *name = m->inputs[i]->name;
        if (!in[i]) return ts_err(TS_ERR_ARG, "%s: input %d '%s' is NULL", m->what, i, name);
        if (in[i]->dtype != m->in_dtype[i])
            return ts_err(TS_ERR_DTYPE, "%s: input '%s' is %s; the model declares %s", m->what, name,
                          ts_dtype_name(in[i]->dtype), ts_dtype_name(m->in_dtype[i]));
        int nd = m->in_ndim[i];
        int ok = nd < 0 || nd == in[i]->ndim;
        for (int d = 0; ok && nd >= 0 && d < nd; d++) ok = m->in_shape[i][d] < 0 || m->in_shape[i][d] == in[i]->shape[d];
        if (!ok) {
            char a[160], b[160];
            return ts_err(TS_ERR_SHAPE, "%s: input '%s' has shape %s; the model declares %s (-1: any size)", m->what,
                          name, ts_shape_str(in[i]->ndim, in[i]->shape, a, sizeof a), ts_shape_str(nd, m->in_shape[i], b, sizeof b));
        }
    }
    return TS_OK;
}

static int same_shapes(const entry *e, const ts_onnx *m, const ts_tensor *const *in) {
    if (!e->p) return 0;
    const int64_t *sh = e->shapes;
    for (int i = 0; i < m->ninputs; i++) {
        if (e->ndims[i] != in[i]->ndim || memcmp(sh, in[i]->shape, sizeof(int64_t) * (size_t)in[i]->ndim)) return 0;
        if (e->vals[i] && memcmp(e->vals[i]->data, in[i]->data, ts_tensor_nbytes(in[i]))) return 0;
        sh += in[i]->ndim;
    }
    return 1;
}

/* ts_compile of the imported graph g with its attention fused (ts_graph_fuse_attention, on a copy:
 * the ONNX form of BERT's attention becomes one op); a device that refuses the fused op
 * (TS_ERR_UNSUPPORTED: no kernel and no CPU fallback) gets g as imported, unfused. The pass lives in
 * src/graph (below this folder); which devices run the op is not asked here (src/backend is a sibling). */
static ts_program *compile_fused(const ts_graph *g, const ts_compile_opts *o) {
    ts_graph *f = o->no_fusion ? NULL : ts_graph_clone(g);
    int fused = f && ts_graph_fuse_attention(f) > 0;
    ts_program *p = fused ? ts_compile(f, o) : NULL;
    int again = !fused || (!p && ts_last_status() == TS_ERR_UNSUPPORTED);
    ts_graph_free(f);
    return p ? p : again ? ts_compile(g, o) : NULL;
}

/* Import and compile the model for these input shapes (and the values of the inputs in s->spec)
 * into e: a refused import that read graph inputs directly is tried once more with them known. */
static ts_status build(ts_onnx_session *s, entry *e, const ts_tensor *const *in) {
    const ts_onnx *m = s->m;
    int n = m->ninputs, total = 0;
    for (int i = 0; i < n; i++) total += in[i]->ndim;
    int *ndims = calloc((size_t)n + 1, sizeof *ndims), *wanted = calloc((size_t)n + 1, sizeof *wanted);
    int64_t *flat = calloc((size_t)total + 1, sizeof *flat);
    const int64_t **shapes = calloc((size_t)n + 1, sizeof *shapes);
    const ts_tensor **known = calloc((size_t)n + 1, sizeof *known);
    ts_tensor **vals = calloc((size_t)n + 1, sizeof *vals);
    ts_graph *g = NULL;
    ts_status st = TS_ERR_NOMEM;
    if (!ndims || !wanted || !flat || !shapes || !known || !vals) {
        ts_err(TS_ERR_NOMEM, "%s: out of memory", m->what);
        goto done;
    }
    for (int i = 0, o = 0; i < n; i++) {
        ndims[i] = in[i]->ndim;
        shapes[i] = flat + o;
        memcpy(flat + o, in[i]->shape, sizeof(int64_t) * (size_t)in[i]->ndim);
        o += in[i]->ndim;
    }
    for (int attempt = 0; attempt < 2; attempt++) {
        int any = 0;
        for (int i = 0; i < n; i++) any |= s->spec[i], known[i] = s->spec[i] ? in[i] : NULL;
        ts_graph_free(g);
        if (!(g = ts_graph_new())) {
            ts_err(TS_ERR_NOMEM, "%s: out of memory", m->what);
            goto done;
        }
        st = onnx_import_wanted(m, g, ndims, shapes, NULL, NULL, any ? known : NULL, wanted);
        int more = 0;
        for (int i = 0; i < n; i++) more |= wanted[i] && !s->spec[i];
        if (st == TS_OK || !more) break;
        for (int i = 0; i < n; i++) s->spec[i] |= wanted[i];
    }
    if (st != TS_OK) goto done;
    ts_program *p = compile_fused(g, &s->opts);
    if (!p) {
        st = ts_last_status();
        ts_err(st, "%s: compiling: %s", m->what, ts_last_error());
        goto done;
    }
    for (int i = 0; i < n; i++)
        if (known[i] && !(vals[i] = ts_tensor_from(in[i]->dtype, in[i]->ndim, in[i]->shape, in[i]->data))) {
            ts_program_free(p);
            st = ts_err(TS_ERR_NOMEM, "%s: out of memory", m->what);
            goto done;
        }
    e->p = p;
    e->ndims = ndims;
    e->shapes = flat;
    e->vals = vals;
    ndims = NULL;
    flat = NULL;
    vals = NULL;
    st = TS_OK;
done:
    for (int i = 0; vals && i < n; i++) ts_tensor_free(vals[i]);
    free(vals);
    free(known);
    free(wanted);
    free(ndims);
    free(flat);
    free(shapes);
    ts_graph_free(g);
    return st;
}

static int model_input(const ts_onnx *m, const char *name) {
    for (int i = 0; name && i < m->ninputs; i++)
        if (!strcmp(m->inputs[i]->name, name)) return i;
    return -1;
}

ts_status ts_onnx_session_fix(ts_onnx_session *s, const char *input, const ts_tensor *value) {
    if (!s) return ts_err(TS_ERR_ARG, "ts_onnx_session_fix: the session is NULL");
    const ts_onnx *m = s->m;
    int i = model_input(m, input);
    if (i < 0) return ts_err(TS_ERR_NOT_FOUND, "ts_onnx_session_fix: %s has no input '%s'", m->what, input ? input : "(null)");
    ts_tensor *c = NULL;
    if (value) {
        if (value->dtype != m->in_dtype[i])
            return ts_err(TS_ERR_DTYPE, "ts_onnx_session_fix: input '%s' is %s; the value is %s", input,
                          ts_dtype_name(m->in_dtype[i]), ts_dtype_name(value->dtype));
        if (!(c = ts_tensor_from(value->dtype, value->ndim, value->shape, value->data)))
            return ts_err(TS_ERR_NOMEM, "ts_onnx_session_fix: out of memory");
    }
    ts_tensor_free(s->fixed[i]);
    s->fixed[i] = c;
    if (c) s->spec[i] = 1;
    for (int k = 0; k < CACHE; k++) drop(&s->cache[k], m->ninputs);
    s->last = NULL;
    return TS_OK;
}

ts_status ts_onnx_session_bind(ts_onnx_session *s, const char *output, const char *input) {
    if (!s) return ts_err(TS_ERR_ARG, "ts_onnx_session_bind: the session is NULL");
    const ts_onnx *m = s->m;
    int i = model_input(m, input), j = -1;
    if (i < 0) return ts_err(TS_ERR_NOT_FOUND, "ts_onnx_session_bind: %s has no input '%s'", m->what, input ? input : "(null)");
    for (int k = 0; output && k < m->noutputs; k++)
        if (!strcmp(m->outputs[k]->name, output)) j = k;
    if (output && j < 0) return ts_err(TS_ERR_NOT_FOUND, "ts_onnx_session_bind: %s has no output '%s'", m->what, output);
    int32_t ot = 0;
    ts_dtype od = TS_F32;
    const Onnx__TypeProto *tp = j >= 0 ? m->outputs[j]->type : NULL;
    if (tp && tp->tensor_type && tp->tensor_type->has_elem_type) ot = tp->tensor_type->elem_type;
    if (ot && (!onnx_dtype(ot, &od) || od != m->in_dtype[i]))
        return ts_err(TS_ERR_DTYPE, "ts_onnx_session_bind: output '%s' is %s but input '%s' is %s", output,
                      onnx_type_name(ot), input, ts_dtype_name(m->in_dtype[i]));
    s->bound[i] = j;
    s->last = NULL;
    ts_tensor_free(s->state[i]);
    s->state[i] = NULL;
    return TS_OK;
}

void ts_onnx_session_reset(ts_onnx_session *s) {
    if (s) s->last = NULL;
    for (int i = 0; s && i < s->m->ninputs; i++) ts_tensor_free(s->state[i]), s->state[i] = NULL;
}

/* The tensors a run feeds: the caller's, a fixed value, a bound input's state or initial zeros
 * (made into zeros[i], freed by the caller). */
static ts_status effective_inputs(ts_onnx_session *s, const ts_tensor *const *inputs, const ts_tensor **eff,
                                  ts_tensor **zeros) {
    const ts_onnx *m = s->m;
    for (int i = 0; i < m->ninputs; i++) {
        const ts_tensor *given = inputs ? inputs[i] : NULL, *f = s->fixed[i];
        eff[i] = given;
        if (f) {
            if (given && (given->dtype != f->dtype || given->ndim != f->ndim ||
                          memcmp(given->shape, f->shape, sizeof(int64_t) * (size_t)f->ndim) ||
                          memcmp(given->data, f->data, ts_tensor_nbytes(f))))
                return ts_err(TS_ERR_ARG, "%s: input '%s' is fixed to another value (ts_onnx_session_fix); pass NULL "
                              "for it", m->what, m->inputs[i]->name);
            eff[i] = f;
        } else if (s->bound[i] >= 0 && s->state[i]) {
            eff[i] = s->state[i];
        } else if (s->bound[i] >= 0 && !given) {
            int64_t sh[TS_MAX_DIMS];
            int nd = m->in_ndim[i] < 0 ? 0 : m->in_ndim[i];
            for (int d = 0; d < nd; d++) sh[d] = m->in_shape[i][d] < 0 ? 1 : m->in_shape[i][d];
            if (!(zeros[i] = ts_tensor_new(m->in_dtype[i], nd, sh))) return ts_err(TS_ERR_NOMEM, "%s: out of memory", m->what);
            eff[i] = zeros[i];
        }
    }
    return TS_OK;
}

/* After a run: each bound input's state becomes a copy of its output (in place when the shape
 * is the same). */
static ts_status keep_state(ts_onnx_session *s, ts_tensor *const *outputs) {
    for (int i = 0; i < s->m->ninputs; i++) {
        if (s->bound[i] < 0) continue;
        const ts_tensor *o = outputs[s->bound[i]];
        ts_tensor *st = s->state[i];
        if (st && st->dtype == o->dtype && st->ndim == o->ndim && !memcmp(st->shape, o->shape, sizeof(int64_t) * (size_t)o->ndim)) {
            memcpy(st->data, o->data, ts_tensor_nbytes(o));
            continue;
        }
        ts_tensor_free(st);
        if (!(s->state[i] = ts_tensor_from(o->dtype, o->ndim, o->shape, o->data)))
            return ts_err(TS_ERR_NOMEM, "%s: out of memory for the state of '%s'", s->m->what, s->m->inputs[i]->name);
    }
    return TS_OK;
}

/* One run on the effective inputs. */
static ts_status run_program(ts_onnx_session *s, const ts_tensor *const *inputs, ts_tensor **outputs) {
    const ts_onnx *m = s->m;
    ts_status st = check_inputs(m, inputs);
    if (st) return st;
    entry *e = NULL, *lru = &s->cache[0];
    for (int i = 0; i < CACHE && !e; i++) {
        if (same_shapes(&s->cache[i], m, inputs)) e = &s->cache[i];
        else if (!s->cache[i].p || (lru->p && s->cache[i].used < lru->used)) lru = &s->cache[i];
    }
    if (!e) {
        if (lru == s->last) s->last = NULL;
        drop(lru, m->ninputs);
        if ((st = build(s, lru, inputs)) != TS_OK) return st;
        e = lru;
    }
    e->used = ++s->clock;
    for (int i = 0; i < m->ninputs; i++) { /* an input built in as a known value is not fed */
        if (e->vals[i]) continue;
        if (e == s->last && s->bound[i] >= 0 && s->state[i]) /* the state stays on the device */
            st = ts_program_feed_value(e->p, m->inputs[i]->name, s->fetches[s->bound[i]]);
        else
            st = ts_program_feed(e->p, m->inputs[i]->name, inputs[i]);
        if (st) return st;
    }
    s->last = NULL;
    if ((st = ts_program_run(e->p)) != TS_OK) return ts_err(st, "%s: %s", m->what, ts_last_error());
    s->last = e;
    for (int j = 0; j < m->noutputs; j++)
        if ((st = ts_program_fetch(e->p, s->fetches[j], &outputs[j])) != TS_OK) {
            for (int k = 0; k < j; k++) ts_tensor_free(outputs[k]), outputs[k] = NULL;
            return st;
        }
    return TS_OK;
}

ts_program *ts_onnx_session_program(const ts_onnx_session *s) { return s && s->last ? s->last->p : NULL; }

ts_status ts_onnx_session_run(ts_onnx_session *s, const ts_tensor *const *inputs, ts_tensor **outputs) {
    if (!s || !outputs) return ts_err(TS_ERR_ARG, "ts_onnx_session_run: %s is NULL", !s ? "the session" : "outputs");
    const ts_onnx *m = s->m;
    for (int j = 0; j < m->noutputs; j++) outputs[j] = NULL;
    const ts_tensor **eff = calloc((size_t)m->ninputs + 1, sizeof *eff);
    ts_tensor **zeros = calloc((size_t)m->ninputs + 1, sizeof *zeros);
    ts_status st = !eff || !zeros ? ts_err(TS_ERR_NOMEM, "ts_onnx_session_run: out of memory")
                                  : effective_inputs(s, inputs, eff, zeros);
    if (!st) st = run_program(s, eff, outputs);
    if (!st && (st = keep_state(s, outputs)) != TS_OK)
        for (int j = 0; j < m->noutputs; j++) ts_tensor_free(outputs[j]), outputs[j] = NULL;
    for (int i = 0; zeros && i < m->ninputs; i++) ts_tensor_free(zeros[i]);
    free(zeros);
    free(eff);
    return st;
}
