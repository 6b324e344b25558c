/*
 * batches.c — the host tensors of a training or inference batch (ts_batch_buf, declared in
 * tessera.h): input ids, token types, attention mask and labels as int32 tensors, with slots for
 * the micro-batches and device iterations of one program call, and their feeding.
 */
#include "common/app.h"

int ts_batch_buf_init(ts_batch_buf *bb, int batch, int seq, int labels_rank) {
    return ts_batch_buf_init_slices(bb, batch, seq, labels_rank, 1, 0);
}

int ts_batch_buf_init_slices(ts_batch_buf *bb, int batch, int seq, int labels_rank, int slices, int predictions) {
    memset(bb, 0, sizeof *bb);
    /* [S, B, T] and [S, B] with S slices, [B, T] and [B] with one */
    int lead = slices > 1, n = lead ? 3 : 2;
    const int64_t bt[3] = {slices, batch, seq};
    const int64_t *sbt = bt + !lead;
    bb->slices = slices;
    bb->batch = batch;
    bb->seq = seq;
    bb->ids = ts_tensor_new(TS_I32, n, sbt);
    bb->types = ts_tensor_new(TS_I32, n, sbt);
    bb->mask = ts_tensor_new(TS_I32, n, sbt);
    if (labels_rank == 1) bb->labels = ts_tensor_new(TS_I32, n - 1, sbt);
    if (labels_rank == 2) {
        bb->labels = ts_tensor_new(TS_I32, n, sbt);
        bb->nsp = ts_tensor_new(TS_I32, n - 1, sbt);
    }
    if (labels_rank == 2 && predictions > 0) {
        const int64_t bp[3] = {slices, batch, predictions};
        bb->predictions = predictions;
        bb->positions = ts_tensor_new(TS_I32, n, bp + !lead);
        bb->plabels = ts_tensor_new(TS_I32, n, bp + !lead);
    }
    if (!bb->ids || !bb->types || !bb->mask || (labels_rank && !bb->labels) || (labels_rank == 2 && !bb->nsp) ||
        (bb->predictions && (!bb->positions || !bb->plabels))) {
        ts_batch_buf_free(bb);
        return 0;
    }
    ts_batch_buf_slice(bb, 0);
    return 1;
}

void ts_batch_buf_slice(ts_batch_buf *bb, int k) {
    size_t bt = (size_t)k * (size_t)bb->batch * (size_t)bb->seq, b = (size_t)k * (size_t)bb->batch;
    bb->b.input_ids = (int32_t *)ts_tensor_data(bb->ids) + bt;
    bb->b.token_type_ids = (int32_t *)ts_tensor_data(bb->types) + bt;
    bb->b.attention_mask = (int32_t *)ts_tensor_data(bb->mask) + bt;
    if (bb->labels) /* [.., B, T] for pretraining (with nsp), [.., B] for classification */
        bb->b.labels = (int32_t *)ts_tensor_data(bb->labels) + (bb->nsp ? bt : b);
    if (bb->nsp) bb->b.next_sentence_label = (int32_t *)ts_tensor_data(bb->nsp) + b;
}

int ts_batch_buf_compact(ts_batch_buf *bb, int k) {
    int B = bb->batch, T = bb->seq, P = bb->predictions, dropped = 0;
    const int32_t *lab = (const int32_t *)ts_tensor_data(bb->labels) + (size_t)k * B * T;
    int32_t *pos = (int32_t *)ts_tensor_data(bb->positions) + (size_t)k * B * P;
    int32_t *pl = (int32_t *)ts_tensor_data(bb->plabels) + (size_t)k * B * P;
    for (int b = 0; b < B; b++) {
        int n = 0;
        for (int t = 0; t < T; t++) {
            if (lab[b * T + t] == -100) continue;
            if (n == P) { dropped++; continue; }
            pos[b * P + n] = t, pl[b * P + n] = lab[b * T + t], n++;
        }
        for (; n < P; n++) pos[b * P + n] = 0, pl[b * P + n] = -100;
    }
    return dropped;
}

