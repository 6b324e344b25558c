/*
 * weight_copy.c — copies of weight buffers in a kernel's own layout, shared (weight_copy.h). A
 * copy is made on first use and shared by every kernel that reads the same buffer the same way
 * into the same layout, so programs that share their parameters (ts_program_share_params: tessera
 * serve's programs per batch size) hold one copy, not one each. A stamp is a param_gen, unique
 * across programs (runtime/exec.h), so a copy is current for whichever program reads the buffer
 * at that generation. The list is short (a model's weights) and searched only when a kernel takes
 * a copy (its first run, or after its weight buffer moved), never per run.
 */
#include "backend/cpu/weight_copy.h"

#include <pthread.h>

static ts_weight_copy *g_copies;
static pthread_mutex_t g_copies_mu = PTHREAD_MUTEX_INITIALIZER;

ts_weight_copy *ts_weight_copy_get(const void *src, const dnnl_memory_desc_t *smd, const dnnl_memory_desc_t *md,
                                   size_t bytes) {
    pthread_mutex_lock(&g_copies_mu);
    ts_weight_copy *c = g_copies;
    while (src && c &&
           !(c->src == src && c->bytes == bytes && dnnl_memory_desc_equal(&c->smd, smd) &&
             dnnl_memory_desc_equal(&c->md, md)))
        c = c->next;
    if (src && c) {
        c->refs++;
    } else if ((c = calloc(1, sizeof *c)) && (c->data = ts_alloc(bytes ? bytes : 1, 0))) {
        c->src = src, c->smd = *smd, c->md = *md, c->bytes = bytes, c->refs = 1;
        if (src) c->next = g_copies, g_copies = c;
    } else {
        free(c), c = NULL;
    }
    pthread_mutex_unlock(&g_copies_mu);
    return c;
}

void ts_weight_copy_release(ts_weight_copy *c) {
    if (!c) return;
    pthread_mutex_lock(&g_copies_mu);
    if (--c->refs == 0) {
        if (c->src) {
            ts_weight_copy **at = &g_copies;
            while (*at != c) at = &(*at)->next;
            *at = c->next;
        }
        ts_free(c->data);
        free(c);
    }
    pthread_mutex_unlock(&g_copies_mu);
}
