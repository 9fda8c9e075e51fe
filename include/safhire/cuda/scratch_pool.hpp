// Scratch words that a backend reuses instead of allocating them in a round's hot loop. A block
// given back is kept, by its size, and handed out again for the same size: the levels of a
// packing and the rounds of an inference repeat their shapes, and the sessions of a served model
// repeat each other's, so a pool that serves one session after another (cuda/backend.cu lends
// each session a stream with its pool) stops taking memory after the first. All blocks of one
// pool are used on one stream, in order, so a block given back while kernels still read it is
// only reused by work queued after them: no event is needed.
//
// A request takes the smallest idle block that holds it with fewer words to spare than it asks
// for. What a pool keeps is bounded by its owner: trim(keep) gives idle blocks back until at most
// `keep` words are idle; the CUDA backend trims a lane to kKeepPeaks times its peak in use when a
// session ends (a whole emulated inference of small-b8 at gamma 2 leaves 1.95 times its peak
// idle: its rows and packings differ in size from round to round). Host-compilable (the CPU replay
// of the device backend, tests/cpu_ops.hpp, runs it); not thread-safe, as a backend is used by one
// thread at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <map>
#include <new>
#include <type_traits>
#include <utility>

namespace safhire::cuda {

// Where a pool's words come from: cudaMallocAsync and cudaFreeAsync on the backend's stream,
// or host memory in the CPU replay.
class WordSource {
 public:
  virtual ~WordSource() = default;
  virtual std::uint64_t* allocate(std::size_t words) = 0;
  virtual void release(std::uint64_t* p, std::size_t words) noexcept = 0;
};

// Host memory as a pool's words: the CPU backend's scratch, and the CPU replay's.
class HostWords final : public WordSource {
 public:
  std::uint64_t* allocate(std::size_t words) override {
    return static_cast<std::uint64_t*>(::operator new(words * sizeof(std::uint64_t)));
  }
  void release(std::uint64_t* p, std::size_t) noexcept override { ::operator delete(p); }
};

class ScratchPool {
 public:
  using u64 = std::uint64_t;
  static constexpr std::size_t kKeepPeaks = 4;

  struct Stats {
    std::uint64_t allocations = 0;  // blocks taken from the source
    std::uint64_t reuses = 0;       // blocks handed out again
    std::size_t in_use = 0;         // words handed out now (blocks' capacities)
    std::size_t cached = 0;         // words kept for reuse
    std::size_t peak = 0;           // the most words ever in use at once
  };

  // A block of words, given back to its pool when destroyed (or moved from).
  class Block {
   public:
    Block() = default;
    ~Block() { reset(); }
    Block(const Block&) = delete;
    Block& operator=(const Block&) = delete;
    Block(Block&& other) noexcept { swap(other); }
    Block& operator=(Block&& other) noexcept {
      if (this != &other) {
        reset();
        swap(other);
      }
      return *this;
    }
    u64* data() { return data_; }
    const u64* data() const { return data_; }
    std::size_t size() const { return words_; }
    void reset() noexcept {
      if (pool_ != nullptr && data_ != nullptr) pool_->give(data_, capacity_);
      pool_ = nullptr;
      data_ = nullptr;
      words_ = capacity_ = 0;
    }

   private:
    friend class ScratchPool;
    Block(ScratchPool* pool, u64* data, std::size_t words, std::size_t capacity)
        : pool_(pool), data_(data), words_(words), capacity_(capacity) {}
    void swap(Block& other) noexcept {
      std::swap(pool_, other.pool_);
      std::swap(data_, other.data_);
      std::swap(words_, other.words_);
      std::swap(capacity_, other.capacity_);
    }
    ScratchPool* pool_ = nullptr;
    u64* data_ = nullptr;
    std::size_t words_ = 0, capacity_ = 0;
  };

  // `source` must outlive the pool.
  explicit ScratchPool(WordSource& source) : source_(&source) {}
  ~ScratchPool() { trim(0); }
  ScratchPool(const ScratchPool&) = delete;
  ScratchPool& operator=(const ScratchPool&) = delete;

  // A block of `words` words (none for 0), its contents whatever was there: the smallest idle
  // block that holds them with at most as many to spare (capacity below 2 words), else a new one.
  Block take(std::size_t words) {
    if (words == 0) return {};
    auto it = idle_.lower_bound(words);
    if (it != idle_.end() && it->first / 2 < words) {
      const std::size_t capacity = it->first;
      u64* p = it->second;
      idle_.erase(it);
      stats_.cached -= capacity;
      ++stats_.reuses;
      return hand_out(p, words, capacity);
    }
    u64* p = source_->allocate(words);
    ++stats_.allocations;
    return hand_out(p, words, words);
  }

  // Gives idle blocks back to the source, largest first, until at most `keep` words are idle.
  void trim(std::size_t keep) noexcept {
    while (stats_.cached > keep && !idle_.empty()) {
      auto last = std::prev(idle_.end());
      source_->release(last->second, last->first);
      stats_.cached -= last->first;
      idle_.erase(last);
    }
  }

  const Stats& stats() const { return stats_; }

 private:
  Block hand_out(u64* p, std::size_t words, std::size_t capacity) {
    stats_.in_use += capacity;
    if (stats_.in_use > stats_.peak) stats_.peak = stats_.in_use;
    return Block(this, p, words, capacity);
  }
  void give(u64* p, std::size_t capacity) noexcept {
    stats_.in_use -= capacity;
    try {
      idle_.emplace(capacity, p);
      stats_.cached += capacity;
    } catch (...) {  // no memory to remember it: give it back instead
      source_->release(p, capacity);
    }
  }

  WordSource* source_;
  std::multimap<std::size_t, u64*> idle_;  // by capacity
  Stats stats_;
};

// `count` values of T in a pooled block (what a backend uploads per round: destinations, slots,
// row addresses), the block rounded up to whole words.
template <class T>
class Staged {
  static_assert(alignof(T) <= alignof(std::uint64_t) && std::is_trivially_copyable_v<T>);

 public:
  Staged() = default;
  Staged(ScratchPool& pool, std::size_t count)
      : block_(pool.take((count * sizeof(T) + sizeof(std::uint64_t) - 1) / sizeof(std::uint64_t))) {
  }
  T* data() { return reinterpret_cast<T*>(block_.data()); }
  const T* data() const { return reinterpret_cast<const T*>(block_.data()); }

 private:
  ScratchPool::Block block_;
};

}  // namespace safhire::cuda
