/*
 * quantize.c — the dynamic int8 quantization pass (ts_compile_opts.quantize = TS_QUANT_DYNAMIC):
 * in an inference program, after fusion, every alive f32 matmul whose b is a weight becomes a
 * matmul_i8dyn (ops/matmul_int8.c: weights int8 per output channel, activations int8 per tensor
 * and per run, int32 sums, f32 out). Rewritten when:
 *   a and b are f32 (so is the output: f32_out is only set for bf16), no trans_a (a's rows are
 *   quantized as stored), b a parameter or constant of rank 2 (no batch dims: one scale per output
 *   channel, kept across runs), K within the int32 bound of the op, and a bias (if any) f32.
 * The matmul's trans_b, fused activation (i[2]) and alpha carry over; the node keeps its index,
 * inputs and output value, so nothing else changes. A matmul of two activations (attention's
 * Q K^T and P V) stays f32, as in ONNX Runtime's dynamic quantization of BERT's MatMuls by weight.
 * Static quantization (TS_QUANT_STATIC): the caller's scales by weight name; a rewritten matmul
 * whose weight (g->vals[b].name) is listed gets a_scale (f[1]) = that scale, fixed; one not
 * listed stays dynamic (a_scale 0). Names are compared exactly; the first listing wins.
 */
#include "graph/op_attrs.h"
#include "graph/opdef.h"
#include "graph/passes/passes.h"
#include "ops/op.h" /* ts_quantizable_node */

/* The static scale listed for weight value b (0: none listed, dynamic). */
static float listed_scale(const ts_graph *g, int b, const ts_quant_scale *scales, int nscales) {
    const char *name = g->vals[b].name;
    for (int i = 0; name && i < nscales; i++)
        if (scales[i].weight && !strcmp(scales[i].weight, name)) return scales[i].scale;
    return 0.f;
}

int ts_pass_quantize(ts_graph *g, const uint8_t *alive, const ts_quant_scale *scales, int nscales) {
    int count = 0;
    for (int i = 0; i < g->nnodes; i++) {
        ts_node *n = &g->nodes[i];
        if (!alive[i] || !ts_quantizable_node(g, n)) continue;
        ts_attrs_matmul at = TS_NODE_ATTRS(matmul, n);
        memset(&n->attr, 0, sizeof n->attr);
        n->attr.i[0] = at.trans_b != 0;
        n->attr.i[1] = at.act;
        n->attr.ni = 2;
        n->attr.f[0] = at.alpha == 1.f ? 0.f : at.alpha;
        n->attr.f[1] = listed_scale(g, n->in[1], scales, nscales);
        n->op = TS_OP_MATMUL_I8DYN;
        count++;
    }
    return count;
}
