#include "safhire/hybrid/messages.hpp"

#include <algorithm>
#include <iterator>
#include <string>

#include "safhire/core/serialize.hpp"
#include "safhire/rlwe/serialize.hpp"

namespace safhire::hybrid {

namespace {

constexpr std::uint8_t kMagic[4] = {'S', 'F', 'H', 'P'};
constexpr std::uint32_t kMaxRounds = 4096, kMaxKeys = 4096, kMaxText = 4096;
constexpr std::size_t kMaxValues = std::size_t{1} << 24;
// Magic, u16 version, u8 type, u8 reserved, u64 session.
constexpr std::uint64_t kHeaderBytes = 4 + 2 + 1 + 1 + 8;

void write_header(core::ByteWriter& w, MessageType type, std::uint64_t session) {
  w.bytes(kMagic);
  w.u16(kProtocolVersion);
  w.u8(static_cast<std::uint8_t>(type));
  w.u8(0);
  w.u64(session);
}

// Reads the header and checks the type; returns the session.
std::uint64_t read_header(core::ByteReader& r, MessageType expected) {
  std::uint8_t magic[4];
  r.bytes(magic);
  if (!std::equal(std::begin(magic), std::end(magic), std::begin(kMagic)))
    r.fail("not a Safhire protocol message (bad magic)");
  const std::uint16_t version = r.u16();
  if (version != kProtocolVersion)
    r.fail("protocol version " + std::to_string(version) + ", this build speaks " +
           std::to_string(kProtocolVersion));
  const std::uint8_t type = r.u8();
  if (type != static_cast<std::uint8_t>(expected))
    r.fail("message type " + std::to_string(type) + ", expected " +
           std::to_string(static_cast<int>(expected)));
  r.u8();
  return r.u64();
}

void write_blob(core::ByteWriter& w, const Bytes& blob) {
  w.u32(static_cast<std::uint32_t>(blob.size()));
  w.bytes(blob);
}

Bytes read_blob(core::ByteReader& r) {
  const std::uint32_t n = r.u32();
  if (n > r.remaining()) r.fail("truncated object of " + std::to_string(n) + " bytes");
  Bytes b(n);
  r.bytes(b);
  return b;
}

std::string read_text(core::ByteReader& r) {
  const std::uint32_t n = r.u32();
  if (n > kMaxText || n > r.remaining()) r.fail("bad text length " + std::to_string(n));
  Bytes b(n);
  r.bytes(b);
  return std::string(b.begin(), b.end());
}

void write_text(core::ByteWriter& w, const std::string& s) {
  w.u32(static_cast<std::uint32_t>(s.size()));
  w.bytes(std::span<const std::uint8_t>(reinterpret_cast<const std::uint8_t*>(s.data()), s.size()));
}

std::uint32_t bounded(core::ByteReader& r, std::uint64_t lo, std::uint64_t hi, const char* what) {
  const std::uint64_t v = r.u32();
  if (v < lo || v > hi) r.fail(std::string(what) + " = " + std::to_string(v) + " out of range");
  return static_cast<std::uint32_t>(v);
}

}  // namespace

// ---- Messages ---------------------------------------------------------------------------------

Bytes encode_hello(const Hello& hello, const rlwe::ParameterSet& params) {
  core::ByteWriter w;
  write_header(w, MessageType::hello, 0);
  w.u16(hello.params_id);
  w.u8(static_cast<std::uint8_t>(hello.options.gamma));
  w.u8(hello.options.mode == rlwe::TreeMode::fast ? 0 : 1);
  w.u8(hello.options.shuffle ? 1 : 0);
  w.u32(static_cast<std::uint32_t>(hello.keys.size()));
  for (const rlwe::KeySwitchKey& k : hello.keys)
    write_blob(w, rlwe::serialize(params, k));
  return w.take();
}

Hello decode_hello(std::span<const std::uint8_t> bytes, rlwe::SecurityPolicy policy) {
  core::ByteReader r(bytes, "hello");
  read_header(r, MessageType::hello);
  Hello h;
  h.params_id = r.u16();
  const rlwe::ParameterSet& params = rlwe::parameter_set(h.params_id, policy);
  h.options.gamma = r.u8();
  const std::uint8_t mode = r.u8(), shuffle = r.u8();
  if (h.options.gamma >= params.ring.a()) r.fail("gamma must be below a");
  if (mode > 1 || shuffle > 1) r.fail("bad mode or shuffle flag");
  h.options.mode = mode == 0 ? rlwe::TreeMode::fast : rlwe::TreeMode::paper;
  h.options.shuffle = shuffle == 1;
  const std::uint32_t count = bounded(r, 1, kMaxKeys, "key count");
  for (std::uint32_t i = 0; i < count; ++i)
    h.keys.push_back(rlwe::parse_key_switch_key(read_blob(r), params));
  r.expect_end();
  return h;
}

Bytes encode_welcome(const Welcome& welcome) {
  core::ByteWriter w;
  write_header(w, MessageType::welcome, welcome.session);
  write_text(w, welcome.model_name);
  const ModelInfo& m = welcome.model;
  w.u64(static_cast<std::uint64_t>(m.activation_max));
  w.u64(static_cast<std::uint64_t>(m.input_max));
  w.u64(m.input_size);
  w.u32(static_cast<std::uint32_t>(m.outputs.size()));
  for (std::size_t r = 0; r < m.outputs.size(); ++r) {
    w.u64(m.outputs[r]);
    w.u32(m.round_bits[r]);
    w.u32(m.encoding_bits[r]);
    w.u8(static_cast<std::uint8_t>(m.upload_bits.at(r)));
    w.u8(m.derived_powers.at(r));
    w.u8(m.requant[r] ? 1 : 0);
    w.u32(m.requant[r] ? m.requant[r]->mult : 0);
    w.u32(m.requant[r] ? m.requant[r]->shift : 0);
  }
  return w.take();
}

Welcome decode_welcome(std::span<const std::uint8_t> bytes) {
  core::ByteReader r(bytes, "welcome");
  Welcome out;
  out.session = read_header(r, MessageType::welcome);
  out.model_name = read_text(r);
  ModelInfo& m = out.model;
  m.activation_max = static_cast<std::int64_t>(r.u64());
  m.input_max = static_cast<std::int64_t>(r.u64());
  m.input_size = r.u64();
  if (m.activation_max < 1 || m.activation_max > (std::int64_t{1} << 31) || m.input_max < 1 ||
      m.input_max > 0xffff || m.input_size == 0 || m.input_size > kMaxValues)
    r.fail("bad model description");
  const std::uint32_t rounds = bounded(r, 1, kMaxRounds, "round count");
  for (std::uint32_t i = 0; i < rounds; ++i) {
    const std::uint64_t outputs = r.u64();
    if (outputs == 0 || outputs > kMaxValues) r.fail("bad output count");
    m.outputs.push_back(outputs);
    m.round_bits.push_back(bounded(r, 2, 32, "round bits"));
    m.encoding_bits.push_back(bounded(r, 2, 32, "encoding bits"));
    const std::uint8_t kept = r.u8();
    if (kept <= m.encoding_bits.back() || kept > 64) r.fail("bad upload precision");
    m.upload_bits.push_back(kept);
    const std::uint8_t derived = r.u8();
    if (derived > 1) r.fail("bad upload form");
    m.derived_powers.push_back(derived);
    const std::uint8_t has = r.u8();
    const std::uint32_t mult = r.u32(), shift = r.u32();
    if (has > 1 || (has == 1) != (i + 1 < rounds) || (has && (shift < 1 || shift > 32)))
      r.fail("bad requantization of round " + std::to_string(i));
    m.requant.push_back(has ? std::optional<Requant>(Requant{mult, shift}) : std::nullopt);
  }
  r.expect_end();
  return out;
}

namespace {

// Uploads and downloads share a layout: u32 round, u32 values, u32 count, count objects.
template <class Item>
Bytes encode_round(MessageType type, std::uint64_t session, std::uint32_t round,
                   std::uint32_t values, const std::vector<Item>& items,
                   const rlwe::ParameterSet& params) {
  core::ByteWriter w;
  write_header(w, type, session);
  w.u32(round);
  w.u32(values);
  w.u32(static_cast<std::uint32_t>(items.size()));
  for (const Item& item : items)
    write_blob(w, rlwe::serialize(params, item));
  return w.take();
}

// `min_bytes`: the least an object can take, so that the count is checked against the bytes
// present before anything is reserved.
template <class Message, class Parse>
Message decode_round(std::span<const std::uint8_t> bytes, MessageType type, const char* what,
                     std::size_t min_bytes, Parse parse) {
  core::ByteReader r(bytes, what);
  read_header(r, type);
  Message m;
  m.round = bounded(r, 0, kMaxRounds, "round");
  m.values = bounded(r, 1, kMaxValues, "value count");
  const std::uint32_t count = r.u32();
  if (count == 0 || count > r.remaining() / min_bytes)
    r.fail("bad ciphertext count " + std::to_string(count));
  for (std::uint32_t i = 0; i < count; ++i)
    parse(m, read_blob(r));
  r.expect_end();
  return m;
}

}  // namespace

std::uint64_t round_message_bytes(std::uint64_t count, std::uint64_t object_bytes) {
  // The header, u32 round, values and count; each object a u32 length and its encoding.
  return kHeaderBytes + 12 + count * (4 + object_bytes);
}

Bytes encode_upload(std::uint64_t session, const Upload& up, const rlwe::ParameterSet& params) {
  return encode_round(MessageType::upload, session, up.round, up.values, up.ciphertexts, params);
}

Upload decode_upload(std::span<const std::uint8_t> bytes, const rlwe::ParameterSet& params) {
  // A seeded ciphertext holds at least its seed and one bit per value.
  const std::size_t min_bytes = 32 + (std::size_t{params.ring.N()} + 7) / 8;
  return decode_round<Upload>(
      bytes, MessageType::upload, "upload", min_bytes, [&](Upload& up, const Bytes& blob) {
        up.ciphertexts.push_back(rlwe::parse_seeded_ciphertext(blob, params));
      });
}

Bytes encode_download(std::uint64_t session, const Download& d, const rlwe::ParameterSet& params) {
  return encode_round(MessageType::download, session, d.round, d.values, d.packed, params);
}

Download decode_download(std::span<const std::uint8_t> bytes, const rlwe::ParameterSet& params) {
  // A switched ciphertext holds at least one bit per value of a and of b.
  const std::size_t min_bytes = 2 * ((std::size_t{params.ring.N()} + 7) / 8);
  return decode_round<Download>(bytes, MessageType::download, "download", min_bytes,
                                [&](Download& d, const Bytes& blob) {
                                  d.packed.push_back(rlwe::parse_switched_ciphertext(blob, params));
                                });
}

Bytes encode_error(const ErrorMessage& e) {
  core::ByteWriter w;
  write_header(w, MessageType::error, 0);
  w.u8(static_cast<std::uint8_t>(e.code));
  write_text(w, e.message.substr(0, kMaxText));
  return w.take();
}

ErrorMessage decode_error(std::span<const std::uint8_t> bytes) {
  core::ByteReader r(bytes, "error message");
  read_header(r, MessageType::error);
  ErrorMessage e;
  const std::uint8_t code = r.u8();
  if (code > static_cast<std::uint8_t>(ErrorCode::resource_exhausted)) r.fail("unknown error code");
  e.code = static_cast<ErrorCode>(code);
  e.message = read_text(r);
  r.expect_end();
  return e;
}

MessageType message_type(std::span<const std::uint8_t> bytes) {
  core::ByteReader r(bytes, "message");
  std::uint8_t magic[4];
  r.bytes(magic);
  if (!std::equal(std::begin(magic), std::end(magic), std::begin(kMagic)))
    r.fail("not a Safhire protocol message (bad magic)");
  if (r.u16() != kProtocolVersion) r.fail("unsupported protocol version");
  const std::uint8_t type = r.u8();
  if (type < 1 || type > 5) r.fail("unknown message type " + std::to_string(type));
  return static_cast<MessageType>(type);
}

std::uint64_t message_session(std::span<const std::uint8_t> bytes) {
  // The whole header: a message of 7 or fewer bytes has a type but no session (read past the
  // end before the fuzz target found it).
  const MessageType type = message_type(bytes);
  core::ByteReader r(bytes, "message");
  return read_header(r, type);
}

void throw_if_error(std::span<const std::uint8_t> bytes) {
  if (message_type(bytes) != MessageType::error) return;
  const ErrorMessage e = decode_error(bytes);
  throw Error(e.code, "server: " + e.message);
}

}  // namespace safhire::hybrid
