/*
 * squad.c — read a SQuAD v1.1 JSON file into examples, tokenize each context once with byte
 * offsets, locate the answers, cut the contexts into doc_stride windows (features) as Hugging
 * Face's run_squad does, and write features as batches.
 */
#include "data/squad.h"

#include <cjson/cJSON.h>

void ts_squad_free(ts_squad *s) {
    if (!s) return;
    for (int64_t i = 0; i < s->npara; i++) {
        free(s->paras[i].context);
        free(s->paras[i].ids);
        free(s->paras[i].begin);
        free(s->paras[i].end);
    }
    for (int64_t i = 0; i < s->nex; i++) {
        sq_example *e = &s->ex[i];
        free(e->id);
        free(e->question);
        free(e->qids);
        for (int k = 0; k < e->nanswers; k++) free(e->answers[k]);
        free(e->answers);
        free(e->starts);
    }
    free(s->paras);
    free(s->ex);
    free(s->feat);
    free(s);
}

/* Grow a (pointer, count, capacity) array to hold one more element of `size` bytes. */
static int grow(void **v, int64_t n, int64_t *cap, size_t size) {
    if (n < *cap) return 1;
    int64_t c = *cap ? *cap * 2 : 64;
    void *p = realloc(*v, (size_t)c * size);
    if (!p) return 0;
    *v = p;
    *cap = c;
    return 1;
}

/* Byte offset of character `chars` of s (UTF-8), or -1 past the end. */
static int64_t char_to_byte(const char *s, size_t len, int64_t chars) {
    int64_t c = 0;
    for (size_t i = 0; i <= len; i++) {
        if (i == len || ((unsigned char)s[i] & 0xC0) != 0x80) {
            if (c == chars) return (int64_t)i;
            c++;
        }
    }
    return -1;
}

/* Locate the first answer of e in its paragraph's pieces (tok_start / tok_end, -1 if not). The
 * answer is taken at its offset; when the text is not there, at the occurrence nearest to it. */
static void locate_answer(const sq_para *p, sq_example *e) {
    e->tok_start = e->tok_end = -1;
    if (e->nanswers == 0) return;
    const char *a = e->answers[0];
    size_t alen = strlen(a), clen = strlen(p->context);
    if (alen == 0) return;
    int64_t at = char_to_byte(p->context, clen, e->starts[0]);
    if (at < 0 || (size_t)at + alen > clen || memcmp(p->context + at, a, alen) != 0) {
        int64_t best = -1, want = at < 0 ? (int64_t)clen : at;
        for (const char *q = p->context; (q = strstr(q, a)); q++) {
            int64_t pos = q - p->context;
            if (best < 0 || llabs(pos - want) < llabs(best - want)) best = pos;
        }
        if (best < 0) return;
        at = best;
    }
    int64_t ab = at, ae = at + (int64_t)alen;
    int32_t ts = -1, te = -1;
    for (int32_t k = 0; k < p->ntok; k++) {
        if (ts < 0 && p->end[k] > ab) ts = k;
        if (p->begin[k] < ae) te = k;
    }
    if (ts < 0 || te < ts) return;
    e->tok_start = ts;
    e->tok_end = te;
}

/* The windows of example ei: run_squad's doc spans. */
static ts_status add_features(ts_squad *s, int64_t ei) {
    sq_example *e = &s->ex[ei];
    const sq_para *p = &s->paras[e->para];
    int32_t max_doc = s->o.max_seq_len - e->nq - 3;
    e->first_feature = s->nfeat;
    e->nfeatures = 0;
    for (int32_t start = 0; start < p->ntok;) {
        int32_t len = p->ntok - start < max_doc ? p->ntok - start : max_doc;
        if (!grow((void **)&s->feat, s->nfeat, &s->featcap, sizeof *s->feat))
            return ts_set_error(TS_ERR_NOMEM, "squad: out of memory");
        sq_feature *f = &s->feat[s->nfeat++];
        e->nfeatures++;
        f->example = ei;
        f->doc_start = start;
        f->doc_len = len;
        if (e->tok_start < 0) {
            f->start_pos = f->end_pos = TS_IGNORE_INDEX;
        } else if (e->tok_start >= start && e->tok_end < start + len) {
            f->start_pos = e->nq + 2 + (e->tok_start - start);
            f->end_pos = e->nq + 2 + (e->tok_end - start);
        } else {
            f->start_pos = f->end_pos = 0;
        }
        if (start + len == p->ntok) break;
        start += len < s->o.doc_stride ? len : s->o.doc_stride;
    }
    return TS_OK;
}

