#!/usr/bin/env bash
# The device check: builds Safhire with CUDA for the GPU in front of it, runs the CUDA tests (and
# the CPU suites, as a sanity check of that machine's compiler), runs the CUDA and CPU benchmarks,
# and writes everything to $OUT (default ./out/device-check). Sized to finish within 8 minutes on
# the lent H200 (16 cores). Usage, through the device tool, after profiles/fetch-device-deps.sh:
#   run(command="bash profiles/device-check.sh", carry=[".device-deps"], timeout_s=540)
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${OUT:-$root/out/device-check}
mkdir -p "$out"
log="$out/device-check.log"
exec > >(tee "$log") 2>&1
start=$(date +%s)
step() { echo "== [$(( $(date +%s) - start ))s] $*"; }

step "machine"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv || true
nvcc --version | tail -2
nproc

# GoogleTest and Google Benchmark: the system's, else the Debian packages carried in .device-deps.
prefix_args=()
if [ ! -d /usr/include/gtest ] && ls "$root"/.device-deps/*.deb >/dev/null 2>&1; then
  step "unpacking carried GoogleTest / Google Benchmark packages"
  deps="$root/.device-deps/root"
  for deb in "$root"/.device-deps/*.deb; do dpkg -x "$deb" "$deps"; done
  prefix_args=(-DCMAKE_PREFIX_PATH="$deps/usr")
  export LD_LIBRARY_PATH="$deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}"
fi

step "configure and build (CUDA, sm_90)"
build="$root/build-device"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSAFHIRE_CUDA=ON \
  -DCMAKE_CUDA_ARCHITECTURES=90 "${prefix_args[@]}" || exit 1
cmake --build "$build" -j "$(nproc)" || exit 1

step "CUDA tests"
"$build/tests/cuda/test_cuda" --gtest_output="json:$out/test_cuda.json"
cuda_tests=$?

step "CPU tests (this machine's compiler)"
"$build/tests/test_core" --gtest_brief=1 && "$build/tests/test_ring" --gtest_brief=1
cpu_tests=$?

step "CUDA benchmarks"
timeout 150 "$build/bench/bench_cuda" --benchmark_repetitions=3 \
  --benchmark_report_aggregates_only=true --benchmark_out_format=json \
  --benchmark_out="$out/bench_cuda.json"

step "end-to-end ResNet-20 (synthetic, b = 8) on the CUDA backend, gamma 2 and 0; CPU backend on all cores for comparison"
for g in 2 0; do
  timeout 75 "$build/host/apps/safhire" bench --backend cuda --gamma "$g" --threads "$(nproc)" \
    | tee "$out/e2e-resnet20-b8-gamma$g-cuda.txt"
done
timeout 60 "$build/host/apps/safhire" bench --backend cpu --gamma 2 --threads "$(nproc)" \
  | tee "$out/e2e-resnet20-b8-gamma2-cpu$(nproc).txt"

step "CPU benchmarks (one polynomial; for reference only, another CPU than the CI machine's)"
timeout 45 "$build/bench/bench_ring" --benchmark_filter='ntt_forward/|ntt_inverse/|product_' \
  --benchmark_out_format=json --benchmark_out="$out/bench_ring_device_host.json"

step "done: cuda tests rc=$cuda_tests, cpu tests rc=$cpu_tests"
[ "$cuda_tests" -eq 0 ] && [ "$cpu_tests" -eq 0 ]
