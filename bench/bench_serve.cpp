// The gRPC server under concurrent clients, on loopback in one process: serve/concurrent/<C>
// runs C clients at once, each with its own connection, each doing `kPerClient` inferences of
// the small model (small-b8 on default-b8, gamma 0, every inference its own session with fresh
// keys), against a server of 2 workers with one backend thread each, its per-address session cap
// raised to the global one (64; every client has the same address). Clients and server share
// the machine's cores, so the figures are for the whole system on one box.
// Counters: inferences_per_s (over the wall time of an iteration), p50_ms and p99_ms (latency of
// one inference as its client sees it: key generation, hello, rounds), refused (requests the
// server refused; 0 expected).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "safhire/core/random.hpp"
#include "safhire/hybrid/protocol.hpp"
#include "safhire/hybrid/rpc.hpp"

namespace {

using namespace safhire::hybrid;
using Clock = std::chrono::steady_clock;

constexpr int kPerClient = 2;

void concurrent(benchmark::State& state) {
  const auto clients = static_cast<int>(state.range(0));
  const Model model = Model::load(std::string(SAFHIRE_MODELS_DIR) + "/small-b8.sfhm");
  const auto& params = safhire::rlwe::parameter_set("default-b8");
  // Every client is 127.0.0.1 here: the per-address cap must hold them all.
  ServiceLimits limits;
  limits.max_sessions_per_client = limits.max_sessions;
  InferenceService service(model, safhire::rlwe::SecurityPolicy::require_128, 1, limits);
  RpcServerOptions options;
  options.address = "127.0.0.1:0";
  options.workers = 2;
  RpcServer server(service, options);
  const std::string target = "127.0.0.1:" + std::to_string(server.port());
  std::vector<std::unique_ptr<GrpcTransport>> connections;
  for (int c = 0; c < clients; ++c)
    connections.push_back(std::make_unique<GrpcTransport>(target));
  const std::vector<std::int64_t> image(ModelInfo::of(model).input_size, 1);
  std::vector<double> latencies;
  std::mutex mutex;
  double wall = 0;
  for (auto _ : state) {
    const auto start = Clock::now();
    std::vector<std::thread> threads;
    for (int c = 0; c < clients; ++c) {
      threads.emplace_back([&, c] {
        safhire::core::OsRandom random;
        RemoteClient client(*connections[static_cast<std::size_t>(c)], params, {}, random);
        for (int i = 0; i < kPerClient; ++i) {
          const auto t0 = Clock::now();
          benchmark::DoNotOptimize(client.infer(image).logits);
          const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
          std::lock_guard<std::mutex> lock(mutex);
          latencies.push_back(ms);
        }
      });
    }
    for (std::thread& t : threads)
      t.join();
    wall += std::chrono::duration<double>(Clock::now() - start).count();
  }
  std::sort(latencies.begin(), latencies.end());
  const auto at = [&](double q) {
    return latencies[std::min(latencies.size() - 1,
                              static_cast<std::size_t>(q * static_cast<double>(latencies.size())))];
  };
  state.counters["inferences_per_s"] = static_cast<double>(latencies.size()) / wall;
  state.counters["p50_ms"] = at(0.50);
  state.counters["p99_ms"] = at(0.99);
  state.counters["refused"] = static_cast<double>(server.refused());
  state.counters["clients"] = clients;
}

BENCHMARK(concurrent)
    ->Name("serve/concurrent")
    ->Arg(1)
    ->Arg(4)
    ->Arg(8)
    ->Arg(32)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(1);

}  // namespace

BENCHMARK_MAIN();
