/*
 * test_cli_plugin_faults.c — a plugin that misbehaves, through `tessera pretrain`: each fault is
 * reported naming the plugin, the device and the call (and the nodes of an execute), the plugin's
 * own words kept; the run exits non-zero without a sanitizer report and leaves no output
 * directory behind. The faults come from the CPU backend built as a plugin
 * (backends/cpu/plugin.c, TESSERA_CPUPLUGIN_FAULT=KIND[:N]): an alloc that returns OK with a
 * NULL handle, an alloc that fails with its own message, a copy and an execute that fail, an
 * execute that fails without a message, and a crash (SIGSEGV) inside execute, which a fatal-
 * signal handler reports before the process dies of the signal (or, under AddressSanitizer,
 * before its report), and after which the command's own handler removes the unfinished output
 * directory. One device, and a pipeline whose failing stage runs on a worker thread.
 */
#include "test_util.h"
#include "cli_util.h"

#ifndef TS_CPU_PLUGIN
#define TS_CPU_PLUGIN "plugins/libtessera-cpuplugin.so"
#endif

static const char *PRE = "pretrain --vocab vocab.txt --corpus corpus.txt --max-len 24 --batch 2 --threads 1 --heads 2 "
                         "--layers 2 --hidden 32 --intermediate 64 --max-steps 2 --eval-every 2 --eval-batches 1";

static void test_setup(void) {
    write_corpus("corpus.txt");
    int rc = tessera(NULL, "vocab --out vocab.txt --size 120 corpus.txt");
    CHECK_RAN(rc, 0);
}

/* Pretrain on the plugin with fault (KIND[:N]) in layout devices; out is the --out directory. */
static int run_fault(const char *fault, const char *devices, const char *out) {
    setenv("TESSERA_CPUPLUGIN_FAULT", fault, 1);
    int rc = tessera(NULL, "--quiet --backend-plugin '%s' %s --devices %s --out %s", TS_CPU_PLUGIN, PRE, devices, out);
    unsetenv("TESSERA_CPUPLUGIN_FAULT");
    return rc;
}

/* A fault that is an error: exit 1 or 2, the message names the plugin's device and call and
 * holds want, no sanitizer report, no output directory. */
static void check_error(const char *fault, const char *devices, const char *call, const char *want) {
    int rc = run_fault(fault, devices, "out");
    CHECK(rc == 1 || rc == 2, "%s on %s: exit %d, want 1 or 2\nstdout: %s\nstderr: %s", fault, devices, rc, out_text,
          err_text);
    CHECK(strstr(err_text, "device cpuplugin") && strstr(err_text, call) && strstr(err_text, want),
          "%s on %s: the message should name device cpuplugin, \"%s\" and \"%s\":\n%s", fault, devices, call, want,
          err_text);
    CHECK(!strstr(err_text, "Sanitizer") && !strstr(err_text, "runtime error"), "%s: a sanitizer report:\n%s", fault,
          err_text);
    CHECK(!exists("out") && !exists("out/metrics.jsonl"), "%s on %s: an output directory was left behind", fault,
          devices);
}

static void test_alloc_null(void) {
    check_error("alloc-null:3", "cpuplugin:0", "alloc of", "returned OK with a NULL handle");
}

static void test_alloc_error(void) {
    check_error("alloc-error:3", "cpuplugin:0", "alloc of", "cpuplugin: the simulated device's memory pool is exhausted");
    CHECK(!strstr(err_text, "0.00 GiB"), "the plugin's message was replaced: %s", err_text);
}

static void test_copy(void) {
    check_error("copy:5", "cpuplugin:0", "copy_to_device of", "cpuplugin: simulated DMA timeout after 5000 ms");
}

static void test_execute(void) {
    check_error("execute:2", "cpuplugin:0", "execute of", "cpuplugin: simulated kernel launch failure (error -5)");
    CHECK(strstr(err_text, " nodes ("), "the nodes of the execute are not named: %s", err_text);
    /* on a pipeline's worker thread: stage 0 on the plugin, stage 1 on the CPU */
    check_error("execute:2", "cpuplugin:0,cpu:1", "execute of", "cpuplugin: simulated kernel launch failure (error -5)");
}

static void test_execute_silent(void) {
    check_error("execute-silent:2", "cpuplugin:0", "execute of", "the backend 'cpuplugin' gave no message");
}

/* A crash inside the plugin's execute: named on stderr, then the process dies of SIGSEGV (the
 * shell's exit 139), or AddressSanitizer reports the SEGV and exits 1. */
static void test_crash(void) {
    int rc = run_fault("crash:2", "cpuplugin:0", "crashed");
    int asan = strstr(err_text, "AddressSanitizer: SEGV") != NULL;
    CHECK(rc == 139 || rc == -1 || (asan && rc == 1), "exit %d, want death by SIGSEGV\nstderr: %s", rc, err_text);
    CHECK(strstr(err_text, "tessera: fatal signal SIGSEGV inside a backend call: plugin 'cpuplugin', device "
                           "cpuplugin: execute of "),
          "the crash is not named:\n%s", err_text);
    CHECK(!exists("crashed") && strstr(err_text, "the unfinished --out directory is removed"),
          "the crashed run's output directory was left behind:\n%s", err_text);
}

int main(int argc, char **argv) {
    tu_args(argc, argv);
    int rc = cli_setup("ts_cli_plugin_faults");
    if (rc) return rc;
    RUN(test_setup);
    RUN(test_alloc_null);
    RUN(test_alloc_error);
    RUN(test_copy);
    RUN(test_execute);
    RUN(test_execute_silent);
    RUN(test_crash);
    cli_cleanup("test_cli_plugin_faults");
    return tu_finish("test_cli_plugin_faults");
}
