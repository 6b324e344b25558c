/*
 * finetune_run_pack.c — packed sequences in a fine-tuning run (finetune_pack.h): classification
 * texts placed into rows by ts_pack_sequences once per run (an epoch then shuffles the rows, as
 * Graphcore's packed datasets do), each row's texts encoded one after the other with their
 * sequence indices, positions and [CLS] positions (ts_text_dataset_batch_packed), fed with
 * ts_pack_buf_feed; the other callbacks are the classify task's. Packed or not, the sequences
 * trained are counted, for the rate in the run's last line.
 */
#include "train/finetune_pack.h"

struct ft_pack {
    ft_run *R;
    int per_row;               /* S; 1: not packed */
    int64_t ntexts, nrows;
    int64_t *order, *row_start; /* packed: row r holds texts order[row_start[r] .. row_start[r + 1]) */
    ts_batch_buf bb;            /* packed: the rows' tokens, types and sequence indices */
    ts_pack_buf pb;             /* ... their positions, [CLS] positions and labels */
    ts_epoch_task inner;        /* the classify task */
    int64_t sequences;          /* trained so far */
    double eval_s;              /* spent in epoch_end (evaluation) */
};

static ts_status oom(const ft_run *R) {
    ts_set_error(TS_ERR_NOMEM, "out of memory");
    return ft_fail(R, 0, "%s: out of memory\n", R->name);
}

ts_status ft_pack_new(ft_run *R, ft_pack **out) {
    const ts_finetune_run_opts *o = &R->o;
    *out = NULL;
    ft_pack *pk = calloc(1, sizeof *pk);
    if (!pk) return oom(R);
    pk->R = R, pk->per_row = o->pack > 1 ? o->pack : 1;
    pk->ntexts = pk->nrows = ts_text_dataset_size(R->rows);
    int *len = malloc((size_t)(pk->ntexts + 1) * sizeof *len);
    if (!len) return ft_pack_free(pk), oom(R);
    ts_status st = ts_text_dataset_lengths(R->rows, R->tok, R->seq, len);
    int64_t real = 0;
    for (int64_t i = 0; !st && i < pk->ntexts; i++) real += len[i];
    double padded = pk->ntexts ? (double)real / ((double)pk->ntexts * R->seq) : 1, packed = padded;
    if (!st && pk->per_row > 1) {
        pk->order = malloc((size_t)(pk->ntexts + 1) * sizeof *pk->order);
        pk->row_start = malloc((size_t)(pk->ntexts + 1) * sizeof *pk->row_start);
        if (!pk->order || !pk->row_start) return free(len), ft_pack_free(pk), oom(R);
        st = ts_pack_sequences(len, pk->ntexts, R->seq, pk->per_row, pk->order, pk->row_start, &pk->nrows, &packed);
        R->cfg.max_sequences_per_pack = pk->per_row;
    }
    free(len);
    if (st) {
        ft_pack_free(pk);
        return ft_fail(R, 0, "%s: packing: %s\n", R->name, ts_last_error());
    }
    if (pk->per_row > 1)
        ts_writef(o->out, o->out_ctx, "%s: packing efficiency (real tokens / slots) %.1f%% a text a row, %.1f%% packed "
                  "(%lld texts in %lld rows of %d tokens, up to %d a row): at most %.2fx the sequences a step\n",
                  R->name, 100 * padded, 100 * packed, (long long)pk->ntexts, (long long)pk->nrows, R->seq, pk->per_row,
                  packed / padded);
    else
        ts_writef(o->out, o->out_ctx, "%s: packing efficiency (real tokens / slots) %.1f%% a text a row of %d tokens "
                  "(pack would fill rows with several texts)\n", R->name, 100 * padded, R->seq);
    *out = pk;
    return TS_OK;
}

int64_t ft_pack_rows(const ft_pack *pk) { return pk->nrows; }

