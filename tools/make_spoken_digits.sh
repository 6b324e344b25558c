#!/usr/bin/env bash
# make_spoken_digits.sh — synthetic labelled speech for the speech scenarios (issue 27): spoken
# digits, wake words, phrases and clips for voice activity, all 16 kHz mono 16-bit WAV, made with
# two different synthesis engines (espeak-ng and flite) and resampled with sox.
#
#   bash tools/make_spoken_digits.sh OUTDIR          (JOBS=N processes, default 2)
#
# OUTDIR/digits/{train,heldout,flite}/<label>/<voice>.wav, "zero" ... "nine", and a TSV per split,
#   OUTDIR/digits/<split>.tsv (a header line "path<TAB>label", paths relative to OUTDIR/digits):
#   train   = 5 espeak-ng accents x 8 voice variants x 3 speeds (1200 clips)
#   heldout = 3 other accents x 5 other variants x 2 other speeds (300 clips)
#   flite   = every flite voice (kal, kal16, awb, rms, slt) x 2 duration stretches (100 clips)
#   An espeak-ng voice says the ten digits in one run with 800 ms breaks between them, and sox
#   cuts that at the silences (one process pair for ten clips, not ten): each clip is a digit with
#   its leading and trailing silence trimmed (below 0.2% of full scale) and 150 ms of silence
#   added on each side. A voice that does not come apart into exactly ten says each digit alone
#   (trimmed and padded the same way) and is named in the output. Samples are scaled by 0.9
#   first: a few voices (the Andy variant) would otherwise clip a few samples when resampled. flite says each digit alone.
# OUTDIR/keywords/hey_jarvis/*.wav: 24 espeak-ng accent x variant combinations + the 5 flite
#   voices; OUTDIR/keywords/alexa/*.wav: 4 espeak-ng voices + 2 flite voices.
# OUTDIR/phrases/*.wav and phrases.tsv (file, keyword or "none"): a wake word inside a sentence.
# OUTDIR/vad/*.wav and segments.tsv (file, start_s, end_s): a sentence between 0.5 and 2 s of
#   silence (fixed here, different per clip). The synthesised sentence is first trimmed of its
#   own leading and trailing silence (sox `silence`, below 0.1% of full scale), so the speech
#   runs exactly from the silence added before it to that plus the trimmed length (its samples,
#   from the file's size, / 16000): the TSV is where the speech is, not where the synthesiser's output began.
#
# Deterministic (sox -R -D: no dither, fixed seeds; the same bytes on every run) and idempotent:
# OUTDIR/.complete records this script's SHA-256 when everything is written, and a later run with
# the same script only says so. An incomplete OUTDIR is made again (its digits/, keywords/,
# phrases/ and vad/; nothing else in OUTDIR is touched).
set -euo pipefail

SELF="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/$(basename "${BASH_SOURCE[0]}")"
DIGITS=(zero one two three four five six seven eight nine)
RATE=16000
# sox writing 16 kHz mono 16-bit WAV, repeatable (-R) and without dither (-D)
SOX_OUT=(-R -D -V1)
OUT_FMT=(-b 16 -e signed-integer -c 1 -r "$RATE")
TRIM_PAD=(vol 0.9 silence 1 0.02 0.2% reverse silence 1 0.02 0.2% reverse pad 0.15 0.15)

die() { printf 'make_spoken_digits: %s\n' "$*" >&2; exit 1; }

