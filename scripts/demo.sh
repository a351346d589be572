#!/bin/sh
# `make demo` (README): forecast one training step of ResNet-50 (batch 32, 224 px) on this host's CPU from the
# shipped predictors. `predict` first times a few small configurations of the shipped data here (the host check,
# docs/TRANSFER.md; once per boot, seconds). Where this host runs them at another speed than the data's host (a
# matching CPU fingerprint is not a speed), the demo calibrates its own model here for 2 minutes (`dnncast calibrate`)
# and forecasts again, saying what it did. DNNCAST_DEMO_CALIBRATE=no skips the calibration.
# Usage: scripts/demo.sh [BUILD_DIR]
set -eu
build=${1:-build}
dnncast="$build/dnncast"
model="resnet50 --batch 32 --input 3x224x224"
echo "\$ dnncast predict $model"
# shellcheck disable=SC2086
"$dnncast" predict $model
# shellcheck disable=SC2086
calibrated=$("$dnncast" predict $model --json 2>/dev/null | jq -r '.calibration // ""')
setting=${DNNCAST_HOST_CHECK:-on}
if [ "$setting" = off ] || [ "$setting" = 0 ] || [ "$setting" = false ] || [ "$setting" = no ]; then
  off=disabled
else
  off=$("$dnncast" host-check --json 2>/dev/null | jq -r '.off // "unknown"' 2>/dev/null || true)
fi
if [ -n "$calibrated" ]; then
  echo
  echo "demo: the forecast above uses this host's calibration ($calibrated): made by an earlier run"
elif [ "$off" = "true" ] && [ "${DNNCAST_DEMO_CALIBRATE:-yes}" != "no" ]; then
  echo
  echo "demo: the host check found this host off the shipped data's speed; calibrating resnet50 here (2 minutes):"
  echo "\$ dnncast calibrate $model --minutes 2"
  # shellcheck disable=SC2086
  "$dnncast" calibrate $model --minutes 2 2>&1 | tail -n 4
  echo
  echo "\$ dnncast predict $model    # now from this host's calibration"
  # shellcheck disable=SC2086
  "$dnncast" predict $model
elif [ "$off" = "disabled" ]; then
  echo
  echo "demo: DNNCAST_HOST_CHECK=$DNNCAST_HOST_CHECK: the forecast is not checked against this host"
elif [ "$off" = "false" ]; then
  echo
  echo "demo: the host check found this host in line with the shipped data: no calibration needed"
elif [ "$off" = "true" ]; then
  echo
  echo "demo: the host check found this host off the shipped data's speed (DNNCAST_DEMO_CALIBRATE=no: not calibrated)"
else
  echo
  echo "demo: the host check could not run here (see \`dnncast host-check\`): the forecast is not checked against this host"
fi
