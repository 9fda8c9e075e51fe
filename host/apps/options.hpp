// Command-line options of the `safhire` subcommands: --key value pairs and the bare flags
// --json, --insecure, --alone, --slim, --seeded-keys, --lazy-matrices, --low-memory, --unpacked
// and --compare-cpu.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "safhire/core/error.hpp"

namespace safhire::apps {

// --key value options and --flags.
class Options {
 public:
  Options(int argc, char** argv, int first) {
    for (int i = first; i < argc; ++i) {
      std::string key = argv[i];
      safhire::require(key.rfind("--", 0) == 0, safhire::ErrorCode::invalid_argument,
                       "unexpected argument " + key);
      key = key.substr(2);
      if (key == "json" || key == "insecure" || key == "alone" || key == "slim" ||
          key == "seeded-keys" || key == "lazy-matrices" || key == "low-memory" ||
          key == "unpacked" || key == "compare-cpu") {
        values_.emplace_back(key, "1");
      } else {
        safhire::require(i + 1 < argc, safhire::ErrorCode::invalid_argument,
                         "--" + key + " needs a value");
        values_.emplace_back(key, argv[++i]);
      }
    }
  }
  std::string get(const std::string& key, const std::string& fallback) {
    for (auto& [k, v] : values_) {
      if (k == key) {
        k.clear();  // consumed
        return v;
      }
    }
    return fallback;
  }
  std::uint32_t number(const std::string& key, std::uint32_t fallback) {
    const std::string v = get(key, "");
    if (v.empty()) return fallback;
    char* end = nullptr;
    const unsigned long n = std::strtoul(v.c_str(), &end, 10);
    safhire::require(end != v.c_str() && *end == '\0' && n <= 0xffffffffUL,
                     safhire::ErrorCode::invalid_argument,
                     "--" + key + " expects a non-negative integer, got " + v);
    return static_cast<std::uint32_t>(n);
  }
  bool flag(const std::string& key) { return !get(key, "").empty(); }
  // Every option must have been read.
  void finish() const {
    for (const auto& [k, v] : values_)
      safhire::require(k.empty(), safhire::ErrorCode::invalid_argument, "unknown option --" + k);
  }

 private:
  std::vector<std::pair<std::string, std::string>> values_;
};

}  // namespace safhire::apps
