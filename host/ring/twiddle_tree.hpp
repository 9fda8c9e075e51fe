// Builds the twiddles of a tree of splits X^n - c = prod_j (X^(n/radix) - c' w^j) in the layout of
// ntt_view.hpp (internal to the ring layer: NttPlan and PaddedProduct use it).
#pragma once

#include <cstdint>
#include <vector>

#include "safhire/ring/ntt_tables.hpp"

namespace safhire::ring {

struct TwiddleTree {
  TwiddleTables tables;
  std::vector<std::uint64_t> leaf_exponents;  // e of every leaf X - omega^e, natural order
};

// Blocks modulo X^n - omega^(n e), e known mod `mod` (n * mod = order), enter level
// `first_level` with exponents `exps`, each of `block_size` words. Levels first_level..levels-1
// split every block into `radix` children e + j*mod with twist c' = omega^(n/radix * e).
TwiddleTree build_twiddle_tree(std::uint64_t q, std::uint64_t omega, std::uint64_t order,
                               std::uint32_t radix, std::vector<std::uint64_t> exps,
                               std::uint64_t mod, std::uint64_t block_size,
                               std::uint32_t first_level, std::uint32_t levels);

}  // namespace safhire::ring
