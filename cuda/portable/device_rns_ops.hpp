// The CKKS backend's RnsOps, written once over a `Device` and run by two: cuda/ckks_rns.cu
// instantiates it with kernel launches on a CUDA stream (cuda::make_cuda_rns_ops), and
// tests/ckks/test_ckks_device_emulation.cpp with the same kernel bodies (ckks_kernels.cuh) run on
// CPU threads over poisoned host memory, where whole evaluations through it (key generation,
// key switching, bootstrapping) must equal the CPU's RnsOps word for word. Everything between
// the evaluator and the kernels (residency, staging, the per-limb maps, the launch sequence) is
// this one code.
//
// Residency: polynomials this backend makes (zeros, reshape, make_resident) keep their words on
// the device, in stream-ordered allocations from the Device's memory, and every primitive works
// on them in place. A host operand is staged (uploaded, and downloaded again when it is an
// output), so host and resident polynomials mix freely; only resident ones avoid the copies.
// The slot permutations of RnsOps::permutation go up on first use and stay (N words a Galois
// element: 256 KB at N = 2^16); any other permutation is staged per call.
//
// Device provides, every call in the order of its one stream:
//   Stream, Memory (a ckks::DeviceMemory with stream()), Buffer<T> (DeviceBuffer's interface:
//   (count, stream), (span, stream) uploading it, data(), size(), download(span));
//   require_device() (Error(device_error) when none); zero, upload, download, copy (words, with
//   the stream); synchronize(stream); Range (a scope named for a primitive) and
//   push_range / pop_range (the steps around them);
//   the launches ntt, elementwise, inner_product, uniform, permute, signed_residues,
//   convert_prepare and convert (ckks_kernels.cuh: a Grid and the kernel's
//   arguments, which carry the launch's constants by value: nothing is uploaded for them).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "ckks_kernels.cuh"
#include "safhire/ckks/rns.hpp"
#include "safhire/ckks/rns_ops.hpp"
#include "safhire/core/aes_ctr.hpp"
#include "safhire/core/error.hpp"

namespace safhire::cuda {

template <class Device>
class DeviceRnsOps final : public ckks::RnsOps {
  using u64 = std::uint64_t;
  using u32 = std::uint32_t;
  using Stream = typename Device::Stream;
  template <class T>
  using Buffer = typename Device::template Buffer<T>;
  using Grid = ckks_kernels::Grid;
  using LimbMap = ckks_kernels::LimbMap;
  using Op = ckks_kernels::Op;
  using RnsPoly = ckks::RnsPoly;
  using ModulusIndex = ckks::ModulusIndex;

 public:
  // limbs_per_launch: at most this many limbs a launch (1 .. kMaxLimbs; inner products with
  // constant pairs at most kProductConstants / their number, conversions' targets at most
  // kMaxTargets). Fewer than the most only to test the launches' split.
  explicit DeviceRnsOps(const ckks::CkksContext& context,
                        std::uint32_t limbs_per_launch = ckks_kernels::kMaxLimbs)
      : RnsOps(context),
        device_(require_device()),
        per_launch_(limbs_per_launch),
        memory_(std::make_shared<typename Device::Memory>()) {
    require(per_launch_ >= 1 && per_launch_ <= ckks_kernels::kMaxLimbs, ErrorCode::invalid_argument,
            "limbs per launch must be 1 .. " + std::to_string(ckks_kernels::kMaxLimbs));
    // Launches name moduli and limb positions in a byte each.
    require(context.primes().size() <= 256, ErrorCode::invalid_argument,
            "the CUDA backend takes at most 256 primes");
    const std::uint32_t n = context.degree();
    const std::size_t primes = context.primes().size();
    std::vector<u64> fw(primes * n), fwq(primes * n), iv(primes * n), ivq(primes * n);
    std::vector<u64> moduli(primes), n_inv(primes), n_inv_quotient(primes);
    for (std::size_t p = 0; p < primes; ++p) {
      const auto& tb = context.ntt(static_cast<ModulusIndex>(p)).tables();
      std::copy(tb.forward.begin(), tb.forward.end(), fw.begin() + p * n);
      std::copy(tb.forward_quotient.begin(), tb.forward_quotient.end(), fwq.begin() + p * n);
      std::copy(tb.inverse.begin(), tb.inverse.end(), iv.begin() + p * n);
      std::copy(tb.inverse_quotient.begin(), tb.inverse_quotient.end(), ivq.begin() + p * n);
      moduli[p] = context.prime(static_cast<ModulusIndex>(p));
      n_inv[p] = tb.n_inv;
      n_inv_quotient[p] = tb.n_inv_quotient;
    }
    forward_ = Buffer<u64>(std::span<const u64>(fw), s());
    forward_q_ = Buffer<u64>(std::span<const u64>(fwq), s());
    inverse_ = Buffer<u64>(std::span<const u64>(iv), s());
    inverse_q_ = Buffer<u64>(std::span<const u64>(ivq), s());
    moduli_ = Buffer<u64>(std::span<const u64>(moduli), s());
    std::vector<ckks_kernels::ModulusReduction> reductions(primes);
    for (std::size_t p = 0; p < primes; ++p)
      reductions[p] = {moduli[p], core::make_wide_reducer(moduli[p])};
    reductions_ = Buffer<ckks_kernels::ModulusReduction>(
        std::span<const ckks_kernels::ModulusReduction>(reductions), s());
    n_inv_ = Buffer<u64>(std::span<const u64>(n_inv), s());
    n_inv_quotient_ = Buffer<u64>(std::span<const u64>(n_inv_quotient), s());
    Device::synchronize(s());  // the uploads read the vectors above
  }

