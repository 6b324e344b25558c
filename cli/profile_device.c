/*
 * profile_device.c — `tessera profile-device`: a device of this machine measured and its profile
 * cached for `tessera plan`, the profiles known listed, or one printed (apps/plan:
 * ts_device_profile_*); here its flags and what it prints.
 */
#include "cli.h"
#include "options.h"

static const char USAGE[] =
    "usage: tessera profile-device [--device DEV] [--seconds S] [--out FILE]\n"
    "       tessera profile-device --list\n"
    "       tessera profile-device --show NAME|FILE\n"
    "  Measures device DEV of this machine (default cpu; any device of this build, e.g. opencl:0): GEMMs\n"
    "  of BERT's shapes in each dtype it runs (f32, bf16, f16), memory bandwidth, host <-> device copies and\n"
    "  the time of a node, in about S seconds (default 10). Writes the profile to the cache that\n"
    "  `tessera plan` reads ($XDG_CACHE_HOME/tessera/profiles, else ~/.cache/tessera/profiles), or to FILE\n"
    "  with --out, and prints it.\n";

/* Measure `device`, write it to out (NULL: the cache), print it. */
static int measure(const char *device, double seconds, const char *out) {
    char path[4096];
    fprintf(stderr, "tessera profile-device: measuring %s for about %g s...\n", device, seconds > 0 ? seconds : 10);
    ts_device_profile *p = calloc(1, sizeof *p);
    if (!p) return 1;
    p->struct_size = sizeof *p;
    ts_status s = ts_device_profile_measure_save(device, seconds, out, p, path, sizeof path);
    int rc = s ? cli_fail("profile-device", "", s == TS_ERR_NOT_FOUND || s == TS_ERR_ARG ? 2 : 1) : 0;
    if (!s) {
        ts_device_profile_print(p, ts_write_stdio, stdout);
        printf("written to %s\n", path);
    }
    free(p);
    return rc;
}

int cli_profile_device(int argc, char **argv) {
    const char *device = NULL, *out = NULL, *show = NULL;
    double seconds = -1; /* -1: not given */
    int list = 0;
    const cli_opt opts[] = {
        {"device", CLI_STR, &device, 0, "DEV", "the device to measure (default cpu; e.g. opencl:0)", NULL},
        {"seconds", CLI_FLOAT, &seconds, 0, "S",
         "about how long the measurement takes (default 10, at most 3600)", NULL},
        {"out", CLI_STR, &out, 0, "FILE", "write the profile to FILE instead of the cache", NULL},
        {"list", CLI_FLAG, &list, 0, NULL,
         "the profiles found: $TESSERA_PROFILE_PATH, the cache, the installed ones\n"
         "(ipu-mk2, ipu-bow, h200), with where each was found", NULL},
        {"show", CLI_STR, &show, 0, "NAME",
         "print the profile NAME (or the file FILE.json / a path) and the source of\n"
         "each figure", NULL},
    };
    cli_optset os;
    int rc = cli_opts_parse(&os, "profile-device", USAGE, opts, (int)(sizeof opts / sizeof *opts), argc, argv);
    if (rc != 1) goto done;
    rc = 2;
    if (seconds != -1 && !(seconds > 0 && seconds <= 3600)) {
        fprintf(stderr, "tessera profile-device: --seconds wants a number of seconds in (0, 3600], not '%g'\n"
                        "(tessera profile-device --help shows the usage)\n", seconds);
        goto done;
    }
    int measuring = device || out || seconds > 0;
    if (list + !!show + measuring > 1) {
        fprintf(stderr, "tessera profile-device: --list, --show and measuring (--device, --seconds, --out) go one at a "
                        "time\n(tessera profile-device --help shows the usage)\n");
        goto done;
    }
    if (list) rc = ts_device_profile_list(ts_write_stdio, stdout) ? cli_fail("profile-device", "", 1) : 0;
    else if (show) {
        ts_device_profile *p = calloc(1, sizeof *p);
        if (p) p->struct_size = sizeof *p;
        rc = !p                                              ? 1
             : ts_device_profile_load(show, p)                   ? cli_fail("profile-device", "", 2)
             : ts_device_profile_print(p, ts_write_stdio, stdout) ? cli_fail("profile-device", "", 1)
                                                                 : 0;
        free(p);
    } else
        rc = measure(device ? device : "cpu", seconds > 0 ? seconds : 0, out);
done:
    cli_opts_free(&os);
    return rc;
}