/* Packed rows rows[0 .. m) into slice k, their texts counted. */
static int pack_fill(void *ctx, const int64_t *rows, int m, int k) {
    ft_pack *pk = ctx;
    ft_run *R = pk->R;
    if (pk->per_row == 1) {
        pk->sequences += m;
        return pk->inner.fill(pk->inner.ctx, rows, m, k);
    }
    int64_t *texts = malloc(((size_t)m * (size_t)pk->per_row + 1) * sizeof *texts);
    int64_t *starts = malloc(((size_t)m + 1) * sizeof *starts);
    ts_batch_buf *bb = &pk->bb;
    ts_status st = texts && starts ? TS_OK : ts_set_error(TS_ERR_NOMEM, "out of memory");
    if (starts) starts[0] = 0;
    for (int i = 0; !st && i < m; i++) {
        int64_t r = rows[i], n = pk->row_start[r + 1] - pk->row_start[r];
        memcpy(texts + starts[i], pk->order + pk->row_start[r], (size_t)n * sizeof *texts);
        starts[i + 1] = starts[i] + n;
        pk->sequences += n;
    }
    if (!st) {
        ts_batch_buf_slice(bb, k);
        ts_pack_buf_slice(&pk->pb, k);
        ts_batch b = bb->b;
        b.labels = NULL; /* per sequence, in pb */
        st = ts_text_dataset_batch_packed(R->rows, R->tok, texts, starts, m, R->o.batch, R->seq, pk->per_row, &b,
                                          &pk->pb.p);
    }
    free(texts);
    free(starts);
    if (st) ts_writef(R->o.err, R->o.err_ctx, "\n%s: %s\n", R->name, ts_last_error());
    return st ? -1 : 0;
}

static int pack_feed(void *ctx) {
    ft_pack *pk = ctx;
    if (pk->per_row == 1) return pk->inner.feed(pk->inner.ctx);
    ts_status st = ts_pack_buf_feed(&pk->pb, &pk->bb, pk->R->tp, 1);
    if (st) ts_writef(pk->R->o.err, pk->R->o.err_ctx, "\n%s: %s\n", pk->R->name, ts_last_error());
    return st ? -1 : 0;
}

static int pack_epoch_end(void *ctx, int epoch, int64_t step, int last, double train_loss, ts_progress *pr) {
    ft_pack *pk = ctx;
    double t0 = ts_seconds();
    int r = pk->inner.epoch_end(pk->inner.ctx, epoch, step, last, train_loss, pr);
    pk->eval_s += ts_seconds() - t0;
    return r;
}

static int pack_save(void *ctx) {
    ft_pack *pk = ctx;
    return pk->inner.save(pk->inner.ctx);
}

static int pack_checkpoint(void *ctx, int64_t step) {
    ft_pack *pk = ctx;
    return pk->inner.checkpoint(pk->inner.ctx, step);
}

static void pack_report(void *ctx, int64_t step, double seconds) {
    ft_pack *pk = ctx;
    const ts_finetune_run_opts *o = &pk->R->o;
    double train_s = seconds - pk->eval_s;
    ts_writef(o->out, o->out_ctx, "%s: %lld sequences trained in %.1f s (evaluations excluded): %.2f sequences/s%s\n",
              pk->R->name, (long long)pk->sequences, train_s, train_s > 0 ? (double)pk->sequences / train_s : 0,
              pk->per_row > 1 ? ", packed" : "");
    pk->inner.report(pk->inner.ctx, step, seconds);
}

ts_status ft_pack_wrap(ft_pack *pk, ts_epoch_task *t) {
    ft_run *R = pk->R;
    int slices = R->o.accumulation * R->o.device_iterations;
    if (pk->per_row > 1 && (!ts_batch_buf_init_slices(&pk->bb, R->o.batch, R->seq, 0, slices, 0) ||
                            !ts_pack_buf_init(&pk->pb, R->o.batch, R->seq, pk->per_row, slices, 1)))
        return oom(R);
    pk->inner = *t;
    t->ctx = pk, t->nrows = pk->nrows, t->fill = pack_fill, t->feed = pack_feed, t->epoch_end = pack_epoch_end;
    t->save = pack_save, t->checkpoint = pack_checkpoint, t->report = pack_report;
    return TS_OK;
}

void ft_pack_free(ft_pack *pk) {
    if (!pk) return;
    free(pk->order);
    free(pk->row_start);
    ts_batch_buf_free(&pk->bb);
    ts_pack_buf_free(&pk->pb);
    free(pk);
}
