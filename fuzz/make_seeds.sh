#!/usr/bin/env bash
# make_seeds.sh — write the fuzzers' seed inputs, fuzz/corpus/<target>/*: a few tiny valid files
# per parser for libFuzzer to start mutating from. The files are checked in; run this only to
# regenerate them after changing it (it rewrites its own files in fuzz/corpus/, and nothing else).
#
#   bash fuzz/make_seeds.sh
set -euo pipefail

CORPUS="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/corpus"
mkdir -p "$CORPUS"/{safetensors,config,vocab,textcls,squad,pretrain,onnx,device_profile}

# bytes FILE PART...: the parts joined, with printf's escapes (\n, \t, \xNN) expanded, into FILE.
bytes() {
    local file="$1" fmt
    shift
    fmt=$(IFS=; printf '%s' "$*")
    # shellcheck disable=SC2059
    printf "$fmt" > "$CORPUS/$file"
}

# ---------------------------------------------------------------- safetensors
# le64 N: N as 8 little-endian bytes (printf escapes).
le64() {
    local hex i out=""
    hex=$(printf '%016x' "$1")
    for ((i = 14; i >= 0; i -= 2)); do out+="\\x${hex:i:2}"; done
    printf '%s' "$out"
}
# st FILE DATA HEADER-PART...: a safetensors file, the header (the parts joined) padded with
# spaces to a multiple of 8; DATA is the raw bytes as printf escapes.
st() {
    local file="$1" data="$2" header
    shift 2
    header=$(IFS=; printf '%s' "$*")
    while (( ${#header} % 8 )); do header+=" "; done
    # shellcheck disable=SC2059
    { printf "$(le64 ${#header})"; printf '%s' "$header"; printf "$data"; } > "$CORPUS/safetensors/$file"
}
st two.safetensors '\x00\x00\x80\x3f\x00\x00\x00\xc0\x07\x00\x00\x00\x00\x00\x00\x00' \
    '{"__metadata__":{"format":"pt"},"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},' \
    '"b":{"dtype":"I64","shape":[1,1],"data_offsets":[8,16]}}'
st dtypes.safetensors '\x80\x3f\x00\xc0\x01\x00\x00\x3c\x00\x00\x00\x00\x00\x00\xf0\x3f' \
    '{"h":{"dtype":"BF16","shape":[2],"data_offsets":[0,4]},"m":{"dtype":"BOOL","shape":[2],"data_offsets":[4,6]},' \
    '"s":{"dtype":"F16","shape":[],"data_offsets":[6,8]},"d":{"dtype":"F64","shape":[1],"data_offsets":[8,16]},' \
    '"e":{"dtype":"I32","shape":[0,3],"data_offsets":[16,16]}}'
st empty.safetensors '' '{}'
st meta.safetensors '\x01\x02\x03' \
    '{"__metadata__":{"format":"tessera-train-state-1","step":"12"},' \
    '"w.weight@MOMENT1":{"dtype":"U8","shape":[3],"data_offsets":[0,3]}}'

# ---------------------------------------------------------------- config.json
cat > "$CORPUS/config/bert-base.json" <<'JSON'
{
  "architectures": ["BertForMaskedLM"],
  "attention_probs_dropout_prob": 0.1,
  "hidden_act": "gelu",
  "hidden_dropout_prob": 0.1,
  "hidden_size": 768,
  "initializer_range": 0.02,
  "intermediate_size": 3072,
  "layer_norm_eps": 1e-12,
  "max_position_embeddings": 512,
  "model_type": "bert",
  "num_attention_heads": 12,
  "num_hidden_layers": 12,
  "pad_token_id": 0,
  "position_embedding_type": "absolute",
  "type_vocab_size": 2,
  "vocab_size": 30522
}
JSON
cat > "$CORPUS/config/classifier.json" <<'JSON'
{"architectures":["BertForSequenceClassification"],"hidden_size":64,"num_hidden_layers":2,
"num_attention_heads":4,"intermediate_size":128,"max_position_embeddings":64,"type_vocab_size":2,
"vocab_size":100,"hidden_act":"gelu_new","classifier_dropout":null,"id2label":{"0":"ham","1":"spam"},
"num_labels":2,"is_decoder":false,"add_cross_attention":false}
JSON
bytes config/tiny.json \
    '{"vocab_size":8,"hidden_size":4,"num_hidden_layers":1,"num_attention_heads":2,"intermediate_size":8,' \
    '"max_position_embeddings":8,"type_vocab_size":1,"hidden_act":"relu","architectures":["BertForQuestionAnswering"]}'

# ---------------------------------------------------------------- vocab.txt
# The first byte picks the case: odd ('[', '#') uncased, even ('b') cased.
bytes vocab/uncased.txt '[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nthe\nquick\nbrown\nfox\njump\n##ed\nover\nlazy\n' \
    'dog\n.\n,\n?\n!\n'\''\nun\n##aff\n##able\ncat\n##s\nsat\non\nmat\n'
bytes vocab/cased.txt 'b\n[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nThe\nthe\n\xc3\xa9t\xc3\xa9\ncaf\xc3\xa9\n' \
    '\xe6\x9d\xb1\n\xe4\xba\xac\n##s\nUn\n##aff\n##able\n'
bytes vocab/crlf.txt '#comment \r\n[UNK]\r\n[PAD]  \r\n[CLS]\t\r\n[SEP]\r\n[SEP]\r\n\r\na\r\n##a\r\n##\r\n'
bytes vocab/no-mask.txt '[PAD]\n[UNK]\n[CLS]\n[SEP]\nd\n##o\n##g\n##i\n##d\n'

# ---------------------------------------------------------------- text classification (each
# input is read as TSV, CSV and JSONL alike)
bytes textcls/single.tsv 'text\tlabel\nBuy cheap meds now\tspam\nMeeting at noon?\tham\n' \
    'Buy cheap meds now\tspam\n\nsee you\tham\n'
bytes textcls/pairs.tsv 'label\ttext\ttext_b\n1\tA man plays.\tSomeone plays.\n0\tA cat sat.\tThe dog ran.\n'
bytes textcls/quoted.csv '\xef\xbb\xbftext,label\r\n"Hello, ""world""",ham\r\n"multi\nline",spam\r\nplain,0\r\n'
bytes textcls/pairs.csv 'text,text_b,label\nfirst,second,1\nthird,fourth,0\n'
bytes textcls/rows.jsonl '{"text": "free money", "label": "spam"}\n{"text": "lunch?", "label": "ham"}\n\n' \
    '{"text": "x", "text_b": "y", "label": 1}\n{"text": "z", "label": true}\n'
bytes textcls/no-header.tsv 'spam\tWin a prize\nham\tHi Bob\n'

# ---------------------------------------------------------------- SQuAD (the first byte picks
# relocation: odd ('{') relocate answers, even (' ') refuse misplaced ones)
bytes squad/two.json '{"version": "1.1", "data": [{"title": "Paris", "paragraphs": [{"context": ' \
    '"Paris is the capital of France. The river in the city is the Seine, where a cat sat.", "qas": [' \
    '{"id": "q1", "question": "What is the capital of France?", "answers": [{"text": "Paris", "answer_start": 0}, ' \
    '{"text": "paris", "answer_start": 0}]}, {"id": "q2", "question": "Where did the cat sit?", "answers": [' \
    '{"text": "the Seine", "answer_start": 57}]}]}]}]}\n'
bytes squad/misplaced.json ' {"data": [{"paragraphs": [{"context": "The quick brown fox jumped over the lazy dog. ' \
    'The dog sat.", "qas": [{"id": "a", "question": "Who jumped?", ' \
    '"answers": [{"text": "fox", "answer_start": 3}]}, ' \
    '{"id": "b", "question": "What sat?", "answers": []}]}, {"context": "", "qas": [{"id": "c", "question": ' \
    '"empty?", "answers": [{"text": "x", "answer_start": 0}]}]}]}]}\n'
sed 's/^ //' "$CORPUS/squad/misplaced.json" > "$CORPUS/squad/relocate.json"
bytes squad/unicode.json '{"data":[{"paragraphs":[{"context":"un aff able caf\xc3\xa9 [MASK] \xe6\x9d\xb1 s",' \
    '"qas":[{"id":"u","question":"a b c d e t s a b c d e t",' \
    '"answers":[{"text":"caf\xc3\xa9","answer_start":12}]}]}]}]}'

# ---------------------------------------------------------------- pretraining text (a blank line
# ends a document; the first byte's low bit turns on whole-word masking)
bytes pretrain/two-docs.txt 'The quick brown fox jumped over the lazy dog.\nThe dog sat on the mat.\nA cat sat.\n\n' \
    'Paris is the capital of France.\nThe river is in the city.\nWho was there?\n'
bytes pretrain/short-docs.txt 'unaffable cats played\nthe cat jumped\n\n\ndogs\n\n' \
    'a b c d e t s\n##s ## [MASK] [SEP]\n\r\n' \
    '\xc3\xa9t\xc3\xa9 \xe6\x9d\xb1\xe4\xba\xac\nend'
bytes pretrain/one-doc.txt 'b one line without a blank line, so one document only: the quick brown fox jumped over ' \
    'the lazy dog again and again.\n'

# ---------------------------------------------------------------- ONNX models: a few of ONNX's node
# tests (Debian's libonnx-testdata; skipped, with a line saying so, without it) and the importer's
# own test models (tests/fixtures/onnx_import/, which exercise folding at import: shape
# arithmetic, constants, initializers, Conv + BatchNormalization)
mkdir -p "$CORPUS/onnx"
NODE=/usr/share/libonnx-testdata/data/node
if [ -d "$NODE" ]; then
    for t in relu conv_with_strides_padding gemm_all_attributes reshape_reordered_all_dims slice \
             resize_upsample_scales_nearest batchnorm_example maxpool_2d_pads softmax_axis_1 gather_1 \
             concat_3d_axis_1 clip_example constantofshape_int_zeros expand_dim_changed if; do
        cp "$NODE/test_$t/model.onnx" "$CORPUS/onnx/$t.onnx"
    done
else
    printf 'make_seeds: %s is missing (apt-get install libonnx-testdata): no node-test seeds\n' "$NODE"
fi
for d in "$CORPUS"/../../tests/fixtures/onnx_import/*/; do
    cp "$d/model.onnx" "$CORPUS/onnx/$(basename "$d").onnx"
done

# ---------------------------------------------------------------- device profiles: two built-in ones
cp "$CORPUS"/../../profiles/ipu-mk2.json "$CORPUS"/../../profiles/h200.json "$CORPUS/device_profile/"

n=$(find "$CORPUS" -type f | wc -l)
size=$(find "$CORPUS" -type f -exec cat {} + | wc -c)
printf 'make_seeds: wrote %d files, %d bytes, under %s\n' "$n" "$size" "$CORPUS"