  // ---- storage
  RnsPoly zeros(std::vector<ModulusIndex> moduli, bool ntt) const override {
    RnsPoly p;
    reshape(p, moduli, ntt);
    if (p.device.size() > 0) Device::zero(p.device.data(), p.device.size(), s());
    return p;
  }

  void reshape(RnsPoly& p, std::span<const ModulusIndex> moduli, bool ntt) const override {
    p.n = context().degree();
    p.moduli.assign(moduli.begin(), moduli.end());
    p.ntt = ntt;
    const std::size_t words = p.limbs() * std::size_t{p.n};
    if (!p.on_device() || p.device.memory() != memory_) {
      ckks::Words().swap(p.data);
      p.device = ckks::DeviceWords(memory_, words);
    } else {
      p.device.resize(words);
    }
  }

  void make_resident(RnsPoly& p) const override {
    if (p.on_device()) return;
    check_words(p);
    ckks::DeviceWords words(memory_, p.data.size());
    // From pageable memory: staged before the call returns, so the host words may go.
    if (!p.data.empty()) Device::upload(words.data(), p.data.data(), p.data.size(), s());
    ckks::Words().swap(p.data);
    p.device = std::move(words);
  }

  void to_host(RnsPoly& p) const override {
    if (!p.on_device()) return;
    ckks::Words host(p.device.size());
    if (!host.empty()) Device::download(host.data(), p.device.data(), host.size(), s());
    Device::synchronize(s());
    p.device = {};
    p.data = std::move(host);
  }

  void synchronize() const override { Device::synchronize(s()); }

  // Ranges of whole steps (bootstrapping's ModRaise, CoeffToSlot, EvalMod, SlotToCoeff) around
  // the primitives' ranges, which nest inside them.
  void begin_range(const char* name) const override { Device::push_range(name); }
  void end_range() const override { Device::pop_range(); }

  void copy(const RnsPoly& a, RnsPoly& out, std::size_t first, std::size_t last) const override {
    const typename Device::Range range("ckks copy");
    require(a.n == out.n, ErrorCode::size_mismatch, "RNS copy between different degrees");
    last = std::min(last, out.limbs());
    if (first >= last) return;
    const View src(a, s());
    Target dst(out, s());
    const std::size_t n = out.n;
    // One copy per run of limbs that are consecutive in both.
    for (std::size_t k = first; k < last;) {
      const std::size_t from = a.position(out.moduli[k]);
      std::size_t run = 1;
      while (k + run < last && a.position(out.moduli[k + run]) == from + run)
        ++run;
      Device::copy(dst.get() + k * n, src.get() + from * n, run * n, s());
      k += run;
    }
    dst.finish();
  }