static char *dup_or_null(const char *s) { return strdup(s ? s : ""); }

/* Answer a of e must stand at its answer_start (a character offset) in its context, unless the
 * options relocate answers; then a miss is counted and locate_answer takes the nearest one. */
static ts_status check_answer_start(ts_squad *s, const char *path, const char *where, const sq_example *e, int a) {
    const char *ctx = s->paras[e->para].context, *ans = e->answers[a];
    size_t clen = strlen(ctx), alen = strlen(ans);
    int64_t at = char_to_byte(ctx, clen, e->starts[a]);
    if (at >= 0 && (size_t)at + alen <= clen && memcmp(ctx + at, ans, alen) == 0) return TS_OK;
    if (s->o.relocate_answers) {
        s->relocated++;
        return TS_OK;
    }
    int64_t nchars = 0;
    for (size_t i = 0; i < clen; i++) nchars += ((unsigned char)ctx[i] & 0xC0) != 0x80;
    const char *found = alen ? strstr(ctx, ans) : NULL;
    char head[96];
    snprintf(head, sizeof head, "\"%.40s%s\"", ans, alen > 40 ? "..." : "");
    if (!found) /* relocating cannot help */
        return ts_set_error(TS_ERR_IO, "%s: %s (id \"%s\"): answers[%d]: the text %s does not occur in its context",
                            path, where, e->id, a, head);
    int64_t c = 0; /* where it is, in characters as answer_start counts */
    for (const char *q = ctx; q < found; q++) c += ((unsigned char)*q & 0xC0) != 0x80;
    char there[96];
    if (at < 0) snprintf(there, sizeof there, "past the end of the context (%lld characters)", (long long)nchars);
    else snprintf(there, sizeof there, "where the context has \"%.24s%s\"", ctx + at, strlen(ctx + at) > 24 ? "..." : "");
    return ts_set_error(TS_ERR_IO,
                        "%s: %s (id \"%s\"): answers[%d]: answer_start %lld is %s, not the text %s, which "
                        "occurs at character %lld; fix the offset, or take answers at their nearest occurrence "
                        "(ts_squad_opts.relocate_answers)",
                        path, where, e->id, a, (long long)e->starts[a], there, head, (long long)c);
}

