// The interface through which the hybrid server computes (layer 4, between rlwe and hybrid): the
// three heavy steps of a round (extraction, the linear layer, packing) on ciphertext rows that live
// where the backend lives. The server (hybrid::Server) is written once against it: it decides which
// values go where (shuffling, un-shuffling, the taps of each output, the download precision) and
// hands the backend plain index arrays; the backend does the arithmetic. Two implementations:
// make_cpu_backend (host/backend, threaded and vectorized, the reference) and
// cuda::make_cuda_backend (device-resident). Both give bit-identical rows and ciphertexts. Rows
// must not outlive the backend that made them.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "safhire/core/error.hpp"
#include "safhire/core/hostdevice.hpp"
#include "safhire/rlwe/params.hpp"
#include "safhire/rlwe/rlwe.hpp"
#include "safhire/rlwe/trees.hpp"

namespace safhire::backend {

// What a server's backend computes: the level of extraction, the packing mode, and the modulus of
// the rows between extraction and packing: 2^64, or 2^32 (row_bits = 32), where extraction
// rounds every word to its top 32 bits, the linear layer runs mod 2^32 on half the bytes and
// twice the words per register, and packing lifts the words back (x 2^32). The rounding adds
// noise that hybrid::estimate_round_noise accounts for (hybrid::narrowest_row_bits picks 32
// where the failure bound allows it). Both backends take either.
struct Config {
  std::uint32_t gamma = 0;
  rlwe::TreeMode mode = rlwe::TreeMode::fast;
  std::uint32_t row_bits = 64;
  // What every backend checks once, when it is made: gamma < a, a known tree mode, rows of 32 or
  // 64 bits, and a key-switching key for every automorphism that packing at gamma needs in this
  // mode (rlwe::packing_elements). Throws invalid_argument naming what is wrong.
  void validate(const rlwe::ParameterSet& params, const rlwe::GaloisKeys& keys) const;
};

// Words per row: an LWE sample (N mask words, then b) at gamma = 0; a clean module-LWE sample
// (N words of a, then the phi(t^gamma) lanes of b, the message in lane 0) at gamma >= 1. Word N
// of a row is where its message sits in both cases.
std::size_t row_words(const rlwe::ParameterSet& params, std::uint32_t gamma);

// A row word switched from 2^64 to 2^32 (rounded to nearest), and lifted back.
SAFHIRE_HD constexpr std::uint32_t narrow_word(std::uint64_t x) {
  return static_cast<std::uint32_t>((x + (std::uint64_t{1} << 31)) >> 32);
}
SAFHIRE_HD constexpr std::uint64_t widen_word(std::uint32_t x) {
  return std::uint64_t{x} << 32;
}
// What narrow_word's rounding adds to x: widen_word(narrow_word(x)) - x, in units of 2^-64
// (-2^31 < e <= 2^31).
SAFHIRE_HD constexpr std::int64_t narrow_error(std::uint64_t x) {
  return static_cast<std::int64_t>(widen_word(narrow_word(x)) - x);
}

// Rows rounded to 32-bit words with the key's mean taken back. A row's phase is b - sum_v a_v s_v
// over R_gamma (a_v: lanes words; at gamma = 0, R_0 = Z and a_v = word v). Rounding its mask
// adds -sum_v e_v s_v to the phase, e_v the narrow_errors. Rows from one ciphertext share mask
// words, so their e_v are correlated; where the key has a mean (binary: s = c + 1/2, c centred),
// the part (1/2) E u (E = sum_v e_v, u = 1 + Z + ... + Z^(lanes - 1), the mean key block) is
// then common to them and adds up coherently in the linear layer. The body takes it back,
// b_r + ((E u)_r >> 1) before its own rounding, so that what is left, -sum_v e_v c_v plus the
// body's rounding, is uncorrelated between rows and meets the centred key, Var(s) = 1/4
// (rlwe::key_variance; hybrid::estimate_round_noise counts it).
//
// key_mean_map: (E u)_r = sum_l map[r lanes + l] E_l, lanes x lanes entries in {-1, 0, 1}
// (E_l: lane l of E); empty for a ternary key (mean 0), whose bodies are rounded as they are.
std::vector<std::int64_t> key_mean_map(const rlwe::ParameterSet& params, std::uint32_t gamma);

// Lane l of E for a 64-bit row (N mask words, word w being lane w mod lanes).
SAFHIRE_HD std::int64_t lane_narrow_error(const std::uint64_t* row, std::uint32_t N,
                                          std::uint32_t lanes, std::uint32_t l) {
  std::int64_t sum = 0;
  for (std::uint32_t w = l; w < N; w += lanes)
    sum += narrow_error(row[w]);
  return sum;
}

// Body lane r of a 32-bit row: `body` (its 64-bit word) with the mean compensated (map_row: row r
// of key_mean_map, or null) from lane_error(l) = lane_narrow_error(row, N, lanes, l), then
// rounded. |E_l| <= N 2^31, so the sum fits an int64 with room to spare.
template <class LaneError>
SAFHIRE_HD std::uint32_t narrow_body(std::uint64_t body, const std::int64_t* map_row,
                                     std::uint32_t lanes, LaneError lane_error) {
  if (map_row != nullptr) {
    std::int64_t sum = 0;
    for (std::uint32_t l = 0; l < lanes; ++l)
      if (map_row[l] != 0) sum += map_row[l] * lane_error(l);
    body += static_cast<std::uint64_t>(sum >> 1);
  }
  return narrow_word(body);
}

// `count` ciphertext rows of row_words() words, where a backend keeps them. Only the backend
// that made a Rows reads it.
class Rows {
 public:
  virtual ~Rows() = default;
  virtual std::size_t count() const = 0;
};

// One nonzero entry of a linear layer: the output reads row `index` of source `source` times
// `weight`.
struct Tap {
  std::uint32_t source;
  std::uint32_t index;
  std::int32_t weight;
};

// A linear layer's weights as a sparse integer matrix, in compressed rows: output o (in model
// order) is bias[o] + sum of the taps [tap_start[o], tap_start[o + 1]) (the bias word is added to
// word N, the message position). Outputs are grouped: [group_start[g], group_start[g + 1]) read
// mostly the same inputs (one output position of a convolution), which a backend keeps in cache
// or shared memory while it computes the group. Built once per served model and shared,
// immutable, by every session's LinearLayer (hybrid::model_layers), so that a backend may keep
// what it derives from them (the CPU backend's dense and sparse blocks) for as long as they live.
struct LayerWeights {
  std::vector<std::uint32_t> group_start{0};
  std::vector<std::uint32_t> tap_start{0};
  std::vector<Tap> taps;
  std::vector<std::uint64_t> bias;
  std::size_t outputs() const { return tap_start.size() - 1; }
  std::size_t groups() const { return group_start.size() - 1; }
  // Throws Error(invalid_argument) unless the arrays are consistent with each other.
  void validate() const;
  // For each source read by a tap, one more than the largest row index read (the row count a
  // source needs); sized to the largest source read plus one.
  std::vector<std::size_t> rows_read() const;
};

// What a backend derives from a LayerWeights (the CPU backend's prepared blocks, the CUDA
// backend's resident copy), made once on first use and kept while the weights live: an entry is
// dropped at a later lookup once its weights are gone. Thread-safe; `make` runs under the lock.
template <class Derived>
class PerLayerCache {
 public:
  // The value for `weights` (Error(invalid_argument) for none), made by make() if absent.
  template <class Make>
  std::shared_ptr<const Derived> get(const std::shared_ptr<const LayerWeights>& weights,
                                     Make make) {
    require(weights != nullptr, ErrorCode::invalid_argument, "linear layer: no weights");
    const std::lock_guard<std::mutex> lock(mutex_);
    std::erase_if(entries_, [](const auto& item) { return item.second.weights.expired(); });
    Entry& entry = entries_[weights.get()];
    if (entry.value == nullptr) {
      entry.value = std::make_shared<const Derived>(make());
      entry.weights = weights;
      ++made_;
    }
    return entry.value;
  }
  // Values made so far, and kept now.
  std::uint64_t made() const {
    const std::lock_guard<std::mutex> lock(mutex_);
    return made_;
  }
  std::size_t size() const {
    const std::lock_guard<std::mutex> lock(mutex_);
    return entries_.size();
  }

