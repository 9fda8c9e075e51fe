// The trained models of models/ and their reference files: quantized test images with the logits
// that models/train.py's numpy integer evaluator computed (an implementation independent of
// src/hybrid).
#pragma once

#include <cstdint>
#include <fstream>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "safhire/core/serialize.hpp"
#include "safhire/hybrid/model.hpp"

namespace safhire::hybrid::testing {

inline std::string model_path(const std::string& name) {
  return std::string(SAFHIRE_MODELS_DIR) + "/" + name;
}

struct ReferenceImage {
  std::vector<std::int64_t> pixels;
  std::int64_t label = 0;
  std::vector<std::int64_t> logits;
};

// "SFHT", u16 version 1, u16 0, u32 count, u32 pixels per image; then per image u8 pixels, a u8
// label and 10 i32 logits.
inline std::vector<ReferenceImage> load_reference(const std::string& name) {
  std::ifstream f(model_path(name), std::ios::binary);
  const std::vector<std::uint8_t> bytes((std::istreambuf_iterator<char>(f)),
                                        std::istreambuf_iterator<char>());
  core::ByteReader in(bytes, name);
  for (char c : std::string("SFHT")) {
    if (in.u8() != static_cast<std::uint8_t>(c)) in.fail("bad magic");
  }
  in.u16();
  in.u16();
  const std::uint32_t count = in.u32(), pixels = in.u32();
  std::vector<ReferenceImage> out(count);
  for (ReferenceImage& img : out) {
    img.pixels.resize(pixels);
    for (auto& p : img.pixels)
      p = in.u8();
    img.label = in.u8();
    img.logits.resize(10);
    for (auto& l : img.logits)
      l = static_cast<std::int32_t>(in.u32());
  }
  in.expect_end();
  return out;
}

// Every activation of the plaintext evaluation of `input` (0: the input; r >= 1: round r - 1's
// accumulators requantized), from the evaluator's accumulators `accs`.
inline std::vector<std::vector<std::int64_t>> activations(
    const Model& m, const std::vector<std::int64_t>& input,
    const std::vector<std::vector<std::int64_t>>& accs) {
  std::vector<std::vector<std::int64_t>> acts = {input};
  for (std::size_t r = 0; r + 1 < m.rounds().size(); ++r) {
    acts.emplace_back();
    for (std::int64_t v : accs[r])
      acts.back().push_back(requantize(v, *m.rounds()[r].requant, m.activation_max()));
  }
  return acts;
}

// A one-round model at b = 8 over a 4x1x1 input of 2-bit values: a fully connected layer with
// these weights ([out][4]) and biases, validated like a file.
inline Model fully_connected_b8(std::vector<std::int16_t> weights, std::vector<std::int32_t> bias) {
  Round round;
  round.output.c = static_cast<std::uint32_t>(bias.size());
  round.bits = 8;
  Term t;
  t.kernel = 1;
  t.input.c = 4;
  t.weights = std::move(weights);
  round.terms.push_back(std::move(t));
  round.bias = std::move(bias);
  return Model::from_parts("fully-connected", 8, 2, 2, Shape{4, 1, 1}, {round});
}

}  // namespace safhire::hybrid::testing
