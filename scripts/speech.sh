#!/usr/bin/env bash
# speech.sh — `make speech`: the speech scenario end to end (issue 27), on data made here.
#   1. the spoken digits, wake words, phrases and VAD clips (tools/make_spoken_digits.sh) into
#      BUILD/speech (reused when already complete);
#   2. tessera audio-train on the 1200 training digits (5 espeak-ng accents): a head on the
#      frozen openWakeWord embedding (--from embedding) and a CNN from scratch on the same log-mel
#      frames (--scratch), each with its defaults;
#   3. tessera eval of both on the 300 held-out espeak-ng digits (3 other accents, other variants
#      and speeds) and on the 100 flite digits (another synthesiser);
#   4. tessera kws (hey_jarvis, alexa) on the phrases, against the keyword each holds, and tessera
#      vad on the clips with 0.5-2 s of silence around a sentence: its first segment's start and
#      last segment's end against where the sentence was placed (within 100 ms);
#   5. a summary table, the wall time and the CPU time of the whole run.
#
#   bash scripts/speech.sh [BUILD]     (BUILD default build; needs BUILD/tessera and data/speech)
set -euo pipefail

BUILD="${1:-build}"
T="$BUILD/tessera"
OUT="$BUILD/speech"
SPOKEN=data/speech/spoken_digits # made by scripts/install-deps.sh
[ -x "$T" ] || { echo "speech: $T is not built (make)" >&2; exit 1; }
[ -f data/speech/openwakeword/embedding_model.onnx ] ||
    { echo "speech: no models in data/speech (bash scripts/install-deps.sh)" >&2; exit 1; }
t0=$(date +%s.%N)
elapsed() { echo "$(date +%s.%N) - $t0" | bc | xargs printf '%.0f'; }

mkdir -p "$OUT"
bash tools/make_spoken_digits.sh "$SPOKEN"
D="$SPOKEN/digits"
echo "speech: data ready after $(elapsed) s"

declare -A ACC
for kind in embedding scratch; do
    flag=(--from embedding)
    [ "$kind" = scratch ] && flag=(--scratch)
    "$T" audio-train --data "$D/train.tsv" --out "$OUT/model-$kind" "${flag[@]}" | tee "$OUT/train-$kind.log"
    for split in heldout flite; do
        "$T" eval --model "$OUT/model-$kind" --data "$D/$split.tsv" > "$OUT/eval-$kind-$split.log"
        ACC[$kind-$split]=$(sed -n 's/.*accuracy \([0-9.]*\)% (\([0-9]* of [0-9]*\).*/\1% (\2)/p' "$OUT/eval-$kind-$split.log")
        echo "speech: $kind on $split: ${ACC[$kind-$split]}"
    done
done
echo "speech: trained and scored after $(elapsed) s"

# kws on the phrases: right when the detections are exactly the phrase's keyword (or none)
P="$SPOKEN/phrases"
"$T" kws --keyword hey_jarvis,alexa "$P"/*.wav > "$OUT/kws.log"
kws_right=0 kws_total=0 kws_lines=""
while IFS=$'\t' read -r file keyword; do
    [ "$file" = file ] && continue
    got=$(awk -F'\t' -v f="$P/$file" '$1 == f { print $3 }' "$OUT/kws.log" | sort -u | paste -sd, -)
    want="$keyword"; [ "$keyword" = none ] && want=""
    kws_total=$((kws_total + 1))
    [ "$got" = "$want" ] && kws_right=$((kws_right + 1))
    kws_lines+="  $file: expected ${keyword}, detected ${got:-none}"$'\n'
done < "$P/phrases.tsv"

# vad on the clips: the first segment's start and the last one's end within 100 ms of where the
# sentence was placed
V="$SPOKEN/vad"
"$T" vad "$V"/*.wav > "$OUT/vad.log"
vad_right=0 vad_total=0 vad_lines=""
while IFS=$'\t' read -r file start end; do
    [ "$file" = file ] && continue
    vad_total=$((vad_total + 1))
    seg=$(awk -F'\t' -v f="$V/$file" '$1 == f { printf "%s-%s ", $2, $3 }' "$OUT/vad.log")
    ok=$(awk -F'\t' -v f="$V/$file" -v s="$start" -v e="$end" 'BEGIN { n = 0 }
        $1 == f { if (!n || $2 < a) a = $2; if (!n || $3 > b) b = $3; n++ }
        END { print (n && a - s < 0.1 && s - a < 0.1 && b - e < 0.1 && e - b < 0.1) ? 1 : 0 }' "$OUT/vad.log")
    vad_right=$((vad_right + ok))
    vad_lines+="  $file: placed ${start}-${end} s, found ${seg:-nothing}"$'\n'
done < "$V/segments.tsv"

wall=$(elapsed)
times > "$OUT/times.txt" # the builtin in this shell: its second line is the children's CPU time
user=$(tail -1 "$OUT/times.txt" | awk '{ print $1 }')
sys=$(tail -1 "$OUT/times.txt" | awk '{ print $2 }')
printf '\n%s\n' "speech: summary (digits: accuracy on clips no training voice said)"
printf '  %-44s %-20s %-20s\n' "model" "held-out espeak-ng" "flite"
printf '  %-44s %-20s %-20s\n' "head on the frozen openWakeWord embedding" "${ACC[embedding-heldout]}" "${ACC[embedding-flite]}"
printf '  %-44s %-20s %-20s\n' "CNN from scratch on the same log-mel frames" "${ACC[scratch-heldout]}" "${ACC[scratch-flite]}"
printf '  kws (hey_jarvis, alexa) on phrases: %d of %d right\n%s' "$kws_right" "$kws_total" "$kws_lines"
printf '  vad: %d of %d clips with the speech found within 100 ms of where it was placed\n%s' "$vad_right" "$vad_total" "$vad_lines"
printf '  time: %s s wall; CPU of the commands: user %s, system %s\n' "$wall" "$user" "$sys"
