// Shared pieces of the CKKS tests: one context per named set (built once per process), the CPU
// primitives, and GMP reconstruction of RNS residues (the exact oracle).
#pragma once

#include <gmp.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "safhire/ckks/ckks.hpp"
#include "safhire/core/random.hpp"

namespace safhire::ckks::testing {

struct Fixture {
  CkksContext context;
  std::unique_ptr<RnsOps> ops;
  Encoder encoder;
  Evaluator evaluator;

  explicit Fixture(const CkksParams& params, bool allow_insecure = false)
      : context(params, allow_insecure),
        ops(make_cpu_rns_ops(context, 2)),
        encoder(context, *ops),
        evaluator(context, *ops) {}
};

inline Fixture& fixture(const std::string& name) {
  static std::map<std::string, std::unique_ptr<Fixture>> cache;
  auto& slot = cache[name];
  // The test sets (params.hpp: test_sets) have no security; the named ones must.
  const auto& tests = test_sets();
  const bool test_set =
      std::any_of(tests.begin(), tests.end(), [&](const CkksParams& s) { return s.name == name; });
  if (!slot) slot = std::make_unique<Fixture>(named_set(name), test_set);
  return *slot;
}

// RAII mpz_t.
struct Mpz {
  mpz_t v;
  Mpz() { mpz_init(v); }
  explicit Mpz(unsigned long x) { mpz_init_set_ui(v, x); }
  ~Mpz() { mpz_clear(v); }
  Mpz(const Mpz&) = delete;
  Mpz& operator=(const Mpz&) = delete;
};

inline void set_u64(mpz_t out, std::uint64_t x) {
  mpz_import(out, 1, 1, sizeof x, 0, 0, &x);
}

inline std::uint64_t mod_u64(const mpz_t x, std::uint64_t q) {
  Mpz qq, r;
  set_u64(qq.v, q);
  mpz_mod(r.v, x, qq.v);  // non-negative
  std::uint64_t out = 0;
  mpz_export(&out, nullptr, -1, sizeof out, 0, 0, r.v);
  return out;
}

// The product of the primes of `moduli`.
inline void product(const CkksContext& context, const std::vector<ModulusIndex>& moduli,
                    mpz_t out) {
  mpz_set_ui(out, 1);
  Mpz q;
  for (ModulusIndex m : moduli) {
    set_u64(q.v, context.prime(m));
    mpz_mul(out, out, q.v);
  }
}

// The integer in [0, prod) with residues p.limb(k)[t] (coefficient t), by GMP's CRT.
inline void reconstruct(const CkksContext& context, const RnsPoly& p, std::uint32_t t, mpz_t out) {
  mpz_set_ui(out, 0);
  Mpz modulus(1), q, r, inv, step;
  for (std::size_t k = 0; k < p.limbs(); ++k) {
    // out = out + modulus * ((r - out) * modulus^-1 mod q)  (Garner)
    set_u64(q.v, context.prime(p.moduli[k]));
    set_u64(r.v, p.limb(k)[t]);
    mpz_sub(step.v, r.v, out);
    mpz_invert(inv.v, modulus.v, q.v);
    mpz_mul(step.v, step.v, inv.v);
    mpz_mod(step.v, step.v, q.v);
    mpz_mul(step.v, step.v, modulus.v);
    mpz_add(out, out, step.v);
    mpz_mul(modulus.v, modulus.v, q.v);
  }
}

inline std::vector<std::complex<double>> random_values(std::size_t n, double bound,
                                                       std::uint64_t seed) {
  auto rng = core::SeededRandom::from_counter(seed);
  std::vector<std::complex<double>> z(n);
  auto unit = [&] { return static_cast<double>(rng.word() >> 11) * 0x1p-53 * 2 - 1; };
  for (auto& x : z)
    x = {bound * unit(), bound * unit()};
  return z;
}

inline double max_error(const std::vector<std::complex<double>>& a,
                        const std::vector<std::complex<double>>& b) {
  double e = 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    e = std::max(e, std::abs(a[i] - b[i]));
  return e;
}

inline double mean_error(const std::vector<std::complex<double>>& a,
                         const std::vector<std::complex<double>>& b) {
  double e = 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    e += std::abs(a[i] - b[i]);
  return e / static_cast<double>(a.size());
}

// Noise bounds of the scheme's operations, in slot units (values / scale).
// Six standard deviations of a fresh public-key encryption's slot error: the coefficient error
// v e + e_0 + e_1 s has variance sigma^2 (2N/3 + 1 + 2N/3) for ternary v and s, and a slot sums
// N coefficients against unit roots.
inline double fresh_bound(const Fixture& f, double scale) {
  const double n = f.context.degree(), sigma = f.context.params().sigma;
  return 6 * std::sqrt(n) * sigma * std::sqrt(4 * n / 3 + 1) / scale;
}

// Six standard deviations of the slot error that a rescale adds: rounding each of c_0, c_1 to
// the nearest integer, (r_0 + r_1 s) with r uniform in [-1/2, 1/2].
inline double rescale_bound(const Fixture& f, double scale) {
  const double n = f.context.degree();
  return 6 * std::sqrt(n) * std::sqrt((1 + 2 * n / 3) / 12) / scale;
}

// Key switching of a uniform d from s^2 to s: the error u_0 + u_1 s - d s^2 has mean square
//   sum_j N sigma^2 Q_j^2 / (12 P^2)  +  (1 + h) / 12,
// where Q_j^2 / 12 is the mean square of the centred lift of digit j (uniform on
// [-Q_j/2, Q_j/2)), and the second term is ModDown's rounding to nearest of u_0 and u_1
// (uniform on [-1/2, 1/2)), h the secret's weight.
inline double key_switch_mean_square(const Fixture& f, std::uint32_t level, double h) {
  double log_p = 0;
  for (ModulusIndex p : f.context.p_moduli())
    log_p += std::log2(static_cast<double>(f.context.prime(p)));
  const double n = f.context.degree(), sigma = f.context.params().sigma;
  double main = 0;
  for (std::uint32_t j = 0; j < f.context.digits(level); ++j) {
    double log_qj = 0;
    for (ModulusIndex m : f.context.digit_moduli(level, j))
      log_qj += std::log2(static_cast<double>(f.context.prime(m)));
    main += n * sigma * sigma / 12 * std::exp2(2 * (log_qj - log_p));
  }
  return main + (1 + h) / 12;
}

// Six standard deviations of the slot error of one key switch (h taken as 2N/3, ternary).
inline double key_switch_bound(const Fixture& f, std::uint32_t level, double scale) {
  const double n = f.context.degree();
  return 6 * std::sqrt(n) * std::sqrt(key_switch_mean_square(f, level, 2 * n / 3)) / scale;
}

}  // namespace safhire::ckks::testing
