/* fuse.c — STUB: the fusion pass, to be written. */
#include "runtime/program.h"
int ts_pass_fuse(ts_graph *g, uint8_t *alive, const uint8_t *pinned) { (void)g; (void)alive; (void)pinned; return 0; }
