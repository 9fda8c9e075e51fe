#!/usr/bin/env bash
# The device check: builds the CUDA targets it runs (test_cuda, bench_cuda, safhire) for the GPU
# in front of it, runs every CUDA test with SAFHIRE_REQUIRE_CUDA=1 (a "no CUDA device" skip is a
# failure), the encrypted ResNet-20 end to end on the CUDA backend (a logits mismatch is a
# failure), the CUDA benchmarks and, when time is left, compute-sanitizer over a few tests and
# Nsight Compute over the main kernels (profiles/ncu.sh). It ends with a one-screen summary and
# leaves three files in $OUT (default ./out/device-check): summary.txt, device-check.log and
# device-check-files.tar.gz with every report (also unpacked in files/ when run by hand). It
# fails on any failed or skipped test, a missing report, a logits mismatch, a benchmark error, a
# sanitizer error or a step out of time.
#
# Sized for a lent GPU window: the whole check stops within SAFHIRE_CHECK_BUDGET_S (default 290 s),
# each step within its own limit, so that a second try fits in the window.
#
# The GPU machine's image has the CUDA toolkit, a C++ compiler, CMake, ninja and Python, not the
# libraries Safhire builds with; run profiles/fetch-device-deps.sh here first and carry them:
#   run(command="bash profiles/device-check.sh", carry=[".device-deps"], timeout_s=330)
# A probe before configuring names anything missing within seconds. Options:
#   --build-only   stop after the build (profiles/bare-image-build.sh runs the check this way)
#   --no-ncu       never run Nsight Compute
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${OUT:-$root/out/device-check}
build=${SAFHIRE_DEVICE_BUILD_DIR:-$root/build-device}
deps="$root/.device-deps/root"
budget=${SAFHIRE_CHECK_BUDGET_S:-290}
build_only=0
ncu=1
for arg in "$@"; do
  case "$arg" in
    --build-only) build_only=1 ;;
    --no-ncu) ncu=0 ;;
    *) echo "device-check: unknown option $arg" >&2; exit 2 ;;
  esac
done
files="$out/files"  # every report; packed into device-check-files.tar.gz at the end
rm -rf "$files"
mkdir -p "$files"
: >"$files/steps.tsv"
exec > >(tee "$out/device-check.log") 2>&1
tee_pid=$!
start=$(date +%s)
deadline=$((start + budget))
step() { echo "== [$(($(date +%s) - start))s] $*"; }
# Prints the summary, packs the reports (the device tool brings back at most 8 files, so under
# it, where OUT is set, the loose ones are removed) and exits with the verdict.
summary() {
  local rc=1
  if command -v python3 >/dev/null; then
    python3 "$root/profiles/device_summary.py" "$files" "$out/device-check.log" |
      tee "$out/summary.txt"
    rc=${PIPESTATUS[0]}
  else
    echo "device check: FAIL (no python3 for the summary); steps:"
    cat "$files/steps.tsv"
  fi
  tar czf "$out/device-check-files.tar.gz" -C "$out" files
  [ -n "${OUT:-}" ] && rm -rf "$files"
  exec >&- 2>&-
  wait "$tee_pid" 2>/dev/null  # the log is complete when the check returns
  exit "$rc"
}

# run NAME LIMIT_S COMMAND...: runs COMMAND within min(LIMIT_S, the time left), records
# "NAME rc seconds" in steps.tsv and returns COMMAND's status (124: out of time).
run() {
  local name=$1 limit=$2
  shift 2
  local left=$((deadline - $(date +%s)))
  ((left < limit)) && limit=$left
  if ((limit < 5)); then
    printf '%s\t124\t0\n' "$name" >>"$files/steps.tsv"
    echo "device-check: no time left for $name"
    return 124
  fi
  local t0 rc
  t0=$(date +%s)
  timeout "$limit" "$@"
  rc=$?
  printf '%s\t%d\t%d\n' "$name" "$rc" "$(($(date +%s) - t0))" >>"$files/steps.tsv"
  return "$rc"
}

