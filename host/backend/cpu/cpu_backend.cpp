// The CPU backend: rows in host memory (storage reused across rounds), every step shared by
// `threads` workers; the linear layer cache-blocked per group of outputs, dense groups on
// ring::torus_matmul, sparse ones on ring::torus_spmm and small ones on ring::torus_dot, on 64-bit
// or (Config::row_bits = 32) 32-bit words, each group's form prepared once per LayerWeights;
// extraction at gamma >= 1 through PartialExtraction::clean_samples from the chunk's power
// blocks; packing by the CUDA backend's algorithm (cuda::pack_rows over HostOps, host_ops.hpp),
// a pack at a time on each worker.
#include <algorithm>
#include <map>
#include <mutex>
#include <numeric>
#include <optional>
#include <string>

#include "host_ops.hpp"
#include "portable/device_backend.hpp"
#include "safhire/backend/backend.hpp"
#include "safhire/core/error.hpp"
#include "safhire/core/parallel.hpp"
#include "safhire/ring/simd.hpp"
#include "safhire/rlwe/partial.hpp"

namespace safhire::backend {

namespace {

using rlwe::u64;
using u32 = std::uint32_t;

// Released row storage kept for the next round: a round's rows are hundreds of MB, and fresh
// pages cost a fault and a clear each (about a second per ResNet-20 inference). Keeps at most
// kKept buffers, as many as a round holds at once (its input, a residual kept for a later add,
// its output): with two, every residual block took a fresh output buffer. Hands out the
// smallest that is large enough.
class StoragePool {
 public:
  static constexpr std::size_t kKept = 3;
  struct Buffer {
    std::unique_ptr<u64[]> words;
    std::size_t capacity = 0;
  };
  Buffer take(std::size_t words) {
    std::lock_guard<std::mutex> lock(mutex_);
    std::size_t best = kept_.size();
    for (std::size_t i = 0; i < kept_.size(); ++i)
      if (kept_[i].capacity >= words &&
          (best == kept_.size() || kept_[i].capacity < kept_[best].capacity))
        best = i;
    if (best == kept_.size()) return {std::unique_ptr<u64[]>(new u64[words]), words};
    Buffer b = std::move(kept_[best]);
    kept_.erase(kept_.begin() + static_cast<std::ptrdiff_t>(best));
    return b;
  }
  void give(Buffer b) {
    std::lock_guard<std::mutex> lock(mutex_);
    kept_.push_back(std::move(b));
    if (kept_.size() > kKept) {  // drop the smallest
      auto smallest = std::min_element(
          kept_.begin(), kept_.end(),
          [](const Buffer& x, const Buffer& y) { return x.capacity < y.capacity; });
      kept_.erase(smallest);
    }
  }

