/*
 * test_ops_header.c — the op contract, tessera_ops.h (generated from src/graph/ops.def and
 * src/graph/op_attrs.def by tools/gen_ops_header.c), agrees with the ops tessera has: every op of
 * ops.def has its entry, in order, with the name ts_op_get gives; the aliasing and in-place facts
 * are the op definitions' flags (what the memory planner acts on); the sub-function numbers and
 * names are those of the public enums and the kernels; and the decoders give back what was set,
 * from a plan's ts_abi_node and from a graph's ts_node (TS_NODE_ATTRS, the CPU kernels' way);
 * matmul's operand geometry (ts_matmul_geom_of) is numpy's.
 * tessera_ops.h is included first, alone, so it compiles without anything before it; the
 * ctest case test_ops_header_plugin compiles tests/ops_header_plugin.c with only the public
 * include directories, as a plugin would.
 */
#include "tessera_ops.h"

#include "test_util.h"

#include "graph/op_attrs.h"
#include "graph/opdef.h"

typedef struct def_op {
    const char *name;
    int alias_in, inplace_in;
    unsigned writes;
} def_op;

static const def_op def_ops[] = {
#define TS_OPA(op, alias_in, inplace_in, writes, doc) {#op, alias_in, inplace_in, writes},
#include "graph/op_attrs.def"
};
#define NDEF (int)(sizeof def_ops / sizeof def_ops[0])

/* Every op of ops.def has its entry of op_attrs.def, in order, named as its definition. */
static void test_every_op_listed(void) {
    CHECK(NDEF == TS_OP_COUNT, "op_attrs.def lists %d ops, ops.def %d", NDEF, (int)TS_OP_COUNT);
    CHECK(TS_OPS_COUNT == TS_OP_COUNT, "tessera_ops.h has %d ops", TS_OPS_COUNT);
    for (int k = 0; k < NDEF && k < TS_OP_COUNT; k++) {
        const ts_op_def *d = ts_op_get(k);
        CHECK(!strcmp(d->name, def_ops[k].name), "op %d is %s, op_attrs.def says %s", k, d->name, def_ops[k].name);
        const ts_op_info *info = ts_op_info_find(d->name);
        CHECK(info && info->op_id == k && !strcmp(info->name, d->name), "ts_op_info_find(%s)", d->name);
    }
    CHECK(ts_op_info_find("no_such_op") == NULL && ts_op_info_find(NULL) == NULL, "unknown names");
    CHECK(!strcmp(TS_OPNAME_MATMUL, "matmul") && TS_OPID_MATMUL == TS_OP_MATMUL, "matmul's macros");
    CHECK(!strcmp(TS_OPNAME_CONV2D, ts_op_get(TS_OPID_CONV2D)->name), "conv2d's macros");
    CHECK(TS_OPID_DFT == TS_OP_DFT && TS_OPID_ADD == TS_OP_ADD, "the build's ids");
}

/* Aliasing, in place and written inputs are the definitions' TS_OPF_ALIAS0, TS_OPF_INPLACE0 and
 * TS_OPF_SIDE_EFFECT. */
static void test_alias_facts(void) {
    for (int k = 0; k < NDEF && k < TS_OP_COUNT; k++) {
        const ts_op_def *d = ts_op_get(k);
        const def_op *e = &def_ops[k];
        int alias = (d->flags & TS_OPF_ALIAS0) ? 0 : -1, inplace = (d->flags & TS_OPF_INPLACE0) ? 0 : -1;
        CHECK(e->alias_in == alias, "%s: alias_in %d, its definition says %d", e->name, e->alias_in, alias);
        CHECK(e->inplace_in == inplace, "%s: inplace_in %d, its definition says %d", e->name, e->inplace_in, inplace);
        CHECK(!e->writes == !(d->flags & TS_OPF_SIDE_EFFECT), "%s: writes 0x%x but side effect %d", e->name,
              e->writes, !!(d->flags & TS_OPF_SIDE_EFFECT));
        CHECK(e->writes < (1u << d->max_in), "%s: writes 0x%x names an input past max_in %d", e->name, e->writes,
              d->max_in);
        const ts_op_info *info = ts_op_info_find(e->name);
        CHECK(info && info->alias_in == alias && info->inplace_in == inplace && info->writes == e->writes,
              "%s: ts_op_info", e->name);
    }
    CHECK(TS_OP_RESHAPE_ALIAS_IN == 0 && TS_OP_RESHAPE_INPLACE_IN == -1, "reshape");
    CHECK(TS_OP_ADD_INPLACE_IN == 0 && TS_OP_MATMUL_INPLACE_IN == -1 && TS_OP_MATMUL_ALIAS_IN == -1, "add, matmul");
    CHECK(TS_OP_ADAMW_UPDATE_WRITES == 0x39 && TS_OP_MATMUL_WRITES == 0, "adamw_update writes param, m, v, t");
}

