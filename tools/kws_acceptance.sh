#!/usr/bin/env bash
# kws_acceptance.sh — issue 27's acceptance figures for `tessera kws`: "hey jarvis" spoken by 24
# espeak-ng accent x voice-variant combinations and the 5 flite voices (29 positives) must be
# detected (hey_jarvis, threshold 0.5) at least 27 times, and 400 clips of spoken digits (the ten
# digits by the same 40 voices) must give no detection at all. The clips are synthesised here
# (espeak-ng, flite), deterministically, into a cache directory, then scored by one
# `tessera kws --json` run over all of them.
#
#   bash tools/kws_acceptance.sh [BUILD_DIR (build)] [CACHE_DIR (BUILD_DIR/kws_acceptance)]
#
# Prints the counts and the clips that failed; exit 0 when both figures hold, 1 when not, 2 when
# a tool is missing.
set -euo pipefail
build=${1:-build}
cache=${2:-$build/kws_acceptance}
tessera=$build/tessera
for t in espeak-ng flite sox; do
  command -v $t >/dev/null || { echo "kws_acceptance: $t is not installed" >&2; exit 2; }
done
[ -x "$tessera" ] || { echo "kws_acceptance: $tessera is not built" >&2; exit 2; }
accents=(en-us en-gb en-gb-scotland en-gb-x-rp en-029 en-gb-x-gbclan)
variants=(m1 m3 f1 f3)
flites=(kal kal16 awb rms slt)
digits=(zero one two three four five six seven eight nine)
mkdir -p "$cache/pos" "$cache/neg"
# say FILE TEXT ENGINE VOICE: one clip, 16 kHz mono s16 WAV (skipped when already made)
say() {
  local f=$1 text=$2 engine=$3 voice=$4
  [ -s "$f" ] && return 0
  if [ "$engine" = espeak ]; then espeak-ng -v "$voice" -w "$f.tmp.wav" "$text"
  else flite -voice "$voice" -t "$text" -o "$f.tmp.wav"; fi
  sox "$f.tmp.wav" -r 16000 -c 1 -b 16 "$f"
  rm -f "$f.tmp.wav"
}
voices=()
for a in "${accents[@]}"; do for v in "${variants[@]}"; do voices+=("espeak:$a+$v"); done; done
for v in "${flites[@]}"; do voices+=("flite:$v"); done
# 24 espeak + 5 flite voices say "hey jarvis"; 40 voices (the espeak ones, the flite ones and 11
# more espeak accent x variant pairs) say each digit: 400 clips
extra=(en-us+m2 en-us+f2 en-gb+m2 en-gb+f2 en-gb-scotland+m2 en-gb-x-rp+f2 en-029+m2 en-029+f2 en-gb-x-gbclan+m2
       en-us-nyc+m1 en-us-nyc+f1)
for voice in "${voices[@]}"; do
  engine=${voice%%:*} name=${voice#*:}
  say "$cache/pos/${engine}_${name}.wav" "hey jarvis" "$engine" "$name"
done
for voice in "${voices[@]}" "${extra[@]/#/espeak:}"; do
  engine=${voice%%:*} name=${voice#*:}
  for d in "${digits[@]}"; do say "$cache/neg/${engine}_${name}_$d.wav" "$d" "$engine" "$name"; done
done
npos=$(ls "$cache"/pos/*.wav | wc -l) nneg=$(ls "$cache"/neg/*.wav | wc -l)
"$tessera" kws --keyword hey_jarvis --threshold 0.5 "$cache"/pos/*.wav "$cache"/neg/*.wav >"$cache/detections.tsv"
found=$(cut -f1 "$cache/detections.tsv" | grep '/pos/' | sort -u | wc -l)
false=$(cut -f1 "$cache/detections.tsv" | grep -c '/neg/' || true)
echo "hey_jarvis at 0.5: $found of $npos positives detected (want >= 27), $false detections on $nneg digit clips (want 0)"
for f in "$cache"/pos/*.wav; do grep -q "^$f	" "$cache/detections.tsv" || echo "  missed: $f"; done
grep '/neg/' "$cache/detections.tsv" | sed 's/^/  false: /' || true
[ "$found" -ge 27 ] && [ "$false" -eq 0 ]
