// NVTX ranges as RAII objects in the "safhire" domain, one colour per pipeline step, so that an
// Nsight Systems timeline reads like the paper's breakdown figures (profiles/nvtx-ranges.md lists
// the names).
#pragma once

#include <nvtx3/nvToolsExt.h>

#include <cstdint>

namespace safhire::cuda {

enum class NvtxCategory : std::uint32_t { ring = 1, rlwe = 2, hybrid = 3 };

class NvtxRange {
 public:
  NvtxRange(const char* name, NvtxCategory category, std::uint32_t argb) {
    nvtxEventAttributes_t attributes{};
    attributes.version = NVTX_VERSION;
    attributes.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    attributes.category = static_cast<std::uint32_t>(category);
    attributes.colorType = NVTX_COLOR_ARGB;
    attributes.color = argb;
    attributes.messageType = NVTX_MESSAGE_TYPE_ASCII;
    attributes.message.ascii = name;
    nvtxDomainRangePushEx(domain(), &attributes);
  }
  ~NvtxRange() { nvtxDomainRangePop(domain()); }
  NvtxRange(const NvtxRange&) = delete;
  NvtxRange& operator=(const NvtxRange&) = delete;

  static nvtxDomainHandle_t domain() {
    static const nvtxDomainHandle_t handle = nvtxDomainCreateA("safhire");
    return handle;
  }
};

// Colours of the ring-layer steps.
inline constexpr std::uint32_t kColorNtt = 0xff1f77b4;
inline constexpr std::uint32_t kColorPointwise = 0xffff7f0e;
inline constexpr std::uint32_t kColorCrt = 0xff2ca02c;
inline constexpr std::uint32_t kColorAutomorphism = 0xffd62728;

}  // namespace safhire::cuda
