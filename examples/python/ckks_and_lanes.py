#!/usr/bin/env python3
"""Safhire from Python: CKKS on NumPy slot vectors, then exact 4096-bit integers in lanes.

    PYTHONPATH=build/python python3 examples/python/ckks_and_lanes.py [--test]

--test: the small insecure test rings (seconds), as tests/python runs it."""
import sys

import numpy as np

import safhire

test = "--test" in sys.argv
ctx = safhire.Context("n13-l3" if test else "n16-l24", insecure=test)
gen = safhire.KeyGenerator(ctx)
sk = gen.secret_key()
pk, rlk = gen.public_key(sk), gen.relinearization_key(sk)
encoder, encryptor, evaluator = safhire.Encoder(ctx), safhire.Encryptor(ctx), safhire.Evaluator(ctx)

a = np.linspace(-1, 1, ctx.slots) + 0.5j
x = encryptor.encrypt(encoder.encode(a), pk)
y = evaluator.multiply(x, x, rlk)  # x^2, relinearized and rescaled
got = encoder.decode(safhire.decrypt(ctx, y, sk))
print(f"CKKS: x^2 on {ctx.slots} slots, largest error {np.max(np.abs(got - a * a)):.1e}")

lanes = safhire.Lanes("lanes-n12-256-b2" if test else "lanes-n16-4096-b2", insecure=test)
p = lanes.modulus
u = [(3**k + 1) % p for k in range(lanes.lanes)]
v = [(5**k + 2) % p for k in range(lanes.lanes)]
w = lanes.decrypt(lanes.multiply(lanes.encrypt(u), lanes.encrypt(v)))
wrong = sum(1 for i in range(lanes.lanes) if w[i] != u[i] * v[i] % p)
print(f"lanes: {lanes.lanes} products modulo 2^{p.bit_length() - 1} + 1, {wrong} wrong")
sys.exit(1 if wrong else 0)
