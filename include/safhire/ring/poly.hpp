// Polynomial batches: `count` polynomials of N words each, stored contiguously as [count][N] with
// 64-byte alignment, over the torus Z_{2^64} or over Z_q for one NTT prime. The layout is the one
// the CUDA backend uses too, so a batch uploads and downloads as a single copy.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <new>
#include <span>
#include <string>

#include "safhire/core/error.hpp"
#include "safhire/ring/ring_params.hpp"

namespace safhire::ring {

using u64 = std::uint64_t;

// Words with 64-byte alignment (one cache line, one AVX-512 register).
class AlignedWords {
 public:
  AlignedWords() = default;
  explicit AlignedWords(std::size_t size) : size_(size) {
    if (size == 0) return;
    const std::size_t bytes = (size * sizeof(u64) + 63) / 64 * 64;
    data_.reset(static_cast<u64*>(std::aligned_alloc(64, bytes)));
    if (!data_) throw std::bad_alloc();
    for (std::size_t i = 0; i < size; ++i)
      data_[i] = 0;
  }
  AlignedWords(const AlignedWords& other) : AlignedWords(other.size_) {
    for (std::size_t i = 0; i < size_; ++i)
      data_[i] = other.data_[i];
  }
  AlignedWords& operator=(const AlignedWords& other) {
    if (this != &other) *this = AlignedWords(other);
    return *this;
  }
  AlignedWords(AlignedWords&&) noexcept = default;
  AlignedWords& operator=(AlignedWords&&) noexcept = default;

  u64* data() { return data_.get(); }
  const u64* data() const { return data_.get(); }
  std::size_t size() const { return size_; }

 private:
  struct Free {
    void operator()(u64* p) const { std::free(p); }
  };
  std::unique_ptr<u64[], Free> data_;
  std::size_t size_ = 0;
};

// Coefficient domains. Torus: words are elements of Z_{2^64} (wrapping arithmetic); read as
// signed, they are the centred representatives. ModQ: words are in [0, q).
struct Torus {
  friend bool operator==(Torus, Torus) { return true; }
};
struct ModQ {
  u64 q;
  friend bool operator==(ModQ x, ModQ y) { return x.q == y.q; }
};

template <class Domain>
class PolyBatch {
 public:
  PolyBatch(const RingParams& ring, std::size_t count, Domain domain = Domain{})
      : ring_(ring), domain_(domain), count_(count), words_(count * ring.N()) {}

  const RingParams& ring() const { return ring_; }
  Domain domain() const { return domain_; }
  std::size_t count() const { return count_; }
  std::size_t degree() const { return ring_.N(); }

  std::span<u64> operator[](std::size_t i) { return {words_.data() + i * ring_.N(), ring_.N()}; }
  std::span<const u64> operator[](std::size_t i) const {
    return {words_.data() + i * ring_.N(), ring_.N()};
  }
  u64* data() { return words_.data(); }
  const u64* data() const { return words_.data(); }
  std::span<u64> words() { return {words_.data(), words_.size()}; }
  std::span<const u64> words() const { return {words_.data(), words_.size()}; }

 private:
  RingParams ring_;
  Domain domain_;
  std::size_t count_;
  AlignedWords words_;
};

using TorusBatch = PolyBatch<Torus>;
using ModBatch = PolyBatch<ModQ>;

// One polynomial over the torus: a batch of one, indexable by coefficient.
class TorusPoly : public TorusBatch {
 public:
  explicit TorusPoly(const RingParams& ring) : TorusBatch(ring, 1) {}
  u64& operator[](std::size_t i) { return data()[i]; }
  u64 operator[](std::size_t i) const { return data()[i]; }
  std::span<u64> coeffs() { return words(); }
  std::span<const u64> coeffs() const { return words(); }
};

// Throws ErrorCode::size_mismatch unless `span` holds exactly N words of `ring`.
inline void require_degree(const RingParams& ring, std::size_t size, const char* what) {
  if (size != ring.N())
    throw Error(ErrorCode::size_mismatch, std::string(what) + ": expected " +
                                              std::to_string(ring.N()) + " coefficients for ring " +
                                              ring.name() + ", got " + std::to_string(size));
}

}  // namespace safhire::ring