 private:
  std::mutex mutex_;
  std::vector<Buffer> kept_;
};

// Rows in host memory, of 64-bit words, or of 32-bit ones (narrow) in the same kind of buffer.
// Not zeroed: every step writes each of its rows in full.
struct HostRows final : Rows {
  HostRows(std::size_t count, std::size_t width, std::uint32_t bits, std::shared_ptr<StoragePool> p)
      : rows(count),
        pool(std::move(p)),
        storage(pool->take(bits == 32 ? (count * width + 1) / 2 : count * width)),
        words(storage.words.get()),
        narrow(reinterpret_cast<u32*>(words)) {}
  ~HostRows() override { pool->give(std::move(storage)); }
  HostRows(const HostRows&) = delete;
  HostRows& operator=(const HostRows&) = delete;
  std::size_t count() const override { return rows; }
  std::size_t rows;
  std::shared_ptr<StoragePool> pool;
  StoragePool::Buffer storage;
  u64* words;
  u32* narrow;
  // The rows of words of type Word.
  template <class Word>
  Word* base() const {
    if constexpr (sizeof(Word) == 4) {
      return narrow;
    } else {
      return words;
    }
  }
};

const HostRows& host_rows(const Rows& rows) {
  const auto* h = dynamic_cast<const HostRows*>(&rows);
  require(h != nullptr, ErrorCode::invalid_argument, "rows of another backend");
  return *h;
}

// The rows of a group's inputs, C words of each, stay in L2 while every output of the group reads
// them: C = kCacheBytes / 8 / (the group's distinct inputs, or its widest output's taps), a
// multiple of 32 words (twice that for 32-bit words).
constexpr std::size_t kCacheBytes = 384 * 1024;
// A group of at least four outputs goes through the dense kernel (ring::torus_matmul, zeros
// included) when at least kDenseShare of its outputs x distinct inputs are taps, else through the
// sparse one (ring::torus_spmm, which costs the taps only but one multiply per row load instead
// of four). Smaller groups take one ring::torus_dot per output.
constexpr double kDenseShare = 0.75;

// Packing cuts each pack's merge tree into parts of at most kPartBytes of items (cuda::pack_rows),
// so that a part's levels run in a core's L2 cache.
constexpr std::size_t kPartBytes = std::size_t{1} << 19;

// A group of a LayerWeights in the form the kernels take: its distinct input rows (columns, as
// (source, row), in that order), and its taps either as a dense matrix over them (refilled each
// call from tap_column: a matrix would cost outputs x columns words to keep), a sparse one, or
// one ring::torus_dot per output.
struct PreparedGroup {
  enum class Form : std::uint8_t { per_output, dense, sparse };
  Form form = Form::per_output;
  std::size_t widest = 1;  // rows read at once: its columns, or its widest output's taps
  std::vector<std::pair<std::uint32_t, std::uint32_t>> columns;
  std::vector<std::uint32_t> tap_column;  // dense: each tap's column, from the group's first tap
  // sparse: ring::TorusSparseMatrix over the columns
  std::vector<std::uint32_t> start, positives, column;
  std::vector<u64> magnitude;
};

struct PreparedLayer {
  std::vector<std::size_t> rows_read;  // LayerWeights::rows_read
  std::vector<PreparedGroup> groups;
};

// The taps of outputs [first, last) as a ring::TorusSparseMatrix over the group's K columns
// (tap_column: each tap's column, from the first tap of `first`), into group.start, positives,
// column, magnitude: taps on one row merged (summed in `sum`, zero outside this call, `mark`
// stamping the columns an output touched), zeros dropped, positive weights first, each sign's
// +-1s leading (the kernel adds them without multiplying). False when a merged magnitude reaches
// 2^32.
bool sparse_matrix(const LayerWeights& weights, std::uint32_t first, std::uint32_t last,
                   std::span<const std::uint32_t> tap_column, PreparedGroup& group) {
  const std::size_t K = group.columns.size();
  std::vector<std::int64_t> sum(K, 0);
  std::vector<std::uint32_t> mark(K, 0), touched;
  group.start.assign(1, 0);
  group.positives.clear();
  group.column.clear();
  group.magnitude.clear();
  std::size_t at = 0;
  for (std::uint32_t o = first; o < last; ++o) {
    const std::uint32_t stamp = o - first + 1;
    touched.clear();
    for (std::uint32_t k = weights.tap_start[o]; k < weights.tap_start[o + 1]; ++k, ++at) {
      const std::uint32_t c = tap_column[at];
      if (mark[c] != stamp) {
        mark[c] = stamp;
        touched.push_back(c);
      }
      sum[c] += weights.taps[k].weight;
    }
    std::uint32_t positives = 0;
    // Positive units, other positives, negative units, other negatives.
    for (int bucket = 0; bucket < 4; ++bucket) {
      const bool negative = bucket >= 2, unit = bucket % 2 == 0;
      for (const std::uint32_t c : touched) {
        const std::int64_t w = sum[c];
        if (w == 0 || (w < 0) != negative) continue;
        const u64 magnitude = static_cast<u64>(w < 0 ? -w : w);
        if ((magnitude == 1) != unit) continue;
        if (magnitude >> 32 != 0) return false;
        group.column.push_back(c);
        group.magnitude.push_back(magnitude);
        positives += negative ? 0 : 1;
      }
    }
    for (const std::uint32_t c : touched)
      sum[c] = 0;
    group.positives.push_back(positives);
    group.start.push_back(static_cast<std::uint32_t>(group.column.size()));
  }
  return true;
}

// column_of_row[s][i]: kNoColumn outside the call (scratch of one worker, sized by rows_read).
constexpr std::uint32_t kNoColumn = ~std::uint32_t{0};

PreparedGroup prepare_group(const LayerWeights& weights, std::uint32_t g,
                            std::vector<std::vector<std::uint32_t>>& column_of_row) {
  PreparedGroup group;
  const std::uint32_t first = weights.group_start[g], last = weights.group_start[g + 1];
  const std::size_t outputs = last - first;
  const std::uint32_t first_tap = weights.tap_start[first];
  const std::uint32_t taps = weights.tap_start[last] - first_tap;
  for (std::uint32_t o = first; o < last; ++o)
    group.widest =
        std::max<std::size_t>(group.widest, weights.tap_start[o + 1] - weights.tap_start[o]);
  // The distinct input rows in the order the taps first read them, then sorted, and each tap's
  // column among them.
  std::vector<std::uint32_t> tap_column(taps);
  for (std::uint32_t k = 0; k < taps; ++k) {
    const Tap& t = weights.taps[first_tap + k];
    std::uint32_t& column = column_of_row[t.source][t.index];
    if (column == kNoColumn) {
      column = static_cast<std::uint32_t>(group.columns.size());
      group.columns.emplace_back(t.source, t.index);
    }
    tap_column[k] = column;
  }
  const std::size_t K = group.columns.size();
  std::vector<std::uint32_t> order(K), rank(K);
  std::iota(order.begin(), order.end(), std::uint32_t{0});
  std::sort(order.begin(), order.end(),
            [&](std::uint32_t x, std::uint32_t y) { return group.columns[x] < group.columns[y]; });
  std::vector<std::pair<std::uint32_t, std::uint32_t>> sorted(K);
  for (std::size_t i = 0; i < K; ++i) {
    rank[order[i]] = static_cast<std::uint32_t>(i);
    sorted[i] = group.columns[order[i]];
    column_of_row[sorted[i].first][sorted[i].second] = kNoColumn;  // clean for the next group
  }
  group.columns = std::move(sorted);
  for (std::uint32_t& column : tap_column)
    column = rank[column];
  // (A merged weight too wide for the sparse form makes the group dense.)
  const bool many = outputs >= 4 && K > 0;
  const bool mostly_taps =
      static_cast<double>(taps) >= kDenseShare * static_cast<double>(outputs * K);
  if (many && !mostly_taps && sparse_matrix(weights, first, last, tap_column, group)) {
    group.form = PreparedGroup::Form::sparse;
  } else if (many) {
    group.form = PreparedGroup::Form::dense;
    group.tap_column = std::move(tap_column);
  }
  if (group.form == PreparedGroup::Form::per_output) {
    group.columns.clear();
  } else {
    group.widest = std::max<std::size_t>(K, 1);
  }
  if (group.form != PreparedGroup::Form::sparse) {
    group.start.clear();
    group.positives.clear();
    group.column.clear();
    group.magnitude.clear();
  }
  return group;
}

// The prepared form of `weights`, made on first use and kept, process-wide, for as long as the
// weights live: every session's backend of a served model shares it. Validates the weights.
std::shared_ptr<const PreparedLayer> prepared_layer(
    const std::shared_ptr<const LayerWeights>& weights, unsigned threads) {
  static PerLayerCache<PreparedLayer> cache;
  return cache.get(weights, [&] {
    weights->validate();
    PreparedLayer prepared;
    prepared.rows_read = weights->rows_read();
    prepared.groups.resize(weights->groups());
    std::vector<std::vector<std::vector<std::uint32_t>>> column_of_row(threads);
    for (auto& worker : column_of_row)
      for (std::size_t rows : prepared.rows_read)
        worker.emplace_back(rows, kNoColumn);
    core::parallel_for(weights->groups(), threads, [&](std::size_t g, unsigned worker) {
      prepared.groups[g] =
          prepare_group(*weights, static_cast<std::uint32_t>(g), column_of_row[worker]);
    });
    return prepared;
  });
}

// lcm(lanes, 8) where that is at most 1024 words, else lanes: the period by which the CPU backend
// sums a 32-bit row's mask errors before folding them into lanes.
std::size_t error_period(std::size_t lanes) {
  const std::size_t l = std::lcm(lanes, std::size_t{8});
  return l <= 1024 ? l : lanes;
}

class CpuBackend final : public Backend {
 public:
  CpuBackend(const rlwe::ParameterSet& params, const Config& config, const rlwe::GaloisKeys& keys,
             unsigned threads)
      : params_(params),
        config_(config),
        threads_(std::max(threads, 1U)),
        width_(row_words(params, config.gamma)),
        stride_(config.row_bits == 32 ? (width_ + 31) / 32 * 32 : width_),
        simd_(ring::default_simd()),
        key_mean_(key_mean_map(params, config.gamma)),
        clean_scratch_(threads_),
        lane_rows_(threads_),
        wide_rows_(threads_),
        period_errors_(threads_, std::vector<u64>(error_period(width_ - params.ring.N()))),
        lane_errors_(threads_, std::vector<std::int64_t>(width_ - params.ring.N())) {
    if (config.gamma >= 1) partial_.emplace(params_.ring, config.gamma);
    const rlwe::PartialExtraction* partial = partial_ ? &*partial_ : nullptr;
    ops_.emplace(params_, params_.gadget(config.gamma), keys, workers_, partial);
    for (unsigned w = 0; threads_ > 1 && w < threads_; ++w)
      solo_.push_back(
          std::make_unique<HostOps>(params_, params_.gadget(config.gamma), keys, alone_, partial));
    derives_ = has_power_keys(keys, params_.ring, config.gamma);
    // The least depth whose parts' items (a and b, N words each) fit in kPartBytes.
    const ring::RingParams& r = params_.ring;
    std::size_t items = config.gamma == 0 ? r.N() : partial_->blocks();
    while (part_depth_ < r.a() - 1 - config.gamma && items * r.N() * 16 > kPartBytes) {
      ++part_depth_;
      items /= r.t();
    }
  }

