/*
 * matmul.cl — what follows CLBlast's GEMM in a matmul node (src/ops/matmul.c): the bias row and
 * the fused activation (TS_MATMUL_ACT_*), in place on the product.
 */
__kernel void bias_act(BUFARG(float, o), BUFARG(float, bias), long n, long N, int act) {
    long i = get_global_id(0);
    if (i >= n) return;
    __global float *o = BUF(float, o);
    float v = o[i];
    if (bias_p) v += BUF(float, bias)[i % N];
    if (act == TS_MATMUL_ACT_GELU_ERF) v = unary_f(OP_GELU, 0, 0.f, 0.f, v);
    else if (act == TS_MATMUL_ACT_GELU_TANH) v = unary_f(OP_GELU, 1, 0.f, 0.f, v);
    else if (act == TS_MATMUL_ACT_RELU) v = unary_f(OP_RELU, 0, 0.f, 0.f, v);
    o[i] = v;
}
