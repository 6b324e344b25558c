/*
 * bench_util.h — what several bench programs share: a monotonic clock, uniform random floats, a
 * comparison for qsort of doubles, a median, reading the numbers a child printed, and running a function in a child process with its stdout captured and its
 * peak resident set measured (wait4's ru_maxrss: everything the process touched, libraries
 * included). Header-only (static functions): each bench/<name>.c is one program.
 */
#ifndef TS_BENCH_UTIL_H
#define TS_BENCH_UTIL_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static inline double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* A uniform float in [-1, 1) from a xorshift64 generator, the same sequence in every program
 * (its state starts at one constant, per program). */
static inline float urand(void) {
    static uint64_t state = 0x9e3779b97f4a7c15ull;
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return (float)((state >> 40) * (1.0 / 16777216.0)) * 2.f - 1.f;
}

static inline int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The median of v[0 .. n) (sorts v in place); NaN when n is 0. */
static inline double median_inplace(double *v, int n) {
    if (n <= 0) return 0.0 / 0.0;
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* The numbers after the first `key` in buf, up to the end of that line or a ']' (a "key 1 2 3"
 * line, or the JSON list after "key":), at most max of them into v; 0 when key is absent. */
static inline int bench_numbers(const char *buf, const char *key, double *v, int max) {
    const char *s = strstr(buf, key);
    if (!s) return 0;
    s += strlen(key);
    int n = 0;
    while (*s && *s != '\n' && *s != ']' && n < max) {
        char *e = (char *)s;
        if ((*s >= '0' && *s <= '9') || *s == '-' || *s == '.') v[n] = strtod(s, &e);
        if (e == s) s++; /* not a number (a lone '-' too): skip the character */
        else s = e, n++;
    }
    return n;
}

/* Run fn(arg) in a child process with its stdout into buf (n bytes, NUL-terminated, the rest cut
 * off). Returns the child's peak RSS in KiB, or -1 when it did not exit 0 (its wait status in
 * *status). The child must not rely on OpenMP state from this process: GNU libgomp hangs in a
 * forked child whose parent ran a parallel region, so parents run none themselves. */
static inline long bench_run_child(void (*fn)(const void *), const void *arg, char *buf, size_t n, int *status) {
    int fd[2];
    if (pipe(fd)) {
        fprintf(stderr, "bench: pipe: %s\n", strerror(errno));
        exit(1);
    }
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "bench: fork: %s\n", strerror(errno));
        exit(1);
    }
    if (pid == 0) {
        close(fd[0]);
        dup2(fd[1], 1);
        close(fd[1]);
        fn(arg);
        fflush(stdout);
        _exit(0);
    }
    close(fd[1]);
    size_t len = 0;
    ssize_t got;
    char sink[4096];
    while ((got = read(fd[0], len + 1 < n ? buf + len : sink, len + 1 < n ? n - 1 - len : sizeof sink)) > 0)
        if (len + 1 < n) len += (size_t)got;
    buf[len] = 0;
    close(fd[0]);
    struct rusage ru;
    if (wait4(pid, status, 0, &ru) < 0) {
        fprintf(stderr, "bench: wait4: %s\n", strerror(errno));
        exit(1);
    }
    return WIFEXITED(*status) && WEXITSTATUS(*status) == 0 ? ru.ru_maxrss : -1;
}

#endif
