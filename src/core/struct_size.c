/* struct_size.c — the check of a public struct's struct_size (the rule is in tessera.h). */
#include "core/core.h"

ts_status ts_check_struct_size(size_t struct_size, size_t base, const char *fn, const char *what) {
    if (struct_size == 0 || struct_size >= base) return TS_OK;
    return ts_err(TS_ERR_ARG, "%s: %s.struct_size is %zu, less than the %zu bytes of its first layout (0.1.0); set it "
                  "to sizeof(%s), or 0", fn, what, struct_size, base, what);
}
