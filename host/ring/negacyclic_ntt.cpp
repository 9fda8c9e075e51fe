#include "safhire/ring/negacyclic_ntt.hpp"

#include <bit>
#include <string>

#include "safhire/core/error.hpp"
#include "safhire/core/modarith.hpp"
#include "safhire/core/primes.hpp"
#include "simd/negacyclic_kernels.hpp"

namespace safhire::ring {

using core::u64;

namespace {

std::uint32_t bit_reverse(std::uint32_t x, std::uint32_t bits) {
  std::uint32_t r = 0;
  for (std::uint32_t i = 0; i < bits; ++i, x >>= 1)
    r = (r << 1) | (x & 1U);
  return r;
}

}  // namespace

NegacyclicNtt NegacyclicNtt::for_prime(const RingParams& ring, u64 q, SimdIsa isa) {
  require(ring.power_of_two(), ErrorCode::invalid_parameters,
          "the negacyclic NTT needs a power-of-two ring, got " + ring.name());
  return NegacyclicNtt(ring, q, core::root_of_unity(q, ring.M()), isa);
}

NegacyclicNtt::NegacyclicNtt(const RingParams& ring, u64 q, u64 psi, SimdIsa isa)
    : ring_(ring),
      N_(ring.N()),
      log_n_(static_cast<std::uint32_t>(std::countr_zero(ring.N()))),
      q_(q),
      psi_(psi),
      isa_(isa) {
  require(ring.power_of_two(), ErrorCode::invalid_parameters,
          "the negacyclic NTT needs a power-of-two ring, got " + ring.name());
  require(q > 2 && q < core::kMaxNttModulus && core::is_prime(q) && (q - 1) % ring.M() == 0,
          ErrorCode::invalid_parameters,
          "negacyclic NTT modulus must be a prime q = 1 mod " + std::to_string(ring.M()) +
              " below 2^62, got " + std::to_string(q));
  require(psi < q && core::has_order(psi, ring.M(), q), ErrorCode::invalid_parameters,
          "psi = " + std::to_string(psi) + " is not a primitive " + std::to_string(ring.M()) +
              "-th root of unity mod " + std::to_string(q));
  require(simd_available(isa), ErrorCode::unsupported,
          "instruction set " + std::string(to_string(isa)) + " is not available here");
  Tables& tb = tables_;
  tb.forward.resize(N_);
  tb.inverse.resize(N_);
  const u64 psi_inv = core::inv_mod(psi, q);
  u64 power = 1, inv_power = 1;
  for (std::uint32_t i = 0; i < N_; ++i) {
    const std::uint32_t r = bit_reverse(i, log_n_);
    tb.forward[r] = power;
    tb.inverse[r] = inv_power;
    power = core::mul_mod(power, psi, q);
    inv_power = core::mul_mod(inv_power, psi_inv, q);
  }
  tb.forward_quotient.resize(N_);
  tb.inverse_quotient.resize(N_);
  for (std::uint32_t i = 0; i < N_; ++i) {
    tb.forward_quotient[i] = core::shoup_quotient(tb.forward[i], q);
    tb.inverse_quotient[i] = core::shoup_quotient(tb.inverse[i], q);
  }
  tb.n_inv = core::inv_mod<u64>(N_ % q, q);
  tb.n_inv_quotient = core::shoup_quotient(tb.n_inv, q);
  tb.last_inverse = core::mul_mod(tb.inverse[1], tb.n_inv, q);
  tb.last_inverse_quotient = core::shoup_quotient(tb.last_inverse, q);
  if (q < (u64{1} << 50)) {
    auto q52 = [q](u64 w) { return static_cast<u64>((static_cast<core::u128>(w) << 52) / q); };
    tb.forward_quotient52.resize(N_);
    tb.inverse_quotient52.resize(N_);
    for (std::uint32_t i = 0; i < N_; ++i) {
      tb.forward_quotient52[i] = q52(tb.forward[i]);
      tb.inverse_quotient52[i] = q52(tb.inverse[i]);
    }
    tb.n_inv_quotient52 = q52(tb.n_inv);
    tb.last_inverse_quotient52 = q52(tb.last_inverse);
  }
  kernels_ = &simd::negacyclic_kernels(isa_, q_);
}

void NegacyclicNtt::check(std::span<const u64> polys, const char* what) const {
  require(polys.size() % N_ == 0, ErrorCode::size_mismatch,
          std::string(what) + ": " + std::to_string(polys.size()) +
              " words is not a whole number of polynomials of degree " + std::to_string(N_));
}

void NegacyclicNtt::forward(std::span<u64> polys) const {
  forward_lazy_input(polys);
}

void NegacyclicNtt::forward_lazy_input(std::span<u64> polys) const {
  check(polys, "negacyclic forward NTT");
  const auto& kernels = *static_cast<const simd::NegacyclicKernels*>(kernels_);
  for (std::size_t off = 0; off < polys.size(); off += N_) {
    kernels.forward(polys.data() + off, N_, log_n_, q_, tables_);
  }
}

void NegacyclicNtt::inverse(std::span<u64> polys) const {
  check(polys, "negacyclic inverse NTT");
  const auto& kernels = *static_cast<const simd::NegacyclicKernels*>(kernels_);
  for (std::size_t off = 0; off < polys.size(); off += N_) {
    kernels.inverse(polys.data() + off, N_, log_n_, q_, tables_);
  }
}

std::uint32_t NegacyclicNtt::slot_exponent(std::uint32_t k) const {
  require(k < N_, ErrorCode::invalid_argument,
          "slot " + std::to_string(k) + " out of range for N = " + std::to_string(N_));
  return 2 * bit_reverse(k, log_n_) + 1;
}

std::uint32_t NegacyclicNtt::slot_of_exponent(u64 e) const {
  require(e % 2 == 1, ErrorCode::invalid_argument,
          "exponent " + std::to_string(e) + " is even: only odd exponents are slots");
  const auto reduced = static_cast<std::uint32_t>(e % ring_.M());
  return bit_reverse((reduced - 1) / 2, log_n_);
}

std::vector<std::uint32_t> NegacyclicNtt::automorphism_permutation(u64 k) const {
  require(k % 2 == 1, ErrorCode::invalid_argument,
          "Galois element " + std::to_string(k) + " must be odd in a power-of-two ring");
  const u64 M = ring_.M();
  const u64 km = k % M;
  std::vector<std::uint32_t> perm(N_);
  for (std::uint32_t s = 0; s < N_; ++s) {
    perm[s] = slot_of_exponent(km * slot_exponent(s) % M);
  }
  return perm;
}

}  // namespace safhire::ring
