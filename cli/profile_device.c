/*
 * profile_device.c — `tessera profile-device`: measure a device of this machine (GEMM per dtype,
 * memory and copy bandwidth, node overhead; ts_device_profile_measure) and cache its profile for
 * `tessera plan`, or list the profiles known (--list), or print one (--show NAME|FILE).
 */
#include "cli.h"
#include "tessera.h"

static const char USAGE[] =
    "usage: tessera profile-device [--device DEV] [--seconds S] [--out FILE]\n"
    "       tessera profile-device --list\n"
    "       tessera profile-device --show NAME|FILE\n"
    "  Measures device DEV of this machine (default cpu; any device of this build, e.g. opencl:0): GEMMs\n"
    "  of BERT's shapes in each dtype it runs (f32, bf16, f16), memory bandwidth, host <-> device copies and\n"
    "  the time of a node, in about S seconds (default 10). Writes the profile to the cache that\n"
    "  `tessera plan` reads ($XDG_CACHE_HOME/tessera/profiles, else ~/.cache/tessera/profiles), or to FILE\n"
    "  with --out, and prints it.\n"
    "  --list        the profiles found: $TESSERA_PROFILE_PATH, the cache, the installed ones (ipu-mk2,\n"
    "                ipu-bow, h200), with where each was found\n"
    "  --show NAME   print the profile NAME (or the file FILE.json / a path) and the source of each figure\n";

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
    const char *device = NULL, *out = NULL, *show = NULL, *v;
    double seconds = 0;
    int list = 0, bad = 0;
    for (int i = 1; i < argc && !bad; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) return fputs(USAGE, stdout), 0;
        if (!strcmp(argv[i], "--list")) list = 1;
        else if ((v = cli_value(argc, argv, &i, "--device", "profile-device", &bad))) device = v;
        else if ((v = cli_value(argc, argv, &i, "--out", "profile-device", &bad))) out = v;
        else if ((v = cli_value(argc, argv, &i, "--show", "profile-device", &bad))) show = v;
        else if ((v = cli_value(argc, argv, &i, "--seconds", "profile-device", &bad))) {
            char *end;
            errno = 0;
            seconds = strtod(v, &end);
            if (errno || end == v || *end || !(seconds > 0) || seconds > 3600) {
                fprintf(stderr, "tessera profile-device: --seconds wants a number of seconds in (0, 3600], not '%s'\n", v);
                return 2;
            }
        } else if (!bad) {
            fprintf(stderr, "tessera profile-device: unknown argument '%s'\n%s", argv[i], USAGE);
            return 2;
        }
    }
    if (bad) return 2;
    int measuring = device || out || seconds > 0;
    if (list + !!show + measuring > 1) {
        fprintf(stderr, "tessera profile-device: --list, --show and measuring (--device, --seconds, --out) go one at a time\n");
        return 2;
    }
    if (list) return ts_device_profile_list(ts_write_stdio, stdout) ? cli_fail("profile-device", "", 1) : 0;
    if (show) {
        ts_device_profile *p = calloc(1, sizeof *p);
        if (!p) return 1;
        int rc = ts_device_profile_load(show, p) ? cli_fail("profile-device", "", 2) : (print_profile(p), 0);
        free(p);
        return rc;
    }
    return measure(device ? device : "cpu", seconds, out);
}
