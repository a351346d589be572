#!/usr/bin/env bash
# Runs every libFuzzer target of fuzz/ for SECONDS each (docs/FUZZING.md), from the source root:
#   scripts/fuzz.sh BUILD_DIR SECONDS [TARGET...]
#   RUNS=1000000 scripts/fuzz.sh BUILD_DIR SECONDS [TARGET...]   # stop each at RUNS executions (SECONDS: a cap)
#   FUZZ_JOBS=2 scripts/fuzz.sh BUILD_DIR SECONDS [TARGET...]      # two targets at a time
# New inputs that reach new code go to BUILD_DIR/corpus/<target>/ (kept between runs, never
# committed); a finding is written to BUILD_DIR/artifacts/ and ends the script with exit code 1.
set -uo pipefail
build="${1:?usage: scripts/fuzz.sh BUILD_DIR SECONDS [TARGET...]}"
seconds="${2:?usage: scripts/fuzz.sh BUILD_DIR SECONDS [TARGET...]}"
shift 2
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(graph_json plan csv_import predictor_manifest)

# Leaks are left out: the readers hold nothing past an input, and XGBoost's static state reads as one.
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=0:abort_on_error=1:symbolize=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}"
mkdir -p "$build/artifacts"
# FUZZ_JOBS targets at once (default 1); each target still runs SECONDS of its own, so two jobs on two cores
# halve the wall time and keep each target's executions (`make fuzz-ci` runs two).
jobs="${FUZZ_JOBS:-1}"

# One target: its libFuzzer run, then its summary (and on a failure, what it found) in $build/fuzz-TARGET.summary;
# exit 1 on a finding.
run_target() {
  local target=$1 binary="$build/fuzz/fuzz_$1" log="$build/fuzz-$1.log" summary="$build/fuzz-$1.summary"
  mkdir -p "$build/corpus/$target"
  local options=(-max_total_time="$seconds" -timeout=20 -rss_limit_mb=4096 -print_final_stats=1
                 -artifact_prefix="$build/artifacts/$target-")
  [ -n "${RUNS:-}" ] && options+=(-runs="$RUNS")
  [ -f "fuzz/$target.dict" ] && options+=(-dict="fuzz/$target.dict")
  [ "$target" = predictor_manifest ] && options+=(-max_len=65536)  # a manifest lists ~40 KB of feature names
  [ "$target" = csv_import ] && options+=(-max_len=16384)
  "$binary" "${options[@]}" "$build/corpus/$target" "fuzz/corpus/$target" >"$log" 2>&1
  local code=$?
  {
    echo -n "fuzz.sh: $target: "
    grep -E "^(stat::number_of_executed_units|stat::new_units_added)|^#[0-9]+ +DONE" "$log" | tr '\n' ' '
    echo "seconds $(grep -m1 -o 'Done [0-9]* runs in [0-9]* second' "$log" | grep -o '[0-9]* second' | cut -d' ' -f1)"
  } >"$summary"
  if [ $code -ne 0 ]; then
    {
      echo "fuzz.sh: $target found a failure (exit $code); the input is in $build/artifacts/, the report in $log:"
      grep -m1 -E "ERROR|runtime error|fuzz: not an InputError|internal error|deadly signal|timeout" "$log"
    } >>"$summary"
    return 1
  fi
}

for target in "${targets[@]}"; do
  [ -x "$build/fuzz/fuzz_$target" ] ||
    { echo "fuzz.sh: $build/fuzz/fuzz_$target is not built (make fuzz builds it)" >&2; exit 2; }
done
status=0
running=0
for target in "${targets[@]}"; do
  if [ "$running" -ge "$jobs" ]; then
    wait -n || status=1
    running=$((running - 1))
  fi
  echo "fuzz.sh: $target for ${seconds} s"
  run_target "$target" &
  running=$((running + 1))
done
while [ "$running" -gt 0 ]; do
  wait -n || status=1
  running=$((running - 1))
done
for target in "${targets[@]}"; do
  summary="$build/fuzz-$target.summary"
  if grep -q 'found a failure' "$summary"; then cat "$summary" >&2; else cat "$summary"; fi
done
exit $status