/* One entry of "qas". */
static ts_status read_qa(ts_squad *s, const char *path, const cJSON *qa, int i, int j, int k) {
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(qa, "id");
    const cJSON *q = cJSON_GetObjectItemCaseSensitive(qa, "question");
    const cJSON *answers = cJSON_GetObjectItemCaseSensitive(qa, "answers");
    char where[96];
    snprintf(where, sizeof where, "data[%d].paragraphs[%d].qas[%d]", i, j, k);
    if (!cJSON_IsObject(qa)) return ts_set_error(TS_ERR_IO, "%s: %s is not an object", path, where);
    if (!cJSON_IsString(id) && !cJSON_IsNumber(id))
        return ts_set_error(TS_ERR_IO, "%s: %s: no \"id\" string", path, where);
    if (!cJSON_IsString(q)) return ts_set_error(TS_ERR_IO, "%s: %s: no \"question\" string", path, where);
    if (answers && !cJSON_IsArray(answers))
        return ts_set_error(TS_ERR_IO, "%s: %s: \"answers\" is not an array", path, where);
    if (!grow((void **)&s->ex, s->nex, &s->excap, sizeof *s->ex))
        return ts_set_error(TS_ERR_NOMEM, "squad: out of memory");
    sq_example *e = &s->ex[s->nex];
    memset(e, 0, sizeof *e);
    s->nex++; /* counted now, so ts_squad_free releases what is filled below */
    char idbuf[32];
    if (cJSON_IsNumber(id)) snprintf(idbuf, sizeof idbuf, "%.17g", id->valuedouble);
    e->id = dup_or_null(cJSON_IsString(id) ? id->valuestring : idbuf);
    e->question = dup_or_null(q->valuestring);
    e->para = s->npara - 1;
    int na = answers ? cJSON_GetArraySize(answers) : 0;
    e->answers = calloc((size_t)(na ? na : 1), sizeof *e->answers);
    e->starts = calloc((size_t)(na ? na : 1), sizeof *e->starts);
    e->qids = malloc((size_t)s->o.max_query_len * sizeof *e->qids);
    if (!e->id || !e->question || !e->answers || !e->starts || !e->qids)
        return ts_set_error(TS_ERR_NOMEM, "squad: out of memory");
    int a = 0;
    for (const cJSON *ans = answers ? answers->child : NULL; ans; ans = ans->next, a++) {
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(ans, "text");
        const cJSON *st = cJSON_GetObjectItemCaseSensitive(ans, "answer_start");
        if (!cJSON_IsString(t))
            return ts_set_error(TS_ERR_IO, "%s: %s.answers[%d]: no \"text\" string", path, where, a);
        if (!cJSON_IsNumber(st) || !(st->valuedouble >= 0) || st->valuedouble > 1e15 ||
            st->valuedouble != (double)(int64_t)st->valuedouble)
            return ts_set_error(TS_ERR_IO, "%s: %s.answers[%d]: \"answer_start\" is not a non-negative integer", path,
                                where, a);
        if (!(e->answers[a] = strdup(t->valuestring))) return ts_set_error(TS_ERR_NOMEM, "squad: out of memory");
        e->starts[a] = (int64_t)st->valuedouble;
        e->nanswers = a + 1;
        ts_status sa = check_answer_start(s, path, where, e, a);
        if (sa != TS_OK) return sa;
    }
    /* the question, cut to max_query_len pieces */
    ts_i32vec qv = {0};
    ts_status stq = ts_tokenize_append(s->tok, e->question, &qv);
    if (stq != TS_OK) {
        ts_i32vec_free(&qv);
        return stq;
    }
    e->nq = (int32_t)(qv.n < (size_t)s->o.max_query_len ? qv.n : (size_t)s->o.max_query_len);
    if (e->nq) memcpy(e->qids, qv.v, (size_t)e->nq * sizeof *e->qids);
    ts_i32vec_free(&qv);
    locate_answer(&s->paras[e->para], e);
    return add_features(s, s->nex - 1);
}

/* One entry of "paragraphs": its context, then its questions. */
static ts_status read_paragraph(ts_squad *s, const char *path, const cJSON *par, int i, int j) {
    const cJSON *ctx = cJSON_GetObjectItemCaseSensitive(par, "context");
    const cJSON *qas = cJSON_GetObjectItemCaseSensitive(par, "qas");
    if (!cJSON_IsObject(par))
        return ts_set_error(TS_ERR_IO, "%s: data[%d].paragraphs[%d] is not an object", path, i, j);
    if (!cJSON_IsString(ctx))
        return ts_set_error(TS_ERR_IO, "%s: data[%d].paragraphs[%d]: no \"context\" string", path, i, j);
    if (!cJSON_IsArray(qas))
        return ts_set_error(TS_ERR_IO, "%s: data[%d].paragraphs[%d]: no \"qas\" array", path, i, j);
    if (!grow((void **)&s->paras, s->npara, &s->paracap, sizeof *s->paras))
        return ts_set_error(TS_ERR_NOMEM, "squad: out of memory");
    sq_para *p = &s->paras[s->npara++];
    memset(p, 0, sizeof *p);
    if (!(p->context = strdup(ctx->valuestring))) return ts_set_error(TS_ERR_NOMEM, "squad: out of memory");
    ts_i32vec ids = {0}, b = {0}, e = {0};
    ts_status st = ts_tokenize_offsets(s->tok, p->context, strlen(p->context), &ids, &b, &e);
    p->ids = ids.v;
    p->begin = b.v;
    p->end = e.v;
    p->ntok = (int32_t)ids.n;
    if (st != TS_OK) return st;
    if (ids.n > (size_t)INT32_MAX / 2)
        return ts_set_error(TS_ERR_IO, "%s: data[%d].paragraphs[%d]: a context of %zu pieces", path, i, j, ids.n);
    int k = 0;
    for (const cJSON *qa = qas->child; qa; qa = qa->next, k++)
        if ((st = read_qa(s, path, qa, i, j, k)) != TS_OK) return st;
    return TS_OK;
}

