// End-to-end encrypted inference of the synthetic models of the paper's shapes (hybrid/zoo.hpp),
// client, service and in-process transport with every message serialized. One inference per
// benchmark (they take seconds to minutes); the counters carry the report:
//   e2e/resnet20/b8/gamma0[/threads2]    ResNet-20, 3x32x32, b in {8, 12, 16}, gamma in {0, 1, 2}
//   e2e/resnet18/b8/gamma2, /gamma0      ResNet-18, 3x64x64
// Counters: client_s, server_s and its extract_s / linear_s / pack_s / other_s, row_bits (of the
// server's rows, hybrid::narrowest_row_bits), key_switches,
// bytes_up, bytes_down (per inference, keys excluded), key_bytes (evaluation keys, once per
// session) and e2e_s_at_1_25MBps = client_s + server_s + (bytes_up + bytes_down) / 1.25 MB/s.
// Each b runs on the default set of that precision (default-b8, -b12, -b16).
#include <benchmark/benchmark.h>

#include <random>
#include <string>
#include <vector>

#include "safhire/hybrid/protocol.hpp"
#include "safhire/hybrid/zoo.hpp"

namespace {

using namespace safhire::hybrid;

void run(benchmark::State& state, ZooModel which, std::uint32_t bits, std::uint32_t gamma,
         unsigned threads) {
  const Model model = synthetic_model(which, bits);
  const auto& params = safhire::rlwe::parameter_set("default-b" + std::to_string(bits));
  std::mt19937_64 rng(5);
  std::vector<std::int64_t> image(model.activation(0).size());
  for (auto& v : image)
    v = static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(model.input_max() + 1));
  InferenceOptions options;
  options.gamma = gamma;
  InferenceReport report;
  double server_s = 0;
  ServerTimes st;
  std::uint64_t switches = 0;
  for (auto _ : state) {
    InferenceService service(model, safhire::rlwe::SecurityPolicy::require_128, threads);
    InProcessTransport transport(service);
    safhire::core::OsRandom random;
    RemoteClient client(transport, params, options, random);
    report = client.infer(image);
    st = service.times();
    server_s = st.total();
    switches = service.key_switches();
  }
  state.counters["client_s"] = report.client_s;
  state.counters["server_s"] = server_s;
  state.counters["extract_s"] = st.extract;
  state.counters["linear_s"] = st.linear;
  state.counters["pack_s"] = st.pack;
  state.counters["other_s"] = st.other;
  state.counters["key_switches"] = static_cast<double>(switches);
  state.counters["row_bits"] = narrowest_row_bits(model, params, gamma);
  state.counters["bytes_up"] = static_cast<double>(report.bytes_up);
  state.counters["bytes_down"] = static_cast<double>(report.bytes_down);
  state.counters["key_bytes"] = static_cast<double>(report.key_bytes);
  state.counters["e2e_s_at_1_25MBps"] =
      report.client_s + server_s +
      static_cast<double>(report.bytes_up + report.bytes_down) / 1.25e6;
}

void add(ZooModel which, std::uint32_t bits, std::uint32_t gamma, unsigned threads) {
  std::string name =
      "e2e/" + to_string(which) + "/b" + std::to_string(bits) + "/gamma" + std::to_string(gamma);
  if (threads > 1) name += "/threads" + std::to_string(threads);
  benchmark::RegisterBenchmark(name.c_str(),
                               [=](benchmark::State& s) { run(s, which, bits, gamma, threads); })
      ->Iterations(1)
      ->Unit(benchmark::kSecond)
      ->UseRealTime();
}

}  // namespace

int main(int argc, char** argv) {
  for (std::uint32_t bits : {8U, 12U, 16U}) {
    for (std::uint32_t gamma : {0U, 1U, 2U})
      add(ZooModel::resnet20_cifar, bits, gamma, 1);
  }
  add(ZooModel::resnet20_cifar, 8, 0, 2);
  add(ZooModel::resnet20_cifar, 8, 2, 2);
  add(ZooModel::resnet18_tiny, 8, 2, 1);
  add(ZooModel::resnet18_tiny, 8, 0, 1);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
