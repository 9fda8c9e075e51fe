#include "safhire/lanes/context.hpp"

#include <initializer_list>

#include "safhire/ckks/serialize.hpp"

namespace safhire::lanes {

namespace {

LaneSpace validated(LaneSpace space, bool allow_insecure) {
  space.validate(allow_insecure);
  return space;
}

}  // namespace

LaneContext::LaneContext(LaneSpace space, bool allow_insecure)
    : space_(validated(std::move(space), allow_insecure)),
      ckks_(space_.ckks, allow_insecure),
      modulus_(space_.modulus()) {
  // FNV-1a over the layout's numbers and the CKKS context's own fingerprint.
  std::uint64_t h = 0xcbf29ce484222325ULL;
  auto mix = [&h](std::uint64_t v) {
    for (int i = 0; i < 8; ++i) {
      h ^= (v >> (8 * i)) & 0xff;
      h *= 0x100000001b3ULL;
    }
  };
  mix(space_.lane_degree);
  mix(space_.base);
  if (space_.t_degree != 1) mix(space_.t_degree);  // (integer spaces keep their fingerprints)
  mix(space_.products_per_refresh);
  if (space_.conversion_levels != 0) mix(space_.conversion_levels);
  mix(space_.ephemeral_weight);
  for (const auto* split : {&space_.c_split, &space_.l_split, &space_.cts_split}) {
    mix(split->size());
    for (std::uint32_t s : *split)
      mix(s);
  }
  mix(ckks::fingerprint(ckks_));
  fingerprint_ = h;
}

double LaneContext::rest_scale() const {
  return static_cast<double>(ckks_.prime(space_.rest_level()));
}

}  // namespace safhire::lanes
