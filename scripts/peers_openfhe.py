#!/usr/bin/env python3
"""Times OpenFHE (the PyPI wheel) on the CKKS operations of bench_ckks, at the same ring degree,
number of ciphertext primes, prime sizes and dnum, on one thread (OMP_NUM_THREADS=1 is set by
scripts/bench-peers). Writes a JSON list of {"operation", "params", "ms", "precision_bits"}.

Usage: peers_openfhe.py OUT.json [log_n depth first_bits scale_bits dnum] ...
Each operation's figure is the median of repeated runs (at least 3, at least 1 s in all).
"""
import json
import math
import random
import statistics
import sys
import time

import openfhe as ofhe


def median_ms(fn, min_runs=3, min_seconds=1.0):
    times = []
    start = time.perf_counter()
    while len(times) < min_runs or time.perf_counter() - start < min_seconds:
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1e3)
        if len(times) >= 200:
            break
    return statistics.median(times)


def run_set(log_n, depth, first_bits, scale_bits, dnum):
    n = 1 << log_n
    params = ofhe.CCParamsCKKSRNS()
    params.SetMultiplicativeDepth(depth)
    params.SetScalingModSize(scale_bits)
    params.SetFirstModSize(first_bits)
    params.SetRingDim(n)
    params.SetBatchSize(n // 2)
    params.SetNumLargeDigits(dnum)
    params.SetKeySwitchTechnique(ofhe.HYBRID)
    params.SetScalingTechnique(ofhe.FIXEDMANUAL)
    params.SetSecretKeyDist(ofhe.UNIFORM_TERNARY)
    # Timing at fixed shapes: OpenFHE sizes P itself, which can push a small ring past its table.
    params.SetSecurityLevel(ofhe.HEStd_NotSet)
    cc = ofhe.GenCryptoContext(params)
    for feature in (ofhe.PKE, ofhe.KEYSWITCH, ofhe.LEVELEDSHE):
        cc.Enable(feature)
    keys = cc.KeyGen()
    cc.EvalMultKeyGen(keys.secretKey)
    steps = list(range(1, 9))
    cc.EvalRotateKeyGen(keys.secretKey, steps)
    rng = random.Random(1)
    values = [rng.uniform(-1, 1) for _ in range(n // 2)]
    values2 = [rng.uniform(-1, 1) for _ in range(n // 2)]
    pt = cc.MakeCKKSPackedPlaintext(values)
    pt2 = cc.MakeCKKSPackedPlaintext(values2)
    ct = cc.Encrypt(keys.publicKey, pt)
    ct2 = cc.Encrypt(keys.publicKey, pt2)
    label = f"N={n} L={depth} dnum={dnum}"
    rows = []

    def row(op, ms, precision=None):
        rows.append({"operation": op, "params": label, "ms": ms, "precision_bits": precision})

    rows_ms = {}
    rows_ms["encode"] = median_ms(lambda: cc.MakeCKKSPackedPlaintext(values))
    evk = cc.GetEvalMultKeyVector(keys.secretKey.GetKeyTag())[0]
    rows_ms["keyswitch"] = median_ms(lambda: cc.KeySwitch(ct, evk))
    rows_ms["mult_relin_rescale"] = median_ms(lambda: cc.Rescale(cc.EvalMult(ct, ct2)))
    rows_ms["rotate"] = median_ms(lambda: cc.EvalRotate(ct, 1))

    def hoisted():
        pre = cc.EvalFastRotationPrecompute(ct)
        for k in steps:
            cc.EvalFastRotation(ct, k, 2 * n, pre)

    rows_ms["rotate_hoisted8"] = median_ms(hoisted)
    # Decryption with decoding, of a ciphertext at level 1 (OpenFHE's Python API has no
    # separate Decode).
    low = cc.LevelReduce(ct, None, depth - 1)
    rows_ms["decrypt_decode"] = median_ms(lambda: cc.Decrypt(low, keys.secretKey))
    # Precision of one multiply-relinearize-rescale, in bits: -log2(max |error|).
    prod = cc.Decrypt(cc.Rescale(cc.EvalMult(ct, ct2)), keys.secretKey)
    prod.SetLength(n // 2)
    got = prod.GetRealPackedValue()
    err = max(abs(g - a * b) for g, a, b in zip(got, values, values2))
    for op, ms in rows_ms.items():
        row(op, ms, -math.log2(err) if op == "mult_relin_rescale" else None)
    return rows


def main():
    out = sys.argv[1]
    args = [int(x) for x in sys.argv[2:]] or [16, 24, 60, 50, 3]
    rows = []
    for i in range(0, len(args), 5):
        rows += run_set(*args[i:i + 5])
    with open(out, "w") as f:
        json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
