"""The Python module against independent oracles: NumPy's arithmetic for CKKS, Python's own
integers for the lanes. Run by ctest (Python.Suite) with the module's folder on PYTHONPATH."""
import numpy as np
import pytest

import safhire


@pytest.fixture(scope="module")
def ckks():
    ctx = safhire.Context("n13-l3", insecure=True)
    gen = safhire.KeyGenerator(ctx)
    sk = gen.secret_key()
    return {
        "ctx": ctx,
        "sk": sk,
        "pk": gen.public_key(sk),
        "rlk": gen.relinearization_key(sk),
        "galois": gen.galois_keys(sk, [1, -3]),
        "encoder": safhire.Encoder(ctx),
        "encryptor": safhire.Encryptor(ctx),
        "evaluator": safhire.Evaluator(ctx),
    }


def slots(ctx, seed):
    rng = np.random.default_rng(seed)
    n = ctx.slots
    return rng.uniform(-1, 1, n) + 1j * rng.uniform(-1, 1, n)


def decrypt(k, ct):
    return k["encoder"].decode(safhire.decrypt(k["ctx"], ct, k["sk"]))


def test_encrypt_decrypt_round_trip(ckks):
    a = slots(ckks["ctx"], 1)
    ct = ckks["encryptor"].encrypt(ckks["encoder"].encode(a), ckks["pk"])
    assert ct.level == ckks["ctx"].max_level
    assert np.max(np.abs(decrypt(ckks, ct) - a)) < 1e-4


def test_arithmetic_matches_numpy(ckks):
    a, b = slots(ckks["ctx"], 2), slots(ckks["ctx"], 3)
    enc, ev = ckks["encoder"], ckks["evaluator"]
    x = ckks["encryptor"].encrypt(enc.encode(a), ckks["pk"])
    y = ckks["encryptor"].encrypt(enc.encode(b), ckks["sk"])
    assert np.max(np.abs(decrypt(ckks, ev.add(x, y)) - (a + b))) < 1e-4
    assert np.max(np.abs(decrypt(ckks, ev.sub(x, y)) - (a - b))) < 1e-4
    xy = ev.multiply(x, y, ckks["rlk"])
    assert xy.level == x.level - 1
    assert np.max(np.abs(decrypt(ckks, xy) - a * b)) < 1e-4
    # Slot i of a rotation by k holds slot i + k.
    assert np.max(np.abs(decrypt(ckks, ev.rotate(x, 1, ckks["galois"])) - np.roll(a, -1))) < 1e-4
    assert np.max(np.abs(decrypt(ckks, ev.rotate(x, -3, ckks["galois"])) - np.roll(a, 3))) < 1e-4


def test_errors_are_python_exceptions(ckks):
    with pytest.raises(safhire.Error, match="no CKKS set"):
        safhire.Context("no-such-set")
    with pytest.raises(safhire.Error, match="128"):
        safhire.Context("n12-boot-test")  # a test set, refused without insecure=True
    too_many = np.zeros(ckks["ctx"].slots * 2, dtype=complex)
    with pytest.raises(safhire.Error):
        ckks["encoder"].encode(too_many)
    x = ckks["encryptor"].encrypt(ckks["encoder"].encode(slots(ckks["ctx"], 4)), ckks["pk"])
    with pytest.raises(safhire.Error):
        ckks["evaluator"].rotate(x, 5, ckks["galois"])  # no key for 5


@pytest.mark.skipif(not hasattr(safhire, "Lanes"), reason="built without the lanes (no GMP)")
def test_lanes_products_are_exact_python_ints():
    lanes = safhire.Lanes("lanes-n12-256-b2", insecure=True)
    p = lanes.modulus
    assert p == 2**256 + 1
    a = [0, 1, p - 1, 2**255 + 12345] + [(7**k) % p for k in range(lanes.lanes - 4)]
    b = [p - 1, 3, p - 1, 2**200] + [(11**k + 5) % p for k in range(lanes.lanes - 4)]
    x, y = lanes.encrypt(a), lanes.encrypt(b)
    assert lanes.decrypt(x) == a
    want = a
    for _ in range(3):  # the evaluator refreshes where a product needs it
        x = lanes.multiply(x, y)
        want = [u * v % p for u, v in zip(want, b)]
    assert lanes.decrypt(x) == want
    assert lanes.decrypt(lanes.refresh(x)) == want
    assert lanes.decrypt(lanes.add(x, y)) == [(u + v) % p for u, v in zip(want, b)]


def test_bootstrapping_restores_levels():
    ctx = safhire.Context("n12-boot-test", insecure=True)
    gen = safhire.KeyGenerator(ctx)
    sk = gen.secret_key()
    boot = safhire.Bootstrapper(ctx)
    keys = boot.keys(gen, sk)
    encoder, encryptor = safhire.Encoder(ctx), safhire.Encryptor(ctx)
    a = slots(ctx, 5)
    # From a level above the bootstrap's input level, at the set's scale: it scales the input itself.
    x = encryptor.encrypt(encoder.encode(a, level=2), sk)
    y = boot.bootstrap(x, keys)
    assert y.level == boot.output_level > x.level
    got = encoder.decode(safhire.decrypt(ctx, y, sk))
    assert np.max(np.abs(got - a)) < 1e-4


@pytest.mark.skipif(not hasattr(safhire, "Lanes"), reason="built without the lanes (no GMP)")
def test_lanes_comparisons_digits_and_bits_are_exact():
    lanes = safhire.Lanes("lanes-n12-256-b2", insecure=True)
    p = lanes.modulus
    a = [0, 1, p - 1, p - 2, 5, 2**255] + [(7**k) % p for k in range(lanes.lanes - 6)]
    b = [0, 0, p - 1, p - 1, 6, 2**255] + [(11**k + 5) % p for k in range(lanes.lanes - 6)]
    x, y = lanes.encrypt_digits(a), lanes.encrypt_digits(b)
    assert x.canonical and lanes.decrypt_digits(x) == a
    assert lanes.decrypt_values(lanes.less_than(x, y)) == [int(u < v) for u, v in zip(a, b)]
    assert lanes.decrypt_values(lanes.equal(x, y)) == [int(u == v) for u, v in zip(a, b)]
    # Digit 200 and bit 256 (set only for p - 1 = 2^256).
    assert lanes.decrypt_values(lanes.digit(x, 200)) == [0 if u == p - 1 else (u >> 200) & 1 for u in a]
    assert lanes.decrypt_values(lanes.bit(x, 256)) == [(u >> 256) & 1 for u in a]
    with pytest.raises(safhire.Error, match="digit 256"):
        lanes.digit(x, 256)
