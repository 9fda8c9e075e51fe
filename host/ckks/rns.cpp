#include "safhire/ckks/rns.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <string>
#include <utility>

#include "safhire/core/error.hpp"
#include "safhire/core/primes.hpp"
#include "simd/rns_kernels.hpp"

namespace safhire::ckks {

using core::mul_mod;

CkksContext::CkksContext(CkksParams params, bool allow_insecure)
    : params_((params.validate(allow_insecure), std::move(params))),
      ring_(2, params_.log_n + 1),
      p_bits_count_(params_.p_bits.size()) {
  // The largest primes of each size, handed out in order (q's first, then p's).
  std::map<int, int> count;
  for (int b : params_.q_bits)
    ++count[b];
  for (int b : params_.p_bits)
    ++count[b];
  std::map<int, std::vector<u64>> pool;
  for (auto [bits, c] : count)
    pool[bits] = core::primes_below(bits, ring_.M(), c);
  std::map<int, std::size_t> used;
  auto take = [&](int bits) { primes_.push_back(pool[bits][used[bits]++]); };
  for (int b : params_.q_bits)
    take(b);
  for (int b : params_.p_bits)
    take(b);
  for (u64 q : primes_)
    plans_.push_back(
        std::make_unique<ring::NegacyclicNtt>(ring::NegacyclicNtt::for_prime(ring_, q)));
  p_mod_.assign(primes_.size(), 0);
  for (ModulusIndex i = 0; i <= max_level(); ++i) {
    u64 v = 1;
    for (ModulusIndex p : p_moduli())
      v = core::mul_mod(v, primes_[p] % primes_[i], primes_[i]);
    p_mod_[i] = v;
  }
}

std::vector<ModulusIndex> CkksContext::q_moduli(std::uint32_t level) const {
  require(level <= max_level(), ErrorCode::invalid_argument,
          "level " + std::to_string(level) + " above the top level " + std::to_string(max_level()));
  std::vector<ModulusIndex> m(level + 1);
  for (std::uint32_t i = 0; i <= level; ++i)
    m[i] = i;
  return m;
}

std::vector<ModulusIndex> CkksContext::p_moduli() const {
  std::vector<ModulusIndex> m(p_bits_count_);
  for (std::size_t k = 0; k < m.size(); ++k)
    m[k] = static_cast<ModulusIndex>(max_level() + 1 + k);
  return m;
}

std::vector<ModulusIndex> CkksContext::qp_moduli(std::uint32_t level) const {
  auto m = q_moduli(level);
  for (ModulusIndex p : p_moduli())
    m.push_back(p);
  return m;
}

std::uint32_t CkksContext::digits(std::uint32_t level) const {
  const std::uint32_t a = params_.alpha();
  return (level + 1 + a - 1) / a;
}

std::vector<ModulusIndex> CkksContext::digit_moduli(std::uint32_t level,
                                                    std::uint32_t digit) const {
  require(level <= max_level() && digit < digits(level), ErrorCode::invalid_argument,
          "digit " + std::to_string(digit) + " does not exist at level " + std::to_string(level));
  const std::uint32_t a = params_.alpha();
  std::vector<ModulusIndex> m;
  for (std::uint32_t i = digit * a; i < std::min((digit + 1) * a, level + 1); ++i)
    m.push_back(i);
  return m;
}

std::size_t RnsPoly::position(ModulusIndex modulus) const {
  for (std::size_t k = 0; k < moduli.size(); ++k) {
    if (moduli[k] == modulus) return k;
  }
  throw Error(ErrorCode::size_mismatch,
              "RNS polynomial has no limb for modulus #" + std::to_string(modulus));
}

bool RnsPoly::has(ModulusIndex modulus) const {
  for (ModulusIndex m : moduli) {
    if (m == modulus) return true;
  }
  return false;
}

void RnsPoly::truncate(std::size_t count) {
  require(
      count <= moduli.size(), ErrorCode::invalid_argument,
      "cannot keep " + std::to_string(count) + " of " + std::to_string(moduli.size()) + " limbs");
  moduli.resize(count);
  if (on_device()) {
    device.resize(count * n);
  } else {
    data.resize(count * n);
  }
}

u64* RnsPoly::host_words() {
  require(!on_device(), ErrorCode::invalid_argument,
          "the polynomial is resident on a device: move it to the host first (RnsOps::to_host)");
  return data.data();
}

bool operator==(const RnsPoly& a, const RnsPoly& b) {
  require(!a.on_device() && !b.on_device(), ErrorCode::invalid_argument,
          "resident polynomials compare on the host (RnsOps::to_host)");
  return a.n == b.n && a.moduli == b.moduli && a.ntt == b.ntt && a.data == b.data;
}

// ---- DeviceWords --------------------------------------------------------------------------------

DeviceWords::DeviceWords(std::shared_ptr<DeviceMemory> memory, std::size_t words)
    : memory_(std::move(memory)) {
  require(memory_ != nullptr, ErrorCode::invalid_argument, "device words need a device memory");
  data_ = words == 0 ? nullptr : memory_->allocate(words);
  size_ = capacity_ = words;
}

DeviceWords::DeviceWords(const DeviceWords& other) : memory_(other.memory_) {
  if (memory_ != nullptr && other.size_ > 0) {
    data_ = memory_->allocate(other.size_);
    size_ = capacity_ = other.size_;
    memory_->copy(data_, other.data_, size_);
  }
}

DeviceWords& DeviceWords::operator=(const DeviceWords& other) {
  if (this != &other) {
    DeviceWords copy(other);
    *this = std::move(copy);
  }
  return *this;
}

DeviceWords::DeviceWords(DeviceWords&& other) noexcept
    : memory_(std::move(other.memory_)),
      data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      capacity_(std::exchange(other.capacity_, 0)) {}

DeviceWords& DeviceWords::operator=(DeviceWords&& other) noexcept {
  if (this != &other) {
    release();
    memory_ = std::move(other.memory_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    capacity_ = std::exchange(other.capacity_, 0);
  }
  return *this;
}

DeviceWords::~DeviceWords() {
  release();
}

void DeviceWords::resize(std::size_t words) {
  require(memory_ != nullptr, ErrorCode::invalid_argument, "device words need a device memory");
  if (words <= capacity_) {
    size_ = words;
    return;
  }
  u64* fresh = memory_->allocate(words);
  if (data_ != nullptr) memory_->release(data_, capacity_);
  data_ = fresh;
  size_ = capacity_ = words;
}

void DeviceWords::release() noexcept {
  if (memory_ != nullptr && data_ != nullptr) memory_->release(data_, capacity_);
  data_ = nullptr;
  size_ = capacity_ = 0;
}

BaseConverter::BaseConverter(const CkksContext& context, std::vector<ModulusIndex> from,
                             std::vector<ModulusIndex> to, ring::SimdIsa isa)
    : n_(context.degree()), from_(std::move(from)), to_(std::move(to)) {
  require(ring::simd_available(isa), ErrorCode::unsupported,
          "base conversion: instruction set " + std::string(ring::to_string(isa)) +
              " is not available here");
#if defined(SAFHIRE_CKKS_AVX512)
  vector_ = isa == ring::SimdIsa::avx512 && simd::rns_avx512_available();
#endif
  require(!from_.empty() && !to_.empty(), ErrorCode::invalid_argument,
          "base conversion needs non-empty bases");
  for (ModulusIndex f : from_) {
    for (ModulusIndex t : to_)
      require(f != t, ErrorCode::invalid_argument, "base conversion between overlapping bases");
    from_q_.push_back(context.prime(f));
  }
  for (ModulusIndex t : to_)
    to_p_.push_back(context.prime(t));
#if defined(SAFHIRE_CKKS_AVX512)
  narrow_ =
      vector_ && simd::rns_ifma_available() &&
      std::all_of(from_q_.begin(), from_q_.end(), [](u64 q) { return q < simd::kIfmaPrimeBound; });
#endif
  const std::size_t k = from_q_.size();
  for (std::size_t i = 0; i < k; ++i) {
    const u64 qi = from_q_[i];
    u64 qhat = 1;  // prod_{j != i} q_j mod q_i
    for (std::size_t j = 0; j < k; ++j) {
      if (j != i) qhat = mul_mod(qhat, from_q_[j] % qi, qi);
    }
    qhat_inv_.push_back(core::make_shoup(core::inv_mod(qhat, qi), qi));
    inv_q_.push_back(1.0 / static_cast<double>(qi));
  }
  for (u64 p : to_p_) {
    u64 q_mod = 1;
    for (std::size_t i = 0; i < k; ++i) {
      u64 qhat = 1;
      for (std::size_t j = 0; j < k; ++j) {
        if (j != i) qhat = mul_mod(qhat, from_q_[j] % p, p);
      }
      qhat_mod_.push_back(core::make_shoup(qhat, p));
      q_mod = mul_mod(q_mod, from_q_[i] % p, p);
    }
    q_mod_.push_back(core::make_shoup(q_mod, p));
    ratio_.push_back(core::make_wide_reducer(p));
  }
}

void BaseConverter::prepare(const RnsPoly& in, std::span<u64> y) const {
  require(!in.ntt && in.n == n_, ErrorCode::size_mismatch,
          "base conversion takes coefficients of the context's degree");
  for (std::size_t i = 0; i < from_.size(); ++i) {
    const auto x = in.limb(in.position(from_[i]));
    u64* out = y.data() + i * n_;
    const u64 q = from_q_[i];
    const auto c = qhat_inv_[i];
    for (std::uint32_t t = 0; t < n_; ++t)
      out[t] = core::mul_shoup(x[t], c.value, c.quotient, q);
  }
}

namespace {

// std::llround for 0 <= x < 2^52 (halves away from zero), inline: x - trunc(x) is exact there.
inline u64 round_nonnegative(double x) {
  const auto whole = static_cast<u64>(x);
  return whole + (x - static_cast<double>(whole) >= 0.5 ? 1 : 0);
}

}  // namespace

void BaseConverter::convert_range(const RnsPoly& in, RnsPoly& out, Conversion variant,
                                  std::span<const u64> y, std::size_t first,
                                  std::size_t last) const {
  (void)in;
  const std::size_t k = from_.size();
  // Blocks of coefficients small enough that the k rows of y stay in L1 across the outputs.
  constexpr std::uint32_t kBlock = 256;
  // The exact variant's -v Q is one more term: v times (-Q mod p_j), in column k.
  const bool exact = variant == Conversion::exact;
  const std::size_t terms = k + (exact ? 1 : 0);
  std::vector<u64*> outs(last - first);
  for (std::size_t j = first; j < last; ++j)
    outs[j - first] = out.limb(out.position(to_[j])).data();
  if (k == 1) {
    // From one prime q: x mod p_j directly, minus q when the centred value is x - q (v = 1, the
    // general rule's rounding, decided once per coefficient for every output).
    const u64 q = from_q_[0];
    Words wrap(n_, 0);  // all ones where v = 1 (pooled: N words per rescale)
    if (exact) {
      for (std::uint32_t t = 0; t < n_; ++t)
        wrap[t] = round_nonnegative(static_cast<double>(y[t]) * inv_q_[0]) != 0 ? ~u64{0} : 0;
    }
    for (std::size_t j = first; j < last; ++j) {
      const u64 p = to_p_[j];
      const u64 ratio = core::shoup_quotient<u64>(1, p);
      const u64 q_mod = q % p;
      u64* o = outs[j - first];
      if (vector_ && n_ % 8 == 0) {
        // y mod p as y * 1 with Shoup's quotient (the same words), minus q mod p where v = 1,
        // eight at a time.
        simd::lift_one_avx512(y.data(), wrap.data(), o, n_, p, core::ShoupConst<u64>{1, ratio},
                              q_mod);
        continue;
      }
      for (std::uint32_t t = 0; t < n_; ++t) {
        const u64 r = core::mul_shoup(y[t], u64{1}, ratio, p);
        o[t] = core::sub_mod(r, q_mod & wrap[t], p);
      }
    }
    return;
  }
  // Each output limb's multipliers: (Q/q_i) mod p_j, then -Q mod p_j for v (exact variant).
  std::vector<u64> multipliers((last - first) * terms);
  for (std::size_t j = first; j < last; ++j) {
    u64* c = multipliers.data() + (j - first) * terms;
    for (std::size_t i = 0; i < k; ++i)
      c[i] = qhat_mod_[j * k + i].value;
    if (exact) c[k] = core::neg_mod(q_mod_[j].value, to_p_[j]);
  }
  std::vector<u64> v(exact ? kBlock : 0);
  // The vector kernel reads the rows of y in place; the scalar loop a transposed block.
  const bool vector = vector_ && terms <= simd::kMaxVectorTerms && n_ % kBlock == 0;
  std::vector<u64> block(vector ? 0 : kBlock * terms);  // block[t terms + i]
  std::vector<const u64*> rows(terms);
  std::vector<simd::ConvertTarget> targets(last - first);
  for (std::uint32_t t0 = 0; t0 < n_; t0 += kBlock) {
    const std::uint32_t len = std::min(kBlock, n_ - t0);
    if (exact && vector) {
      for (std::size_t i = 0; i < k; ++i)
        rows[i] = y.data() + i * n_ + t0;
      simd::rounded_quotients_avx512({rows.data(), k}, inv_q_.data(), len, v.data());
    } else if (exact) {
      // v = round(sum_i y_i / q_i): how many Q the sum exceeds the centred value by.
      for (std::uint32_t t = 0; t < len; ++t) {
        double sum = 0;
        for (std::size_t i = 0; i < k; ++i)
          sum += static_cast<double>(y[i * n_ + t0 + t]) * inv_q_[i];
        v[t] = round_nonnegative(sum);
      }
    }
    if (vector) {
      for (std::size_t i = 0; i < k; ++i)
        rows[i] = y.data() + i * n_ + t0;
      if (exact) rows[k] = v.data();
      for (std::size_t j = first; j < last; ++j) {
        targets[j - first] = {to_p_[j], ratio_[j], multipliers.data() + (j - first) * terms,
                              outs[j - first] + t0};
      }
      if (narrow_) {
        simd::convert_block_ifma(rows, len, targets);
      } else {
        simd::convert_block_avx512(rows, len, targets);
      }
      continue;
    }
    for (std::size_t i = 0; i < k; ++i) {
      const u64* yi = y.data() + i * n_ + t0;
      for (std::uint32_t t = 0; t < len; ++t)
        block[t * terms + i] = yi[t];
    }
    if (exact) {
      for (std::uint32_t t = 0; t < len; ++t)
        block[t * terms + k] = v[t];
    }
    for (std::size_t j = first; j < last; ++j) {
      const u64 p = to_p_[j];
      const auto ratio = ratio_[j];
      const u64* constants = multipliers.data() + (j - first) * terms;
      u64* o = outs[j - first] + t0;
      // Per coefficient, the k products accumulate in two registers (below 2^122 each, so
      // sixteen fit; longer sums fold every fifteen terms). Four coefficients at a time, whose
      // independent carry chains the processor overlaps.
      auto fold = [&](core::u128 x) {
        return core::reduce_double_word(static_cast<u64>(x >> 64), static_cast<u64>(x), p, ratio);
      };
      std::uint32_t t = 0;
      for (; t + 4 <= len; t += 4) {
        const u64* yt = block.data() + t * terms;
        core::u128 s0 = 0, s1 = 0, s2 = 0, s3 = 0;
        std::size_t i = 0;
        for (std::size_t limit = 15; i < terms; limit += 15) {
          for (const std::size_t stop = std::min(terms, limit); i < stop; ++i) {
            const u64 w = constants[i];
            s0 += static_cast<core::u128>(yt[i]) * w;
            s1 += static_cast<core::u128>(yt[terms + i]) * w;
            s2 += static_cast<core::u128>(yt[2 * terms + i]) * w;
            s3 += static_cast<core::u128>(yt[3 * terms + i]) * w;
          }
          if (i < terms) {
            s0 = fold(s0);
            s1 = fold(s1);
            s2 = fold(s2);
            s3 = fold(s3);
          }
        }
        o[t] = fold(s0);
        o[t + 1] = fold(s1);
        o[t + 2] = fold(s2);
        o[t + 3] = fold(s3);
      }
      for (; t < len; ++t) {
        const u64* yt = block.data() + t * terms;
        core::u128 sum = 0;
        std::size_t i = 0;
        for (std::size_t limit = 15; i < terms; limit += 15) {
          for (const std::size_t stop = std::min(terms, limit); i < stop; ++i)
            sum += static_cast<core::u128>(yt[i]) * constants[i];
          if (i < terms) sum = fold(sum);
        }
        o[t] = fold(sum);
      }
    }
  }
}

}  // namespace safhire::ckks
