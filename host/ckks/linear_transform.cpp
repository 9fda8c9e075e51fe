#include "safhire/ckks/linear_transform.hpp"

#include <algorithm>
#include <array>
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
  auto qp = q;
  for (ModulusIndex m : context_->p_moduli())
    qp.push_back(m);

  // Everything runs over Q_l P, where a ciphertext c stands for ModDown(c): x enters as
  // P x (P c_i on the primes of Q_l, 0 on those of P, so that ModDown gives c_i back exactly),
  // a baby rotation as sigma_b(P c_0 + u_0, u_1) with u the key switch's inner product before
  // its ModDown (the key is stored as sigma_b^-1 of itself, GaloisKeys), and a giant rotation
  // likewise. Per giant step g, E_g = sum_b pt_(g,b) (.) rot_b(x) accumulates over Q_l P; its
  // c_1 part is brought down once for the giant rotation's ModUp, and the rotated E_g are
  // summed over Q_l P, so the whole transform ends with one ModDown per component: the two
  // halves of Bossuat et al.'s double hoisting (Eurocrypt 2021).
  std::map<std::uint32_t, std::vector<std::pair<std::uint32_t, const RnsPoly*>>> by_baby;
  for (const auto& [g, babies] : plain_) {
    for (const auto& [b, pt] : babies)
      by_baby[b].emplace_back(g, &pt);
  }
  std::array<RnsPoly, 2> lifted;
  {
    RnsPoly scaled;
    for (int i = 0; i < 2; ++i) {
      ops.reshape(scaled, q, true);
      ops.multiply_scalars(x.c[i], context_->p_mod(), scaled);
      lifted[i] = ops.zeros(qp, true);
      ops.copy(scaled, lifted[i], 0, q.size());
    }
  }
  struct Sums {
    RnsPoly e0, e1;
    bool any = false;
  };
  std::map<std::uint32_t, Sums> sums;
  auto accumulate = [&](Sums& acc, const RnsPoly& r0, const RnsPoly& r1, const RnsPoly& pt) {
    if (!acc.any) {
      ops.reshape(acc.e0, qp, true);
      ops.reshape(acc.e1, qp, true);
      ops.multiply(r0, pt, acc.e0);
      ops.multiply(r1, pt, acc.e1);
      acc.any = true;
    } else {
      ops.multiply_accumulate(r0, pt, acc.e0);
      ops.multiply_accumulate(r1, pt, acc.e1);
    }
  };
  std::vector<RnsPoly> digits;
  if (by_baby.size() > 1 || by_baby.count(0) == 0) digits = evaluator.mod_up(x.c[1]);
  RnsPoly r0, r1, v0, v1;
  for (const auto& [b, uses] : by_baby) {
    if (b == 0) {
      for (const auto& [g, pt] : uses)
        accumulate(sums[g], lifted[0], lifted[1], *pt);
      continue;
    }
    const std::uint64_t galois = rotation_galois_element(*context_, static_cast<int>(b));
    rotate_extended(evaluator, digits, keys.at(galois), galois, lifted[0], v0, v1, r0, r1);
    for (const auto& [g, pt] : uses)
      accumulate(sums[g], r0, r1, *pt);
  }

  // The giant steps, summed over Q_l P; one ModDown per component at the end.
  std::array<RnsPoly, 2> total;
  bool any = false;
  auto add_to_total = [&](const RnsPoly& t0, const RnsPoly& t1) {
    if (!any) {
      total[0] = t0;
      total[1] = t1;
      any = true;
    } else {
      ops.add(total[0], t0, total[0]);
      ops.add(total[1], t1, total[1]);
    }
  };
  for (auto& [g, acc] : sums) {
    if (g == 0) {
      add_to_total(acc.e0, acc.e1);
    } else {
      const std::uint64_t galois = rotation_galois_element(*context_, static_cast<int>(g));
      const auto giant_digits = evaluator.mod_up(evaluator.mod_down(acc.e1, level_));
      rotate_extended(evaluator, giant_digits, keys.at(galois), galois, acc.e0, v0, v1, r0, r1);
      add_to_total(r0, r1);
    }
    acc = Sums{};  // release the accumulators early
  }
  Ciphertext out;
  out.scale = x.scale * scale_;
  out.slots = x.slots;
  out.c = {evaluator.mod_down(total[0], level_), evaluator.mod_down(total[1], level_)};
  return out;
}

void LinearTransform::rotate_extended(const Evaluator& evaluator,
                                      const std::vector<RnsPoly>& digits, const SwitchingKey& key,
                                      std::uint64_t galois, const RnsPoly& c0, RnsPoly& v0,
                                      RnsPoly& v1, RnsPoly& r0, RnsPoly& r1) const {
  // (sigma(c_0 + v_0), sigma(v_1)) over Q_l P, v the inner product of the digits with the key.
  const RnsOps& ops = evaluator.ops();
  const auto& perm = evaluator.permutation(galois);
  std::tie(v0, v1) = evaluator.key_switch_inner(digits, key, level_, {});
  ops.add(v0, c0, v0);
  ops.reshape(r0, v0.moduli, true);
  ops.reshape(r1, v1.moduli, true);
  ops.permute(v0, perm, r0);
  ops.permute(v1, perm, r1);
}

}  // namespace safhire::ckks
