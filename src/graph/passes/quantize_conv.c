/*
 * quantize_conv.c — the dynamic int8 quantization pass for convolutions (ts_compile_opts.quantize,
 * beside quantize.c's for matmuls): in an inference program, after fusion, every alive conv2d
 * whose weight is fixed becomes a conv2d_i8 (ops/conv_int8.c: weights int8 per output channel,
 * activations int8 per tensor, int32 sums, f32 out). Rewritten when:
 *   x and w are f32 (conv2d takes only f32), w a parameter or a constant or a reshape of one (as
 *   ONNX Conv1d weights reach conv2d; the CPU kernel keeps their quantized copy across runs, as
 *   conv_dnnl.c keeps its reordered one), and C/G KH KW within the op's int32 bound.
 * The node keeps its index, inputs, output, geometry and fused epilogue (conv2d_i8 reads conv2d's
 * attributes at the same indices); f[3] (a_scale) is 0: dynamic; i[11] (choose) is 1: the device
 * may run the node's f32 math where it measures that faster (backend/cpu/conv_int8.c).
 */
#include "graph/op_attrs.h"
#include "graph/opdef.h"
#include "graph/passes/passes.h"
#include "ops/op.h"

int ts_quantizable_conv(const ts_graph *g, const ts_node *n) {
    if (n->op != TS_OP_CONV2D) return 0;
    const ts_val *x = &g->vals[n->in[0]], *w = &g->vals[n->in[1]];
    if (x->dtype != TS_F32 || w->dtype != TS_F32 || w->ndim != 4 || !ts_fixed_weight(g, n->in[1])) return 0;
    return w->shape[1] * w->shape[2] * w->shape[3] <= 133144; /* conv2d_i8's int32 bound */
}

int ts_pass_quantize_conv(ts_graph *g, const uint8_t *alive) {
    int count = 0;
    for (int i = 0; i < g->nnodes; i++) {
        ts_node *n = &g->nodes[i];
        if (!alive[i] || !ts_quantizable_conv(g, n)) continue;
        n->op = TS_OP_CONV2D_I8;
        n->attr.f[3] = 0.f;
        n->attr.i[11] = 1; /* choose: the device may keep f32 where it measures it faster */
        n->attr.ni = 12;
        count++;
    }
    return count;
}
