#include "safhire/lanes/lane_space.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <numeric>
#include <string>

#include "safhire/ckks/polynomial.hpp"
#include "safhire/core/error.hpp"

namespace safhire::lanes {

namespace {

std::uint32_t sum(const std::vector<std::uint32_t>& v) {
  return std::accumulate(v.begin(), v.end(), 0U);
}

// `stages` in groups of at most `most`, as even as possible, the larger first.
std::vector<std::uint32_t> even_split(std::uint32_t stages, std::uint32_t most) {
  if (stages == 0) return {};
  const std::uint32_t groups = (stages + most - 1) / most;
  std::vector<std::uint32_t> sizes(groups, stages / groups);
  for (std::uint32_t g = 0; g < stages % groups; ++g)
    ++sizes[g];
  return sizes;
}

std::uint32_t reverse_bits(std::uint32_t x, std::uint32_t bits) {
  std::uint32_t r = 0;
  for (std::uint32_t b = 0; b < bits; ++b)
    r |= ((x >> b) & 1U) << (bits - 1 - b);
  return r;
}

// The cleaning for digits up to `bound`: K = bound + 1/2, r double angles so that K / 2^r <= 1.6,
// the smallest interpolant degree whose error after them is within 2^-32, or within 4^r 2^-48
// where r is large (the double-precision interpolant's own floor, about 2^-50, grown by 4^r).
CleaningPlan plan_cleaning(double bound) {
  CleaningPlan plan;
  plan.k = bound + 0.5;
  plan.double_angles =
      plan.k <= 1.6 ? 0U : static_cast<std::uint32_t>(std::ceil(std::log2(plan.k / 1.6)));
  const double target = std::max(std::exp2(-32.0), std::exp2(2.0 * plan.double_angles - 48));
  for (const std::uint32_t degree : {7U, 15U, 23U, 31U, 39U, 47U, 55U, 63U}) {
    plan.degree = degree;
    const ckks::DoubleAngleSine sine(plan.k, degree, plan.double_angles);
    if (sine.interpolation_error() <= target) break;
  }
  return plan;
}

}  // namespace

std::uint32_t CleaningPlan::depth() const {
  return ckks::PolynomialEvaluator::depth(degree, true) + double_angles;
}

std::uint32_t LaneSpace::c_stages() const {
  return ckks.log_n - static_cast<std::uint32_t>(std::countr_zero(lane_degree));
}

std::uint32_t LaneSpace::l_stages() const {
  return static_cast<std::uint32_t>(std::countr_zero(lane_degree)) - 1;
}

std::uint32_t LaneSpace::levels_needed() const {
  return rest_level() + static_cast<std::uint32_t>(l_split.size()) + cleaning.depth() +
         conversion_levels + static_cast<std::uint32_t>(cts_split.size());
}

std::uint32_t LaneSpace::raise_weight() const {
  if (ephemeral_weight > 0) return ephemeral_weight;
  return ckks.secret == ckks::SecretDistribution::fixed_hamming_weight ? ckks.hamming_weight : 0;
}

mpz_class LaneSpace::modulus() const {
  mpz_class p;
  mpz_ui_pow_ui(p.get_mpz_t(), base, coefficient_digits());
  return p + 1;
}

std::size_t LaneSpace::modulus_bits() const {
  return mpz_sizeinbase(modulus().get_mpz_t(), 2);
}

double LaneSpace::rest_digit_bound() const {
  return (static_cast<double>(base) + 1) * (raise_weight() + 1) / 2;
}

void LaneSpace::validate(bool allow_insecure) const {
  const std::string what = "lane space '" + name + "': ";
  const std::uint32_t n_degree = ckks.log_n >= 10 && ckks.log_n <= 17 ? degree() : 0;
  require(n_degree != 0, ErrorCode::invalid_parameters, what + "log2 N must be in [10, 17]");
  require(std::has_single_bit(lane_degree) && lane_degree >= 8 && lane_degree <= n_degree / 4,
          ErrorCode::invalid_parameters,
          what + "the lane degree n must be a power of two in [8, N/4 = " +
              std::to_string(n_degree / 4) + "], got " + std::to_string(lane_degree));
  require(base >= 2 && base <= (std::uint64_t{1} << 30), ErrorCode::invalid_parameters,
          what + "the base beta must be in [2, 2^30], got " + std::to_string(base));
  require(std::has_single_bit(t_degree) && t_degree <= lane_degree / 2,
          ErrorCode::invalid_parameters,
          what + "the degree m of t = Y^m - beta must be a power of two in [1, n/2 = " +
              std::to_string(lane_degree / 2) + "], got " + std::to_string(t_degree));
  require(products_per_refresh >= 1 && products_per_refresh <= 8, ErrorCode::invalid_parameters,
          what + "products per refresh must be in [1, 8]");
  require(conversion_levels <= 8, ErrorCode::invalid_parameters,
          what + "at most 8 conversion levels");
  require(raise_weight() >= 1, ErrorCode::invalid_parameters,
          what +
              "the refresh raises a sparse secret: an ephemeral weight, or a set whose secret "
              "has a fixed Hamming weight");
  require(ephemeral_weight <= n_degree, ErrorCode::invalid_parameters,
          what + "the ephemeral weight must be at most N");
  require(sum(c_split) == c_stages() && sum(l_split) == l_stages() &&
              sum(cts_split) == ckks.log_n - 1 && !cts_split.empty() && !c_split.empty(),
          ErrorCode::invalid_parameters,
          what + "the splits must cover C's " + std::to_string(c_stages()) + ", L's " +
              std::to_string(l_stages()) + " and CoeffToSlot's " + std::to_string(ckks.log_n - 1) +
              " stages");
  for (const auto* split : {&c_split, &l_split, &cts_split}) {
    require(std::find(split->begin(), split->end(), 0U) == split->end(),
            ErrorCode::invalid_parameters, what + "a DFT group needs at least one stage");
  }
  require(cleaning.k >= rest_digit_bound() && cleaning.degree >= 2 && cleaning.double_angles <= 30,
          ErrorCode::invalid_parameters,
          what + "the cleaning must cover the digits a refresh leaves, |x| <= " +
              std::to_string(rest_digit_bound()));
  // A product of two refreshed ciphertexts, n D^2, stays exact in the decoder's long double.
  const double d = rest_digit_bound();
  require(static_cast<double>(lane_degree) * d * d <= std::exp2(44.0),
          ErrorCode::invalid_parameters,
          what + "a product's digits, n D^2 for D = " + std::to_string(d) +
              ", would exceed 2^44: a smaller base or lane degree");
  require(levels_needed() == top(), ErrorCode::invalid_parameters,
          what + "the layout needs " + std::to_string(levels_needed()) +
              " levels above q_0, the CKKS set '" + ckks.name + "' has " + std::to_string(top()));
  ckks.validate(allow_insecure);
}

LaneSpace make_lane_space(std::string name, std::uint32_t log_n, std::uint32_t n,
                          std::uint64_t beta, const LaneSpaceOptions& options) {
  require(log_n >= 10 && log_n <= 17, ErrorCode::invalid_parameters,
          "lane space: log2 N must be in [10, 17]");
  require(
      std::has_single_bit(n) && n >= 8 && n <= (1U << log_n) / 4, ErrorCode::invalid_parameters,
      "lane space: the lane degree n must be a power of two in [8, N/4], got " + std::to_string(n));
  require(options.max_stages >= 1 && options.max_stages <= 8 && options.cts_max_stages >= 1 &&
              options.cts_max_stages <= 8,
          ErrorCode::invalid_parameters, "lane space: at most 1 .. 8 stages a group");
  LaneSpace s;
  s.name = std::move(name);
  s.lane_degree = n;
  s.base = beta;
  s.digits = options.digits;
  s.t_degree = options.t_degree;
  require(std::has_single_bit(s.t_degree) && s.t_degree <= n / 2, ErrorCode::invalid_parameters,
          "lane space: the degree m of t = Y^m - beta must be a power of two in [1, n/2], got " +
              std::to_string(s.t_degree));
  s.products_per_refresh = options.products_per_refresh;
  s.ephemeral_weight = options.ephemeral_weight;
  s.conversion_levels = options.conversion_levels;
  s.ckks.name = s.name;
  s.ckks.log_n = log_n;
  s.ckks.secret = ckks::SecretDistribution::fixed_hamming_weight;
  s.ckks.hamming_weight = options.hamming_weight;
  s.ckks.log_scale = options.rest_bits;
  const auto l_stages = static_cast<std::uint32_t>(std::countr_zero(n)) - 1;
  s.c_split = even_split(log_n - 1 - l_stages, options.max_stages);
  s.l_split = even_split(l_stages, options.max_stages);
  s.cts_split = even_split(log_n - 1, options.cts_max_stages);
  s.cleaning = plan_cleaning(s.rest_digit_bound());
  // The chain, bottom to top.
  auto& q = s.ckks.q_bits;
  q.push_back(options.q0_bits);
  q.push_back(options.rest_bits);  // the drop to level 0 rescales by q_1
  q.insert(q.end(), s.c_split.size(), options.c_bits);
  const std::uint32_t truncation = std::min(options.truncation_levels, s.products_per_refresh - 1);
  q.insert(q.end(), truncation,
           options.truncation_bits != 0 ? options.truncation_bits : options.rest_bits);
  q.insert(q.end(), s.products_per_refresh - truncation, options.rest_bits);
  q.insert(q.end(), s.l_split.size(), options.l_bits);
  q.insert(q.end(), s.cleaning.depth(), options.clean_bits);
  q.insert(q.end(), s.conversion_levels,
           options.conversion_bits != 0 ? options.conversion_bits : options.cts_bits);
  q.insert(q.end(), s.cts_split.size(), options.cts_bits);
  // Special primes: one per prime of a digit (so P exceeds every digit's product), as few digits
  // as the 128-bit bound allows.
  const auto primes = static_cast<std::uint32_t>(q.size());
  auto with_dnum = [&](std::uint32_t dnum) {
    s.ckks.dnum = dnum;
    s.ckks.p_bits.assign(s.ckks.alpha(), options.p_bits);
  };
  // At most 16 digits (CkksParams::validate).
  const std::uint32_t most = std::min(primes, 16U);
  if (options.dnum != 0) {
    with_dnum(std::min(options.dnum, most));
  } else {
    for (std::uint32_t dnum = 1; dnum <= most; ++dnum) {
      with_dnum(dnum);
      if (ckks::estimated_security(s.ckks) >= 128) break;
    }
  }
  return s;
}

const std::vector<LaneSpace>& named_lane_spaces() {
  static const std::vector<LaneSpace> spaces = [] {
    std::vector<LaneSpace> v;
    // Integers modulo 2^4096 + 1 (4097 bits): 16, 32 and 64 lanes a ciphertext.
    v.push_back(make_lane_space("lanes-n16-4096-b2", 16, 4096, 2));
    v.push_back(make_lane_space("lanes-n16-2048-b4", 16, 2048, 4));
    v.push_back(make_lane_space("lanes-n16-1024-b16", 16, 1024, 16));
    // The seed's largest modulus, 64^4096 + 1 (24,577 bits): digits up to 65 x 16.5, a deeper
    // cleaning (15 levels), on 50-bit primes to stay within log2 QP <= 1550.
    LaneSpaceOptions wide;
    wide.clean_bits = 50;
    wide.cts_bits = 52;
    v.push_back(make_lane_space("lanes-n16-4096-b64", 16, 4096, 64, wide));
    return v;
  }();
  return spaces;
}

const std::vector<LaneSpace>& test_lane_spaces() {
  static const std::vector<LaneSpace> spaces = [] {
    LaneSpaceOptions test;
    test.dnum = 4;  // the N = 2^16 spaces' digits, without their security
    std::vector<LaneSpace> v;
    v.push_back(make_lane_space("lanes-n12-256-b2", 12, 256, 2, test));
    v.push_back(make_lane_space("lanes-n12-8-b2", 12, 8, 2, test));
    v.push_back(make_lane_space("lanes-n12-1024-b2", 12, 1024, 2, test));
    v.push_back(make_lane_space("lanes-n12-64-b16", 12, 64, 16, test));
    // Five levels at rest: room for the digit conversions' L^-1 and L (two groups each) and a
    // slot-wise function between them (convert.hpp).
    test.products_per_refresh = 5;
    v.push_back(make_lane_space("lanes-n12-256-b2-k5", 12, 256, 2, test));
    return v;
  }();
  return spaces;
}

const std::vector<LaneSpace>& named_field_spaces() {
  static const std::vector<LaneSpace> spaces = [] {
    std::vector<LaneSpace> v;
    LaneSpaceOptions field;
    // F_65537 = F_(2^16 + 1), the Fermat prime: beta = 2, 16 digits a coefficient, m = 256 copies
    // of F_p in each of the 16 lanes (Y^256 - 2 splits: 2^16 | p - 1), 4096 a ciphertext.
    field.t_degree = 256;
    v.push_back(make_lane_space("field-n16-65537", 16, 4096, 2, field));
    // p = 46^512 + 1 (2829 bits, a generalized Fermat prime): m = 8 copies in each of 16 lanes.
    // Digits up to 47 x 16.5 need a deeper cleaning: on 50-bit primes, as for 64^4096 + 1, the
    // chain keeps 128 bits with 7 key-switching digits (9 on the default primes).
    field.t_degree = 8;
    LaneSpaceOptions wide = field;
    wide.clean_bits = 50;
    wide.cts_bits = 52;
    v.push_back(make_lane_space("field-n16-46^512", 16, 4096, 46, wide));
    // p = 234^128 + 1 (1008 bits): m = 8 copies in each of 64 lanes; digits up to 235 x 16.5,
    // 50-bit cleaning primes too (16 digits and 123 bits on the default ones).
    v.push_back(make_lane_space("field-n16-234^128", 16, 1024, 234, wide));
    // F_(257^32): p = 2^8 + 1, m = 512; Y^512 - 2 is 16 irreducible binomials Y^32 - gamma
    // (2^8 || p - 1), 16 extension-field elements a lane, 256 a ciphertext.
    field.t_degree = 512;
    v.push_back(make_lane_space("field-n16-257^32", 16, 4096, 2, field));
    return v;
  }();
  return spaces;
}

const std::vector<LaneSpace>& test_field_spaces() {
  static const std::vector<LaneSpace> spaces = [] {
    LaneSpaceOptions test;
    test.dnum = 4;
    std::vector<LaneSpace> v;
    test.t_degree = 4;  // F_65537: 4 copies in each of 64 lanes
    v.push_back(make_lane_space("field-n12-65537", 12, 64, 2, test));
    test.t_degree = 2;  // 234^128 + 1 (1008 bits): 2 copies in each of 16 lanes
    v.push_back(make_lane_space("field-n12-234^128", 12, 256, 234, test));
    test.t_degree = 32;  // F_(257^2): 16 a lane, 16 lanes
    v.push_back(make_lane_space("field-n12-257^2", 12, 256, 2, test));
    test.t_degree = 16;  // F_(17^8): 2 a lane, 64 lanes
    v.push_back(make_lane_space("field-n12-17^8", 12, 64, 2, test));
    return v;
  }();
  return spaces;
}

const LaneSpace& named_lane_space(const std::string& name) {
  std::string names;
  for (const auto* list :
       {&named_lane_spaces(), &test_lane_spaces(), &named_field_spaces(), &test_field_spaces()}) {
    for (const auto& s : *list) {
      if (s.name == name) return s;
      names += (names.empty() ? "" : ", ") + s.name;
    }
  }
  throw Error(ErrorCode::invalid_argument, "no lane space '" + name + "'; known: " + names);
}

std::uint32_t block_of_lane(const LaneSpace& space, std::uint32_t lane) {
  require(
      lane < space.lanes(), ErrorCode::invalid_argument,
      "lane " + std::to_string(lane) + " outside the " + std::to_string(space.lanes()) + " lanes");
  return reverse_bits(lane, space.c_stages());
}

std::uint32_t lane_of_block(const LaneSpace& space, std::uint32_t block) {
  require(block < space.lanes(), ErrorCode::invalid_argument,
          "block " + std::to_string(block) + " outside the " + std::to_string(space.lanes()) +
              " blocks");
  return reverse_bits(block, space.c_stages());
}

std::uint32_t slot_of_digit(const LaneSpace& space, std::uint32_t lane, std::uint32_t t) {
  require(t < space.lane_slots(), ErrorCode::invalid_argument,
          "digit " + std::to_string(t) + " beyond n/2 = " + std::to_string(space.lane_slots()));
  return block_of_lane(space, lane) * space.lane_slots() + reverse_bits(t, space.l_stages());
}

}  // namespace safhire::lanes
