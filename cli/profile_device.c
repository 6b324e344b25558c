/*
 * profile_device.c — `tessera profile-device`: measure a device of this machine (GEMM per dtype,
 * memory and copy bandwidth, node overhead; ts_device_profile_measure) and cache its profile for
 * `tessera plan`, or list the profiles known (--list), or print one (--show NAME|FILE).
 */
#include "cli.h"
#include "options.h"
#include "tessera_apps.h"

static const char USAGE[] =
    "usage: tessera profile-device [--device DEV] [--seconds S] [--out FILE]\n"
    "       tessera profile-device --list\n"
    "       tessera profile-device --show NAME|FILE\n"
    "  Measures device DEV of this machine (default cpu; any device of this build, e.g. opencl:0): GEMMs\n"
    "  of BERT's shapes in each dtype it runs (f32, bf16, f16), memory bandwidth, host <-> device copies and\n"
    "  the time of a node, in about S seconds (default 10). Writes the profile to the cache that\n"
    "  `tessera plan` reads ($XDG_CACHE_HOME/tessera/profiles, else ~/.cache/tessera/profiles), or to FILE\n"
    "  with --out, and prints it.\n";

/* "62.5 T" + unit: value with an SI prefix into buf. */
static const char *si(double v, const char *unit, char *buf, size_t cap) {
    static const char *const pre[] = {"", "k", "M", "G", "T", "P"};
    int i = 0;
    while (i < 5 && v >= 999.5) v /= 1000, i++;
    snprintf(buf, cap, "%.3g %s%s", v, pre[i], unit);
    return buf;
}

/* A duration in us / ms. */
static const char *dur(double s, char *buf, size_t cap) {
    if (s < 1e-3) snprintf(buf, cap, "%.3g us", s * 1e6);
    else snprintf(buf, cap, "%.3g ms", s * 1e3);
    return buf;
}

static void print_profile(const ts_device_profile *p) {
    char a[32], b[32], c[32];
    printf("profile %s: %s%s\n", p->name, p->description, p->measured ? " (measured)" : "");
    printf("  memory            %s\n", si(p->memory_bytes, "B", a, sizeof a));
    if (p->streaming_bytes > 0)
        printf("  streaming memory  %s at %s\n", si(p->streaming_bytes, "B", a, sizeof a), si(p->streaming_bw, "B/s", b, sizeof b));
    else printf("  streaming memory  none\n");
    printf("  dtype    peak          eff_matmul\n");
    for (int d = TS_F32; d <= TS_F16; d++) {
        if (p->peak_flops[d] > 0)
            printf("  %-8s %-13s %.3g\n", ts_dtype_name((ts_dtype)d), si(p->peak_flops[d], "FLOP/s", a, sizeof a), p->eff_matmul[d]);
        else printf("  %-8s -             (not computed in)\n", ts_dtype_name((ts_dtype)d));
    }
    printf("  memory bandwidth  %s x eff_mem %.3g\n", si(p->mem_bw, "B/s", a, sizeof a), p->eff_mem);
    if (p->mem_bw_thread > 0) printf("  one thread        %s of it\n", si(p->mem_bw_thread, "B/s", a, sizeof a));
    printf("  link              %s each way, %s per transfer\n", si(p->link_bw, "B/s", a, sizeof a), dur(p->link_latency, b, sizeof b));
    printf("  between hosts     %s each way, %s per transfer; %d device%s per host\n", si(p->host_bw, "B/s", a, sizeof a),
           dur(p->host_latency, b, sizeof b), p->devices_per_host, p->devices_per_host == 1 ? "" : "s");
    printf("  node overhead     %s\n", dur(p->node_overhead, a, sizeof a));
    if (p->ngemm) {
        printf("  measured GEMMs (C[m, n] = A[m, k] B[k, n]):\n  dtype       m      n      k  rate\n");
        for (int i = 0; i < p->ngemm; i++)
            printf("  %-5s %6lld %6lld %6lld  %s\n", ts_dtype_name(p->gemm[i].dtype), (long long)p->gemm[i].m,
                   (long long)p->gemm[i].n, (long long)p->gemm[i].k, si(p->gemm[i].flops, "FLOP/s", c, sizeof c));
    }
    printf("sources:\n");
    for (const char *l = p->sources; *l;) {
        const char *nl = strchr(l, '\n');
        int n = nl ? (int)(nl - l) : (int)strlen(l);
        printf("  %.*s\n", n, l);
        l += n + (nl != NULL);
    }
}

/* Measure `device`, write it to out (NULL: the cache), print it. */
static int measure(const char *device, double seconds, const char *out) {
    char path[4096];
    if (!out) {
        if (ts_device_profile_cache_path(device, path, sizeof path)) return cli_fail("profile-device", "", 2);
        out = path;
    }
    fprintf(stderr, "tessera profile-device: measuring %s for about %g s...\n", device, seconds > 0 ? seconds : 10);
    ts_device_profile *p = calloc(1, sizeof *p);
    if (!p) return 1;
    p->struct_size = sizeof *p;
    int rc = 0;
    ts_status s = ts_device_profile_measure(device, seconds, p);
    if (s) rc = cli_fail("profile-device", "", s == TS_ERR_NOT_FOUND || s == TS_ERR_ARG ? 2 : 1); /* an unknown device: 2 */
    else if (ts_device_profile_save(out, p)) rc = cli_fail("profile-device", "", 1);
    else {
        print_profile(p);
        printf("written to %s\n", out);
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
        rc = !p ? 1 : ts_device_profile_load(show, p) ? cli_fail("profile-device", "", 2) : (print_profile(p), 0);
        free(p);
    } else
        rc = measure(device ? device : "cpu", seconds > 0 ? seconds : 0, out);
done:
    cli_opts_free(&os);
    return rc;
}
