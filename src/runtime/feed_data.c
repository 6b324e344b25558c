/* feed_data.c — ts_program_feed_data: an input fed from the caller's memory, copied once into the
 * program's buffer (no host tensor in between), for bindings that hold their own arrays. */
#include "core/core.h"

ts_status ts_program_feed_data(ts_program *p, const char *name, ts_dtype dtype, int ndim, const int64_t *shape,
                               const void *data) {
    if (!data || (ndim > 0 && !shape))
        return ts_err(TS_ERR_ARG, "ts_program_feed_data: %s is NULL", data ? "shape" : "data");
    if (ndim < 0 || ndim > TS_MAX_DIMS)
        return ts_err(TS_ERR_ARG, "ts_program_feed_data: rank %d is outside 0..%d", ndim, TS_MAX_DIMS);
    /* a view of the caller's memory: ts_program_feed checks dtype and shape and copies from it */
    struct ts_tensor view = {.dtype = dtype, .ndim = ndim, .data = (void *)data};
    for (int i = 0; i < ndim; i++) view.shape[i] = shape[i];
    return ts_program_feed(p, name, &view);
}