  bool derives_powers() const override { return derives_; }

  std::string name() const override {
    return "cpu (" + std::string(ring::to_string(simd_)) + ", " + std::to_string(threads_) +
           " thread" + (threads_ == 1 ? "" : "s") + (narrow() ? ", 32-bit rows" : "") + ")";
  }

  Config config() const override { return config_; }

  // Sample extraction at gamma = 0; at gamma >= 1 clean module-LWE samples, all lanes of a block
  // at once (they share the block's conjugates).
  std::unique_ptr<Rows> extract(std::span<const rlwe::SeededCiphertext> cts,
                                std::span<const std::uint32_t> destination) override {
    const std::size_t n = destination.size(), N = params_.ring.N(), W = width_, S = stride_;
    const std::size_t K = partial_ ? partial_->elements().size() : 1;
    const std::size_t chunks = (n + N - 1) / N;
    // At gamma >= 1 either every power of each chunk, or the first only (the others derived).
    const bool derive = K > 1 && derives_ && cts.size() == chunks;
    const std::size_t per_chunk = derive ? 1 : K;
    require(cts.size() == chunks * per_chunk, ErrorCode::invalid_argument,
            "extract: " + std::to_string(chunks * K) + " ciphertexts expected for " +
                std::to_string(n) + " values" +
                (derives_ ? " (or " + std::to_string(chunks) + ", the first powers)" : ""));
    require_permutation(destination, "extract: destinations");
    auto out = std::make_unique<HostRows>(n, S, config_.row_bits, pool_);
    u64* rows = out->words;
    // With 32-bit rows every row is made in a worker's 64-bit row, then rounded into place, the
    // key's mean compensated in its body (key_mean_map), its padding zeroed.
    const auto body_lanes = static_cast<std::uint32_t>(W - N);
    const auto round_into = [&](const u64* from, std::size_t to, unsigned worker) {
      u32* row = out->narrow + to * S;
      const std::uint32_t L = body_lanes;
      // One pass (ring::narrow_words): the mask rounded, its errors summed by word position mod
      // error_period(L), a multiple of L (and of 8, to run whole registers), then by lane: the
      // sums of lane_narrow_error.
      std::vector<u64>& acc = period_errors_[worker];
      std::vector<std::int64_t>& errors = lane_errors_[worker];
      std::fill(acc.begin(), acc.end(), u64{0});
      ring::narrow_words({from, N}, {row, N}, acc, simd_);
      for (std::uint32_t l = 0; l < L; ++l) {
        errors[l] = 0;
        for (std::size_t j = l; j < acc.size(); j += L)
          errors[l] += static_cast<std::int64_t>(acc[j]);
      }
      for (std::uint32_t r = 0; r < L; ++r)
        row[N + r] = narrow_body(from[N + r], key_mean_.empty() ? nullptr : &key_mean_[r * L], L,
                                 [&](std::uint32_t l) { return errors[l]; });
      std::fill(row + W, row + S, u32{0});
    };
    for (std::size_t c = 0; c < chunks; ++c) {
      const std::size_t values = std::min(N, n - c * N);
      if (!partial_) {
        const rlwe::Ciphertext ct = cts[c].expand();
        workers_.run(values, [&](std::size_t j, unsigned worker) {
          const std::size_t to = destination[c * N + j];
          u64* row = narrow() ? wide_row(worker, 0) : rows + to * S;
          row[N] = rlwe::sample_extract_into(params_.ring, ct, static_cast<std::uint32_t>(j),
                                             std::span<u64>(row, N));
          if (narrow()) round_into(row, to, worker);
        });
        continue;
      }
      std::vector<rlwe::Ciphertext> powers;
      if (derive) {
        powers = derive_powers(cts[c].expand());
      } else {
        for (std::size_t k = 0; k < K; ++k)
          powers.push_back(cts[c * K + k].expand());
      }
      const rlwe::PartialExtraction& px = *partial_;
      const rlwe::PartialExtraction::PowerBlocks power_blocks = px.power_blocks(powers);
      const std::uint32_t T = px.blocks(), L = px.lanes();
      workers_.run(T, [&](std::size_t i, unsigned worker) {
        std::vector<u64*>& lane_rows = lane_rows_[worker];
        lane_rows.assign(L, nullptr);
        for (std::uint32_t j = 0; j < L; ++j) {
          const std::size_t p = i + std::size_t{T} * j;
          if (p < values)
            lane_rows[j] = narrow() ? wide_row(worker, j) : rows + destination[c * N + p] * S;
        }
        px.clean_samples(power_blocks, static_cast<std::uint32_t>(i), lane_rows,
                         clean_scratch_[worker]);
        if (narrow())
          for (std::uint32_t j = 0; j < L; ++j)
            if (lane_rows[j])
              round_into(lane_rows[j], destination[c * N + i + std::size_t{T} * j], worker);
      });
    }
    return out;
  }

