// Primes for the NTT: deterministic primality of 64-bit words, the search for primes
// q = 1 (mod M) below a bit bound, and primitive M-th roots of unity.
#pragma once

#include <cstdint>
#include <vector>

namespace safhire::core {

// Deterministic Miller-Rabin for every 64-bit n (bases 2..37 are exact below 3.3e24).
bool is_prime(std::uint64_t n);

// The distinct prime factors of n, by trial division (n is a ring size, so small).
std::vector<std::uint64_t> prime_factors(std::uint64_t n);

// The `count` largest primes q < 2^bits with q = 1 (mod step), largest first.
// Throws ErrorCode::invalid_argument unless 2 <= bits <= 62 and step >= 1, and when fewer than
// `count` such primes exist.
std::vector<std::uint64_t> primes_below(int bits, std::uint64_t step, int count);

// A root of unity of order exactly `order` mod the prime q: w = x^((q-1)/order) for the smallest
// x = 2, 3, ... that gives an element of exact order (w^(order/p) != 1 for every prime p | order).
// Throws ErrorCode::invalid_parameters if q is not prime or order does not divide q - 1.
std::uint64_t root_of_unity(std::uint64_t q, std::uint64_t order);

// True when w has multiplicative order exactly `order` mod q.
bool has_order(std::uint64_t w, std::uint64_t order, std::uint64_t q);

}  // namespace safhire::core
