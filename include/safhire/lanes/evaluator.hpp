// Lane arithmetic in form B: each operation acts on every lane at once, as integers modulo
// beta^n + 1, and updates the result's digit bound (exact, worst case) and noise (noise.hpp).
//
//   add, sub, negate          slot-wise: D = D_x + D_y
//   multiply (ct x ct)        tensor, relinearize, rescale: N/n negacyclic lane products,
//                             one level, D = n D_x D_y
//   multiply_integer          one integer c for every lane: the exact integer polynomial
//                             c(Y) = c(X^(N/n)) as a plaintext, no level, D = |c|_1 D_x
//   multiply_integers         one integer per lane: form-B slots encoded at q_level, one level
//   multiply_digits           one digit polynomial per lane (a field element's, fields.hpp), the
//                             same way
//   multiply_monomial         Y^k: the exact monomial X^(k N/n), a digit shift with the
//                             negacyclic sign, no level, no rotation
//   rotate_lanes              a rotation by m n/2 slots: the lane in block b takes block b + m's
//                             (blocks hold lanes in bit-reversed order: block_of_lane)
//
// Operands at different levels meet at the lower one (its scale taken by the other with one
// exact constant product where the scales differ). A result that could not be refreshed exactly
// afterwards is refused with Error(needs_refresh) saying why: below the refresh level, digits
// beyond what the modulus holds at the refresh's first steps, or noise beyond what the cleaning
// takes (NoiseModel::max_refresh_input). With a refresher set (set_refresher), the evaluator
// refreshes an operand instead (the one with the fewer levels, or both) and goes on; where even
// refreshed operands are refused (a space whose large digits leave a refreshed ciphertext no room
// for a product), it says so with Error(needs_refresh) instead of refreshing again.
#pragma once

#include <gmpxx.h>

#include <cstdint>
#include <span>
#include <string>
#include <tuple>
#include <utility>

#include "safhire/ckks/ckks.hpp"
#include "safhire/lanes/ciphertext.hpp"
#include "safhire/lanes/encoder.hpp"
#include "safhire/lanes/noise.hpp"
#include "safhire/lanes/refresh.hpp"

namespace safhire::lanes {

class LaneEvaluator {
 public:
  LaneEvaluator(const LaneContext& context, const ckks::RnsOps& ops);

  const LaneContext& context() const { return *context_; }
  const ckks::Evaluator& ckks_evaluator() const { return evaluator_; }

  // Refresh operands automatically where an operation would otherwise be refused (nullptr: never;
  // the refresher and keys must outlive this evaluator's use of them). Counts the refreshes.
  void set_refresher(const LaneRefresher* refresher, const LaneKeys* keys);
  std::size_t refreshes() const { return refreshes_; }

  LaneCiphertext add(const LaneCiphertext& x, const LaneCiphertext& y) const;
  LaneCiphertext sub(const LaneCiphertext& x, const LaneCiphertext& y) const;
  LaneCiphertext negate(const LaneCiphertext& x) const;
  LaneCiphertext multiply(const LaneCiphertext& x, const LaneCiphertext& y,
                          const ckks::SwitchingKey& rlk) const;
  // c in every lane: an integer, or the constant c of a field space's ring; no level.
  LaneCiphertext multiply_integer(const LaneCiphertext& x, const mpz_class& c) const;
  // At most lanes() integers, missing lanes 0.
  LaneCiphertext multiply_integers(const LaneCiphertext& x, std::span<const mpz_class> c) const;
  // Exactly lanes() rows of n digits (any integers: D = max_r |row_r|_1 D_x), one level.
  LaneCiphertext multiply_digits(const LaneCiphertext& x, const LaneDigits& digits) const;
  // Y^k for any integer k (Y^n = -1).
  LaneCiphertext multiply_monomial(const LaneCiphertext& x, std::int64_t k) const;
  LaneCiphertext rotate_lanes(const LaneCiphertext& x, int blocks,
                              const ckks::GaloisKeys& keys) const;

  // Why an operation's result (at `level`, with digit bound `bound` and `noise`) could not be
  // refreshed exactly: the empty string when it can.
  std::string refusal(std::uint32_t level, double bound, double noise) const;
  // Why multiply(x, y) would be refused (the empty string when it would not): what a caller that
  // schedules its own refreshes asks before a product.
  std::string multiply_refusal(const LaneCiphertext& x, const LaneCiphertext& y) const;

 private:
  void check_space(const LaneCiphertext& x) const;
  // x and y at one level and scale (the lower level; the other's scale matched).
  std::pair<ckks::Ciphertext, ckks::Ciphertext> aligned(const LaneCiphertext& x,
                                                        const LaneCiphertext& y) const;
  // The result of an operation, or its refusal (Error(needs_refresh)).
  LaneCiphertext checked(ckks::Ciphertext ct, double bound, double noise, const char* what) const;
  // x refreshed, counted.
  LaneCiphertext refreshed(const LaneCiphertext& x) const;
  // Error(needs_refresh) when an operation is refused (why) on operands just refreshed: the space
  // leaves no room for it, and refreshing again would not help.
  void still_refused(const std::string& why, const char* what) const;
  // The level, digit bound and noise of x y.
  std::tuple<std::uint32_t, double, double> product_result(const LaneCiphertext& x,
                                                           const LaneCiphertext& y) const;

  const LaneContext* context_;
  const ckks::RnsOps* ops_;
  ckks::Evaluator evaluator_;
  LaneEncoder encoder_;
  NoiseModel noise_;
  const LaneRefresher* refresher_ = nullptr;
  const LaneKeys* keys_ = nullptr;
  mutable std::size_t refreshes_ = 0;
};

}  // namespace safhire::lanes
