#!/usr/bin/env bash
# run.sh — build tessera's libFuzzer targets (fuzz/fuzz_<name>.c) in build-fuzz/ and run each for
# a fixed time, JOBS targets at a time; `make test` runs it for 10 seconds a target.
#
#   bash fuzz/run.sh [SECONDS_PER_TARGET] [TARGET...]     (default: 10 seconds, every target)
#   bash fuzz/run.sh 600 safetensors                      (one target, longer)
#
# Needs clang (Debian: apt-get install clang libomp-dev); without it this says so and exits 0.
# build-fuzz/ is configured with CC=clang -DTS_FUZZ=ON (libFuzzer + ASan + UBSan, leak checks on)
# and only the fuzz targets are built. Each target runs on a fresh copy of its seeds
# (fuzz/corpus/<name>/, never written to) in build-fuzz/run/<name>/, with its log there, and with
# the dictionary fuzz/dict/<name>.dict of its format's keywords. Prints one line per target;
# exits 1 when any target found a crash, leak, undefined behaviour, timeout (-timeout=10) or
# memory blow-up (-rss_limit_mb=2048), leaving the input that did it in build-fuzz/crashes/<name>/
# (reproduce: build-fuzz/fuzz/fuzz_<name> FILE).
# The onnx target runs at least ONNX_FUZZ_SECONDS (default 60) whatever SECONDS_PER_TARGET says.
# Environment: JOBS (build parallelism, default nproc), BUILD_FUZZ (default build-fuzz),
# ONNX_FUZZ_SECONDS.
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT" || exit 1
BUILD="${BUILD_FUZZ:-build-fuzz}"
JOBS="${JOBS:-$(nproc 2>/dev/null || echo 2)}"

say() { printf 'fuzz: %s\n' "$*"; }
die() { printf 'fuzz: error: %s\n' "$*" >&2; exit 2; }
# after a "skipped" line: exit 0, or 1 with CI=true (CI installs clang and its runtimes,
# scripts/install-deps.sh, so there a skip is a failure)
skipped() {
    if [ "${CI:-}" = true ]; then say "CI=true: CI installs what the fuzzers need, so this is a failure"; exit 1; fi
    exit 0
}