  std::unique_ptr<Rows> linear(const LinearLayer& layer,
                               std::span<const Rows* const> sources) override {
    std::vector<const HostRows*> src(sources.size(), nullptr);
    std::vector<std::size_t> counts(sources.size(), 0);
    for (std::size_t s = 0; s < sources.size(); ++s) {
      if (!sources[s]) continue;
      src[s] = &host_rows(*sources[s]);
      counts[s] = src[s]->count();
    }
    require(layer.weights != nullptr, ErrorCode::invalid_argument, "linear layer: no weights");
    const std::shared_ptr<const PreparedLayer> prepared =
        prepared_layer(layer.weights, threads_);  // validates the weights once
    layer.validate(counts, prepared->rows_read);
    auto out = std::make_unique<HostRows>(layer.outputs(), stride_, config_.row_bits, pool_);
    if (narrow()) {
      linear_rows<u32>(layer, *prepared, src, *out);
    } else {
      linear_rows<u64>(layer, *prepared, src, *out);
    }
    return out;
  }

  // Through the CUDA backend's algorithm (cuda::pack_rows): whole packs on each worker's own ops
  // while there are packs for every worker (each pack's levels stay in its core's cache), the
  // rest one pack per worker at a time, each step's work shared by the workers.
  std::vector<rlwe::SwitchedCiphertext> pack(const Rows& rows, std::uint32_t bits,
                                             std::uint32_t body_bits) override {
    const HostRows& in = host_rows(rows);
    const std::size_t n = in.count(), N = params_.ring.N();
    const std::size_t packs = (n + N - 1) / N;
    std::vector<rlwe::SwitchedCiphertext> out(packs);
    // Packs first .. first + count - 1 through `ops`.
    const auto pack_range = [&](HostOps& ops, std::size_t first, std::size_t count) {
      const std::size_t values = std::min(n - first * N, count * N);
      const std::size_t offset = first * N * stride_;
      const auto packed =
          cuda::pack_rows(ops, params_.ring, config_, narrow() ? nullptr : in.words + offset,
                          narrow() ? in.narrow + offset : nullptr, values, stride_, part_depth_);
      for (std::size_t p = 0; p * N < values; ++p) {
        rlwe::Ciphertext ct(params_.ring);
        std::copy_n(packed.a.data() + p * N, N, ct.a.coeffs().begin());
        std::copy_n(packed.b.data() + p * N, N, ct.b.coeffs().begin());
        out[first + p] = rlwe::modulus_switch(ct, bits, body_bits);
      }
    };
    const std::size_t alone = threads_ > 1 ? packs / threads_ * threads_ : 0;
    workers_.run(alone, [&](std::size_t g, unsigned w) { pack_range(*solo_[w], g, 1); });
    for (std::size_t first = alone; first < packs; first += threads_)
      pack_range(*ops_, first, std::min<std::size_t>(threads_, packs - first));
    // The scratch goes back to the heap between rounds (reused within one: parts and levels
    // repeat their shapes; keeping it made no difference to the round after).
    ops_->trim(0);
    for (auto& ops : solo_)
      ops->trim(0);
    return out;
  }

