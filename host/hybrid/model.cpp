#include "safhire/hybrid/model.hpp"

#include <algorithm>
#include <fstream>
#include <iterator>
#include <string>

#include "safhire/core/error.hpp"
#include "safhire/core/parallel.hpp"
#include "safhire/core/serialize.hpp"

namespace safhire::hybrid {

namespace {

constexpr std::uint16_t kVersion = 1;
constexpr std::uint32_t kMaxName = 256, kMaxDim = 4096, kMaxRounds = 4096, kMaxTerms = 16;
constexpr std::uint32_t kMaxKernel = 64;
constexpr std::size_t kMaxTensor = std::size_t{1} << 24;

std::string where(std::size_t r, std::size_t t) {
  return "round " + std::to_string(r) + ", term " + std::to_string(t);
}

void check(bool ok, const std::string& why) {
  require(ok, ErrorCode::malformed_input, "model: " + why);
}

std::uint32_t bounded(core::ByteReader& in, std::uint32_t lo, std::uint32_t hi, const char* what) {
  const std::uint32_t v = in.u32();
  check(v >= lo && v <= hi, std::string(what) + " = " + std::to_string(v) + " outside [" +
                                std::to_string(lo) + ", " + std::to_string(hi) + "]");
  return v;
}

// Convolution output extent, or 0 when the kernel does not fit.
std::uint32_t conv_extent(std::uint32_t in, const Term& t) {
  const std::uint32_t padded = in + 2 * t.pad;
  return padded < t.kernel ? 0 : (padded - t.kernel) / t.stride + 1;
}

}  // namespace

Model Model::parse(std::span<const std::uint8_t> bytes) {
  core::ByteReader in(bytes, "model");
  std::uint8_t magic[4];
  in.bytes(magic);
  check(std::equal(magic, magic + 4, "SFHM"), "bad magic (not a Safhire model file)");
  const std::uint16_t version = in.u16();
  check(version == kVersion, "version " + std::to_string(version) + " (this build reads " +
                                 std::to_string(kVersion) + ")");
  in.u16();
  Model m;
  const std::uint32_t name_len = bounded(in, 0, kMaxName, "name length");
  check(name_len <= in.remaining(), "truncated name");
  std::vector<std::uint8_t> name(name_len);
  in.bytes(name);
  m.name_.assign(name.begin(), name.end());
  m.bits_ = in.u8();
  m.act_bits_ = in.u8();
  m.input_bits_ = in.u8();
  in.u8();
  check(m.bits_ >= 2 && m.bits_ <= 32, "accumulator bits " + std::to_string(m.bits_));
  check(m.act_bits_ >= 1 && m.act_bits_ < m.bits_,
        "activation bits " + std::to_string(m.act_bits_) + " with b = " + std::to_string(m.bits_));
  check(m.input_bits_ >= 1 && m.input_bits_ <= 16, "input bits " + std::to_string(m.input_bits_));
  Shape input;
  input.c = bounded(in, 1, kMaxDim, "input channels");
  input.h = bounded(in, 1, kMaxDim, "input height");
  input.w = bounded(in, 1, kMaxDim, "input width");
  check(input.size() <= kMaxTensor, "input too large");
  m.activations_.push_back(input);
  const std::uint32_t rounds = bounded(in, 1, kMaxRounds, "round count");
  for (std::uint32_t r = 0; r < rounds; ++r) {
    Round round;
    round.output.c = bounded(in, 1, kMaxDim, "output channels");
    round.bits = bounded(in, 2, 32, "round accumulator bits");
    const std::uint32_t terms = bounded(in, 1, kMaxTerms, "term count");
    for (std::uint32_t ti = 0; ti < terms; ++ti) {
      Term t;
      t.source = bounded(in, 0, r, "source");  // activations 0..r exist before round r
      t.pool = bounded(in, 0, kMaxKernel, "pool");
      const std::uint32_t in_c = bounded(in, 1, kMaxDim, "input channels");
      t.kernel = bounded(in, 1, kMaxKernel, "kernel");
      t.stride = bounded(in, 1, kMaxKernel, "stride");
      t.pad = bounded(in, 0, t.kernel - 1, "padding");
      const Shape& src = m.activations_[t.source];
      check(in_c == src.c, where(r, ti) + ": " + std::to_string(in_c) +
                               " input channels, its source has " + std::to_string(src.c));
      t.input = src;
      if (t.pool != 0) {
        check(src.h % t.pool == 0 && src.w % t.pool == 0,
              where(r, ti) + ": pool " + std::to_string(t.pool) + " does not divide the source");
        t.input.h /= t.pool;
        t.input.w /= t.pool;
      }
      const std::uint32_t oh = conv_extent(t.input.h, t), ow = conv_extent(t.input.w, t);
      check(oh > 0 && ow > 0, where(r, ti) + ": the kernel does not fit its input");
      if (ti == 0) {
        round.output.h = oh;
        round.output.w = ow;
        check(round.output.size() <= kMaxTensor,
              "round " + std::to_string(r) + ": output too large");
      } else {
        check(oh == round.output.h && ow == round.output.w,
              where(r, ti) + ": output extent differs from the round's first term");
      }
      const std::size_t count = std::size_t{round.output.c} * in_c * t.kernel * t.kernel;
      check(count <= in.remaining() / 2, where(r, ti) + ": truncated weights");
      t.weights.resize(count);
      for (auto& w : t.weights)
        w = static_cast<std::int16_t>(in.u16());
      round.terms.push_back(std::move(t));
    }
    check(round.output.c <= in.remaining() / 4, "round " + std::to_string(r) + ": truncated bias");
    round.bias.resize(round.output.c);
    for (auto& b : round.bias)
      b = static_cast<std::int32_t>(in.u32());
    const std::uint8_t has_requant = in.u8();
    const std::uint32_t mult = in.u32();
    const std::uint8_t shift = in.u8();
    check(has_requant <= 1, "requantization flag " + std::to_string(has_requant));
    check((has_requant == 1) == (r + 1 < rounds),
          "round " + std::to_string(r) +
              (has_requant ? ": the last round must not requantize" : ": missing requantization"));
    if (has_requant) {
      check(shift >= 1 && shift <= 32, "requantization shift " + std::to_string(shift));
      round.requant = Requant{mult, shift};
    }
    m.activations_.push_back(round.output);
    m.rounds_.push_back(std::move(round));
  }
  in.expect_end();
  m.validate();
  return m;
}

void Model::validate() {
  // Every partial sum of a round's accumulator (the bias or not, plus any subset of its
  // products) lies in [min(bias, 0) + neg, max(bias, 0) + pos], where pos and neg sum the
  // positive and the negative weights times max_input = (2^a - 1) pool^2 (2^a_in - 1 for the
  // image): the inputs are unsigned. That interval must fit the signed window of Z_(2^b_r).
  last_use_.assign(activations_.size(), 0);
  encoding_bits_.assign(activations_.size(), 0);
  for (std::size_t r = 0; r < rounds_.size(); ++r) {
    const Round& round = rounds_[r];
    const std::int64_t hi_limit = (std::int64_t{1} << (round.bits - 1)) - 1;
    const std::int64_t lo_limit = -(std::int64_t{1} << (round.bits - 1));
    for (const Term& t : round.terms) {
      std::uint32_t& enc = encoding_bits_[t.source];
      check(enc == 0 || enc == round.bits, "activation " + std::to_string(t.source) +
                                               " is read at " + std::to_string(enc) + " and at " +
                                               std::to_string(round.bits) + " bits");
      enc = round.bits;
    }
    for (std::uint32_t o = 0; o < round.output.c; ++o) {
      std::int64_t hi = std::max<std::int64_t>(round.bias[o], 0);
      std::int64_t lo = std::min<std::int64_t>(round.bias[o], 0);
      for (const Term& t : round.terms) {
        const std::int64_t max_input = (t.source == 0 ? input_max() : activation_max()) *
                                       (t.pool == 0 ? 1 : std::int64_t{t.pool} * t.pool);
        std::int64_t pos = 0;
        std::int64_t neg = 0;
        for (std::uint32_t i = 0; i < t.input.c; ++i)
          for (std::uint32_t ky = 0; ky < t.kernel; ++ky)
            for (std::uint32_t kx = 0; kx < t.kernel; ++kx) {
              const std::int64_t w = t.weight(o, i, ky, kx);
              (w > 0 ? pos : neg) += w;
            }
        hi += pos * max_input;
        lo += neg * max_input;
      }
      check(lo >= lo_limit && hi <= hi_limit,
            "round " + std::to_string(r) + ", channel " + std::to_string(o) +
                ": accumulator bound [" + std::to_string(lo) + ", " + std::to_string(hi) +
                "] exceeds [-2^" + std::to_string(round.bits - 1) + ", 2^" +
                std::to_string(round.bits - 1) + " - 1]");
    }
    for (const Term& t : round.terms)
      last_use_[t.source] = static_cast<std::uint32_t>(r);
  }
  // Hidden activations must fit their encoding: [0, 2^a - 1] as signed b_r-bit messages.
  for (std::size_t s = 0; s < activations_.size(); ++s) {
    const std::uint32_t bits = s == 0 ? input_bits_ : act_bits_;
    check(encoding_bits_[s] == 0 || bits < encoding_bits_[s],
          "activation " + std::to_string(s) + " has " + std::to_string(bits) +
              " bits, too many for " + std::to_string(encoding_bits_[s]) + "-bit messages");
  }
}

std::uint32_t Model::max_round_bits() const {
  std::uint32_t b = 0;
  for (const Round& r : rounds_)
    b = std::max(b, r.bits);
  return b;
}

Model Model::load(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  require(f.good(), ErrorCode::invalid_argument, "cannot open model file " + path);
  const std::vector<std::uint8_t> bytes((std::istreambuf_iterator<char>(f)),
                                        std::istreambuf_iterator<char>());
  return parse(bytes);
}

namespace {

// The file of docs/model-format.md, from a model's parts (the writer behind serialize and
// from_parts).
std::vector<std::uint8_t> write_model(const std::string& name, std::uint32_t bits,
                                      std::uint32_t act_bits, std::uint32_t input_bits,
                                      const Shape& input, const std::vector<Round>& rounds) {
  core::ByteWriter out;
  for (char c : std::string("SFHM"))
    out.u8(static_cast<std::uint8_t>(c));
  out.u16(kVersion);
  out.u16(0);
  out.u32(static_cast<std::uint32_t>(name.size()));
  for (char c : name)
    out.u8(static_cast<std::uint8_t>(c));
  out.u8(static_cast<std::uint8_t>(bits));
  out.u8(static_cast<std::uint8_t>(act_bits));
  out.u8(static_cast<std::uint8_t>(input_bits));
  out.u8(0);
  out.u32(input.c);
  out.u32(input.h);
  out.u32(input.w);
  out.u32(static_cast<std::uint32_t>(rounds.size()));
  for (const Round& round : rounds) {
    out.u32(round.output.c);
    out.u32(round.bits);
    out.u32(static_cast<std::uint32_t>(round.terms.size()));
    for (const Term& t : round.terms) {
      for (std::uint32_t v : {t.source, t.pool, t.input.c, t.kernel, t.stride, t.pad})
        out.u32(v);
      for (std::int16_t w : t.weights)
        out.u16(static_cast<std::uint16_t>(w));
    }
    for (std::int32_t b : round.bias)
      out.u32(static_cast<std::uint32_t>(b));
    out.u8(round.requant ? 1 : 0);
    out.u32(round.requant ? round.requant->mult : 0);
    out.u8(static_cast<std::uint8_t>(round.requant ? round.requant->shift : 0));
  }
  return out.take();
}

}  // namespace

std::vector<std::uint8_t> Model::serialize() const {
  return write_model(name_, bits_, act_bits_, input_bits_, activations_[0], rounds_);
}

Model Model::from_parts(const std::string& name, std::uint32_t bits, std::uint32_t act_bits,
                        std::uint32_t input_bits, const Shape& input,
                        const std::vector<Round>& rounds) {
  return parse(write_model(name, bits, act_bits, input_bits, input, rounds));
}

void require_input(const Model& model, std::span<const std::int64_t> input) {
  require(input.size() == model.activation(0).size(), ErrorCode::invalid_argument,
          "model input: " + std::to_string(model.activation(0).size()) + " values expected, got " +
              std::to_string(input.size()));
  for (std::int64_t v : input) {
    require(v >= 0 && v <= model.input_max(), ErrorCode::invalid_argument,
            "model input value " + std::to_string(v) + " outside [0, " +
                std::to_string(model.input_max()) + "]");
  }
}

std::int64_t requantize(std::int64_t acc, const Requant& rq, std::int64_t activation_max) {
  const std::int64_t relu = std::max<std::int64_t>(acc, 0);
  const std::int64_t q =
      (relu * std::int64_t{rq.mult} + (std::int64_t{1} << (rq.shift - 1))) >> rq.shift;
  return std::min(q, activation_max);
}

std::vector<std::int64_t> round_accumulators(const Model& model, std::size_t r,
                                             std::span<const std::vector<std::int64_t>> acts) {
  require(r < model.rounds().size() && acts.size() > r, ErrorCode::invalid_argument,
          "round_accumulators: round " + std::to_string(r) + " needs the activations 0.." +
              std::to_string(r));
  for (std::size_t s = 0; s <= r; ++s)
    require(acts[s].size() == model.activation(s).size(), ErrorCode::invalid_argument,
            "round_accumulators: activation " + std::to_string(s) + " of the wrong size");
  const Round& round = model.rounds()[r];
  const Shape& os = round.output;
  std::vector<std::int64_t> acc(os.size());
  for (std::uint32_t o = 0; o < os.c; ++o)
    for (std::uint32_t p = 0; p < os.h * os.w; ++p)
      acc[std::size_t{o} * os.h * os.w + p] = round.bias[o];
  for (const Term& t : round.terms) {
    // Sum-pool first, then the direct convolution.
    const Shape& src_shape = model.activation(t.source);
    std::vector<std::int64_t> src = acts[t.source];
    if (t.pool != 0) {
      std::vector<std::int64_t> pooled(t.input.size(), 0);
      for (std::uint32_t c = 0; c < src_shape.c; ++c)
        for (std::uint32_t y = 0; y < src_shape.h; ++y)
          for (std::uint32_t x = 0; x < src_shape.w; ++x)
            pooled[t.input.index(c, y / t.pool, x / t.pool)] += src[src_shape.index(c, y, x)];
      src = std::move(pooled);
    }
    for (std::uint32_t o = 0; o < os.c; ++o)
      for (std::uint32_t oy = 0; oy < os.h; ++oy)
        for (std::uint32_t ox = 0; ox < os.w; ++ox) {
          std::int64_t sum = 0;
          for (std::uint32_t i = 0; i < t.input.c; ++i)
            for (std::uint32_t ky = 0; ky < t.kernel; ++ky)
              for (std::uint32_t kx = 0; kx < t.kernel; ++kx) {
                const std::int64_t iy = std::int64_t{oy} * t.stride + ky - t.pad;
                const std::int64_t ix = std::int64_t{ox} * t.stride + kx - t.pad;
                if (iy < 0 || ix < 0 || iy >= t.input.h || ix >= t.input.w) continue;
                sum += t.weight(o, i, ky, kx) * src[t.input.index(i, static_cast<std::uint32_t>(iy),
                                                                  static_cast<std::uint32_t>(ix))];
              }
          acc[os.index(o, oy, ox)] += sum;
        }
  }
  return acc;
}

std::vector<std::int64_t> evaluate(const Model& model, std::span<const std::int64_t> input,
                                   std::vector<std::vector<std::int64_t>>* accumulators) {
  require_input(model, input);
  std::vector<std::vector<std::int64_t>> acts;
  acts.emplace_back(input.begin(), input.end());
  if (accumulators) accumulators->clear();
  for (std::size_t r = 0; r < model.rounds().size(); ++r) {
    const Round& round = model.rounds()[r];
    std::vector<std::int64_t> acc = round_accumulators(model, r, acts);
    if (accumulators) accumulators->push_back(acc);
    if (!round.requant) return acc;
    for (std::int64_t& v : acc)
      v = requantize(v, *round.requant, model.activation_max());
    acts.push_back(std::move(acc));
  }
  throw Error(ErrorCode::internal, "model without a last round");
}

std::size_t predicted_class(std::span<const std::int64_t> logits) {
  require(!logits.empty(), ErrorCode::invalid_argument, "predicted_class: no logits");
  return static_cast<std::size_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
}

std::size_t count_correct(const Model& model, const std::vector<std::vector<std::int64_t>>& images,
                          std::span<const std::int64_t> labels, unsigned threads) {
  require(images.size() == labels.size(), ErrorCode::invalid_argument,
          "count_correct: " + std::to_string(images.size()) + " images but " +
              std::to_string(labels.size()) + " labels");
  std::vector<unsigned char> right(images.size());
  core::parallel_for(images.size(), threads, [&](std::size_t i, unsigned) {
    const std::size_t c = predicted_class(evaluate(model, images[i]));
    right[i] = labels[i] >= 0 && c == static_cast<std::size_t>(labels[i]);
  });
  return static_cast<std::size_t>(std::count(right.begin(), right.end(), 1));
}

void taps(const Model& model, std::size_t r, std::size_t o, std::vector<Tap>& out) {
  out.clear();
  const Round& round = model.rounds().at(r);
  const Shape& os = round.output;
  const auto oc = static_cast<std::uint32_t>(o / (std::size_t{os.h} * os.w));
  const auto oy = static_cast<std::uint32_t>(o / os.w % os.h);
  const auto ox = static_cast<std::uint32_t>(o % os.w);
  for (const Term& t : round.terms) {
    const Shape& src = model.activation(t.source);
    const std::uint32_t p = t.pool == 0 ? 1 : t.pool;
    for (std::uint32_t i = 0; i < t.input.c; ++i)
      for (std::uint32_t ky = 0; ky < t.kernel; ++ky)
        for (std::uint32_t kx = 0; kx < t.kernel; ++kx) {
          const std::int32_t w = t.weight(oc, i, ky, kx);
          const std::int64_t iy = std::int64_t{oy} * t.stride + ky - t.pad;
          const std::int64_t ix = std::int64_t{ox} * t.stride + kx - t.pad;
          if (w == 0 || iy < 0 || ix < 0 || iy >= t.input.h || ix >= t.input.w) continue;
          for (std::uint32_t py = 0; py < p; ++py)
            for (std::uint32_t px = 0; px < p; ++px) {
              const auto y = static_cast<std::uint32_t>(iy) * p + py;
              const auto x = static_cast<std::uint32_t>(ix) * p + px;
              out.push_back(Tap{t.source, static_cast<std::uint32_t>(src.index(i, y, x)), w});
            }
        }
  }
}

}  // namespace safhire::hybrid
