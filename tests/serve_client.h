/*
 * serve_client.h — talking to a `tessera serve` from a test or a bench: start the built command
 * in the background on a free loopback port (the port read from the line it prints), one HTTP/1.1
 * request over a socket (Connection: close), the resident memory of a process. Used by
 * tests/test_cli_serve.c and bench/serve_load.c.
 */
#ifndef TS_SERVE_CLIENT_H
#define TS_SERVE_CLIENT_H

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Start `cli serve ARGS` in folder wd (stdout to wd/serve.out, stderr to wd/serve.err) and wait
 * (up to 120 s) for the line naming its port. The pid, or -1 when it exited first (its exit code
 * in *rc) or never said. */
__attribute__((unused)) static pid_t sc_start(const char *cli_path, const char *wd, const char *args, int *port,
                                              int *rc) {
    char cmd[8192], out[512];
    snprintf(cmd, sizeof cmd, "exec '%s' serve %s >serve.out 2>serve.err", cli_path, args);
    snprintf(out, sizeof out, "%s/serve.out", wd);
    unlink(out);
    pid_t pid = fork();
    if (pid == 0) {
        if (chdir(wd) != 0) _exit(127);
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    *rc = -1;
    for (int i = 0; pid > 0 && i < 12000; i++) {
        int st;
        if (waitpid(pid, &st, WNOHANG) == pid) {
            *rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
            return -1;
        }
        FILE *f = fopen(out, "r");
        char line[512] = "";
        if (f) {
            if (!fgets(line, sizeof line, f)) line[0] = 0;
            fclose(f);
        }
        const char *p = strstr(line, "listening on http://");
        const char *colon = p ? strchr(p + 20, ':') : NULL;
        if (colon && strchr(line, '\n')) {
            *port = atoi(colon + 1);
            return pid;
        }
        usleep(10000);
    }
    if (pid > 0) kill(pid, SIGKILL), waitpid(pid, NULL, 0);
    return -1;
}

/* Send signal sig to the server and wait for it: its exit code, or -(the signal) it died of. */
__attribute__((unused)) static int sc_stop(pid_t pid, int sig) {
    int st;
    kill(pid, sig);
    if (waitpid(pid, &st, 0) != pid) return -1000;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -WTERMSIG(st);
}

/* A connected socket to 127.0.0.1:port, or -1. */
__attribute__((unused)) static int sc_connect(int port) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0) return -1;
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* Send one request on fd and read the answer to its end (the server closes): the whole response
 * into resp[cap] (cut to fit). The status, or -1 when nothing came back. */
__attribute__((unused)) static int sc_exchange(int fd, const char *method, const char *path, const char *body,
                                               char *resp, size_t cap) {
    size_t blen = body ? strlen(body) : 0;
    char head[512];
    int hl = snprintf(head, sizeof head,
                      "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Type: application/json\r\n"
                      "Content-Length: %zu\r\n\r\n", method, path, blen);
    if (send(fd, head, (size_t)hl, MSG_NOSIGNAL) != hl) return -1;
    for (size_t o = 0; o < blen;) {
        ssize_t k = send(fd, body + o, blen - o, MSG_NOSIGNAL);
        if (k <= 0) break; /* the server may answer (413) before taking the whole body */
        o += (size_t)k;
    }
    size_t n = 0;
    for (;;) {
        char tmp[16384];
        ssize_t k = recv(fd, tmp, sizeof tmp, 0);
        if (k <= 0) break;
        size_t take = (size_t)k < cap - 1 - n ? (size_t)k : cap - 1 - n;
        memcpy(resp + n, tmp, take);
        n += take;
    }
    resp[n] = 0;
    int code = -1;
    if (sscanf(resp, "HTTP/1.%*d %d", &code) != 1) return -1;
    return code;
}

/* One request on a new connection to 127.0.0.1:port. The status (-1: refused or no answer). */
__attribute__((unused)) static int sc_http(int port, const char *method, const char *path, const char *body,
                                           char *resp, size_t cap) {
    int fd = sc_connect(port);
    if (fd < 0) return resp[0] = 0, -1;
    int code = sc_exchange(fd, method, path, body, resp, cap);
    close(fd);
    return code;
}

/* The body of a response (after the blank line), or "". */
__attribute__((unused)) static const char *sc_body(const char *resp) {
    const char *b = strstr(resp, "\r\n\r\n");
    return b ? b + 4 : "";
}

/* The resident memory of process pid in kB (VmRSS), or -1. */
__attribute__((unused)) static long sc_rss_kb(pid_t pid) {
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    long kb = -1;
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "VmRSS:", 6)) kb = atol(line + 6);
    if (f) fclose(f);
    return kb;
}

static inline double sc_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

#endif
