/*
 * profile_print.c — a device profile in words (tessera_plan.h: ts_device_profile_print), as
 * `tessera profile-device` shows it: each figure with its unit, the measured GEMMs, the sources.
 */
#include "common/app.h"

#include <stdio.h>

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

ts_status ts_device_profile_print(const ts_device_profile *p, ts_write_fn write, void *ctx) {
    if (!p || !write) return ts_set_error(TS_ERR_ARG, "ts_device_profile_print: %s is NULL", p ? "write" : "p");
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f) return ts_set_error(TS_ERR_NOMEM, "ts_device_profile_print: out of memory");
    char a[32], b[32], c[32];
    fprintf(f, "profile %s: %s%s\n", p->name, p->description, p->measured ? " (measured)" : "");
    fprintf(f, "  memory            %s\n", si(p->memory_bytes, "B", a, sizeof a));
    if (p->streaming_bytes > 0)
        fprintf(f, "  streaming memory  %s at %s\n", si(p->streaming_bytes, "B", a, sizeof a),
                si(p->streaming_bw, "B/s", b, sizeof b));
    else fprintf(f, "  streaming memory  none\n");
    fprintf(f, "  dtype    peak          eff_matmul\n");
    for (int d = TS_F32; d <= TS_F16; d++) {
        if (p->peak_flops[d] > 0)
            fprintf(f, "  %-8s %-13s %.3g\n", ts_dtype_name((ts_dtype)d), si(p->peak_flops[d], "FLOP/s", a, sizeof a),
                    p->eff_matmul[d]);
        else fprintf(f, "  %-8s -             (not computed in)\n", ts_dtype_name((ts_dtype)d));
    }
    fprintf(f, "  memory bandwidth  %s x eff_mem %.3g\n", si(p->mem_bw, "B/s", a, sizeof a), p->eff_mem);
    if (p->mem_bw_thread > 0) fprintf(f, "  one thread        %s of it\n", si(p->mem_bw_thread, "B/s", a, sizeof a));
    fprintf(f, "  link              %s each way, %s per transfer\n", si(p->link_bw, "B/s", a, sizeof a),
            dur(p->link_latency, b, sizeof b));
    fprintf(f, "  between hosts     %s each way, %s per transfer; %d device%s per host\n",
            si(p->host_bw, "B/s", a, sizeof a), dur(p->host_latency, b, sizeof b), p->devices_per_host,
            p->devices_per_host == 1 ? "" : "s");
    fprintf(f, "  node overhead     %s\n", dur(p->node_overhead, a, sizeof a));
    if (p->ngemm) {
        fprintf(f, "  measured GEMMs (C[m, n] = A[m, k] B[k, n]):\n  dtype       m      n      k  rate\n");
        for (int i = 0; i < p->ngemm; i++)
            fprintf(f, "  %-5s %6lld %6lld %6lld  %s\n", ts_dtype_name(p->gemm[i].dtype), (long long)p->gemm[i].m,
                    (long long)p->gemm[i].n, (long long)p->gemm[i].k, si(p->gemm[i].flops, "FLOP/s", c, sizeof c));
    }
    for (int d = TS_F32; d <= TS_F16; d++)
        if (p->attention_fwd_flops[d] > 0 || p->attention_bwd_flops[d] > 0)
            fprintf(f, "  attention (fused) %-5s forward %s, backward %s\n", ts_dtype_name((ts_dtype)d),
                    si(p->attention_fwd_flops[d], "FLOP/s", a, sizeof a), si(p->attention_bwd_flops[d], "FLOP/s", b, sizeof b));
    fprintf(f, "sources:\n");
    for (const char *l = p->sources; *l;) {
        const char *nl = strchr(l, '\n');
        int n = nl ? (int)(nl - l) : (int)strlen(l);
        fprintf(f, "  %.*s\n", n, l);
        l += n + (nl != NULL);
    }
    if (fclose(f) != 0 || !text) {
        free(text);
        return ts_set_error(TS_ERR_NOMEM, "ts_device_profile_print: out of memory");
    }
    write(ctx, text, len);
    free(text);
    return TS_OK;
}
