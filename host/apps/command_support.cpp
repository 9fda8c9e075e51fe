#include "command_support.hpp"

#include <algorithm>
#include <cinttypes>
#include <cstdio>

#include "safhire/core/error.hpp"
#if SAFHIRE_HAVE_CUDA
#include "safhire/cuda/ckks.hpp"
#endif

namespace safhire::apps {

std::unique_ptr<ckks::RnsOps> make_ckks_ops(const ckks::CkksContext& context,
                                            const std::string& backend, unsigned threads) {
  require(backend == "cpu" || backend == "cuda", ErrorCode::invalid_argument,
          "--backend must be cpu or cuda, got " + backend);
  if (backend == "cuda") {
#if SAFHIRE_HAVE_CUDA
    return safhire::cuda::make_cuda_rns_ops(context);
#else
    throw Error(ErrorCode::unsupported, "this build has no CUDA backend (no nvcc at configure)");
#endif
  }
  return ckks::make_cpu_rns_ops(context, threads);
}

double peak_rss_mb() {
  std::FILE* f = std::fopen("/proc/self/status", "r");
  if (f == nullptr) return std::nan("");
  char line[256];
  double kb = std::nan("");
  while (std::fgets(line, sizeof line, f) != nullptr) {
    if (std::sscanf(line, "VmHWM: %lf kB", &kb) == 1) break;
  }
  std::fclose(f);
  return kb / 1024;
}

double median(std::vector<double> v) {
  require(!v.empty(), ErrorCode::invalid_argument, "median of nothing");
  std::sort(v.begin(), v.end());
  const std::size_t m = v.size() / 2;
  return v.size() % 2 == 1 ? v[m] : (v[m - 1] + v[m]) / 2;
}

void JsonWriter::prefix(const std::string& key) {
  if (!first_.empty()) {
    if (!first_.back()) out_ += ", ";
    first_.back() = false;
  }
  if (!key.empty()) {
    std::string quoted;
    for (const char c : key) {
      if (c == '"' || c == '\\') quoted += '\\';
      quoted += c;
    }
    out_ += "\"" + quoted + "\": ";
  }
}

JsonWriter& JsonWriter::begin_object(const std::string& key) {
  prefix(key);
  out_ += "{";
  first_.push_back(true);
  return *this;
}

JsonWriter& JsonWriter::end_object() {
  require(!first_.empty(), ErrorCode::internal, "JSON: no object to end");
  first_.pop_back();
  out_ += "}";
  return *this;
}

JsonWriter& JsonWriter::begin_array(const std::string& key) {
  prefix(key);
  out_ += "[";
  first_.push_back(true);
  return *this;
}

JsonWriter& JsonWriter::end_array() {
  require(!first_.empty(), ErrorCode::internal, "JSON: no array to end");
  first_.pop_back();
  out_ += "]";
  return *this;
}

JsonWriter& JsonWriter::value(const std::string& key, double v) {
  prefix(key);
  if (!std::isfinite(v)) {
    out_ += "null";
    return *this;
  }
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.10g", v);
  out_ += buf;
  return *this;
}

JsonWriter& JsonWriter::value(const std::string& key, std::int64_t v) {
  prefix(key);
  out_ += std::to_string(v);
  return *this;
}

JsonWriter& JsonWriter::value(const std::string& key, std::uint64_t v) {
  prefix(key);
  out_ += std::to_string(v);
  return *this;
}

JsonWriter& JsonWriter::value(const std::string& key, bool v) {
  prefix(key);
  out_ += v ? "true" : "false";
  return *this;
}

JsonWriter& JsonWriter::value(const std::string& key, const std::string& v) {
  prefix(key);
  out_ += '"';
  for (const char c : v) {
    switch (c) {
      case '"':
        out_ += "\\\"";
        break;
      case '\\':
        out_ += "\\\\";
        break;
      case '\n':
        out_ += "\\n";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out_ += buf;
        } else {
          out_ += c;
        }
    }
  }
  out_ += '"';
  return *this;
}

JsonWriter& JsonWriter::null(const std::string& key) {
  prefix(key);
  out_ += "null";
  return *this;
}

}  // namespace safhire::apps
