/*
 * matmul.cl — what follows CLBlast's GEMM in a matmul node (src/ops/matmul.c): the bias row and
 * the fused activation (0 none, 1 gelu erf, 2 gelu tanh, 3 relu), in place on the product.
 */
__kernel void bias_act(BUFARG(float, o), BUFARG(float, bias), long n, long N, int act) {
    long i = get_global_id(0);
    if (i >= n) return;
    __global float *o = BUF(float, o);
    float v = o[i];
    if (bias_p) v += BUF(float, bias)[i % N];
    if (act == 1) v = unary_f(OP_GELU, 0, 0.f, 0.f, v);
    else if (act == 2) v = unary_f(OP_GELU, 1, 0.f, 0.f, v);
    else if (act == 3) v = unary_f(OP_RELU, 0, 0.f, 0.f, v);
    o[i] = v;
}
