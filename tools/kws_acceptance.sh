#!/usr/bin/env bash
# kws_acceptance.sh — issue 27's acceptance figures for `tessera kws`: the 29 "hey jarvis" clips of
# tools/make_spoken_digits.sh (24 espeak-ng accent x variant combinations + the 5 flite voices)
# must be detected (hey_jarvis, threshold 0.5) at least 27 times, and its 400 held-out digit clips
# (digits/heldout: 300 espeak-ng, digits/flite: 100) must give no detection at all. The clips are
# made by make_spoken_digits.sh into DIR (idempotent: an existing complete DIR is reused, as
# scripts/install-deps.sh leaves data/speech/spoken_digits), then scored by one `tessera kws` run.
#
#   bash tools/kws_acceptance.sh [BUILD_DIR (build)] [DIR (data/speech/spoken_digits)]
#
# Prints the counts and the clips that failed; exit 0 when both figures hold, 1 when not, 2 when
# the clips cannot be made or tessera is not built.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
build=${1:-build}
dir=${2:-$here/../data/speech/spoken_digits}
tessera=$build/tessera
[ -x "$tessera" ] || { echo "kws_acceptance: $tessera is not built" >&2; exit 2; }
bash "$here/make_spoken_digits.sh" "$dir" >/dev/null || { echo "kws_acceptance: make_spoken_digits.sh failed" >&2; exit 2; }
pos=("$dir"/keywords/hey_jarvis/*.wav)
neg=("$dir"/digits/heldout/*/*.wav "$dir"/digits/flite/*/*.wav)
out="$dir/kws_acceptance.tsv"
"$tessera" kws --keyword hey_jarvis --threshold 0.5 "${pos[@]}" "${neg[@]}" >"$out"
found=$(cut -f1 "$out" | grep '/keywords/' | sort -u | wc -l)
false=$(cut -f1 "$out" | grep -c '/digits/' || true)
echo "hey_jarvis at 0.5: $found of ${#pos[@]} positives detected (want >= 27), $false detections on ${#neg[@]} digit clips (want 0)"
for f in "${pos[@]}"; do grep -q "^$f	" "$out" || echo "  missed: $f"; done
grep '/digits/' "$out" | sed 's/^/  false: /' || true
[ "$found" -ge 27 ] && [ "$false" -eq 0 ]
