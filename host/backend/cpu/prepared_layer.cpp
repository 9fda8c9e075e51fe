// The CPU backend's prepared linear layers (prepared_layer.hpp).
#include "prepared_layer.hpp"

#include <algorithm>
#include <numeric>
#include <span>

#include "safhire/core/error.hpp"
#include "safhire/ring/simd.hpp"

namespace safhire::backend {

namespace {

using u64 = std::uint64_t;

// The rows of a group's inputs, C words of each, stay in L2 while every output of the group reads
// them: C = kCacheBytes / 8 / (the group's distinct inputs, or its widest output's taps), a
// multiple of 32 words (twice that for 32-bit words).
constexpr std::size_t kCacheBytes = 384 * 1024;
// A group of at least four outputs goes through the dense kernel (ring::torus_matmul, zeros
// included) when at least kDenseShare of its outputs x distinct inputs are taps, else through the
// sparse one (ring::torus_spmm, which costs the taps only but one multiply per row load instead
// of four). Smaller groups take one ring::torus_dot per output.
constexpr double kDenseShare = 0.75;

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

}  // namespace

PreparedLayer prepare_layer(const LayerWeights& weights, std::span<const std::size_t> rows_read,
                            core::WorkerPool& workers) {
  PreparedLayer prepared;
  prepared.group_start = weights.group_start;
  prepared.groups.resize(weights.groups());
  std::vector<std::vector<std::vector<std::uint32_t>>> column_of_row(workers.threads());
  for (auto& worker : column_of_row)
    for (std::size_t rows : rows_read)
      worker.emplace_back(rows, kNoColumn);
  workers.run(weights.groups(), [&](std::size_t g, unsigned worker) {
    prepared.groups[g] =
        prepare_group(weights, static_cast<std::uint32_t>(g), column_of_row[worker]);
  });
  return prepared;
}

template <class Word>
void run_prepared(const PreparedLayer& prepared, const cuda::block::LinearArgs& g,
                  core::WorkerPool& workers, ring::SimdIsa simd) {
  // Rows are W words apart: all of them go through the kernels (the padding of 32-bit rows, zero,
  // makes every length a multiple of 32 words: no narrow tails).
  const std::size_t W = g.W, N = g.N;
  Word* out;
  if constexpr (sizeof(Word) == 4) {
    out = g.out32;
  } else {
    out = g.out;
  }
  struct Scratch {
    std::vector<const Word*> rows, columns, shifted;
    std::vector<u64> weights, matrix;
    std::vector<Word*> outs;
  };
  std::vector<Scratch> scratch(workers.threads());
  workers.run(prepared.groups.size(), [&](std::size_t grp, unsigned worker) {
    Scratch& sc = scratch[worker];
    const PreparedGroup& group = prepared.groups[grp];
    const std::uint32_t first = prepared.group_start[grp], last = prepared.group_start[grp + 1];
    const std::size_t outputs = last - first, K = group.columns.size();
    const std::uint32_t first_tap = g.tap_start[first];
    const auto row = [&](std::uint32_t source, std::uint32_t index) {
      return static_cast<const Word*>(g.sources[source]) + std::size_t{index} * W;
    };
    if (group.form == PreparedGroup::Form::per_output) {
      sc.rows.clear();
      sc.weights.clear();
      for (std::uint32_t k = first_tap; k < g.tap_start[last]; ++k) {
        const Tap& t = g.taps[k];
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
        for (std::uint32_t k = g.tap_start[first + o]; k < g.tap_start[first + o + 1]; ++k)
          sc.matrix[o * K + group.tap_column[k - first_tap]] +=
              static_cast<u64>(static_cast<std::int64_t>(g.taps[k].weight));
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
          sc.outs[o] = out + g.slot[first + o] * W + w0;
        if (group.form == PreparedGroup::Form::dense) {
          ring::torus_matmul(sc.shifted, sc.matrix, sc.outs, len, simd);
        } else {
          ring::torus_spmm(sc.shifted,
                           {group.start, group.positives, group.column, group.magnitude}, sc.outs,
                           len, simd);
        }
        continue;
      }
      std::size_t at = 0;
      for (std::uint32_t o = first; o < last; ++o) {
        const std::size_t taps = g.tap_start[o + 1] - g.tap_start[o];
        sc.shifted.resize(taps);
        for (std::size_t k = 0; k < taps; ++k)
          sc.shifted[k] = sc.rows[at + k] + w0;
        ring::torus_dot(sc.shifted, std::span<const u64>(sc.weights.data() + at, taps),
                        std::span<Word>(out + g.slot[o] * W + w0, len), simd);
        at += taps;
      }
    }
    for (std::uint32_t o = first; o < last; ++o) {
      if constexpr (sizeof(Word) == 4) {
        out[g.slot[o] * W + N] += narrow_word(g.bias[o]);
      } else {
        out[g.slot[o] * W + N] += g.bias[o];
      }
    }
  });
}

template void run_prepared<std::uint64_t>(const PreparedLayer&, const cuda::block::LinearArgs&,
                                          core::WorkerPool&, ring::SimdIsa);
template void run_prepared<std::uint32_t>(const PreparedLayer&, const cuda::block::LinearArgs&,
                                          core::WorkerPool&, ring::SimdIsa);

}  // namespace safhire::backend
