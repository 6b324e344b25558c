#!/usr/bin/env bash
# demo_tiny.sh — scripts/demo.sh's pieces on a tiny configuration (ctest demo_tiny, well under a
# minute): generated mails whose label is decided by a word, a one-layer BERT of width 32, a few
# steps of each stage. Checks that every stage ran and printed its figure, that the held-out
# test file is disjoint from the training file, and that predict labelled the example mails.
#   bash tests/demo_tiny.sh BUILD_DIR
set -euo pipefail
BUILD="$(cd "$1" && pwd)"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
W="$(mktemp -d)"
trap 'rm -rf "$W"' EXIT
fail() { echo "demo_tiny: FAIL: $*" >&2; exit 1; }

# 120 mails: spam says "offer", "prize" or "free"; ham talks about meetings and code.
words_ham=(meeting tomorrow budget kernel build driver minutes list thanks report)
words_spam=(offer prize free click now money cruise winner)
{
    printf 'label\ttext\n'
    for i in $(seq 1 120); do
        if ((i % 3 == 0)); then label=spam w=("${words_spam[@]}"); else label=ham w=("${words_ham[@]}"); fi
        text=""
        for k in 1 2 3 4 5 6; do text+="${w[$(((i * 7 + k * 13) % ${#w[@]}))]} "; done
        printf '%s\t%s mail number %d. the %s is here.\n' "$label" "$text" "$i" "${w[$((i % ${#w[@]}))]}"
    done
} >"$W/spam.tsv"
for i in $(seq 1 300); do printf 'the meeting moved to %d. a free offer for number %d.\n\n' "$i" "$i"; done >"$W/text.txt"

out="$W/demo.log"
BUILD="$BUILD" DEMO_DIR="$W/demo" SPAM="$W/spam.tsv" TEXTS="$W/text.txt" FEW=24 VOCAB_SIZE=200 \
    LAYERS=1 HIDDEN=32 HEADS=2 INTERMEDIATE=64 MAX_LEN=32 MAIN_LEN=48 PRETRAIN_STEPS=10 EVAL_EVERY=5 \
    FEW_EPOCHS=2 EPOCHS=2 THREADS=2 bash "$ROOT/scripts/demo.sh" >"$out" 2>&1 || { cat "$out"; fail "demo.sh exited $?"; }

S="$W/demo/split"
[ "$(wc -l <"$S/train-24.tsv")" -eq 25 ] || fail "train-24.tsv does not hold 24 rows"
n_test=$(($(wc -l <"$S/test.tsv") - 1)) n_train=$(($(wc -l <"$S/train.tsv") - 1))
[ "$n_test" -eq 24 ] && [ "$n_train" -eq 96 ] || fail "split $n_train / $n_test, want 96 / 24"
if [ -n "$(comm -12 <(tail -n +2 "$S/train.tsv" | sort) <(tail -n +2 "$S/test.tsv" | sort))" ]; then
    fail "a held-out mail is also a training mail"
fi
grep -q 'held-out MLM accuracy' "$out" || { cat "$out"; fail "pretraining printed no held-out MLM accuracy"; }
for what in "spam filter: 2 BERTs from random" "bag-of-words logistic regression on all" \
    "24 labelled mails: BERT from the pretrained" "24 labelled mails: BERT from a random" \
    "24 labelled mails: the same at lr 1e-3" "24 labelled mails: bag-of-words"; do
    grep -Eq "$what.* [0-9]+\.[0-9]+%\$" "$out" || { cat "$out"; fail "no figure for '$what'"; }
done
grep -q -- '--random-init: .* no weights loaded' "$out" || fail "the random-initialisation run loaded weights"
[ "$(grep -Ec '^(ham|spam)\b' "$out")" -ge 4 ] || { cat "$out"; fail "predict did not label the 4 example mails"; }
grep -Eq "majority baseline .* [0-9]+\.[0-9]+%\$" "$out" || { cat "$out"; fail "no majority baseline"; }
grep -q '^demo: done in' "$out" || fail "no end line"
echo "demo_tiny: ok"
sed -n '/== summary/,$p' "$out"
