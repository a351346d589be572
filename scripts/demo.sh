#!/bin/sh
# `make demo` (README): forecast one training step of ResNet-50 (batch 32, 224 px) on this host's CPU from the
# shipped predictors. `predict` first times a few small configurations of the shipped data here (the host check,
# docs/TRANSFER.md; once per boot, seconds). Where this host runs them at another speed than the data's host (a
# matching CPU fingerprint is not a speed), or where no shipped set was trained on this host's CPU at all (its forecast
# is the nearest set's), the demo calibrates its own model here for 2 minutes (`dnncast calibrate`) and forecasts
# again, saying what it did. DNNCAST_DEMO_CALIBRATE=no skips the calibration.
# Usage: scripts/demo.sh [BUILD_DIR]
set -eu
build=${1:-build}
dnncast="$build/dnncast"
model="resnet50 --batch 32 --input 3x224x224"
echo "\$ dnncast predict $model"
# shellcheck disable=SC2086
"$dnncast" predict $model
# shellcheck disable=SC2086
forecast=$("$dnncast" predict $model --json 2>/dev/null || true)
calibrated=$(printf '%s' "$forecast" | jq -r '.calibration // ""' 2>/dev/null || true)
# "exact" when a shipped set was trained on this host's CPU fingerprint and ISA; else the nearest set's forecast, whose
# small probes can run at its speed while the model's large layers do not (an AVX2 dispatch beside the AMX set).
match=$(printf '%s' "$forecast" | jq -r '.host_match.match // "unknown"' 2>/dev/null || true)
setting=${DNNCAST_HOST_CHECK:-on}
if [ "$setting" = off ] || [ "$setting" = 0 ] || [ "$setting" = false ] || [ "$setting" = no ]; then
  off=disabled
else
  # (not `.off // "unknown"`: jq's // takes false for missing, and an in-line host read as "could not run")
  off=$("$dnncast" host-check --json 2>/dev/null | jq -r 'if (.off | type) == "boolean" then .off else "unknown" end' \
    2>/dev/null || true)
fi
# Why the forecast above is what it is, decided once: an earlier calibration, the check turned off, a host in line
# with a set of its own CPU, a host off the data's speed, another CPU's set, or a check that could not run.
if [ -n "$calibrated" ]; then
  reason=calibrated
elif [ "$off" = "disabled" ]; then
  reason=disabled
elif [ "$off" = "true" ]; then
  reason=host-off
elif [ "$off" = "false" ] && [ "$match" = "exact" ]; then
  reason=in-line
elif [ "$off" = "false" ]; then
  reason=other-cpu
else
  reason=unknown
fi
echo
case "$reason" in
  calibrated) echo "demo: the forecast above uses this host's calibration ($calibrated): made by an earlier run" ;;
  disabled) echo "demo: DNNCAST_HOST_CHECK=$DNNCAST_HOST_CHECK: the forecast is not checked against this host" ;;
  in-line) echo "demo: the host check found this host in line with the shipped data: no calibration needed" ;;
  unknown)
    echo "demo: the host check could not run here (see \`dnncast host-check\`): the forecast is not checked against" \
      "this host"
    ;;
  *) # host-off, other-cpu: calibrate here
    if [ "$reason" = host-off ]; then
      why="the host check found this host off the shipped data's speed"
    else
      why="no shipped predictor was trained on this host's CPU (the note above; the host check's small configurations are in line, a large model need not be)"
    fi
    if [ "${DNNCAST_DEMO_CALIBRATE:-yes}" = "no" ]; then
      echo "demo: $why (DNNCAST_DEMO_CALIBRATE=no: not calibrated)"
    else
      echo "demo: $why; calibrating resnet50 here (2 minutes):"
      echo "\$ dnncast calibrate $model --minutes 2"
      # shellcheck disable=SC2086
      "$dnncast" calibrate $model --minutes 2 2>&1 | tail -n 4
      echo
      echo "\$ dnncast predict $model    # now from this host's calibration"
      # shellcheck disable=SC2086
      "$dnncast" predict $model
    fi
    ;;
esac
