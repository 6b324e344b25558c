/*
 * pretrain_heldout.c — held-out evaluation of BERT pretraining (tessera_tasks.h): a corpus split
 * into training and held-out documents (every 50th held out), a fixed set of masked batches read
 * from the held-out part, and the masked-LM and next-sentence accuracy and MLM loss of an
 * inference program on them.
 */
#include "common/app.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HOLDOUT_EVERY 50   /* document i is held out when i % 50 == 1 */
#define MAX_DOC_LINES 1000 /* a file without blank lines is cut into documents of this many lines */

struct ts_pretrain_heldout {
    ts_batch_buf *b;
    int n;
};

/* The split's state: both outputs and the current document. */
typedef struct splitter {
    FILE *tr, *he;
    int64_t doc, lines, nheld;
} splitter;

static FILE *dest(splitter *sp) { return sp->doc % HOLDOUT_EVERY == 1 ? sp->he : sp->tr; }

static void end_document(splitter *sp) {
    if (!sp->lines) return;
    FILE *to = dest(sp);
    fputc('\n', to);
    sp->nheld += to == sp->he;
    sp->doc++;
    sp->lines = 0;
}

/* Copy one file's documents; TS_ERR_ARG when it cannot be opened, TS_ERR_IO on a read error. */
static ts_status split_file(splitter *sp, const char *path, char **line, size_t *cap) {
    FILE *in = fopen(path, "r");
    if (!in) return ts_set_error(TS_ERR_ARG, "%s: %s", path, strerror(errno));
    ssize_t len;
    sp->lines = 0;
    while ((len = getline(line, cap, in)) >= 0) {
        const char *l = *line;
        int blank = 1;
        for (ssize_t i = 0; i < len && blank; i++) blank = l[i] == ' ' || l[i] == '\t' || l[i] == '\n' || l[i] == '\r';
        if (blank || sp->lines == MAX_DOC_LINES) { /* a document ends */
            end_document(sp);
            if (blank) continue;
        }
        FILE *to = dest(sp);
        fwrite(l, 1, (size_t)len, to);
        if (l[len - 1] != '\n') fputc('\n', to);
        sp->lines++;
    }
    ts_status st = ferror(in) ? ts_set_error(TS_ERR_IO, "reading %s: %s", path, strerror(errno)) : TS_OK;
    fclose(in);
    end_document(sp);
    return st;
}

ts_status ts_pretrain_split_holdout(const char *const *files, int nfiles, const char *train_path,
                                    const char *held_path, int64_t *ndocs, int64_t *nheld) {
    splitter sp = {.tr = fopen(train_path, "w"), .he = fopen(held_path, "w")};
    ts_status st = TS_OK;
    if (!sp.tr || !sp.he)
        st = ts_set_error(TS_ERR_IO, "creating %s: %s", !sp.tr ? train_path : held_path, strerror(errno));
    char *line = NULL;
    size_t cap = 0;
    for (int f = 0; f < nfiles && !st; f++) st = split_file(&sp, files[f], &line, &cap);
    free(line);
    *ndocs = sp.doc, *nheld = sp.nheld;
    if ((sp.tr && fclose(sp.tr) != 0) || (sp.he && fclose(sp.he) != 0)) {
        if (!st) st = ts_set_error(TS_ERR_IO, "writing %s: %s", train_path, strerror(errno));
    }
    return st;
}

/* Read batch h->n from r; 0 at the end of the data, 1 with a batch, -1 on failure. */
static int read_batch(ts_pretrain_heldout *h, ts_pretrain_reader *r, const ts_pretrain_opts *po) {
    ts_batch_buf *bb = &h->b[h->n];
    if (!ts_batch_buf_init_slices(bb, po->batch_size, po->max_len, 2, 1, po->max_predictions)) {
        ts_set_error(TS_ERR_NOMEM, "held-out set: out of memory for a batch of %d sequences of %d tokens",
                     po->batch_size, po->max_len);
        return -1;
    }
    int rows = 0;
    ts_status st = ts_pretrain_next(r, &bb->b, &rows);
    if (st != TS_OK || rows == 0) {
        ts_batch_buf_free(bb);
        /* A held-out set with no sentence pair is no error: there is just nothing to measure. */
        if (st != TS_OK && h->n == 0 && !strstr(ts_last_error(), "no sentence pair")) {
            ts_set_error(st, "held-out set: %s", ts_last_error());
            return -1;
        }
        return 0;
    }
    if (bb->predictions) ts_batch_buf_compact(bb, 0);
    h->n++;
    return 1;
}

