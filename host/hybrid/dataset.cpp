#include "safhire/hybrid/dataset.hpp"

#include <zlib.h>

#include <string>

#include "safhire/core/error.hpp"
#include "safhire/core/serialize.hpp"

namespace safhire::hybrid {

namespace {

std::vector<std::uint8_t> gunzip(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  require(f != nullptr, ErrorCode::invalid_argument,
          "cannot open " + path + " (Debian package dataset-fashion-mnist)");
  std::vector<std::uint8_t> out;
  std::uint8_t buf[1 << 16];
  int n = 0;
  while ((n = gzread(f, buf, sizeof buf)) > 0)
    out.insert(out.end(), buf, buf + n);
  const bool ok = n == 0;
  gzclose(f);
  require(ok, ErrorCode::malformed_input, "corrupt gzip file " + path);
  return out;
}

std::uint32_t big_endian(const std::vector<std::uint8_t>& b, std::size_t at) {
  return (std::uint32_t{b[at]} << 24) | (std::uint32_t{b[at + 1]} << 16) |
         (std::uint32_t{b[at + 2]} << 8) | b[at + 3];
}

}  // namespace

LabelledImages load_fashion_mnist_test(std::size_t first, std::size_t count,
                                       std::uint32_t input_bits, const std::string& dir) {
  require(input_bits >= 1 && input_bits <= 16, ErrorCode::invalid_argument, "input bits");
  const std::string image_path = dir + "/t10k-images-idx3-ubyte.gz";
  const std::string label_path = dir + "/t10k-labels-idx1-ubyte.gz";
  const std::vector<std::uint8_t> images = gunzip(image_path), labels = gunzip(label_path);
  require(images.size() >= 16 && big_endian(images, 0) == 0x803 && labels.size() >= 8 &&
              big_endian(labels, 0) == 0x801,
          ErrorCode::malformed_input, "not IDX image and label files in " + dir);
  const std::size_t n = big_endian(images, 4), rows = big_endian(images, 8),
                    cols = big_endian(images, 12);
  require(rows == 28 && cols == 28 && images.size() == 16 + n * 784 && big_endian(labels, 4) == n &&
              labels.size() == 8 + n,
          ErrorCode::malformed_input, "unexpected Fashion-MNIST sizes in " + dir);
  require(first < n, ErrorCode::invalid_argument,
          "first image " + std::to_string(first) + " is past the " + std::to_string(n) +
              " test images in " + dir);
  if (count == 0 || count > n - first) count = n - first;
  const std::int64_t levels = (std::int64_t{1} << input_bits) - 1;
  LabelledImages out;
  out.max = levels;
  for (std::size_t i = first; i < first + count; ++i) {
    std::vector<std::int64_t> img(32 * 32, 0);
    for (std::size_t y = 0; y < 28; ++y)
      for (std::size_t x = 0; x < 28; ++x) {
        const std::int64_t p = images[16 + i * 784 + y * 28 + x];
        img[(y + 2) * 32 + (x + 2)] = requantize(p, 255, levels);
      }
    out.images.push_back(std::move(img));
    out.labels.push_back(labels[8 + i]);
  }
  return out;
}

}  // namespace safhire::hybrid
