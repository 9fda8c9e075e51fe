// CKKS parameter sets as data: the ring degree, the bit sizes of the ciphertext primes Q
// (q_0 first, the primes that rescaling removes after it), of the special primes P of hybrid key
// switching, the number of digits dnum, the default scale, and the secret and error
// distributions. Each set carries its estimated security and is refused below 128 bits unless
// the caller opts in.
//
// The estimator: for uniform ternary secrets, the HomomorphicEncryption.org standard's table of
// the largest log2(QP) at 128-bit classical security (N = 2^10 .. 2^15), extended to 2^16 and
// 2^17 with the values OpenFHE uses (1772 and 3544 bits); for a sparse secret of Hamming weight
// H >= 192 at N = 2^16, Lattigo's rule log2(QP) <= 1550. Other sizes are scaled by the usual
// rule that security grows linearly with N / log2(QP): lambda ~= 128 * maxlogQP / logQP. Sparse
// secrets at other N have no table here and count as 0 bits (refused unless opted in).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace safhire::ckks {

enum class SecretDistribution : std::uint8_t { uniform_ternary = 0, fixed_hamming_weight = 1 };

struct CkksParams {
  std::string name;
  std::uint32_t log_n = 0;  // N = 2^log_n, 10 <= log_n <= 17
  std::vector<int> q_bits;  // q_0 .. q_L, each 20 .. 61 bits
  std::vector<int> p_bits;  // special primes, each 20 .. 61 bits (may be empty: dnum = 0)
  std::uint32_t dnum = 1;   // key-switching digits at the top level
  int log_scale = 40;       // default scale 2^log_scale
  SecretDistribution secret = SecretDistribution::uniform_ternary;
  std::uint32_t hamming_weight = 0;  // for fixed_hamming_weight
  double sigma = 3.19;               // error standard deviation (rounded Gaussian)

  std::uint32_t degree() const { return 1U << log_n; }
  std::uint32_t max_level() const { return static_cast<std::uint32_t>(q_bits.size()) - 1; }
  // Primes per digit: alpha = ceil((L + 1) / dnum).
  std::uint32_t alpha() const;
  int log_qp() const;

  // Throws Error(invalid_parameters) with the reason for a malformed set, and
  // Error(insecure_parameters) when estimated_security() < 128 and allow_insecure is false.
  void validate(bool allow_insecure = false) const;
};

// Estimated classical security in bits of a ring degree, total modulus and secret (see above).
double estimated_security(const CkksParams& params);

// The named sets, from small test rings to the N = 2^16 sets of the benchmarks.
const std::vector<CkksParams>& named_sets();
// Small rings shaped like larger sets (bootstrapping at N = 2^12), far below 128-bit security:
// for tests, CI and demonstrations only (a context needs allow_insecure).
const std::vector<CkksParams>& test_sets();
// The set of that name among both lists; Error(invalid_argument) listing the names when there
// is none.
const CkksParams& named_set(const std::string& name);

}  // namespace safhire::ckks
