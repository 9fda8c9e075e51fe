#include "twiddle_tree.hpp"

#include "safhire/core/modarith.hpp"

namespace safhire::ring {

TwiddleTree build_twiddle_tree(std::uint64_t q, std::uint64_t omega, std::uint64_t order,
                               std::uint32_t radix, std::vector<std::uint64_t> exps,
                               std::uint64_t mod, std::uint64_t block_size,
                               std::uint32_t first_level, std::uint32_t levels) {
  using core::inv_mod;
  using core::mul_mod;
  using core::pow_mod;
  using core::shoup_quotient;
  TwiddleTree tree;
  TwiddleTables& tb = tree.tables;
  const std::uint32_t r1 = radix - 1;

  // The column level: the first whose children are shorter than kColumnWidth words.
  tb.column_level = levels;
  {
    std::uint64_t n = block_size, count = exps.size();
    for (std::uint32_t level = first_level; level < levels; ++level, n /= radix, count *= radix) {
      if (n / radix < kColumnWidth) {
        tb.column_level = level;
        tb.columns = static_cast<std::uint32_t>(count);
        break;
      }
    }
  }

  tb.level_block_offset.assign(levels, 0);
  std::uint32_t offset = 0;
  std::uint64_t n = block_size;
  for (std::uint32_t level = first_level; level < levels; ++level) {
    tb.level_block_offset[level] = offset;
    const std::uint64_t nn = n / radix;
    const std::size_t blocks = exps.size();
    const std::size_t base = std::size_t{offset} * r1;
    for (auto* v : {&tb.forward, &tb.forward_quotient, &tb.inverse, &tb.inverse_quotient}) {
      v->resize(base + blocks * r1);
    }
    const bool column = level >= tb.column_level;
    const std::size_t sub_blocks = column ? blocks / tb.columns : 1;  // S
    std::vector<std::uint64_t> children;
    children.reserve(blocks * radix);
    for (std::size_t beta = 0; beta < blocks; ++beta) {
      const std::uint64_t e = exps[beta];
      const std::uint64_t c = pow_mod(omega, nn * e % order, q);
      const std::uint64_t c_inv = inv_mod(c, q);
      std::uint64_t cr = 1, cr_inv = 1;
      for (std::uint32_t r = 1; r < radix; ++r) {
        cr = mul_mod(cr, c, q);
        cr_inv = mul_mod(cr_inv, c_inv, q);
        // natural: [beta][r-1]; column: [s][r-1][b], beta = b*S + s
        const std::size_t b = beta / sub_blocks, s = beta % sub_blocks;
        const std::size_t at =
            base + (column ? (s * r1 + (r - 1)) * tb.columns + b : beta * r1 + (r - 1));
        tb.forward[at] = cr;
        tb.forward_quotient[at] = shoup_quotient(cr, q);
        tb.inverse[at] = cr_inv;
        tb.inverse_quotient[at] = shoup_quotient(cr_inv, q);
      }
      for (std::uint32_t j = 0; j < radix; ++j)
        children.push_back(e + j * mod);
    }
    offset += static_cast<std::uint32_t>(blocks);
    exps = std::move(children);
    mod *= radix;
    n = nn;
  }
  // Keep the arrays non-empty so that data() is a valid pointer when there are no levels.
  for (auto* v : {&tb.forward, &tb.forward_quotient, &tb.inverse, &tb.inverse_quotient}) {
    if (v->empty()) v->push_back(0);
  }
  for (auto& e : exps)
    e %= order;
  tree.leaf_exponents = std::move(exps);
  return tree;
}

}  // namespace safhire::ring
