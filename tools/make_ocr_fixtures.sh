#!/usr/bin/env bash
# make_ocr_fixtures.sh — the reference outputs of the three PaddleOCR models (data/ocr, from
# scripts/install-deps.sh) on real inputs, computed by ONNX Runtime (onnxruntime-node in
# tools/ort), for tests/test_ocr_parity.c. Inputs are text rendered by ImageMagick (English and
# Chinese), taken as raw RGB pixels and normalised as each model expects (tools/ocr_inputs.js):
#   det.safetensors  x [1, 3, 96, 256]   a two-line page,            sigmoid_0.tmp_0 [1, 1, 96, 256]
#   rec.safetensors  x [2, 3, 48, 96]    two text lines (en, zh),    softmax_11.tmp_0 [2, 12, 6625]
#   cls.safetensors  x [2, 3, 48, 192]   a line upright and rotated, softmax_0.tmp_0 [2, 2]
# Each file holds the input "x" and ONNX Runtime's output under its ONNX name.
#
#   bash tools/make_ocr_fixtures.sh [OUT_DIR]      (default tests/fixtures/ocr)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
OUT="${1:-$ROOT/tests/fixtures/ocr}"
MODELS="${OCR_MODELS:-$ROOT/data/ocr}"   # where install-deps.sh puts them
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
CJK="$(fc-list : file | grep -m1 'NotoSansCJK-Regular' | cut -d: -f1)"
LATIN="$(fc-list : file | grep -m1 'DejaVuSans.ttf' | cut -d: -f1)"
[ -n "$CJK" ] && [ -n "$LATIN" ] || { echo "make_ocr_fixtures: needs fonts-noto-cjk and fonts-dejavu" >&2; exit 1; }
mkdir -p "$OUT"

# render W H FONT POINTSIZE TEXT OUT.rgb [ROTATE]: black text on white, W x H raw RGB bytes
render() {
    convert -size "$1x$2" xc:white -font "$3" -pointsize "$4" -fill black -gravity west \
        -annotate +4+0 "$5" ${7:+-rotate "$7"} -depth 8 "rgb:$6"
}
render 256 48 "$LATIN" 22 "Invoice 2024-07" "$tmp/p1.rgb"
render 256 48 "$CJK" 22 "今天天气很好" "$tmp/p2.rgb"
cat "$tmp/p1.rgb" "$tmp/p2.rgb" > "$tmp/page.rgb"          # 256 x 96: two lines, one above the other
render 96 48 "$LATIN" 19 "Hello, OCR" "$tmp/l1.rgb"
render 96 48 "$CJK" 20 "中文识别" "$tmp/l2.rgb"
render 192 48 "$LATIN" 26 "upright text" "$tmp/c1.rgb"
render 192 48 "$LATIN" 26 "upright text" "$tmp/c2.rgb" 180

node "$ROOT/tools/ocr_inputs.js" det 256 96 "$tmp/det_in.safetensors" "$tmp/page.rgb"
node "$ROOT/tools/ocr_inputs.js" rec 96 48 "$tmp/rec_in.safetensors" "$tmp/l1.rgb" "$tmp/l2.rgb"
node "$ROOT/tools/ocr_inputs.js" cls 192 48 "$tmp/cls_in.safetensors" "$tmp/c1.rgb" "$tmp/c2.rgb"
for m in det:ch_PP-OCRv4_det_infer rec:ch_PP-OCRv4_rec_infer cls:ch_ppocr_mobile_v2.0_cls_infer; do
    name="${m%%:*}"
    node "$ROOT/tools/ort_run.js" "$MODELS/${m#*:}.onnx" "$tmp/${name}_in.safetensors" "$tmp/${name}_out.safetensors"
    node "$ROOT/tools/ocr_inputs.js" merge "$OUT/$name.safetensors" "$tmp/${name}_in.safetensors" "$tmp/${name}_out.safetensors"
done
ls -l "$OUT"
