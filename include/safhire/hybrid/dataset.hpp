// Fashion-MNIST test images as the models expect them: 28x28 zero-padded to 1x32x32 and
// quantized to `input_bits` exactly as models/train.py does (round(p / 255 (2^bits - 1))), read
// from Debian's dataset-fashion-mnist (gzip'd IDX files).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace safhire::hybrid {

inline constexpr const char* kFashionMnistDir = "/usr/share/datasets/fashion-mnist";

struct LabelledImages {
  std::vector<std::vector<std::int64_t>> images;
  std::vector<std::int64_t> labels;
  std::int64_t max = 0;  // the values lie in [0, max]: 2^input_bits - 1
};

// round(v to_max / from_max) for v in [0, from_max], with train.py's rounding (ties cannot occur
// for from_max = 255): how pixels become a model's input, and how an image quantized to one
// precision is carried to another.
inline std::int64_t requantize(std::int64_t v, std::int64_t from_max, std::int64_t to_max) {
  return (2 * v * to_max + from_max) / (2 * from_max);
}

// `count` test images from index `first` on (all the rest if count is 0 or reaches past the
// set), so that a long evaluation can be split into shards. Missing or malformed files, or a
// `first` past the set, are Error(invalid_argument / malformed_input) naming the file.
LabelledImages load_fashion_mnist_test(std::size_t first, std::size_t count,
                                       std::uint32_t input_bits,
                                       const std::string& dir = kFashionMnistDir);

}  // namespace safhire::hybrid
