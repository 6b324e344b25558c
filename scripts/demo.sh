#!/usr/bin/env bash
# demo.sh — tessera end to end on real text, in about ten minutes on two cores:
#   1. learn a 16,000-token WordPiece vocabulary from the Brown Corpus + WordNet glosses;
#   2. pretrain a small BERT (4 layers, hidden 256) on them for a few minutes (masked LM + NSP);
#   3. fine-tune it twice on the SpamAssassin corpus (deduplicated, the same 80/20 split, two
#      training seeds) and score the two as an ensemble (`tessera eval --model A B`: the mean of
#      their class probabilities) on the held-out mails, beside the majority-class baseline;
#   4. classify a few example mails with the ensemble (`tessera predict --model A B`).
#
#   bash scripts/install-deps.sh   # once: fetches data/text/*.txt and data/spam/spam.tsv
#   make demo                      # or: bash scripts/demo.sh
#
# Why an ensemble: one fine-tuning run lands anywhere in about 96.0-97.9% on a split (its seed,
# and the time-limited pretraining, move it). On other splits (split seeds 1, 2 and 7, never this
# one), pairs of 3-epoch runs scored 96.65 / 97.80%, 97.00 / 97.09% and 96.83 / 97.89%, their
# ensembles 97.89%, 97.80% and 97.44%: 0.1-0.75 points above the pair's average, and never below
# it; the ensemble also does not depend on one run that went badly.
#
# Environment: BUILD (default build), DEMO_DIR (default $BUILD/demo), PRETRAIN_MINUTES (3.5),
# MEMBERS (2: fine-tuning runs in the ensemble), FINETUNE_EPOCHS (3, each), FINETUNE_MINUTES
# (2.5, each: a run stops there even mid-epoch, so the demo ends within ten minutes on a busy
# machine too), THREADS (0: all cores), VOCAB_SIZE (16000).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
BUILD="${BUILD:-build}"
DEMO_DIR="${DEMO_DIR:-$BUILD/demo}"
PRETRAIN_MINUTES="${PRETRAIN_MINUTES:-3.5}"
MEMBERS="${MEMBERS:-2}"
FINETUNE_EPOCHS="${FINETUNE_EPOCHS:-3}"
FINETUNE_MINUTES="${FINETUNE_MINUTES:-2.5}"
THREADS="${THREADS:-0}"
VOCAB_SIZE="${VOCAB_SIZE:-16000}"
TESSERA="$BUILD/tessera"

for f in data/text/brown.txt data/text/wordnet.txt data/spam/spam.tsv; do
    [ -f "$f" ] || { echo "demo: $f is missing; run: bash scripts/install-deps.sh" >&2; exit 1; }
done
step() { printf '\n== %s\n' "$*"; }
t0=$SECONDS

step "build"
[ -f "$BUILD/CMakeCache.txt" ] || cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$BUILD" -j "$(nproc 2>/dev/null || echo 2)" --target tessera_cli >/dev/null
mkdir -p "$DEMO_DIR"
rm -rf "$DEMO_DIR/pretrained" "$DEMO_DIR"/spam-model*

step "vocabulary: $VOCAB_SIZE WordPiece tokens from the Brown Corpus and WordNet glosses"
"$TESSERA" vocab --out "$DEMO_DIR/vocab.txt" --size "$VOCAB_SIZE" data/text/brown.txt data/text/wordnet.txt

step "pretraining: BERT 4 x 256 on Brown + WordNet for $PRETRAIN_MINUTES minutes"
"$TESSERA" pretrain --vocab "$DEMO_DIR/vocab.txt" --corpus data/text/brown.txt data/text/wordnet.txt \
    --out "$DEMO_DIR/pretrained" --layers 4 --hidden 256 --heads 4 --intermediate 1024 --max-len 128 \
    --batch 32 --lr 5e-4 --max-steps 100000 --max-minutes "$PRETRAIN_MINUTES" --eval-every 100 --bf16 \
    --threads "$THREADS"

models=()
for ((m = 1; m <= MEMBERS; m++)); do
    step "fine-tuning $m of $MEMBERS on SpamAssassin (ham vs spam, deduplicated, 80/20 split; seed $((41 + m)))"
    "$TESSERA" finetune --model "$DEMO_DIR/pretrained" --train data/spam/spam.tsv --out "$DEMO_DIR/spam-model-$m" \
        --test-split 0.2 --split-seed 42 --seed $((41 + m)) --epochs "$FINETUNE_EPOCHS" \
        --max-minutes "$FINETUNE_MINUTES" --batch 16 --max-len 128 --lr 3e-4 --bf16 --threads "$THREADS"
    models+=("$DEMO_DIR/spam-model-$m")
done

step "the ensemble of the $MEMBERS models on the held-out mails"
"$TESSERA" eval --model "${models[@]}" --data data/spam/spam.tsv --test-split 0.2 --seed 42 --threads "$THREADS"

step "predicting: a few mails the models have not seen"
"$TESSERA" predict --model "${models[@]}" --threads "$THREADS" <<'MAILS'
Hi Tom, the meeting moved to 3pm tomorrow. I attached the minutes from last week; could you check the budget numbers before then? Thanks, Anna
CONGRATULATIONS!!! You have been selected to receive a FREE 7-day Caribbean cruise. Click here now to claim your prize, this offer expires in 24 hours!
Has anyone got the new kernel to build on Red Hat 7.3? make fails with an undefined reference in the ALSA driver, and I could not find anything in the list archives.
Earn $5,000 a week working from home! No experience needed. To be removed from our mailing list reply with REMOVE in the subject line.
MAILS

printf '\ndemo: done in %d s; models in %s\n' "$((SECONDS - t0))" "$DEMO_DIR"
