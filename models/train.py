#!/usr/bin/python3
"""Quantization-aware training of Safhire's models on Fashion-MNIST, and their export.

Run with Debian's python3-torch (CPU):  /usr/bin/python3 models/train.py small --bits 8

A model is a list of rounds; a round is one linear block between two client-side ReLUs: a sum of
terms (a convolution of an earlier activation, optionally after a sum-pool; an identity shortcut
is a fixed 1x1 diagonal convolution) plus a bias. Its integer semantics, which the exported file
carries and which src/hybrid evaluates bit for bit:

    acc   = bias_q + sum_terms conv(pool(act[src]), w_q)        (int64, |acc| < 2^(b-1))
    act'  = clip((max(acc, 0) * mult + 2^(shift-1)) >> shift, 0, 2^a - 1)   (client, exact)
    logits = acc of the last round

Accumulator-aware quantization (A2Q-style): all terms of a round share one weight scale s_w,
the smallest for which every output channel keeps sum |w_q| * max_input + |bias_q| < 2^(b-1)
with w_q = round(w / s_w) (found by bisection on the rounded weights themselves). Every hidden activation uses one
global unsigned a-bit scale, so an identity shortcut is the float weight 1.

The script writes models/<name>-b<bits>.sfhm (format in docs/model-format.md) and
models/<name>-b<bits>.ref: test images (quantized) with the logits of an independent numpy
integer evaluator, which the C++ tests compare against.
"""

import argparse
import gzip
import json
import math
import os
import struct
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

DATA = "/usr/share/datasets/fashion-mnist"
HERE = os.path.dirname(os.path.abspath(__file__))
ACT_BITS = {8: 2, 12: 4, 16: 6}  # activation bits a for accumulator bits b
BIAS_SHARE = 4  # |bias_q| <= 2^(b-1) / BIAS_SHARE
SHIFT = 24  # requantization multiplier precision


def load_idx(name):
    with gzip.open(os.path.join(DATA, name), "rb") as f:
        data = f.read()
    magic, = struct.unpack(">I", data[:4])
    dims = data[3]
    shape = struct.unpack(">" + "I" * dims, data[4:4 + 4 * dims])
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * dims).reshape(shape)


def load_split(split):
    prefix = "train" if split == "train" else "t10k"
    x = load_idx(prefix + "-images-idx3-ubyte.gz").astype(np.float32) / 255.0
    y = load_idx(prefix + "-labels-idx1-ubyte.gz").astype(np.int64)
    x = np.pad(x, ((0, 0), (2, 2), (2, 2)))[:, None, :, :]  # 28x28 -> 32x32, one channel
    return torch.from_numpy(x), torch.from_numpy(y)


# ---- Architectures -------------------------------------------------------------------------

def term(src, in_c, k=3, stride=1, pad=1, pool=0, identity=False):
    return dict(src=src, in_c=in_c, k=k, stride=stride, pad=pad, pool=pool, identity=identity)


def small_cnn():
    """4 rounds: stride-2 conv, conv + 1x1 stride-2 shortcut, conv + identity, pool + FC."""
    return [
        dict(out=8, terms=[term(0, 1, 3, 2, 1)]),                                  # 8x16x16
        dict(out=16, terms=[term(1, 8, 3, 2, 1), term(1, 8, 1, 2, 0)]),           # 16x8x8
        dict(out=16, terms=[term(2, 16, 3, 2, 1)]),                                # 16x4x4
        dict(out=16, terms=[term(3, 16, 3, 1, 1), term(3, 16, identity=True)]),    # 16x4x4
        dict(out=10, terms=[term(4, 16, 2, 2, 0, pool=2)]),                        # 2x2 sum-pool, FC
    ]


def resnet20():
    """ResNet-20 (He et al. 2016, CIFAR variant) on 1x32x32: 20 rounds. Downsampling blocks use a
    1x1 stride-2 convolution shortcut, the others the identity; the head is a global 8x8 sum-pool
    with a 64 -> 10 fully connected layer."""
    rounds = [dict(out=16, terms=[term(0, 1)])]
    src, c = 1, 16
    for stage, width in enumerate([16, 32, 64]):
        for block in range(3):
            stride = 2 if stage > 0 and block == 0 else 1
            rounds.append(dict(out=width, terms=[term(src, c, 3, stride, 1)]))
            mid = len(rounds)
            shortcut = term(src, c, identity=True) if stride == 1 and c == width else \
                term(src, c, 1, stride, 0)
            rounds.append(dict(out=width, terms=[term(mid, width), shortcut]))
            src, c = len(rounds), width
    rounds.append(dict(out=10, terms=[term(src, 64, 1, 1, 0, pool=8)]))
    return rounds


