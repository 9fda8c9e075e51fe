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
    plain_[g][b] = compact_blocks(encoder.encode_extended(rotated, scale_, level_, slots_));
  }
  // Chained giant steps when the nonzero giants are the contiguous runs n1, 2 n1, .., a n1 and
  // -n1, .., -b n1 (a DFT group's are): as many key switches as one per giant, two keys.
  std::size_t giants = 0;
  std::uint32_t up = 0, down = 0;
  for (const auto& [g, row] : plain_) {
    if (g == 0) continue;
    ++giants;
    if (g <= slots_ / 2) {
      up = std::max(up, g / n1_);
    } else {
      down = std::max(down, (slots_ - g) / n1_);
    }
  }
  chained_ = giants > 1 && std::size_t{up} + down == giants;
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

std::size_t LinearTransform::bytes() const {
  std::size_t words = 0;
  for (const auto& [g, row] : plain_) {
    for (const auto& [b, poly] : row)
      words += poly.limbs() * std::size_t{poly.n};
  }
  return words * sizeof(u64);
}

std::vector<int> LinearTransform::rotations() const {
  std::set<int> steps;
  for (const auto& [g, babies] : plain_) {
    if (g != 0)
      steps.insert(static_cast<int>(!chained_ ? g : g <= slots_ / 2 ? n1_ : slots_ - n1_));
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
  std::set<std::uint32_t> babies;
  for (const auto& [g, row] : plain_) {
    for (const auto& [b, pt] : row)
      babies.insert(b);
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
  // The baby rotations rot_b(x) over Q_l P, all kept: each giant step's sum reads them in one
  // inner product (one reduction per coefficient, the compact diagonals broadcast).
  std::map<std::uint32_t, std::array<RnsPoly, 2>> rotated;
  {
    std::vector<RnsPoly> digits;
    if (babies.size() > 1 || babies.count(0) == 0) digits = evaluator.mod_up(x.c[1]);
    RnsPoly v0, v1;
    for (std::uint32_t b : babies) {
      if (b == 0) continue;
      const std::uint64_t galois = rotation_galois_element(*context_, static_cast<int>(b));
      auto& r = rotated[b];
      rotate_extended(evaluator, digits, keys.at(galois), galois, lifted[0], v0, v1, r[0], r[1]);
    }
  }
  auto baby = [&](std::uint32_t b, int i) -> const RnsPoly& {
    return b == 0 ? lifted[i] : rotated.at(b)[i];
  };

  // Per giant step g, E_g = sum_b pt_(g,b) (.) rot_b(x) over Q_l P (one inner product per
  // component, the compact diagonals broadcast), rotated by g and summed over Q_l P; one
  // ModDown per component at the end. A giant rotation brings E_g's c_1 part down once for its
  // ModUp. Chained, the giants run as two Horner chains, rot_n1(.. rot_n1(E_a) + .. + E_1) and
  // the same with -n1: the same key switches, two keys.
  RnsPoly t0, t1, v0, v1;
  auto giant_sum = [&](const std::map<std::uint32_t, RnsPoly>& row, RnsPoly& e0, RnsPoly& e1) {
    std::vector<const RnsPoly*> pts, x0, x1;
    for (const auto& [b, pt] : row) {
      pts.push_back(&pt);
      x0.push_back(&baby(b, 0));
      x1.push_back(&baby(b, 1));
    }
    constexpr std::size_t kChunk = 16;  // the inner product's most pairs per call
    ops.reshape(e0, qp, true);
    ops.reshape(e1, qp, true);
    for (std::size_t first = 0; first < pts.size(); first += kChunk) {
      const std::size_t count = std::min(kChunk, pts.size() - first);
      const std::span<const RnsPoly* const> a(pts.data() + first, count);
      const std::span<const RnsPoly*const> b0(x0.data() + first, count),
          b1(x1.data() + first, count);
      if (first == 0) {
        ops.inner_product_pair(a, b0, b1, e0, e1);
      } else {
        ops.reshape(t0, qp, true);
        ops.reshape(t1, qp, true);
        ops.inner_product_pair(a, b0, b1, t0, t1);
        ops.add(e0, t0, e0);
        ops.add(e1, t1, e1);
      }
    }
  };
  // (e0, e1) <- rot_step(e0, e1), over Q_l P.
  RnsPoly r0, r1;
  auto rotate_sum = [&](std::uint32_t step, RnsPoly& e0, RnsPoly& e1) {
    const std::uint64_t galois = rotation_galois_element(*context_, static_cast<int>(step));
    const auto giant_digits = evaluator.mod_up(evaluator.mod_down(e1, level_));
    rotate_extended(evaluator, giant_digits, keys.at(galois), galois, e0, v0, v1, r0, r1);
    std::swap(e0, r0);
    std::swap(e1, r1);
  };
  std::array<RnsPoly, 2> total;
  bool any = false;
  auto add_to_total = [&](RnsPoly& e0, RnsPoly& e1) {
    if (!any) {
      std::swap(total[0], e0);
      std::swap(total[1], e1);
      any = true;
    } else {
      ops.add(total[0], e0, total[0]);
      ops.add(total[1], e1, total[1]);
    }
  };
  RnsPoly e0, e1, u0, u1;
  if (!chained_) {
    for (const auto& [g, row] : plain_) {
      giant_sum(row, e0, e1);
      if (g != 0) rotate_sum(g, e0, e1);
      add_to_total(e0, e1);
    }
  } else {
    if (plain_.count(0) != 0) {
      giant_sum(plain_.at(0), e0, e1);
      add_to_total(e0, e1);
    }
    for (const bool up : {true, false}) {
      // The chain's giants from the farthest: m n1 (up) or slots - m n1 (down), m = a .. 1.
      std::uint32_t m = 0;
      for (const auto& [g, row] : plain_) {
        if (g != 0 && (g <= slots_ / 2) == up) m = std::max(m, (up ? g : slots_ - g) / n1_);
      }
      if (m == 0) continue;
      const std::uint32_t key = up ? n1_ : slots_ - n1_;
      for (bool first = true; m > 0; --m, first = false) {
        const std::uint32_t g = up ? m * n1_ : slots_ - m * n1_;
        if (first) {
          giant_sum(plain_.at(g), e0, e1);
        } else {
          giant_sum(plain_.at(g), u0, u1);  // present: the chain is contiguous
          ops.add(e0, u0, e0);
          ops.add(e1, u1, e1);
        }
        rotate_sum(key, e0, e1);
      }
      add_to_total(e0, e1);
    }
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
