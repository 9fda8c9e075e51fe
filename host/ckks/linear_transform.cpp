#include "safhire/ckks/linear_transform.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <memory>
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
// three baby steps; at most max_babies nonzero babies when that is not 0 (the smallest n1 when
// none qualifies).
std::uint32_t choose_baby_steps(const std::set<std::uint32_t>& indices, std::uint32_t slots,
                                std::uint32_t max_babies) {
  std::uint32_t best = 1;
  double best_cost = std::numeric_limits<double>::infinity();
  for (std::uint32_t n1 = 1; n1 <= slots; n1 *= 2) {
    std::set<std::uint32_t> babies, giants;
    for (std::uint32_t k : indices) {
      babies.insert(k % n1);
      giants.insert(k - k % n1);
    }
    const std::size_t nonzero = babies.size() - (babies.count(0) != 0 ? 1 : 0);
    const double cost = static_cast<double>(nonzero) +
                        3.0 * static_cast<double>(giants.size() - (giants.count(0) != 0 ? 1 : 0));
    if (max_babies != 0 && nonzero > max_babies) continue;
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
                                 std::uint32_t baby_steps, std::uint32_t max_babies, bool lazy)
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
  n1_ = baby_steps == 0 ? choose_baby_steps(indices, slots_, max_babies) : baby_steps;
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
    RnsPoly encoded = compact_blocks(encoder.encode_extended(rotated, scale_, level_, slots_));
    if (lazy && encoded.n == context.degree()) {
      if (auto coeffs = encoder.integer_coefficients(rotated, scale_, slots_)) {
        lazy_[g][b] = std::move(*coeffs);
        plain_[g][b] = RnsPoly();  // a placeholder: the lazy coefficients stand for it
        continue;
      }
    }
    plain_[g][b] = std::move(encoded);
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
    for (auto& [b, poly] : babies) {
      if (lazy_at(g, b) == nullptr) ops.make_resident(poly);
    }
  }
}

const RnsOps::Coefficients* LinearTransform::lazy_at(std::uint32_t g, std::uint32_t b) const {
  const auto row = lazy_.find(g);
  if (row == lazy_.end()) return nullptr;
  const auto it = row->second.find(b);
  return it == row->second.end() ? nullptr : &it->second;
}