/* The sub-function sets: the numbers and names the kernels and the public API use. */
static void test_sub_functions(void) {
    CHECK(TS_OPS_MATH_FN_COUNT == TS_MATH_COUNT, "math: %d functions, ts_math_fn %d", TS_OPS_MATH_FN_COUNT,
          (int)TS_MATH_COUNT);
    for (int k = 0; k < TS_MATH_COUNT; k++)
        CHECK(ts_ops_math_fn_name(k) && !strcmp(ts_ops_math_fn_name(k), ts_math_fn_name((ts_math_fn)k)),
              "math %d: %s vs %s", k, ts_ops_math_fn_name(k), ts_math_fn_name((ts_math_fn)k));
    CHECK(ts_ops_math_fn_name(TS_MATH_COUNT) == NULL && ts_ops_math_fn_name(-1) == NULL, "out of range");
    CHECK(TS_OPS_BINOP_COUNT == TS_BIN_COUNT, "binary: %d, ts_binop %d", TS_OPS_BINOP_COUNT, (int)TS_BIN_COUNT);
    CHECK(!strcmp(ts_ops_binop_name(TS_BIN_SHR), "shr") && !strcmp(ts_ops_binop_name(TS_BIN_EQUAL), "equal"), "binop");
    CHECK(TS_PRED_ISNAN == 0 && TS_PRED_ISINF == 1 && TS_PRED_NOT == 2 && TS_OPS_PREDICATE_FN_COUNT == 3, "predicate");
    CHECK(!strcmp(ts_ops_matmul_act_name(TS_MATMUL_ACT_GELU_TANH), "gelu_tanh"), "matmul act");
    CHECK(!strcmp(ts_ops_lr_kind_name(TS_LR_COSINE), "cosine") && TS_OPS_LR_KIND_COUNT == 4, "lr kinds");
}

/* Set every attribute slot to a distinct value, decode each op's attributes from a plan node and
 * from a graph node, and compare every field with the slot op_attrs.def gives it. */