  std::uint64_t key_switches() const override {
    std::uint64_t total = ops_->key_switches();
    for (const auto& ops : solo_)
      total += ops->key_switches();
    return total;
  }

 private:
  bool narrow() const { return config_.row_bits == 32; }

  // The powers of a chunk from its first: sigma_k with a key switch for each other element k,
  // one element per worker at a time, on its own ops (on one thread, ops_: workers_ then runs
  // every loop on its caller, so the nested use is sound).
  std::vector<rlwe::Ciphertext> derive_powers(const rlwe::Ciphertext& first) {
    const std::vector<std::uint64_t>& elements = partial_->elements();
    std::vector<rlwe::Ciphertext> powers(elements.size(), first);
    const u64* a = first.a.coeffs().data();
    const u64* b = first.b.coeffs().data();
    workers_.run(elements.size() - 1, [&](std::size_t i, unsigned w) {
      HostOps& ops = solo_.empty() ? *ops_ : *solo_[w];
      ops.automorphism(elements[i + 1], a, b, powers[i + 1].a.coeffs().data(),
                       powers[i + 1].b.coeffs().data(), 1);
    });
    return powers;
  }

  // A worker's 64-bit row j (of lanes() at gamma >= 1, one at gamma = 0) for 32-bit rows.
  u64* wide_row(unsigned worker, std::size_t j) {
    std::vector<u64>& rows = wide_rows_[worker];
    const std::size_t count = partial_ ? partial_->lanes() : 1;
    if (rows.size() < count * width_) rows.resize(count * width_);
    return rows.data() + j * width_;
  }

