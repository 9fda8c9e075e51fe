#include "safhire/ckks/encoder.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <numbers>
#include <string>

#include "safhire/core/error.hpp"

namespace safhire::ckks {

namespace {

template <class F>
struct FftTables {
  std::uint32_t M = 0;
  std::vector<std::uint32_t> rot_group;  // 5^j mod M, j < N/2
  std::vector<std::complex<F>> ksi;      // exp(2 pi i k / M), k <= M

  explicit FftTables(std::uint32_t n_degree) : M(2 * n_degree) {
    rot_group.resize(n_degree / 2);
    std::uint32_t g = 1;
    for (auto& r : rot_group) {
      r = g;
      g = static_cast<std::uint32_t>(std::uint64_t{g} * 5 % M);
    }
    ksi.resize(M + 1);
    for (std::uint32_t k = 0; k <= M; ++k) {
      const long double angle = 2 * std::numbers::pi_v<long double> * k / M;
      ksi[k] = {static_cast<F>(std::cos(angle)), static_cast<F>(std::sin(angle))};
    }
  }
};

template <class F>
void bit_reverse(std::vector<std::complex<F>>& v) {
  const std::size_t n = v.size();
  for (std::size_t i = 1, j = 0; i < n; ++i) {
    std::size_t bit = n >> 1;
    for (; j & bit; bit >>= 1)
      j ^= bit;
    j ^= bit;
    if (i < j) std::swap(v[i], v[j]);
  }
}

template <class F>
void fft_special(std::vector<std::complex<F>>& v, const FftTables<F>& tb) {
  const std::size_t n = v.size();
  bit_reverse(v);
  for (std::size_t len = 2; len <= n; len <<= 1) {
    const std::size_t lenh = len >> 1, lenq = len << 2, step = tb.M / lenq;
    for (std::size_t i = 0; i < n; i += len) {
      for (std::size_t j = 0; j < lenh; ++j) {
        const std::size_t idx = (tb.rot_group[j] & (lenq - 1)) * step;
        const auto u = v[i + j];
        const auto w = v[i + j + lenh] * tb.ksi[idx];
        v[i + j] = u + w;
        v[i + j + lenh] = u - w;
      }
    }
  }
}

template <class F>
void fft_special_inverse(std::vector<std::complex<F>>& v, const FftTables<F>& tb) {
  const std::size_t n = v.size();
  for (std::size_t len = n; len >= 2; len >>= 1) {
    const std::size_t lenh = len >> 1, lenq = len << 2, step = tb.M / lenq;
    for (std::size_t i = 0; i < n; i += len) {
      for (std::size_t j = 0; j < lenh; ++j) {
        const std::size_t idx = (lenq - (tb.rot_group[j] & (lenq - 1))) * step;
        const auto u = v[i + j] + v[i + j + lenh];
        const auto w = (v[i + j] - v[i + j + lenh]) * tb.ksi[idx];
        v[i + j] = u;
        v[i + j + lenh] = w;
      }
    }
  }
  bit_reverse(v);
  const F inv = F(1) / static_cast<F>(n);
  for (auto& x : v)
    x *= inv;
}

const FftTables<double>& tables_double(std::uint32_t n_degree) {
  thread_local std::vector<std::unique_ptr<FftTables<double>>> cache(18);
  auto& slot = cache[std::countr_zero(n_degree)];
  if (!slot) slot = std::make_unique<FftTables<double>>(n_degree);
  return *slot;
}

const FftTables<long double>& tables_long(std::uint32_t n_degree) {
  thread_local std::vector<std::unique_ptr<FftTables<long double>>> cache(18);
  auto& slot = cache[std::countr_zero(n_degree)];
  if (!slot) slot = std::make_unique<FftTables<long double>>(n_degree);
  return *slot;
}

std::uint32_t check_slots(std::uint32_t slots, std::size_t values, std::uint32_t n_degree) {
  if (slots == 0) slots = n_degree / 2;
  require(std::has_single_bit(slots) && slots <= n_degree / 2, ErrorCode::invalid_argument,
          "slot count must be a power of two up to N/2 = " + std::to_string(n_degree / 2) +
              ", got " + std::to_string(slots));
  require(values <= slots, ErrorCode::invalid_argument,
          std::to_string(values) + " values do not fit in " + std::to_string(slots) + " slots");
  return slots;
}

// x mod q for an integer-valued long double x (|x| < 2^(64 + 16383)): exact, from its binary
// expansion x = mantissa * 2^exponent.
u64 reduce_integer(long double x, u64 q) {
  const bool negative = x < 0;
  const long double a = negative ? -x : x;
  u64 r;
  if (a < 18446744073709551616.0L) {
    r = static_cast<u64>(a) % q;
  } else {
    int exponent = 0;
    const long double frac = std::frexp(a, &exponent);  // a = frac 2^exponent, frac in [0.5, 1)
    const auto mantissa = static_cast<u64>(std::ldexp(frac, 64));  // exact: 64-bit mantissa
    r = mantissa % q;
    for (int e = 64; e < exponent; ++e)
      r = core::add_mod(r, r, q);
  }
  return negative ? core::neg_mod(r, q) : r;
}

}  // namespace

Encoder::Encoder(const CkksContext& context, const RnsOps& ops) : context_(&context), ops_(&ops) {}

void Encoder::special_fft(std::vector<std::complex<long double>>& values, std::uint32_t n_degree) {
  require(std::has_single_bit(values.size()) && values.size() <= n_degree / 2,
          ErrorCode::invalid_argument, "special FFT size must be a power of two up to N/2");
  fft_special(values, tables_long(n_degree));
}

void Encoder::special_fft_inverse(std::vector<std::complex<long double>>& values,
                                  std::uint32_t n_degree) {
  require(std::has_single_bit(values.size()) && values.size() <= n_degree / 2,
          ErrorCode::invalid_argument, "special FFT size must be a power of two up to N/2");
  fft_special_inverse(values, tables_long(n_degree));
}

void Encoder::to_rns(std::span<const long double> scaled, std::uint32_t level, bool extended,
                     RnsPoly& out) const {
  const std::uint32_t n = context_->degree();
  auto moduli = context_->q_moduli(level);
  // |x| < Q_l / 2, checked against a slightly smaller power of two.
  double log_q = 0;
  for (ModulusIndex m : moduli)
    log_q += std::log2(static_cast<double>(context_->prime(m)));
  if (extended) {
    for (ModulusIndex p : context_->p_moduli())
      moduli.push_back(p);
  }
  // Every word is overwritten below: the storage is taken without clearing it.
  out = RnsPoly();
  out.n = n;
  out.data.resize(moduli.size() * std::size_t{n});
  out.moduli = std::move(moduli);
  const long double bound = std::ldexp(1.0L, static_cast<int>(std::floor(log_q)) - 1);
  // Integers below 2^63 as signed words, reduced a limb at a time by one kernel; the rest
  // (scales beyond 2^63) through their binary expansion (reduce_integer).
  std::vector<std::int64_t> words(n);
  std::vector<std::uint32_t> large;
  for (std::uint32_t i = 0; i < n; ++i) {
    const long double x = scaled[i];
    require(std::isfinite(x) && std::fabs(x) < bound, ErrorCode::invalid_argument,
            "encoded coefficient is not finite or exceeds the modulus of level " +
                std::to_string(level));
    if (std::fabs(x) < 9.2e18L) {
      words[i] = static_cast<std::int64_t>(x);
    } else {
      words[i] = 0;
      large.push_back(i);
    }
  }
  for (std::size_t k = 0; k < out.limbs(); ++k) {
    const u64 q = context_->prime(out.moduli[k]);
    const auto limb = out.limb(k);
    signed_residues(words, q, limb);
    for (std::uint32_t i : large)
      limb[i] = reduce_integer(scaled[i], q);
  }
  ops_->forward(out);
}

Plaintext Encoder::encode(std::span<const std::complex<double>> values, double scale,
                          std::uint32_t level, std::uint32_t slots) const {
  Plaintext plain;
  to_rns(scaled_coefficients(values, scale, slots), level, false, plain.poly);
  plain.scale = scale;
  plain.slots = slots;
  return plain;
}

RnsPoly Encoder::encode_extended(std::span<const std::complex<double>> values, double scale,
                                 std::uint32_t level, std::uint32_t slots) const {
  RnsPoly out;
  to_rns(scaled_coefficients(values, scale, slots), level, true, out);
  return out;
}

std::optional<std::vector<std::int64_t>> Encoder::integer_coefficients(
    std::span<const std::complex<double>> values, double scale, std::uint32_t slots) const {
  const std::vector<long double> scaled = scaled_coefficients(values, scale, slots);
  std::vector<std::int64_t> out(scaled.size());
  constexpr long double kLimit = 9223372036854775808.0L;  // 2^63
  for (std::size_t i = 0; i < scaled.size(); ++i) {
    if (!(std::fabs(scaled[i]) < kLimit)) return std::nullopt;
    out[i] = static_cast<std::int64_t>(scaled[i]);
  }
  return out;
}

std::vector<long double> Encoder::scaled_coefficients(std::span<const std::complex<double>> values,
                                                      double scale, std::uint32_t& slots) const {
  const std::uint32_t n_degree = context_->degree();
  slots = check_slots(slots, values.size(), n_degree);
  require(scale > 0 && std::isfinite(scale), ErrorCode::invalid_argument,
          "scale must be positive and finite");
  double max_abs = 0;
  for (const auto& z : values) {
    require(std::isfinite(z.real()) && std::isfinite(z.imag()), ErrorCode::invalid_argument,
            "values to encode must be finite");
    max_abs = std::max({max_abs, std::fabs(z.real()), std::fabs(z.imag())});
  }
  const std::uint32_t gap = n_degree / (2 * slots);
  std::vector<long double> scaled(n_degree, 0.0L);
  const bool wide = std::log2(std::max(max_abs, 1e-300) * scale) > 50;
  auto place = [&](std::size_t i, long double re, long double im) {
    scaled[i * gap] = std::round(re * scale);
    scaled[(i + slots) * gap] = std::round(im * scale);
  };
  if (wide) {
    std::vector<std::complex<long double>> u(slots);
    for (std::size_t i = 0; i < values.size(); ++i)
      u[i] = {values[i].real(), values[i].imag()};
    fft_special_inverse(u, tables_long(n_degree));
    for (std::size_t i = 0; i < slots; ++i)
      place(i, u[i].real(), u[i].imag());
  } else {
    std::vector<std::complex<double>> u(slots);
    std::copy(values.begin(), values.end(), u.begin());
    fft_special_inverse(u, tables_double(n_degree));
    for (std::size_t i = 0; i < slots; ++i)
      place(i, u[i].real(), u[i].imag());
  }
  return scaled;
}

Plaintext Encoder::encode(std::span<const double> values, double scale, std::uint32_t level,
                          std::uint32_t slots) const {
  std::vector<std::complex<double>> z(values.begin(), values.end());
  return encode(z, scale, level, slots);
}

Plaintext Encoder::encode_coefficients(std::span<const double> coeffs, double scale,
                                       std::uint32_t level) const {
  const std::uint32_t n_degree = context_->degree();
  require(coeffs.size() <= n_degree, ErrorCode::invalid_argument,
          "more coefficients than the ring degree");
  require(scale > 0 && std::isfinite(scale), ErrorCode::invalid_argument,
          "scale must be positive and finite");
  std::vector<long double> scaled(n_degree, 0.0L);
  for (std::size_t i = 0; i < coeffs.size(); ++i)
    scaled[i] = std::round(static_cast<long double>(coeffs[i]) * scale);
  Plaintext plain;
  to_rns(scaled, level, false, plain.poly);
  plain.scale = scale;
  plain.slots = n_degree / 2;
  return plain;
}

std::vector<long double> Encoder::decode_coefficients(const Plaintext& plain) const {
  require(plain.poly.ntt && plain.poly.n == context_->degree() && plain.poly.limbs() >= 1,
          ErrorCode::size_mismatch, "plaintext is not an NTT-form polynomial of this context");
  RnsPoly coeffs = plain.poly;
  ops_->inverse(coeffs);
  const std::size_t limbs = coeffs.limbs(), n = coeffs.n;
  // Multi-word CRT: x = sum_i y_i (Q/q_i) - v Q, y_i = x_i (Q/q_i)^-1 mod q_i.
  const std::size_t words = limbs + 1;
  std::vector<u64> Q(words, 0), qhat(limbs * words, 0), qhat_inv(limbs);
  std::vector<u64> primes(limbs);
  for (std::size_t i = 0; i < limbs; ++i)
    primes[i] = context_->prime(coeffs.moduli[i]);
  auto mul_word = [&](std::span<u64> a, u64 w) {  // a *= w
    u64 carry = 0;
    for (auto& x : a) {
      const core::u128 t = static_cast<core::u128>(x) * w + carry;
      x = static_cast<u64>(t);
      carry = static_cast<u64>(t >> 64);
    }
  };
  Q[0] = 1;
  for (u64 q : primes)
    mul_word(Q, q);
  for (std::size_t i = 0; i < limbs; ++i) {
    std::span<u64> h(qhat.data() + i * words, words);
    h[0] = 1;
    u64 h_mod = 1;
    for (std::size_t j = 0; j < limbs; ++j) {
      if (j == i) continue;
      mul_word(h, primes[j]);
      h_mod = core::mul_mod(h_mod, primes[j] % primes[i], primes[i]);
    }
    qhat_inv[i] = core::inv_mod(h_mod, primes[i]);
  }
  auto to_long_double = [&](std::span<const u64> a) {
    long double v = 0;
    for (std::size_t w = words; w-- > 0;)
      v = v * 18446744073709551616.0L + static_cast<long double>(a[w]);
    return v;
  };
  std::vector<long double> out(n);
  std::vector<u64> acc(words), diff(words);
  for (std::size_t t = 0; t < n; ++t) {
    std::fill(acc.begin(), acc.end(), 0);
    for (std::size_t i = 0; i < limbs; ++i) {
      const u64 y = core::mul_mod(coeffs.limb(i)[t], qhat_inv[i], primes[i]);
      u64 carry = 0;
      for (std::size_t w = 0; w < words; ++w) {
        const core::u128 s = static_cast<core::u128>(qhat[i * words + w]) * y + acc[w] + carry;
        acc[w] = static_cast<u64>(s);
        carry = static_cast<u64>(s >> 64);
      }
    }
    // acc < limbs Q: subtract Q until below it (at most limbs - 1 times).
    auto ge_q = [&] {
      for (std::size_t w = words; w-- > 0;) {
        if (acc[w] != Q[w]) return acc[w] > Q[w];
      }
      return true;
    };
    auto sub_from = [&](std::span<u64> a, std::span<const u64> b) {
      u64 borrow = 0;
      for (std::size_t w = 0; w < words; ++w) {
        const u64 d = a[w] - b[w] - borrow;
        borrow = (a[w] < b[w] || (a[w] == b[w] && borrow)) ? 1 : 0;
        a[w] = d;
      }
    };
    while (ge_q())
      sub_from(acc, Q);
    // Centre: acc > Q - acc means the value is acc - Q < 0.
    std::copy(Q.begin(), Q.end(), diff.begin());
    sub_from(diff, acc);
    bool negative = false;
    for (std::size_t w = words; w-- > 0;) {
      if (acc[w] != diff[w]) {
        negative = acc[w] > diff[w];
        break;
      }
    }
    const long double value = negative ? -to_long_double(diff) : to_long_double(acc);
    out[t] = value / plain.scale;
  }
  return out;
}

std::vector<std::complex<double>> Encoder::decode(const Plaintext& plain) const {
  const std::uint32_t n_degree = context_->degree();
  const std::uint32_t slots = check_slots(plain.slots, 0, n_degree);
  const auto coeffs = decode_coefficients(plain);
  const std::uint32_t gap = n_degree / (2 * slots);
  std::vector<std::complex<long double>> u(slots);
  for (std::uint32_t i = 0; i < slots; ++i)
    u[i] = {coeffs[i * gap], coeffs[(i + slots) * gap]};
  fft_special(u, tables_long(n_degree));
  std::vector<std::complex<double>> z(slots);
  for (std::uint32_t i = 0; i < slots; ++i)
    z[i] = {static_cast<double>(u[i].real()), static_cast<double>(u[i].imag())};
  return z;
}

}  // namespace safhire::ckks