  // ---- arithmetic
  void forward(RnsPoly& p, std::size_t first, std::size_t last) const override {
    transform(p, first, last, false);
  }
  void inverse(RnsPoly& p, std::size_t first, std::size_t last) const override {
    transform(p, first, last, true);
  }
  void add(const RnsPoly& a, const RnsPoly& b, RnsPoly& out) const override {
    elementwise(a, b, out, Op::add, {});
  }
  void sub(const RnsPoly& a, const RnsPoly& b, RnsPoly& out) const override {
    elementwise(a, b, out, Op::sub, {});
  }
  void negate(const RnsPoly& a, RnsPoly& out) const override {
    elementwise(a, a, out, Op::negate, {});
  }
  void multiply(const RnsPoly& a, const RnsPoly& b, RnsPoly& out) const override {
    elementwise(a, b, out, Op::multiply, {});
  }
  void multiply_accumulate(const RnsPoly& a, const RnsPoly& b, RnsPoly& out) const override {
    elementwise(a, b, out, Op::multiply_accumulate, {});
  }
  void sub_scale(const RnsPoly& a, const RnsPoly& b, std::span<const u64> scalars,
                 RnsPoly& out) const override {
    elementwise(a, b, out, Op::sub_scale, scalars);
  }
  void multiply_scalars(const RnsPoly& a, std::span<const u64> scalars,
                        RnsPoly& out) const override {
    elementwise(a, a, out, Op::scale, scalars);
  }
  void add_scalars(const RnsPoly& a, std::span<const u64> scalars, RnsPoly& out) const override {
    elementwise(a, a, out, Op::add_scalar, scalars);
  }

  void inner_product(std::span<const RnsPoly* const> a, std::span<const RnsPoly* const> b,
                     RnsPoly& out, std::span<const std::uint32_t> perm) const override {
    const typename Device::Range range("ckks inner_product");
    require(!a.empty() && a.size() == b.size() && a.size() <= ckks_kernels::kMaxPairs,
            ErrorCode::size_mismatch, "inner product of 1 .. 16 pairs of polynomials");
    const std::uint32_t n = out.n;
    require(perm.empty() || perm.size() == n, ErrorCode::size_mismatch,
            "a fused permutation needs N entries");
    // A host constant (a compact a_j of one word per limb, such as a polynomial evaluation's
    // coefficients) goes in the launch's parameters instead of being staged.
    std::vector<std::optional<View>> va;
    std::vector<View> vb;
    std::vector<std::uint32_t> shift;
    va.reserve(a.size());
    vb.reserve(a.size());
    for (std::size_t j = 0; j < a.size(); ++j) {
      const std::uint32_t an = a[j]->n;
      require(an != 0 && n % an == 0 && ((n / an) & (n / an - 1)) == 0 && b[j]->n == n &&
                  a[j]->ntt == b[j]->ntt,
              ErrorCode::size_mismatch, "RNS operands of different degrees or forms");
      require(an == n || perm.empty(), ErrorCode::invalid_argument,
              "a fused permutation of a compact polynomial");
      shift.push_back(static_cast<std::uint32_t>(__builtin_ctz(n / an)));
      if (an == 1 && !a[j]->on_device()) {
        check_words(*a[j]);
        va.emplace_back();
      } else {
        va.emplace_back(std::in_place, *a[j], s());
      }
      vb.emplace_back(*b[j], s());
    }
    Target dout(out, s());
    const PermutationView dperm(*this, perm);
    // The constant pairs' columns in each limb's row of constants.
    std::uint8_t slot[ckks_kernels::kMaxPairs] = {};
    u32 constants = 0;
    for (std::size_t j = 0; j < a.size(); ++j) {
      if (!va[j]) slot[j] = static_cast<std::uint8_t>(constants++);
    }
    const u32 per =
        std::min(per_launch_, constants == 0 ? ckks_kernels::kMaxLimbs
                                             : ckks_kernels::kProductConstants / constants);
    in_launches(out.limbs(), per, [&](std::size_t first, u32 count) {
      ckks_kernels::InnerProductArgs args{};
      args.out = dout.get() + first * n;
      args.perm = dperm.get();
      args.reductions = reductions_.data();
      args.n = n;
      args.pairs = static_cast<u32>(a.size());
      args.constants = constants;
      std::copy(shift.begin(), shift.end(), args.shift);
      for (std::size_t j = 0; j < a.size(); ++j) {
        args.a[j] = va[j] ? va[j]->get() : nullptr;
        args.b[j] = vb[j].get();
        args.slot[j] = slot[j];
      }
      require(count * constants <= ckks_kernels::kProductConstants, ErrorCode::internal,
              "inner product: more constants than a launch holds");
      for (u32 k = 0; k < count; ++k) {
        const ModulusIndex mod = out.moduli[first + k];
        args.modulus[k] = static_cast<std::uint8_t>(mod);
        for (std::size_t j = 0; j < a.size(); ++j) {
          const std::size_t at = a[j]->position(mod);
          if (va[j]) {
            args.a_pos[k][j] = static_cast<std::uint8_t>(at);
          } else {
            args.constant[k * constants + slot[j]] = a[j]->data[at];
          }
          args.b_pos[k][j] = static_cast<std::uint8_t>(b[j]->position(mod));
        }
      }
      Device::inner_product(ckks_kernels::grid_for(n, count), args, s());
    });
    out.ntt = a[0]->ntt;
    dout.finish();
  }

