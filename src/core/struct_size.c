/* struct_size.c — reading and filling a public struct that may grow (the rule is in tessera.h;
 * the helpers are described in tessera_support.h, the core's base layouts are in struct_base.h). */
#include "core/core.h"

static ts_status check_size(size_t struct_size, size_t base, const char *fn, const char *what) {
    if (struct_size == 0 || struct_size >= base) return TS_OK;
    return ts_err(TS_ERR_ARG, "%s: %s.struct_size is %zu, less than the %zu bytes of its base layout; set it "
                  "to sizeof(%s), or 0", fn, what, struct_size, base, what);
}

ts_status ts_struct_read(void *out, size_t out_size, const void *in, size_t base, size_t align, const char *fn,
                         const char *what) {
    memset(out, 0, out_size);
    if (!in) return TS_OK;
    size_t given = *(const size_t *)in;
    if (check_size(given, base, fn, what)) return ts_last_status();
    size_t n = given <= (base + align - 1) / align * align ? base : given; /* as TS_BASE_SIZEOF */
    memcpy(out, in, n < out_size ? n : out_size);
    return TS_OK;
}

ts_status ts_struct_write(void *out, const void *filled, size_t filled_size, size_t base, const char *fn,
                          const char *what) {
    size_t given = *(const size_t *)out;
    if (check_size(given, base, fn, what)) return ts_last_status();
    size_t n = given ? given : base;
    if (n > filled_size) n = filled_size;
    memcpy(out, filled, n);
    *(size_t *)out = n;
    return TS_OK;
}
