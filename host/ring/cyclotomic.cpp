#include "safhire/ring/cyclotomic.hpp"

#include <string>

namespace safhire::ring {

void require_galois_element(const RingParams& ring, std::uint64_t k) {
  require(k % ring.t() != 0, ErrorCode::invalid_argument,
          "sigma_k needs k coprime to M = " + std::to_string(ring.M()) +
              ", got k = " + std::to_string(k));
}

}  // namespace safhire::ring
