/*
 * op_misc.c — host side of the optimizer and training-control ops (src/ops/optim.c, amp.c).
 */
#include "ocl.h"

const ocl_op ocl_ops_misc[] = {
    {NULL, NULL, NULL, NULL, NULL},
};
