/* kernels.c — the CPU backend's table of its own kernels (ops not listed use src/ops). */
#include "backend/cpu/cpu.h"

extern const ts_cpu_kernel ts_cpu_matmul_dnnl; /* matmul_dnnl.c */
extern const ts_cpu_kernel ts_cpu_matmul_i8dyn; /* matmul_int8.c */
extern const ts_cpu_kernel ts_cpu_conv2d_i8;    /* conv_int8.c */
extern const ts_cpu_kernel ts_cpu_cast_kept;   /* cast_kept.c */
extern const ts_cpu_kernel ts_cpu_conv2d_dnnl, ts_cpu_conv_transpose2d_dnnl,
    ts_cpu_conv2d_grad_weight_dnnl; /* conv_dnnl.c */

static const ts_cpu_kernel *const table[] = {
    &ts_cpu_matmul_dnnl,
    &ts_cpu_matmul_i8dyn,
    &ts_cpu_cast_kept,
    &ts_cpu_conv2d_dnnl,
    &ts_cpu_conv_transpose2d_dnnl,
    &ts_cpu_conv2d_grad_weight_dnnl,
    &ts_cpu_conv2d_i8,
};

const ts_cpu_kernel *ts_cpu_kernel_for(int op) {
    for (size_t i = 0; i < sizeof table / sizeof *table; i++)
        if (table[i] && table[i]->op == op) return table[i];
    return NULL;
}
