#!/usr/bin/env python3
"""Times OpenFHE's EvalBootstrap (the PyPI wheel) for full slots at N = 2^16 on one thread
(OMP_NUM_THREADS=1 is set by scripts/bench-peers), with its precision, levels left and the
process's peak memory. Writes one JSON object.

Usage: peers_openfhe_bootstrap.py OUT.json [log_n levels_left runs]
The shape follows OpenFHE's own bootstrapping example: FLEXIBLEAUTO, a 60-bit first prime and
59-bit scaling primes, level budget [4, 3] (CoeffToSlot in 4 levels, SlotToCoeff in 3, as
Safhire's n16-boot-h192), uniform ternary secret, levels_left levels after the bootstrap. The
security check is off (HEStd_NotSet), as for the other peer timings; the time is the median
of `runs` bootstraps.
"""
import json
import math
import random
import resource
import statistics
import sys
import time

import openfhe as ofhe


def main():
    out = sys.argv[1]
    log_n = int(sys.argv[2]) if len(sys.argv) > 2 else 16
    levels_left = int(sys.argv[3]) if len(sys.argv) > 3 else 9
    runs = int(sys.argv[4]) if len(sys.argv) > 4 else 3
    n = 1 << log_n
    budget = [4, 3]
    secret = ofhe.UNIFORM_TERNARY
    params = ofhe.CCParamsCKKSRNS()
    params.SetSecretKeyDist(secret)
    params.SetSecurityLevel(ofhe.HEStd_NotSet)
    params.SetRingDim(n)
    params.SetScalingTechnique(ofhe.FLEXIBLEAUTO)
    params.SetScalingModSize(59)
    params.SetFirstModSize(60)
    depth = levels_left + ofhe.CryptoContext.GetBootstrapDepth(budget, secret)
    params.SetMultiplicativeDepth(depth)
    cc = ofhe.GenCryptoContext(params)
    for feature in (ofhe.PKE, ofhe.KEYSWITCH, ofhe.LEVELEDSHE, ofhe.ADVANCEDSHE, ofhe.FHE):
        cc.Enable(feature)
    slots = n // 2
    t = time.perf_counter()
    cc.EvalBootstrapSetup(budget)
    keys = cc.KeyGen()
    cc.EvalMultKeyGen(keys.secretKey)
    cc.EvalBootstrapKeyGen(keys.secretKey, slots)
    keygen_s = time.perf_counter() - t
    rng = random.Random(1)
    values = [rng.uniform(-1, 1) for _ in range(slots)]
    pt = cc.MakeCKKSPackedPlaintext(values, 1, depth - 1)
    pt.SetLength(slots)
    ct = cc.Encrypt(keys.publicKey, pt)
    times = []
    out_ct = None
    for _ in range(runs):
        t = time.perf_counter()
        out_ct = cc.EvalBootstrap(ct)
        times.append((time.perf_counter() - t) * 1e3)
    result = cc.Decrypt(out_ct, keys.secretKey)
    result.SetLength(slots)
    got = result.GetRealPackedValue()
    errors = [abs(g - v) for g, v in zip(got, values)]
    row = {
        "operation": "bootstrap",
        "params": f"N={n} slots={slots} budget={budget} levels_left={levels_left}",
        "ms": statistics.median(times),
        "mean_precision_bits": -math.log2(sum(errors) / len(errors)),
        "min_precision_bits": -math.log2(max(errors)),
        "levels_left": depth - out_ct.GetLevel(),
        "keygen_s": keygen_s,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }
    with open(out, "w") as f:
        json.dump(row, f, indent=1)
    print(json.dumps(row))


if __name__ == "__main__":
    main()
