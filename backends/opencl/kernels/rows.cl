/*
 * rows.cl — ops over the last axis, one work-item per row of C (src/ops/softmax.c, layernorm.c):
 * softmax (with an additive mask broadcast to x: bc_t st[0]), log_softmax, their gradients,
 * cross_entropy (per-row losses into scratch, then one sum) and its gradient, layer_norm and
 * layer_norm_grad (gx per row; ggamma / gbeta per column, rows in order).
 */
__kernel void softmax(BUFARG(float, x), BUFARG(float, m), BUFARG(float, y), long rows, long C, bc_t g) {
    long r = get_global_id(0);
    if (r >= rows) return;
    __global const float *x = BUF(float, x) + r * C, *m = m_p ? BUF(float, m) : 0;
    __global float *y = BUF(float, y) + r * C;
    float mx = -INFINITY, sum = 0.f;
    for (long j = 0; j < C; j++) {
        float z = x[j] + (m ? m[bc_off(&g, 0, r * C + j)] : 0.f);
        mx = z > mx ? z : mx;
    }
    for (long j = 0; j < C; j++) {
        float e = exp(x[j] + (m ? m[bc_off(&g, 0, r * C + j)] : 0.f) - mx);
        y[j] = e;
        sum += e;
    }
    float inv = 1.f / sum;
    for (long j = 0; j < C; j++) y[j] *= inv;
}

__kernel void log_softmax(BUFARG(float, x), BUFARG(float, y), long rows, long C) {
    long r = get_global_id(0);
    if (r >= rows) return;
    __global const float *x = BUF(float, x) + r * C;
    __global float *y = BUF(float, y) + r * C;
    float mx = -INFINITY, sum = 0.f;
    for (long j = 0; j < C; j++) mx = x[j] > mx ? x[j] : mx;
    for (long j = 0; j < C; j++) sum += exp(x[j] - mx);
    float shift = mx + log(sum);
    for (long j = 0; j < C; j++) y[j] = x[j] - shift;
}

/* log: 0 softmax_grad gx = y (gy - sum gy y); 1 log_softmax_grad gx = gy - exp(y) sum gy */
__kernel void row_grad(BUFARG(float, y), BUFARG(float, gy), BUFARG(float, gx), long rows, long C, int lg) {
    long r = get_global_id(0);
    if (r >= rows) return;
    __global const float *y = BUF(float, y) + r * C, *gy = BUF(float, gy) + r * C;
    __global float *gx = BUF(float, gx) + r * C;
    float s = 0.f;
    for (long j = 0; j < C; j++) s += lg ? gy[j] : gy[j] * y[j];
    for (long j = 0; j < C; j++) gx[j] = lg ? gy[j] - exp(y[j]) * s : y[j] * (gy[j] - s);
}

inline long label_at(__global const char *p, int is64, long r) {
    return is64 ? ((__global const long *)p)[r] : ((__global const int *)p)[r];
}

/* per row: loss[r] = lse - x[label] (kept rows), keep[r] = 1 / 0 */
__kernel void ce_rows(BUFARG(float, x), BUFARG(char, l), BUFARG(float, ws), long rows, long C, int is64,
                      long ignore, __global int *err, int tag) {
    long r = get_global_id(0);
    if (r >= rows) return;
    __global const float *x = BUF(float, x) + r * C;
    __global float *loss = BUF(float, ws), *keep = loss + rows;
    long lab = label_at(BUF(char, l), is64, r);
    loss[r] = 0.f;
    keep[r] = 0.f;
    if (lab == ignore) return;
    if (lab < 0 || lab >= C) {
        set_err(err, tag, r, lab);
        return;
    }
    float mx = -INFINITY, sum = 0.f;
    for (long j = 0; j < C; j++) mx = x[j] > mx ? x[j] : mx;
    for (long j = 0; j < C; j++) sum += exp(x[j] - mx);
    loss[r] = mx + log(sum) - x[lab];
    keep[r] = 1.f;
}

/* one work-item: out = sum loss / count (0 when no row is kept); also scale = gl / count for
 * the gradient when gl is given */
__kernel void ce_sum(BUFARG(float, ws), BUFARG(float, o), BUFARG(float, gl), long rows) {
    if (get_global_id(0) != 0) return;
    __global float *loss = BUF(float, ws), *keep = loss + rows;
    float s = 0.f, c = 0.f;
    for (long r = 0; r < rows; r++) {
        s += loss[r];
        c += keep[r];
    }
    if (gl_p) BUF(float, o)[0] = c > 0.f ? BUF(float, gl)[0] / c : 0.f;
    else BUF(float, o)[0] = c > 0.f ? s / c : 0.f;
}

