/* version.c — the version of the library itself (ts_version), from the header's macros. */
#include "tessera.h"

#define TS_STR_(x) #x
#define TS_STR(x) TS_STR_(x)

const char *ts_version(void) {
    return TS_STR(TESSERA_VERSION_MAJOR) "." TS_STR(TESSERA_VERSION_MINOR) "." TS_STR(TESSERA_VERSION_PATCH);
}