static void test_decoders_round_trip(void) {
    ts_abi_node nd;
    ts_node tn;
    memset(&nd, 0, sizeof nd), memset(&tn, 0, sizeof tn);
    nd.struct_size = sizeof nd;
    for (int k = 0; k < TS_ABI_MAX_IATTR; k++) nd.iattr[k] = tn.attr.i[k] = ((int64_t)k << 40) + 1000 + 7 * k;
    for (int k = 0; k < 4; k++) nd.fattr[k] = tn.attr.f[k] = 0.25f + (float)k;
    nd.niattr = tn.attr.ni = 5;
#define TS_IATTR(op, field, k, doc)                                                                \
    {                                                                                              \
        ts_attrs_##op a = ts_attrs_##op##_of(&nd), b = TS_NODE_ATTRS(op, &tn);                     \
        CHECK(a.field == nd.iattr[k] && b.field == a.field, #op "." #field " is not i[%d]", k);    \
    }
#define TS_FATTR(op, field, k, doc)                                                                \
    {                                                                                              \
        ts_attrs_##op a = ts_attrs_##op##_of(&nd), b = TS_NODE_ATTRS(op, &tn);                     \
        CHECK(a.field == nd.fattr[k] && b.field == a.field, #op "." #field " is not f[%d]", k);    \
    }
#define TS_FATTR_OR(op, field, k, v, doc) TS_FATTR(op, field, k, doc)
#define TS_IARRAY(op, field, first, len, doc)                                                      \
    {                                                                                              \
        ts_attrs_##op a = ts_attrs_##op##_of(&nd), b = TS_NODE_ATTRS(op, &tn);                     \
        CHECK(sizeof a.field / sizeof a.field[0] == (len), #op "." #field " has %d slots", len);   \
        for (int j = 0; j < (len); j++)                                                            \
            CHECK(a.field[j] == nd.iattr[(first) + j] && b.field[j] == a.field[j], #op "." #field "[%d]", j); \
    }
#define TS_NATTR(op, field, doc)                                                                   \
    {                                                                                              \
        ts_attrs_##op a = ts_attrs_##op##_of(&nd), b = TS_NODE_ATTRS(op, &tn);                     \
        CHECK(a.field == 5 && b.field == 5, #op "." #field " is not the count set");               \
    }
#include "graph/op_attrs.def"
    nd.fattr[0] = 0.f;
    CHECK(ts_attrs_matmul_of(&nd).alpha == 1.f, "matmul's alpha 0 stands for 1");
}

/* The attributes a builder sets, read back by name (conv's, the CPU kernels' decoders). */
static void test_builder_attrs(void) {
    ts_graph *g = ts_graph_new();
    ts_value x = ts_input(g, "x", TS_F32, 4, (int64_t[]){1, 4, 9, 9});
    ts_value w = ts_input(g, "w", TS_F32, 4, (int64_t[]){6, 2, 3, 3});
    ts_conv_opts o = {{2, 1}, {1, 0, 1, 2}, {1, 2}, 2};
    ts_value y = ts_conv2d(g, x, w, TS_NONE, &o);
    CHECK(y != TS_NONE, "conv2d: %s", ts_last_error());
    if (y != TS_NONE) {
        const ts_node *n = &g->nodes[g->vals[y].node];
        ts_attrs_conv2d c = TS_NODE_ATTRS(conv2d, n);
        CHECK(n->op == TS_OP_CONV2D && c.stride_h == 2 && c.stride_w == 1, "stride");
        CHECK(c.pad_top == 1 && c.pad_left == 0 && c.pad_bottom == 1 && c.pad_right == 2, "pads");
        CHECK(c.dilation_h == 1 && c.dilation_w == 2 && c.groups == 2, "dilation, groups");
    }
    ts_graph_free(g);
}

/* matmul's geometry: the transposes and the numpy broadcast of the batch dims. */
static void test_matmul_geom(void) {
    /* a [2, 1, 3, 4] @ b [5, 4, 6]: batch [2, 5], a broadcast along the 5, b along the 2 */
    ts_matmul_geom q = ts_matmul_geom_of(4, (int64_t[]){2, 1, 3, 4}, 3, (int64_t[]){5, 4, 6}, 0, 0);
    CHECK(q.ok && q.nb == 2 && q.bshape[0] == 2 && q.bshape[1] == 5 && q.batch == 10, "batch dims");
    CHECK(q.M == 3 && q.K == 4 && q.Kb == 4 && q.N == 6, "M K N");
    CHECK(q.sa[0] == 12 && q.sa[1] == 0 && q.sb[0] == 0 && q.sb[1] == 24, "batch strides");
    CHECK(q.a_sm == 4 && q.a_sk == 1 && q.b_sk == 6 && q.b_sn == 1, "matrix strides");
    CHECK(ts_matmul_batch_offset(&q, q.sa, 7) == 12 && ts_matmul_batch_offset(&q, q.sb, 7) == 48, "offsets");
    /* a stored [4, 3] and b stored [6, 4]: the same product, transposed operands */
    q = ts_matmul_geom_of(2, (int64_t[]){4, 3}, 2, (int64_t[]){6, 4}, 1, 1);
    CHECK(q.ok && q.nb == 0 && q.batch == 1 && q.M == 3 && q.K == 4 && q.Kb == 4 && q.N == 6, "transposed");
    CHECK(q.a_sm == 1 && q.a_sk == 3 && q.b_sk == 1 && q.b_sn == 4, "transposed strides");
    q = ts_matmul_geom_of(3, (int64_t[]){2, 3, 4}, 3, (int64_t[]){3, 4, 6}, 0, 0);
    CHECK(!q.ok, "batch 2 and 3 do not broadcast");
}

int main(int argc, char **argv) {
    tu_args(argc, argv);
    RUN(test_every_op_listed);
    RUN(test_alias_facts);
    RUN(test_sub_functions);
    RUN(test_decoders_round_trip);
    RUN(test_builder_attrs);
    RUN(test_matmul_geom);
    return tu_finish("ops_header");
}
