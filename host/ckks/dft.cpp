#include "safhire/ckks/dft.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <numbers>
#include <numeric>
#include <string>

#include "safhire/core/error.hpp"

namespace safhire::ckks {

namespace {

using Complex = std::complex<double>;

void check_range(std::uint32_t n_degree, std::uint32_t slots, std::uint32_t first,
                 std::uint32_t last) {
  require(std::has_single_bit(slots) && slots >= 2 && slots <= n_degree / 2,
          ErrorCode::invalid_argument,
          "DFT stages: the slot count must be a power of two in [2, N/2], got " +
              std::to_string(slots));
  const auto stages = static_cast<std::uint32_t>(std::countr_zero(slots));
  require(first < last && last <= stages, ErrorCode::invalid_argument,
          "DFT stages: range [" + std::to_string(first) + ", " + std::to_string(last) +
              ") outside the " + std::to_string(stages) + " stages of " + std::to_string(slots) +
              " slots");
}

}  // namespace

LinearTransform::Diagonals dft_stage(std::uint32_t n_degree, std::uint32_t slots, std::uint32_t i,
                                     bool inverse) {
  check_range(n_degree, slots, i, i + 1);
  const std::uint32_t h = 1U << i, len = 2 * h, m = 8 * h;
  LinearTransform::Diagonals d;
  auto& d0 = d[0];
  auto& up = d[h];            // position p reads p + h
  auto& down = d[slots - h];  // position p reads p - h (the same diagonal as up when h = n/2)
  d0.assign(slots, 0.0);
  up.resize(slots, 0.0);
  down.resize(slots, 0.0);
  std::uint64_t power = 1;  // 5^j mod 8h
  std::vector<Complex> w(h);
  for (std::uint32_t j = 0; j < h; ++j) {
    const long double angle = 2 * std::numbers::pi_v<long double> *
                              static_cast<long double>(power) / static_cast<long double>(m);
    w[j] = {static_cast<double>(std::cos(angle)), static_cast<double>(std::sin(angle))};
    power = power * 5 % m;
  }
  for (std::uint32_t p = 0; p < slots; ++p) {
    const std::uint32_t j = p % len;
    if (j < h) {  // top of a butterfly
      if (inverse) {
        d0[p] = 0.5;
        up[p] = 0.5;
      } else {
        d0[p] = 1.0;
        up[p] = w[j];
      }
    } else {  // bottom: pairs with p - h
      const Complex c = std::conj(w[j - h]);
      if (inverse) {
        d0[p] = -0.5 * c;
        down[p] = 0.5 * c;
      } else {
        d0[p] = -w[j - h];
        down[p] = 1.0;
      }
    }
  }
  return d;
}

LinearTransform::Diagonals multiply_diagonals(const LinearTransform::Diagonals& a,
                                              const LinearTransform::Diagonals& b,
                                              std::uint32_t slots) {
  LinearTransform::Diagonals out;
  for (const auto& [k1, x] : a) {
    for (const auto& [k2, y] : b) {
      auto& o = out[(k1 + k2) % slots];
      o.resize(slots, 0.0);
      for (std::uint32_t j = 0; j < slots; ++j) {
        const Complex xj = j < x.size() ? x[j] : 0.0;
        const std::uint32_t r = (j + k1) % slots;
        o[j] += xj * (r < y.size() ? y[r] : Complex{0.0});
      }
    }
  }
  // Drop diagonals that cancelled (to rounding).
  double largest = 0;
  for (const auto& [k, v] : out) {
    for (const auto& e : v)
      largest = std::max(largest, std::abs(e));
  }
  for (auto it = out.begin(); it != out.end();) {
    bool zero = true;
    for (const auto& e : it->second)
      zero = zero && std::abs(e) <= std::ldexp(largest, -40);
    it = zero ? out.erase(it) : std::next(it);
  }
  return out;
}

LinearTransform::Diagonals dft_stages(std::uint32_t n_degree, std::uint32_t slots,
                                      std::uint32_t first, std::uint32_t last,
                                      DftDirection direction) {
  check_range(n_degree, slots, first, last);
  const bool inverse = direction == DftDirection::coeff_to_slot;
  // Stages in the order they act: ascending for SlotToCoeff, descending for CoeffToSlot.
  LinearTransform::Diagonals product;
  for (std::uint32_t step = 0; step < last - first; ++step) {
    const std::uint32_t i = inverse ? last - 1 - step : first + step;
    const auto stage = dft_stage(n_degree, slots, i, inverse);
    product = step == 0 ? stage : multiply_diagonals(stage, product, slots);
  }
  return product;
}

LinearTransform::Diagonals lift_to_halves(const LinearTransform::Diagonals& diagonals,
                                          std::uint32_t slots, std::complex<double> c) {
  LinearTransform::Diagonals out;
  for (const auto& [k, d] : diagonals) {
    for (std::uint32_t j = 0; j < slots && j < d.size(); ++j) {
      if (d[j] == 0.0) continue;
      auto& o = out[j + k < slots ? k : k + slots];
      o.resize(2 * std::size_t{slots}, 0.0);
      o[j] = d[j];
      o[j + slots] = c * d[j];
    }
  }
  return out;
}

std::vector<std::complex<double>> apply_diagonals(const LinearTransform::Diagonals& diagonals,
                                                  const std::vector<std::complex<double>>& x) {
  const std::size_t n = x.size();
  std::vector<Complex> y(n);
  for (const auto& [k, d] : diagonals) {
    for (std::size_t j = 0; j < n && j < d.size(); ++j)
      y[j] += d[j] * x[(j + k) % n];
  }
  return y;
}

HomomorphicDft::HomomorphicDft(const Encoder& encoder, DftDirection direction, std::uint32_t first,
                               std::uint32_t last, std::vector<std::uint32_t> split,
                               std::uint32_t level, std::uint32_t slots, double factor,
                               std::uint32_t max_babies,
                               const std::vector<std::complex<double>>& halves, bool lazy)
    : direction_(direction), first_(first), last_(last) {
  const std::uint32_t n_degree = encoder.context().degree();
  if (slots == 0) slots = n_degree / 2;
  check_range(n_degree, slots, first, last);
  if (split.empty()) split.assign(last - first, 1);
  require(std::find(split.begin(), split.end(), 0U) == split.end() &&
              std::accumulate(split.begin(), split.end(), 0U) == last - first,
          ErrorCode::invalid_argument,
          "DFT stages: the split must cover the " + std::to_string(last - first) +
              " stages with groups of at least one");
  require(split.size() <= level, ErrorCode::invalid_argument,
          "DFT stages: " + std::to_string(split.size()) + " groups need as many levels above 0, " +
              "the ciphertext is at level " + std::to_string(level));
  require(halves.empty() || (halves.size() == split.size() && 2 * slots <= n_degree / 2),
          ErrorCode::invalid_argument,
          "DFT stages: halves need one entry per group and 2 slots <= N/2");
  // Groups in the order of application: SlotToCoeff walks the stages up from first,
  // CoeffToSlot down from last.
  require(factor != 0 && std::isfinite(factor), ErrorCode::invalid_argument,
          "DFT stages: the factor must be finite and nonzero");
  const bool inverse = direction == DftDirection::coeff_to_slot;
  // |factor|^(1/groups) in every group, its sign in the first.
  const double each = std::pow(std::fabs(factor), 1.0 / static_cast<double>(split.size()));
  std::uint32_t done = 0;
  for (std::size_t g = 0; g < split.size(); ++g) {
    const std::uint32_t size = split[g];
    const std::uint32_t lo = inverse ? last - done - size : first + done;
    auto diagonals = dft_stages(n_degree, slots, lo, lo + size, direction);
    const double f = g == 0 && factor < 0 ? -each : each;
    for (auto& [k, d] : diagonals) {
      for (auto& v : d)
        v *= f;
    }
    const bool lifted = !halves.empty() && halves[g] != 0.0;
    groups_.emplace_back(encoder, lifted ? lift_to_halves(diagonals, slots, halves[g]) : diagonals,
                         level - static_cast<std::uint32_t>(g), lifted ? 2 * slots : slots, 0, 0,
                         max_babies, lazy);
    done += size;
  }
}

std::vector<int> HomomorphicDft::rotations() const {
  std::vector<int> all;
  for (const auto& g : groups_) {
    const auto r = g.rotations();
    all.insert(all.end(), r.begin(), r.end());
  }
  std::sort(all.begin(), all.end());
  all.erase(std::unique(all.begin(), all.end()), all.end());
  return all;
}

void HomomorphicDft::make_resident(const RnsOps& ops) {
  for (auto& g : groups_)
    g.make_resident(ops);
}

Ciphertext HomomorphicDft::apply(const Evaluator& evaluator, const Ciphertext& x,
                                 const GaloisKeys& keys) const {
  return apply(evaluator, x, keys, 0, depth());
}

Ciphertext HomomorphicDft::apply(const Evaluator& evaluator, const Ciphertext& x,
                                 const GaloisKeys& keys, std::uint32_t from,
                                 std::uint32_t to) const {
  require(from < to && to <= depth(), ErrorCode::invalid_argument,
          "DFT stages: groups [" + std::to_string(from) + ", " + std::to_string(to) +
              ") outside the " + std::to_string(depth()) + " groups");
  Ciphertext y = x;
  for (std::uint32_t g = from; g < to; ++g)
    y = groups_[g].apply(evaluator, y, keys, true);  // ModDown and rescale in one division
  return y;
}

}  // namespace safhire::ckks
