/* init.c — parameter initializers (ts_init values) as functions, so that a binding can call them. */
#include "tessera.h"

ts_init ts_init_zeros(void) { return (ts_init){TS_INIT_ZEROS, 0, 0}; }
ts_init ts_init_ones(void) { return (ts_init){TS_INIT_ONES, 0, 0}; }
ts_init ts_init_const(float v) { return (ts_init){TS_INIT_CONST, v, 0}; }
ts_init ts_init_uniform(float lo, float hi) { return (ts_init){TS_INIT_UNIFORM, lo, hi}; }
ts_init ts_init_normal(float std) { return (ts_init){TS_INIT_NORMAL, 0, std}; }
