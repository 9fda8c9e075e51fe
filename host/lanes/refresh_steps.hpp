// Steps shared by the lanes' refresh (refresh.cpp) and the mod-2^n baseline's (baseline.cpp):
// one implementation each, so that the comparison of the two measures their representations and
// not two codings of the same step; and the operand alignment the lane and digit evaluators
// share. Internal to the library.
#pragma once

#include <cstdint>
#include <utility>

#include "safhire/ckks/bootstrap.hpp"
#include "safhire/ckks/ckks.hpp"
#include "safhire/ckks/polynomial.hpp"
#include "safhire/lanes/context.hpp"

namespace safhire::lanes::detail {

// The exact integer polynomial of `coeffs` (N signed words) at `level`, scale 1.
ckks::Plaintext integer_plaintext(const ckks::CkksContext& context, const ckks::RnsOps& ops,
                                  const ckks::RnsOps::Coefficients& coeffs, std::uint32_t level);

// Y^k = X^(k N/n) for any integer k (Y^n = -1) as the exact integer plaintext at `level`: a digit
// shift of every lane with the negacyclic sign, no level.
ckks::Plaintext monomial_plaintext(const LaneContext& context, const ckks::RnsOps& ops,
                                   std::int64_t k, std::uint32_t level);

// The reduction's plaintext T = round(q_0 q_1 t^-1 / S) at level 1 for form S at scale `scale`
// (refresh.hpp, step 2), t = Y^m - beta:
//  - in Z[Y]/(Y^n + 1) (truncated = false): t^-1 = -sum_(j < n/m) beta^(n/m-1-j) Y^(m j) / p;
//  - in Z[Y]/(Y^d) for d = `truncated_digits` (truncated = true, m = 1): the power series
//    t^-1 = -sum_(j < d) beta^-(j+1) Y^j, the inverse of t modulo Y^d (baseline.hpp).
// Coefficients below 1/2 are 0. Error(invalid_argument) for a scale too small for the words.
ckks::Plaintext reduction_plaintext(const LaneContext& context, const ckks::RnsOps& ops,
                                    double scale, bool truncated = false,
                                    std::uint32_t truncated_digits = 0);

// ModRaise of a level-0 ciphertext to the top, through the ephemeral secret where the space has
// one (the sparse-secret encapsulation).
ckks::Ciphertext raise(const LaneContext& context, const ckks::Evaluator& evaluator,
                       const ckks::Ciphertext& low, const ckks::BootstrapKeys& keys);

// The cleaning of one real part: K v - sin(2 pi K v) / (2 pi) at the rest scale, for v the
// digits / K.
ckks::Ciphertext clean(const LaneContext& context, const ckks::Evaluator& evaluator,
                       const ckks::DoubleAngleSine& sine, const ckks::Ciphertext& part,
                       const ckks::SwitchingKey& rlk);

// Scales equal to 2^-40 (what CKKS additions accept).
bool same_scale(double a, double b);

// x and y at one level and scale, ready to add: the higher one dropped to the lower's level, its
// scale matched by one exact constant product and rescale where the scales differ.
// Error(invalid_argument) for two ciphertexts at one level with different scales.
std::pair<ckks::Ciphertext, ckks::Ciphertext> aligned(const ckks::CkksContext& context,
                                                      const ckks::Evaluator& evaluator,
                                                      const ckks::Ciphertext& x,
                                                      const ckks::Ciphertext& y);

}  // namespace safhire::lanes::detail
