// The Fashion-MNIST loader, on small IDX files written here (so that the suite needs no dataset
// package): a window [first, first + count) returns exactly those images, zero-padded to 32x32
// and quantized as round(p (2^bits - 1) / 255); a window past the set, missing files and
// malformed headers are typed errors.
#include <gtest/gtest.h>
#include <zlib.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "safhire/core/error.hpp"
#include "safhire/hybrid/dataset.hpp"

namespace {

using safhire::ErrorCode;
using safhire::hybrid::load_fashion_mnist_test;

constexpr std::size_t kImages = 7;

void put_be32(std::vector<std::uint8_t>& out, std::uint32_t v) {
  for (int s = 24; s >= 0; s -= 8)
    out.push_back(static_cast<std::uint8_t>(v >> s));
}

void write_gzip(const std::filesystem::path& path, const std::vector<std::uint8_t>& bytes) {
  gzFile f = gzopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())),
            static_cast<int>(bytes.size()));
  ASSERT_EQ(gzclose(f), Z_OK);
}

std::uint8_t pixel(std::size_t image, std::size_t y, std::size_t x) {
  return static_cast<std::uint8_t>((image * 37 + y * 11 + x * 5) % 256);
}

class FashionMnistFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("safhire-dataset-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
            "-" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
    std::vector<std::uint8_t> images, labels;
    put_be32(images, 0x803);
    put_be32(images, kImages);
    put_be32(images, 28);
    put_be32(images, 28);
    for (std::size_t i = 0; i < kImages; ++i)
      for (std::size_t y = 0; y < 28; ++y)
        for (std::size_t x = 0; x < 28; ++x)
          images.push_back(pixel(i, y, x));
    put_be32(labels, 0x801);
    put_be32(labels, kImages);
    for (std::size_t i = 0; i < kImages; ++i)
      labels.push_back(static_cast<std::uint8_t>(9 - i));
    write_gzip(dir_ / "t10k-images-idx3-ubyte.gz", images);
    write_gzip(dir_ / "t10k-labels-idx1-ubyte.gz", labels);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::filesystem::path dir_;
};

TEST_F(FashionMnistFiles, WindowIsPaddedAndQuantized) {
  for (const std::uint32_t bits : {1u, 4u, 8u}) {
    const auto got = load_fashion_mnist_test(2, 3, bits, dir_.string());
    ASSERT_EQ(got.images.size(), 3u);
    ASSERT_EQ(got.labels.size(), 3u);
    const double levels = std::ldexp(1.0, static_cast<int>(bits)) - 1;
    for (std::size_t k = 0; k < 3; ++k) {
      EXPECT_EQ(got.labels[k], static_cast<std::int64_t>(9 - (2 + k)));
      ASSERT_EQ(got.images[k].size(), 32u * 32u);
      for (std::size_t y = 0; y < 32; ++y)
        for (std::size_t x = 0; x < 32; ++x) {
          const bool inside = y >= 2 && y < 30 && x >= 2 && x < 30;
          const std::int64_t want =
              inside ? std::llround(pixel(2 + k, y - 2, x - 2) * levels / 255.0) : 0;
          ASSERT_EQ(got.images[k][y * 32 + x], want)
              << "bits " << bits << " image " << k << " at " << y << "," << x;
        }
    }
  }
}

TEST_F(FashionMnistFiles, CountIsCutAtTheEndOfTheSet) {
  EXPECT_EQ(load_fashion_mnist_test(0, 0, 8, dir_.string()).images.size(), kImages);
  const auto tail = load_fashion_mnist_test(5, 100, 8, dir_.string());
  ASSERT_EQ(tail.labels.size(), 2u);
  EXPECT_EQ(tail.labels[0], 4);
  EXPECT_EQ(tail.labels[1], 3);
  EXPECT_EQ(load_fashion_mnist_test(4, 0, 8, dir_.string()).images.size(), kImages - 4);
}

TEST_F(FashionMnistFiles, BadWindowsAndFilesAreTypedErrors) {
  try {
    load_fashion_mnist_test(kImages, 1, 8, dir_.string());
    FAIL() << "a first image past the set was accepted";
  } catch (const safhire::Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::invalid_argument);
  }
  try {
    load_fashion_mnist_test(0, 1, 8, (dir_ / "missing").string());
    FAIL() << "a missing directory was accepted";
  } catch (const safhire::Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::invalid_argument);
  }
  std::vector<std::uint8_t> wrong;
  put_be32(wrong, 0x803);
  put_be32(wrong, kImages);
  put_be32(wrong, 28);
  put_be32(wrong, 28);  // header promises 7 images, file has none
  write_gzip(dir_ / "t10k-images-idx3-ubyte.gz", wrong);
  try {
    load_fashion_mnist_test(0, 1, 8, dir_.string());
    FAIL() << "a truncated image file was accepted";
  } catch (const safhire::Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::malformed_input);
  }
}

}  // namespace