  // The linear layer on rows of Word (u64: mod 2^64; u32: mod 2^32), group by group in the
  // prepared forms.
  template <class Word>
  void linear_rows(const LinearLayer& layer, const PreparedLayer& prepared,
                   const std::vector<const HostRows*>& src, HostRows& out_rows) {
    // Rows are W = stride_ words apart: all of them go through the kernels (the padding of 32-bit
    // rows, zero, makes every length a multiple of 32 words: no narrow tails).
    const std::size_t W = stride_, N = params_.ring.N();
    const LayerWeights& weights = *layer.weights;
    Word* const out = out_rows.base<Word>();
    struct Scratch {
      std::vector<const Word*> rows, columns, shifted;
      std::vector<u64> weights, matrix;
      std::vector<Word*> outs;
    };
    std::vector<Scratch> scratch(threads_);
    workers_.run(layer.groups(), [&](std::size_t g, unsigned worker) {
      Scratch& sc = scratch[worker];
      const PreparedGroup& group = prepared.groups[g];
      const std::uint32_t first = weights.group_start[g], last = weights.group_start[g + 1];
      const std::size_t outputs = last - first, K = group.columns.size();
      const std::uint32_t first_tap = weights.tap_start[first];
      const auto row = [&](std::uint32_t source, std::uint32_t index) {
        return src[source]->template base<Word>() + std::size_t{index} * W;
      };
      if (group.form == PreparedGroup::Form::per_output) {
        sc.rows.clear();
        sc.weights.clear();
        for (std::uint32_t k = first_tap; k < weights.tap_start[last]; ++k) {
          const Tap& t = weights.taps[k];
          sc.rows.push_back(row(t.source, t.index));
          sc.weights.push_back(static_cast<u64>(static_cast<std::int64_t>(t.weight)));
        }
      } else {
        sc.columns.resize(K);
        for (std::size_t c = 0; c < K; ++c)
          sc.columns[c] = row(group.columns[c].first, group.columns[c].second);
      }
      if (group.form == PreparedGroup::Form::dense) {
        sc.matrix.assign(outputs * K, 0);
        for (std::size_t o = 0; o < outputs; ++o)
          for (std::uint32_t k = weights.tap_start[first + o]; k < weights.tap_start[first + o + 1];
               ++k)
            sc.matrix[o * K + group.tap_column[k - first_tap]] +=
                static_cast<u64>(static_cast<std::int64_t>(weights.taps[k].weight));
      }
      const std::size_t chunk =
          std::max<std::size_t>(32, kCacheBytes / sizeof(Word) / group.widest / 32 * 32);
      for (std::size_t w0 = 0; w0 < W; w0 += chunk) {
        const std::size_t len = std::min(chunk, W - w0);
        if (group.form != PreparedGroup::Form::per_output) {
          sc.shifted.resize(K);
          for (std::size_t k = 0; k < K; ++k)
            sc.shifted[k] = sc.columns[k] + w0;
          sc.outs.resize(outputs);
          for (std::size_t o = 0; o < outputs; ++o)
            sc.outs[o] = out + layer.slot[first + o] * W + w0;
          if (group.form == PreparedGroup::Form::dense) {
            ring::torus_matmul(sc.shifted, sc.matrix, sc.outs, len, simd_);
          } else {
            ring::torus_spmm(sc.shifted,
                             {group.start, group.positives, group.column, group.magnitude}, sc.outs,
                             len, simd_);
          }
          continue;
        }
        std::size_t at = 0;
        for (std::uint32_t o = first; o < last; ++o) {
          const std::size_t taps = weights.tap_start[o + 1] - weights.tap_start[o];
          sc.shifted.resize(taps);
          for (std::size_t k = 0; k < taps; ++k)
            sc.shifted[k] = sc.rows[at + k] + w0;
          ring::torus_dot(sc.shifted, std::span<const u64>(sc.weights.data() + at, taps),
                          std::span<Word>(out + layer.slot[o] * W + w0, len), simd_);
          at += taps;
        }
      }
      for (std::uint32_t o = first; o < last; ++o) {
        if constexpr (sizeof(Word) == 4) {
          out[layer.slot[o] * W + N] += narrow_word(weights.bias[o]);
        } else {
          out[layer.slot[o] * W + N] += weights.bias[o];
        }
      }
    });
  }

