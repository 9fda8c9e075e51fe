// Partial extraction and the client's powers (docs/partial-extraction.md): module extraction
// keeps the phase of every block (checked against the secret key with the schoolbook product of
// R_gamma), the conjugate samples carry sigma_k of the blocks (checked against the automorphism
// of R_gamma), and a linear layer evaluated on them and packed with the top levels of the merge
// tree decrypts to the integer matrix-vector product computed in plain int64, with
// t^(a-gamma) - 1 key switches per N outputs.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>

#include "rlwe_context.hpp"
#include "safhire/core/error.hpp"
#include "safhire/core/modarith.hpp"
#include "safhire/ring/cyclotomic.hpp"
#include "safhire/rlwe/noise.hpp"
#include "safhire/rlwe/partial.hpp"
#include "test_util.hpp"

namespace {

using namespace safhire::rlwe;
using safhire::ErrorCode;
using safhire::ring::RingParams;
using safhire::ring::TorusArith;
using safhire::rlwe::testing::Context;
using safhire::rlwe::testing::power;
using safhire::rlwe::testing::small_set;
using safhire::testing::code_of;
using safhire::testing::u64;

// Lane j of block u of a polynomial: coefficient u + T j.
std::vector<u64> block_of(std::span<const u64> poly, std::uint32_t u, std::uint32_t T,
                          std::uint32_t lanes) {
  std::vector<u64> out(lanes);
  for (std::uint32_t j = 0; j < lanes; ++j)
    out[j] = poly[u + T * j];
  return out;
}

// b - sum_v a_v s_v in R_gamma, with the secret's blocks and the schoolbook product.
std::vector<u64> module_phase(const PartialExtraction& px, const SecretKey& key,
                              const ModuleLwe& x) {
  const std::uint32_t T = px.blocks(), L = px.lanes();
  std::vector<u64> phase = x.b, product(L);
  for (std::uint32_t v = 0; v < T; ++v) {
    const std::vector<u64> s_v = block_of(key.coeffs(), v, T, L);
    safhire::ring::schoolbook_mul(px.subring(), std::span<const u64>(x.a.data() + v * L, L),
                                  std::span<const u64>(s_v), std::span<u64>(product), TorusArith{});
    for (std::uint32_t j = 0; j < L; ++j)
      phase[j] -= product[j];
  }
  return phase;
}

std::vector<Ciphertext> expand(const std::vector<SeededCiphertext>& seeded) {
  std::vector<Ciphertext> out;
  for (const SeededCiphertext& s : seeded)
    out.push_back(s.expand());
  return out;
}

TEST(PowerElements, AreTheUnitsModTToTheGamma) {
  for (const RingParams& r : {RingParams(3, 7), RingParams(5, 5), RingParams(7, 4)}) {
    EXPECT_EQ(power_elements(r, 0), std::vector<std::uint64_t>{1});
    for (std::uint32_t gamma = 1; gamma <= 2; ++gamma) {
      const auto ks = power_elements(r, gamma);
      const std::uint64_t order = power(r.t(), gamma);
      EXPECT_EQ(ks.size(), order - order / r.t());  // phi(t^gamma)
      for (std::uint64_t k : ks) {
        EXPECT_LT(k, order);
        EXPECT_NE(k % r.t(), 0U);
      }
      EXPECT_TRUE(std::is_sorted(ks.begin(), ks.end()));
    }
    EXPECT_THROW(power_elements(r, r.a()), safhire::Error);
  }
}

struct Level {
  RingParams ring;
  std::uint32_t gamma;
};

std::string level_label(const Level& l) {
  return safhire::testing::ring_label(l.ring) + "_gamma" + std::to_string(l.gamma);
}

[[maybe_unused]] void PrintTo(const Level& l, std::ostream* os) {
  *os << level_label(l);
}

class PartialOnSmallRings : public ::testing::TestWithParam<Level> {};

// The client's powers of one chunk of `values`, cut by the server into conjugate samples.
std::vector<ModuleLwe> chunk_conjugates(Context& ctx, const PartialExtraction& px,
                                        const std::vector<std::int64_t>& values) {
  const auto mu = encode_chunks(px.ring(), values, ctx.p.message_bits)[0];
  return px.conjugates(expand(encrypt_powers(ctx.enc, mu.coeffs(), px.gamma())));
}

TEST_P(PartialOnSmallRings, ExtractKeepsEveryBlockPhaseAndEmbedInvertsIt) {
  const auto [r, gamma] = GetParam();
  Context ctx(small_set(r));
  PartialExtraction px(r, gamma);
  std::mt19937_64 rng(120);
  const Ciphertext ct = ctx.encrypt(ctx.random_values(rng));
  const auto phase = ctx.enc.phase(ct);
  for (std::uint32_t u = 0; u < px.blocks(); ++u) {
    const ModuleLwe x = px.extract(ct, u);
    ASSERT_EQ(module_phase(px, ctx.key, x), block_of(phase.coeffs(), u, px.blocks(), px.lanes()))
        << "block " << u;
    // The embedding puts the same phase in block 0 of an RLWE ciphertext, and extracts back.
    const Ciphertext back = px.embed(x);
    ASSERT_EQ(block_of(ctx.enc.phase(back).coeffs(), 0, px.blocks(), px.lanes()),
              block_of(phase.coeffs(), u, px.blocks(), px.lanes()));
    const ModuleLwe again = px.extract(back, 0);
    ASSERT_EQ(again.a, x.a);
    ASSERT_EQ(again.b, x.b);
  }
}

TEST_P(PartialOnSmallRings, ConjugatesCarrySigmaKOfEveryBlock) {
  const auto [r, gamma] = GetParam();
  Context ctx(small_set(r));
  PartialExtraction px(r, gamma);
  std::mt19937_64 rng(121);
  const auto values = ctx.random_values(rng);
  const auto mu = encode_chunks(r, values, ctx.p.message_bits)[0];
  const auto powers = expand(encrypt_powers(ctx.enc, mu.coeffs(), gamma));
  ASSERT_EQ(powers.size(), px.elements().size());
  const auto conj = px.conjugates(powers);
  // Oracle: block i of t^-gamma mu, conjugated in R_gamma by Z -> Z^(k mod t^gamma).
  const u64 inv = safhire::core::inverse_mod_word<u64>(power(r.t(), gamma));
  const std::uint32_t T = px.blocks(), L = px.lanes();
  std::vector<u64> expected(L);
  for (std::uint32_t i = 0; i < T; ++i) {
    std::vector<u64> y = block_of(mu.coeffs(), i, T, L);
    for (u64& c : y)
      c *= inv;
    for (std::size_t kk = 0; kk < px.elements().size(); ++kk) {
      safhire::ring::automorphism(px.subring(), std::span<const u64>(y), px.elements()[kk],
                                  std::span<u64>(expected), TorusArith{});
      const auto phase = module_phase(px, ctx.key, conj[i * L + kk]);
      for (std::uint32_t j = 0; j < L; ++j) {
        ASSERT_EQ(decode_message(phase[j], ctx.p.message_bits),
                  decode_message(expected[j], ctx.p.message_bits))
            << "block " << i << ", k = " << px.elements()[kk] << ", lane " << j;
      }
    }
  }
}

// A clean sample of lane j of block i has phase y_i[j] = value i + T j in lane 0 and nothing but
// noise in the others (checked against the secret key); the all-lanes forms (clean_samples from
// the conjugates, and from the chunk's power blocks, the server's) give the same words as the
// one-lane form.
TEST_P(PartialOnSmallRings, CleanSamplesCarryOneValueInLaneZero) {
  const auto [r, gamma] = GetParam();
  Context ctx(small_set(r));
  PartialExtraction px(r, gamma);
  std::mt19937_64 rng(123);
  const auto values = ctx.random_values(rng);
  const auto mu = encode_chunks(px.ring(), values, ctx.p.message_bits)[0];
  const auto powers = expand(encrypt_powers(ctx.enc, mu.coeffs(), px.gamma()));
  const auto conj = px.conjugates(powers);
  const PartialExtraction::PowerBlocks power_blocks = px.power_blocks(powers);
  const std::uint32_t T = px.blocks(), L = px.lanes();
  std::vector<std::vector<u64>> rows(L, std::vector<u64>(px.row_words()));
  std::vector<std::vector<u64>> fused(L, std::vector<u64>(px.row_words()));
  std::vector<u64*> pointers, fused_pointers;
  for (std::uint32_t j = 0; j < L; ++j) {
    pointers.push_back(rows[j].data());
    fused_pointers.push_back(fused[j].data());
  }
  pointers[L - 1] = fused_pointers[L - 1] = nullptr;  // a lane not wanted is left alone
  std::fill(rows[L - 1].begin(), rows[L - 1].end(), u64{7});
  std::fill(fused[L - 1].begin(), fused[L - 1].end(), u64{7});
  std::vector<u64> scratch, fused_scratch, one(px.row_words());
  for (std::uint32_t i = 0; i < T; ++i) {
    const std::span<const ModuleLwe> block(conj.data() + std::size_t{i} * L, L);
    px.clean_samples(block, pointers, scratch);
    px.clean_samples(power_blocks, i, fused_pointers, fused_scratch);
    for (std::uint32_t j = 0; j < L; ++j) {
      px.clean_sample(block, j, one);
      if (j == L - 1) {
        ASSERT_TRUE(std::all_of(rows[j].begin(), rows[j].end(), [](u64 w) { return w == 7; }));
        ASSERT_TRUE(std::all_of(fused[j].begin(), fused[j].end(), [](u64 w) { return w == 7; }));
      } else {
        ASSERT_EQ(rows[j], one) << "block " << i << ", lane " << j;
        ASSERT_EQ(fused[j], one) << "block " << i << ", lane " << j << " (from power blocks)";
      }
      const auto phase = module_phase(px, ctx.key, px.from_row(one));
      ASSERT_EQ(decode_message(phase[0], ctx.p.message_bits), values[i + T * j])
          << "block " << i << ", lane " << j;
      for (std::uint32_t z = 1; z < L; ++z)
        ASSERT_EQ(decode_message(phase[z], ctx.p.message_bits), 0) << "noise lane " << z;
    }
  }
}

// A linear layer on one chunk: output block beta (lanes z) = sum over a few input blocks i of
// W[beta][i] (lanes x lanes) times block i. The oracle is the same sum in int64 arithmetic on
// the plaintext values, reduced to the signed b-bit range.
struct BlockLayer {
  std::vector<std::vector<std::pair<std::uint32_t, std::vector<std::int64_t>>>> rows;  // [beta]
};

BlockLayer random_layer(std::mt19937_64& rng, std::uint32_t T, std::uint32_t L,
                        std::uint32_t inputs_per_block) {
  BlockLayer layer;
  layer.rows.resize(T);
  for (auto& row : layer.rows) {
    for (std::uint32_t n = 0; n < std::min(inputs_per_block, T); ++n) {
      std::vector<std::int64_t> w(std::size_t{L} * L);
      for (auto& x : w)
        x = static_cast<std::int64_t>(rng() % 33) - 16;
      row.emplace_back(static_cast<std::uint32_t>(rng() % T), std::move(w));
    }
  }
  return layer;
}

std::vector<std::int64_t> plain_layer(const BlockLayer& layer, const std::vector<std::int64_t>& x,
                                      std::uint32_t T, std::uint32_t L, std::uint32_t bits) {
  std::vector<std::int64_t> out(std::size_t{T} * L, 0);
  for (std::uint32_t beta = 0; beta < T; ++beta) {
    for (std::uint32_t z = 0; z < L; ++z) {
      std::int64_t sum = 0;
      for (const auto& [i, w] : layer.rows[beta]) {
        for (std::uint32_t j = 0; j < L; ++j)
          sum += w[z * L + j] * x[i + T * j];
      }
      const std::int64_t mod = std::int64_t{1} << bits, half = mod / 2;
      out[beta + T * z] = ((sum % mod) + mod + half) % mod - half;
    }
  }
  return out;
}

void check_layer(Context& ctx, std::uint32_t gamma, std::uint32_t inputs_per_block, TreeMode mode) {
  const RingParams& r = ctx.p.ring;
  PartialExtraction px(r, gamma);
  const std::uint32_t T = px.blocks(), L = px.lanes();
  std::mt19937_64 rng(122 + gamma);
  const auto values = ctx.random_values(rng);
  const BlockLayer layer = random_layer(rng, T, L, inputs_per_block);
  // Client: the powers of the chunk. Server: conjugate samples, the layer, embedding, packing.
  const auto conj = chunk_conjugates(ctx, px, values);
  std::vector<Ciphertext> blocks;
  for (std::uint32_t beta = 0; beta < T; ++beta) {
    ModuleLwe acc = px.zero();
    for (const auto& [i, w] : layer.rows[beta]) {
      const std::vector<u64> p = px.lane_plaintexts(w);
      for (std::size_t kk = 0; kk < px.elements().size(); ++kk)
        px.multiply_accumulate(acc, std::span<const u64>(p.data() + kk * L, L), conj[i * L + kk]);
    }
    blocks.push_back(px.embed(acc));
  }
  TraceTrees trees(ctx.p, ctx.p.gadget(gamma), ctx.keys_for(gamma));
  const Ciphertext packed = trees.pack_blocks(blocks, gamma, mode);
  EXPECT_EQ(ctx.decrypt(packed), plain_layer(layer, values, T, L, ctx.p.message_bits));
  if (mode == TreeMode::fast) {
    EXPECT_EQ(trees.key_switches(), T - 1);
  }
}

TEST_P(PartialOnSmallRings, DenseLayerOnThePowersIsExact) {
  const auto [r, gamma] = GetParam();
  Context ctx(small_set(r));
  for (TreeMode mode : {TreeMode::fast, TreeMode::paper}) {
    SCOPED_TRACE(mode == TreeMode::fast ? "fast" : "paper");
    check_layer(ctx, gamma, r.power(r.a() - gamma), mode);
  }
}

// embed_lane_sum, the server's packing input, against its definition: embed(from_row(sum_z Z^z
// x_z)) through monomial_accumulate, on random rows (one lane left out), with 64-bit rows and with
// 32-bit rows whose words stand for w 2^32.
TEST_P(PartialOnSmallRings, EmbedLaneSumIsTheEmbeddedMonomialSum) {
  const auto [r, gamma] = GetParam();
  PartialExtraction px(r, gamma);
  std::mt19937_64 rng(129);
  const std::uint32_t L = px.lanes();
  std::vector<std::vector<u64>> wide(L, std::vector<u64>(px.row_words()));
  std::vector<std::vector<std::uint32_t>> narrow(L, std::vector<std::uint32_t>(px.row_words()));
  for (std::uint32_t z = 0; z < L; ++z)
    for (std::size_t k = 0; k < px.row_words(); ++k) {
      wide[z][k] = rng();
      narrow[z][k] = static_cast<std::uint32_t>(rng());
    }
  const std::uint32_t skipped = L / 2;
  std::vector<u64> acc_wide(px.row_words(), 0), acc_narrow(px.row_words(), 0);
  std::vector<const u64*> wide_rows(L, nullptr);
  std::vector<const std::uint32_t*> narrow_rows(L, nullptr);
  for (std::uint32_t z = 0; z < L; ++z) {
    if (z == skipped) continue;
    wide_rows[z] = wide[z].data();
    narrow_rows[z] = narrow[z].data();
    px.monomial_accumulate(acc_wide, wide[z], z, 1);
    std::vector<u64> lifted(px.row_words());
    for (std::size_t k = 0; k < lifted.size(); ++k)
      lifted[k] = u64{narrow[z][k]} << 32;
    px.monomial_accumulate(acc_narrow, lifted, z, 1);
  }
  Ciphertext out(r);
  std::fill(out.b.coeffs().begin(), out.b.coeffs().end(), u64{5});  // overwritten
  px.embed_lane_sum(wide_rows, out);
  const Ciphertext expected = px.embed(px.from_row(acc_wide));
  const auto words = [](const Ciphertext& ct) {
    std::vector<u64> all(ct.a.coeffs().begin(), ct.a.coeffs().end());
    all.insert(all.end(), ct.b.coeffs().begin(), ct.b.coeffs().end());
    return all;
  };
  EXPECT_EQ(words(out), words(expected));
  px.embed_lane_sum(narrow_rows, out);
  const Ciphertext expected_narrow = px.embed(px.from_row(acc_narrow));
  EXPECT_EQ(words(out), words(expected_narrow));
}

INSTANTIATE_TEST_SUITE_P(SmallRings, PartialOnSmallRings,
                         ::testing::Values(Level{RingParams(3, 2), 1}, Level{RingParams(3, 3), 1},
                                           Level{RingParams(3, 3), 2}, Level{RingParams(5, 2), 1},
                                           Level{RingParams(7, 2), 1}, Level{RingParams(3, 4), 1},
                                           Level{RingParams(3, 4), 2}, Level{RingParams(3, 4), 3},
                                           Level{RingParams(5, 3), 2}),
                         [](const auto& param_info) { return level_label(param_info.param); });

// The paper's rings on their default sets, gamma 1 and 2: a sparse layer (three input blocks
// per output block) is exact, and packing N outputs costs t^(a-gamma) - 1 key switches.
class PartialOnPaperRings : public ::testing::TestWithParam<const char*> {};

TEST_P(PartialOnPaperRings, LayerOnThePowersIsExactAtGammaOneAndTwo) {
  Context ctx(parameter_set(GetParam()));
  for (std::uint32_t gamma : {1U, 2U}) {
    SCOPED_TRACE("gamma " + std::to_string(gamma));
    check_layer(ctx, gamma, 3, TreeMode::fast);
  }
}

// Powers derived by the server from the first (TraceTrees::derive_powers, with the keys of
// galois_elements) carry the client's messages sigma_k(t^-gamma mu), computed here with the
// plaintext automorphism, with one key switch's noise: the measured variance against
// sigma^2 + keyswitch_variance (an upper bound for binary keys).
TEST_P(PartialOnPaperRings, DerivedPowersCarryTheClientsMessages) {
  Context ctx(parameter_set(GetParam()));
  const RingParams& r = ctx.p.ring;
  std::mt19937_64 rng(321);
  for (std::uint32_t gamma : {1U, 2U}) {
    SCOPED_TRACE("gamma " + std::to_string(gamma));
    const Gadget gadget = ctx.p.gadget(gamma);
    const GaloisKeys keys =
        make_galois_keys(ctx.key, gadget, ctx.random, galois_elements(r, gamma));
    const auto chunk = encode_chunks(r, ctx.random_values(rng), ctx.p.message_bits)[0];
    const std::vector<u64> mu(chunk.coeffs().begin(), chunk.coeffs().end());
    TraceTrees trees(ctx.p, gadget, keys);
    const std::vector<Ciphertext> powers =
        trees.derive_powers(encrypt_first_power(ctx.enc, mu, gamma).expand(), gamma);
    const std::vector<std::uint64_t> elements = power_elements(r, gamma);
    ASSERT_EQ(powers.size(), elements.size());
    EXPECT_EQ(trees.key_switches(), elements.size() - 1);
    const u64 scale = safhire::core::inverse_mod_word<u64>(power(r.t(), gamma));
    std::vector<u64> scaled(mu), expected(r.N());
    for (u64& c : scaled)
      c *= scale;
    NoiseProbe probe;
    for (std::size_t i = 0; i < elements.size(); ++i) {
      safhire::ring::automorphism(r, std::span<const u64>(scaled), elements[i],
                                  std::span<u64>(expected), TorusArith{});
      const auto phase = ctx.enc.phase(powers[i]);
      for (std::uint32_t j = 0; j < r.N(); ++j) {
        ASSERT_EQ(decode_message(phase[j], ctx.p.message_bits),
                  decode_message(expected[j], ctx.p.message_bits))
            << "power " << elements[i] << ", coefficient " << j;
        if (i > 0) probe.add(phase[j] - expected[j]);
      }
    }
    const double estimate =
        std::log2(std::exp2(2 * ctx.p.log2_sigma) + keyswitch_variance(ctx.p, gadget));
    EXPECT_LE(probe.log2_variance(), estimate + 0.1);
    EXPECT_GE(probe.log2_variance(), estimate - 3);
  }
}

INSTANTIATE_TEST_SUITE_P(PaperRings, PartialOnPaperRings,
                         ::testing::Values("default-b8", "default-b16", "default-b12"),
                         [](const auto& param_info) {
                           return safhire::testing::set_label(param_info.param);
                         });

TEST(Partial, BadLevelsAndShapesAreTypedErrors) {
  const RingParams r(3, 3);
  Context ctx(small_set(r));
  EXPECT_EQ(code_of([&] { PartialExtraction(r, 0); }), ErrorCode::invalid_argument);
  EXPECT_EQ(code_of([&] { PartialExtraction(r, 3); }), ErrorCode::invalid_argument);
  PartialExtraction px(r, 1);
  std::mt19937_64 rng(123);
  const Ciphertext ct = ctx.encrypt(ctx.random_values(rng));
  EXPECT_EQ(code_of([&] { px.extract(ct, px.blocks()); }), ErrorCode::invalid_argument);
  EXPECT_EQ(code_of([&] { px.extract(Ciphertext(RingParams(3, 2)), 0); }),
            ErrorCode::size_mismatch);
  EXPECT_EQ(code_of([&] { px.conjugates(std::vector<Ciphertext>{ct}); }),
            ErrorCode::size_mismatch);  // phi(3) = 2 powers at gamma 1
  EXPECT_EQ(code_of([&] { px.lane_plaintexts(std::vector<std::int64_t>(3)); }),
            ErrorCode::size_mismatch);
  ModuleLwe acc = px.zero(), wrong;
  wrong.a.assign(5, 0);
  EXPECT_EQ(code_of([&] { px.multiply_accumulate(acc, std::vector<u64>(2), wrong); }),
            ErrorCode::size_mismatch);
  EXPECT_EQ(code_of([&] { px.embed(wrong); }), ErrorCode::size_mismatch);
}

}  // namespace
