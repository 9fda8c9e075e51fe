// The CPU backend's linear layer: each group of a backend::LayerWeights prepared once in the form
// its kernels take (a dense matrix over the group's distinct input rows for ring::torus_matmul, a
// sparse one for ring::torus_spmm, or one ring::torus_dot per output), and the layer run group by
// group, cache-blocked, on rows of 64-bit or 32-bit words. HostOps::run_linear runs it for the
// linear step that both backends share (cuda::linear_rows).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "portable/backend_element.cuh"
#include "safhire/backend/backend.hpp"
#include "safhire/core/parallel.hpp"
#include "safhire/ring/simd.hpp"

namespace safhire::backend {

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
  std::vector<std::uint64_t> magnitude;
};

struct PreparedLayer {
  std::vector<std::uint32_t> group_start;  // LayerWeights::group_start
  std::vector<PreparedGroup> groups;
};

// Each group of `weights` (valid; rows_read: its rows_read()) in its form, the groups shared by
// `workers`.
PreparedLayer prepare_layer(const LayerWeights& weights, std::span<const std::size_t> rows_read,
                            core::WorkerPool& workers);

// The layer of block::LinearArgs g (rows g.W words apart, all of them computed: 32-bit rows'
// zero padding stays zero) on rows of Word (u64: mod 2^64, out; u32: mod 2^32, out32, the bias
// rounded by narrow_word), group by group in `prepared`'s forms, the groups shared by `workers`.
template <class Word>
void run_prepared(const PreparedLayer& prepared, const cuda::block::LinearArgs& g,
                  core::WorkerPool& workers, ring::SimdIsa simd);

}  // namespace safhire::backend
