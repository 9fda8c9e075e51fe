// Synthetic models of the seed paper's shapes with seeded weights, for latency and
// communication benchmarks only (never quote accuracy from them): ResNet-20 on 3x32x32
// (CIFAR-10 shapes), ResNet-18 on 3x64x64 (Tiny-ImageNet shapes, 200 classes) and ResNet-34 on
// 3x224x224 (ImageNet shapes, the stem's max-pool replaced by a 2x2 average pool). Every round
// uses b-bit accumulators with a = b/4 activation bits; each output channel's weights are +-1
// entries at random positions up to the accumulator bound, which is the sparsity that
// accumulator-aware quantization imposes at that precision.
#pragma once

#include <cstdint>
#include <string>

#include "safhire/hybrid/model.hpp"

namespace safhire::hybrid {

enum class ZooModel { resnet20_cifar, resnet18_tiny, resnet34_imagenet };

std::string to_string(ZooModel model);
Model synthetic_model(ZooModel model, std::uint32_t bits, std::uint64_t seed = 1);

}  // namespace safhire::hybrid
