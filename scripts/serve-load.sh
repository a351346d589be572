#!/usr/bin/env bash
# Load and soak of `dnncast serve` over loopback with wrk (Debian's `wrk`; scripts/setup.sh installs it):
# POST /v1/predict for resnet50 at batch 32, at 1, 8 and 64 connections: p50 / p99 latency and requests/s;
# then a soak at 8 connections with the server's resident memory sampled from /proc (growth reported).
#
#   scripts/serve-load.sh [--build DIR] [--seconds S] [--soak SECONDS] [--threads N] [--distinct] [--device NAME]
#                         [--connections "1 8 64"]
#
# --distinct: every request a new configuration (resnet50 at batches 1-1024, inputs 32-224 px, SGD or Adam: 51,200
# of them, each wrk thread of each step walking its own tenth), so no answer comes from the response cache: the cost of a
# forecast a cluster scheduler or a notebook sweeping batches pays (issue 37).
# --connections LIST: the load steps (at most 4 of them, so that --distinct keeps every step's requests new).
# --device NAME: every request forecasts for that device (a catalogued GPU such as a100-40gb: the GPU time model;
# `dnncast devices` lists them); without it, this host's CPU predictor set.
#
# defaults: build, 20 s per load step, a 600 s soak (0: none), 2 server workers. wrk runs on the same host
# (it takes CPU from the server: the figures are for both sharing the cores). Prints a Markdown table.
set -euo pipefail
build=build seconds=20 soak=600 threads=2 distinct=0 device="" steps="1 8 64"
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build="$2"; shift 2 ;;
    --seconds) seconds="$2"; shift 2 ;;
    --soak) soak="$2"; shift 2 ;;
    --threads) threads="$2"; shift 2 ;;
    --distinct) distinct=1; shift ;;
    --device) device="$2"; shift 2 ;;
    --connections) steps="$2"; shift 2 ;;
    *) echo "usage: scripts/serve-load.sh [--build DIR] [--seconds S] [--soak SECONDS] [--threads N] [--distinct] [--device NAME] [--connections LIST]" >&2; exit 2 ;;
  esac
done
for connections in $steps; do
  [[ "$connections" =~ ^[1-9][0-9]{0,3}$ ]] || { echo "serve-load.sh: --connections: '$connections' is not a count of 1-9999" >&2; exit 2; }
done
[ "$(wc -w <<<"$steps")" -ge 1 ] && [ "$(wc -w <<<"$steps")" -le 4 ] ||
  { echo "serve-load.sh: --connections takes 1 to 4 counts, got '$steps'" >&2; exit 2; }
command -v wrk >/dev/null || { echo "serve-load.sh: wrk is not installed (scripts/setup.sh installs it)" >&2; exit 2; }
[ -x "$build/dnncast" ] || { echo "serve-load.sh: $build/dnncast is not built (make build)" >&2; exit 2; }

work=$(mktemp -d /tmp/dnncast-serve-load-XXXXXX)
server_pid=""
cleanup() {
  [ -n "$server_pid" ] && kill -TERM "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

cat >"$work/predict.lua" <<'LUA'
wrk.method = "POST"
wrk.body = '{"model": "resnet50", "batch": 32DEVICE_FIELD}'
wrk.headers["Content-Type"] = "application/json"
done = function(summary, latency, requests)
  local errors = summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout
  io.write(string.format("RESULT %.3f %.3f %.0f %d %d %d\n", latency:percentile(50) / 1000,
                         latency:percentile(99) / 1000, summary.requests / (summary.duration / 1e6),
                         summary.requests, summary.errors.status, errors))
end
LUA
if [ "$distinct" -eq 1 ]; then  # a new configuration per request (the same done() as above)
  cat >>"$work/predict.lua" <<'LUA'
local counter = 0
local threads = 0
setup = function(thread)  -- in wrk's main Lua state: number the threads
  thread:set("id", threads)
  threads = threads + 1
end
init = function(args)
  -- each wrk thread of each step (args[1], 0-4) walks its own tenth of the configurations, so that no step asks
  -- what an earlier one asked (the response cache would answer it): distinct for 5,120 requests per thread
  counter = ((tonumber(args[1] or "0") * 2 + id) % 10) * 5120
end
request = function()
  counter = counter + 1
  local k = counter % 51200
  local batch = 1 + k % 1024
  local size = 32 + 8 * (math.floor(k / 1024) % 25)
  local optimizer = (math.floor(k / 25600) % 2 == 0) and "sgd" or "adam"
  return wrk.format(nil, nil, nil, string.format(
    '{"model": "resnet50", "batch": %d, "input": "3x%dx%d", "optimizer": "%s"DEVICE_FIELD}', batch, size, size, optimizer))
end
LUA
fi

device_field=""
[ -n "$device" ] && device_field=", \"device\": \"$device\""
sed -i "s/DEVICE_FIELD/${device_field//\//\\/}/" "$work/predict.lua"

"$build/dnncast" serve --listen 127.0.0.1:0 --threads "$threads" >"$work/out" 2>"$work/err" &
server_pid=$!
for _ in $(seq 100); do grep -q listening "$work/out" 2>/dev/null && break; sleep 0.1; done
url=$(grep -o 'http://[0-9.]*:[0-9]*' "$work/out") || { cat "$work/err" >&2; exit 1; }
rss_kib() { awk '/^VmRSS/ {print $2}' "/proc/$server_pid/status"; }

echo "host: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) CPUs; server: $url, $threads workers;" \
  "$([ "$distinct" -eq 1 ] && echo "distinct requests" || echo "one request repeated"),"\
  "device: ${device:-the CPU of this host}"
wrk -t1 -c1 -d2s -s "$work/predict.lua" "$url/v1/predict" -- 0 >/dev/null  # the first answer is computed, the rest cached
echo
echo "| connections | wrk threads | seconds | requests/s | p50 ms | p99 ms | requests | non-2xx | socket errors |"
echo "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
step=0
for connections in $steps; do
  step=$((step + 1))
  wrk_threads=$([ "$connections" -eq 1 ] && echo 1 || echo 2)
  line=$(wrk -t"$wrk_threads" -c"$connections" -d"${seconds}s" --timeout 10s -s "$work/predict.lua" "$url/v1/predict" -- "$step" |
         grep '^RESULT')
  read -r _ p50 p99 rps requests non2xx errors <<<"$line"
  echo "| $connections | $wrk_threads | $seconds | $rps | $p50 | $p99 | $requests | $non2xx | $errors |"
done

if [ "$soak" -gt 0 ]; then
  echo
  echo "soak: 8 connections for $soak s; server RSS (KiB) every 30 s:"
  start_kib=$(rss_kib)
  wrk -t2 -c8 -d"${soak}s" --timeout 10s -s "$work/predict.lua" "$url/v1/predict" -- 4 >"$work/soak" &
  wrk_pid=$!
  samples="$start_kib"
  while kill -0 "$wrk_pid" 2>/dev/null; do
    sleep 30
    samples="$samples $(rss_kib)"
  done
  wait "$wrk_pid"
  end_kib=$(rss_kib)
  read -r _ p50 p99 rps requests non2xx errors <<<"$(grep '^RESULT' "$work/soak")"
  echo "  $samples"
  echo "soak: $requests requests, $rps/s, p50 $p50 ms, p99 $p99 ms, non-2xx $non2xx, socket errors $errors;" \
       "RSS $start_kib KiB at the start, $end_kib KiB at the end: growth $((end_kib - start_kib)) KiB"
fi
kill -TERM "$server_pid"
wait "$server_pid" && echo "server: exit 0 after SIGTERM"
server_pid=""
