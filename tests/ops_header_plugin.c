/*
 * ops_header_plugin.c — what a device plugin sees of tessera: compiled by the ctest case
 * test_ops_header_plugin with only include/ and the build's generated include/ on the path
 * (-std=c11 -pedantic -Werror -fsyntax-only), so tessera_ops.h must be self-contained and clean.
 * The function is the shape of a plugin's supports(): the op by name, its attributes decoded.
 */
#include "tessera_ops.h"

#include <string.h>

int ops_header_plugin_supports(const ts_abi_node *n);

int ops_header_plugin_supports(const ts_abi_node *n) {
    if (!strcmp(n->op, TS_OPNAME_CONV2D)) {
        ts_attrs_conv2d c = ts_attrs_conv2d_of(n);
        return c.groups == 1 && c.dilation_h == 1 && c.dilation_w == 1;
    }
    if (!strcmp(n->op, TS_OPNAME_MATH)) {
        ts_attrs_math m = ts_attrs_math_of(n);
        return m.fn == TS_MATH_SIN || m.fn == TS_MATH_COS;
    }
    if (!strcmp(n->op, TS_OPNAME_RESHAPE)) return TS_OP_RESHAPE_ALIAS_IN == 0; /* no kernel: a view */
    const ts_op_info *info = ts_op_info_find(n->op);
    return info && info->writes == 0 && ts_ops_binop_name(0) != NULL;
}
