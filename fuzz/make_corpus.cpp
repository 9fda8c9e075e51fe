// Writes the seed corpus: valid inputs of every fuzz target, from deterministic randomness,
// as DIR/<target>/seed-<i>.
// Usage: make_corpus DIR
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "decoders.hpp"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  for (const auto& d : safhire::fuzz::decoders()) {
    const std::filesystem::path dir = std::filesystem::path(argv[1]) / d.name;
    std::filesystem::create_directories(dir);
    const auto seeds = d.seeds();
    for (std::size_t i = 0; i < seeds.size(); ++i) {
      // Every seed must pass its own decoder: a seed the target refuses explores nothing.
      d.run(seeds[i]);
      std::ofstream out(dir / ("seed-" + std::to_string(i)), std::ios::binary);
      out.write(reinterpret_cast<const char*>(seeds[i].data()),
                static_cast<std::streamsize>(seeds[i].size()));
    }
    std::printf("%-26s %zu seeds\n", d.name, seeds.size());
  }
  return 0;
}