step "machine"
{
  if command -v nvidia-smi >/dev/null; then
    nvidia-smi --query-gpu=name,driver_version,compute_cap,memory.total,clocks.max.sm \
      --format=csv,noheader 2>&1 | head -4 | sed 's/^/gpu: /'
  else
    echo "gpu: nvidia-smi not found"
  fi
  command -v nvcc >/dev/null && nvcc --version | tail -1 | sed 's/^/nvcc: /'
  echo "cpus: $(nproc)"
} | tee "$files/machine.txt"

# ---- probe: every tool and library, system first, then the carried copy ----------------------
step "probe"
missing=()
for tool in cmake ninja nvcc python3; do
  command -v "$tool" >/dev/null || missing+=("$tool")
done
cxx=${CXX:-$(command -v c++ || command -v g++ || true)}
[ -n "$cxx" ] || missing+=("a C++ compiler (c++ or g++)")
if command -v cmake >/dev/null; then
  cmake_version=$(cmake --version | head -1 | grep -o '[0-9][0-9.]*' | head -1)
  printf '3.24\n%s\n' "$cmake_version" | sort -V -C || missing+=("CMake >= 3.24 (found $cmake_version)")
fi
# lib NAME HEADER LIBRARY PACKAGE: "system", "carried", or added to `missing`.
declare -A where
probe_lib() {
  local name=$1 header=$2 lib=$3 package=$4 src="$files/probe-$1.cpp"
  printf '#include <%s>\nint main() { return 0; }\n' "$header" >"$src"
  if "$cxx" -std=c++20 "$src" -o "$files/probe-$name" -l"$lib" -pthread >/dev/null 2>&1; then
    where[$name]=system
  elif [ -d "$deps" ] && "$cxx" -std=c++20 "$src" -o "$files/probe-$name" -I"$deps/usr/include" \
         -I"$deps/usr/include/x86_64-linux-gnu" \
         -L"$deps/usr/lib/x86_64-linux-gnu" -l"$lib" -pthread >/dev/null 2>&1; then
    where[$name]=carried
  else
    missing+=("$name (<$header>, -l$lib; Debian: $package)")
  fi
  rm -f "$src" "$files/probe-$name"
}
if [ -n "$cxx" ]; then
  probe_lib sodium sodium.h sodium libsodium-dev
  probe_lib zlib zlib.h z zlib1g-dev
  probe_lib gtest gtest/gtest.h gtest libgtest-dev
  probe_lib benchmark benchmark/benchmark.h benchmark libbenchmark-dev
  probe_lib gmp gmpxx.h gmpxx libgmp-dev
