// One encrypted inference of a trained small model through the CPU backend and through another
// backend, round by round, on 64-bit rows and (where the noise allows them) on 32-bit rows: the
// downloads must be equal word for word and the logits equal the plaintext evaluator's. Shared by
// the CUDA backend's emulation (tests/hybrid) and its device test (tests/cuda).
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <ostream>
#include <string>

#include "hybrid/model_files.hpp"
#include "safhire/backend/backend.hpp"
#include "safhire/hybrid/inference.hpp"

namespace safhire::hybrid::testing {

struct BackendCase {
  const char* model;
  const char* set;
  std::uint32_t gamma;
  rlwe::TreeMode mode = rlwe::TreeMode::fast;
};

[[maybe_unused]] inline void PrintTo(const BackendCase& c, std::ostream* os) {
  *os << c.model << " on " << c.set << ", gamma " << c.gamma
      << (c.mode == rlwe::TreeMode::paper ? ", paper mode" : "");
}

inline std::string case_name(const BackendCase& c) {
  std::string s = std::string(c.model) + "_gamma" + std::to_string(c.gamma) +
                  (c.mode == rlwe::TreeMode::paper ? "_paper" : "");
  for (char& ch : s)
    ch = ch == '-' ? '_' : ch;
  return s;
}

using MakeBackend = std::function<std::unique_ptr<backend::Backend>(
    const rlwe::ParameterSet&, const backend::Config&, const rlwe::GaloisKeys&)>;

inline void expect_same_downloads(const BackendCase& c, const MakeBackend& make,
                                  std::uint32_t row_bits) {
  SCOPED_TRACE(std::to_string(row_bits) + "-bit rows");
  const Model model = Model::load(model_path(std::string(c.model) + ".sfhm"));
  const rlwe::ParameterSet& params = rlwe::parameter_set(c.set);
  const auto refs = load_reference(std::string(c.model) + ".ref");
  InferenceOptions options;
  options.gamma = c.gamma;
  options.mode = c.mode;
  auto random = core::SeededRandom::from_counter(300);
  Client client(params, options, random);
  core::Seed seed{};
  seed[0] = 3;
  const backend::Config config{options.gamma, options.mode, row_bits};
  Server cpu(model, params, options,
             backend::make_cpu_backend(params, config, client.evaluation_keys(), 2), seed);
  Server other(model, params, options, make(params, config, client.evaluation_keys()), seed);
  std::optional<Upload> up = client.start(cpu.model_info(), refs[0].pixels);
  while (up) {
    const Download want = cpu.process(*up);
    const Download got = other.process(*up);
    ASSERT_EQ(got.packed.size(), want.packed.size()) << "round " << want.round;
    for (std::size_t p = 0; p < want.packed.size(); ++p) {
      ASSERT_EQ(got.packed[p].bits, want.packed[p].bits);
      ASSERT_EQ(got.packed[p].body_bits, want.packed[p].body_bits);
      ASSERT_EQ(got.packed[p].a, want.packed[p].a) << "round " << want.round << ", pack " << p;
      ASSERT_EQ(got.packed[p].b, want.packed[p].b) << "round " << want.round << ", pack " << p;
    }
    up = client.receive(got);
  }
  EXPECT_EQ(client.logits(), evaluate(model, refs[0].pixels));
  EXPECT_EQ(other.key_switches(), cpu.key_switches());
}

// On 64-bit rows, and on 32-bit rows where the noise estimate allows them for the case.
inline void expect_same_downloads(const BackendCase& c, const MakeBackend& make) {
  expect_same_downloads(c, make, 64);
  const Model model = Model::load(model_path(std::string(c.model) + ".sfhm"));
  if (narrowest_row_bits(model, rlwe::parameter_set(c.set), c.gamma) == 32)
    expect_same_downloads(c, make, 32);
}

}  // namespace safhire::hybrid::testing
