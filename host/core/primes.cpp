#include "safhire/core/primes.hpp"

#include <string>

#include "safhire/core/error.hpp"
#include "safhire/core/modarith.hpp"

namespace safhire::core {

bool is_prime(u64 n) {
  constexpr u64 kBases[] = {2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37};
  if (n < 2) return false;
  for (u64 p : kBases) {
    if (n % p == 0) return n == p;
  }
  u64 d = n - 1;
  int s = 0;
  while ((d & 1U) == 0) {
    d >>= 1U;
    ++s;
  }
  for (u64 base : kBases) {
    u64 x = pow_mod(base, d, n);
    if (x == 1 || x == n - 1) continue;
    bool composite = true;
    for (int i = 1; i < s && composite; ++i) {
      x = mul_mod(x, x, n);
      composite = x != n - 1;
    }
    if (composite) return false;
  }
  return true;
}

std::vector<u64> prime_factors(u64 n) {
  std::vector<u64> factors;
  for (u64 p = 2; p * p <= n; p += (p == 2 ? 1 : 2)) {
    if (n % p != 0) continue;
    factors.push_back(p);
    while (n % p == 0)
      n /= p;
  }
  if (n > 1) factors.push_back(n);
  return factors;
}

std::vector<u64> primes_below(int bits, u64 step, int count) {
  require(bits >= 2 && bits <= 62, ErrorCode::invalid_argument,
          "prime bit bound must be in [2, 62], got " + std::to_string(bits));
  require(step >= 1, ErrorCode::invalid_argument, "prime step must be at least 1");
  require(count >= 0, ErrorCode::invalid_argument, "prime count must not be negative");
  std::vector<u64> primes;
  const u64 bound = u64{1} << bits;
  // q = 1 + k*step < bound, k from the largest down.
  for (u64 k = (bound - 2) / step; k >= 1 && static_cast<int>(primes.size()) < count; --k) {
    const u64 q = 1 + k * step;
    if (is_prime(q)) primes.push_back(q);
  }
  require(static_cast<int>(primes.size()) == count, ErrorCode::invalid_argument,
          "only " + std::to_string(primes.size()) + " primes q = 1 mod " + std::to_string(step) +
              " below 2^" + std::to_string(bits) + ", wanted " + std::to_string(count));
  return primes;
}

bool has_order(u64 w, u64 order, u64 q) {
  if (order == 0 || pow_mod(w, order, q) != 1) return false;
  for (u64 p : prime_factors(order)) {
    if (pow_mod(w, order / p, q) == 1) return false;
  }
  return true;
}

u64 root_of_unity(u64 q, u64 order) {
  require(is_prime(q), ErrorCode::invalid_parameters, std::to_string(q) + " is not prime");
  require(order >= 1 && (q - 1) % order == 0, ErrorCode::invalid_parameters,
          "order " + std::to_string(order) + " does not divide q - 1 = " + std::to_string(q - 1));
  for (u64 x = 2; x < q; ++x) {
    const u64 w = pow_mod(x, (q - 1) / order, q);
    if (has_order(w, order, q)) return w;
  }
  throw Error(ErrorCode::internal, "no root of unity found");  // impossible for a prime q
}

}  // namespace safhire::core