void ts_batch_buf_free(ts_batch_buf *bb) {
    ts_tensor_free(bb->ids);
    ts_tensor_free(bb->types);
    ts_tensor_free(bb->mask);
    ts_tensor_free(bb->labels);
    ts_tensor_free(bb->nsp);
    ts_tensor_free(bb->positions);
    ts_tensor_free(bb->plabels);
    memset(bb, 0, sizeof *bb);
}

ts_status ts_batch_buf_feed(ts_batch_buf *bb, ts_program *p, int with_labels) {
    ts_status st;
    if ((st = ts_program_feed(p, "input_ids", bb->ids)) || (st = ts_program_feed(p, "token_type_ids", bb->types)) ||
        (st = ts_program_feed(p, "attention_mask", bb->mask)))
        return st;
    if (with_labels && bb->predictions &&
        ((st = ts_program_feed(p, "masked_lm_positions", bb->positions)) || (st = ts_program_feed(p, "labels", bb->plabels))))
        return st;
    if (with_labels && bb->labels && !bb->predictions && (st = ts_program_feed(p, "labels", bb->labels))) return st;
    if (with_labels && bb->nsp && (st = ts_program_feed(p, "next_sentence_label", bb->nsp))) return st;
    return TS_OK;
}


/* ------------------------------------------------------------------ packed batches */

int ts_pack_buf_init(ts_pack_buf *pb, int batch, int seq, int per_row, int slices, int with_labels) {
    memset(pb, 0, sizeof *pb);
    if (batch < 1 || seq < 1 || per_row < 2 || per_row > seq || slices < 1) return 0;
    int lead = slices > 1;
    const int64_t bt[3] = {slices, batch, seq}, bs[3] = {slices, batch, per_row};
    pb->slices = slices, pb->batch = batch, pb->seq = seq, pb->per_row = per_row;
    pb->position_ids = ts_tensor_new(TS_I32, 2 + lead, bt + !lead);
    pb->cls_positions = ts_tensor_new(TS_I32, 2 + lead, bs + !lead);
    if (with_labels) pb->labels = ts_tensor_new(TS_I32, 2 + lead, bs + !lead);
    if (!pb->position_ids || !pb->cls_positions || (with_labels && !pb->labels)) {
        ts_pack_buf_free(pb);
        return 0;
    }
    ts_pack_buf_slice(pb, 0);
    return 1;
}

void ts_pack_buf_slice(ts_pack_buf *pb, int k) {
    size_t bt = (size_t)k * (size_t)pb->batch * (size_t)pb->seq, bs = (size_t)k * (size_t)pb->batch * pb->per_row;
    pb->p.position_ids = (int32_t *)ts_tensor_data(pb->position_ids) + bt;
    pb->p.cls_positions = (int32_t *)ts_tensor_data(pb->cls_positions) + bs;
    pb->p.seq_labels = pb->labels ? (int32_t *)ts_tensor_data(pb->labels) + bs : NULL;
}

void ts_pack_buf_free(ts_pack_buf *pb) {
    ts_tensor_free(pb->position_ids);
    ts_tensor_free(pb->cls_positions);
    ts_tensor_free(pb->labels);
    memset(pb, 0, sizeof *pb);
}

ts_status ts_pack_buf_feed(ts_pack_buf *pb, ts_batch_buf *bb, ts_program *p, int with_labels) {
    ts_status st;
    if ((st = ts_batch_buf_feed(bb, p, 0)) || (st = ts_program_feed(p, "position_ids", pb->position_ids))) return st;
    st = ts_program_feed(p, "cls_positions", pb->cls_positions); /* absent for a head without a pooler */
    if (st == TS_ERR_NOT_FOUND) ts_err_clear();
    else if (st) return st;
    if (!with_labels) return TS_OK;
    if (bb->predictions && ((st = ts_program_feed(p, "masked_lm_positions", bb->positions)) ||
                            (st = ts_program_feed(p, "labels", bb->plabels))))
        return st;
    if (bb->nsp && !bb->predictions && (st = ts_program_feed(p, "labels", bb->labels))) return st;
    if (pb->labels) return ts_program_feed(p, bb->nsp ? "next_sentence_label" : "labels", pb->labels);
    return TS_OK;
}
