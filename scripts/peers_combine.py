#!/usr/bin/env python3
"""Joins safhire.json (Google Benchmark, medians of repetitions) and openfhe.json into
peers.json, and prints the table. Usage: peers_combine.py OUT_DIR"""
import json
import os
import re
import sys

out = sys.argv[1]
ours = json.load(open(os.path.join(out, "safhire.json")))
peer = json.load(open(os.path.join(out, "openfhe.json")))
medians = {}
for b in ours["benchmarks"]:
    if b.get("aggregate_name") == "median":
        ms = b["real_time"] * {"ms": 1, "us": 1e-3, "ns": 1e-6, "s": 1e3}[b["time_unit"]]
        medians[b["run_name"].removesuffix("/real_time")] = ms
precision = {}
for n, f in (("16384", "safhire-demo-n14.json"), ("65536", "safhire-demo-n16.json")):
    demo = json.load(open(os.path.join(out, f)))
    precision[n] = next(s["precision_bits"] for s in demo["steps"] if s["step"] == "rescale")
rows = []
for r in peer:
    n = re.search(r"N=(\d+)", r["params"]).group(1)
    name = next((k for k in medians if k.split("/")[1] == r["operation"] and k.split("/")[2] == n),
                None)
    if name is None:
        continue
    row = {"operation": r["operation"], "params": r["params"], "safhire_ms": round(medians[name], 3),
           "openfhe_ms": round(r["ms"], 3), "ratio": round(r["ms"] / medians[name], 2)}
    if r.get("precision_bits") is not None:
        row["openfhe_precision_bits"] = round(r["precision_bits"], 2)
        row["safhire_precision_bits"] = round(precision[n], 2)
    rows.append(row)
# Bootstrapping, when bench-peers ran it: one row with both precisions (mean over slots).
ours_boot = os.path.join(out, "safhire-bootstrap-n16.json")
peer_boot = os.path.join(out, "openfhe-bootstrap.json")
# Also the 4 GB configuration (slim, --low-memory), against the same OpenFHE run.
for ours_file, label in [(ours_boot, "full slots"),
                         (os.path.join(out, "safhire-bootstrap-n16-low-memory.json"),
                          "full slots, slim, low memory")]:
    if not (os.path.exists(ours_file) and os.path.exists(peer_boot)):
        continue
    a, b = json.load(open(ours_file)), json.load(open(peer_boot))
    rows.append({"operation": "bootstrap", "params": f"N={a['N']} {label}",
                 "safhire_ms": round(a["bootstrap_ms"], 1), "openfhe_ms": round(b["ms"], 1),
                 "ratio": round(b["ms"] / a["bootstrap_ms"], 2),
                 "safhire_precision_bits": a["mean_precision_bits"],
                 "openfhe_precision_bits": round(b["mean_precision_bits"], 2),
                 "safhire_levels_left": a["levels_left"], "openfhe_levels_left": b["levels_left"],
                 "safhire_peak_rss_mb": a["peak_rss_mb"], "openfhe_peak_rss_mb":
                     round(b["peak_rss_mb"], 1),
                 "safhire_set": a["set"], "openfhe_params": b["params"]})
json.dump(rows, open(os.path.join(out, "peers.json"), "w"), indent=1)
print(f"{'operation':20} {'params':22} {'Safhire ms':>11} {'OpenFHE ms':>11} {'ratio':>6}")
for r in rows:
    print(f"{r['operation']:20} {r['params']:22} {r['safhire_ms']:11.2f} {r['openfhe_ms']:11.2f} "
          f"{r['ratio']:6.2f}")