/* Does the text end inside a string or with an object / array still open (a cut-short file)? */
static int json_unfinished(const char *t, size_t len) {
    long depth = 0;
    int in_str = 0;
    for (size_t i = 0; i < len; i++) {
        char c = t[i];
        if (in_str) {
            if (c == '\\') i++;
            else if (c == '"') in_str = 0;
        } else if (c == '"') {
            in_str = 1;
        } else if (c == '{' || c == '[') {
            depth++;
        } else if (c == '}' || c == ']') {
            depth--;
        }
    }
    return in_str || depth > 0;
}

ts_squad *ts_squad_load(const char *path, const ts_tokenizer *tok, const ts_squad_opts *opts) {
    if (!path || !tok) {
        ts_set_error(TS_ERR_ARG, "ts_squad_load: NULL path or tokenizer");
        return NULL;
    }
    ts_squad_opts oc;
    if (TS_STRUCT_READ(&oc, opts, ts_squad_opts, "ts_squad_load")) return NULL;
    size_t len = 0;
    char *text = ts_read_file(path, &len);
    if (!text) return NULL;
    ts_squad *s = ts_squad_parse(path, text, len, tok, opts);
    free(text);
    return s;
}

ts_squad *ts_squad_parse(const char *name, const char *json, size_t len, const ts_tokenizer *tok,
                         const ts_squad_opts *opts) {
    if (!name || !json || !tok) {
        ts_set_error(TS_ERR_ARG, "ts_squad_parse: NULL name, text or tokenizer");
        return NULL;
    }
    const char *path = name;
    ts_squad_opts o;
    if (TS_STRUCT_READ(&o, opts, ts_squad_opts, "ts_squad_parse")) return NULL;
    if (!o.max_seq_len) o.max_seq_len = 384;
    if (!o.doc_stride) o.doc_stride = 128;
    if (!o.max_query_len) o.max_query_len = 64;
    o.relocate_answers = o.relocate_answers != 0;
    if (o.doc_stride < 1 || o.max_query_len < 1 || o.max_seq_len - o.max_query_len - 3 < 1) {
        ts_set_error(TS_ERR_ARG,
                     "ts_squad_load: %s: max_seq_len %d must exceed max_query_len %d + 3, and doc_stride "
                     "%d must be positive",
                     path, o.max_seq_len, o.max_query_len, o.doc_stride);
        return NULL;
    }
    const char *text = json;
    cJSON *root = cJSON_ParseWithLength(text, len);
    if (!root) {
        const char *ep = cJSON_GetErrorPtr();
        long line = 1;
        if (ep && ep >= text && ep <= text + len)
            for (const char *c = text; c < ep; c++) line += *c == '\n';
        ts_set_error(TS_ERR_IO, "%s:%ld: not valid JSON%s", path, line,
                     json_unfinished(text, len) ? " (it ends inside an object, array or string: is it cut short?)"
                                                : "");
        return NULL;
    }
    ts_squad *s = calloc(1, sizeof *s);
    ts_status st = TS_OK;
    if (!s) st = ts_set_error(TS_ERR_NOMEM, "squad: out of memory");
    const cJSON *data = cJSON_GetObjectItemCaseSensitive(root, "data");
    if (st == TS_OK && (!cJSON_IsObject(root) || !cJSON_IsArray(data)))
        st = ts_set_error(TS_ERR_IO, "%s: no \"data\" array at the top (is this a SQuAD file?)", path);
    if (st == TS_OK) {
        s->tok = tok;
        s->o = o;
        int i = 0;
        for (const cJSON *art = data->child; art && st == TS_OK; art = art->next, i++) {
            const cJSON *pars = cJSON_GetObjectItemCaseSensitive(art, "paragraphs");
            if (!cJSON_IsArray(pars)) {
                st = ts_set_error(TS_ERR_IO, "%s: data[%d]: no \"paragraphs\" array", path, i);
                break;
            }
            int j = 0;
            for (const cJSON *par = pars->child; par && st == TS_OK; par = par->next, j++)
                st = read_paragraph(s, path, par, i, j);
        }
    }
    cJSON_Delete(root);
    if (st != TS_OK) {
        ts_squad_free(s);
        return NULL;
    }
    return s;
}