ARCHS = {"small": small_cnn, "resnet20": resnet20}


# ---- Quantized network ---------------------------------------------------------------------

class RoundSTE(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return torch.round(x)

    @staticmethod
    def backward(ctx, g):
        return g


@torch.no_grad()
def weight_scale(ws, budget):
    """The smallest scale s (to 0.1%) at which every output channel's sum of |round(w / s)|
    over all terms stays within the l1 budget: round-to-nearest weights that provably fit."""
    def fits(s):
        return max(float(sum(torch.round(w / s).abs().sum(dim=(1, 2, 3)) for w in ws).max()),
                   0.0) <= budget
    hi = max(float(w.abs().max()) for w in ws) * 2.0 + 1e-12  # every weight rounds to 0
    lo = hi / 1e6
    if fits(lo):
        return torch.tensor(lo)
    while hi / lo > 1.001:
        mid = math.sqrt(hi * lo)
        hi, lo = (mid, lo) if fits(mid) else (hi, mid)
    return torch.tensor(hi)


class QuantNet(nn.Module):
    def __init__(self, rounds, bits):
        super().__init__()
        self.rounds, self.bits, self.act_bits = rounds, bits, ACT_BITS[bits]
        self.amax = (1 << self.act_bits) - 1
        self.weights = nn.ParameterList()
        self.biases = nn.ParameterList()
        for r in rounds:
            for t in r["terms"]:
                if t["identity"]:
                    self.weights.append(nn.Parameter(torch.zeros(0), requires_grad=False))
                    continue
                w = torch.empty(r["out"], t["in_c"], t["k"], t["k"])
                nn.init.kaiming_normal_(w, nonlinearity="relu")
                self.weights.append(nn.Parameter(w))
            self.biases.append(nn.Parameter(torch.zeros(r["out"])))
        # Global activation clip (PACT-style, learned): scale s_a = clip / (2^a - 1).
        self.clip = nn.Parameter(torch.tensor(2.0))

    def act_scale(self):
        return self.clip.abs() / self.amax + 1e-6

    def round_weights(self, i, s_main):
        """The float weights of round i's terms, in units where the main source's integer
        activations are the inputs, and the l1 budget of each output channel."""
        r = self.rounds[i]
        ws, base = [], sum(len(x["terms"]) for x in self.rounds[:i])
        for j, t in enumerate(r["terms"]):
            if t["identity"]:
                # Same global activation scale on both sides: the float weight is exactly 1.
                assert r["terms"][0]["src"] != 0 and t["in_c"] == r["out"]
                w = torch.zeros(r["out"], t["in_c"], 1, 1)
                w[torch.arange(r["out"]), torch.arange(r["out"]), 0, 0] = 1.0
                ws.append(w)
            else:
                w = self.weights[base + j]
                ws.append(w / float(t["pool"] * t["pool"] if t["pool"] else 1))
        return ws

    def forward(self, x):
        s_in = 1.0 / self.amax
        acts = [torch.clamp(torch.round(x * self.amax), 0, self.amax)]
        scales = [s_in]
        s_a = self.act_scale()
        limit = (1 << (self.bits - 1)) - 1
        bias_limit = (1 << (self.bits - 1)) // BIAS_SHARE
        for i, r in enumerate(self.rounds):
            s_main = scales[r["terms"][0]["src"]]
            ws = self.round_weights(i, s_main)
            # Largest input of a term: (2^a - 1) times its pool area.
            area = max((t["pool"] ** 2 if t["pool"] else 1) for t in r["terms"])
            budget = (limit - bias_limit) / (self.amax * area)
            s_w = weight_scale(ws, budget)
            acc = torch.clamp(RoundSTE.apply(self.biases[i] / (s_w * s_main)), -bias_limit,
                              bias_limit).view(1, -1, 1, 1)
            for t, w in zip(r["terms"], ws):
                src = acts[t["src"]]
                if t["pool"]:
                    src = F.avg_pool2d(src, t["pool"]) * (t["pool"] ** 2)  # sum-pool
                wq = RoundSTE.apply(w / s_w)
                k, stride, pad = (1, 1, 0) if t["identity"] else (t["k"], t["stride"], t["pad"])
                acc = acc + F.conv2d(src, wq, stride=stride, padding=pad)
            if i + 1 == len(self.rounds):
                return acc.flatten(1) * (s_w * s_main)
            act = torch.clamp(RoundSTE.apply(F.relu(acc) * (s_w * s_main / s_a)), 0, self.amax)
            acts.append(act)
            scales.append(s_a)

    # ---- Export --------------------------------------------------------------------------

    @torch.no_grad()
    def integer_model(self):
        """The integer model: per round the quantized terms, biases and requantization."""
        s_in = 1.0 / self.amax
        s_a = float(self.act_scale())
        scales = [s_in]
        limit = (1 << (self.bits - 1)) - 1
        bias_limit = (1 << (self.bits - 1)) // BIAS_SHARE
        out = []
        for i, r in enumerate(self.rounds):
            s_main = scales[r["terms"][0]["src"]]
            ws = self.round_weights(i, s_main)
            area = max((t["pool"] ** 2 if t["pool"] else 1) for t in r["terms"])
            budget = (limit - bias_limit) / (self.amax * area)
            s_w = float(weight_scale(ws, budget))
            bias = torch.clamp(torch.round(self.biases[i] / (s_w * s_main)), -bias_limit,
                               bias_limit).long().numpy()
            terms = []
            for t, w in zip(r["terms"], ws):
                wq = torch.round(w / s_w).long().numpy()
                k, stride, pad = (1, 1, 0) if t["identity"] else (t["k"], t["stride"], t["pad"])
                terms.append(dict(src=t["src"], pool=t["pool"], k=k, stride=stride, pad=pad,
                                  w=wq))
            rq = None
            if i + 1 < len(self.rounds):
                mult = int(round(s_w * s_main / s_a * (1 << SHIFT)))
                rq = (mult, SHIFT)
            out.append(dict(out=r["out"], terms=terms, bias=bias, requant=rq))
            scales.append(s_a)
        return out


# ---- Independent integer evaluator (numpy) ---------------------------------------------------

def np_conv(x, w, stride, pad):
    """x: [C,H,W] int64, w: [O,C,k,k] -> [O,H',W'] int64 (exact)."""
    c, h, wd = x.shape
    o, _, k, _ = w.shape
    xp = np.pad(x, ((0, 0), (pad, pad), (pad, pad)))
    ho, wo = (h + 2 * pad - k) // stride + 1, (wd + 2 * pad - k) // stride + 1
    out = np.zeros((o, ho, wo), dtype=np.int64)
    for di in range(k):
        for dj in range(k):
            patch = xp[:, di:di + stride * ho:stride, dj:dj + stride * wo:stride]
            out += np.einsum("oc,chw->ohw", w[:, :, di, dj], patch)
    return out


def np_sum_pool(x, k):
    c, h, w = x.shape
    return x.reshape(c, h // k, k, w // k, k).sum(axis=(2, 4))


def np_evaluate(model, image_q, amax):
    acts = [image_q.astype(np.int64)]
    for r in model:
        acc = None
        for t in r["terms"]:
            src = acts[t["src"]]
            if t["pool"]:
                src = np_sum_pool(src, t["pool"])
            y = np_conv(src, t["w"], t["stride"], t["pad"])
            acc = y if acc is None else acc + y
        acc = acc + r["bias"].reshape(-1, 1, 1)
        if r["requant"] is None:
            return acc.reshape(-1)
        mult, shift = r["requant"]
        acts.append(np.minimum((np.maximum(acc, 0) * mult + (1 << (shift - 1))) >> shift, amax))


# ---- File format (docs/model-format.md) ------------------------------------------------------

def write_model(path, name, bits, act_bits, shape, model):
    buf = bytearray()
    buf += b"SFHM" + struct.pack("<HH", 1, 0)
    nb = name.encode()
    buf += struct.pack("<I", len(nb)) + nb
    buf += struct.pack("<BBH", bits, act_bits, 0)
    buf += struct.pack("<III", *shape)
    buf += struct.pack("<I", len(model))
    for r in model:
        buf += struct.pack("<II", r["out"], len(r["terms"]))
        for t in r["terms"]:
            o, c, k, _ = t["w"].shape
            buf += struct.pack("<IIIIII", t["src"], t["pool"], c, k, t["stride"], t["pad"])
            w = t["w"].astype(np.int64)
            assert np.abs(w).max() < (1 << 15)
            buf += w.astype("<i2").tobytes()
        buf += r["bias"].astype("<i4").tobytes()
        if r["requant"] is None:
            buf += struct.pack("<BIB", 0, 0, 0)
        else:
            buf += struct.pack("<BIB", 1, *r["requant"])
    with open(path, "wb") as f:
        f.write(bytes(buf))


def write_reference(path, images_q, labels, logits):
    """SFHR-free plain format: u32 count, u32 values per image, then per image the quantized
    pixels (u8), the label (u8) and 10 logits (i32), little-endian."""
    buf = bytearray(b"SFHT" + struct.pack("<HH", 1, 0))
    buf += struct.pack("<II", len(images_q), images_q[0].size)
    for img, lab, lg in zip(images_q, labels, logits):
        buf += img.astype(np.uint8).tobytes() + struct.pack("<B", int(lab))
        buf += np.asarray(lg, dtype="<i4").tobytes()
    with open(path, "wb") as f:
        f.write(bytes(buf))


# ---- Training ----------------------------------------------------------------------------

def evaluate_float(net, x, y, batch=1000):
    net.eval()
    correct = 0
    with torch.no_grad():
        for i in range(0, len(x), batch):
            correct += (net(x[i:i + batch]).argmax(1) == y[i:i + batch]).sum().item()
    return correct / len(x)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("arch", choices=sorted(ARCHS))
    ap.add_argument("--bits", type=int, default=8, choices=sorted(ACT_BITS))
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--reference-images", type=int, default=64)
    args = ap.parse_args()
    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    xtr, ytr = load_split("train")
    xte, yte = load_split("test")
    net = QuantNet(ARCHS[args.arch](), args.bits)
    opt = torch.optim.Adam(net.parameters(), lr=args.lr)
    steps = args.epochs * (len(xtr) // args.batch)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=args.lr, total_steps=steps)
    g = torch.Generator().manual_seed(args.seed)
    for epoch in range(args.epochs):
        net.train()
        perm = torch.randperm(len(xtr), generator=g)
        t0, total = time.time(), 0.0
        for i in range(len(xtr) // args.batch):
            idx = perm[i * args.batch:(i + 1) * args.batch]
            xb = xtr[idx]
            # Light augmentation: random horizontal flip.
            flip = torch.rand(len(xb), generator=g) < 0.5
            xb = torch.where(flip.view(-1, 1, 1, 1), xb.flip(3), xb)
            loss = F.cross_entropy(net(xb), ytr[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            total += loss.item()
        acc = evaluate_float(net, xte, yte)
        print(f"epoch {epoch + 1}: loss {total / (len(xtr) // args.batch):.4f}, "
              f"fake-quant test accuracy {acc:.4f} ({time.time() - t0:.0f} s)", flush=True)

    model = net.integer_model()
    act_bits = ACT_BITS[args.bits]
    amax = (1 << act_bits) - 1
    images_q = np.clip(np.round(xte.numpy()[:, :, :, :] * amax), 0, amax).astype(np.int64)
    correct, logits_all = 0, []
    for i in range(len(images_q)):
        lg = np_evaluate(model, images_q[i], amax)
        logits_all.append(lg)
        correct += int(np.argmax(lg) == yte[i].item())
    int_acc = correct / len(images_q)
    print(f"integer model (numpy evaluator) test accuracy {int_acc:.4f}")
    name = f"{args.arch}-b{args.bits}"
    write_model(os.path.join(HERE, name + ".sfhm"), name, args.bits, act_bits, (1, 32, 32), model)
    n = args.reference_images
    write_reference(os.path.join(HERE, name + ".ref"), images_q[:n], yte.numpy()[:n],
                    logits_all[:n])
    card = dict(model=name, arch=args.arch, accumulator_bits=args.bits, activation_bits=act_bits,
                epochs=args.epochs, seed=args.seed, fake_quant_accuracy=acc,
                integer_accuracy=int_acc, test_images=len(images_q))
    with open(os.path.join(HERE, name + ".json"), "w") as f:
        json.dump(card, f, indent=2)
    print(json.dumps(card))


if __name__ == "__main__":
    main()
