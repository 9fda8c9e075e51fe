#!/usr/bin/env python3
"""The one-screen summary of a device check (profiles/device-check.sh), read from the reports it
wrote (steps.tsv, machine.txt, test_cuda.json, e2e-*.json, bench_cuda.json, ncu-summary.txt) and
its log.

Exit status 0 only when every step ran and passed, no test failed or was skipped, every
end-to-end run's logits equal the plaintext evaluator's and no benchmark reported an error.
Usage: device_summary.py FILES_DIR [LOG]
"""
import json
import re
import sys
from pathlib import Path

# The steps a full check runs, in order; Nsight Compute (ncu) is reported but never fails it.
EXPECTED = ["configure", "build", "device", "test_cuda", "e2e_cuda_gamma2", "e2e_cuda_gamma0",
            "e2e_cpu_gamma2", "ckks_demo_cuda", "ckks_bootstrap_cuda", "lanes_refresh_cuda",
            "bench_cuda"]
E2E = [("e2e_cuda_gamma2", "e2e-resnet20-b8-gamma2-cuda.json"),
       ("e2e_cuda_gamma0", "e2e-resnet20-b8-gamma0-cuda.json"),
       ("e2e_cpu_gamma2", "e2e-resnet20-b8-gamma2-cpu.json")]
BENCH_ROWS = [("ntt_forward_batch1024", "us"), ("product_batch1024", "us"),
              ("keyswitch_batch256", "us"), ("pack_fast_batch8", "ms"),
              ("extract_batch8/{m}/gamma0", "ms")]
RINGS = ["2187", "2401", "3125"]


def load_json(path):
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def read_steps(out):
    steps = {}
    path = out / "steps.tsv"
    if path.exists():
        for line in path.read_text().splitlines():
            parts = line.split("\t")
            if len(parts) == 3:
                steps[parts[0]] = (int(parts[1]), int(parts[2]))
    return steps


def test_counts(report):
    """(run, passed, failed, skipped, names of failed or skipped tests) of a GoogleTest JSON."""
    run = passed = failed = skipped = 0
    bad = []
    for suite in report.get("testsuites", []):
        for case in suite.get("testsuite", []):
            if case.get("status") != "RUN":
                continue
            name = f"{suite['name']}.{case['name']}"
            if case.get("failures"):
                failed += 1
                bad.append(name + " (failed)")
            elif case.get("result") == "SKIPPED":
                skipped += 1
                bad.append(name + " (skipped)")
            else:
                passed += 1
            run += 1
    return run, passed, failed, skipped, bad


