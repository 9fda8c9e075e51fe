// cuda::Extraction and cuda::linear_rows, the extraction and linear steps both backends run. On the
// CPU backend's ops (backend::HostOps: chunks in batches, clean samples a block at a time through
// rlwe::PartialExtraction, 32-bit rows rounded as they are written, layers in the prepared forms
// of prepared_layer.hpp) they must give the words of the device algorithm's replay
// (tests/cpu_ops.hpp: one thread per word, the element bodies of cuda/portable/
// backend_element.cuh, 32-bit rows through 64-bit ones and narrow_thread), on every batch size,
// thread count, gamma and row width, with uploaded powers and derived ones.
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "cpu_ops.hpp"
#include "host_ops.hpp"
#include "portable/device_backend.hpp"
#include "prepared_layer.hpp"
#include "safhire/backend/backend.hpp"
#include "safhire/core/error.hpp"
#include "safhire/rlwe/partial.hpp"
#include "safhire/rlwe/trees.hpp"

namespace {

using namespace safhire;
using u64 = std::uint64_t;
using u32 = std::uint32_t;

constexpr u64 kUnwritten = 0x5a5a5a5a5a5a5a5aULL;

class ExtractRows : public ::testing::TestWithParam<ring::RingParams> {};

TEST_P(ExtractRows, HostOpsGiveTheReplaysWordsInEveryBatch) {
  const ring::RingParams& r = GetParam();
  const rlwe::ParameterSet p("test", 900, r, 8, -50, {1024, 4}, {1024, 4});
  auto random = core::SeededRandom::from_counter(150);
  const rlwe::SecretKey key(p, random);
  rlwe::Encryptor enc(key, random);
  const u32 N = r.N();
  const std::size_t values = 2 * std::size_t{N} + N / 3;  // three chunks, the last partial
  const std::size_t chunks = 3;
  std::mt19937_64 rng(150);
  std::vector<u64> mu(chunks * N);
  for (u64& w : mu)
    w = rng();
  std::vector<u32> destination(values);
  std::iota(destination.begin(), destination.end(), u32{0});
  std::shuffle(destination.begin(), destination.end(), rng);
  for (u32 gamma = 0; gamma + 1 < r.a(); ++gamma) {
    const rlwe::Gadget gadget = p.gadget(gamma);
    const std::vector<u64> elements = rlwe::galois_elements(r, gamma);
    const rlwe::GaloisKeys keys = rlwe::make_galois_keys(key, gadget, random, elements);
    ASSERT_TRUE(gamma == 0 || backend::has_power_keys(keys, r, gamma));
    std::optional<rlwe::PartialExtraction> partial;
    if (gamma >= 1) partial.emplace(r, gamma);
    const std::size_t W = backend::row_words(p, gamma);
    // Every power of each chunk, and (gamma >= 1) the first only.
    std::vector<rlwe::SeededCiphertext> all, first;
    for (std::size_t c = 0; c < chunks; ++c) {
      const std::span<const u64> chunk(mu.data() + c * N, N);
      if (gamma == 0) {
        all.push_back(enc.encrypt_seeded(chunk));
        continue;
      }
      for (auto& ct : rlwe::encrypt_powers(enc, chunk, gamma))
        all.push_back(std::move(ct));
      first.push_back(rlwe::encrypt_first_power(enc, chunk, gamma));
    }
    for (const bool derive : {false, true}) {
      if (derive && gamma == 0) continue;
      const auto& upload = derive ? first : all;
      for (const u32 bits : {64U, 32U}) {
        const backend::Config config{gamma, rlwe::TreeMode::fast, bits};
        const std::string what = "gamma " + std::to_string(gamma) +
                                 (derive ? ", derived powers, " : ", uploaded powers, ") +
                                 std::to_string(bits) + "-bit rows";
        // The replay: every chunk at once, rows W words apart.
        safhire::testing::CpuOps replay{p, keys, rlwe::KeySwitcher(p, gadget)};
        cuda::Extraction<safhire::testing::CpuOps> device(replay, p, config, true);
        std::vector<u64> want(values * W, kUnwritten);
        std::vector<u32> want32(values * W, 0);
        device.run(
            replay, upload, destination,
            {bits == 64 ? want.data() : nullptr, bits == 32 ? want32.data() : nullptr, nullptr, W},
            0);
        // Rows of 32-bit words are padded to a multiple of 32 words on the CPU.
        const std::size_t S = bits == 32 ? (W + 31) / 32 * 32 : W;
        for (const unsigned threads : {1U, 2U}) {
          for (const std::size_t batch : {std::size_t{1}, std::size_t{2}, std::size_t{0}}) {
            backend::HostOps ops(p, gadget, keys, threads, partial ? &*partial : nullptr);
            cuda::Extraction<backend::HostOps> host(ops, p, config, true);
            std::vector<u64> got(values * S, kUnwritten);
            std::vector<u32> got32(values * S, 0xa5a5a5a5U);
            host.run(ops, upload, destination,
                     {bits == 64 ? got.data() : nullptr, bits == 32 ? got32.data() : nullptr,
                      nullptr, S},
                     batch);
            const std::string where =
                what + ", " + std::to_string(threads) + " threads, batch " + std::to_string(batch);
            for (std::size_t v = 0; v < values; ++v) {
              if (bits == 64) {
                ASSERT_TRUE(std::equal(want.begin() + v * W, want.begin() + (v + 1) * W,
                                       got.begin() + v * S))
                    << where << ", row " << v;
                continue;
              }
              ASSERT_TRUE(std::equal(want32.begin() + v * W, want32.begin() + (v + 1) * W,
                                     got32.begin() + v * S))
                  << where << ", row " << v;
              ASSERT_TRUE(std::all_of(got32.begin() + v * S + W, got32.begin() + (v + 1) * S,
                                      [](u32 w) { return w == 0; }))
                  << where << ", padding of row " << v;
            }
            EXPECT_EQ(ops.key_switches(), replay.key_switches()) << where;
          }
        }
        // The replay's rows are those of an independent oracle: each row's phase under the
        // secret is the value the client encrypted (times t^-gamma at gamma >= 1: the lane 0 of a
        // clean sample's body, the others noise), checked on 64-bit rows at gamma 0.
        if (gamma != 0 || bits != 64) continue;
        for (std::size_t v = 0; v < values; ++v) {
          const u64* row = want.data() + std::size_t{destination[v]} * W;
          rlwe::LweCiphertext lwe;
          lwe.a.assign(row, row + N);
          lwe.b = row[N];
          const u64 phase = enc.phase(rlwe::embed_lwe(r, lwe))[0];
          const auto error = static_cast<std::int64_t>(phase - mu[v]);
          ASSERT_LT(std::abs(error), std::int64_t{1} << 40) << "value " << v;
        }
      }
    }
    // Bad uploads: one ciphertext short, and destinations that are not a permutation.
    backend::HostOps ops(p, gadget, keys, 1, partial ? &*partial : nullptr);
    cuda::Extraction<backend::HostOps> host(ops, p, {gamma, rlwe::TreeMode::fast, 64}, true);
    std::vector<u64> rows(values * W);
    const std::span<const rlwe::SeededCiphertext> short_upload(all.data(), all.size() - 1);
    EXPECT_THROW(host.run(ops, short_upload, destination, {rows.data(), nullptr, nullptr, W}, 1),
                 Error);
    std::vector<u32> twice = destination;
    twice[1] = twice[0];
    EXPECT_THROW(host.run(ops, all, twice, {rows.data(), nullptr, nullptr, W}, 1), Error);
  }
}

INSTANTIATE_TEST_SUITE_P(SmallRings, ExtractRows,
                         ::testing::Values(ring::RingParams(3, 4), ring::RingParams(5, 3),
                                           ring::RingParams(7, 2)),
                         [](const auto& param_info) {
                           return std::to_string(param_info.param.t()) + "_" +
                                  std::to_string(param_info.param.a());
                         });

// A layer with a group of each prepared form over two sources (and a third no tap reads):
// outputs 0-1 (per output), 2-9 (dense: 8 outputs over the same 4 rows), 10-17 (sparse: 8
// outputs, 2 taps each among 16 rows, one row read twice), 18-25 (8 outputs over 4 rows whose
// merged weights reach 2^32: dense although sparse in shape).
std::shared_ptr<backend::LayerWeights> mixed_layer(std::mt19937_64& rng, u32 rows) {
  auto w = std::make_shared<backend::LayerWeights>();
  const auto weight = [&] { return static_cast<std::int32_t>(rng() % 2001) - 1000; };
  const auto end_output = [&] {
    w->tap_start.push_back(static_cast<u32>(w->taps.size()));
    w->bias.push_back(rng());
  };
  for (u32 o = 0; o < 2; ++o) {
    for (u32 k = 0; k < 5; ++k)
      w->taps.push_back({k % 2 == 0 ? 0U : 2U, static_cast<u32>(rng() % rows), weight()});
    end_output();
  }
  w->group_start.push_back(2);
  for (u32 o = 0; o < 8; ++o) {
    for (u32 k = 0; k < 4; ++k)
      w->taps.push_back({0, k + 3, weight()});
    end_output();
  }
  w->group_start.push_back(10);
  for (u32 o = 0; o < 8; ++o) {
    w->taps.push_back({2, 2 * o, weight()});
    w->taps.push_back({0, 2 * o + 1, weight()});
    if (o == 3) w->taps.push_back({0, 2 * o + 1, weight()});  // merged with the last
    end_output();
  }
  w->group_start.push_back(18);
  for (u32 o = 0; o < 8; ++o) {
    w->taps.push_back({0, o % 4, std::numeric_limits<std::int32_t>::min()});
    w->taps.push_back({0, o % 4, std::numeric_limits<std::int32_t>::min()});
    w->taps.push_back({0, o % 4, std::numeric_limits<std::int32_t>::min()});
    end_output();
  }
  w->group_start.push_back(26);
  return w;
}

TEST(LinearRows, HostOpsGiveTheReplaysWordsInEveryForm) {
  const ring::RingParams r(3, 4);
  const rlwe::ParameterSet p("test", 900, r, 8, -50, {1024, 4}, {1024, 4});
  auto random = core::SeededRandom::from_counter(160);
  const rlwe::SecretKey key(p, random);
  const rlwe::GaloisKeys keys = rlwe::make_galois_keys(key, p.gadget(0), random);
  std::mt19937_64 rng(160);
  const u32 rows = 40, N = r.N();
  const auto weights = mixed_layer(rng, rows);
  backend::LinearLayer layer{weights, {}};
  layer.slot.resize(weights->outputs());
  std::iota(layer.slot.begin(), layer.slot.end(), u32{0});
  std::shuffle(layer.slot.begin(), layer.slot.end(), rng);
  // The forms this layer is meant to take.
  core::WorkerPool pool(1);
  const backend::PreparedLayer prepared =
      backend::prepare_layer(*weights, weights->rows_read(), pool);
  using Form = backend::PreparedGroup::Form;
  ASSERT_EQ(prepared.groups.size(), 4U);
  EXPECT_EQ(prepared.groups[0].form, Form::per_output);
  EXPECT_EQ(prepared.groups[1].form, Form::dense);
  EXPECT_EQ(prepared.groups[2].form, Form::sparse);
  EXPECT_EQ(prepared.groups[3].form, Form::dense);
  const std::size_t W = backend::row_words(p, 0);
  for (const u32 bits : {64U, 32U}) {
    const std::size_t S = bits == 32 ? (W + 31) / 32 * 32 : W;
    // Sources 0 and 2 (source 1: no tap reads it), rows S words apart, 32-bit padding zero.
    std::vector<std::vector<u64>> wide(3, std::vector<u64>(rows * S));
    std::vector<std::vector<u32>> narrow(3, std::vector<u32>(rows * S));
    for (std::size_t s = 0; s < 3; ++s) {
      for (std::size_t i = 0; i < rows * S; ++i) {
        wide[s][i] = rng();
        narrow[s][i] = i % S < W ? static_cast<u32>(rng()) : 0;
      }
    }
    std::vector<const void*> sources(3, nullptr);
    for (const std::size_t s : {0U, 2U})
      sources[s] = bits == 64 ? static_cast<const void*>(wide[s].data()) : narrow[s].data();
    const std::vector<std::size_t> counts = {rows, 0, rows};
    const std::size_t outputs = layer.outputs();
    const auto run = [&](auto& ops, auto& resident) {
      std::vector<u64> out(outputs * S, kUnwritten);
      std::vector<u32> out32(outputs * S, 0xa5a5a5a5U);
      cuda::linear_rows(ops, resident, layer, sources, counts, bits == 64 ? out.data() : nullptr,
                        bits == 32 ? out32.data() : nullptr, N, S);
      if (bits == 64) return out;
      return std::vector<u64>(out32.begin(), out32.end());
    };
    safhire::testing::CpuOps replay{p, keys, rlwe::KeySwitcher(p, p.gadget(0))};
    cuda::ResidentWeights<safhire::testing::CpuOps> replay_layers;
    const std::vector<u64> want = run(replay, replay_layers);
    // An oracle for word N of output 0 (per output form, bias included; on 32-bit rows the bias
    // rounded by narrow_word and the sum mod 2^32).
    u64 sum = bits == 64 ? weights->bias[0] : backend::narrow_word(weights->bias[0]);
    for (u32 k = weights->tap_start[0]; k < weights->tap_start[1]; ++k) {
      const backend::Tap& t = weights->taps[k];
      const std::size_t at = std::size_t{t.index} * S + N;
      sum += static_cast<u64>(static_cast<std::int64_t>(t.weight)) *
             (bits == 64 ? wide[t.source][at] : u64{narrow[t.source][at]});
    }
    const u64 word = want[std::size_t{layer.slot[0]} * S + N];
    EXPECT_EQ(word, bits == 64 ? sum : u64{static_cast<u32>(sum)}) << bits << "-bit rows";
    for (const unsigned threads : {1U, 2U}) {
      backend::HostOps ops(p, p.gadget(0), keys, threads, nullptr);
      cuda::ResidentWeights<backend::HostOps> layers;
      EXPECT_EQ(run(ops, layers), want) << bits << "-bit rows, " << threads << " threads";
      EXPECT_EQ(run(ops, layers), want) << bits << "-bit rows, again";
      EXPECT_EQ(layers.uploads(), 1U);
    }
  }
  // A slot map that is not a permutation is refused before any word is written.
  backend::HostOps ops(p, p.gadget(0), keys, 1, nullptr);
  cuda::ResidentWeights<backend::HostOps> layers;
  backend::LinearLayer bad = layer;
  bad.slot[1] = bad.slot[0];
  std::vector<u64> out(layer.outputs() * W);
  std::vector<u64> source(rows * W);
  const std::vector<const void*> sources = {source.data(), nullptr, source.data()};
  EXPECT_THROW(cuda::linear_rows(ops, layers, bad, sources, std::vector<std::size_t>{rows, 0, rows},
                                 out.data(), nullptr, N, W),
               Error);
}

}  // namespace
