// Lane spaces: the message space of the lanes (the second seed, "Stay in Your Lane", and
// ../reference/lanes.md sections 1-2) as data. A ciphertext of the ring Z[X]/(X^N + 1) holds N/n
// lanes, each an integer A modulo p = beta^n + 1 written as its digit polynomial
// a(Y) = sum_t a_t Y^t, Y = X^(N/n), a(beta) = A mod p (the wrap-around beta^n = -1 is the
// negacyclic Y^n = -1). The lanes are the intermediate state of the homomorphic DFT: with
// sigma_N = C o L (L the first log2(n/2) stages of SlotToCoeff, blockwise, and C the last
// log2(N/n), across the blocks), "form B" slots hold sigma_n(a_r) in the contiguous block of n/2
// slots number rev(r) (r's log2(N/n) bits reversed), so that one CKKS product multiplies every
// lane negacyclically at once, and a refresh runs only the stages it needs (refresh.hpp).
//
// A space fixes N, n, beta, the digits an encoding writes, the number of products between
// refreshes, and the CKKS chain laid out for its refresh, bottom to top:
//   q_0 | q_1: the drop to level 0 (x q_0 t^-1) | C's groups | the products | L's groups |
//   the digit cleaning (a double-angle sine) | [conversion levels] | CoeffToSlot's groups (the
//   top),
// the conversion levels only in a space whose refresh converts between the cleaning and
// CoeffToSlot (the mod-2^n baseline, baseline.hpp; none for the lanes' own refresh).
// Its security is that of the chain (ckks/params.hpp); a space below 128 bits is refused unless
// the caller opts in.
#pragma once

#include <gmpxx.h>

#include <cstdint>
#include <string>
#include <vector>

#include "safhire/ckks/params.hpp"

namespace safhire::lanes {

// How an encoding writes an integer A in [0, p): its canonical digits 0 <= a_t < beta (the value
// p - 1 = beta^n, which has no n-digit form, as a_0 = -1: beta^n = -1), or balanced digits
// -floor(beta/2) <= a_t <= ceil(beta/2) - 1 (the carries of the balancing wrap around with the
// negacyclic sign). Either decodes by a(beta) mod p: any digits do.
enum class DigitForm : std::uint8_t { canonical = 0, balanced = 1 };

// The refresh's digit cleaning: x - sin(2 pi x) / (2 pi) on |x| <= k, the sine by a Chebyshev
// interpolant of the given degree and `double_angles` double angles (ckks::DoubleAngleSine).
struct CleaningPlan {
  double k = 0;
  std::uint32_t degree = 0;
  std::uint32_t double_angles = 0;
  std::uint32_t depth() const;
};

struct LaneSpace {
  std::string name;
  ckks::CkksParams ckks;          // the chain, laid out as above
  std::uint32_t lane_degree = 0;  // n: a power of two, 8 <= n <= N/4
  std::uint64_t base = 2;         // beta >= 2
  // m: the plaintext polynomial t = Y^m - beta, a power of two with m <= n / 2. m = 1 holds
  // integers modulo p = beta^n + 1; m > 1 holds Z_p[Y]/(Y^m - beta) with p = beta^(n/m) + 1 (a
  // field space when p is prime: fields.hpp), whose element c(Y) = sum_(i<m) c_i Y^i a lane writes
  // as the digits a_(i + m j) of each c_i (Y^(m j) = beta^j).
  std::uint32_t t_degree = 1;
  DigitForm digits = DigitForm::balanced;
  std::uint32_t products_per_refresh = 1;  // levels between the refresh's output and its input
  // The Hamming weight h' of the refresh's ephemeral secret (the sparse-secret encapsulation of
  // bootstrapping), or 0 when the set's own secret is sparse enough to raise directly.
  std::uint32_t ephemeral_weight = 32;
  // DFT stages per group, in the order of application: C (SlotToCoeff on stages
  // [log2(n/2), log2(N/2))), L (SlotToCoeff on [0, log2(n/2))), CoeffToSlot (all stages).
  std::vector<std::uint32_t> c_split, l_split, cts_split;
  CleaningPlan cleaning;
  // Levels between the cleaning and CoeffToSlot for a refresh that converts there (baseline.hpp);
  // 0 for the lanes' refresh (LaneRefresher refuses others).
  std::uint32_t conversion_levels = 0;

  std::uint32_t degree() const { return ckks.degree(); }          // N
  std::uint32_t lanes() const { return degree() / lane_degree; }  // N / n
  std::uint32_t lane_slots() const { return lane_degree / 2; }    // n / 2 slots a lane
  // log2(N/n) stages of C and log2(n/2) of L.
  std::uint32_t c_stages() const;
  std::uint32_t l_stages() const;
  // Levels: the refresh takes its input at refresh_level() (C's groups and the drop below it),
  // gives its output (and fresh encryptions are made) at rest_level(), products_per_refresh()
  // above; the top is the chain's.
  std::uint32_t refresh_level() const { return static_cast<std::uint32_t>(c_split.size()) + 1; }
  std::uint32_t rest_level() const { return refresh_level() + products_per_refresh; }
  std::uint32_t top() const { return ckks.max_level(); }
  // The levels the layout needs above q_0 (the chain has exactly these).
  std::uint32_t levels_needed() const;
  // The weight of the secret that ModRaise sees: h' with the encapsulation, else the set's.
  std::uint32_t raise_weight() const;

