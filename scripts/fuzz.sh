#!/usr/bin/env bash
# Runs every libFuzzer target of fuzz/ for SECONDS each (docs/FUZZING.md), from the source root:
#   scripts/fuzz.sh BUILD_DIR SECONDS [TARGET...]
#   RUNS=1000000 scripts/fuzz.sh BUILD_DIR SECONDS [TARGET...]   # stop each at RUNS executions (SECONDS: a cap)
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
status=0
for target in "${targets[@]}"; do
  binary="$build/fuzz/fuzz_$target"
  [ -x "$binary" ] || { echo "fuzz.sh: $binary is not built (make fuzz builds it)" >&2; exit 2; }
  mkdir -p "$build/corpus/$target"
  options=(-max_total_time="$seconds" -timeout=20 -rss_limit_mb=4096 -print_final_stats=1
           -artifact_prefix="$build/artifacts/$target-")
  [ -n "${RUNS:-}" ] && options+=(-runs="$RUNS")
  [ -f "fuzz/$target.dict" ] && options+=(-dict="fuzz/$target.dict")
  [ "$target" = predictor_manifest ] && options+=(-max_len=65536)  # a manifest lists ~40 KB of feature names
  [ "$target" = csv_import ] && options+=(-max_len=16384)
  echo "fuzz.sh: $target for ${seconds} s"
  log="$build/fuzz-$target.log"
  "$binary" "${options[@]}" "$build/corpus/$target" "fuzz/corpus/$target" >"$log" 2>&1
  code=$?
  grep -E "^(stat::number_of_executed_units|stat::new_units_added)|^#[0-9]+ +DONE" "$log" | tr '\n' ' '
  echo "seconds $(grep -m1 -o 'Done [0-9]* runs in [0-9]* second' "$log" | grep -o '[0-9]* second' | cut -d' ' -f1)"
  if [ $code -ne 0 ]; then
    echo "fuzz.sh: $target found a failure (exit $code); the input is in $build/artifacts/, the report in $log:" >&2
    grep -m1 -E "ERROR|runtime error|fuzz: not an InputError|internal error|deadly signal|timeout" "$log" >&2
    status=1
  fi
done
exit $status
