#!/usr/bin/env bash
# demo.sh — tessera end to end on real mail, in under ten minutes on two cores:
#   1. split SpamAssassin (deduplicated) 80/20 once, as files (`tessera split`): every later step
#      reads the same held-out mails, and nothing but the training mails is used to learn;
#   2. learn a WordPiece vocabulary from the Brown Corpus, WordNet glosses and the training mails;
#   3. pretrain a small BERT (masked LM + next sentence) on the training mails' text, labels unused,
#      for 4.5 minutes, in bf16 (f32 master weights) where the CPU multiplies bf16 natively
#      (avx512_bf16; elsewhere bf16 goes through f32 and is slower than f32 itself), up to 4
#      sentence pairs packed in a row of 128 tokens (PACK: 88% of the slots hold real tokens a
#      pair a row, 99% packed, so the same minutes train on about 12% more text; the packed rows
#      compute exactly what their pairs compute alone), printing the held-out masked-LM accuracy
#      as it climbs;
#   4. what pretraining buys: fine-tune on only FEW (50) labelled mails, once from the pretrained
#      model and once from a random initialisation of the same shape (same steps, same recipe:
#      20 epochs, lr 5e-4), then the random start again at lr 1e-3 (its better rate on split seed
#      1, so that the comparison is not won by the rate alone), beside a bag-of-words logistic
#      regression (`tessera bow`) on the same FEW mails. Why 50: on split seed 1, 4.5 minutes of
#      pretraining bought +16 points on 50 mails (88.6% against 72.3% at lr 2e-4; at lr 5e-4,
#      chosen then, 90.3% against 72.3%) but only about +2 on 200 (93.8% vs 91.7%, and that after
#      13 minutes of pretraining);
#   5. the spam filter: fine-tune on all the training mails and score on the held-out ones beside
#      the majority-class baseline (`tessera eval`), then the bag-of-words model on them too. It
#      starts from a random initialisation (MAIN_INIT=random), not the pretrained model: on split
#      seed 1, two epochs from the pretrained model scored 96.65%, from random weights 97.97%.
#      Two such runs (training seeds 42, 43) are scored as an ensemble, each reading 256 tokens
#      (MAIN_LEN; a random start may have more positions than the pretrained shape), the head and
#      the tail of a long mail (--truncate head+tail: greeting and signature, where an unsubscribe
#      line sits). On split seeds 1 / 2 / 7 the ensembles scored 98.50 / 98.24 / 98.24%; with 128
#      tokens, head+tail: 97.62 / 97.97 / 98.50%; 128 from the head only: 97.97 / 97.89 / 97.62%;
#      a third member (128, head+tail) did not help: 97.80 / 97.62 / 98.41%. (The 128-token ensemble
#      scored 96.92% on the demo's split seed 42 in the first fresh-clone run; the move to 256 came
#      after that, and was decided on the seeds above.)
#   6. classify a few example mails with it (`tessera predict`).
#
#   bash scripts/install-deps.sh   # once: fetches data/text/*.txt and data/spam/spam.tsv
#   make demo                      # or: bash scripts/demo.sh
#
# The recipe was chosen on other split seeds (1, 2, 7), never on the demo's (42); docs/demo.md
# says what it prints and what the figures mean; docs/benchmarks.md holds the figures.
#
# Environment (defaults in brackets): BUILD [build], DEMO_DIR [$BUILD/demo], SPAM
# [data/spam/spam.tsv], TEXTS [data/text/brown.txt data/text/wordnet.txt: vocabulary text besides
# the training mails], SPLIT_SEED [42], FEW [50], VOCAB_SIZE [16000], LAYERS [2], HIDDEN [128],
# HEADS [2], INTERMEDIATE [512], MAX_LEN [128], PRETRAIN_MINUTES [4.5], PRETRAIN_BF16 [auto: 1 on
# a CPU with avx512_bf16, else 0; 1: pretrain with --bf16], PRETRAIN_STEPS [100000: the time limit
# ends it first], EVAL_EVERY [50], FEW_EPOCHS [20], EPOCHS [2], FINETUNE_MINUTES [3], MAIN_INIT
# [random, or pretrained: where the spam filter starts], MEMBERS [2: fine-tuning runs (seeds 42,
# 43, ...) scored as one ensemble, the mean of their class probabilities], THREADS [0: all cores],
# MAIN_LEN [256 from random weights, else MAX_LEN: tokens the spam filter reads], PACK [4: sentence
# pairs a pretraining row; 0: a pair a row].
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
BUILD="${BUILD:-build}"
DEMO_DIR="${DEMO_DIR:-$BUILD/demo}"
SPAM="${SPAM:-data/spam/spam.tsv}"
TEXTS="${TEXTS:-data/text/brown.txt data/text/wordnet.txt}"
SPLIT_SEED="${SPLIT_SEED:-42}"
FEW="${FEW:-50}"
VOCAB_SIZE="${VOCAB_SIZE:-16000}"
LAYERS="${LAYERS:-2}" HIDDEN="${HIDDEN:-128}" HEADS="${HEADS:-2}" INTERMEDIATE="${INTERMEDIATE:-512}"
MAX_LEN="${MAX_LEN:-128}"
PACK="${PACK:-4}"
PRETRAIN_BF16="${PRETRAIN_BF16:-auto}"
if [ "$PRETRAIN_BF16" = auto ]; then
    PRETRAIN_BF16=0
    grep -qw avx512_bf16 /proc/cpuinfo 2>/dev/null && PRETRAIN_BF16=1
