#include "safhire/ckks/params.hpp"

#include <algorithm>
#include <string>

#include "safhire/core/error.hpp"

namespace safhire::ckks {

std::uint32_t CkksParams::alpha() const {
  const auto primes = static_cast<std::uint32_t>(q_bits.size());
  return dnum == 0 ? primes : (primes + dnum - 1) / dnum;
}

int CkksParams::log_qp() const {
  int sum = 0;
  for (int b : q_bits)
    sum += b;
  for (int b : p_bits)
    sum += b;
  return sum;
}

double estimated_security(const CkksParams& params) {
  // Largest log2(QP) at 128 bits for ternary secrets, N = 2^10 .. 2^17.
  static constexpr int kTernary[] = {27, 54, 109, 218, 438, 881, 1772, 3544};
  if (params.log_n < 10 || params.log_n > 17) return 0;
  double max_log_qp = kTernary[params.log_n - 10];
  if (params.secret == SecretDistribution::fixed_hamming_weight) {
    if (params.log_n != 16 || params.hamming_weight < 192) return 0;
    max_log_qp = 1550;
  }
  return 128.0 * max_log_qp / std::max(1, params.log_qp());
}

void CkksParams::validate(bool allow_insecure) const {
  const std::string what = "CKKS set '" + name + "': ";
  require(log_n >= 10 && log_n <= 17, ErrorCode::invalid_parameters,
          what + "log_n must be in [10, 17], got " + std::to_string(log_n));
  require(!q_bits.empty() && q_bits.size() <= 64, ErrorCode::invalid_parameters,
          what + "needs 1 .. 64 ciphertext primes");
  require(p_bits.size() <= 32, ErrorCode::invalid_parameters, what + "at most 32 special primes");
  for (int b : q_bits)
    require(b >= 20 && b <= 61, ErrorCode::invalid_parameters,
            what + "prime sizes must be 20 .. 61 bits, got " + std::to_string(b));
  for (int b : p_bits)
    require(b >= 20 && b <= 61, ErrorCode::invalid_parameters,
            what + "prime sizes must be 20 .. 61 bits, got " + std::to_string(b));
  // At most 16: a key switch's inner product takes up to 16 digit pairs (RnsOps::inner_product).
  require(dnum >= 1 && dnum <= q_bits.size() && dnum <= 16, ErrorCode::invalid_parameters,
          what + "dnum must be in [1, min(L + 1, 16)], got " + std::to_string(dnum));
  require(!p_bits.empty(), ErrorCode::invalid_parameters,
          what + "hybrid key switching needs at least one special prime");
  require(log_scale >= 10 && log_scale <= 60, ErrorCode::invalid_parameters,
          what + "log_scale must be in [10, 60], got " + std::to_string(log_scale));
  require(sigma > 0.5 && sigma < 100, ErrorCode::invalid_parameters,
          what + "sigma must be in (0.5, 100)");
  if (secret == SecretDistribution::fixed_hamming_weight) {
    require(hamming_weight >= 1 && hamming_weight <= degree(), ErrorCode::invalid_parameters,
            what + "Hamming weight must be in [1, N]");
  }
  const double bits = estimated_security(*this);
  require(allow_insecure || bits >= 128, ErrorCode::insecure_parameters,
          what + "estimated security " + std::to_string(static_cast<int>(bits)) +
              " bits < 128 (log2 QP = " + std::to_string(log_qp()) +
              "); pass allow_insecure to use it anyway");
}

namespace {

std::vector<int> repeat(int first, int bits, int count) {
  std::vector<int> v{first};
  v.insert(v.end(), static_cast<std::size_t>(count), bits);
  return v;
}

}  // namespace

const std::vector<CkksParams>& named_sets() {
  using S = SecretDistribution;
  static const std::vector<CkksParams> sets = {
      // Small rings for tests: every operation, few primes.
      {"n12-l2", 12, {30, 24, 24}, {30}, 3, 24, S::uniform_ternary, 0, 3.19},
      {"n13-l3", 13, repeat(40, 33, 3), {39, 39}, 2, 33, S::uniform_ternary, 0, 3.19},
      {"n14-l7", 14, repeat(50, 40, 7), {50, 50}, 4, 40, S::uniform_ternary, 0, 3.19},
      {"n15-l14", 15, repeat(55, 45, 14), {60, 60, 60}, 5, 45, S::uniform_ternary, 0, 3.19},
      // N = 2^16: 25 primes, three digits of 9 (the benchmark set, as OpenFHE would pick it).
      {"n16-l24", 16, repeat(60, 50, 24), std::vector<int>(8, 60), 3, 50, S::uniform_ternary, 0,
       3.19},
      // Bootstrapping at N = 2^16 with a secret of weight 192 and the encapsulation of an
      // ephemeral weight-32 secret (the shape of Lattigo's N16QP1546H192H32), bottom to top
      // (log2 QP 1536 <= 1550): q_0, 9 levels of 40 bits left for computation, SlotToCoeff
      // 3 x 42 ([5, 5, 5]), EvalMod 9 x 58 (K = 16, a cosine of degree 39, 3 double angles),
      // CoeffToSlot 3 x 56 ([5, 5, 5]); five special primes, so five digits at the top.
      {"n16-boot-h192", 16,
       [] {
         std::vector<int> q = repeat(60, 40, 9);
         q.insert(q.end(), 3, 42);
         q.insert(q.end(), 9, 58);
         q.insert(q.end(), 3, 56);
         return q;
       }(),
       std::vector<int>(5, 60), 5, 40, S::fixed_hamming_weight, 192, 3.19},
      // N = 2^16 with a sparse secret (H = 192), the shape of bootstrapping sets.
      {"n16-l20-h192", 16, repeat(60, 45, 20), std::vector<int>(6, 60), 3, 45,
       S::fixed_hamming_weight, 192, 3.19},
  };
  return sets;
}

const std::vector<CkksParams>& test_sets() {
  using S = SecretDistribution;
  static const std::vector<CkksParams> sets = {
      // Bootstrapping at N = 2^12: a weight-32 secret, q_0 of 60 bits, 18 levels of 58 bits
      // (CoeffToSlot 3, EvalMod 9, SlotToCoeff 3, 3 left). About 1300 bits of QP at N = 2^12:
      // no security at all.
      {"n12-boot-test", 12, repeat(60, 58, 18), std::vector<int>(4, 60), 5, 58,
       S::fixed_hamming_weight, 32, 3.19},
  };
  return sets;
}

const CkksParams& named_set(const std::string& name) {
  std::string names;
  for (const auto* list : {&named_sets(), &test_sets()}) {
    for (const auto& s : *list) {
      if (s.name == name) return s;
      names += (names.empty() ? "" : ", ") + s.name;
    }
  }
  throw Error(ErrorCode::invalid_argument, "no CKKS set '" + name + "'; known: " + names);
}

}  // namespace safhire::ckks
