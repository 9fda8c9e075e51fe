#include "safhire/ckks/linear_transform.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <span>
#include <string>
#include <tuple>
#include <utility>

#include "safhire/core/error.hpp"

namespace safhire::ckks {

namespace {

bool power_of_two(std::uint32_t x) {
  return x != 0 && (x & (x - 1)) == 0;
}

// The baby count n1 (a power of two) that minimises the rotations' cost: baby rotations share a
// ModUp and their ModDowns, a giant rotation is a whole key switch plus one ModDown, weighted as
// three baby steps.
std::uint32_t choose_baby_steps(const std::set<std::uint32_t>& indices, std::uint32_t slots) {
  std::uint32_t best = 1;
  double best_cost = std::numeric_limits<double>::infinity();
  for (std::uint32_t n1 = 1; n1 <= slots; n1 *= 2) {
    std::set<std::uint32_t> babies, giants;
    for (std::uint32_t k : indices) {
      babies.insert(k % n1);
      giants.insert(k - k % n1);
    }
    const double cost = static_cast<double>(babies.size() - (babies.count(0) != 0 ? 1 : 0)) +
                        3.0 * static_cast<double>(giants.size() - (giants.count(0) != 0 ? 1 : 0));
    if (cost < best_cost) {
      best_cost = cost;
      best = n1;
    }
  }
  return best;
}

}  // namespace

LinearTransform::LinearTransform(const Encoder& encoder, const Diagonals& diagonals,
                                 std::uint32_t level, std::uint32_t slots, double scale,
                                 std::uint32_t baby_steps)
    : context_(&encoder.context()), level_(level) {
  const CkksContext& context = *context_;
  slots_ = slots == 0 ? context.degree() / 2 : slots;
  require(power_of_two(slots_) && slots_ <= context.degree() / 2, ErrorCode::invalid_argument,
          "linear transform: the slot count must be a power of two up to N/2");
  require(level_ <= context.max_level(), ErrorCode::invalid_argument,
          "linear transform: level " + std::to_string(level_) + " above the top level");
  scale_ = scale == 0 ? static_cast<double>(context.prime(level_)) : scale;
  require(scale_ > 0 && std::isfinite(scale_), ErrorCode::invalid_argument,
          "linear transform: the scale must be positive and finite");
  require(!diagonals.empty(), ErrorCode::invalid_argument, "linear transform without diagonals");
  std::set<std::uint32_t> indices;
  for (const auto& [k, values] : diagonals) {
    require(k < slots_ && values.size() <= slots_, ErrorCode::invalid_argument,
            "linear transform: diagonal " + std::to_string(k) + " outside the " +
                std::to_string(slots_) + " slots");
    indices.insert(k);
  }
  n1_ = baby_steps == 0 ? choose_baby_steps(indices, slots_) : baby_steps;
  require(power_of_two(n1_) && n1_ <= slots_, ErrorCode::invalid_argument,
          "linear transform: the baby-step count must be a power of two up to the slot count");
  std::vector<std::complex<double>> rotated(slots_);
  for (const auto& [k, values] : diagonals) {
    const std::uint32_t b = k % n1_, g = k - b;
    // rot_-g(diag_k)[j] = diag_k[(j - g) mod n].
    for (std::uint32_t j = 0; j < slots_; ++j) {
      const std::uint32_t from = (j + slots_ - g) % slots_;
      rotated[j] = from < values.size() ? values[from] : 0.0;
    }
    plain_[g][b] = encoder.encode_extended(rotated, scale_, level_, slots_);
  }
}

LinearTransform LinearTransform::from_matrix(const Encoder& encoder,
                                             const std::vector<std::complex<double>>& matrix,
                                             std::uint32_t level, std::uint32_t slots, double scale,
                                             std::uint32_t baby_steps) {
  const std::uint32_t n = slots == 0 ? encoder.context().degree() / 2 : slots;
  require(matrix.size() == std::size_t{n} * n, ErrorCode::invalid_argument,
          "linear transform: the matrix must be slots x slots");
  Diagonals diagonals;
  for (std::uint32_t k = 0; k < n; ++k) {
    std::vector<std::complex<double>> d(n);
    bool nonzero = false;
    for (std::uint32_t j = 0; j < n; ++j) {
      d[j] = matrix[std::size_t{j} * n + (j + k) % n];
      nonzero = nonzero || d[j] != 0.0;
    }
    if (nonzero) diagonals.emplace(k, std::move(d));
  }
  if (diagonals.empty()) diagonals.emplace(0, std::vector<std::complex<double>>(n));
  return LinearTransform(encoder, diagonals, level, n, scale, baby_steps);
}

void LinearTransform::make_resident(const RnsOps& ops) {
  for (auto& [g, babies] : plain_) {
    for (auto& [b, poly] : babies)
      ops.make_resident(poly);
  }
}

std::vector<int> LinearTransform::rotations() const {
  std::set<int> steps;
  for (const auto& [g, babies] : plain_) {
    if (g != 0) steps.insert(static_cast<int>(g));
    for (const auto& [b, poly] : babies) {
      if (b != 0) steps.insert(static_cast<int>(b));
    }
  }
  return {steps.begin(), steps.end()};
}

Ciphertext LinearTransform::apply(const Evaluator& evaluator, const Ciphertext& x,
                                  const GaloisKeys& keys) const {
  require(&evaluator.context() == context_, ErrorCode::invalid_argument,
          "linear transform built for another context");
  require(x.size() == 2, ErrorCode::invalid_argument,
          "linear transform of a relinearized ciphertext");
  require(x.level() == level_, ErrorCode::invalid_argument,
          "linear transform for level " + std::to_string(level_) + " applied at level " +
              std::to_string(x.level()));
  require(x.slots == slots_, ErrorCode::invalid_argument,
          "linear transform for " + std::to_string(slots_) + " slots applied to " +
              std::to_string(x.slots));
  const RnsOps& ops = evaluator.ops();
  const auto q = context_->q_moduli(level_);

  // Per giant step g, sum_b pt_(g,b) (.) rot_b(x) accumulates as a0, a1 over Q_l (the c_0
  // parts, and c_1 for b = 0) and e0, e1 over Q_l P (the key-switched parts of the baby
  // rotations, before their ModDown). The baby steps stream through: each is made once (its
  // sigma_b(c_0) and the key switch of sigma_b(c_1) from the one ModUp of c_1) and added to
  // every giant step that uses it, so only the accumulators are held.
  struct Sums {
    RnsPoly a0, a1, e0, e1;
    bool has_a0 = false, has_a1 = false, has_e = false;
  };
  std::map<std::uint32_t, Sums> sums;
  std::map<std::uint32_t, std::vector<std::pair<std::uint32_t, const RnsPoly*>>> by_baby;
  for (const auto& [g, babies] : plain_) {
    for (const auto& [b, pt] : babies)
      by_baby[b].emplace_back(g, &pt);
  }
  auto accumulate = [&](RnsPoly& acc, bool& has, const RnsPoly& a, const RnsPoly& pt,
                        std::span<const ModulusIndex> moduli) {
    if (!has) {
      ops.reshape(acc, moduli, true);
      ops.multiply(a, pt, acc);
      has = true;
    } else {
      ops.multiply_accumulate(a, pt, acc);
    }
  };
  std::vector<RnsPoly> digits;
  if (by_baby.size() > 1 || by_baby.count(0) == 0) digits = evaluator.mod_up(x.c[1]);
  RnsPoly c0, u0, u1;
  for (const auto& [b, uses] : by_baby) {
    if (b == 0) {
      for (const auto& [g, pt] : uses) {
        Sums& acc = sums[g];
        accumulate(acc.a0, acc.has_a0, x.c[0], *pt, q);
        accumulate(acc.a1, acc.has_a1, x.c[1], *pt, q);
      }
      continue;
    }
    const std::uint64_t galois = rotation_galois_element(*context_, static_cast<int>(b));
    const auto& perm = evaluator.permutation(galois);
    ops.reshape(c0, q, true);
    ops.permute(x.c[0], perm, c0);
    std::tie(u0, u1) = evaluator.key_switch_inner(digits, keys.at(galois), level_, perm);
    for (const auto& [g, pt] : uses) {
      Sums& acc = sums[g];
      accumulate(acc.a0, acc.has_a0, c0, *pt, q);
      bool has0 = acc.has_e, has1 = acc.has_e;
      accumulate(acc.e0, has0, u0, *pt, u0.moduli);
      accumulate(acc.e1, has1, u1, *pt, u1.moduli);
      acc.has_e = true;
    }
  }

  // Per giant step: one ModDown of the extended parts, then the rotation by g.
  Ciphertext out;
  out.scale = x.scale * scale_;
  out.slots = x.slots;
  for (auto& [g, acc] : sums) {
    Ciphertext step;
    step.scale = out.scale;
    step.slots = out.slots;
    if (acc.has_e) {
      RnsPoly d0 = evaluator.mod_down(acc.e0, level_), d1 = evaluator.mod_down(acc.e1, level_);
      ops.add(acc.a0, d0, acc.a0);
      if (acc.has_a1) ops.add(acc.a1, d1, acc.a1);
      step.c = {std::move(acc.a0), acc.has_a1 ? std::move(acc.a1) : std::move(d1)};
    } else {
      step.c = {std::move(acc.a0), std::move(acc.a1)};
    }
    acc = Sums{};  // release the accumulators early
    if (g != 0) step = evaluator.rotate(step, static_cast<int>(g), keys);
    if (out.c.empty()) {
      out.c = std::move(step.c);
    } else {
      ops.add(out.c[0], step.c[0], out.c[0]);
      ops.add(out.c[1], step.c[1], out.c[1]);
    }
  }
  return out;
}

}  // namespace safhire::ckks
