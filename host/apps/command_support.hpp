// What the `safhire` commands share: the RNS primitives a --backend names, a timer of named
// steps (each in a profiler range of its name, a device's work counted when finished), the
// process's peak memory, and one small JSON writer for every --json output.
#pragma once

#include <chrono>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "safhire/ckks/rns_ops.hpp"

namespace safhire::apps {

// The CPU primitives on `threads` threads, or the CUDA backend's; Error(invalid_argument) for
// another name, Error(unsupported) for cuda in a build without it.
std::unique_ptr<ckks::RnsOps> make_ckks_ops(const ckks::CkksContext& context,
                                            const std::string& backend, unsigned threads);

// The process's peak resident memory in MB (VmHWM), or NaN where /proc does not say.
double peak_rss_mb();

struct Step {
  std::string name;
  double ms;
  double bits;  // NaN where there is nothing to compare
};

// Runs and times named steps, each in a profiler range of its name (NVTX on CUDA); a device's
// work counts as finished, not only issued.
class StepTimer {
 public:
  explicit StepTimer(const ckks::RnsOps& ops) : ops_(&ops) {}
  template <class Fn>
  auto operator()(const std::string& name, Fn fn) {
    const auto t0 = std::chrono::steady_clock::now();
    auto out = [&] {
      const ckks::StepRange range(*ops_, name.c_str());
      auto result = fn();
      ops_->synchronize();  // inside the range: a timeline's range spans the device's work
      return result;
    }();
    steps.push_back(
        {name,
         std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count(),
         std::nan("")});
    return out;
  }
  std::vector<Step> steps;

 private:
  const ckks::RnsOps* ops_;
};

// Milliseconds of wall time since t0.
inline double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// The median of v (v not empty).
double median(std::vector<double> v);

// A JSON document written in order: objects and arrays nest, keys are given before values, and
// commas and escapes are the writer's business. Non-finite numbers are written as null.
class JsonWriter {
 public:
  JsonWriter& begin_object(const std::string& key = {});
  JsonWriter& end_object();
  JsonWriter& begin_array(const std::string& key = {});
  JsonWriter& end_array();
  JsonWriter& value(const std::string& key, double v);
  JsonWriter& value(const std::string& key, std::int64_t v);
  JsonWriter& value(const std::string& key, std::uint64_t v);
  JsonWriter& value(const std::string& key, std::uint32_t v) {
    return value(key, static_cast<std::uint64_t>(v));
  }
  JsonWriter& value(const std::string& key, int v) { return value(key, std::int64_t{v}); }
  JsonWriter& value(const std::string& key, bool v);
  JsonWriter& value(const std::string& key, const std::string& v);
  JsonWriter& value(const std::string& key, const char* v) { return value(key, std::string(v)); }
  JsonWriter& null(const std::string& key);
  // An array element (inside an array: no key).
  JsonWriter& element(double v) { return value({}, v); }
  std::string str() const { return out_; }

 private:
  void prefix(const std::string& key);
  std::string out_;
  std::vector<bool> first_;  // per open container: nothing written in it yet
};

}  // namespace safhire::apps
