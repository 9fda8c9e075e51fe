#!/usr/bin/env bash
# The lanes' measured figures (docs/lanes.md, profiles/results/README.md), as JSON into DIR:
#   bench-lanes.json            bench_lanes, one thread: refresh (three modes), mult and
#                               amortized_mult per (n, beta), steady state
#   refresh-<space>.json        `safhire lanes refresh --runs 16` on each N = 2^16 space: 16
#                               refreshes of products, 2^20 digits, every integer against GMP (the
#                               failure measurement; on every core, so its times are not the
#                               one-thread figures)
#   refresh-<mode>-<space>.json the same for the plain and unreduced refreshes of lanes-n16-4096-b2
#   demo-1024-products.json     `safhire lanes demo --products 64` on 16 lanes: 1,024 integer
#                               products with their refreshes, each against GMP
#   refresh-low-memory.json     key generation and two refreshes of lanes-n16-4096-b2 with
#                               --low-memory, one thread: the 4 GB configuration's peak
# Usage: profiles/lanes-measure.sh [--no-bench] DIR [BUILD]   (BUILD: a Release build folder,
# default build/; about 35 minutes on 2 cores and 24 GB, 15 of them the benchmarks, which
# --no-bench leaves out)
set -euo pipefail
bench=1
if [ "${1:-}" = --no-bench ]; then
  bench=0
  shift
fi
out=${1:?usage: profiles/lanes-measure.sh [--no-bench] DIR [BUILD]}
root=$(cd "$(dirname "$0")/.." && pwd)
build=${2:-$root/build}
safhire=$build/host/apps/safhire
mkdir -p "$out"
threads=$(nproc)

if [ $bench = 1 ]; then
  "$build/bench/bench_lanes" --benchmark_format=json --benchmark_out="$out/bench-lanes.json" \
    --benchmark_out_format=json >/dev/null
fi
for space in lanes-n16-4096-b2 lanes-n16-2048-b4 lanes-n16-1024-b16 lanes-n16-4096-b64; do
  "$safhire" lanes refresh --space "$space" --runs 16 --threads "$threads" --json \
    >"$out/refresh-$space.json"
done
for mode in plain unreduced; do
  "$safhire" lanes refresh --space lanes-n16-4096-b2 --mode "$mode" --runs 16 \
    --threads "$threads" --json >"$out/refresh-$mode-lanes-n16-4096-b2.json"
done
"$safhire" lanes demo --space lanes-n16-4096-b2 --products 64 --threads "$threads" --json \
  >"$out/demo-1024-products.json"
"$safhire" lanes refresh --space lanes-n16-4096-b2 --low-memory --runs 2 --threads 1 --json \
  >"$out/refresh-low-memory.json"
echo "lanes-measure: JSON in $out"