int64_t ts_squad_num_examples(const ts_squad *s) { return s ? s->nex : 0; }
int64_t ts_squad_num_features(const ts_squad *s) { return s ? s->nfeat : 0; }
int64_t ts_squad_num_relocated(const ts_squad *s) { return s ? s->relocated : 0; }

ts_status ts_squad_get(const ts_squad *s, int64_t i, ts_squad_example *out) {
    if (!s || !out || i < 0 || i >= s->nex)
        return ts_set_error(TS_ERR_ARG, "ts_squad_get: example %lld outside [0, %lld)", (long long)i,
                            (long long)(s ? s->nex : 0));
    const sq_example *e = &s->ex[i];
    out->id = e->id;
    out->question = e->question;
    out->context = s->paras[e->para].context;
    out->nanswers = e->nanswers;
    out->answers = (const char *const *)e->answers;
    out->answer_starts = e->starts;
    out->first_feature = e->first_feature;
    out->nfeatures = e->nfeatures;
    return TS_OK;
}

ts_status ts_squad_batch(const ts_squad *s, const int64_t *features, int n, int batch_size, const ts_batch *b) {
    if (!s || !b || !b->input_ids || (n > 0 && !features))
        return ts_set_error(TS_ERR_ARG, "ts_squad_batch: NULL squad, features, batch or input_ids");
    if (n < 0 || batch_size < 1 || n > batch_size)
        return ts_set_error(TS_ERR_ARG, "ts_squad_batch: %d rows do not fit a batch of %d", n, batch_size);
    int T = s->o.max_seq_len;
    int32_t cls = ts_token_to_id(s->tok, "[CLS]"), sep = ts_token_to_id(s->tok, "[SEP]"),
            pad = ts_token_to_id(s->tok, "[PAD]");
    for (int i = 0; i < batch_size; i++) {
        size_t o = (size_t)i * (size_t)T;
        int32_t *ids = b->input_ids + o;
        int k = 0, first_end = 0, sp = TS_IGNORE_INDEX, ep = TS_IGNORE_INDEX;
        if (i < n) {
            int64_t fi = features[i];
            if (fi < 0 || fi >= s->nfeat)
                return ts_set_error(TS_ERR_ARG, "ts_squad_batch: feature %lld outside [0, %lld)", (long long)fi,
                                    (long long)s->nfeat);
            const sq_feature *f = &s->feat[fi];
            const sq_example *e = &s->ex[f->example];
            const sq_para *p = &s->paras[e->para];
            ids[k++] = cls;
            for (int q = 0; q < e->nq; q++) ids[k++] = e->qids[q];
            ids[k++] = sep;
            first_end = k;
            for (int d = 0; d < f->doc_len; d++) ids[k++] = p->ids[f->doc_start + d];
            ids[k++] = sep;
            sp = f->start_pos;
            ep = f->end_pos;
        }
        for (int t = k; t < T; t++) ids[t] = pad;
        if (b->token_type_ids)
            for (int t = 0; t < T; t++) b->token_type_ids[o + t] = t >= first_end && t < k;
        if (b->attention_mask)
            for (int t = 0; t < T; t++) b->attention_mask[o + t] = t < k;
        if (b->start_positions) b->start_positions[i] = sp;
        if (b->end_positions) b->end_positions[i] = ep;
    }
    return TS_OK;
}
