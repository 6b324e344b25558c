/*
 * op_attrs.h — the CPU kernels' attribute decoders: the same functions a device plugin calls
 * through tessera_ops.h (generated from graph/op_attrs.def by tools/gen_ops_header.c), applied
 * to a graph node's ts_attrs instead of a plan's ts_abi_node, so that each op's attributes are
 * decoded in one place.
 *
 *   ts_attrs_conv2d c = TS_NODE_ATTRS(conv2d, n);   // c.stride_h, c.pad_top, c.groups, ...
 */
#ifndef TS_OP_ATTRS_H
#define TS_OP_ATTRS_H

#include "tessera_ops.h"
#include "graph/ir.h"

/* The attributes of node n (a const ts_node *) of op `op` (its ops.def name), as that op's
 * ts_attrs_<op> struct. */
#define TS_NODE_ATTRS(op, n) ts_attrs_##op##_from((n)->attr.i, (n)->attr.ni, (n)->attr.f)

/* A node's attributes and a plan node's are the same arrays. */
_Static_assert(sizeof(((ts_attrs *)0)->i) == sizeof(((ts_abi_node *)0)->iattr), "ts_attrs.i is ts_abi_node.iattr");
_Static_assert(sizeof(((ts_attrs *)0)->f) == sizeof(((ts_abi_node *)0)->fattr), "ts_attrs.f is ts_abi_node.fattr");

#endif
