// One encrypted inference through the client and server API, without the CLI: the client makes
// its keys and encrypts an image; the server runs each round's linear layer on ciphertexts; the
// client decrypts, applies ReLU and requantization and re-encrypts, until it holds the logits,
// which must equal the plaintext evaluation of the same integer model.
//   examples/encrypted_inference MODEL.sfhm [PARAMETER_SET (default-b8)]
// (models/small-b8.sfhm on default-b8; models/resnet20-b8.sfhm needs default-b12)
#include <chrono>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "safhire/core/error.hpp"
#include "safhire/core/random.hpp"
#include "safhire/hybrid/inference.hpp"
#include "safhire/hybrid/model.hpp"
#include "safhire/rlwe/params.hpp"

using namespace safhire;

int run(int argc, char** argv) {
  const hybrid::Model model = hybrid::Model::load(argv[1]);
  const rlwe::ParameterSet& params = rlwe::parameter_set(argc > 2 ? argv[2] : "default-b8");
  const hybrid::InferenceOptions options;  // gamma 0, shuffled hidden rounds

  // An image: a deterministic pattern over the model's input range (a real client reads one).
  std::vector<std::int64_t> image(model.activation(0).size());
  for (std::size_t i = 0; i < image.size(); ++i)
    image[i] =
        static_cast<std::int64_t>((i * 37) % static_cast<std::size_t>(model.input_max() + 1));

  // The client: secret key and evaluation keys from the OS's CSPRNG; the key never leaves it.
  core::OsRandom random;
  hybrid::Client client(params, options, random);
  // The server: the model's weights, the client's evaluation keys and a secret session seed.
  hybrid::Server server(model, params, options, client.evaluation_keys(), random.seed());

  const auto t0 = std::chrono::steady_clock::now();
  std::optional<hybrid::Upload> upload = client.start(server.model_info(), image);
  int rounds = 0;
  while (upload) {  // each round: an upload to the server, a download back
    upload = client.receive(server.process(*upload));
    ++rounds;
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  const std::vector<std::int64_t> want = hybrid::evaluate(model, image);
  const bool ok = client.logits() == want;
  std::printf("%s on %s: %d rounds in %.2f s, class %zu, logits %s the plaintext evaluation\n",
              model.name().c_str(), params.name.c_str(), rounds, seconds,
              hybrid::predicted_class(client.logits()), ok ? "equal" : "DIFFER FROM");
  return ok ? 0 : 1;
}

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: encrypted_inference MODEL.sfhm [PARAMETER_SET]\n");
    return 2;
  }
  try {
    return run(argc, argv);
  } catch (const Error& e) {  // a bad file, or a set too small for the model's rounds
    std::fprintf(stderr, "encrypted_inference: %s\n", e.what());
    return 1;
  }
}