  rlwe::ParameterSet params_;
  Config config_;
  unsigned threads_;
  std::size_t width_;   // words of a row (row_words)
  std::size_t stride_;  // between rows: width_, or for 32-bit rows width_ rounded up to 32
  ring::SimdIsa simd_;
  bool derives_ = false;  // keys for every power element at gamma >= 1
  std::optional<rlwe::PartialExtraction> partial_;
  // Every step's loops run on workers_, kept for the backend's life. alone_ runs a loop on its
  // caller: several workers may use it at once (a one-thread pool keeps no state).
  core::WorkerPool workers_{threads_}, alone_{1};
  std::optional<HostOps> ops_;                   // on workers_
  std::vector<std::unique_ptr<HostOps>> solo_;   // on alone_, one for each worker (threads_ > 1)
  std::uint32_t part_depth_ = 0;                 // cuda::pack_rows's depth
  std::vector<std::int64_t> key_mean_;           // key_mean_map
  std::vector<std::vector<u64>> clean_scratch_;  // per worker, for clean_samples
  std::vector<std::vector<u64*>> lane_rows_;     // per worker
  std::vector<std::vector<u64>> wide_rows_;      // per worker, 64-bit rows for 32-bit ones
  // Per worker, for 32-bit rows: the mask's rounding errors by position mod error_period(lanes),
  // then by lane.
  std::vector<std::vector<u64>> period_errors_;
  std::vector<std::vector<std::int64_t>> lane_errors_;
  std::shared_ptr<StoragePool> pool_ = std::make_shared<StoragePool>();
};

}  // namespace

std::unique_ptr<Backend> make_cpu_backend(const rlwe::ParameterSet& params, const Config& config,
                                          const rlwe::GaloisKeys& keys, unsigned threads) {
  config.validate(params, keys);
  return std::make_unique<CpuBackend>(params, config, keys, threads);
}

}  // namespace safhire::backend
