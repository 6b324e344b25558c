/*
 * shape.cl — data movement (src/ops/shape.c, gather.c, elementwise.c's expand): scopy copies
 * elements of es bytes over an iteration shape with source and destination strides (bc_t st[0],
 * st[1], in elements) from base offsets; gather / gather_grad index rows of a table.
 */
__kernel void scopy(BUFARG(char, s), BUFARG(char, d), bc_t g, long sbase, long dbase, int es) {
    long i = get_global_id(0);
    if (i >= g.n) return;
    long so = sbase + bc_off(&g, 0, i), dof = dbase + bc_off(&g, 1, i);
    switch (es) {
    case 1: BUF(uchar, d)[dof] = BUF(uchar, s)[so]; break;
    case 2: BUF(ushort, d)[dof] = BUF(ushort, s)[so]; break;
    case 4: BUF(uint, d)[dof] = BUF(uint, s)[so]; break;
    default: BUF(ulong, d)[dof] = BUF(ulong, s)[so]; break;
    }
}

inline long index_at(__global const char *p, int is64, long r) {
    return is64 ? ((__global const long *)p)[r] : ((__global const int *)p)[r];
}

/* out [N, D] = table[idx[r], :]; a bad index writes 0 and is reported */
__kernel void gather(BUFARG(float, t), BUFARG(char, ix), BUFARG(float, o), long n, long D, long V, int is64,
                     __global int *err, int tag) {
    long i = get_global_id(0);
    if (i >= n) return;
    long r = i / D, j = i % D, v = index_at(BUF(char, ix), is64, r);
    if (v < 0 || v >= V) {
        set_err(err, tag, r, v);
        BUF(float, o)[i] = 0.f;
        return;
    }
    BUF(float, o)[i] = BUF(float, t)[v * D + j];
}

/* per column j: gx[idx[r], j] += gy[r, j] for r in order (gx zeroed before) */
__kernel void gather_grad(BUFARG(float, gy), BUFARG(char, ix), BUFARG(float, gx), long N, long D, long V, int is64,
                          __global int *err, int tag) {
    long j = get_global_id(0);
    if (j >= D) return;
    __global const float *gy = BUF(float, gy);
    __global float *gx = BUF(float, gx);
    for (long r = 0; r < N; r++) {
        long v = index_at(BUF(char, ix), is64, r);
        if (v < 0 || v >= V) {
            if (j == 0) set_err(err, tag, r, v);
            continue;
        }
        gx[v * D + j] += gy[r * D + j];
    }
}
