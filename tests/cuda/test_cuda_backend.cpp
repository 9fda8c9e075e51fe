// The CUDA backend against the CPU backend: whole encrypted inferences of the small trained
// models download the same ciphertexts, word for word, at gamma 0, 1 and 2, and the logits equal
// the plaintext evaluator's. Skipped with "no CUDA device" where none is present
// (tests/hybrid/test_backend_emulation.cpp replays the same algorithm on the CPU).
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "cuda_test.hpp"
#include "hybrid/model_files.hpp"
#include "safhire/cuda/backend.hpp"
#include "safhire/hybrid/inference.hpp"

namespace {

using namespace safhire;
using namespace safhire::hybrid;

struct Case {
  const char* model;
  const char* set;
  std::uint32_t gamma;
};

[[maybe_unused]] void PrintTo(const Case& c, std::ostream* os) {
  *os << c.model << " on " << c.set << ", gamma " << c.gamma;
}

class CudaBackend : public safhire::testing::CudaTestWithParam<Case> {};

TEST_P(CudaBackend, DownloadsEqualTheCpuBackendWordForWord) {
  const Case c = GetParam();
  const Model model = Model::load(hybrid::testing::model_path(std::string(c.model) + ".sfhm"));
  const rlwe::ParameterSet& params = rlwe::parameter_set(c.set);
  const auto refs = hybrid::testing::load_reference(std::string(c.model) + ".ref");
  InferenceOptions options;
  options.gamma = c.gamma;
  auto random = core::SeededRandom::from_counter(310);
  Client client(params, options, random);
  core::Seed seed{};
  seed[0] = 4;
  Server cpu(model, params, options, client.evaluation_keys(), seed, 2);
  Server device(
      model, params, options,
      cuda::make_cuda_backend(params, {options.gamma, options.mode}, client.evaluation_keys()),
      seed);
  std::optional<Upload> up = client.start(ModelInfo::of(model), refs[0].pixels);
  while (up) {
    const Download want = cpu.process(*up);
    const Download got = device.process(*up);
    ASSERT_EQ(got.packed.size(), want.packed.size()) << "round " << want.round;
    for (std::size_t p = 0; p < want.packed.size(); ++p) {
      ASSERT_EQ(got.packed[p].a, want.packed[p].a) << "round " << want.round << ", pack " << p;
      ASSERT_EQ(got.packed[p].b, want.packed[p].b) << "round " << want.round << ", pack " << p;
    }
    up = client.receive(got);
  }
  EXPECT_EQ(client.logits(), evaluate(model, refs[0].pixels));
  EXPECT_EQ(device.key_switches(), cpu.key_switches());
}

INSTANTIATE_TEST_SUITE_P(Trained, CudaBackend,
                         ::testing::Values(Case{"small-b8", "default-b8", 0},
                                           Case{"small-b8", "default-b8", 1},
                                           Case{"small-b8", "default-b8", 2},
                                           Case{"small-b12", "default-b12", 1},
                                           Case{"small-b16", "default-b16", 2}),
                         [](const auto& param_info) {
                           std::string s = std::string(param_info.param.model) + "_gamma" +
                                           std::to_string(param_info.param.gamma);
                           for (char& ch : s)
                             ch = ch == '-' ? '_' : ch;
                           return s;
                         });

}  // namespace
