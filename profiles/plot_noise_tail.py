#!/usr/bin/env python3
"""The measured noise tail of `safhire failures --json` runs against the estimate, as an SVG.

Each run's curve is the fraction of its decrypted results whose noise reaches x estimated standard
deviations (of the result's round); the reference is what a Gaussian of the estimated variance
leaves there, erfc(x / sqrt 2). A result decrypts wrongly from half a step on: the dashed line
at the smallest such distance among the runs' rounds, the dotted one at 2^-32. Standard library
only (no matplotlib on the machines this runs on).

Usage: profiles/plot_noise_tail.py OUT.svg RUN.json...
"""
import json
import math
import sys

WIDTH, HEIGHT = 760, 480
LEFT, RIGHT, TOP, BOTTOM = 70, 20, 40, 60
X_MAX = 10.0
Y_MIN_EXP = -12  # 1e-12 at the bottom
COLOURS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"]


def sx(x):
    return LEFT + (WIDTH - LEFT - RIGHT) * x / X_MAX


def sy(p):
    p = max(p, 10.0 ** Y_MIN_EXP)
    return TOP + (HEIGHT - TOP - BOTTOM) * (-math.log10(p)) / -Y_MIN_EXP


def polyline(points, colour, dash=None, width=2):
    path = " ".join(f"{sx(x):.1f},{sy(p):.1f}" for x, p in points)
    extra = f' stroke-dasharray="{dash}"' if dash else ""
    return (f'<polyline fill="none" stroke="{colour}" stroke-width="{width}"{extra} '
            f'points="{path}"/>')


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    runs = []
    for name in sys.argv[2:]:
        with open(name) as f:
            runs.append(json.load(f))
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
           f'font-family="sans-serif" font-size="12">',
           f'<rect width="{WIDTH}" height="{HEIGHT}" fill="white"/>',
           f'<text x="{WIDTH / 2}" y="22" text-anchor="middle" font-size="14">Decryption noise '
           f'tail against the estimate (fraction of results at or beyond x)</text>']
    for e in range(0, Y_MIN_EXP - 1, -2):
        y = sy(10.0 ** e)
        out.append(f'<line x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{y:.1f}" y2="{y:.1f}" '
                   f'stroke="#ddd"/>')
        out.append(f'<text x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">1e{e}</text>')
    for x in range(0, int(X_MAX) + 1):
        out.append(f'<text x="{sx(x):.1f}" y="{HEIGHT - BOTTOM + 18}" '
                   f'text-anchor="middle">{x}</text>')
    out.append(f'<text x="{(LEFT + WIDTH - RIGHT) / 2}" y="{HEIGHT - 20}" text-anchor="middle">'
               f'|noise| in estimated standard deviations of its round</text>')
    out.append(f'<rect x="{LEFT}" y="{TOP}" width="{WIDTH - LEFT - RIGHT}" '
               f'height="{HEIGHT - TOP - BOTTOM}" fill="none" stroke="black"/>')
    gauss = [(i / 20, math.erfc(i / 20 / math.sqrt(2))) for i in range(0, int(X_MAX * 20) + 1)]
    out.append(polyline(gauss, "black", width=1.5))
    legend = [("black", "Gaussian of the estimated variance", None)]
    half = min(r["half_step_sigmas"] for run in runs for r in run["rounds"])
    out.append(f'<line x1="{sx(half):.1f}" x2="{sx(half):.1f}" y1="{TOP}" '
               f'y2="{HEIGHT - BOTTOM}" stroke="#555" stroke-dasharray="6,4"/>')
    legend.append(("#555", f"half a step (a wrong result), nearest round: {half:.2f}", "6,4"))
    y32 = sy(2.0 ** -32)
    out.append(f'<line x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{y32:.1f}" y2="{y32:.1f}" '
               f'stroke="#555" stroke-dasharray="2,3"/>')
    legend.append(("#555", "2^-32, the failure bound per result", "2,3"))
    for i, run in enumerate(runs):
        colour = COLOURS[i % len(COLOURS)]
        total = run["tail"][0]
        step = run["tail_step_sigmas"]
        points = [(k * step, c / total) for k, c in enumerate(run["tail"]) if c > 0]
        out.append(polyline(points, colour))
        legend.append((colour, f'{run["model"]} {run["set"]} gamma {run["gamma"]}: '
                               f'{total:,} results, {run["wrong"]} wrong', None))
    # The legend in the lower left, where the curves never go (they fall off to the right).
    for k, (colour, text, dash) in enumerate(legend):
        y = HEIGHT - BOTTOM - 12 - 18 * (len(legend) - 1 - k)
        extra = f' stroke-dasharray="{dash}"' if dash else ""
        out.append(f'<line x1="{LEFT + 10}" x2="{LEFT + 40}" y1="{y - 4}" '
                   f'y2="{y - 4}" stroke="{colour}" stroke-width="2"{extra}/>')
        out.append(f'<text x="{LEFT + 46}" y="{y}">{text}</text>')
    out.append("</svg>")
    with open(sys.argv[1], "w") as f:
        f.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