# ---------------------------------------------------------------- jobs (run through xargs -P)
# espeak_digits SPLIT ACCENT VARIANT SPEED OUT: the ten digits in one voice, cut at the silences.
espeak_digits() {
    local split="$1" accent="$2" variant="$3" speed="$4" out="$5" voice ssml="<speak>" i n
    voice="$accent+$variant-s$speed"
    for i in "${!DIGITS[@]}"; do
        [ "$i" -gt 0 ] && ssml+='<break time="800ms"/>'
        ssml+="${DIGITS[$i]}"
    done
    ssml+="</speak>"
    local tmp="$out/.work/$split-$voice"
    rm -rf "$tmp" && mkdir -p "$tmp"
    espeak-ng -m -v "$accent+$variant" -s "$speed" --stdout "$ssml" |
        sox "${SOX_OUT[@]}" -t wav - "${OUT_FMT[@]}" "$tmp/d.wav" \
            vol 0.9 silence 1 0.02 0.2% 1 0.3 0.2% pad 0.15 0.15 : newfile : restart
    # the pieces with speech in them: more than the 0.3 s of padding (sox ends with a piece of
    # padding alone after the last digit); 44 bytes of WAV header, 2 bytes a sample
    local pieces=()
    while read -r size path; do
        [ "$size" -gt $((44 + 2 * (RATE * 31 / 100))) ] && pieces+=("$path")
    done < <(stat -c '%s %n' "$tmp"/d*.wav | LC_ALL=C sort -k2)
    n=${#pieces[@]}
    if [ "$n" -eq 10 ]; then
        for i in "${!DIGITS[@]}"; do
            mv "${pieces[$i]}" "$out/digits/$split/${DIGITS[$i]}/$voice.wav"
        done
    else
        echo "make_spoken_digits: $voice came apart into $n pieces, not 10: each digit said alone" >&2
        for i in "${!DIGITS[@]}"; do
            espeak-ng -v "$accent+$variant" -s "$speed" --stdout "${DIGITS[$i]}" |
                sox "${SOX_OUT[@]}" -t wav - "${OUT_FMT[@]}" "$out/digits/$split/${DIGITS[$i]}/$voice.wav" "${TRIM_PAD[@]}"
        done
    fi
    rm -rf "$tmp"
}

# flite_digits VOICE STRETCH OUT: the ten digits said one by one by a flite voice.
flite_digits() {
    local voice="$1" stretch="$2" out="$3" i tmp
    tmp="$out/.work/flite-$voice-$stretch"
    mkdir -p "$tmp"
    for i in "${!DIGITS[@]}"; do
        flite -voice "$voice" --setf duration_stretch="$stretch" -t "${DIGITS[$i]}" -o "$tmp/w.wav"
        sox "${SOX_OUT[@]}" "$tmp/w.wav" "${OUT_FMT[@]}" "$out/digits/flite/${DIGITS[$i]}/$voice-d$stretch.wav" \
            "${TRIM_PAD[@]}"
    done
    rm -rf "$tmp"
}

# say ENGINE VOICE SPEED_OR_STRETCH TEXT OUT.wav [EXTRA SOX EFFECTS...]: one clip, trimmed and
# padded as the digits are, unless effects are given (then those instead).
say() {
    local engine="$1" voice="$2" speed="$3" text="$4" dst="$5" tmp
    shift 5
    local effects=("$@")
    [ ${#effects[@]} -eq 0 ] && effects=("${TRIM_PAD[@]}")
    tmp="$(dirname "$dst")/.$(basename "$dst").tmp.wav"
    if [ "$engine" = espeak ]; then
        espeak-ng -v "$voice" -s "$speed" -w "$tmp" "$text"
    else
        flite -voice "$voice" --setf duration_stretch="$speed" -t "$text" -o "$tmp"
    fi
    sox "${SOX_OUT[@]}" "$tmp" "${OUT_FMT[@]}" "$dst" "${effects[@]}"
    rm -f "$tmp"
}

if [ "${1:-}" = --job ]; then
    shift
    job="$1"
    shift
    "$job" "$@"
    exit
fi

# ---------------------------------------------------------------- the voices
[ $# -eq 1 ] || die "usage: bash tools/make_spoken_digits.sh OUTDIR"
OUT="$1"
JOBS="${JOBS:-2}"
for tool in espeak-ng flite sox sha256sum xargs stat; do
    command -v "$tool" > /dev/null 2>&1 ||
        die "needs $tool (Debian: apt-get install espeak-ng flite sox; bash scripts/install-deps.sh installs them)"
done

stamp="$OUT/.complete"
want="make_spoken_digits $(sha256sum "$SELF" | cut -d' ' -f1)"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
    echo "make_spoken_digits: $OUT is complete (made by this script; delete $stamp to make it again)"
    exit 0
fi

TRAIN_ACCENTS=(en-us en-gb en-gb-scotland en-029 en-gb-x-rp)
TRAIN_VARIANTS=(m1 m2 m3 m4 f1 f2 f3 f4)
TRAIN_SPEEDS=(140 170 200)
HELDOUT_ACCENTS=(en-us-nyc en-gb-x-gbclan en-gb-x-gbcwmd)
HELDOUT_VARIANTS=(m5 m6 m7 f5 Andy)
HELDOUT_SPEEDS=(155 185)
FLITE_VOICES=(kal kal16 awb rms slt)
FLITE_STRETCHES=(0.9 1.2)
ALL_ACCENTS=("${TRAIN_ACCENTS[@]}" "${HELDOUT_ACCENTS[@]}")
ALL_VARIANTS=("${TRAIN_VARIANTS[@]}" "${HELDOUT_VARIANTS[@]}")

# espeak-ng falls back to its default voice, silently, on a name it does not know: check them.
known_langs=" $(espeak-ng --voices=en | awk 'NR > 1 { printf "%s ", $2 }') "
known_variants=" $(espeak-ng --voices=variant | awk 'NR > 1 { sub("^!v/", "", $5); printf "%s ", $5 }') "
for a in "${ALL_ACCENTS[@]}"; do
    [[ "$known_langs" == *" $a "* ]] || die "espeak-ng has no English accent '$a' (espeak-ng --voices=en)"
done
for v in "${ALL_VARIANTS[@]}"; do
    [[ "$known_variants" == *" $v "* ]] || die "espeak-ng has no voice variant '$v' (espeak-ng --voices=variant)"
done
known_flite=" $(flite -lv | sed 's/^Voices available: //') "
for v in "${FLITE_VOICES[@]}"; do
    [[ "$known_flite" == *" $v "* ]] || die "flite has no voice '$v' (flite -lv)"
done


start=$(date +%s.%N)
rm -rf "$OUT/digits" "$OUT/keywords" "$OUT/phrases" "$OUT/vad" "$OUT/.work" "$stamp"
for split in train heldout flite; do
    for d in "${DIGITS[@]}"; do mkdir -p "$OUT/digits/$split/$d"; done
done
mkdir -p "$OUT/keywords/hey_jarvis" "$OUT/keywords/alexa" "$OUT/phrases" "$OUT/vad" "$OUT/.work"

# ---------------------------------------------------------------- digits, keywords, phrases
# One line per job, run JOBS at a time; jobs write disjoint files, so the order does not matter.
jobs="$OUT/.work/jobs"
{
    for a in "${TRAIN_ACCENTS[@]}"; do for v in "${TRAIN_VARIANTS[@]}"; do for s in "${TRAIN_SPEEDS[@]}"; do
        echo "espeak_digits train $a $v $s $OUT"
    done; done; done
    for a in "${HELDOUT_ACCENTS[@]}"; do for v in "${HELDOUT_VARIANTS[@]}"; do for s in "${HELDOUT_SPEEDS[@]}"; do
        echo "espeak_digits heldout $a $v $s $OUT"
    done; done; done
    for v in "${FLITE_VOICES[@]}"; do for s in "${FLITE_STRETCHES[@]}"; do
        echo "flite_digits $v $s $OUT"
    done; done
} > "$jobs"
# "hey jarvis": each of the 8 accents with 3 of the 13 variants, the variants taken in turn
k=0
for a in "${ALL_ACCENTS[@]}"; do
    for _ in 1 2 3; do
        v="${ALL_VARIANTS[$((k % ${#ALL_VARIANTS[@]}))]}"
        k=$((k + 1))
        printf 'say espeak %s 160 "hey jarvis" %s\n' "$a+$v" "$OUT/keywords/hey_jarvis/$a+$v.wav"
    done
done >> "$jobs"
for v in "${FLITE_VOICES[@]}"; do
    printf 'say flite %s 1.0 "hey jarvis" %s\n' "$v" "$OUT/keywords/hey_jarvis/flite-$v.wav"
done >> "$jobs"
for av in en-us+f2 en-gb+m3 en-029+f4 en-gb-scotland+m6; do
    printf 'say espeak %s 160 "alexa" %s\n' "$av" "$OUT/keywords/alexa/$av.wav"
done >> "$jobs"
for v in slt awb; do printf 'say flite %s 1.0 "alexa" %s\n' "$v" "$OUT/keywords/alexa/flite-$v.wav"; done >> "$jobs"
# phrases: a wake word inside a sentence (and one without), each with 0.5 s of silence around it
PHRASES=(
    "jarvis_morning|espeak|en-us+m3|160|hey_jarvis|good morning everyone. hey jarvis, what is the weather like today?"
    "jarvis_music|espeak|en-gb+f2|150|hey_jarvis|i was just thinking about it, and then i said hey jarvis, play some music please."
    "alexa_timer|flite|slt|1.0|alexa|alexa, set a timer for ten minutes."
    "no_keyword|espeak|en-us+f4|160|none|this sentence has no wake word in it, only numbers like one two three."
)
for p in "${PHRASES[@]}"; do
    IFS='|' read -r name engine voice speed _ text <<< "$p"
    printf 'say %s %s %s "%s" %s pad 0.5 0.5\n' "$engine" "$voice" "$speed" "$text" "$OUT/phrases/$name.wav"
done >> "$jobs"
# shellcheck disable=SC2016
xargs -P "$JOBS" -L 1 bash "$SELF" --job < "$jobs" || die "a synthesis job failed (see above)"

# ---------------------------------------------------------------- voice activity clips
# name|voice|silence before|silence after|sentence (no commas: a pause would split the speech)
VAD=(
    "vad01|en-us+m1|0.5|1.5|the quick brown fox jumps over the lazy dog"
    "vad02|en-gb+f3|1.2|0.8|please turn off the lights in the kitchen"
    "vad03|en-gb-scotland+m4|2.0|0.6|it will rain tomorrow afternoon in the north"
    "vad04|en-029+f1|0.7|2.0|my phone number ends in four five six"
    "vad05|en-us-nyc+m6|1.6|1.1|we should leave before the traffic gets worse"
    "vad06|en-gb-x-rp+f5|0.9|1.7|reading a book by the window is my favourite thing"
)
printf 'file\tstart_s\tend_s\n' > "$OUT/vad/segments.tsv"
for c in "${VAD[@]}"; do
    IFS='|' read -r name voice before after text <<< "$c"
    speech="$OUT/.work/$name.speech.wav"
    say espeak "$voice" 165 "$text" "$speech" vol 0.9 silence 1 0.01 0.1% reverse silence 1 0.01 0.1% reverse
    n=$(( ($(stat -c %s "$speech") - 44) / 2 ))   # samples: 16-bit mono after a 44-byte header
    sox "${SOX_OUT[@]}" "$speech" "$OUT/vad/$name.wav" pad "$before" "$after"
    awk -v f="$name.wav" -v b="$before" -v n="$n" -v r="$RATE" 'BEGIN { printf "%s\t%.3f\t%.3f\n", f, b, b + n / r }' \
        >> "$OUT/vad/segments.tsv"
done
printf 'file\tkeyword\n' > "$OUT/phrases/phrases.tsv"
for p in "${PHRASES[@]}"; do
    IFS='|' read -r name _ _ _ keyword _ <<< "$p"
    printf '%s.wav\t%s\n' "$name" "$keyword" >> "$OUT/phrases/phrases.tsv"
done

# ---------------------------------------------------------------- the TSVs, the counts
for split in train heldout flite; do
    (
        cd "$OUT/digits"
        printf 'path\tlabel\n'
        find "$split" -name '*.wav' | LC_ALL=C sort | awk -F/ '{ printf "%s\t%s\n", $0, $2 }'
    ) > "$OUT/digits/$split.tsv"
done
count() { find "$1" -name '*.wav' | wc -l; }
expect() {
    local got
    got=$(count "$1")
    [ "$got" -eq "$2" ] || die "$1 has $got clips, not $2"
}
expect "$OUT/digits/train" 1200
expect "$OUT/digits/heldout" 300
expect "$OUT/digits/flite" 100
expect "$OUT/keywords/hey_jarvis" 29
expect "$OUT/keywords/alexa" 6
expect "$OUT/phrases" 4
expect "$OUT/vad" 6
empty=$(find "$OUT" -name '*.wav' -size -100c | head -n 5)
[ -z "$empty" ] || die "clips without samples: $empty"
rm -rf "$OUT/.work"
echo "$want" > "$stamp"
took=$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }')
echo "make_spoken_digits: $(count "$OUT") clips in $OUT in $took s (digits: train 1200, heldout 300, flite 100;" \
    "hey_jarvis 29, alexa 6, phrases 4, vad 6)"
