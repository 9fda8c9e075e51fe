"""The figure of scripts/plot: one encrypted ResNet-20 inference per precision b and extraction
level gamma, from bench_hybrid's e2e/resnet20/b<B>/gamma<G> benchmarks (one thread). Left: the
server's time, stacked by step (extract, linear, pack, other). Right: the bytes of one inference,
stacked (up, down, and the session's evaluation keys). Bars are grouped by b, one per gamma.
"""
import argparse
import json
import re
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
NAME = re.compile(r"^e2e/resnet20/b(\d+)/gamma(\d+)(/iterations:\d+)?(/real_time)?$")
TIME_PARTS = [("extract_s", "extract", "#4c72b0"), ("linear_s", "linear", "#dd8452"),
              ("pack_s", "pack", "#55a868"), ("other_s", "other", "#8c8c8c")]
BYTE_PARTS = [("bytes_up", "up", "#4c72b0"), ("bytes_down", "down", "#dd8452"),
              ("key_bytes", "keys (once per session)", "#c9c9c9")]


def load(path):
    """{(b, gamma): counters} of the one-thread ResNet-20 runs in a Google Benchmark JSON."""
    runs = {}
    for bench in json.loads(Path(path).read_text())["benchmarks"]:
        match = NAME.match(bench["name"])
        if match and bench.get("run_type", "iteration") == "iteration":
            runs[(int(match.group(1)), int(match.group(2)))] = bench
    if not runs:
        sys.exit(f"plot: no e2e/resnet20/b<B>/gamma<G> benchmark in {path}")
    return runs


def stacked(ax, runs, keys, parts, scale, ylabel):
    bits = sorted({b for b, _ in keys})
    x, labels = [], []
    for i, (b, gamma) in enumerate(keys):
        x.append(bits.index(b) * 4 + gamma)
        labels.append(f"γ={gamma}")
    bottom = [0.0] * len(keys)
    for field, label, color in parts:
        values = [runs[k].get(field, 0.0) * scale for k in keys]
        ax.bar(x, values, bottom=bottom, color=color, label=label, width=0.8)
        bottom = [b + v for b, v in zip(bottom, values)]
    for xi, total in zip(x, bottom):
        ax.annotate(f"{total:.1f}", (xi, total), ha="center", va="bottom", fontsize=7)
    ax.set_xticks(x, labels, fontsize=8)
    for i, b in enumerate(bits):
        ax.annotate(f"b = {b}", (i * 4 + 1, 0), xytext=(0, -26), textcoords="offset points",
                    ha="center", va="top", fontsize=9, annotation_clip=False)
    ax.set_ylabel(ylabel)
    ax.set_ylim(0, max(bottom) * 1.12)
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=8, loc="upper left")


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("json", nargs="?", help="bench_hybrid JSON (default: the newest "
                        "profiles/results/*-e2e-resnet20-all.json)")
    parser.add_argument("--out", default=str(ROOT / "docs/figures/e2e-resnet20.png"))
    parser.add_argument("--title", default="")
    args = parser.parse_args()
    path = args.json
    if path is None:
        found = sorted((ROOT / "profiles/results").glob("*-e2e-resnet20-all.json"))
        if not found:
            sys.exit("plot: no profiles/results/*-e2e-resnet20-all.json; give a JSON file")
        path = found[-1]
    runs = load(path)
    keys = sorted(runs)
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    stacked(left, runs, keys, TIME_PARTS, 1.0, "server time per inference (s, one thread)")
    stacked(right, runs, keys, BYTE_PARTS, 1e-6, "bytes per inference (MB)")
    title = args.title or f"Encrypted ResNet-20 (synthetic weights) by b and γ — {Path(path).name}"
    fig.suptitle(title, fontsize=10)
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(args.out, dpi=120)
    print(f"plot: {args.out} from {path}")


if __name__ == "__main__":
    main()