def main():
    out = Path(sys.argv[1])
    steps = read_steps(out)
    problems = []
    lines = []
    log_path = Path(sys.argv[2]) if len(sys.argv) > 2 else out / "device-check.log"
    log = log_path.read_text(errors="replace") if log_path.exists() else ""

    # A bootstrap run with --compare-cpu: its output against the CPU's, word for word.
    def check_identical(name, r):
        verdict = r.get("identical_to_cpu")
        if verdict is None:
            problems.append(f"{name}: no comparison with the CPU")
        elif verdict:
            lines.append(f"          {name}: identical to the CPU's, word for word")
        else:
            problems.append(f"{name}: DIFFERS from the CPU's")

    machine = (out / "machine.txt").read_text().strip().splitlines() if (out / "machine.txt").exists() else []
    lines.append("device    " + ("; ".join(machine) if machine else "(unknown)"))
    lines.append("steps     " + ", ".join(f"{k} {v[1]} s" + ("" if v[0] == 0 else f" (rc {v[0]})")
                                          for k, v in steps.items()))

    for name, (rc, _) in steps.items():
        if name.startswith("sanitizer_"):
            tool = name.split("_", 1)[1]
            text = (out / f"sanitizer-{tool}.log")
            text = text.read_text(errors="replace") if text.exists() else ""
            found = re.search(r"ERROR SUMMARY: (\d+) error", text)
            if found and int(found.group(1)) > 0:
                problems.append(f"compute-sanitizer {tool}: {found.group(1)} error(s) "
                                f"(sanitizer-{tool}.log)")
            elif rc == 0:
                lines.append(f"sanitizer {tool}: no error")
            else:
                lines.append(f"sanitizer {tool}: inconclusive (exit status {rc}; "
                             f"sanitizer-{tool}.log)")
            continue
        if name == "ncu" or rc == 0:
            continue
        if name == "probe":
            found = re.search(r"missing on this machine:\n((?:  .*\n?)+)", log)
            lines_ = found.group(1).splitlines() if found else []
            names = [l.strip().split(" (")[0] for l in lines_ if not l.strip().startswith("(")]
            problems.append("probe: missing " + (", ".join(n for n in names if n) or "(see the log)"))
        elif rc == 124:
            problems.append(f"{name}: out of time")
        elif name == "device":
            why = re.search(r"no usable device \(([^)]*)\)", log)
            problems.append("no usable CUDA device" + (f": {why.group(1)}" if why else ""))
        else:
            problems.append(f"{name}: exit status {rc}")
    reached = [s for s in EXPECTED if s in steps]
    missing = [s for s in EXPECTED if s not in steps]
    if missing and (not problems):
        problems.append("not run: " + ", ".join(missing))
    elif missing:
        lines.append("not run   " + ", ".join(missing))

    report = load_json(out / "test_cuda.json")
    if report is not None:
        run, passed, failed, skipped, bad = test_counts(report)
        lines.append(f"tests     test_cuda: {run} run, {passed} passed, {failed} failed, "
                     f"{skipped} skipped")
        if run == 0:
            problems.append("test_cuda ran no test")
        if failed or skipped:
            problems.append(f"test_cuda: {failed} failed, {skipped} skipped: "
                            + ", ".join(bad[:6]) + (" ..." if len(bad) > 6 else ""))
    elif "test_cuda" in reached:
        problems.append("test_cuda wrote no report (crashed?)")

    for step, file in E2E:
        if step not in reached:
            continue
        r = load_json(out / file)
        if r is None:
            problems.append(f"{step}: no result")
            continue
        lines.append(
            f"e2e       {r['model']} gamma {r['gamma']} {r['backend']} x{r['threads']}: server "
            f"{r['server_s']:.3f} s (extract {r['server_extract_s']:.3f}, linear "
            f"{r['server_linear_s']:.3f}, pack {r['server_pack_s']:.3f}), client {r['client_s']:.3f} s, "
            f"logits {'equal' if r['logits_equal'] else 'MISMATCH'}")
        if not r["logits_equal"]:
            problems.append(f"{step}: encrypted logits differ from the plaintext evaluator's")

    if "ckks_demo_cuda" in reached:
        r = load_json(out / "ckks-demo-n16-cuda.json")
        if r is None:
            problems.append("ckks_demo_cuda: no result")
        else:
            bits = [st["precision_bits"] for st in r["steps"] if "precision_bits" in st]
            ms = {st["step"]: st["ms"] for st in r["steps"]}
            lines.append(
                f"ckks      {r['set']} on {r['backend']}: multiply+relinearize "
                f"{ms.get('multiply + relinearize', float('nan')):.1f} ms, rotate "
                f"{ms.get('rotate by 1', float('nan')):.1f} ms, worst precision {min(bits):.1f} bits")
            # Fresh encryption at scale 2^50 gives ~29 bits; far below means a wrong result.
            if min(bits) < 20:
                problems.append(f"ckks_demo_cuda: precision {min(bits):.1f} bits (< 20)")

    if "ckks_bootstrap_cuda" in reached:
        r = load_json(out / "ckks-bootstrap-n12-cuda.json")
        if r is None:
            problems.append("ckks_bootstrap_cuda: no result")
        else:
            lines.append(
                f"bootstrap {r['set']} on {r['backend']}: {r['bootstrap_ms']:.1f} ms, precision "
                f"{r['mean_precision_bits']:.1f} bits mean, {r['min_precision_bits']:.1f} worst, "
                f"{r['levels_left']} levels left")
            # The CPU gives 23 bits on average, 21 at the worst slot; far below is a wrong result.
            if r["min_precision_bits"] < 18:
                problems.append(
                    f"ckks_bootstrap_cuda: precision {r['min_precision_bits']:.1f} bits (< 18)")
            check_identical("ckks_bootstrap_cuda", r)

    if "ckks_bootstrap_n16_cuda" in steps:  # optional: run when time was left
        r = load_json(out / "ckks-bootstrap-n16-cuda.json")
        if r is None:
            problems.append("ckks_bootstrap_n16_cuda: no result")
        else:
            ms = {st["step"]: st["ms"] for st in r["steps"]}
            lines.append(
                f"bootstrap {r['set']} on {r['backend']}: {r['bootstrap_ms']:.1f} ms (CoeffToSlot "
                f"{ms.get('CoeffToSlot', float('nan')):.1f}, SlotToCoeff "
                f"{ms.get('SlotToCoeff', float('nan')):.1f}), precision "
                f"{r['mean_precision_bits']:.1f} bits mean, {r['min_precision_bits']:.1f} worst, "
                f"{r['levels_left']} levels left")
            # The CPU gives 24.7 bits on average, 22.9 at the worst slot.
            if r["min_precision_bits"] < 19:
                problems.append(
                    f"ckks_bootstrap_n16_cuda: precision {r['min_precision_bits']:.1f} bits (< 19)")
            check_identical("ckks_bootstrap_n16_cuda", r)

    for step_name, file, required in (("lanes_refresh_cuda", "lanes-refresh-n12-cuda.json", True),
                                      ("lanes_refresh_n16_cuda", "lanes-refresh-n16-cuda.json",
                                       False)):
        if step_name not in (reached if required else steps):
            continue
        r = load_json(out / file)
        if r is None:
            problems.append(f"{step_name}: no result")
            continue
        ms = {st["step"]: st["ms"] for st in r["steps"]}
        lines.append(
            f"lanes     {r['space']} on {r['backend']}: refresh {r['refresh_ms']:.1f} ms (CoeffToSlot "
            f"{ms.get('CoeffToSlot', float('nan')):.1f}, cleaning "
            f"{ms.get('cleaning (real part)', float('nan')) + ms.get('cleaning (imaginary part)', float('nan')):.1f}), "
            f"{r['digits_refreshed']} digits, {r['wrong_integers']} integers wrong")
        if r["wrong_integers"] != 0:
            problems.append(f"{step_name}: {r['wrong_integers']} wrong integers")
        check_identical(step_name, r)

    bench = load_json(out / "bench_cuda.json")
    if bench is not None:
        runs = bench.get("benchmarks", [])
        errors = sorted({re.sub(r"/manual_time.*$", "", b["name"]) + ": " + b.get("error_message", "")
                         for b in runs if b.get("error_occurred")})
        medians = {re.sub(r"/manual_time$", "", b.get("run_name", b["name"])): b for b in runs
                   if b.get("aggregate_name") == "median" and not b.get("error_occurred")}
        if errors:
            problems.append(f"bench_cuda: {len(errors)} benchmark(s) in error: " + "; ".join(errors[:3]))
        if not runs:
            problems.append("bench_cuda: no benchmark ran")
        lines.append("bench     median (manual time)        " + "".join(f"{m:>12}" for m in RINGS))
        for row, unit in BENCH_ROWS:
            cells = []
            for m in RINGS:
                name = (row.format(m=m) if "{m}" in row else f"{row}/{m}") + "/cuda"
                b = medians.get(name)
                cells.append(f"{b['real_time']:>9.1f} {b['time_unit']}" if b else f"{'-':>12}")
            lines.append(f"          {row.replace('/{m}', ''):<30}" + "".join(cells))
        for name, b in sorted(medians.items()):
            if name.startswith("ckks/"):
                lines.append(f"          {name.removesuffix('/real_time'):<48}"
                             f"{b['real_time']:>9.1f} {b['time_unit']}")
    elif "bench_cuda" in reached:
        problems.append("bench_cuda wrote no report")

    ncu = out / "ncu-summary.txt"
    if ncu.exists():
        lines.append("ncu       " + "\n          ".join(ncu.read_text().strip().splitlines()))
    elif "ncu" in steps:
        lines.append(f"ncu       no summary (exit status {steps['ncu'][0]}; see ncu-*.log)")

    verdict = "PASS" if not problems else "FAIL"
    print(f"==== Safhire device check: {verdict}")
    for line in lines:
        print(line)
    for p in problems:
        print("FAIL      " + p)
    return 0 if verdict == "PASS" else 1


if __name__ == "__main__":
    sys.exit(main())
