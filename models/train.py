#!/usr/bin/python3
"""Quantization-aware training of Safhire's models on Fashion-MNIST, and their export.

Run with Debian's python3-torch (CPU):  /usr/bin/python3 models/train.py small --bits 8

A model is a list of rounds; a round is one linear block between two client-side ReLUs: a sum of
terms (a convolution of an earlier activation, optionally after a sum-pool; an identity shortcut
is a 1x1 diagonal convolution with fixed per-channel gains) plus a bias. Its integer semantics,
which the exported file carries and which src/hybrid evaluates bit for bit:

    acc   = bias_q + sum_terms conv(pool(act[src]), w_q)        (int64, |acc| < 2^(b_r-1))
    act'  = clip((max(acc, 0) * mult + 2^(shift-1)) >> shift, 0, 2^a - 1)   (client, exact)
    logits = acc of the last round

Accumulator-aware quantization (A2Q+-style): the inputs are unsigned, so every partial sum of an
output channel's accumulator (with the bias or without, over any subset of its products) lies in
[min(bias_q, 0) + neg, max(bias_q, 0) + pos], where pos and neg sum its positive and negative
w_q * max_input; that interval must fit the signed b_r-bit window. All terms of a round share one
weight scale s_w, the smallest for which every channel keeps pos and -neg within the window less
a reserve for the bias (found by bisection on the rounded weights w_q = round(w / s_w)
themselves); each bias is then clipped to what its channel leaves. This is twice the weight
budget of the symmetric bound |bias_q| + sum |w_q| * max_input < 2^(b_r-1) when positive and
negative weights balance. Hidden rounds have
b_r = b; the first and last may be wider (--edge-bits): the first reads the image at
--input-bits, the last sum-pools the final activation, which no narrow accumulator can hold.
Hidden activations are unsigned a-bit values with one learned scale for all of them (an identity
shortcut is then the float weight 1) or, with --per-round-clip, one per round; a term that reads
another activation than its round's first term is scaled by the ratio of the two scales before
quantization (an identity shortcut becomes a quantized diagonal 1x1 convolution). With
--equalize, folding first rescales every channel of every hidden activation (through the
weights of its writer and readers, and the gains of identity shortcuts) so that each channel of
a round uses the same share of its accumulator budget, not only the widest one
(`equalize_channels`; the float network is unchanged, since ReLU commutes with positive scales).
With --dynamic-equalize, channel scales are also steered at every training step, so that each
channel's integer weights keep filling the budget while QAT moves them (`QuantNet.effective`).

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
ACT_BITS = {8: 2, 12: 4, 16: 6}  # default activation bits a for accumulator bits b
BIAS_RESERVE = 0.25  # default share of the half window that every channel leaves its bias
SHIFT = 24  # requantization multiplier precision
EQUALIZE_LIMIT = 8.0  # the largest factor by which equalization moves a channel off the mean
EQUALIZE_RATE = 0.05  # the step of dynamic equalization (QuantNet.update_equalization)


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
def channel_range(wqs, max_inputs):
    """Per output channel, the sums of the positive and of the negative integer weights times
    their term's largest input: the extremes of the bias-free accumulator."""
    pos = sum(w.clamp(min=0).sum(dim=(1, 2, 3)) * m for w, m in zip(wqs, max_inputs))
    neg = sum(w.clamp(max=0).sum(dim=(1, 2, 3)) * m for w, m in zip(wqs, max_inputs))
    return pos, neg


@torch.no_grad()
def weight_scale(ws, max_inputs, budget):
    """The smallest scale s (to 0.1%) at which every output channel's positive and negative
    weight sums (rounded weights times their largest input) stay within +-budget:
    round-to-nearest weights that provably fit."""
    def fits(s):
        pos, neg = channel_range([torch.round(w / s) for w in ws], max_inputs)
        return float(torch.maximum(pos, -neg).max()) <= budget
    hi = max(float(w.abs().max()) for w in ws) * 2.0 + 1e-12  # every weight rounds to 0
    lo = hi / 1e6
    if fits(lo):
        return torch.tensor(lo)
    while hi / lo > 1.001:
        mid = math.sqrt(hi * lo)
        hi, lo = (mid, lo) if fits(mid) else (hi, mid)
    return torch.tensor(hi)