fi
bf16=()
[ "$PRETRAIN_BF16" = 1 ] && bf16=(--bf16)
PRETRAIN_MINUTES="${PRETRAIN_MINUTES:-4.5}"
PRETRAIN_STEPS="${PRETRAIN_STEPS:-100000}"
EVAL_EVERY="${EVAL_EVERY:-50}"
FEW_EPOCHS="${FEW_EPOCHS:-20}"
EPOCHS="${EPOCHS:-2}"
FINETUNE_MINUTES="${FINETUNE_MINUTES:-3}"
MAIN_INIT="${MAIN_INIT:-random}"
MEMBERS="${MEMBERS:-2}"
THREADS="${THREADS:-0}"
MAIN_LEN="${MAIN_LEN:-$([ "$MAIN_INIT" = random ] && echo 256 || echo "$MAX_LEN")}"
TESSERA="$BUILD/tessera"

read -r -a texts <<<"$TEXTS"
for f in "$SPAM" "${texts[@]}"; do
    [ -f "$f" ] || { echo "demo: $f is missing; run: bash scripts/install-deps.sh" >&2; exit 1; }
done
step() { printf '\n== %s\n' "$*"; }
# The accuracy a `tessera finetune`, `eval` or `bow` run printed last ("test accuracy 97.36%",
# "accuracy (ensemble of 2 models) 97.89%").
accuracy() { grep -oE 'accuracy( \(ensemble of [0-9]+ models\))? [0-9.]+%' "$1" | tail -1 | awk '{print $NF}'; }
t0=$SECONDS

step "build"
[ -f "$BUILD/CMakeCache.txt" ] || cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$BUILD" -j "$(nproc 2>/dev/null || echo 2)" --target tessera_cli >/dev/null
mkdir -p "$DEMO_DIR"
rm -rf "$DEMO_DIR/split" "$DEMO_DIR/pretrained" "$DEMO_DIR"/few-* "$DEMO_DIR"/spam-model*
S="$DEMO_DIR/split"

step "split: $SPAM deduplicated, 20% held out (split seed $SPLIT_SEED), $FEW training mails as a small labelled set"
"$TESSERA" split --data "$SPAM" --out "$S" --split-seed "$SPLIT_SEED" --subset "$FEW"

step "vocabulary: $VOCAB_SIZE WordPiece tokens from ${texts[*]} and the training mails"
"$TESSERA" vocab --out "$DEMO_DIR/vocab.txt" --size "$VOCAB_SIZE" "${texts[@]}" "$S/train.txt"

step "pretraining: BERT $LAYERS x $HIDDEN on the training mails' text (no labels) for $PRETRAIN_MINUTES minutes"
"$TESSERA" pretrain --vocab "$DEMO_DIR/vocab.txt" --corpus "$S/train.txt" --out "$DEMO_DIR/pretrained" \
    --layers "$LAYERS" --hidden "$HIDDEN" --heads "$HEADS" --intermediate "$INTERMEDIATE" --max-len "$MAX_LEN" \
    --batch 32 --lr 1e-3 --max-steps "$PRETRAIN_STEPS" --max-minutes "$PRETRAIN_MINUTES" --eval-every "$EVAL_EVERY" \
    --untie-embeddings --pack "$PACK" --threads "$THREADS" "${bf16[@]}"

