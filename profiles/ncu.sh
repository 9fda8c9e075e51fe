#!/usr/bin/env bash
# Nsight Compute over Safhire's main kernels on a GPU machine: the batched NTT, key switching
# (decompose, multiply-accumulate over the key, combine), the linear layer of the CUDA backend and
# a merge level of the packing trees. Each is profiled on a few launches after two warm-up ones,
# from the benchmark or command that exercises it, with the clocks left as they are
# (--clock-control none). Prints a short table (ncu-summary.txt): per kernel, the median duration,
# the achieved DRAM bandwidth (GB/s and % of peak) and SM throughput (% of peak); the raw CSV of
# each run is kept beside it (ncu-<label>.log).
# Usage: profiles/ncu.sh [BUILD_DIR (build-device)] [OUT_DIR (out/ncu)] [BUDGET_S (150)]
# (profiles/device-check.sh calls it with the time it has left.)
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build-device}
out=${2:-$root/out/ncu}
budget=${3:-150}
mkdir -p "$out"
deadline=$(($(date +%s) + budget))
ncu=$(command -v ncu || ls -1 /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | tail -1)
if [ -z "$ncu" ]; then
  echo "ncu.sh: Nsight Compute (ncu) not found" >&2
  exit 2
fi
metrics=gpu__time_duration.sum,dram__bytes.sum.per_second
metrics+=,dram__throughput.avg.pct_of_peak_sustained_elapsed
metrics+=,sm__throughput.avg.pct_of_peak_sustained_elapsed
bench=("$build/bench/bench_cuda" --benchmark_min_time=0.01 --benchmark_repetitions=1)

# profile LABEL KERNEL_REGEX LAUNCHES COMMAND...: within the time left, at most 60 s each.
status=0
profile() {
  local label=$1 kernels=$2 count=$3
  shift 3
  local left=$((deadline - $(date +%s)))
  ((left > 60)) && left=60
  if ((left < 10)); then
    echo "ncu.sh: no time left for $label"
    status=124
    return
  fi
  timeout "$left" "$ncu" --clock-control none --target-processes all --print-units base \
    --kernel-name "regex:$kernels" --launch-skip 2 --launch-count "$count" --metrics "$metrics" \
    --csv --page raw --log-file "$out/ncu-$label.log" "$@" >/dev/null 2>&1 || status=$?
}
profile ntt 'ntt_forward_kernel' 3 "${bench[@]}" --benchmark_filter='^ntt_forward_batch1024/2187/cuda'
profile keyswitch 'decompose_kernel|multiply_accumulate_kernel|combine_kernel' 6 \
  "${bench[@]}" --benchmark_filter='^keyswitch_batch256/2187/cuda'
profile linear 'linear_kernel' 3 "$build/host/apps/safhire" bench --backend cuda --gamma 2 --json
profile tree_level 'merge_kernel' 3 "${bench[@]}" --benchmark_filter='^pack_fast_batch8/2187/cuda'

python3 - "$out" <<'EOF' | tee "$out/ncu-summary.txt"
import csv, statistics, sys
from pathlib import Path
out = Path(sys.argv[1])
cols = {"gpu__time_duration.sum": "time", "dram__bytes.sum.per_second": "bw",
        "dram__throughput.avg.pct_of_peak_sustained_elapsed": "dram_pct",
        "sm__throughput.avg.pct_of_peak_sustained_elapsed": "sm_pct"}
print(f"{'kernel':<36}{'launches':>9}{'median us':>11}{'DRAM GB/s':>11}{'DRAM %':>8}{'SM %':>7}")
for label in ["ntt", "keyswitch", "linear", "tree_level"]:
    log = out / f"ncu-{label}.log"
    rows = [l for l in log.read_text(errors="replace").splitlines() if l.startswith('"')] if log.exists() else []
    if not rows:
        print(f"{label + ': no profile (see ncu-' + label + '.log)':<36}")
        continue
    table = list(csv.reader(rows))
    head = table[0]
    kernels = {}
    for r in table[1:]:
        if len(r) != len(head) or not r[0].strip().isdigit():
            continue  # the units row
        d = dict(zip(head, r))
        base, sep, args = d.get("Kernel Name", "?").split("(")[0].partition("<")
        k = base.split()[-1].split("::")[-1] + sep + args  # no "void ", no namespaces
        vals = {}
        for c, key in cols.items():
            try:
                vals[key] = float(d.get(c, "").replace(",", ""))
            except ValueError:
                pass
        kernels.setdefault(k, []).append(vals)
    for k, vs in kernels.items():
        med = lambda key: statistics.median(v[key] for v in vs) if all(key in v for v in vs) else float("nan")
        print(f"{k[:35]:<36}{len(vs):>9}{med('time') / 1e3:>11.1f}{med('bw') / 1e9:>11.0f}"
              f"{med('dram_pct'):>8.1f}{med('sm_pct'):>7.1f}")
EOF
exit "$status"
