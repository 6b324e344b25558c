/*
 * profile.h — what the device-profile files of apps/plan/ share: reading one profile file
 * (profile.c) for the lookup by name, the cache and the list (profile_find.c).
 */
#ifndef TS_PLAN_PROFILE_H
#define TS_PLAN_PROFILE_H

#include "common/app.h"

/* Read the profile JSON file at path into *out (an output struct: out->struct_size set, 0: the base
 * layout; ts_struct_write; untouched on error). Errors are TS_ERR_IO (cannot
 * read, not JSON: the line and column) or TS_ERR_ARG (a field missing, of the wrong type, negative,
 * out of range, unknown), each message naming the file and the field; they start with `fn`. */
ts_status ts_profile_read(const char *fn, const char *path, ts_device_profile *out);

/* 1 when name is a profile name that can be a file name: 1..63 of [A-Za-z0-9_.:+-], not
 * starting with '.'. */
int ts_profile_name_ok(const char *name);

#endif