class QuantNet(nn.Module):
    """rounds: the architecture; bits: accumulator bits of the hidden rounds; edge_bits: those of
    the first and last rounds (which read the image and pool the last activation); act_bits and
    input_bits: unsigned activation and image precision."""

    def __init__(self, rounds, bits, edge_bits, act_bits, input_bits, bias_reserve=BIAS_RESERVE,
                 per_round_clip=False, dynamic_equalize=False):
        super().__init__()
        self.rounds, self.act_bits, self.input_bits = rounds, act_bits, input_bits
        self.bias_reserve, self.per_round_clip = bias_reserve, per_round_clip
        self.dynamic_equalize = dynamic_equalize
        # Per hidden activation, the log channel scales of the dynamic equalization (`effective`).
        self.log_k = nn.ParameterList([nn.Parameter(torch.zeros(r["out"]), requires_grad=False)
                                       for r in rounds[:-1]])
        self.round_bits = [edge_bits if i in (0, len(rounds) - 1) else bits
                           for i in range(len(rounds))]
        self.amax, self.amax_in = (1 << act_bits) - 1, (1 << input_bits) - 1
        self.weights = nn.ParameterList()
        self.biases = nn.ParameterList()
        for r in rounds:
            for t in r["terms"]:
                if t["identity"]:  # per-channel gains of the diagonal (`equalize_channels`)
                    self.weights.append(nn.Parameter(torch.ones(r["out"]), requires_grad=False))
                    continue
                w = torch.empty(r["out"], t["in_c"], t["k"], t["k"])
                nn.init.kaiming_normal_(w, nonlinearity="relu")
                self.weights.append(nn.Parameter(w))
            self.biases.append(nn.Parameter(torch.zeros(r["out"])))
        # Activation clips (PACT-style, learned): activation k >= 1 has the unsigned scale
        # s_a = clip / (2^a - 1), with one clip for all of them or (per_round_clip) one each.
        self.clips = nn.Parameter(torch.full((len(rounds) - 1 if per_round_clip else 1,), 2.0))

    def act_scales(self):
        """The float value of one integer step of every activation (0: the image)."""
        clips = self.clips.abs() / self.amax + 1e-6
        return [torch.tensor(1.0 / self.amax_in)] + [
            clips[k if self.per_round_clip else 0] for k in range(len(self.rounds) - 1)]

    def slots(self, i):
        """The indices in self.weights of round i's terms (one flat list over all rounds)."""
        base = sum(len(r["terms"]) for r in self.rounds[:i])
        return range(base, base + len(self.rounds[i]["terms"]))

    def round_weights(self, i, scales, weights):
        """The float weights of round i's terms (weights: one tensor per slot, see
        `effective`), in units where the main source's integer activations are the inputs: a
        term reading another activation is scaled by the ratio of the two activations' scales
        (1 for an identity shortcut under one global clip)."""
        r = self.rounds[i]
        ws, slots = [], self.slots(i)
        s_main = scales[r["terms"][0]["src"]]
        for j, t in enumerate(r["terms"]):
            ratio = scales[t["src"]] / s_main
            if t["identity"]:
                assert r["terms"][0]["src"] != 0 and t["in_c"] == r["out"]
                w = torch.zeros(r["out"], t["in_c"], 1, 1)
                w[torch.arange(r["out"]), torch.arange(r["out"]), 0, 0] = weights[slots[j]]
                ws.append(w * ratio)
            else:
                w = weights[slots[j]]
                ws.append(w * ratio / float(t["pool"] * t["pool"] if t["pool"] else 1))
        return ws

    def max_inputs(self, i):
        """The largest input of each of round i's terms (after its sum-pool)."""
        return [(self.amax_in if t["src"] == 0 else self.amax) *
                (t["pool"] ** 2 if t["pool"] else 1) for t in self.rounds[i]["terms"]]

    def effective(self):
        """The weights (one tensor per slot) and biases that the quantized network uses. They
        are the parameters themselves unless dynamic_equalize is set; then every channel of
        every hidden activation is rescaled by its factor k_c (the buffer log_k): its writer's
        weights and bias times k_c, its readers' input weights over k_c, as
        `equalize_channels` does once at folding. ReLU commutes with positive scales, so this
        is a reparameterization (the parameters hold the network up to the channel scales);
        `update_equalization` steers k during training and `integer_model` exports the
        rescaled weights."""
        ws, bs = list(self.weights), list(self.biases)
        if not self.dynamic_equalize:
            return ws, bs
        rounds = self.rounds
        for i in range(len(rounds) - 1):
            k = self.log_k[i].exp()
            for t, j in zip(rounds[i]["terms"], self.slots(i)):
                ws[j] = ws[j] * (k if t["identity"] else k.view(-1, 1, 1, 1))
            bs[i] = bs[i] * k
            for q, r in enumerate(rounds):
                for t, j in zip(r["terms"], self.slots(q)):
                    if t["src"] == i + 1:
                        ws[j] = ws[j] / (k if t["identity"] else k.view(1, -1, 1, 1))
        return ws, bs

    @torch.no_grad()
    def update_equalization(self, i, wqs, rate=EQUALIZE_RATE):
        """One step of the dynamic equalization of round i's output channels (wqs: the round's
        integer weights of this step). One weight scale serves the whole round and the channel
        that reaches the budget first sets it, so a channel whose integer weights use a share u
        of the budget has 1/u times the relative rounding error of the widest: after folding,
        the median channel of the 8-bit rounds uses 50 to 80% of it, and quantization-aware
        training lets that drift to 20 to 70%, some channels to nothing. Each step moves log k_c
        by rate * log(1 / u_c) and then recentres log k on its median, within
        +-log(EQUALIZE_LIMIT), so that every channel's integer weights come to fill the
        budget."""
        pos, neg = channel_range(wqs, self.max_inputs(i))
        usage = torch.maximum(pos, -neg)
        share = (usage / usage.max().clamp(min=1)).clamp(min=1e-3)
        log_k = self.log_k[i] - rate * share.log()
        log_k -= log_k.median()
        self.log_k[i].copy_(log_k.clamp(-math.log(EQUALIZE_LIMIT), math.log(EQUALIZE_LIMIT)))

    def quantizer(self, i, scales, weights):
        """Round i's float weights, weight scale and per-channel bias limits [lo, hi]: with them
        every partial sum of every channel lies in [-2^(b_i - 1), 2^(b_i - 1) - 1]."""
        limit = (1 << (self.round_bits[i] - 1)) - 1
        max_inputs = self.max_inputs(i)
        ws = self.round_weights(i, scales, weights)
        s_w = weight_scale(ws, max_inputs, math.floor(limit * (1 - self.bias_reserve)))
        pos, neg = channel_range([torch.round(w / s_w) for w in ws], max_inputs)
        return ws, s_w, (-(limit + 1) - neg, limit - pos)

    def forward(self, x):
        acts = [torch.clamp(torch.round(x * self.amax_in), 0, self.amax_in)]
        scales = self.act_scales()
        weights, biases = self.effective()
        for i, r in enumerate(self.rounds):
            s_main = scales[r["terms"][0]["src"]]
            ws, s_w, (bias_lo, bias_hi) = self.quantizer(i, scales, weights)
            if self.dynamic_equalize and self.training and i + 1 < len(self.rounds):
                self.update_equalization(i, [torch.round(w.detach() / s_w) for w in ws])
            acc = torch.clamp(RoundSTE.apply(biases[i] / (s_w * s_main)), bias_lo,
                              bias_hi).view(1, -1, 1, 1)
            for t, w in zip(r["terms"], ws):
                src = acts[t["src"]]
                if t["pool"]:
                    src = F.avg_pool2d(src, t["pool"]) * (t["pool"] ** 2)  # sum-pool
                wq = RoundSTE.apply(w / s_w)
                stride, pad = (1, 0) if t["identity"] else (t["stride"], t["pad"])
                acc = acc + F.conv2d(src, wq, stride=stride, padding=pad)
            if i + 1 == len(self.rounds):
                return acc.flatten(1) * (s_w * s_main)
            act = torch.clamp(RoundSTE.apply(F.relu(acc) * (s_w * s_main / scales[i + 1])), 0,
                              self.amax)
            acts.append(act)

    # ---- Export --------------------------------------------------------------------------

    @torch.no_grad()
    def integer_model(self):
        """The integer model: per round the accumulator bits, quantized terms, biases and
        requantization (the same arithmetic as forward, exported)."""
        scales = self.act_scales()
        weights, biases = self.effective()
        out = []
        for i, r in enumerate(self.rounds):
            s_main = float(scales[r["terms"][0]["src"]])
            ws, s_w, (bias_lo, bias_hi) = self.quantizer(i, scales, weights)
            s_w = float(s_w)
            bias = torch.clamp(torch.round(biases[i] / (s_w * s_main)), bias_lo,
                               bias_hi).long().numpy()
            terms = []
            for t, w in zip(r["terms"], ws):
                wq = torch.round(w / s_w).long().numpy()
                k, stride, pad = (1, 1, 0) if t["identity"] else (t["k"], t["stride"], t["pad"])
                terms.append(dict(src=t["src"], pool=t["pool"], k=k, stride=stride, pad=pad,
                                  w=wq))
            rq = None
            if i + 1 < len(self.rounds):
                mult = int(round(s_w * s_main / float(scales[i + 1]) * (1 << SHIFT)))
                rq = (mult, SHIFT)
            out.append(dict(out=r["out"], bits=self.round_bits[i], terms=terms, bias=bias,
                            requant=rq))
        return out