  void uniform(const core::AesCtr& prf, std::uint64_t stream_base,
               std::span<const ModulusIndex> moduli, RnsPoly& out) const override {
    const typename Device::Range range("ckks uniform");
    reshape(out, moduli, true);
    ckks_kernels::AesTables tables{};
    std::copy(core::aes_sbox().begin(), core::aes_sbox().end(), tables.sbox);
    std::copy(prf.round_keys().begin(), prf.round_keys().end(), tables.round_keys);
    Target dout(out, s());
    in_launches(out.limbs(), per_launch_, [&](std::size_t first, u32 count) {
      ckks_kernels::UniformArgs args{};
      args.out = dout.get() + first * out.n;
      args.n = out.n;
      for (u32 k = 0; k < count; ++k) {
        const ModulusIndex mod = out.moduli[first + k];
        args.q[k] = context().prime(mod);
        args.stream[k] = stream_base | mod;
      }
      const Grid grid{(out.n + ckks_kernels::kUniformChunk - 1) / ckks_kernels::kUniformChunk,
                      count};
      Device::uniform(grid, tables, args, s());
    });
    dout.finish();
  }

  void permute(const RnsPoly& a, std::span<const std::uint32_t> perm, RnsPoly& out) const override {
    const typename Device::Range range("ckks permute");
    require(&a != &out, ErrorCode::invalid_argument, "permute: output aliases input");
    require(a.ntt && perm.size() == out.n && a.n == out.n, ErrorCode::size_mismatch,
            "permute takes NTT-form limbs and a permutation of N slots");
    const View da(a, s());
    Target dout(out, s());
    const PermutationView dperm(*this, perm);
    in_launches(out.limbs(), per_launch_, [&](std::size_t first, u32 count) {
      ckks_kernels::PermuteArgs args{};
      args.a = da.get();
      args.out = dout.get() + first * out.n;
      args.perm = dperm.get();
      args.n = out.n;
      for (u32 k = 0; k < count; ++k) {
        const ModulusIndex mod = out.moduli[first + k];
        args.map[k] = limb_map(mod, a.position(mod) * a.n, 0, 0);
      }
      Device::permute(ckks_kernels::grid_for(out.n, count), args, s());
    });
    dout.finish();
  }

  // The residues made on the device from the N signed words (one upload of N words, where the
  // default stages every limb), then the NTT.
  void expand_coefficients(const Coefficients& c, std::span<const ModulusIndex> moduli,
                           RnsPoly& out) const override {
    const typename Device::Range range("ckks expand_coefficients");
    const std::uint32_t n = context().degree();
    require(c.size() == n, ErrorCode::size_mismatch, "lazy coefficients of another degree");
    reshape(out, moduli, false);
    // Two's complement words: int64_t and uint64_t may alias.
    const Buffer<u64> dc(std::span<const u64>(reinterpret_cast<const u64*>(c.data()), n), s());
    Target dout(out, s());
    in_launches(out.limbs(), per_launch_, [&](std::size_t first, u32 count) {
      ckks_kernels::SignedResiduesArgs args{};
      args.c = dc.data();
      args.out = dout.get() + first * n;
      args.n = n;
      for (u32 k = 0; k < count; ++k) {
        args.map[k] = limb_map(out.moduli[first + k], 0, 0, 0);
        args.map[k].c = core::shoup_quotient<u64>(1, args.map[k].q);  // floor(2^64 / q)
      }
      Device::signed_residues(ckks_kernels::grid_for(n, count), args, s());
    });
    dout.finish();
    transform(out, 0, out.limbs(), false);
  }