secs="${1:-10}"
[ $# -gt 0 ] && shift
[[ "$secs" =~ ^[1-9][0-9]*$ ]] ||
    die "SECONDS_PER_TARGET must be a positive integer, got '$secs' (usage: bash fuzz/run.sh [SECONDS] [TARGET...])"

all=()
for src in fuzz/fuzz_*.c; do
    name="${src#fuzz/fuzz_}"
    all+=("${name%.c}")
done
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=("${all[@]}")
for t in "${targets[@]}"; do
    [ -f "fuzz/fuzz_$t.c" ] || die "no target '$t' (targets: ${all[*]})"
done

if ! command -v clang >/dev/null 2>&1; then
    say "skipped, clang is not installed (apt-get install clang)"
    skipped
fi

# ---------------------------------------------------------------- build
mkdir -p "$BUILD"
log="$BUILD/build.log"
if [ ! -f "$BUILD/CMakeCache.txt" ]; then
    # clang builds libFuzzer programs only with compiler-rt (libclang-rt-*-dev, which Debian's
    # clang recommends) and the library's OpenMP only with libomp-dev: say which is missing.
    probe="$BUILD/probe"
    printf '%s\n' '#include <omp.h>' '#include <stddef.h>' '#include <stdint.h>' \
        'int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { return omp_get_max_threads() < 0 && n && d[0]; }' \
        > "$probe.c"
    if ! clang -fsanitize=fuzzer,address,undefined -fopenmp "$probe.c" -o "$probe" > "$probe.log" 2>&1; then
        if grep -q "omp.h" "$probe.log"; then
            say "skipped, clang has no OpenMP (apt-get install libomp-dev)"
        else
            say "skipped, clang cannot build libFuzzer programs (apt-get install clang libclang-rt-dev):"
            sed -n 1,5p "$probe.log"
        fi
        rm -f "$probe" "$probe.c"
        skipped
    fi
    rm -f "$probe" "$probe.c" "$probe.log"
    say "configuring $BUILD/ (clang, -DTS_FUZZ=ON; log: $log)"
    if ! CC=clang cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DTS_FUZZ=ON > "$log" 2>&1; then
        tail -n 30 "$log"
        rm -f "$BUILD/CMakeCache.txt"
        die "configuring $BUILD/ failed (log above, in full in $log)"
    fi
fi
build_targets=()
for t in "${targets[@]}"; do build_targets+=("fuzz_$t"); done
start=$(date +%s)
# A fuzz_*.c added since the last configure is not a target yet: configure again.
known=$(cmake --build "$BUILD" --target help 2>/dev/null)
for b in "${build_targets[@]}"; do
    if ! grep -qw -- "$b" <<< "$known"; then
        cmake "$BUILD" >> "$log" 2>&1 || { tail -n 30 "$log"; die "configuring $BUILD/ failed (log: $log)"; }
        break
    fi
done
if ! cmake --build "$BUILD" -j "$JOBS" --target "${build_targets[@]}" > "$log.last" 2>&1; then
    cat "$log.last" >> "$log"
    grep -E -A3 "error|Error|No rule" "$log.last" | grep -v "pass-failed" | tail -n 30
    rm -f "$log.last"
    die "building the fuzz targets failed (log: $log)"
fi
cat "$log.last" >> "$log"
rm -f "$log.last"
built=$(( $(date +%s) - start ))
[ "$built" -gt 5 ] && say "built ${build_targets[*]} in ${built} s"

# ---------------------------------------------------------------- run
# Leak checks on; any finding aborts (UBSan is compiled with -fno-sanitize-recover=all). One
# OpenMP thread: the parsers are serial, and idle threads would only take CPU.
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:symbolize=1${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
export OMP_NUM_THREADS=1 OMP_WAIT_POLICY=passive

# The targets write every input to a file: in memory (/dev/shm) that runs 10-30x faster than on
# a disk (config: 14,000 vs 400 runs/s measured), so scratch files go there when it can be used.
scratch=""
if [ -d /dev/shm ] && [ -w /dev/shm ]; then
    scratch=$(mktemp -d /dev/shm/tessera-fuzz.XXXXXX 2>/dev/null) || scratch=""
fi
[ -n "$scratch" ] && trap 'rm -rf "$scratch"' EXIT

# run_target NAME: fuzz one target for its time; its one-line result goes to $BUILD/run/NAME/result
# (and the report of a finding after it). Exit 1 on a finding.
run_target() {
    local t="$1" work="$BUILD/run/$1" crashes="$BUILD/crashes/$1" tmp seeds t_secs rc runs rate inputs took
    rm -rf "$work"
    mkdir -p "$work/corpus" "$crashes"
    if [ -n "$scratch" ]; then
        tmp="$scratch/$t"
    else
        tmp="$ROOT/$work/tmp"
    fi
    mkdir -p "$tmp"
    seeds=0
    if [ -d "fuzz/corpus/$t" ]; then
        cp -R "fuzz/corpus/$t/." "$work/corpus/"
        seeds=$(find "$work/corpus" -type f | wc -l)
    fi
    local dict=()
    [ -f "fuzz/dict/$t.dict" ] && dict=(-dict="fuzz/dict/$t.dict")
    # the ONNX parser gets at least ONNX_FUZZ_SECONDS (60): the acceptance of the importer asks
    # for a minute of fuzzing in every test run; the others take SECONDS_PER_TARGET
    t_secs="$secs"
    if [ "$t" = onnx ] && [ "$t_secs" -lt "${ONNX_FUZZ_SECONDS:-60}" ]; then t_secs="${ONNX_FUZZ_SECONDS:-60}"; fi
    TMPDIR="$tmp" "$BUILD/fuzz/fuzz_$t" -max_total_time="$t_secs" -timeout=10 -rss_limit_mb=2048 \
        -print_final_stats=1 -artifact_prefix="$crashes/" ${dict[@]+"${dict[@]}"} "$work/corpus" > "$work/log" 2>&1
    rc=$?
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/log" | tail -n 1)
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$work/log" | tail -n 1)
    inputs=$(find "$work/corpus" -type f | wc -l)
    took=$(sed -n 's/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p' "$work/log" | tail -n 1)
    if [ $rc -eq 0 ] && [ -n "$took" ]; then
        printf 'fuzz: %-12s ok    %9s runs in %s s (%s/s), corpus %d -> %d inputs\n' "$t" "${runs:-?}" "$took" \
            "${rate:-?}" "$seeds" "$inputs" > "$work/result"
        return 0
    fi
    local what artifact
    what=$(grep -m1 -oE "ERROR: [A-Za-z]+: [a-zA-Z -]+|runtime error: .*|ALARM: .*|out-of-memory.*" "$work/log")
    artifact=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$work/log" | tail -n 1)
    {
        printf 'fuzz: %-12s FAIL  after %s runs (exit %d): %s\n' "$t" "${runs:-?}" $rc "${what:-see the log}"
        # the first 40 lines of the report (the whole of it is in the log)
        awk '/ERROR: |runtime error: |ALARM: |out-of-memory|^fuzz: /{on=1} on && n++ < 40' "$work/log" | sed 's/^/    /'
        [ -n "$artifact" ] && say "  the input: $artifact (reproduce: $BUILD/fuzz/fuzz_$t $artifact)"
        say "  log: $work/log"
    } > "$work/result"
    return 1
}

# JOBS targets at a time (each is one process on one core); results printed in target order.
# The onnx target, the longest, starts first.
order=()
for t in "${targets[@]}"; do [ "$t" = onnx ] && order+=("$t"); done
for t in "${targets[@]}"; do [ "$t" != onnx ] && order+=("$t"); done
failed=0
running=0
for t in "${order[@]}"; do
    if [ "$running" -ge "$JOBS" ]; then
        wait -n || failed=1
        running=$((running - 1))
    fi
    run_target "$t" &
    running=$((running + 1))
done
while [ "$running" -gt 0 ]; do
    wait -n || failed=1
    running=$((running - 1))
done
for t in "${targets[@]}"; do
    if [ -f "$BUILD/run/$t/result" ]; then cat "$BUILD/run/$t/result"; else say "$t: no result (see $BUILD/run/$t/log)"; failed=1; fi
done
exit $failed