/* gx = (softmax(row) - onehot(label)) * scale, 0 for ignored rows; scale from ce_sum */
__kernel void ce_grad(BUFARG(float, x), BUFARG(char, l), BUFARG(float, sc), BUFARG(float, gx), long rows, long C,
                      int is64, long ignore) {
    long r = get_global_id(0);
    if (r >= rows) return;
    __global const float *x = BUF(float, x) + r * C;
    __global float *gx = BUF(float, gx) + r * C;
    long lab = label_at(BUF(char, l), is64, r);
    if (lab == ignore || lab < 0 || lab >= C) {
        for (long j = 0; j < C; j++) gx[j] = 0.f;
        return;
    }
    float scale = BUF(float, sc)[0], mx = -INFINITY, sum = 0.f;
    for (long j = 0; j < C; j++) mx = x[j] > mx ? x[j] : mx;
    for (long j = 0; j < C; j++) {
        float e = exp(x[j] - mx);
        gx[j] = e;
        sum += e;
    }
    float f = scale / sum;
    for (long j = 0; j < C; j++) gx[j] *= f;
    gx[lab] -= scale;
}

inline void row_stats(__global const float *x, long C, float eps, float *mean, float *rstd) {
    float s = 0.f, q = 0.f;
    for (long j = 0; j < C; j++) s += x[j];
    float m = s / (float)C;
    for (long j = 0; j < C; j++) q += (x[j] - m) * (x[j] - m);
    *mean = m;
    *rstd = 1.f / sqrt(q / (float)C + eps);
}

__kernel void layer_norm(BUFARG(float, x), BUFARG(float, ga), BUFARG(float, be), BUFARG(float, y), long rows, long C,
                         float eps) {
    long r = get_global_id(0);
    if (r >= rows) return;
    __global const float *x = BUF(float, x) + r * C;
    __global float *y = BUF(float, y) + r * C;
    float mean, rstd;
    row_stats(x, C, eps, &mean, &rstd);
    for (long j = 0; j < C; j++) {
        float v = (x[j] - mean) * rstd;
        if (ga_p) v *= BUF(float, ga)[j];
        if (be_p) v += BUF(float, be)[j];
        y[j] = v;
    }
}

__kernel void layer_norm_gx(BUFARG(float, x), BUFARG(float, ga), BUFARG(float, gy), BUFARG(float, gx),
                            BUFARG(float, st), long rows, long C, float eps, int stats_only) {
    long r = get_global_id(0);
    if (r >= rows) return;
    __global const float *x = BUF(float, x) + r * C, *gy = BUF(float, gy) + r * C;
    __global const float *G = ga_p ? BUF(float, ga) : 0;
    __global float *gx = BUF(float, gx) + r * C;
    float mean, rstd, a = 0.f, c = 0.f;
    row_stats(x, C, eps, &mean, &rstd);
    BUF(float, st)[2 * r] = mean;
    BUF(float, st)[2 * r + 1] = rstd;
    if (stats_only) return; /* gx may overwrite x: layer_norm_gp runs between the two calls */
    for (long j = 0; j < C; j++) {
        float gg = gy[j] * (G ? G[j] : 1.f);
        a += gg;
        c += gg * (x[j] - mean) * rstd;
    }
    a /= (float)C;
    c /= (float)C;
    for (long j = 0; j < C; j++) {
        float xh = (x[j] - mean) * rstd;
        gx[j] = rstd * (gy[j] * (G ? G[j] : 1.f) - a - xh * c);
    }
}

/* per column j: ggamma[j] = sum_r gy xhat, gbeta[j] = sum_r gy (row stats from layer_norm_gx) */
__kernel void layer_norm_gp(BUFARG(float, x), BUFARG(float, gy), BUFARG(float, gg), BUFARG(float, gb),
                            BUFARG(float, st), long rows, long C) {
    long j = get_global_id(0);
    if (j >= C) return;
    float sg = 0.f, sb = 0.f;
    for (long r = 0; r < rows; r++) {
        __global const float *x = BUF(float, x) + r * C;
        float mean = BUF(float, st)[2 * r], rstd = BUF(float, st)[2 * r + 1], g = BUF(float, gy)[r * C + j];
        sg += g * (x[j] - mean) * rstd;
        sb += g;
    }
    if (gg_p) BUF(float, gg)[j] = sg;
    if (gb_p) BUF(float, gb)[j] = sb;
}