  void convert(const ckks::BaseConverter& converter, const RnsPoly& in, RnsPoly& out,
               ckks::Conversion variant) const override {
    const typename Device::Range range("ckks convert");
    require(!in.ntt && !out.ntt && in.n == out.n, ErrorCode::size_mismatch,
            "base conversion takes and writes coefficients");
    const std::uint32_t n = in.n;
    const auto from = converter.from();
    const auto to = converter.to();
    const auto k = static_cast<std::uint32_t>(from.size());
    require(k >= 1 && k <= ckks_kernels::kMaxSources, ErrorCode::invalid_argument,
            "the CUDA base conversion takes 1 .. 64 source primes");
    const auto& tables = converter.tables();
    const View din(in, s());
    Target dout(out, s());  // other limbs kept
    Buffer<u64> dy(std::size_t{k} * n, s());
    in_launches(k, per_launch_, [&](std::size_t first, u32 count) {
      ckks_kernels::ConvertPrepareArgs args{};
      args.in = din.get();
      args.y = dy.data() + first * n;
      args.n = n;
      for (u32 i = 0; i < count; ++i) {
        LimbMap& m = args.from[i];
        m = limb_map(from[first + i], in.position(from[first + i]) * n, 0, 0);
        m.c = tables.qhat_inv[first + i].value;
        m.c_quotient = tables.qhat_inv[first + i].quotient;
      }
      Device::convert_prepare(ckks_kernels::grid_for(n, count), args, s());
    });
    const bool exact = variant == ckks::Conversion::exact;
    const u32 per =
        std::min({per_launch_, ckks_kernels::kMaxTargets, ckks_kernels::kConvertConstants / k});
    in_launches(to.size(), per, [&](std::size_t first, u32 count) {
      ckks_kernels::ConvertArgs args{};
      args.y = dy.data();
      args.out = dout.get();
      args.n = n;
      args.k = k;
      args.exact = exact;
      if (exact) std::copy(tables.inv_q.begin(), tables.inv_q.end(), args.inv_q);
      for (u32 j = 0; j < count; ++j) {
        LimbMap& m = args.to[j];
        m = limb_map(to[first + j], out.position(to[first + j]) * n, 0, 0);
        m.c = tables.q_mod[first + j].value;
        m.c_quotient = tables.q_mod[first + j].quotient;
        for (u32 i = 0; i < k; ++i)
          args.constants[j * k + i] = tables.qhat_mod[(first + j) * k + i].value;
      }
      Device::convert(ckks_kernels::grid_for(n, count), args, s());
    });
    dout.finish();
  }

 private:
  // An input's words on the device: its own when resident, else a staged copy of its host words.
  class View {
   public:
    View(const RnsPoly& p, Stream stream) {
      check_words(p);
      if (p.on_device()) {
        ptr_ = p.device.data();
      } else {
        staged_ = Buffer<u64>(std::span<const u64>(p.data), stream);
        ptr_ = staged_.data();
      }
    }
    const u64* get() const { return ptr_; }
    bool staged() const { return staged_.size() > 0; }
    void download(std::span<u64> host) const { staged_.download(host); }

   private:
    Buffer<u64> staged_;
    const u64* ptr_ = nullptr;
  };

  // An output's words on the device: its own when resident, else a staged copy of its host
  // words (uploaded, so that limbs the operation does not write are kept), downloaded by
  // finish().
  class Target {
   public:
    Target(RnsPoly& p, Stream stream) : view_(p, stream), poly_(&p), stream_(stream) {}
    // Writable: the view is of the caller's own (non-const) output.
    u64* get() const { return const_cast<u64*>(view_.get()); }
    void finish() {
      if (view_.staged()) {
        view_.download(poly_->data);
        Device::synchronize(stream_);
      }
    }

   private:
    View view_;
    RnsPoly* poly_;
    Stream stream_;
  };

  // A slot permutation on the device (null for an empty one): RnsOps::permutation's are
  // uploaded on first use and kept as long as these ops (a rotation's N entries cross once, not
  // per use); any other is staged for the call.
  class PermutationView {
   public:
    PermutationView(const DeviceRnsOps& ops, std::span<const std::uint32_t> perm) {
      if (perm.empty()) return;
      if (const auto galois = ops.permutation_element(perm)) {
        const std::lock_guard lock(ops.device_permutations_mutex_);
        Buffer<std::uint32_t>& kept = ops.device_permutations_[*galois];
        if (kept.size() == 0) kept = Buffer<std::uint32_t>(perm, ops.s());
        ptr_ = kept.data();
      } else {
        staged_ = Buffer<std::uint32_t>(perm, ops.s());
        ptr_ = staged_.data();
      }
    }
    const std::uint32_t* get() const { return ptr_; }

   private:
    Buffer<std::uint32_t> staged_;
    const std::uint32_t* ptr_ = nullptr;
  };

  static void check_words(const RnsPoly& p) {
    const std::size_t words = p.on_device() ? p.device.size() : p.data.size();
    require(words == p.limbs() * std::size_t{p.n}, ErrorCode::size_mismatch,
            "RNS polynomial's words do not match its limbs");
  }