  mpz_class modulus() const;  // p = beta^(n/m) + 1 (beta^n + 1 for integers)
  std::uint32_t coefficient_digits() const { return lane_degree / t_degree; }  // n / m
  std::size_t modulus_bits() const;
  // The digits a refresh leaves, in absolute value: (beta + 1) (h + 1) / 2 for h = raise_weight()
  // (the reduction mod t = Y^m - beta after ModRaise, refresh.hpp; |t|_1 = beta + 1 for every
  // m), a bound that always holds.
  double rest_digit_bound() const;
  double security_bits() const { return ckks::estimated_security(ckks); }

  // Error(invalid_parameters) with the reason for a malformed space (n, beta, the splits, a chain
  // that does not match the layout), Error(insecure_parameters) below 128 bits unless allowed.
  void validate(bool allow_insecure = false) const;
};

// Options of make_lane_space: the prime sizes of each part of the chain (bits), and the rest.
struct LaneSpaceOptions {
  DigitForm digits = DigitForm::balanced;
  std::uint32_t t_degree = 1;  // m: t = Y^m - beta
  std::uint32_t products_per_refresh = 1;
  std::uint32_t ephemeral_weight = 32;
  std::uint32_t hamming_weight = 192;  // the main secret's
  int q0_bits = 60, rest_bits = 50, c_bits = 52, l_bits = 45, clean_bits = 57, cts_bits = 56;
  int p_bits = 60;
  // At most this many DFT stages in one group (a group of s stages has up to 2^(s+1) - 1
  // diagonals and takes one level): in C's and L's groups, which run at low levels, and in
  // CoeffToSlot's, at the top.
  std::uint32_t max_stages = 5, cts_max_stages = 5;
  // dnum: 0 picks the fewest digits whose special primes keep log2 QP within the 128-bit bound
  // (the fewer the digits, the cheaper a key switch), or the most (at most 16) when none does.
  std::uint32_t dnum = 0;
  std::uint32_t conversion_levels = 0;  // LaneSpace::conversion_levels
  // The conversion levels' primes (0: cts_bits), and the lowest `truncation_levels` of the levels
  // at rest on primes of `truncation_bits` (0: rest_bits): the baseline's (baseline.hpp), whose
  // conversions need less precision than its modulus has room for.
  int conversion_bits = 0;
  std::uint32_t truncation_levels = 0;
  int truncation_bits = 0;
};

// The space of N = 2^log_n, lane degree n and base beta, with the chain its refresh needs: the
// splits as even as possible (the larger groups first), the cleaning on |x| <= K for
// K = rest_digit_bound() + 1/2 with r = ceil(log2(K / 1.6)) double angles and the smallest degree
// whose interpolation error (times 4^r) is below 2^-32. Error(invalid_parameters) for n, beta or
// options out of range.
LaneSpace make_lane_space(std::string name, std::uint32_t log_n, std::uint32_t n,
                          std::uint64_t beta, const LaneSpaceOptions& options = {});

// The named spaces at N = 2^16 (128-bit): integers modulo 2^4096 + 1 in 16, 32 and 64 lanes
// (n = 4096, 2048, 1024 with beta = 2, 4, 16) and modulo 64^4096 + 1 (24,577 bits, 16 lanes).
const std::vector<LaneSpace>& named_lane_spaces();
// Spaces at N = 2^12 for tests and CI, far below 128 bits (a context needs allow_insecure).
const std::vector<LaneSpace>& test_lane_spaces();
// Field spaces (t = Y^m - beta, p = beta^(n/m) + 1 prime; fields.hpp): at N = 2^16 (128-bit),
// and at N = 2^12 for tests (insecure).
const std::vector<LaneSpace>& named_field_spaces();
const std::vector<LaneSpace>& test_field_spaces();
// The space of that name among the four lists; Error(invalid_argument) listing the names
// otherwise.
const LaneSpace& named_lane_space(const std::string& name);

// The lane order: lane r lives in slot block rev(r) (log2(N/n) bits), slots [b n/2, (b+1) n/2).
std::uint32_t block_of_lane(const LaneSpace& space, std::uint32_t lane);
std::uint32_t lane_of_block(const LaneSpace& space, std::uint32_t block);
// Form A (convert.hpp): the slot of digit t < n/2 of lane r, position rev(t) (log2(n/2) bits)
// within the lane's block. Error(invalid_argument) for t or r out of range.
std::uint32_t slot_of_digit(const LaneSpace& space, std::uint32_t lane, std::uint32_t t);

}  // namespace safhire::lanes
