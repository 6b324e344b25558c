/* struct_size.c — the check of a public struct's struct_size (the rule is in tessera.h). */
#include "core/core.h"

ts_status ts_check_struct_size(size_t struct_size, size_t base, const char *fn, const char *what) {
    if (struct_size == 0 || struct_size >= base) return TS_OK;
    return ts_err(TS_ERR_ARG, "%s: %s.struct_size is %zu, less than the %zu bytes of its first layout (0.1.0); set it "
                  "to sizeof(%s), or 0", fn, what, struct_size, base, what);
}

ts_status ts_struct_read(void *out, size_t out_size, const void *in, size_t base, const char *fn, const char *what) {
    memset(out, 0, out_size);
    if (!in) return TS_OK;
    size_t given = *(const size_t *)in;
    if (ts_check_struct_size(given, base, fn, what)) return ts_last_status();
    size_t n = given ? given : base;
    memcpy(out, in, n < out_size ? n : out_size);
    return TS_OK;
}