ts_pretrain_heldout *ts_pretrain_heldout_read(const ts_tokenizer *tok, const char *path, const ts_pretrain_opts *po,
                                              int nbatches) {
    ts_pretrain_opts o = ts_pretrain_defaults(), pc;
    if (TS_STRUCT_READ(&pc, po, ts_pretrain_opts, "ts_pretrain_heldout_read")) return NULL;
    po = &pc;
    o.batch_size = po->batch_size;
    o.max_len = po->max_len;
    o.mask_prob = po->mask_prob;
    o.whole_word = po->whole_word;
    o.max_predictions = po->max_predictions;
    o.files = (const char *const[]){path};
    o.nfiles = 1;
    o.epochs = 1;
    o.seed = 0x68656c64; /* fixed: the held-out set does not depend on the run's seed */
    ts_pretrain_reader *r = ts_pretrain_open(tok, &o);
    if (!r) {
        ts_set_error(ts_last_status(), "held-out set: %s", ts_last_error());
        return NULL;
    }
    ts_pretrain_heldout *h = calloc(1, sizeof *h);
    if (h) h->b = calloc((size_t)(nbatches > 0 ? nbatches : 1), sizeof *h->b);
    int rc = h && h->b ? 1 : -1;
    if (rc < 0) ts_set_error(TS_ERR_NOMEM, "held-out set: out of memory");
    while (rc > 0 && h->n < nbatches) rc = read_batch(h, r, &o);
    ts_pretrain_close(r);
    if (rc < 0) {
        ts_pretrain_heldout_free(h);
        return NULL;
    }
    return h;
}

int ts_pretrain_heldout_batches(const ts_pretrain_heldout *h) { return h ? h->n : 0; }

void ts_pretrain_heldout_free(ts_pretrain_heldout *h) {
    if (!h) return;
    for (int i = 0; i < h->n; i++) ts_batch_buf_free(&h->b[i]);
    free(h->b);
    free(h);
}

/* Count batch i's NSP answers: the larger of the two logits against the label (0 or 1). */
static void count_nsp(ts_tensor *nsp, const int32_t *lab, int64_t *ok, int64_t *n) {
    const float *s = ts_tensor_data(nsp);
    for (int64_t k = 0; k < ts_tensor_shape(nsp)[0]; k++)
        if (lab[k] == 0 || lab[k] == 1) *ok += (s[2 * k + 1] > s[2 * k]) == lab[k], ++*n;
}

ts_status ts_pretrain_heldout_eval(ts_program *ip, ts_pretrain_heldout *h, double *mlm_acc, double *nsp_acc,
                                   double *mlm_loss) {
    int64_t correct = 0, total = 0, nsp_ok = 0, nsp_n = 0;
    double loss = 0;
    for (int i = 0; i < h->n; i++) {
        ts_tensor *lg = NULL, *nsp = NULL, *ml = NULL;
        ts_batch_buf *b = &h->b[i];
        ts_status st;
        if ((st = ts_batch_buf_feed(b, ip, 1)) || (st = ts_program_run(ip)) ||
            (st = ts_program_fetch(ip, "prediction_logits", &lg)) ||
            (st = ts_program_fetch(ip, "seq_relationship_logits", &nsp)) || (st = ts_program_fetch(ip, "mlm_loss", &ml)) ||
            (st = ts_mlm_accuracy(lg, b->predictions ? (const int32_t *)ts_tensor_data(b->plabels) : b->b.labels,
                                  &correct, &total))) {
            ts_tensor_free(lg), ts_tensor_free(nsp), ts_tensor_free(ml);
            return st;
        }
        count_nsp(nsp, b->b.next_sentence_label, &nsp_ok, &nsp_n);
        loss += *(float *)ts_tensor_data(ml);
        ts_tensor_free(lg), ts_tensor_free(nsp), ts_tensor_free(ml);
    }
    *mlm_acc = total ? (double)correct / (double)total : 0;
    *nsp_acc = nsp_n ? (double)nsp_ok / (double)nsp_n : 0;
    *mlm_loss = h->n ? loss / h->n : 0;
    return TS_OK;
}