few() { # few NAME [finetune flags]: fine-tune on the FEW labelled mails, test on the held-out ones
    local name=$1
    shift
    "$TESSERA" finetune --model "$DEMO_DIR/pretrained" --train "$S/train-$FEW.tsv" --eval "$S/test.tsv" \
        --out "$DEMO_DIR/few-$name" --epochs "$FEW_EPOCHS" --test-every 0 --batch 16 --max-len "$MAX_LEN" \
        --lr 5e-4 --seed 42 --threads "$THREADS" "$@" | tee "$DEMO_DIR/few-$name.log"
}
step "what pretraining buys: fine-tuning on $FEW labelled mails, from the pretrained model"
few pretrained
step "... and from a random initialisation of the same shape (same steps)"
few random --random-init
step "... and from a random initialisation at a learning rate of its own (1e-3 instead of 5e-4)"
few random-lr1e-3 --random-init --lr 1e-3
step "... and a bag-of-words logistic regression on the same $FEW mails"
"$TESSERA" bow --vocab "$DEMO_DIR/vocab.txt" --train "$S/train-$FEW.tsv" --eval "$S/test.tsv" --threads "$THREADS" |
    tee "$DEMO_DIR/few-bow.log"

init=() start="the pretrained model"
[ "$MAIN_INIT" = pretrained ] || init=(--random-init) start="random weights"
models=()
for ((m = 1; m <= MEMBERS; m++)); do
    step "the spam filter, $m of $MEMBERS: BERT $LAYERS x $HIDDEN from $start, fine-tuned on all the training mails ($EPOCHS epochs, $MAIN_LEN tokens, seed $((41 + m)))"
    "$TESSERA" finetune --model "$DEMO_DIR/pretrained" "${init[@]}" --train "$S/train.tsv" --eval "$S/test.tsv" \
        --out "$DEMO_DIR/spam-model-$m" --epochs "$EPOCHS" --max-minutes "$FINETUNE_MINUTES" --test-every 0 --batch 16 \
        --max-len "$MAIN_LEN" --lr 5e-4 --seed $((41 + m)) --truncate head+tail --threads "$THREADS"
    models+=("$DEMO_DIR/spam-model-$m")
done
step "the spam filter: the $MEMBERS models as one ensemble on the held-out mails, and a bag-of-words model"
"$TESSERA" eval --model "${models[@]}" --data "$S/test.tsv" --threads "$THREADS" | tee "$DEMO_DIR/eval.log"
"$TESSERA" bow --vocab "$DEMO_DIR/vocab.txt" --train "$S/train.tsv" --eval "$S/test.tsv" --threads "$THREADS" |
    tee "$DEMO_DIR/bow.log"

step "predicting: a few mails the model has not seen"
"$TESSERA" predict --model "${models[@]}" --threads "$THREADS" <<'MAILS'
Hi Tom, the meeting moved to 3pm tomorrow. I attached the minutes from last week; could you check the budget numbers before then? Thanks, Anna
CONGRATULATIONS!!! You have been selected to receive a FREE 7-day Caribbean cruise. Click here now to claim your prize, this offer expires in 24 hours!
Has anyone got the new kernel to build on Red Hat 7.3? make fails with an undefined reference in the ALSA driver, and I could not find anything in the list archives.
Earn $5,000 a week working from home! No experience needed. To be removed from our mailing list reply with REMOVE in the subject line.
MAILS

step "summary (held-out mails of split seed $SPLIT_SEED)"
printf '  %-62s %s\n' "spam filter: $MEMBERS BERTs from $start, all training mails" "$(accuracy "$DEMO_DIR/eval.log")" \
    "bag-of-words logistic regression on all training mails" "$(accuracy "$DEMO_DIR/bow.log")" \
    "$FEW labelled mails: BERT from the pretrained model" "$(accuracy "$DEMO_DIR/few-pretrained.log")" \
    "$FEW labelled mails: BERT from a random initialisation" "$(accuracy "$DEMO_DIR/few-random.log")" \
    "$FEW labelled mails: the same at lr 1e-3" "$(accuracy "$DEMO_DIR/few-random-lr1e-3.log")" \
    "$FEW labelled mails: bag-of-words logistic regression" "$(accuracy "$DEMO_DIR/few-bow.log")"
printf '  %-62s %s\n' "majority baseline (every mail the commoner label)" "$(grep -o 'majority baseline [0-9.]*%' "$DEMO_DIR/bow.log" | cut -d' ' -f3)"
printf '\ndemo: done in %d s; models in %s\n' "$((SECONDS - t0))" "$DEMO_DIR"
