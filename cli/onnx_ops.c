/*
 * onnx_ops.c — `tessera onnx-ops`: the ONNX importer's op table (ts_onnx_op_info) as the
 * markdown table of docs/onnx.md, one row per op type with its opsets.
 */
#include "cli.h"
#include "options.h"
#include "tessera.h"

static const char *USAGE =
    "  Prints the ONNX ops the importer maps, with the opsets each covers, as the markdown table of\n"
    "  docs/onnx.md's \"Ops and opsets\".\n";

static int by_name(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int cli_onnx_ops(int argc, char **argv) {
    cli_optset os; /* no options of its own: --help, --config, and an error for anything else */
    int rc = cli_opts_parse(&os, "onnx-ops", USAGE, NULL, 0, argc, argv);
    cli_opts_free(&os);
    if (rc != 1) return rc;
    /* one row per op type, its opset ranges joined, sorted by name */
    int n = ts_onnx_num_ops();
    const char **ops = calloc((size_t)n + 1, sizeof *ops);
    if (!ops) return 1;
    int nops = 0;
    for (int i = 0; i < n; i++) {
        const char *op = ts_onnx_op_info(i, NULL, NULL);
        int seen = 0;
        for (int k = 0; k < nops && !seen; k++) seen = !strcmp(ops[k], op);
        if (!seen) ops[nops++] = op;
    }
    qsort(ops, (size_t)nops, sizeof *ops, by_name);
    printf("| ONNX op | opsets |\n|---|---|\n");
    for (int k = 0; k < nops; k++) {
        printf("| %s | ", ops[k]);
        /* the ranges of its entries, in table order, contiguous ones joined (Resize 10, 11-17: 10-17) */
        int first = 1, lo = 0, hi = -1;
        for (int i = 0; i <= n; i++) {
            int a = 0, b = -1;
            if (i < n && strcmp(ts_onnx_op_info(i, &a, &b), ops[k])) continue;
            if (i < n && hi >= 0 && a == hi + 1) {
                hi = b;
                continue;
            }
            if (hi >= 0) {
                printf(lo == hi ? "%s%d" : "%s%d-%d", first ? "" : ", ", lo, hi);
                first = 0;
            }
            lo = a, hi = b;
        }
        printf(" |\n");
    }
    free(ops);
    return 0;
}