  Stream s() const { return memory_->stream(); }

  LimbMap limb_map(ModulusIndex mod, std::size_t a, std::size_t b, u64 c) const {
    const u64 q = context().prime(mod);
    return {q, core::make_wide_reducer(q), a, b, c, c == 0 ? 0 : core::shoup_quotient(c, q)};
  }

  void elementwise(const RnsPoly& a, const RnsPoly& b, RnsPoly& out, Op op,
                   std::span<const u64> scalars) const {
    const typename Device::Range range("ckks elementwise");
    require(a.n == out.n && b.n == out.n && a.ntt == b.ntt, ErrorCode::size_mismatch,
            "RNS operands of different degrees or forms");
    const View da(a, s()), db(b, s());
    Target dout(out, s());
    in_launches(out.limbs(), per_launch_, [&](std::size_t first, u32 count) {
      ckks_kernels::ElementwiseArgs args{};
      args.a = da.get();
      args.b = db.get();
      args.out = dout.get() + first * out.n;
      args.n = out.n;
      args.op = op;
      for (u32 k = 0; k < count; ++k) {
        const ModulusIndex mod = out.moduli[first + k];
        args.map[k] = limb_map(mod, a.position(mod) * a.n, b.position(mod) * b.n,
                               scalars.empty() ? 0 : scalars[mod]);
      }
      Device::elementwise(ckks_kernels::grid_for(out.n, count), args, s());
    });
    if (op != Op::sub_scale && op != Op::scale) out.ntt = a.ntt;
    dout.finish();
  }

  // f(first, count) for the launches that cover `limbs` limbs, at most `per` each.
  template <class F>
  static void in_launches(std::size_t limbs, u32 per, F f) {
    for (std::size_t first = 0; first < limbs; first += per)
      f(first, static_cast<u32>(std::min<std::size_t>(per, limbs - first)));
  }

  void transform(RnsPoly& p, std::size_t first, std::size_t last, bool inverse) const {
    const typename Device::Range range(inverse ? "ckks ntt inverse" : "ckks ntt forward");
    last = std::min(last, p.limbs());
    require(p.ntt == inverse, ErrorCode::invalid_argument,
            inverse ? "inverse NTT of a polynomial in coefficient form"
                    : "forward NTT of a polynomial already in NTT form");
    if (first >= last) return;
    const std::uint32_t n = p.n;
    Target target(p, s());
    const auto split = negacyclic::split(static_cast<std::uint32_t>(__builtin_ctz(n)));
    in_launches(last - first, per_launch_, [&](std::size_t begin, u32 count) {
      ckks_kernels::NttArgs args{};
      args.data = target.get() + (first + begin) * n;
      args.split = split;
      args.tables = inverse ? inverse_.data() : forward_.data();
      args.quotients = inverse ? inverse_q_.data() : forward_q_.data();
      args.moduli = moduli_.data();
      args.n_inv = n_inv_.data();
      args.n_inv_quotient = n_inv_quotient_.data();
      for (u32 k = 0; k < count; ++k)
        args.modulus_index[k] = p.moduli[first + begin + k];
      const Grid grid{split.tiles, count};
      const auto pass = [&](ckks_kernels::NttPass which) {
        args.pass = which;
        Device::ntt(grid, args, s());
      };
      if (!inverse) {
        pass(ckks_kernels::NttPass::forward_columns);
        if (split.has_chunk_pass()) pass(ckks_kernels::NttPass::forward_chunks);
      } else {
        if (split.has_chunk_pass()) pass(ckks_kernels::NttPass::inverse_chunks);
        pass(ckks_kernels::NttPass::inverse_columns);
      }
    });
    target.finish();
    if (first == 0 && last == p.limbs()) p.ntt = !inverse;
  }

  // Checked before the stream is made, so that no device reads as such, not as a failed call.
  static bool require_device() {
    Device::require_device();
    return true;
  }

  bool device_;
  u32 per_launch_;
  std::shared_ptr<typename Device::Memory> memory_;        // shared with the resident polynomials
  Buffer<u64> forward_, forward_q_, inverse_, inverse_q_;  // [modulus][N]
  Buffer<u64> moduli_, n_inv_, n_inv_quotient_;            // [modulus]
  Buffer<ckks_kernels::ModulusReduction> reductions_;      // [modulus]
  mutable std::mutex device_permutations_mutex_;
  mutable std::map<std::uint64_t, Buffer<std::uint32_t>> device_permutations_;  // by element
};

}  // namespace safhire::cuda
