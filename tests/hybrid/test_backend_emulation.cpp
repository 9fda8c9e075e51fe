// The CUDA backend's algorithm (cuda/device_backend.hpp) replayed on the CPU (tests/cpu_ops.hpp:
// the kernels' per-word functions in loops): whole encrypted inferences through it download the
// same ciphertexts, word for word, as through the CPU backend, at gamma 0, 1 and 2, and the
// logits equal the plaintext evaluator's. This checks the device layouts and index arithmetic of
// extraction, the linear layer, gathering and packing where there is no GPU; tests/cuda runs the
// real kernels where there is one.
#include <gtest/gtest.h>

#include "cpu_ops.hpp"
#include "device_backend.hpp"
#include "model_files.hpp"
#include "safhire/core/error.hpp"
#include "safhire/hybrid/inference.hpp"

namespace {

using namespace safhire;
using namespace safhire::hybrid;
using safhire::testing::CpuOps;

struct Case {
  const char* model;
  const char* set;
  std::uint32_t gamma;
};

[[maybe_unused]] void PrintTo(const Case& c, std::ostream* os) {
  *os << c.model << " on " << c.set << ", gamma " << c.gamma;
}

class BackendEmulation : public ::testing::TestWithParam<Case> {};

TEST_P(BackendEmulation, DownloadsEqualTheCpuBackendWordForWord) {
  const Case c = GetParam();
  const Model model = Model::load(hybrid::testing::model_path(std::string(c.model) + ".sfhm"));
  const rlwe::ParameterSet& params = rlwe::parameter_set(c.set);
  const auto refs = hybrid::testing::load_reference(std::string(c.model) + ".ref");
  InferenceOptions options;
  options.gamma = c.gamma;
  auto random = core::SeededRandom::from_counter(300);
  Client client(params, options, random);
  const rlwe::GaloisKeys& keys = client.evaluation_keys();
  core::Seed seed{};
  seed[0] = 3;
  Server cpu(model, params, options, keys, seed, 2);
  const backend::Config config{options.gamma, options.mode};
  Server device(
      model, params, options,
      std::make_unique<cuda::DeviceBackend<CpuOps>>(
          params, config, CpuOps{params, keys, rlwe::KeySwitcher(params, params.gadget(c.gamma))},
          "emulated cuda"),
      seed);
  std::optional<Upload> up = client.start(ModelInfo::of(model), refs[0].pixels);
  while (up) {
    const Download want = cpu.process(*up);
    const Download got = device.process(*up);
    ASSERT_EQ(got.packed.size(), want.packed.size()) << "round " << want.round;
    for (std::size_t p = 0; p < want.packed.size(); ++p) {
      ASSERT_EQ(got.packed[p].bits, want.packed[p].bits);
      ASSERT_EQ(got.packed[p].a, want.packed[p].a) << "round " << want.round << ", pack " << p;
      ASSERT_EQ(got.packed[p].b, want.packed[p].b) << "round " << want.round << ", pack " << p;
    }
    up = client.receive(want);
  }
  EXPECT_EQ(client.logits(), evaluate(model, refs[0].pixels));
  EXPECT_EQ(device.key_switches(), cpu.key_switches());
}

INSTANTIATE_TEST_SUITE_P(Trained, BackendEmulation,
                         ::testing::Values(Case{"small-b8", "default-b8", 0},
                                           Case{"small-b12", "default-b12", 1},
                                           Case{"small-b8", "default-b8", 2}),
                         [](const auto& param_info) {
                           std::string s = std::string(param_info.param.model) + "_gamma" +
                                           std::to_string(param_info.param.gamma);
                           for (char& ch : s)
                             ch = ch == '-' ? '_' : ch;
                           return s;
                         });

TEST(BackendEmulation, PaperModeIsRefusedWithATypedError) {
  const rlwe::ParameterSet& params = rlwe::parameter_set("default-b8");
  auto random = core::SeededRandom::from_counter(301);
  const rlwe::SecretKey key(params, random);
  const rlwe::GaloisKeys keys = rlwe::make_galois_keys(key, params.gadget(0), random);
  try {
    cuda::DeviceBackend<CpuOps> b(params, {0, rlwe::TreeMode::paper},
                                  CpuOps{params, keys, rlwe::KeySwitcher(params, params.gadget(0))},
                                  "emulated cuda");
    FAIL() << "paper mode accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::unsupported);
  }
}

}  // namespace
