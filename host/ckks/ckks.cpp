#include "safhire/ckks/ckks.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <string>

#include "safhire/core/error.hpp"

namespace safhire::ckks {

namespace {

// Residues of signed integers modulo each prime, as coefficient limbs.
void set_signed(RnsPoly& p, std::span<const std::int64_t> values, const CkksContext& context) {
  for (std::size_t k = 0; k < p.limbs(); ++k)
    signed_residues(values, context.prime(p.moduli[k]), p.limb(k));
}

std::vector<std::int64_t> ternary(core::RandomSource& random, std::uint32_t n) {
  std::vector<u64> words(n);
  core::sample_ternary(random, words);
  std::vector<std::int64_t> out(n);
  for (std::uint32_t i = 0; i < n; ++i)
    out[i] = static_cast<std::int64_t>(words[i]);
  return out;
}

}  // namespace

const SwitchingKey& GaloisKeys::at(std::uint64_t galois) const {
  const auto it = keys.find(galois);
  require(it != keys.end(), ErrorCode::invalid_argument,
          "no Galois key for element " + std::to_string(galois));
  return it->second;
}

std::uint64_t rotation_galois_element(const CkksContext& context, int step) {
  const std::uint64_t M = 2ULL * context.degree(), order = context.degree() / 2;
  const auto e = static_cast<std::uint64_t>(
      ((static_cast<std::int64_t>(step) % static_cast<std::int64_t>(order)) +
       static_cast<std::int64_t>(order)) %
      static_cast<std::int64_t>(order));
  return core::pow_mod<u64>(5, e, M);
}

std::uint64_t conjugation_galois_element(const CkksContext& context) {
  return 2ULL * context.degree() - 1;
}

void seeded_a(const RnsOps& ops, const core::AesCtr::Key& seed, std::size_t digit,
              std::span<const ModulusIndex> moduli, RnsPoly& out) {
  ops.uniform(core::AesCtr(seed), std::uint64_t{digit} << 32, moduli, out);
}

std::vector<const RnsPoly*> key_a(const RnsOps& ops, const SwitchingKey& key, std::size_t digits,
                                  std::span<const ModulusIndex> moduli,
                                  std::vector<RnsPoly>& storage) {
  require(digits <= key.b.size(), ErrorCode::invalid_argument,
          "switching key has fewer digits than the ciphertext needs");
  std::vector<const RnsPoly*> a(digits);
  if (key.seeded()) storage.resize(digits);
  for (std::size_t j = 0; j < digits; ++j) {
    if (key.seeded()) {
      seeded_a(ops, *key.seed, j, moduli, storage[j]);
      a[j] = &storage[j];
    } else {
      a[j] = &key.a[j];
    }
  }
  return a;
}

void make_resident(const RnsOps& ops, Ciphertext& x) {
  for (auto& c : x.c)
    ops.make_resident(c);
}

void make_resident(const RnsOps& ops, Plaintext& p) {
  ops.make_resident(p.poly);
}

void make_resident(const RnsOps& ops, SwitchingKey& key) {
  for (auto* half : {&key.b, &key.a}) {
    for (auto& p : *half)
      ops.make_resident(p);
  }
}

void make_resident(const RnsOps& ops, GaloisKeys& keys) {
  for (auto& [galois, key] : keys.keys)
    make_resident(ops, key);
}

void to_host(const RnsOps& ops, Ciphertext& x) {
  for (auto& c : x.c)
    ops.to_host(c);
}

void to_host(const RnsOps& ops, SwitchingKey& key) {
  for (auto* half : {&key.b, &key.a}) {
    for (auto& p : *half)
      ops.to_host(p);
  }
}

void to_host(const RnsOps& ops, GaloisKeys& keys) {
  for (auto& [galois, key] : keys.keys)
    to_host(ops, key);
}

// ---- keys ---------------------------------------------------------------------------------------

KeyGenerator::KeyGenerator(const CkksContext& context, const RnsOps& ops,
                           core::RandomSource& random)
    : context_(&context), ops_(&ops), random_(&random) {}

std::vector<ModulusIndex> KeyGenerator::all_moduli() const {
  return context_->qp_moduli(context_->max_level());
}

RnsPoly KeyGenerator::sample_uniform(const std::vector<ModulusIndex>& moduli) {
  // Uniform residues are uniform in either form; drawn directly as NTT values. The words come
  // from a ChaCha20 stream keyed by 32 bytes of `random` (the mask is public; the operating
  // system's generator alone would spend most of a key's time in its system calls).
  RnsPoly p(context_->degree(), moduli, true);
  core::SeededRandom stream(random_->seed());
  std::vector<u64> words(p.n);
  for (std::size_t k = 0; k < p.limbs(); ++k) {
    const u64 q = context_->prime(p.moduli[k]);
    const int shift = __builtin_clzll(q);
    const auto limb = p.limb(k);
    for (std::uint32_t t = 0; t < p.n;) {
      stream.fill_words(words);
      for (std::uint32_t i = 0; i < p.n && t < p.n; ++i) {
        const u64 x = words[i] >> shift;  // rejection sampling below q
        if (x < q) limb[t++] = x;
      }
    }
  }
  return p;
}

RnsPoly KeyGenerator::small(std::span<const std::int64_t> coeffs,
                            const std::vector<ModulusIndex>& moduli) {
  RnsPoly p(context_->degree(), moduli, false);
  set_signed(p, coeffs, *context_);
  ops_->forward(p);
  return p;
}

std::vector<std::int64_t> KeyGenerator::sample_error() {
  const std::uint32_t n = context_->degree();
  std::vector<u64> words(n);
  core::sample_gaussian(*random_, std::ldexp(context_->params().sigma, -64), words);
  std::vector<std::int64_t> out(n);
  for (std::uint32_t i = 0; i < n; ++i)
    out[i] = static_cast<std::int64_t>(words[i]);
  return out;
}

SecretKey::~SecretKey() {
  // Host words go back to the buffer pool, where the next polynomial would find them.
  core::secure_zero_words(std::span<u64>(s.data));
}

SecretKey KeyGenerator::secret_key() {
  const auto& params = context_->params();
  if (params.secret == SecretDistribution::fixed_hamming_weight)
    return secret_key(params.hamming_weight);
  return {small(ternary(*random_, context_->degree()), all_moduli())};
}

SecretKey KeyGenerator::secret_key(std::uint32_t hamming_weight) {
  const std::uint32_t n = context_->degree();
  require(hamming_weight >= 1 && hamming_weight <= n, ErrorCode::invalid_argument,
          "a secret's Hamming weight must be in [1, N], got " + std::to_string(hamming_weight));
  // H positions from a uniform permutation, each +-1 from one random bit.
  std::vector<std::int64_t> s(n, 0);
  const auto order = core::random_permutation(*random_, n);
  std::vector<std::uint8_t> bits(hamming_weight);
  random_->fill(bits);
  for (std::uint32_t i = 0; i < hamming_weight; ++i)
    s[order[i]] = (bits[i] & 1U) ? 1 : -1;
  return {small(s, all_moduli())};
}

PublicKey KeyGenerator::public_key(const SecretKey& sk) {
  const auto moduli = context_->q_moduli(context_->max_level());
  PublicKey pk{RnsPoly(context_->degree(), moduli, true), sample_uniform(moduli)};
  const RnsPoly e = small(sample_error(), moduli);
  RnsPoly as(context_->degree(), moduli, true);
  ops_->multiply(pk.a, sk.s, as);
  ops_->sub(e, as, pk.b);
  return pk;
}

SwitchingKey KeyGenerator::make_key(const RnsPoly& secret, const RnsPoly& s_prime,
                                    std::uint32_t level) {
  const std::uint32_t top = std::min(level, context_->max_level());
  const auto moduli = context_->qp_moduli(top);
  SwitchingKey key;
  if (seeded_) {
    key.seed.emplace();
    random_->fill(*key.seed);
  }
  for (std::uint32_t j = 0; j < context_->digits(top); ++j) {
    RnsPoly a;
    if (seeded_) {
      seeded_a(*ops_, *key.seed, j, moduli, a);
    } else {
      a = sample_uniform(moduli);
    }
    RnsPoly b = small(sample_error(), moduli);
    RnsPoly as(context_->degree(), moduli, true);
    ops_->multiply(a, secret, as);
    ops_->sub(b, as, b);
    // + [P]_{digit j} s' on the primes of digit j.
    std::vector<u64> factor(context_->primes().size(), 0);
    for (ModulusIndex i : context_->digit_moduli(top, j))
      factor[i] = context_->p_mod()[i];
    RnsPoly scaled(context_->degree(), moduli, true);
    ops_->multiply_scalars(s_prime, factor, scaled);
    ops_->add(b, scaled, b);
    key.b.push_back(std::move(b));
    if (!seeded_) key.a.push_back(std::move(a));
  }
  return key;
}

SwitchingKey KeyGenerator::switching_key(const SecretKey& sk, const RnsPoly& s_prime,
                                         std::uint32_t level) {
  return make_key(sk.s, s_prime, level);
}

SwitchingKey KeyGenerator::relinearization_key(const SecretKey& sk) {
  RnsPoly s2(sk.s.n, sk.s.moduli, true);
  ops_->multiply(sk.s, sk.s, s2);
  return switching_key(sk, s2);
}

SwitchingKey KeyGenerator::galois_key(const SecretKey& sk, std::uint64_t galois,
                                      std::uint32_t level) {
  // Stored as sigma^-1 of the key from sigma(s) to s (GaloisKeys): sigma^-1 of (-a s + e +
  // [P]_j sigma(s), a) is (-a' sigma^-1(s) + e' + [P]_j s, a') with a' = sigma^-1(a) uniform and
  // e' = sigma^-1(e) distributed as e (a signed permutation of its coefficients). So the key is
  // made directly for the secret sigma^-1(s), by the permutation of the inverse element
  // g^(N/2 - 1) modulo 2N (the group of units modulo 2N has exponent N/2), which lets a seeded
  // key store a' as its seed.
  const std::uint64_t two_n = 2 * std::uint64_t{context_->degree()};
  const auto inverse = context_->ntt(0).automorphism_permutation(
      core::pow_mod<u64>(galois % two_n, context_->degree() / 2 - 1, two_n));
  RnsPoly secret(sk.s.n, sk.s.moduli, true);
  ops_->permute(sk.s, inverse, secret);
  return make_key(secret, sk.s, level);
}

void KeyGenerator::add_galois_keys(GaloisKeys& into, const SecretKey& sk,
                                   std::span<const int> steps, bool conjugation,
                                   std::uint32_t level) {
  for (int step : steps) {
    const u64 g = rotation_galois_element(*context_, step);
    if (!into.keys.contains(g)) into.keys.emplace(g, galois_key(sk, g, level));
  }
  if (conjugation) {
    const u64 g = conjugation_galois_element(*context_);
    if (!into.keys.contains(g)) into.keys.emplace(g, galois_key(sk, g, level));
  }
}

GaloisKeys KeyGenerator::galois_keys(const SecretKey& sk, std::span<const int> steps,
                                     bool conjugation, std::uint32_t level) {
  GaloisKeys keys;
  add_galois_keys(keys, sk, steps, conjugation, level);
  return keys;
}

// ---- encryption ---------------------------------------------------------------------------------

Encryptor::Encryptor(const CkksContext& context, const RnsOps& ops, core::RandomSource& random)
    : context_(&context), ops_(&ops), random_(&random) {}

Ciphertext Encryptor::encrypt(const Plaintext& plain, const PublicKey& pk) {
  KeyGenerator gen(*context_, *ops_, *random_);
  const auto& moduli = plain.poly.moduli;
  const std::uint32_t n = context_->degree();
  RnsPoly v(n, moduli, false);
  set_signed(v, ternary(*random_, n), *context_);
  ops_->forward(v);
  Ciphertext ct;
  ct.scale = plain.scale;
  ct.slots = plain.slots;
  for (const RnsPoly* key : {&pk.b, &pk.a}) {
    RnsPoly e(n, moduli, false);
    set_signed(e, gen.sample_error(), *context_);
    ops_->forward(e);
    RnsPoly c(n, moduli, true);
    ops_->multiply(v, *key, c);
    ops_->add(c, e, c);
    ct.c.push_back(std::move(c));
  }
  ops_->add(ct.c[0], plain.poly, ct.c[0]);
  return ct;
}

Ciphertext Encryptor::encrypt(const Plaintext& plain, const SecretKey& sk) {
  KeyGenerator gen(*context_, *ops_, *random_);
  const auto& moduli = plain.poly.moduli;
  const std::uint32_t n = context_->degree();
  Ciphertext ct;
  ct.scale = plain.scale;
  ct.slots = plain.slots;
  RnsPoly a = gen.sample_uniform(moduli);
  RnsPoly e(n, moduli, false);
  set_signed(e, gen.sample_error(), *context_);
  ops_->forward(e);
  RnsPoly c0(n, moduli, true);
  ops_->multiply(a, sk.s, c0);
  ops_->sub(e, c0, c0);
  ops_->add(c0, plain.poly, c0);
  ct.c.push_back(std::move(c0));
  ct.c.push_back(std::move(a));
  return ct;
}

Plaintext decrypt(const CkksContext& context, const RnsOps& ops, const Ciphertext& ct,
                  const SecretKey& sk) {
  require(ct.size() >= 2 && ct.size() <= 3, ErrorCode::invalid_argument,
          "decryption takes a ciphertext of 2 or 3 components");
  const auto& moduli = ct.c[0].moduli;
  Plaintext plain{ct.c[0], ct.scale, ct.slots};
  ops.multiply_accumulate(ct.c[1], sk.s, plain.poly);
  if (ct.size() == 3) {
    RnsPoly s2(context.degree(), moduli, true);
    ops.multiply(sk.s, sk.s, s2);
    ops.multiply_accumulate(ct.c[2], s2, plain.poly);
  }
  ops.to_host(plain.poly);  // for decoding, whatever the ciphertext's residence
  return plain;
}

}  // namespace safhire::ckks
