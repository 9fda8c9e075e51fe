// `safhire demo`, `serve` and `infer`: encrypted inference of Fashion-MNIST test images with a
// trained model, in process (demo) or over TCP (serve / infer); `safhire accuracy`: the same
// images through the plaintext evaluator only.
#include "inference_commands.hpp"
#include "options.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "safhire/core/error.hpp"
#include "safhire/hybrid/attack.hpp"
#include "safhire/hybrid/dataset.hpp"
#include "safhire/hybrid/failures.hpp"
#include "safhire/hybrid/plan.hpp"
#include "safhire/hybrid/protocol.hpp"
#ifdef SAFHIRE_HAVE_RPC
#include "safhire/hybrid/rpc.hpp"
#endif
#include "safhire/hybrid/zoo.hpp"
#if SAFHIRE_HAVE_CUDA
#include "safhire/cuda/backend.hpp"
#endif

namespace safhire::apps {

namespace {

using Clock = std::chrono::steady_clock;
using namespace safhire::hybrid;

constexpr double kBandwidth = 1.25e6;  // bytes per second (10 Mbit/s), as in the seed paper

std::string default_model() {
  const std::string dir = SAFHIRE_MODELS_DIR;
  for (const char* name : {"resnet20-b8.sfhm", "small-b8.sfhm"}) {
    if (std::filesystem::exists(dir + "/" + name)) return dir + "/" + name;
  }
  return dir + "/resnet20-b8.sfhm";
}

// The first default set (b8, b12, b16) on which every round of the model decrypts within the
// failure bound at this gamma (a b = 8 model with 16-bit first and last rounds needs the noise
// of a larger ring).
std::string default_set(const Model& model, std::uint32_t gamma) {
  for (const char* name : {"default-b8", "default-b12", "default-b16"}) {
    const rlwe::ParameterSet& p = rlwe::parameter_set(name);
    if (gamma >= p.ring.a()) continue;
    const auto noise = estimate_round_noise(model, p, gamma);
    if (std::all_of(noise.begin(), noise.end(), [](const RoundNoise& n) {
          return n.failure_probability <= kMaxFailureProbability;
        })) {
      return name;
    }
  }
  return "default-b16";
}

std::int64_t argmax(const std::vector<std::int64_t>& v) {
  return static_cast<std::int64_t>(predicted_class(v));
}

void progress(std::size_t done, std::size_t total, std::size_t correct) {
  constexpr int kWidth = 30;
  const int filled = static_cast<int>(kWidth * done / std::max<std::size_t>(total, 1));
  std::fprintf(stderr, "\r[%.*s%*s] %zu/%zu images, accuracy %.1f%%", filled,
               "##############################", kWidth - filled, "", done, total,
               done ? 100.0 * static_cast<double>(correct) / static_cast<double>(done) : 0.0);
  if (done == total) std::fputc('\n', stderr);
  std::fflush(stderr);
}

struct Totals {
  std::size_t images = 0, correct = 0, plain_correct = 0, agree = 0;
  double client_s = 0, keygen_s = 0;
  std::uint64_t up = 0, down = 0, keys = 0;
};

// Runs `count` images through `client`, checking each against the plaintext evaluator when the
// model is at hand.
Totals run_images(RemoteClient& client, const Model* model, const LabelledImages& data,
                  bool show_progress) {
  Totals t;
  for (std::size_t i = 0; i < data.images.size(); ++i) {
    const InferenceReport r = client.infer(data.images[i], data.max);
    const std::int64_t predicted = argmax(r.logits);
    t.correct += predicted == data.labels[i];
    if (model) {
      const std::int64_t plain = argmax(evaluate(*model, data.images[i]));
      t.plain_correct += plain == data.labels[i];
      t.agree += plain == predicted;
    }
    t.client_s += r.client_s;
    t.keygen_s += r.keygen_s;
    t.up += r.bytes_up;
    t.down += r.bytes_down;
    t.keys += r.key_bytes;
    ++t.images;
    if (show_progress) progress(t.images, data.images.size(), t.correct);
  }
  return t;
}

// gamma defaults to 2, the seed paper's headline setting (Table 3): the fewest key switches.
InferenceOptions options_from(Options& opt) {
  InferenceOptions o;
  o.gamma = opt.number("gamma", 2);
  const std::string mode = opt.get("mode", "fast");
  require(mode == "fast" || mode == "paper", ErrorCode::invalid_argument,
          "--mode is fast or paper");
  o.mode = mode == "fast" ? rlwe::TreeMode::fast : rlwe::TreeMode::paper;
  return o;
}

unsigned all_cores() {
  return std::max(1U, std::thread::hardware_concurrency());
}

// --backend cpu (default) or cuda: the service's backend factory.
InferenceService::BackendFactory backend_named(const std::string& name, unsigned threads) {
  if (name == "cuda") {
#if SAFHIRE_HAVE_CUDA
    return [threads](const rlwe::ParameterSet& p, const backend::Config& c,
                     const rlwe::GaloisKeys& k) { return cuda::make_cuda_backend(p, c, k); };
#else
    throw Error(ErrorCode::unsupported, "--backend cuda: this build has no CUDA backend");
#endif
  }
  require(name == "cpu", ErrorCode::invalid_argument, "--backend is cpu or cuda");
  return
      [threads](const rlwe::ParameterSet& p, const backend::Config& c, const rlwe::GaloisKeys& k) {
        return backend::make_cpu_backend(p, c, k, threads);
      };
}

std::atomic<bool> g_stop{false};
void on_signal(int) {
  g_stop = true;
}

}  // namespace

int run_demo(int argc, char** argv) {
  Options opt(argc, argv, 2);
  const bool json = opt.flag("json");
  const Model model = Model::load(opt.get("model", default_model()));
  const std::string set_name = opt.get("set", "");
  // 25 images: a first run that ends within a few minutes on two cores; --images 100 or more for
  // an accuracy figure.
  const std::uint32_t images = opt.number("images", 25);
  const std::uint32_t first = opt.number("first", 0);
  const std::uint32_t threads = opt.number("threads", all_cores());
  const InferenceOptions options = options_from(opt);
  const std::string set = set_name.empty() ? default_set(model, options.gamma) : set_name;
  const std::string backend_name = opt.get("backend", "cpu");
  opt.finish();
  InferenceService service(model, rlwe::SecurityPolicy::require_128,
                           backend_named(backend_name, threads));
  const rlwe::ParameterSet& params = rlwe::parameter_set(set);
  const LabelledImages data = load_fashion_mnist_test(first, images, model.input_bits());
  InProcessTransport transport(service);
  core::OsRandom random;
  RemoteClient client(transport, params, options, random);
  // The service's rows: the narrowest the noise allows (on either backend).
  const std::uint32_t row_bits = session_config(model, params, options).row_bits;
  if (!json) {
    std::printf(
        "Safhire demo: %s (%zu rounds) on %s, gamma = %u, %s packing, %s backend (%u-bit rows), "
        "%u server thread(s); %zu Fashion-MNIST test images from #%u, in process\n",
        model.name().c_str(), model.rounds().size(), params.name.c_str(), options.gamma,
        options.mode == rlwe::TreeMode::fast ? "fast" : "paper", backend_name.c_str(), row_bits,
        threads, data.images.size(), first);
  }
  const Totals t = run_images(client, &model, data, !json);
  const ServerTimes st = service.times();
  const double n = static_cast<double>(t.images);
  const double server_s = st.total() / n, client_s = t.client_s / n;
  const double up = static_cast<double>(t.up) / n, down = static_cast<double>(t.down) / n;
  const double keys = static_cast<double>(t.keys) / n;
  const double e2e = client_s + server_s + (up + down) / kBandwidth;
  const double accuracy = static_cast<double>(t.correct) / n;
  const double plain = static_cast<double>(t.plain_correct) / n;
  const double agreement = static_cast<double>(t.agree) / n;
  if (json) {
    std::printf(
        "{\"model\": \"%s\", \"set\": \"%s\", \"gamma\": %u, \"row_bits\": %u, \"first\": %u, "
        "\"images\": %zu, \"accuracy\": %.4f, "
        "\"plaintext_accuracy\": %.4f, \"agreement\": %.4f, \"client_s\": %.4f, \"server_s\": "
        "%.4f, \"server_extract_s\": %.4f, \"server_linear_s\": %.4f, \"server_pack_s\": %.4f, "
        "\"server_other_s\": %.4f, \"keygen_s\": %.4f, \"bytes_up\": %.0f, \"bytes_down\": %.0f, "
        "\"key_bytes\": %.0f, \"key_switches\": %.0f, \"e2e_s_at_1_25MBps\": %.4f}\n",
        model.name().c_str(), params.name.c_str(), options.gamma, row_bits, first, t.images,
        accuracy, plain, agreement, client_s, server_s, st.extract / n, st.linear / n, st.pack / n,
        st.other / n, t.keygen_s / n, up, down, keys,
        static_cast<double>(service.key_switches()) / n, e2e);
    return 0;
  }
  std::printf("accuracy %.2f%% (plaintext quantized %.2f%%), agreement with plaintext %.2f%%\n",
              100 * accuracy, 100 * plain, 100 * agreement);
  std::printf(
      "per image: client %.3f s, server %.3f s (extract %.3f, linear %.3f, pack %.3f, "
      "other %.3f; %.0f key switches)\n",
      client_s, server_s, st.extract / n, st.linear / n, st.pack / n, st.other / n,
      static_cast<double>(service.key_switches()) / n);
  std::printf(
      "communication per image: %.2f MB up, %.2f MB down (evaluation keys %.2f MB, "
      "once per session, generated in %.2f s)\n",
      up / 1e6, down / 1e6, keys / 1e6, t.keygen_s / n);
  std::printf("end to end at 1.25 MB/s: %.2f s per image\n", e2e);
  return t.agree == t.images ? 0 : 1;
}

int run_accuracy(int argc, char** argv) {
  Options opt(argc, argv, 2);
  const bool json = opt.flag("json");
  const Model model = Model::load(opt.get("model", default_model()));
  const std::uint32_t images = opt.number("images", 0);
  const std::uint32_t first = opt.number("first", 0);
  const std::uint32_t threads = opt.number("threads", all_cores());
  const std::uint32_t flood = opt.number("flood", 0);
  opt.finish();
  const LabelledImages data = load_fashion_mnist_test(first, images, model.input_bits());
  const auto start = Clock::now();
  const std::size_t correct = flood == 0
                                  ? count_correct(model, data.images, data.labels, threads)
                                  : count_correct_flooded(model, data.images, data.labels, flood,
                                                          core::OsRandom().seed(), threads);
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  const double n = static_cast<double>(data.images.size());
  if (json) {
    std::printf(
        "{\"model\": \"%s\", \"first\": %u, \"images\": %zu, \"correct\": %zu, "
        "\"plaintext_accuracy\": %.4f, \"flood\": %u, \"threads\": %u, \"seconds\": %.2f}\n",
        model.name().c_str(), first, data.images.size(), correct, static_cast<double>(correct) / n,
        flood, threads, seconds);
  } else {
    std::printf(
        "%s: plaintext quantized accuracy %.2f%% (%zu of %zu Fashion-MNIST test images from "
        "#%u), C++ integer evaluator%s, %u thread(s), %.1f s\n",
        model.name().c_str(), 100.0 * static_cast<double>(correct) / n, correct, data.images.size(),
        first, flood == 0 ? "" : (", flooded +-" + std::to_string(flood)).c_str(), threads,
        seconds);
  }
  return 0;
}

int run_bench(int argc, char** argv) {
  Options opt(argc, argv, 2);
  const bool json = opt.flag("json");
  const std::string name = opt.get("model", "resnet20");
  const std::uint32_t bits = opt.number("bits", 8);
  const std::uint32_t threads = opt.number("threads", 1);
  const InferenceOptions options = options_from(opt);
  const std::string set = opt.get("set", "default-b" + std::to_string(bits));
  const std::string backend_name = opt.get("backend", "cpu");
  opt.finish();
  ZooModel which = ZooModel::resnet20_cifar;
  if (name == "resnet18") {
    which = ZooModel::resnet18_tiny;
  } else if (name == "resnet34") {
    which = ZooModel::resnet34_imagenet;
  } else {
    require(name == "resnet20", ErrorCode::invalid_argument,
            "--model is resnet20, resnet18 or resnet34");
  }
  const Model model = synthetic_model(which, bits);
  const rlwe::ParameterSet& params = rlwe::parameter_set(set);
  std::vector<std::int64_t> image(model.activation(0).size());
  core::OsRandom random;
  for (auto& v : image)
    v = static_cast<std::int64_t>(random.word() %
                                  static_cast<std::uint64_t>(model.input_max() + 1));
  InferenceService service(model, rlwe::SecurityPolicy::require_128,
                           backend_named(backend_name, threads));
  InProcessTransport transport(service);
  RemoteClient client(transport, params, options, random);
  if (!json) {
    std::printf("%s (synthetic weights, %zu rounds) on %s, gamma = %u, %s backend, %u thread(s)\n",
                model.name().c_str(), model.rounds().size(), params.name.c_str(), options.gamma,
                backend_name.c_str(), threads);
    std::fflush(stdout);
  }
  const InferenceReport r = client.infer(image);
  const ServerTimes st = service.times();
  // The encrypted logits against the plaintext evaluator's: the run's correctness check.
  const bool logits_equal = r.logits == evaluate(model, image);
  const double e2e =
      r.client_s + st.total() + static_cast<double>(r.bytes_up + r.bytes_down) / kBandwidth;
  if (json) {
    std::printf(
        "{\"model\": \"%s\", \"set\": \"%s\", \"gamma\": %u, \"backend\": \"%s\", "
        "\"threads\": %u, \"client_s\": %.4f, \"server_s\": %.4f, \"server_extract_s\": %.4f, "
        "\"server_linear_s\": %.4f, \"server_pack_s\": %.4f, \"server_other_s\": %.4f, "
        "\"key_switches\": %llu, \"bytes_up\": %llu, \"bytes_down\": %llu, \"key_bytes\": %llu, "
        "\"e2e_s_at_1_25MBps\": %.4f, \"logits_equal\": %s}\n",
        model.name().c_str(), params.name.c_str(), options.gamma, backend_name.c_str(), threads,
        r.client_s, st.total(), st.extract, st.linear, st.pack, st.other,
        static_cast<unsigned long long>(service.key_switches()),
        static_cast<unsigned long long>(r.bytes_up), static_cast<unsigned long long>(r.bytes_down),
        static_cast<unsigned long long>(r.key_bytes), e2e, logits_equal ? "true" : "false");
    return logits_equal ? 0 : 1;
  }
  std::printf(
      "client %.3f s, server %.3f s (extract %.3f, linear %.3f, pack %.3f, other %.3f; "
      "%llu key switches)\n",
      r.client_s, st.total(), st.extract, st.linear, st.pack, st.other,
      static_cast<unsigned long long>(service.key_switches()));
  std::printf("%.2f MB up, %.2f MB down (keys %.2f MB); end to end at 1.25 MB/s: %.2f s\n",
              static_cast<double>(r.bytes_up) / 1e6, static_cast<double>(r.bytes_down) / 1e6,
              static_cast<double>(r.key_bytes) / 1e6, e2e);
  std::printf("logits: %s\n", logits_equal ? "equal to the plaintext evaluator's"
                                           : "MISMATCH against the plaintext evaluator's");
  return logits_equal ? 0 : 1;
}

int run_plan(int argc, char** argv) {
  Options opt(argc, argv, 2);
  const Model model = Model::load(opt.get("model", default_model()));
  const std::string set_name = opt.get("set", "");
  const InferenceOptions options = options_from(opt);
  opt.finish();
  const std::string set = set_name.empty() ? default_set(model, options.gamma) : set_name;
  const rlwe::ParameterSet& params = rlwe::parameter_set(set);
  const Plan plan = plan_inference(model, params, options);
  std::printf("%s on %s (N = %u), gamma = %u, %s packing, %u-bit rows on the server\n",
              model.name().c_str(), params.name.c_str(), params.ring.N(), options.gamma,
              options.mode == rlwe::TreeMode::fast ? "fast" : "paper", plan.row_bits);
  std::printf("%5s %8s %6s %7s %5s %5s %5s %6s %9s %10s %9s %9s\n", "round", "inputs", "cts",
              "outputs", "packs", "b", "up", "down", "log2 std", "P[fail]", "switches", "kB up/dn");
  for (std::size_t r = 0; r < plan.rounds.size(); ++r) {
    const RoundPlan& p = plan.rounds[r];
    // cts: uploaded ciphertexts, marked * where the server derives the powers of each chunk.
    std::printf("%5zu %8zu %5zu%c %7zu %5zu %5u %5u %3u/%-2u %9.2f %10.1e %9llu %4.0f/%-4.0f\n", r,
                p.inputs, p.uploaded_ciphertexts, p.derived_powers ? '*' : ' ', p.outputs, p.packs,
                p.round_bits, p.upload_bits, p.download_bits, p.download_body_bits,
                p.noise.log2_std, p.noise.failure_probability,
                static_cast<unsigned long long>(p.key_switches.value_or(0)),
                static_cast<double>(p.bytes_up) / 1e3, static_cast<double>(p.bytes_down) / 1e3);
  }
  if (std::any_of(plan.rounds.begin(), plan.rounds.end(),
                  [](const RoundPlan& p) { return p.derived_powers; })) {
    std::printf("(* the first power of each chunk uploaded, the others derived by the server)\n");
  }
  std::printf("total: %.2f MB up, %.2f MB down, %llu key switches%s\n",
              static_cast<double>(plan.bytes_up) / 1e6, static_cast<double>(plan.bytes_down) / 1e6,
              static_cast<unsigned long long>(plan.key_switches.value_or(0)),
              plan.key_switches ? "" : " (paper mode: not predicted)");
  return 0;
}

int run_attack(int argc, char** argv) {
  Options opt(argc, argv, 2);
  const bool json = opt.flag("json");
  const std::string server = opt.get("server", "");
  const Model model = Model::load(opt.get("model", default_model()));
  const std::string set = opt.get("set", "default-b8");
  const std::string rounds_text = opt.get("rounds", "0");
  ShuffleAttackOptions attack;
  attack.repeats = opt.number("repeats", 1);
  attack.together = !opt.flag("alone");
  attack.patience = opt.number("patience", 0);
  attack.max_sessions = opt.number("max-sessions", 1000000);
  const std::uint32_t flood = opt.number("flood", 0);
  InferenceOptions options = options_from(opt);
  opt.finish();
  if (rounds_text != "all") {
    std::size_t at = 0;
    while (at <= rounds_text.size()) {
      const std::size_t comma = std::min(rounds_text.find(',', at), rounds_text.size());
      const std::string one = rounds_text.substr(at, comma - at);
      require(!one.empty() && one.find_first_not_of("0123456789") == std::string::npos,
              ErrorCode::invalid_argument, "--rounds is all or R[,R...]");
      attack.rounds.push_back(static_cast<std::uint32_t>(std::stoul(one)));
      at = comma + 1;
    }
  }
  const rlwe::ParameterSet& params = rlwe::parameter_set(set);
  std::unique_ptr<InferenceService> local;
  std::unique_ptr<Transport> transport;
  if (server.empty()) {
    // In process: a service of --model, as `serve` would run it (with --flood F), but evicting
    // abandoned sessions at once (`serve`'s default, --evict-after 10, lets one address open 16
    // sessions per 10 s: a rate limit an attacker with more addresses does not meet).
    ServiceLimits limits;
    limits.evict_after = std::chrono::milliseconds(0);
    local = std::make_unique<InferenceService>(model, rlwe::SecurityPolicy::require_128,
                                               all_cores(), limits);
    local->set_flood(flood);
    transport = std::make_unique<InProcessTransport>(*local);
  } else {
    require(flood == 0, ErrorCode::invalid_argument,
            "--flood is the server's: give it to `safhire serve`");
#ifdef SAFHIRE_HAVE_RPC
    transport = std::make_unique<GrpcTransport>(server);
#else
    throw Error(ErrorCode::unsupported, "attack --server: this build has no gRPC");
#endif
  }
  core::OsRandom random;
  const auto start = Clock::now();
  const ShuffleAttackReport report = attack_shuffle(
      *transport, params, options, random, attack, [&](std::uint64_t done, std::uint64_t needed) {
        if (done % 64 == 0 || done == needed)  // stderr: the JSON on stdout stays clean
          std::fprintf(stderr, "\r%llu/%llu sessions", static_cast<unsigned long long>(done),
                       static_cast<unsigned long long>(needed));
      });
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  std::fprintf(stderr, "\n");
  std::string rounds_json;
  bool all_exact = true;
  for (const RoundRecovery& r : report.rounds) {
    const RecoveryCheck check = check_recovery(model, r);
    all_exact = all_exact && (r.distinct_only ? check.complete() : check.exact());
    if (json) {
      rounds_json += std::string(rounds_json.empty() ? "" : ", ") +
                     "{\"round\": " + std::to_string(r.round) +
                     ", \"queries\": " + std::to_string(r.queries) +
                     ", \"distinct_only\": " + (r.distinct_only ? "true" : "false") +
                     ", \"last_new_session\": " + std::to_string(r.last_new_session) +
                     ", \"columns\": " + std::to_string(check.columns) +
                     ", \"exact_columns\": " + std::to_string(check.exact_columns) +
                     ", \"wrong_columns\": " + std::to_string(check.wrong_columns) +
                     ", \"distinct_columns\": " + std::to_string(check.distinct_columns) +
                     ", \"distinct_found\": " + std::to_string(check.distinct_found) +
                     ", \"exact_bias\": " + (check.exact_bias ? "true" : "false") + "}";
    } else if (r.distinct_only) {
      std::printf(
          "round %u: %llu queries; bias multiset %s; %zu of %zu distinct columns found (the last "
          "in session %llu), %zu wrong\n",
          r.round, static_cast<unsigned long long>(r.queries), check.exact_bias ? "exact" : "wrong",
          check.distinct_found, check.distinct_columns,
          static_cast<unsigned long long>(r.last_new_session), check.wrong_columns);
    } else {
      std::printf(
          "round %u: %llu queries; bias multiset %s; %zu of %zu columns exact, %zu wrong; %zu of "
          "%zu distinct columns seen\n",
          r.round, static_cast<unsigned long long>(r.queries), check.exact_bias ? "exact" : "wrong",
          check.exact_columns, check.columns, check.wrong_columns, check.distinct_found,
          check.distinct_columns);
    }
  }
  if (json) {
    std::printf(
        "{\"model\": \"%s\", \"set\": \"%s\", \"gamma\": %u, \"flood\": %u, \"repeats\": %u, "
        "\"together\": %s, \"patience\": %llu, \"sessions\": %llu, \"retries\": %llu, "
        "\"seconds\": %.1f, \"all_exact\": %s, \"rounds\": [%s]}\n",
        model.name().c_str(), set.c_str(), options.gamma, flood, attack.repeats,
        attack.together ? "true" : "false", static_cast<unsigned long long>(attack.patience),
        static_cast<unsigned long long>(report.sessions),
        static_cast<unsigned long long>(report.retries), seconds, all_exact ? "true" : "false",
        rounds_json.c_str());
  } else {
    std::printf("%s: %llu sessions (%llu hellos refused and retried), %.1f s; %s\n",
                model.name().c_str(), static_cast<unsigned long long>(report.sessions),
                static_cast<unsigned long long>(report.retries), seconds,
                all_exact ? "every probed round recovered exactly (as sorted columns)"
                          : "not every probed round recovered exactly");
    std::printf(
        "(sorted columns: which rows they share, and beyond round 0 which input each "
        "belongs to, stay unknown)\n");
  }
  return 0;
}

int run_failures(int argc, char** argv) {
  Options opt(argc, argv, 2);
  const bool json = opt.flag("json");
  const Model model = Model::load(opt.get("model", default_model()));
  const std::string set_name = opt.get("set", "");
  const double results = std::stod(opt.get("results", "1e7"));
  const std::uint32_t images = opt.number("images", 100);
  const std::uint32_t first = opt.number("first", 0);
  const std::uint32_t threads = opt.number("threads", all_cores());
  const InferenceOptions options = options_from(opt);
  const std::string set = set_name.empty() ? default_set(model, options.gamma) : set_name;
  opt.finish();
  require(results >= 1 && results <= 1e12, ErrorCode::invalid_argument, "--results out of 1..1e12");
  const rlwe::ParameterSet& params = rlwe::parameter_set(set);
  const LabelledImages data = load_fashion_mnist_test(first, images, model.input_bits());
  core::OsRandom random;
  const auto start = Clock::now();
  const FailureReport report =
      measure_failures(model, params, options, data.images, static_cast<std::uint64_t>(results),
                       threads, random, [&](const FailureReport& so_far) {
                         if (!json)
                           std::fprintf(stderr, "\r%llu inferences, %llu results, %llu wrong",
                                        static_cast<unsigned long long>(so_far.inferences),
                                        static_cast<unsigned long long>(so_far.results),
                                        static_cast<unsigned long long>(so_far.wrong));
                       });
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  if (json) {
    std::string rounds, tail;
    for (const RoundFailures& r : report.rounds) {
      char one[320];
      std::snprintf(one, sizeof one,
                    "%s{\"results\": %llu, \"wrong\": %llu, \"estimated_log2_std\": %.3f, "
                    "\"estimated_failure\": %.3e, \"measured_log2_std\": %.3f, "
                    "\"max_sigmas\": %.3f, \"half_step_sigmas\": %.3f}",
                    rounds.empty() ? "" : ", ", static_cast<unsigned long long>(r.results),
                    static_cast<unsigned long long>(r.wrong), r.estimated_log2_std,
                    r.estimated_failure, r.measured_log2_std, r.max_sigmas, r.half_step_sigmas);
      rounds += one;
    }
    for (const std::uint64_t t : report.tail)
      tail += (tail.empty() ? "" : ", ") + std::to_string(t);
    std::printf(
        "{\"model\": \"%s\", \"set\": \"%s\", \"gamma\": %u, \"threads\": %u, \"inferences\": "
        "%llu, \"results\": %llu, \"wrong\": %llu, \"expected_wrong\": %.3e, \"seconds\": %.1f, "
        "\"tail_step_sigmas\": %.2f, \"tail\": [%s], \"rounds\": [%s]}\n",
        model.name().c_str(), set.c_str(), options.gamma, threads,
        static_cast<unsigned long long>(report.inferences),
        static_cast<unsigned long long>(report.results),
        static_cast<unsigned long long>(report.wrong), report.expected_wrong(), seconds,
        FailureReport::kTailStep, tail.c_str(), rounds.c_str());
  } else {
    std::fprintf(stderr, "\n");
    double widest = 0, closest = 1e9;
    for (const RoundFailures& r : report.rounds) {
      widest = std::max(widest, r.max_sigmas);
      closest = std::min(closest, r.half_step_sigmas);
    }
    std::printf(
        "%s on %s, gamma = %u: %llu results of %llu inferences decrypted, %llu wrong (the "
        "estimate expects %.2e); largest noise %.2f estimated standard deviations, a wrong "
        "result at %.2f or more; %.1f s\n",
        model.name().c_str(), set.c_str(), options.gamma,
        static_cast<unsigned long long>(report.results),
        static_cast<unsigned long long>(report.inferences),
        static_cast<unsigned long long>(report.wrong), report.expected_wrong(), widest, closest,
        seconds);
  }
  return report.wrong == 0 ? 0 : 1;
}

#ifdef SAFHIRE_HAVE_RPC
int run_serve(int argc, char** argv) {
  Options opt(argc, argv, 2);
  const Model model = Model::load(opt.get("model", default_model()));
  RpcServerOptions rpc;
  const std::uint32_t port = opt.number("port", 7788);
  require(port < 65536, ErrorCode::invalid_argument, "--port is at most 65535");
  rpc.address = opt.get("listen", "127.0.0.1:" + std::to_string(port));
  rpc.workers = opt.number("workers", rpc.workers);
  rpc.queue = opt.number("queue", static_cast<std::uint32_t>(rpc.queue));
  rpc.tls_cert = opt.get("tls-cert", "");
  rpc.tls_key = opt.get("tls-key", "");
  rpc.keepalive = std::chrono::seconds(opt.number("keepalive", 30));
  rpc.connection_idle = std::chrono::seconds(opt.number("connection-idle", 300));
  rpc.handshake_timeout = std::chrono::seconds(opt.number("handshake-timeout", 10));
  rpc.calls_per_connection = opt.number("calls-per-connection", rpc.calls_per_connection);
  rpc.transport_memory = std::uint64_t{opt.number("transport-memory", 512)} << 20;
  ServiceLimits limits;
  limits.max_sessions = opt.number("max-sessions", 64);
  limits.max_sessions_per_client = opt.number("max-sessions-per-client", 16);
  limits.idle_timeout = std::chrono::seconds(opt.number("session-idle", 120));
  limits.evict_after = std::chrono::seconds(opt.number("evict-after", 10));
  limits.memory_budget = std::uint64_t{opt.number("memory-budget", 8192)} << 20;
  const auto grace = std::chrono::seconds(opt.number("grace", 30));
  const std::uint32_t threads = opt.number("threads", 1);
  const std::string backend_name = opt.get("backend", "cpu");
  const std::uint32_t flood = opt.number("flood", 0);
  opt.finish();
  InferenceService service(model, rlwe::SecurityPolicy::require_128,
                           backend_named(backend_name, threads), limits);
  service.set_flood(flood);
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  RpcServer server(service, rpc);
  // Listening first, then the line that says where (--port 0: a free one, as tests use).
  const std::string host = rpc.address.substr(0, rpc.address.rfind(':'));
  std::printf("serving %s (%u-bit inputs) on %s port %u%s (Ctrl-C to stop)\n", model.name().c_str(),
              model.input_bits(), host.c_str(), static_cast<unsigned>(server.port()),
              rpc.tls_cert.empty() ? "" : " with TLS");
  std::fflush(stdout);
  while (!g_stop.load())
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  std::printf("stopping: finishing the requests in flight (up to %lld s)\n",
              static_cast<long long>(grace.count()));
  std::fflush(stdout);
  server.shutdown(grace);
  std::printf("stopped after %llu requests served, %llu refused\n",
              static_cast<unsigned long long>(server.served()),
              static_cast<unsigned long long>(server.refused()));
  return 0;
}

int run_infer(int argc, char** argv) {
  Options opt(argc, argv, 2);
  const std::string server = opt.get("server", "127.0.0.1:7788");
  const std::uint32_t images = opt.number("images", 10);
  const std::uint32_t first = opt.number("first", 0);
  const std::string set = opt.get("set", "default-b8");
  RpcClientOptions rpc;
  rpc.tls_ca = opt.get("tls-ca", "");
  rpc.tls_name = opt.get("tls-name", "");
  rpc.deadline = std::chrono::seconds(opt.number("deadline", 300));
  const InferenceOptions options = options_from(opt);
  opt.finish();
  require(server.rfind(':') != std::string::npos, ErrorCode::invalid_argument,
          "--server is HOST:PORT");
  const rlwe::ParameterSet& params = rlwe::parameter_set(set);
  // The pixels as they are (8 bits): the client requantizes them to the model's input range,
  // which the server's welcome gives.
  const LabelledImages data = load_fashion_mnist_test(first, images, 8);
  GrpcTransport transport(server, rpc);
  core::OsRandom random;
  RemoteClient client(transport, params, options, random);
  const Totals t = run_images(client, nullptr, data, true);
  const double n = static_cast<double>(t.images);
  std::printf(
      "%s: accuracy %.2f%% on %zu images; per image client %.3f s, %.2f MB up, %.2f MB "
      "down\n",
      client.model_name().c_str(), 100.0 * static_cast<double>(t.correct) / n, t.images,
      t.client_s / n, static_cast<double>(t.up) / n / 1e6, static_cast<double>(t.down) / n / 1e6);
  return 0;
}

#else

int run_serve(int, char**) {
  throw Error(ErrorCode::unsupported,
              "serve: this build has no gRPC (Debian: libgrpc++-dev libprotobuf-dev "
              "protobuf-compiler-grpc)");
}

int run_infer(int, char**) {
  throw Error(ErrorCode::unsupported,
              "infer: this build has no gRPC (Debian: libgrpc++-dev libprotobuf-dev "
              "protobuf-compiler-grpc)");
}

#endif

}  // namespace safhire::apps
