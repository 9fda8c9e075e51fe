#include "safhire/ring/cyclotomic.hpp"

#include <algorithm>
#include <string>

namespace safhire::ring {

void require_galois_element(const RingParams& ring, std::uint64_t k) {
  if (k % ring.t() == 0)
    throw Error(ErrorCode::invalid_argument,
                "sigma_k needs k coprime to M = " + std::to_string(ring.M()) +
                    ", got k = " + std::to_string(k));
}

void add_monomial_product(const RingParams& ring, std::span<const u64> src, std::int64_t e,
                          std::span<u64> dst, bool subtract) {
  require_degree(ring, src.size(), "add_monomial_product input");
  require_degree(ring, dst.size(), "add_monomial_product output");
  const std::int64_t M = ring.M();
  const auto shift = static_cast<std::uint32_t>(((e % M) + M) % M);
  const std::uint32_t N = ring.N(), m = ring.m();
  // dst[j] += src[i] (or -=, and the folded runs the other way): separate loops per sign, so
  // that each is a plain vector add or subtract.
  auto add_run = [subtract](u64* out, const u64* in, std::uint32_t len, bool negate) {
    if (subtract != negate) {
      for (std::uint32_t x = 0; x < len; ++x)
        out[x] -= in[x];
    } else {
      for (std::uint32_t x = 0; x < len; ++x)
        out[x] += in[x];
    }
  };
  // Source i goes to exponent j = (i + shift) mod M. Walk the runs of consecutive i whose j
  // stays in [0, N) (added directly) or in [N, M) (folded: X^(N+r) = -sum_k X^(k m + r)).
  std::uint32_t i = 0;
  while (i < N) {
    std::uint32_t j = i + shift;
    if (j >= static_cast<std::uint32_t>(M)) j -= static_cast<std::uint32_t>(M);
    if (j < N) {
      const std::uint32_t run = std::min(N - i, N - j);
      add_run(dst.data() + j, src.data() + i, run, false);
      i += run;
    } else {
      const std::uint32_t r0 = j - N;
      const std::uint32_t run = std::min(N - i, m - r0);
      for (std::uint32_t k = 0; k + 1 < ring.t(); ++k)
        add_run(dst.data() + k * m + r0, src.data() + i, run, true);
      i += run;
    }
  }
}

}  // namespace safhire::ring
