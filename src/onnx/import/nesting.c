/*
 * nesting.c — a bound on how deeply an ONNX file's messages nest, checked on the raw bytes before
 * protobuf-c unpacks them. protobuf-c's parser recurses once per nested message with no limit of
 * its own, and ONNX's schema has cycles (a graph's node has an attribute holding a graph; a type
 * holds a sequence of a type), so a few megabytes of crafted nesting would exhaust the stack.
 * This walker follows exactly the fields on those cycles (field numbers from onnx.proto) and
 * refuses a file that nests them deeper than ONNX_MAX_NESTING; every other field is skipped by
 * its wire type, without recursion. Malformed wire data is left for protobuf-c to report.
 */
#include "onnx/onnx_imp.h"

#define ONNX_MAX_NESTING 64

typedef enum { M_MODEL, M_GRAPH, M_NODE, M_ATTR, M_VALUE_INFO, M_TYPE, M_TYPE_INNER, M_FUNCTION, M_TRAINING, M_NONE } msg_kind;

/* The message kind of field `f` of a `kind` message, when it is on a cycle (else M_NONE). */
static msg_kind child(msg_kind kind, uint64_t f) {
    switch (kind) {
    case M_MODEL: return f == 7 ? M_GRAPH : f == 25 ? M_FUNCTION : f == 20 ? M_TRAINING : M_NONE;
    case M_GRAPH: return f == 1 ? M_NODE : (f == 11 || f == 12 || f == 13) ? M_VALUE_INFO : M_NONE;
    case M_NODE: return f == 5 ? M_ATTR : M_NONE;
    case M_ATTR: return (f == 6 || f == 11) ? M_GRAPH : (f == 14 || f == 15) ? M_TYPE : M_NONE;
    case M_VALUE_INFO: return f == 2 ? M_TYPE : M_NONE;
    case M_TYPE: return (f == 4 || f == 5 || f == 9) ? M_TYPE_INNER : M_NONE; /* sequence, map, optional */
    case M_TYPE_INNER: return (f == 1 || f == 2) ? M_TYPE : M_NONE;           /* elem_type, value_type */
    case M_FUNCTION: return f == 7 ? M_NODE : M_NONE;
    case M_TRAINING: return (f == 1 || f == 2) ? M_GRAPH : M_NONE;
    default: return M_NONE;
    }
}

static int varint(const uint8_t **p, const uint8_t *end, uint64_t *v) {
    *v = 0;
    for (int s = 0; s < 64 && *p < end; s += 7) {
        uint8_t b = *(*p)++;
        *v |= (uint64_t)(b & 0x7f) << s;
        if (!(b & 0x80)) return 0;
    }
    return -1;
}

/* 1 when [p, end) as a `kind` message nests at most `left` more levels; 0 when deeper. Wire
 * errors stop the walk (and count as fine: protobuf-c refuses them). */
static int shallow(const uint8_t *p, const uint8_t *end, msg_kind kind, int left) {
    while (p < end) {
        uint64_t key, len;
        if (varint(&p, end, &key)) return 1;
        switch (key & 7) {
        case 0:
            if (varint(&p, end, &len)) return 1;
            break;
        case 1:
            if (end - p < 8) return 1;
            p += 8;
            break;
        case 5:
            if (end - p < 4) return 1;
            p += 4;
            break;
        case 2: {
            if (varint(&p, end, &len) || len > (uint64_t)(end - p)) return 1;
            msg_kind c = child(kind, key >> 3);
            if (c != M_NONE && (left == 0 || !shallow(p, p + len, c, left - 1))) return 0;
            p += len;
            break;
        }
        default: return 1; /* groups (3, 4) and invalid wire types: protobuf-c's to refuse */
        }
    }
    return 1;
}

int onnx_nesting_ok(const void *data, size_t n) {
    const uint8_t *p = data;
    return shallow(p, p + n, M_MODEL, ONNX_MAX_NESTING);
}