 private:
  struct Entry {
    std::weak_ptr<const LayerWeights> weights;
    std::shared_ptr<const Derived> value;
  };
  mutable std::mutex mutex_;
  std::map<const LayerWeights*, Entry> entries_;
  std::uint64_t made_ = 0;
};

// One session's round: the shared weights, and where each output goes: output o is written to
// row slot[o] of the result (slot: the session's permutation of the outputs).
struct LinearLayer {
  std::shared_ptr<const LayerWeights> weights;
  std::vector<std::uint32_t> slot;
  std::size_t outputs() const { return slot.size(); }
  std::size_t groups() const { return weights->groups(); }
  // Throws Error(invalid_argument) unless the weights are set and valid, every tap reads a row
  // that `source_rows` (row counts by source) has, and slot is a permutation of [0, outputs()).
  void validate(std::span<const std::size_t> source_rows) const;
  // The same for weights already validated, with their rows_read(): O(outputs), not O(taps).
  void validate(std::span<const std::size_t> source_rows,
                std::span<const std::size_t> rows_read) const;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;
  virtual Config config() const = 0;

  // Extraction of `values` values from one upload: at gamma = 0 one ciphertext per chunk of N
  // values (value c N + j is coefficient j of ciphertext c); at gamma >= 1 the phi(t^gamma)
  // powers of each chunk in rlwe::power_elements order, or, where derives_powers(), the first
  // power of each chunk only, the others derived (rlwe::TraceTrees::derive_powers: phi(t^gamma) -
  // 1 key switches per chunk, counted). Value v becomes row destination[v].
  virtual std::unique_ptr<Rows> extract(std::span<const rlwe::SeededCiphertext> ciphertexts,
                                        std::span<const std::uint32_t> destination) = 0;
  // Whether extract takes the first powers only (gamma >= 1, with keys for every power element).
  virtual bool derives_powers() const { return false; }
  // The linear layer over `sources` (indexed by Tap::source; null where no tap reads it):
  // layer.outputs() rows.
  virtual std::unique_ptr<Rows> linear(const LinearLayer& layer,
                                       std::span<const Rows* const> sources) = 0;
  // Packs the rows (row s into coefficient s mod N of ciphertext s / N, ceil(count / N)
  // ciphertexts) and switches each for the download: a to 2^bits, b to 2^body_bits
  // (rlwe::modulus_switch).
  virtual std::vector<rlwe::SwitchedCiphertext> pack(const Rows& rows, std::uint32_t bits,
                                                     std::uint32_t body_bits) = 0;
  // Waits for queued work (the server's step timers call it; a no-op on the CPU).
  virtual void synchronize() {}
  // Key switches done so far.
  virtual std::uint64_t key_switches() const = 0;
};

// Whether `keys` hold every power element's key at gamma >= 1 (rlwe::power_elements, 1 aside):
// what a backend needs to derive powers from the first of each chunk.
bool has_power_keys(const rlwe::GaloisKeys& keys, const ring::RingParams& ring,
                    std::uint32_t gamma);

// Throws Error(invalid_argument) naming the first element of rlwe::packing_elements(ring,
// config.gamma, config.mode) that `keys` lack (part of Config::validate, which both backends call
// when they are made): a session whose client sent too few keys fails at its start, not in a
// round.
void require_packing_keys(const rlwe::GaloisKeys& keys, const ring::RingParams& ring,
                          const Config& config);

// Throws Error(invalid_argument) naming `what` unless p is a permutation of [0, p.size()).
void require_permutation(std::span<const std::uint32_t> p, const char* what);

// The CPU backend: `threads` workers (at least 1) share every step; SIMD kernels chosen at run
// time (ring::default_simd()).
std::unique_ptr<Backend> make_cpu_backend(const rlwe::ParameterSet& params, const Config& config,
                                          const rlwe::GaloisKeys& keys, unsigned threads);

}  // namespace safhire::backend
