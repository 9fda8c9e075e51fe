// The quantized model: a list of rounds (one linear block between two client-side ReLUs), its
// versioned file format (docs/model-format.md) and the plaintext integer evaluator that is the
// oracle of encrypted inference. A round is a sum of terms, each a convolution of an earlier
// activation (optionally after a sum-pool), plus a bias; a fully connected layer is a convolution
// whose kernel covers its input, an identity shortcut a 1x1 diagonal convolution. Activation 0
// is the input; activation r >= 1 is the requantized output of round r - 1; the last round's
// accumulators are the logits.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "safhire/backend/backend.hpp"

namespace safhire::hybrid {

struct Shape {
  std::uint32_t c = 0, h = 0, w = 0;
  std::size_t size() const { return std::size_t{c} * h * w; }
  std::size_t index(std::uint32_t ci, std::uint32_t y, std::uint32_t x) const {
    return (std::size_t{ci} * h + y) * w + x;
  }
  friend bool operator==(const Shape&, const Shape&) = default;
};

struct Term {
  std::uint32_t source = 0;  // activation index, below the round's own output index
  std::uint32_t pool = 0;    // sum-pool window and stride before the convolution (0: none)
  std::uint32_t kernel = 1, stride = 1, pad = 0;
  Shape input;                        // the source after pooling; input.c input channels
  std::vector<std::int16_t> weights;  // [out c][input.c][kernel][kernel]

  std::int16_t weight(std::uint32_t o, std::uint32_t i, std::uint32_t ky, std::uint32_t kx) const {
    return weights[((std::size_t{o} * input.c + i) * kernel + ky) * kernel + kx];
  }
};

// act = clip((max(acc, 0) * mult + 2^(shift-1)) >> shift, 0, 2^a - 1): the client's exact
// ReLU and requantization (scale eta = 2^shift / mult).
struct Requant {
  std::uint32_t mult = 0;
  std::uint32_t shift = 0;
};

struct Round {
  Shape output;
  std::uint32_t bits = 0;  // accumulator bits b_r: |acc| < 2^(b_r - 1), decoded from Z_(2^b_r)
  std::vector<Term> terms;
  std::vector<std::int32_t> bias;  // one per output channel
  std::optional<Requant> requant;  // absent exactly for the last round
};

class Model {
 public:
  // Parses and validates a model file: shapes, sources, sizes (checked before allocating), one
  // precision per activation, and the accumulator bound for every output channel: every partial
  // sum lies in [min(bias, 0) + neg, max(bias, 0) + pos] within [-2^(b_r - 1), 2^(b_r - 1) - 1],
  // pos and neg summing the positive and the negative w max_input pool^2 (max_input: 2^a - 1, or
  // 2^input_bits - 1 for the image).
  // Any violation is an Error(malformed_input) saying what and where.
  static Model parse(std::span<const std::uint8_t> bytes);
  static Model load(const std::string& path);
  // A model from its parts, validated exactly as a file is: each round gives output.c, bits,
  // bias, requant and its terms' source, pool, kernel, stride, pad, input.c and weights; the
  // shapes follow.
  static Model from_parts(const std::string& name, std::uint32_t bits, std::uint32_t act_bits,
                          std::uint32_t input_bits, const Shape& input,
                          const std::vector<Round>& rounds);
  std::vector<std::uint8_t> serialize() const;

  const std::string& name() const { return name_; }
  std::uint32_t accumulator_bits() const { return bits_; }     // b, of the hidden rounds
  std::uint32_t activation_bits() const { return act_bits_; }  // a
  std::uint32_t input_bits() const { return input_bits_; }
  std::int64_t activation_max() const { return (std::int64_t{1} << act_bits_) - 1; }
  std::int64_t input_max() const { return (std::int64_t{1} << input_bits_) - 1; }
  // The largest round precision.
  std::uint32_t max_round_bits() const;
  // Bits at which activation s travels: those of the rounds that read it (one value, checked).
  std::uint32_t encoding_bits(std::size_t s) const { return encoding_bits_[s]; }
  const std::vector<Round>& rounds() const { return rounds_; }
  // Shape of activation s (0 = input).
  const Shape& activation(std::size_t s) const { return activations_[s]; }
  std::size_t logits() const { return rounds_.back().output.size(); }
  // The rounds that read activation s (the server keeps its ciphertexts until the last one).
  std::uint32_t last_use(std::size_t s) const { return last_use_[s]; }

 private:
  void validate();
  std::string name_;
  std::uint32_t bits_ = 0, act_bits_ = 0, input_bits_ = 0;
  std::vector<Round> rounds_;
  std::vector<Shape> activations_;
  std::vector<std::uint32_t> last_use_;
  std::vector<std::uint32_t> encoding_bits_;
};

// Input accepted by the model: values in [0, 2^input_bits - 1], input-shaped; else
// Error(invalid_argument).
void require_input(const Model& model, std::span<const std::int64_t> input);

std::int64_t requantize(std::int64_t acc, const Requant& rq, std::int64_t activation_max);

// The plaintext integer evaluation (pooling, then direct convolution): the logits. If
// `accumulators` is given it receives every round's accumulators, flattened (c, y, x).
std::vector<std::int64_t> evaluate(const Model& model, std::span<const std::int64_t> input,
                                   std::vector<std::vector<std::int64_t>>* accumulators = nullptr);

// Round r's accumulators (before requantization) from the activations of rounds 0..r (acts[s]
// is the input of round s, model.activation(s)-shaped; values need not be ones an image leads
// to): what evaluate computes for that round.
std::vector<std::int64_t> round_accumulators(const Model& model, std::size_t r,
                                             std::span<const std::vector<std::int64_t>> acts);

// The class of the largest logit, the first of equal ones (as numpy's argmax).
std::size_t predicted_class(std::span<const std::int64_t> logits);

// How many of `images` the plaintext evaluator classifies as their `labels`, over `threads`
// workers. Unequal sizes are Error(invalid_argument), a bad image as in evaluate.
std::size_t count_correct(const Model& model, const std::vector<std::vector<std::int64_t>>& images,
                          std::span<const std::int64_t> labels, unsigned threads);

// One nonzero entry of a round's matrix: output o reads value `index` of activation `source`.
using Tap = backend::Tap;

// The taps of output o (flattened (c, y, x)) of round r, pool windows expanded into their raw
// inputs, zero weights skipped: the server's view of a round as a sparse integer matrix. `out`
// is cleared and refilled (reuse it: no allocation once it has grown).
void taps(const Model& model, std::size_t r, std::size_t o, std::vector<Tap>& out);

}  // namespace safhire::hybrid
