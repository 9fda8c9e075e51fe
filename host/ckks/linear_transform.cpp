#include "safhire/ckks/linear_transform.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <string>
#include <tuple>

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

  // Baby steps: sigma_b(c_0) over Q_l and the key switch of sigma_b(c_1) before its ModDown,
  // (u_0, u_1) over Q_l P, all from one ModUp of c_1.
  std::set<std::uint32_t> baby_set;
  for (const auto& [g, babies] : plain_) {
    for (const auto& [b, poly] : babies)
      baby_set.insert(b);
  }
  struct Baby {
    RnsPoly c0;      // sigma_b(c_0) over Q_l (c_0 itself for b = 0)
    RnsPoly u0, u1;  // over Q_l P; empty for b = 0
  };
  std::map<std::uint32_t, Baby> baby;
  std::vector<RnsPoly> digits;
  if (baby_set.size() > 1 || baby_set.count(0) == 0) digits = evaluator.mod_up(x.c[1]);
  for (std::uint32_t b : baby_set) {
    Baby& r = baby[b];
    if (b == 0) {
      r.c0 = x.c[0];
      continue;
    }
    const std::uint64_t galois = rotation_galois_element(*context_, static_cast<int>(b));
    const auto& perm = evaluator.permutation(galois);
    ops.reshape(r.c0, q, true);
    ops.permute(x.c[0], perm, r.c0);
    std::tie(r.u0, r.u1) = evaluator.key_switch_inner(digits, keys.at(galois), level_, perm);
  }

  // Giant steps: per g, sum_b pt_(g,b) (.) baby_b as (Q_l part of c_0, c_1 of b = 0) plus the
  // extended parts, one ModDown for the step, then the rotation by g.
  Ciphertext out;
  out.scale = x.scale * scale_;
  out.slots = x.slots;
  for (const auto& [g, babies] : plain_) {
    RnsPoly a0, a1;  // over Q_l: the c_0 parts and b = 0's c_1
    RnsPoly e0, e1;  // over Q_l P: the key-switched parts
    bool have_a1 = false, have_e = false;
    ops.reshape(a0, q, true);
    bool first = true;
    for (const auto& [b, pt] : babies) {
      const Baby& r = baby.at(b);
      if (first) {
        ops.multiply(r.c0, pt, a0);
      } else {
        ops.multiply_accumulate(r.c0, pt, a0);
      }
      first = false;
      if (b == 0) {
        ops.reshape(a1, q, true);
        ops.multiply(x.c[1], pt, a1);
        have_a1 = true;
        continue;
      }
      if (!have_e) {
        ops.reshape(e0, r.u0.moduli, true);
        ops.reshape(e1, r.u1.moduli, true);
        ops.multiply(r.u0, pt, e0);
        ops.multiply(r.u1, pt, e1);
        have_e = true;
      } else {
        ops.multiply_accumulate(r.u0, pt, e0);
        ops.multiply_accumulate(r.u1, pt, e1);
      }
    }
    Ciphertext step;
    step.scale = out.scale;
    step.slots = out.slots;
    if (have_e) {
      RnsPoly d0 = evaluator.mod_down(e0, level_), d1 = evaluator.mod_down(e1, level_);
      ops.add(a0, d0, a0);
      if (have_a1) ops.add(a1, d1, a1);
      step.c = {std::move(a0), have_a1 ? std::move(a1) : std::move(d1)};
    } else {
      step.c = {std::move(a0), std::move(a1)};
    }
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