std::size_t LinearTransform::bytes() const {
  std::size_t words = 0;
  for (const auto& [g, row] : plain_) {
    for (const auto& [b, poly] : row)
      words += poly.limbs() * std::size_t{poly.n};
  }
  for (const auto& [g, row] : lazy_) {
    for (const auto& [b, coeffs] : row)
      words += coeffs.size();
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
                                  const GaloisKeys& keys, bool rescale) const {
  require(&evaluator.context() == context_, ErrorCode::invalid_argument,
          "linear transform built for another context");
  require(x.size() == 2, ErrorCode::invalid_argument,
          "linear transform of a relinearized ciphertext");
  require(x.level() == level_, ErrorCode::invalid_argument,
          "linear transform for level " + std::to_string(level_) + " applied at level " +
              std::to_string(x.level()));
  // Fewer slots dividing slots_ repeat with their period: the same vector in slots_ slots.
  require(x.slots != 0 && x.slots <= slots_ && slots_ % x.slots == 0, ErrorCode::invalid_argument,
          "linear transform for " + std::to_string(slots_) + " slots applied to " +
              std::to_string(x.slots));
  const RnsOps& ops = evaluator.ops();
  const auto q = context_->q_moduli(level_);
  const auto qp = context_->qp_moduli(level_);

  // Everything runs over Q_l P, where a ciphertext c stands for ModDown(c): x enters as
  // P x (P c_i on the primes of Q_l, 0 on those of P, so that ModDown gives c_i back exactly),
  // a baby rotation as sigma_b(P c_0 + u_0, u_1) with u the key switch's inner product before
  // its ModDown (the key is stored as sigma_b^-1 of itself, GaloisKeys), and a giant rotation
  // likewise, so that the whole transform ends with one ModDown per component: the two halves
  // of Bossuat et al.'s double hoisting (Eurocrypt 2021).
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
  std::vector<std::uint32_t> order;               // the giants in the order they are consumed
  std::vector<std::uint32_t> chain_length{0, 0};  // chained: a (up) and b (down)
  if (!chained_) {
    for (const auto& [g, row] : plain_)
      order.push_back(g);
  } else {
    if (plain_.count(0) != 0) order.push_back(0);
    for (const auto& [g, row] : plain_) {
      if (g == 0) continue;
      const bool up = g <= slots_ / 2;
      chain_length[up ? 0 : 1] = std::max(chain_length[up ? 0 : 1], (up ? g : slots_ - g) / n1_);
    }
    for (std::uint32_t m = chain_length[0]; m >= 1; --m)
      order.push_back(m * n1_);
    for (std::uint32_t m = chain_length[1]; m >= 1; --m)
      order.push_back(slots_ - m * n1_);
  }
  std::vector<std::uint32_t> baby_list(babies.begin(), babies.end());
  const std::size_t nonzero_babies = baby_list.size() - (babies.count(0) != 0 ? 1 : 0);
  constexpr std::size_t kBatch = 8, kRowTerms = 16;
  // Every giant's sum E_g at once from RnsOps::rotate_hoisted_rows, which never holds the baby
  // rotations whole, when the giants' sums take less memory than the babies plus a batch of
  // sums (a DFT group at N = 2^16: 4 sums against 15 babies and 4 sums); else the babies first,
  // then the sums in batches.
  const bool fused =
      nonzero_babies != 0 && order.size() <= nonzero_babies + std::min(kBatch, order.size());
  std::vector<std::array<RnsPoly, 2>> sums(fused ? order.size() : std::min(kBatch, order.size()));
  if (fused) {
    const std::vector<RnsPoly> digits = evaluator.mod_up(x.c[1]);
    std::vector<const RnsPoly*> d;
    for (const RnsPoly& digit : digits)
      d.push_back(&digit);
    std::vector<RnsOps::HoistedKey> hoisted;
    std::vector<core::AesCtr> prfs;
    prfs.reserve(nonzero_babies);
    for (std::uint32_t b : baby_list) {
      if (b == 0) continue;
      const std::uint64_t galois = rotation_galois_element(*context_, static_cast<int>(b));
      const SwitchingKey& key = keys.at(galois);
      require(key.b.size() >= d.size(), ErrorCode::invalid_argument,
              "switching key has fewer digits than the ciphertext needs");
      auto& h = hoisted.emplace_back();
      h.b.assign(d.size(), nullptr);
      for (std::size_t i = 0; i < d.size(); ++i) {
        h.b[i] = &key.b[i];
        if (!key.seeded()) h.a.push_back(&key.a[i]);
      }
      if (key.seeded()) h.prf = &prfs.emplace_back(*key.seed);
      h.perm = evaluator.permutation(galois);
    }
    // The column of baby 0 (x itself) first, then the nonzero babies in baby_list's order.
    const std::size_t zero_column = babies.count(0) != 0 ? 0 : 1;
    std::vector<std::vector<const RnsPoly*>> rows(order.size());
    std::vector<std::vector<const RnsOps::Coefficients*>> lazy_rows;
    if (!lazy_.empty()) lazy_rows.assign(order.size(), {});
    std::vector<RnsPoly*> out0, out1;
    for (std::size_t i = 0; i < order.size(); ++i) {
      rows[i].assign(nonzero_babies + 1, nullptr);
      if (!lazy_.empty()) lazy_rows[i].assign(nonzero_babies + 1, nullptr);
      for (const auto& [b, pt] : plain_.at(order[i])) {
        const auto at = std::lower_bound(baby_list.begin(), baby_list.end(), b) - baby_list.begin();
        const std::size_t column = static_cast<std::size_t>(at) + zero_column;
        if (const auto* coeffs = lazy_at(order[i], b)) {
          lazy_rows[i][column] = coeffs;
        } else {
          rows[i][column] = &pt;
        }
      }
      for (int c = 0; c < 2; ++c)
        ops.reshape(sums[i][c], qp, true);
      out0.push_back(&sums[i][0]);
      out1.push_back(&sums[i][1]);
    }
    ops.rotate_hoisted_rows(d, hoisted, lifted[0], lifted[1], rows, out0, out1, lazy_rows);
  }
  // The baby rotations rot_b(x) over Q_l P, all kept for the giants' sums.
  std::map<std::uint32_t, std::array<RnsPoly, 2>> rotated;
  if (!fused && (babies.size() > 1 || babies.count(0) == 0)) {
    const std::vector<RnsPoly> digits = evaluator.mod_up(x.c[1]);
    std::vector<const RnsPoly*> d;
    for (const RnsPoly& digit : digits)
      d.push_back(&digit);
    std::vector<std::vector<const RnsPoly*>> kb, ka;
    std::vector<std::span<const std::uint32_t>> perms;
    std::vector<RnsPoly*> out0, out1;
    std::vector<const SwitchingKey*> used;
    for (std::uint32_t b : babies) {
      if (b == 0) continue;
      const std::uint64_t galois = rotation_galois_element(*context_, static_cast<int>(b));
      const SwitchingKey& key = keys.at(galois);
      require(key.b.size() >= d.size(), ErrorCode::invalid_argument,
              "switching key has fewer digits than the ciphertext needs");
      used.push_back(&key);
      kb.emplace_back();
      ka.emplace_back();
      for (std::size_t i = 0; i < d.size(); ++i) {
        kb.back().push_back(&key.b[i]);
        ka.back().push_back(key.seeded() ? nullptr : &key.a[i]);  // regenerated below
      }
      perms.push_back(evaluator.permutation(galois));
      auto& r = rotated[b];
      ops.reshape(r[0], qp, true);
      ops.reshape(r[1], qp, true);
      out0.push_back(&r[0]);
      out1.push_back(&r[1]);
    }
    // sigma_b(P c_0 + u_0, u_1) for every baby b, from one ModUp: the full keys in one call, a
    // seeded key alone with its a_j regenerated over Q_l P for that call only (a seeded key set
    // is chosen for its memory: one key's a_j at a time).
    std::vector<RnsPoly> regenerated;
    for (std::size_t first = 0; first < used.size();) {
      std::size_t count = 1;
      if (used[first]->seeded()) {
        ka[first] = key_a(ops, *used[first], d.size(), qp, regenerated);
      } else {
        while (first + count < used.size() && !used[first + count]->seeded())
          ++count;
      }
      ops.rotate_hoisted(
          d, std::span(kb).subspan(first, count), std::span(ka).subspan(first, count),
          std::span(perms).subspan(first, count), &lifted[0], std::span(out0).subspan(first, count),
          std::span(out1).subspan(first, count));
      first += count;
    }
  }
  auto baby = [&](std::uint32_t b, int i) -> const RnsPoly& {
    return b == 0 ? lifted[i] : rotated.at(b)[i];
  };

  // Per giant step g, E_g = sum_b pt_(g,b) (.) rot_b(x) over Q_l P, rotated by g and summed over
  // Q_l P; one ModDown per component at the end. A giant rotation brings E_g's c_1 part down
  // once for its ModUp. Chained, the giants run as two Horner chains, rot_n1(.. rot_n1(E_a) + ..
  // + E_1) and the same with -n1: the same key switches, two keys. The sums of up to kBatch
  // giants at a time come from one call of inner_product_rows (each row at most 16 babies), so
  // that the baby rotations are read once per batch, not once per giant.
  std::vector<const RnsPoly*> x0, x1;
  if (!fused) {
    for (std::uint32_t b : baby_list) {
      x0.push_back(&baby(b, 0));
      x1.push_back(&baby(b, 1));
    }
  }
  std::vector<std::array<RnsPoly, 2>> extra;  // the second and later parts of long rows
  // E_g for order[first, first + count) into sums[0, count).
  auto batch_sums = [&](std::size_t first, std::size_t count) {
    std::vector<std::vector<const RnsPoly*>> rows;
    std::vector<std::unique_ptr<RnsPoly>> expanded;  // this batch's lazy diagonals, made whole
    std::vector<RnsPoly*> out0, out1;
    std::vector<std::size_t> owner;  // the sum each extra part adds to
    std::size_t parts = 0;
    for (std::size_t i = 0; i < count; ++i) {
      const auto& row = plain_.at(order[first + i]);
      std::size_t terms = 0;
      for (std::size_t j = 0; j < baby_list.size(); ++j) {
        const auto it = row.find(baby_list[j]);
        if (it == row.end()) continue;
        if (terms % kRowTerms == 0) {
          rows.emplace_back(baby_list.size(), nullptr);
          if (terms == 0) {
            for (int c = 0; c < 2; ++c)
              ops.reshape(sums[i][c], qp, true);
            out0.push_back(&sums[i][0]);
            out1.push_back(&sums[i][1]);
          } else {
            if (extra.size() <= parts) extra.emplace_back();
            for (int c = 0; c < 2; ++c)
              ops.reshape(extra[parts][c], qp, true);
            out0.push_back(&extra[parts][0]);
            out1.push_back(&extra[parts][1]);
            owner.push_back(i);
            ++parts;
          }
        }
        if (const auto* coeffs = lazy_at(order[first + i], baby_list[j])) {
          expanded.push_back(std::make_unique<RnsPoly>());
          ops.expand_coefficients(*coeffs, qp, *expanded.back());
          rows.back()[j] = expanded.back().get();
        } else {
          rows.back()[j] = &it->second;
        }
        ++terms;
      }
    }
    ops.inner_product_rows(rows, x0, x1, out0, out1);
    for (std::size_t e = 0; e < parts; ++e) {
      for (int c = 0; c < 2; ++c)
        ops.add(sums[owner[e]][c], extra[e][c], sums[owner[e]][c]);
    }
  };
  // (e0, e1) <- rot_step(e0, e1), over Q_l P.
  RnsPoly v0, v1, r0, r1;
  auto rotate_sum = [&](std::uint32_t step, RnsPoly& e0, RnsPoly& e1) {
    const std::uint64_t galois = rotation_galois_element(*context_, static_cast<int>(step));
    const auto giant_digits = evaluator.mod_up(evaluator.mod_down(e1, level_));
    rotate_extended(evaluator, giant_digits, keys.at(galois), galois, e0, v0, v1, r0, r1);
    std::swap(e0, r0);
    std::swap(e1, r1);
  };
  std::array<RnsPoly, 2> total, chain;
  bool any = false, in_chain = false;
  auto add_to = [&](std::array<RnsPoly, 2>& to, bool& started, std::array<RnsPoly, 2>& e) {
    if (!started) {
      std::swap(to, e);
      started = true;
    } else {
      ops.add(to[0], e[0], to[0]);
      ops.add(to[1], e[1], to[1]);
    }
  };
  for (std::size_t first = 0; first < order.size(); first += kBatch) {
    const std::size_t count = std::min(kBatch, order.size() - first);
    if (!fused) batch_sums(first, count);
    for (std::size_t c = 0; c < count; ++c) {
      const std::size_t i = fused ? first + c : c;  // the sum's place in sums
      const std::uint32_t g = order[first + c];
      if (g == 0) {
        add_to(total, any, sums[i]);
      } else if (!chained_) {
        rotate_sum(g, sums[i][0], sums[i][1]);
        add_to(total, any, sums[i]);
      } else {
        // chain <- rot_key(chain + E_g); the chain ends at m = 1 (g = n1 or slots - n1).
        add_to(chain, in_chain, sums[i]);
        const bool up = g <= slots_ / 2;
        rotate_sum(up ? n1_ : slots_ - n1_, chain[0], chain[1]);
        if (g == n1_ || g == slots_ - n1_) {
          add_to(total, any, chain);
          in_chain = false;
        }
      }
    }
  }
  Ciphertext out;
  out.scale = x.scale * scale_;
  out.slots = slots_;
  if (rescale) {
    require(level_ >= 1, ErrorCode::invalid_argument, "cannot rescale at level 0");
    out.scale /= static_cast<double>(context_->prime(level_));
    out.c = {evaluator.mod_down_rescale(total[0], level_),
             evaluator.mod_down_rescale(total[1], level_)};
  } else {
    out.c = {evaluator.mod_down(total[0], level_), evaluator.mod_down(total[1], level_)};
  }
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