fi
if ((${#missing[@]})); then
  printf 'device-check: missing on this machine:\n' >&2
  printf '  %s\n' "${missing[@]}" >&2
  [ -d "$deps" ] || echo "  (no .device-deps: run profiles/fetch-device-deps.sh where" \
    "Debian's registry is reachable, and carry .device-deps)" >&2
  printf 'probe\t2\t0\n' >>"$files/steps.tsv"
  summary
fi
for name in sodium zlib gtest benchmark gmp; do echo "  $name: ${where[$name]}"; done

# ---- configure and build the targets the check runs ------------------------------------------
arch=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d '. ')
[[ "$arch" =~ ^[0-9]+$ ]] || arch=90
lib="$deps/usr/lib/x86_64-linux-gnu"
config=(-DCMAKE_BUILD_TYPE=Release -DSAFHIRE_PYTHON=OFF -DSAFHIRE_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES="$arch"
        -DCMAKE_CXX_COMPILER="$cxx" -DSAFHIRE_REQUIRE_GMP=OFF -DSAFHIRE_REQUIRE_RPC=OFF)
[ "${where[sodium]}" = carried ] &&
  config+=(-DSODIUM_INCLUDE_DIR="$deps/usr/include" -DSODIUM_LIBRARY="$lib/libsodium.so")
[ "${where[zlib]}" = carried ] &&
  config+=(-DZLIB_INCLUDE_DIR="$deps/usr/include" -DZLIB_LIBRARY="$lib/libz.so")
[ "${where[gtest]}" = carried ] && config+=(-DGTest_DIR="$lib/cmake/GTest")
[ "${where[benchmark]}" = carried ] && config+=(-Dbenchmark_DIR="$lib/cmake/benchmark")
# GMP for the lanes (gmpxx.h in include/, gmp.h in the multiarch folder).
[ "${where[gmp]}" = carried ] &&
  config+=(-DGMPXX_INCLUDE_DIR="$deps/usr/include"
           -DGMP_C_INCLUDE_DIR="$deps/usr/include/x86_64-linux-gnu"
           -DGMPXX_LIBRARY="$lib/libgmpxx.so" -DGMP_C_LIBRARY="$lib/libgmp.so")
export LD_LIBRARY_PATH="$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
step "configure (CUDA for sm_$arch)"
run configure 60 cmake -S "$root" -B "$build" -G Ninja "${config[@]}" >"$files/configure.log" 2>&1 ||
  { tail -30 "$files/configure.log"; summary; }
step "build test_cuda bench_cuda safhire"
run build 170 cmake --build "$build" -j "$(nproc)" --target test_cuda bench_cuda safhire ||
  summary
if ((build_only)); then
  step "built (--build-only)"
  exit 0
fi

# ---- the device: fails here, within seconds, where there is none -----------------------------
export SAFHIRE_REQUIRE_CUDA=1
step "device"
run device 30 "$build/tests/cuda/test_cuda" --gtest_filter='CudaDevice.*' --gtest_brief=1 ||
  summary

step "CUDA tests (SAFHIRE_REQUIRE_CUDA=1)"
run test_cuda 100 "$build/tests/cuda/test_cuda" --gtest_brief=1 \
  --gtest_output="json:$files/test_cuda.json"

step "end to end: synthetic ResNet-20, b = 8, CUDA backend at gamma 2 and 0, CPU backend at gamma 2"
for g in 2 0; do
  run "e2e_cuda_gamma$g" 60 "$build/host/apps/safhire" bench --backend cuda --gamma "$g" --json \
    >"$files/e2e-resnet20-b8-gamma$g-cuda.json"
  cat "$files/e2e-resnet20-b8-gamma$g-cuda.json"
done
run e2e_cpu_gamma2 45 "$build/host/apps/safhire" bench --backend cpu --gamma 2 \
  --threads "$(nproc)" --json >"$files/e2e-resnet20-b8-gamma2-cpu.json"
cat "$files/e2e-resnet20-b8-gamma2-cpu.json"

step "CKKS on the device: safhire ckks demo (N = 2^16, L = 24), every step checked against double"
run ckks_demo_cuda 60 "$build/host/apps/safhire" ckks demo --backend cuda --set n16-l24 --json \
  >"$files/ckks-demo-n16-cuda.json"
cat "$files/ckks-demo-n16-cuda.json"

step "CKKS bootstrapping on the device: safhire ckks bootstrap (the N = 2^12 test ring)"
run ckks_bootstrap_cuda 60 "$build/host/apps/safhire" ckks bootstrap --backend cuda --insecure \
  --runs 3 --compare-cpu --json >"$files/ckks-bootstrap-n12-cuda.json"
cat "$files/ckks-bootstrap-n12-cuda.json"
run ckks_bootstrap_cuda_seeded 40 "$build/host/apps/safhire" ckks bootstrap --backend cuda \
  --insecure --seeded-keys --runs 3 --json >"$files/ckks-bootstrap-n12-cuda-seeded.json"
cat "$files/ckks-bootstrap-n12-cuda-seeded.json"

step "Lanes on the device: safhire lanes refresh --compare-cpu (the N = 2^12 test space)"
run lanes_refresh_cuda 40 "$build/host/apps/safhire" lanes refresh --backend cuda \
  --space lanes-n12-256-b2 --insecure --runs 3 --compare-cpu --json \
  >"$files/lanes-refresh-n12-cuda.json"
cat "$files/lanes-refresh-n12-cuda.json"

step "Field lanes on the device: safhire lanes field --compare-cpu (F_65537, N = 2^12)"
run lanes_field_cuda 40 "$build/host/apps/safhire" lanes field --backend cuda \
  --space field-n12-65537 --insecure --products 3 --compare-cpu --json \
  >"$files/lanes-field-n12-cuda.json"
cat "$files/lanes-field-n12-cuda.json"

step "CUDA benchmarks (the lanes' N = 2^16 spaces apart, below)"
run bench_cuda 80 "$build/bench/bench_cuda" --benchmark_repetitions=3 --benchmark_min_time=0.05 \
  --benchmark_filter='-(lanes|fields)/' --benchmark_report_aggregates_only=true \
  --benchmark_out_format=json --benchmark_out="$files/bench_cuda.json" >/dev/null

# The lanes' own refresh, 16 integers modulo 2^4096 + 1 at N = 2^16 (keys made on the device),
# when time is left: its steps on the GPU and the last refresh against the CPU's (every core),
# word for word, every integer against GMP.
if (($(date +%s) + 100 < deadline)); then
  step "Lanes at N = 2^16 on the device (lanes-n16-4096-b2)"
  run lanes_refresh_n16_cuda 90 "$build/host/apps/safhire" lanes refresh --backend cuda \
    --space lanes-n16-4096-b2 --threads "$(nproc)" --runs 3 --compare-cpu --json \
    >"$files/lanes-refresh-n16-cuda.json"
  cat "$files/lanes-refresh-n16-cuda.json"
fi

# The issue's own bootstrap, N = 2^16 (n16-boot-h192, keys made on the device), when time is
# left: its time per step and precision on the GPU (the later target: Cheddar's 31 ms on H100),
# and the last run's output against the same bootstrap on the CPU (every core), word for word
# (--compare-cpu: a difference fails the step). test_cuda checks the N = 2^12 test ring's too.
if (($(date +%s) + 130 < deadline)); then
  step "CKKS bootstrapping at N = 2^16 on the device (n16-boot-h192)"
  run ckks_bootstrap_n16_cuda 120 "$build/host/apps/safhire" ckks bootstrap --backend cuda \
    --set n16-boot-h192 --threads "$(nproc)" --runs 3 --compare-cpu --json \
    >"$files/ckks-bootstrap-n16-cuda.json"
  cat "$files/ckks-bootstrap-n16-cuda.json"
fi

# compute-sanitizer (memcheck: out-of-bounds and misaligned accesses; initcheck: reads of device
# memory nothing wrote) over a few CUDA tests that run every kind of kernel, when time is left.
sanitizer=$(command -v compute-sanitizer || ls -1 /usr/local/cuda/bin/compute-sanitizer 2>/dev/null || true)
if [ -n "$sanitizer" ] && (($(date +%s) + 120 < deadline)); then
  step "compute-sanitizer (memcheck, initcheck) over a subset of the CUDA tests"
  subset='AllRings/CudaKernels.*/3_3:AllRings/CudaKernels.*/7_2:DefaultSets/CudaKeySwitch.*/default_b8'
  subset+=':Trained/CudaBackend.*/small_b8_gamma2:CudaCkks.PrimitivesMatchTheCpuWordForWord'
  subset+=':CudaCkks.SeededKeysMatchTheCpuWordForWord'
  for tool in memcheck initcheck; do
    run "sanitizer_$tool" 50 "$sanitizer" --tool "$tool" --error-exitcode 9 \
      "$build/tests/cuda/test_cuda" --gtest_brief=1 --gtest_filter="$subset" \
      >"$files/sanitizer-$tool.log" 2>&1
    grep -E "ERROR SUMMARY|PASSED|FAILED" "$files/sanitizer-$tool.log" | tail -3
  done
fi

if ((ncu)) && (($(date +%s) + 60 < deadline)); then
  step "Nsight Compute (profiles/ncu.sh, $((deadline - $(date +%s) - 10)) s left)"
  t0=$(date +%s)
  bash "$root/profiles/ncu.sh" "$build" "$files" "$((deadline - t0 - 10))"
  printf 'ncu\t%d\t%d\n' "$?" "$(($(date +%s) - t0))" >>"$files/steps.tsv"
fi
step "summary"
summary
