#include "safhire/lanes/encoder.hpp"

#include <cmath>
#include <string>

#include "safhire/core/error.hpp"
#include "safhire/lanes/integers.hpp"

namespace safhire::lanes {

namespace {

using Complex = std::complex<long double>;

}  // namespace

LaneEncoder::LaneEncoder(const LaneContext& context, const ckks::RnsOps& ops)
    : context_(&context), encoder_(context.ckks(), ops) {}

LaneDigits LaneEncoder::digits(std::span<const mpz_class> integers) const {
  const LaneSpace& space = context_->space();
  require(integers.size() <= space.lanes(), ErrorCode::invalid_argument,
          std::to_string(integers.size()) + " integers do not fit in " +
              std::to_string(space.lanes()) + " lanes");
  LaneDigits out(space.lanes(), std::vector<std::int64_t>(space.lane_degree, 0));
  for (std::size_t r = 0; r < integers.size(); ++r)
    out[r] = constant_digits(integers[r], space, space.digits);
  return out;
}

std::vector<std::complex<long double>> LaneEncoder::slots(const LaneDigits& digits) const {
  const LaneSpace& space = context_->space();
  const std::uint32_t n = space.lane_degree, half = space.lane_slots();
  require(digits.size() == space.lanes(), ErrorCode::invalid_argument,
          "lane digits: " + std::to_string(space.lanes()) + " lanes expected, got " +
              std::to_string(digits.size()));
  std::vector<Complex> z(space.degree() / 2);
  std::vector<Complex> u(half);
  for (std::uint32_t r = 0; r < space.lanes(); ++r) {
    require(digits[r].size() == n, ErrorCode::invalid_argument,
            "lane digits: " + std::to_string(n) + " digits a lane expected, got " +
                std::to_string(digits[r].size()));
    // The complex-packed digits, then sigma_n: the special FFT of ring degree n.
    for (std::uint32_t t = 0; t < half; ++t)
      u[t] = {static_cast<long double>(digits[r][t]),
              static_cast<long double>(digits[r][t + half])};
    ckks::Encoder::special_fft(u, n);
    const std::size_t first = std::size_t{block_of_lane(space, r)} * half;
    std::copy(u.begin(), u.end(), z.begin() + static_cast<std::ptrdiff_t>(first));
  }
  return z;
}

std::vector<std::vector<long double>> LaneEncoder::digits_of_slots(
    std::span<const std::complex<long double>> slots) const {
  const LaneSpace& space = context_->space();
  const std::uint32_t n = space.lane_degree, half = space.lane_slots();
  require(slots.size() == space.degree() / 2, ErrorCode::invalid_argument,
          "form B needs N/2 slots");
  std::vector<std::vector<long double>> out(space.lanes(), std::vector<long double>(n));
  std::vector<Complex> u(half);
  for (std::uint32_t b = 0; b < space.lanes(); ++b) {
    std::copy_n(slots.begin() + static_cast<std::ptrdiff_t>(std::size_t{b} * half), half,
                u.begin());
    ckks::Encoder::special_fft_inverse(u, n);
    auto& lane = out[lane_of_block(space, b)];
    for (std::uint32_t t = 0; t < half; ++t) {
      lane[t] = u[t].real();
      lane[t + half] = u[t].imag();
    }
  }
  return out;
}

ckks::Plaintext LaneEncoder::encode(std::span<const mpz_class> integers, double scale,
                                    std::uint32_t level) const {
  return encode_digits(digits(integers), scale, level);
}

ckks::Plaintext LaneEncoder::encode_digits(const LaneDigits& digits, double scale,
                                           std::uint32_t level) const {
  const auto z = slots(digits);
  std::vector<std::complex<double>> values(z.size());
  for (std::size_t j = 0; j < z.size(); ++j)
    values[j] = {static_cast<double>(z[j].real()), static_cast<double>(z[j].imag())};
  return encoder_.encode(values, scale, level);
}

LaneDecoding LaneEncoder::decode(const ckks::Plaintext& plain) const {
  const LaneSpace& space = context_->space();
  const std::uint32_t n_degree = space.degree(), half = n_degree / 2;
  require(plain.slots == half, ErrorCode::invalid_argument,
          "form B fills the N/2 slots, the plaintext has " + std::to_string(plain.slots));
  // sigma_N(m) / scale in long double, from the exact coefficients.
  const auto coeffs = encoder_.decode_coefficients(plain);
  std::vector<Complex> z(half);
  for (std::uint32_t i = 0; i < half; ++i)
    z[i] = {coeffs[i], coeffs[i + half]};
  ckks::Encoder::special_fft(z, n_degree);
  const auto raw = digits_of_slots(z);
  LaneDecoding out;
  out.digits.resize(space.lanes());
  out.integers.reserve(space.lanes());
  long double square = 0;
  for (std::uint32_t r = 0; r < space.lanes(); ++r) {
    auto& lane = out.digits[r];
    lane.resize(space.lane_degree);
    for (std::uint32_t t = 0; t < space.lane_degree; ++t) {
      const long double x = raw[r][t];
      require(std::fabs(x) < 0x1p62L, ErrorCode::invalid_argument,
              "lane decoding: a digit beyond 2^62 (not a lane ciphertext of this space?)");
      lane[t] = std::llround(x);
      const double e = static_cast<double>(std::fabs(x - static_cast<long double>(lane[t])));
      out.max_error = std::max(out.max_error, e);
      square += static_cast<long double>(e) * e;
    }
    if (space.t_degree == 1) out.integers.push_back(from_digits(lane, space.base));
  }
  out.rms_error = static_cast<double>(
      std::sqrt(square / (static_cast<long double>(space.lanes()) * space.lane_degree)));
  return out;
}

}  // namespace safhire::lanes