# ---- Independent integer evaluator (numpy) ---------------------------------------------------

def np_conv(x, w, stride, pad):
    """x: [B,C,H,W] int64, w: [O,C,k,k] -> [B,O,H',W'] int64 (exact)."""
    b, c, h, wd = x.shape
    o, _, k, _ = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    ho, wo = (h + 2 * pad - k) // stride + 1, (wd + 2 * pad - k) // stride + 1
    out = np.zeros((b, o, ho, wo), dtype=np.int64)
    for di in range(k):
        for dj in range(k):
            patch = xp[:, :, di:di + stride * ho:stride, dj:dj + stride * wo:stride]
            out += np.einsum("oc,bchw->bohw", w[:, :, di, dj], patch, optimize=True)
    return out


def np_sum_pool(x, k):
    b, c, h, w = x.shape
    return x.reshape(b, c, h // k, k, w // k, k).sum(axis=(3, 5))


def np_evaluate(model, images_q, amax):
    """Logits of a batch of quantized images [B,C,H,W], in exact int64 arithmetic."""
    acts = [images_q.astype(np.int64)]
    for r in model:
        acc = None
        for t in r["terms"]:
            src = acts[t["src"]]
            if t["pool"]:
                src = np_sum_pool(src, t["pool"])
            y = np_conv(src, t["w"], t["stride"], t["pad"])
            acc = y if acc is None else acc + y
        acc = acc + r["bias"].reshape(1, -1, 1, 1)
        if r["requant"] is None:
            return acc.reshape(len(acc), -1)
        mult, shift = r["requant"]
        acts.append(np.minimum((np.maximum(acc, 0) * mult + (1 << (shift - 1))) >> shift, amax))


# ---- File format (docs/model-format.md) ------------------------------------------------------

def write_model(path, name, bits, act_bits, input_bits, shape, model):
    buf = bytearray()
    buf += b"SFHM" + struct.pack("<HH", 1, 0)
    nb = name.encode()
    buf += struct.pack("<I", len(nb)) + nb
    buf += struct.pack("<BBBB", bits, act_bits, input_bits, 0)
    buf += struct.pack("<III", *shape)
    buf += struct.pack("<I", len(model))
    for r in model:
        buf += struct.pack("<III", r["out"], r["bits"], len(r["terms"]))
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


class FloatNet(nn.Module):
    """The same rounds in floating point, with a batch norm after every convolution but the
    last round's (which has a bias): the network that pre-training fits and `fold` turns into
    the starting point of quantization-aware training."""

    def __init__(self, rounds):
        super().__init__()
        self.rounds = rounds
        self.convs, self.bns = nn.ModuleList(), nn.ModuleList()
        for i, r in enumerate(rounds):
            last = i + 1 == len(rounds)
            for t in r["terms"]:
                if t["identity"]:
                    self.convs.append(nn.Identity())
                    self.bns.append(nn.Identity())
                    continue
                self.convs.append(nn.Conv2d(t["in_c"], r["out"], t["k"], t["stride"], t["pad"],
                                            bias=last))
                self.bns.append(nn.Identity() if last else nn.BatchNorm2d(r["out"]))

    def forward(self, x, hidden=None):
        acts, j = [x], 0
        for i, r in enumerate(self.rounds):
            acc = 0
            for t in r["terms"]:
                src = acts[t["src"]]
                if t["pool"]:
                    src = F.avg_pool2d(src, t["pool"])
                acc = acc + self.bns[j](self.convs[j](src))
                j += 1
            if i + 1 == len(self.rounds):
                return acc.flatten(1)
            acts.append(F.relu(acc))
            if hidden is not None:
                hidden.append(acts[-1].detach())


def percentile(values):
    """The 99.9th percentile of the positive values (1e-3 when there are none)."""
    values = values[values > 0]
    return values.kthvalue(max(1, int(0.999 * len(values)))).values if len(values) else \
        torch.tensor(1e-3)


@torch.no_grad()
def fold(qnet, fnet, x_calibration, equalize=None):
    """Batch norms folded into the convolutions (w s, bias + beta - mu s, s = gamma / sigma),
    optionally channels equalized (`equalize_channels`), and each activation clip set to the
    99.9th percentile of the float network's positive activations (all of them for one global
    clip, each round's for per-round clips)."""
    j = 0
    for i, r in enumerate(fnet.rounds):
        bias = torch.zeros(r["out"])
        for t in r["terms"]:
            conv, bn = fnet.convs[j], fnet.bns[j]
            if not t["identity"]:
                w = conv.weight.clone()
                if isinstance(bn, nn.BatchNorm2d):
                    sc = bn.weight / torch.sqrt(bn.running_var + bn.eps)
                    w *= sc.view(-1, 1, 1, 1)
                    bias += bn.bias - bn.running_mean * sc
                if conv.bias is not None:
                    bias += conv.bias
                qnet.weights[j].copy_(w)
            j += 1
        qnet.biases[i].copy_(bias)
    fnet.eval()
    hidden = []
    fnet(x_calibration, hidden)
    if equalize is not None:
        equalize_channels(qnet, hidden, equalize)
    hidden = [h.flatten() for h in hidden]
    if qnet.per_round_clip:
        qnet.clips.copy_(torch.stack([percentile(h) for h in hidden]))
    else:
        qnet.clips.fill_(percentile(torch.cat(hidden)))


@torch.no_grad()
def equalize_channels(qnet, hidden, alpha, limit=EQUALIZE_LIMIT):
    """Rescales each channel c of every hidden activation: its writer's weights and bias times
    k_c, its readers' input weights over k_c. An identity shortcut takes part through its
    per-channel gain (the diagonal of its 1x1 convolution), which is multiplied when it writes
    the channel and divided when it reads it; in a ResNet this chains each stage's block
    outputs. ReLU commutes with positive scales, so the float network is unchanged; what
    changes is how the channel meets the round's one weight scale and one activation clip.
    k_c = u_c^-alpha r_c^-(1-alpha), where u_c is the channel's weight usage (the larger of its
    positive and negative weight sums, times the largest inputs) and r_c its 99.9th-percentile
    activation; alpha = 1 gives every channel the whole accumulator budget, alpha = 0 the whole
    activation range. k is normalised to geometric mean 1 and kept within a factor `limit` of
    it, so that a channel that is nearly dead does not take the budget of the rest. Rounds are
    taken in order, so a round's usage already includes the rescaling of what it reads."""
    rounds = qnet.rounds
    scales = qnet.act_scales()
    for i in range(len(rounds) - 1):
        pos, neg = channel_range(qnet.round_weights(i, scales, list(qnet.weights)),
                                 qnet.max_inputs(i))
        usage = torch.maximum(pos, -neg)
        h = hidden[i].transpose(0, 1).reshape(rounds[i]["out"], -1)
        rng = torch.stack([percentile(c) for c in h])
        usage = usage.clamp(min=usage.max() * 1e-3)
        rng = rng.clamp(min=rng.max() * 1e-3)
        log_k = -alpha * usage.log() - (1 - alpha) * rng.log()
        log_k = (log_k - log_k.mean()).clamp(-math.log(limit), math.log(limit))
        k = log_k.exp()
        for t, j in zip(rounds[i]["terms"], qnet.slots(i)):
            qnet.weights[j].mul_(k if t["identity"] else k.view(-1, 1, 1, 1))
        qnet.biases[i].mul_(k)
        hidden[i] = hidden[i] * k.view(1, -1, 1, 1)
        for q, r in enumerate(rounds):
            for t, j in zip(r["terms"], qnet.slots(q)):
                if t["src"] == i + 1:
                    qnet.weights[j].div_(k if t["identity"] else k.view(1, -1, 1, 1))


def augment(xb, g):
    """Random horizontal flip and a random shift of up to 2 pixels (zero padding)."""
    flip = torch.rand(len(xb), generator=g) < 0.5
    xb = torch.where(flip.view(-1, 1, 1, 1), xb.flip(3), xb)
    padded = F.pad(xb, (2, 2, 2, 2))
    dy, dx = torch.randint(0, 5, (2,), generator=g).tolist()
    return padded[:, :, dy:dy + 32, dx:dx + 32]


def train(net, xtr, ytr, xte, yte, epochs, opt, batch, seed, label, teacher=None, distill=0.0,
          temperature=4.0, checkpoint="", epochs_before=0):
    """Trains net; with a teacher, the loss is (1 - distill) cross-entropy + distill T^2 KL of
    the teacher's and the net's softened outputs (knowledge distillation, T = temperature).
    With a checkpoint path, net's state is saved there after every epoch, with the count of
    epochs behind it (epochs_before of earlier runs included)."""
    steps = epochs * (len(xtr) // batch)
    lr = opt.param_groups[0]["lr"]
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=lr, total_steps=steps)
    g = torch.Generator().manual_seed(seed)
    acc = 0.0
    for epoch in range(epochs):
        net.train()
        perm = torch.randperm(len(xtr), generator=g)
        t0, total = time.time(), 0.0
        for i in range(len(xtr) // batch):
            idx = perm[i * batch:(i + 1) * batch]
            xb = augment(xtr[idx], g)
            out = net(xb)
            loss = F.cross_entropy(out, ytr[idx])
            if teacher is not None and distill > 0:
                with torch.no_grad():
                    soft = F.softmax(teacher(xb) / temperature, dim=1)
                kl = F.kl_div(F.log_softmax(out / temperature, dim=1), soft,
                              reduction="batchmean")
                loss = (1 - distill) * loss + distill * temperature ** 2 * kl
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            total += loss.item()
        acc = evaluate_float(net, xte, yte)
        print(f"{label} epoch {epoch + 1}: loss {total / (len(xtr) // batch):.4f}, "
              f"test accuracy {acc:.4f} ({time.time() - t0:.0f} s)", flush=True)
        if checkpoint:
            torch.save(dict(state=net.state_dict(), epoch=epochs_before + epoch + 1, accuracy=acc),
                       checkpoint)
    return acc


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("arch", choices=sorted(ARCHS))
    ap.add_argument("--bits", type=int, default=8, choices=sorted(ACT_BITS))
    ap.add_argument("--act-bits", type=int, default=0, help="activation bits (default by b)")
    ap.add_argument("--input-bits", type=int, default=0,
                    help="image bits (default: the activation bits)")
    ap.add_argument("--edge-bits", type=int, default=0,
                    help="accumulator bits of the first and last rounds (default: b)")
    ap.add_argument("--pretrain-epochs", type=int, default=0,
                    help="float epochs with batch norm before folding and QAT")
    ap.add_argument("--float-checkpoint", default="",
                    help="where the pre-trained float network is saved (with --pretrain-epochs) "
                         "or loaded from (without)")
    ap.add_argument("--epochs", type=int, default=3, help="quantization-aware epochs")
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--train-images", type=int, default=0, help="subset, for smoke tests")
    ap.add_argument("--reference-images", type=int, default=64)
    ap.add_argument("--bias-reserve", type=float, default=BIAS_RESERVE,
                    help="share of the half accumulator window kept for the bias")
    ap.add_argument("--distill", type=float, default=0.0,
                    help="weight of distillation from the float network during QAT (0: none)")
    ap.add_argument("--per-round-clip", action="store_true",
                    help="one learned activation clip per round instead of one for all")
    ap.add_argument("--equalize", type=float, default=None, metavar="ALPHA",
                    help="rescale channels at folding (0: equal activation ranges, 1: equal "
                         "weight budgets; see equalize_channels)")
    ap.add_argument("--dynamic-equalize", action="store_true",
                    help="keep every hidden channel's weights at the whole accumulator budget "
                         "through QAT (QuantNet.effective)")
    ap.add_argument("--qat-checkpoint", default="",
                    help="where the quantization-aware network is saved after every epoch")
    ap.add_argument("--resume", action="store_true",
                    help="start QAT from --qat-checkpoint instead of the folded float network")
    ap.add_argument("--out-dir", default=HERE, help="where the model, reference and card go")
    args = ap.parse_args()
    act_bits = args.act_bits or ACT_BITS[args.bits]
    input_bits = args.input_bits or act_bits
    edge_bits = args.edge_bits or args.bits
    if args.resume and not args.qat_checkpoint:
        ap.error("--resume needs --qat-checkpoint")
    if args.distill and not (args.pretrain_epochs or args.float_checkpoint):
        ap.error("--distill needs a float network (--pretrain-epochs or --float-checkpoint)")
    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    xtr, ytr = load_split("train")
    xte, yte = load_split("test")
    if args.train_images:
        xtr, ytr = xtr[:args.train_images], ytr[:args.train_images]
    net = QuantNet(ARCHS[args.arch](), args.bits, edge_bits, act_bits, input_bits,
                   args.bias_reserve, args.per_round_clip, args.dynamic_equalize)
    fnet = None
    fp32_acc = None
    if args.pretrain_epochs or args.float_checkpoint:
        fnet = FloatNet(ARCHS[args.arch]())
        if args.pretrain_epochs:
            opt = torch.optim.SGD(fnet.parameters(), lr=0.1, momentum=0.9, nesterov=True,
                                  weight_decay=5e-4)
            fp32_acc = train(fnet, xtr, ytr, xte, yte, args.pretrain_epochs, opt, args.batch,
                             args.seed, "fp32")
            if args.float_checkpoint:
                torch.save(dict(state=fnet.state_dict(), accuracy=fp32_acc), args.float_checkpoint)
        else:
            saved = torch.load(args.float_checkpoint)
            fnet.load_state_dict(saved["state"])
            fp32_acc = saved["accuracy"]
        if not args.resume:
            fold(net, fnet, xtr[:512], args.equalize)
    resumed_epochs = 0
    if args.resume:
        saved = torch.load(args.qat_checkpoint)
        resumed_epochs = saved["epoch"]
        net.load_state_dict(saved["state"])
        print(f"resumed from {args.qat_checkpoint} (epoch {saved['epoch']}, test accuracy "
              f"{saved['accuracy']:.4f})", flush=True)
    if args.epochs:
        opt = torch.optim.Adam(net.parameters(), lr=args.lr)
        acc = train(net, xtr, ytr, xte, yte, args.epochs, opt, args.batch, args.seed + 1, "qat",
                    fnet, args.distill, checkpoint=args.qat_checkpoint,
                    epochs_before=resumed_epochs)
    else:  # export the folded network as it is (e.g. only pre-training into a checkpoint)
        acc = evaluate_float(net, xte, yte)

    model = net.integer_model()
    amax, amax_in = (1 << act_bits) - 1, (1 << input_bits) - 1
    images_q = np.clip(np.round(xte.numpy() * amax_in), 0, amax_in).astype(np.int64)
    logits_all = np.concatenate([np_evaluate(model, images_q[i:i + 500], amax)
                                 for i in range(0, len(images_q), 500)])
    correct = int((logits_all.argmax(axis=1) == yte.numpy()).sum())
    int_acc = correct / len(images_q)
    print(f"integer model (numpy evaluator) test accuracy {int_acc:.4f}")
    name = f"{args.arch}-b{args.bits}"
    write_model(os.path.join(args.out_dir, name + ".sfhm"), name, args.bits, act_bits, input_bits,
                (1, 32, 32), model)
    n = args.reference_images
    write_reference(os.path.join(args.out_dir, name + ".ref"), images_q[:n], yte.numpy()[:n],
                    logits_all[:n])
    card = dict(model=name, arch=args.arch, accumulator_bits=args.bits, edge_bits=edge_bits,
                activation_bits=act_bits, input_bits=input_bits,
                pretrain_epochs=args.pretrain_epochs, epochs=args.epochs,
                resumed_after_epochs=resumed_epochs, seed=args.seed,
                bias_reserve=args.bias_reserve, distill=args.distill,
                per_round_clip=args.per_round_clip, equalize=args.equalize,
                dynamic_equalize=args.dynamic_equalize,
                fp32_accuracy=fp32_acc, fake_quant_accuracy=acc,
                integer_accuracy=int_acc, test_images=len(images_q))
    with open(os.path.join(args.out_dir, name + ".json"), "w") as f:
        json.dump(card, f, indent=2)
    print(json.dumps(card))


if __name__ == "__main__":
    main()
