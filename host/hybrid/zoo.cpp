#include "safhire/hybrid/zoo.hpp"

#include <algorithm>
#include <random>
#include <vector>

#include "safhire/core/error.hpp"

namespace safhire::hybrid {

namespace {

struct TermSpec {
  std::uint32_t source, in_c, kernel, stride, pad, pool;
  bool identity;
};

struct RoundSpec {
  std::uint32_t out_c;
  std::vector<TermSpec> terms;
};

TermSpec conv(std::uint32_t source, std::uint32_t in_c, std::uint32_t k, std::uint32_t stride,
              std::uint32_t pad, std::uint32_t pool = 0) {
  return {source, in_c, k, stride, pad, pool, false};
}

TermSpec identity(std::uint32_t source, std::uint32_t c) {
  return {source, c, 1, 1, 0, 0, true};
}

// Basic blocks (two 3x3 convolutions, identity or 1x1 strided shortcut) over `widths` stages.
void basic_blocks(std::vector<RoundSpec>& rounds, std::uint32_t& src, std::uint32_t& c,
                  const std::vector<std::uint32_t>& widths,
                  const std::vector<std::uint32_t>& blocks, bool first_stage_strided) {
  for (std::size_t stage = 0; stage < widths.size(); ++stage) {
    for (std::uint32_t b = 0; b < blocks[stage]; ++b) {
      const std::uint32_t width = widths[stage];
      const std::uint32_t stride = b == 0 && (stage > 0 || first_stage_strided) ? 2 : 1;
      rounds.push_back({width, {conv(src, c, 3, stride, 1)}});
      const auto mid = static_cast<std::uint32_t>(rounds.size());
      const TermSpec shortcut =
          stride == 1 && c == width ? identity(src, c) : conv(src, c, 1, stride, 0);
      rounds.push_back({width, {conv(mid, width, 3, 1, 1), shortcut}});
      src = static_cast<std::uint32_t>(rounds.size());
      c = width;
    }
  }
}

struct Arch {
  std::uint32_t c, h, w;
  std::vector<RoundSpec> rounds;
};

Arch architecture(ZooModel model) {
  Arch a;
  std::uint32_t src = 1, c = 0;
  switch (model) {
    case ZooModel::resnet20_cifar:
      a = {3, 32, 32, {{16, {conv(0, 3, 3, 1, 1)}}}};
      c = 16;
      basic_blocks(a.rounds, src, c, {16, 32, 64}, {3, 3, 3}, false);
      a.rounds.push_back({10, {conv(src, 64, 1, 1, 0, 8)}});
      break;
    case ZooModel::resnet18_tiny:
      a = {3, 64, 64, {{64, {conv(0, 3, 3, 1, 1)}}}};
      c = 64;
      basic_blocks(a.rounds, src, c, {64, 128, 256, 512}, {2, 2, 2, 2}, false);  // 64 .. 8
      a.rounds.push_back({200, {conv(src, 512, 1, 1, 0, 8)}});
      break;
    case ZooModel::resnet34_imagenet: {
      a = {3, 224, 224, {{64, {conv(0, 3, 7, 2, 3)}}}};  // 112 x 112
      c = 64;
      // The stem's pool (2x2 average, as a sum-pool) folds into the first block's terms.
      a.rounds.push_back({64, {conv(1, 64, 3, 1, 1, 2)}});
      a.rounds.push_back({64, {conv(2, 64, 3, 1, 1), conv(1, 64, 1, 1, 0, 2)}});
      src = 3;
      basic_blocks(a.rounds, src, c, {64}, {2}, false);
      basic_blocks(a.rounds, src, c, {128, 256, 512}, {4, 6, 3}, true);  // 28, 14, 7
      a.rounds.push_back({1000, {conv(src, 512, 1, 1, 0, 7)}});
      break;
    }
  }
  return a;
}

}  // namespace

std::string to_string(ZooModel model) {
  switch (model) {
    case ZooModel::resnet20_cifar:
      return "resnet20";
    case ZooModel::resnet18_tiny:
      return "resnet18";
    case ZooModel::resnet34_imagenet:
      return "resnet34";
  }
  return "model";
}

Model synthetic_model(ZooModel model, std::uint32_t bits, std::uint64_t seed) {
  require(bits >= 8 && bits <= 32, ErrorCode::invalid_argument, "synthetic models need b >= 8");
  const Arch arch = architecture(model);
  const std::uint32_t act_bits = bits / 4;
  const std::int64_t amax = (std::int64_t{1} << act_bits) - 1;
  const std::int64_t limit = (std::int64_t{1} << (bits - 1)) - 1, bias_limit = limit / 8;
  std::mt19937_64 rng(seed);
  std::vector<Round> rounds;
  for (std::size_t r = 0; r < arch.rounds.size(); ++r) {
    const RoundSpec& spec = arch.rounds[r];
    Round round;
    round.output.c = spec.out_c;
    round.bits = bits;
    // Budgets per output channel, shared by the terms: (limit - bias) / max_input for the
    // positive weights and as much for the negative ones (the model bound is the range of the
    // accumulator's partial sums).
    std::int64_t max_input = 0;
    for (const TermSpec& t : spec.terms)
      max_input = std::max(max_input, amax * (t.pool == 0 ? 1 : std::int64_t{t.pool} * t.pool));
    const std::int64_t budget = (limit - bias_limit) / max_input;
    std::vector<std::int64_t> left_pos(spec.out_c, budget), left_neg(spec.out_c, budget);
    for (const TermSpec& t : spec.terms) {
      Term term;
      term.source = t.source;
      term.pool = t.pool;
      term.kernel = t.kernel;
      term.stride = t.stride;
      term.pad = t.pad;
      term.input.c = t.in_c;
      const std::size_t per_out = std::size_t{t.in_c} * t.kernel * t.kernel;
      term.weights.assign(per_out * spec.out_c, 0);
      for (std::uint32_t o = 0; o < spec.out_c; ++o) {
        std::int16_t* w = term.weights.data() + o * per_out;
        if (t.identity) {
          if (left_pos[o] > 0) {
            w[o] = 1;
            --left_pos[o];
          }
          continue;
        }
        // +-1 (a random sign, the other one when its budget is spent) at up to
        // `left / terms + 1` random positions.
        const std::int64_t left = left_pos[o] + left_neg[o];
        const std::int64_t share =
            std::min<std::int64_t>(left / static_cast<std::int64_t>(spec.terms.size()) + 1,
                                   static_cast<std::int64_t>(per_out));
        for (std::int64_t k = 0; k < share && left_pos[o] + left_neg[o] > 0; ++k) {
          std::int16_t& x = w[rng() % per_out];
          if (x != 0) continue;
          const bool positive = left_neg[o] == 0 || (left_pos[o] > 0 && (rng() & 1) != 0);
          x = positive ? 1 : -1;
          --(positive ? left_pos[o] : left_neg[o]);
        }
      }
      round.terms.push_back(std::move(term));
    }
    for (std::uint32_t o = 0; o < spec.out_c; ++o)
      round.bias.push_back(static_cast<std::int32_t>(
          static_cast<std::int64_t>(rng() % (2 * bias_limit + 1)) - bias_limit));
    if (r + 1 < arch.rounds.size()) {
      // Scale so that a quarter of the accumulator range maps to the activation range.
      const std::uint32_t shift = 24;
      round.requant = Requant{static_cast<std::uint32_t>(std::max<std::int64_t>(
                                  1, (amax << shift) / std::max<std::int64_t>(1, limit / 4))),
                              shift};
    }
    rounds.push_back(std::move(round));
  }
  return Model::from_parts("synthetic-" + to_string(model) + "-b" + std::to_string(bits), bits,
                           act_bits, act_bits, Shape{arch.c, arch.h, arch.w}, rounds);
}

}  // namespace safhire::hybrid
