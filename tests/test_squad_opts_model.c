/*
 * test_squad_opts_model.c — ts_squad_opts_of_model (the windows every reader of a QA model
 * directory featurizes with: eval, predict, quantize) without a model: the meta's doc_stride and
 * max_query_len kept, the defaults (ts_squad_default_stride / _query) where they are 0.
 */
#include <string.h>

#include "tessera_apps.h"
#include "test_util.h"

static void test_windows(void) {
    ts_model_meta m;
    memset(&m, 0, sizeof m);
    m.max_len = 384, m.doc_stride = 100, m.max_query_len = 50;
    ts_squad_opts so = ts_squad_opts_of_model(&m, 1);
    CHECK(so.struct_size == sizeof so && so.max_seq_len == 384 && so.doc_stride == 100 && so.max_query_len == 50 &&
              so.relocate_answers == 1, "the meta's windows: %d %d %d", so.max_seq_len, so.doc_stride, so.max_query_len);
    m.max_len = 64, m.doc_stride = 0, m.max_query_len = 0;
    so = ts_squad_opts_of_model(&m, 0);
    CHECK(so.max_seq_len == 64 && so.doc_stride == ts_squad_default_stride(64) &&
              so.max_query_len == ts_squad_default_query(64) && so.relocate_answers == 0,
          "the defaults: %d %d", so.doc_stride, so.max_query_len);
}

int main(int argc, char **argv) {
    tu_args(argc, argv);
    RUN(test_windows);
    return tu_finish("test_squad_opts_model");
}
