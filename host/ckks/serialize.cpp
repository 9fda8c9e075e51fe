#include "safhire/ckks/serialize.hpp"

#include <bit>
#include <cmath>
#include <string>
#include <type_traits>

#include "safhire/core/error.hpp"
#include "safhire/core/serialize.hpp"

namespace safhire::ckks {

namespace {

using core::ByteReader;
using core::ByteWriter;

constexpr std::uint8_t kMagic[4] = {'S', 'H', 'C', 'K'};
// Version 2 added the form byte of switching keys (full, or seeded: a seed instead of the a_j);
// version 1 blobs (every key full) are still read.
constexpr std::uint16_t kVersion = 2, kOldestVersion = 1;

enum class Kind : std::uint8_t {
  ciphertext = 1,
  plaintext = 2,
  public_key = 3,
  secret_key = 4,
  switching_key = 5,
  galois_keys = 6,
  params = 7,
};

const char* name_of(Kind kind) {
  switch (kind) {
    case Kind::ciphertext:
      return "CKKS ciphertext";
    case Kind::plaintext:
      return "CKKS plaintext";
    case Kind::public_key:
      return "CKKS public key";
    case Kind::secret_key:
      return "CKKS secret key";
    case Kind::switching_key:
      return "CKKS switching key";
    case Kind::galois_keys:
      return "CKKS Galois keys";
    case Kind::params:
      return "CKKS parameter set";
  }
  return "CKKS object";
}

void header(ByteWriter& w, Kind kind, std::uint64_t print) {
  w.bytes(kMagic);
  w.u16(kVersion);
  w.u8(static_cast<std::uint8_t>(kind));
  w.u64(print);
}

std::uint16_t read_header(ByteReader& r, Kind kind, std::uint64_t print) {
  std::uint8_t magic[4];
  r.bytes(magic);
  if (!std::equal(std::begin(magic), std::end(magic), std::begin(kMagic))) {
    r.fail("not a Safhire CKKS object (bad magic)");
  }
  const std::uint16_t version = r.u16();
  if (version < kOldestVersion || version > kVersion) {
    r.fail("unsupported format version " + std::to_string(version));
  }
  const std::uint8_t got = r.u8();
  if (got != static_cast<std::uint8_t>(kind)) {
    r.fail("object kind " + std::to_string(got) + " where " + name_of(kind) + " was expected");
  }
  const std::uint64_t p = r.u64();
  require(p == print, ErrorCode::size_mismatch,
          std::string(name_of(kind)) + " was written under other CKKS parameters");
  return version;
}

std::uint32_t width_of(u64 q) {
  return static_cast<std::uint32_t>(std::bit_width(q));
}

void put_double(ByteWriter& w, double x) {
  w.u64(std::bit_cast<std::uint64_t>(x));
}
double get_double(ByteReader& r) {
  return std::bit_cast<double>(r.u64());
}

void put_poly(ByteWriter& w, const CkksContext& context, const RnsPoly& p) {
  w.u16(static_cast<std::uint16_t>(p.limbs()));
  w.u8(p.ntt ? 1 : 0);
  for (ModulusIndex m : p.moduli)
    w.u16(static_cast<std::uint16_t>(m));
  for (std::size_t k = 0; k < p.limbs(); ++k)
    w.packed_words(p.limb(k), width_of(context.prime(p.moduli[k])));
}

// A polynomial in NTT form whose moduli must be exactly expect_for(limbs), given its limb count.
template <class ExpectFor>
RnsPoly get_poly_as(ByteReader& r, const CkksContext& context, ExpectFor expect_for) {
  const std::uint16_t limbs = r.u16();
  const std::uint8_t ntt = r.u8();
  if (ntt != 1) r.fail("polynomial not in NTT form");
  const std::vector<ModulusIndex> expect = expect_for(limbs);
  if (limbs != expect.size()) {
    r.fail("polynomial has " + std::to_string(limbs) + " limbs, expected " +
           std::to_string(expect.size()));
  }
  std::vector<ModulusIndex> moduli(limbs);
  for (auto& m : moduli) {
    m = r.u16();
  }
  if (moduli != expect) r.fail("polynomial has unexpected moduli");
  // Bytes left must cover the residues before anything of that size is allocated.
  std::size_t need = 0;
  for (ModulusIndex m : moduli)
    need += (std::size_t{context.degree()} * width_of(context.prime(m)) + 7) / 8;
  if (r.remaining() < need) r.fail("truncated polynomial");
  RnsPoly p(context.degree(), moduli, true);
  for (std::size_t k = 0; k < p.limbs(); ++k) {
    const u64 q = context.prime(moduli[k]);
    r.packed_words(p.limb(k), width_of(q));
    for (u64 x : p.limb(k)) {
      if (x >= q) r.fail("residue not below its prime");
    }
  }
  return p;
}

// A polynomial whose moduli must be exactly `expect` and which must be in NTT form.
RnsPoly get_poly(ByteReader& r, const CkksContext& context,
                 const std::vector<ModulusIndex>& expect) {
  return get_poly_as(r, context, [&](std::uint16_t) { return expect; });
}

std::vector<ModulusIndex> all_moduli(const CkksContext& context) {
  return context.qp_moduli(context.max_level());
}

enum class KeyForm : std::uint8_t { full = 0, seeded = 1 };

// The form (version 2 on), the seed of a seeded key, the digit count, then per digit b_j and,
// for a full key, a_j.
void put_switching_key(ByteWriter& w, const CkksContext& context, const SwitchingKey& key) {
  w.u8(static_cast<std::uint8_t>(key.seeded() ? KeyForm::seeded : KeyForm::full));
  if (key.seeded()) w.bytes(*key.seed);
  w.u16(static_cast<std::uint16_t>(key.b.size()));
  for (std::size_t j = 0; j < key.b.size(); ++j) {
    put_poly(w, context, key.b[j]);
    if (!key.seeded()) put_poly(w, context, key.a[j]);
  }
}

SwitchingKey get_switching_key(ByteReader& r, const CkksContext& context, std::uint16_t version) {
  SwitchingKey key;
  if (version >= 2) {
    const std::uint8_t form = r.u8();
    if (form > static_cast<std::uint8_t>(KeyForm::seeded)) r.fail("unknown switching key form");
    if (form == static_cast<std::uint8_t>(KeyForm::seeded)) {
      key.seed.emplace();
      r.bytes(*key.seed);
    }
  }
  const std::uint16_t digits = r.u16();
  const std::uint32_t top = context.max_level();
  if (digits == 0 || digits > context.digits(top)) r.fail("wrong number of key digits");
  // Keys are made at the highest level they serve (bootstrapping's SlotToCoeff keys, the
  // encapsulation's at level 0): Q_l P with its digits, l set by the first polynomial.
  std::vector<ModulusIndex> moduli;
  auto expect_for = [&](std::uint16_t limbs) {
    if (moduli.empty()) {
      const std::size_t special = context.p_moduli().size();
      if (limbs <= special || limbs - special - 1 > top) {
        r.fail("switching key polynomial of " + std::to_string(limbs) + " limbs");
      }
      const auto level = static_cast<std::uint32_t>(limbs - special - 1);
      if (context.digits(level) != digits) r.fail("wrong number of key digits for its level");
      moduli = context.qp_moduli(level);
    }
    return moduli;
  };
  for (std::uint16_t j = 0; j < digits; ++j) {
    key.b.push_back(get_poly_as(r, context, expect_for));
    if (!key.seeded()) key.a.push_back(get_poly_as(r, context, expect_for));
  }
  return key;
}

void check_scale_slots(ByteReader& r, const CkksContext& context, double scale,
                       std::uint32_t slots) {
  if (!(std::isfinite(scale) && scale > 0)) r.fail("scale is not positive and finite");
  if (!std::has_single_bit(slots) || slots > context.degree() / 2) r.fail("bad slot count");
}

template <class Fn>
auto read(const CkksContext& context, std::span<const std::uint8_t> bytes, Kind kind, Fn fn) {
  ByteReader r(bytes, name_of(kind));
  const std::uint16_t version = read_header(r, kind, fingerprint(context));
  auto out = [&] {
    if constexpr (std::is_invocable_v<Fn, ByteReader&, std::uint16_t>) {
      return fn(r, version);
    } else {
      return fn(r);
    }
  }();
  r.expect_end();
  return out;
}

}  // namespace

std::uint64_t fingerprint(const CkksContext& context) {
  std::uint64_t h = 1469598103934665603ULL;
  auto mix = [&](std::uint64_t v) {
    for (int i = 0; i < 8; ++i) {
      h ^= (v >> (8 * i)) & 0xffU;
      h *= 1099511628211ULL;
    }
  };
  mix(context.degree());
  mix(context.max_level());
  for (u64 q : context.primes())
    mix(q);
  return h;
}

std::vector<std::uint8_t> serialize(const CkksContext& context, const Ciphertext& ct) {
  ByteWriter w;
  header(w, Kind::ciphertext, fingerprint(context));
  w.u8(static_cast<std::uint8_t>(ct.size()));
  put_double(w, ct.scale);
  w.u32(ct.slots);
  w.u16(static_cast<std::uint16_t>(ct.c.at(0).limbs()));
  for (const auto& c : ct.c)
    put_poly(w, context, c);
  return w.take();
}

Ciphertext deserialize_ciphertext(const CkksContext& context, std::span<const std::uint8_t> bytes) {
  return read(context, bytes, Kind::ciphertext, [&](ByteReader& r) {
    Ciphertext ct;
    const std::uint8_t count = r.u8();
    if (count < 2 || count > 3) r.fail("a ciphertext has 2 or 3 components");
    ct.scale = get_double(r);
    ct.slots = r.u32();
    check_scale_slots(r, context, ct.scale, ct.slots);
    const std::uint16_t limbs = r.u16();
    if (limbs == 0 || limbs > context.max_level() + 1) r.fail("level out of range");
    const auto moduli = context.q_moduli(limbs - 1U);
    for (std::uint8_t i = 0; i < count; ++i)
      ct.c.push_back(get_poly(r, context, moduli));
    return ct;
  });
}

std::vector<std::uint8_t> serialize(const CkksContext& context, const Plaintext& plain) {
  ByteWriter w;
  header(w, Kind::plaintext, fingerprint(context));
  put_double(w, plain.scale);
  w.u32(plain.slots);
  w.u16(static_cast<std::uint16_t>(plain.poly.limbs()));
  put_poly(w, context, plain.poly);
  return w.take();
}

Plaintext deserialize_plaintext(const CkksContext& context, std::span<const std::uint8_t> bytes) {
  return read(context, bytes, Kind::plaintext, [&](ByteReader& r) {
    Plaintext p;
    p.scale = get_double(r);
    p.slots = r.u32();
    check_scale_slots(r, context, p.scale, p.slots);
    const std::uint16_t limbs = r.u16();
    if (limbs == 0 || limbs > context.max_level() + 1) r.fail("level out of range");
    p.poly = get_poly(r, context, context.q_moduli(limbs - 1U));
    return p;
  });
}

std::vector<std::uint8_t> serialize(const CkksContext& context, const PublicKey& pk) {
  ByteWriter w;
  header(w, Kind::public_key, fingerprint(context));
  put_poly(w, context, pk.b);
  put_poly(w, context, pk.a);
  return w.take();
}

PublicKey deserialize_public_key(const CkksContext& context, std::span<const std::uint8_t> bytes) {
  return read(context, bytes, Kind::public_key, [&](ByteReader& r) {
    const auto moduli = context.q_moduli(context.max_level());
    PublicKey pk;
    pk.b = get_poly(r, context, moduli);
    pk.a = get_poly(r, context, moduli);
    return pk;
  });
}

std::vector<std::uint8_t> serialize(const CkksContext& context, const SecretKey& sk) {
  ByteWriter w;
  header(w, Kind::secret_key, fingerprint(context));
  put_poly(w, context, sk.s);
  return w.take();
}

SecretKey deserialize_secret_key(const CkksContext& context, std::span<const std::uint8_t> bytes) {
  return read(context, bytes, Kind::secret_key,
              [&](ByteReader& r) { return SecretKey{get_poly(r, context, all_moduli(context))}; });
}

std::vector<std::uint8_t> serialize(const CkksContext& context, const SwitchingKey& key) {
  ByteWriter w;
  header(w, Kind::switching_key, fingerprint(context));
  put_switching_key(w, context, key);
  return w.take();
}

SwitchingKey deserialize_switching_key(const CkksContext& context,
                                       std::span<const std::uint8_t> bytes) {
  return read(context, bytes, Kind::switching_key, [&](ByteReader& r, std::uint16_t version) {
    return get_switching_key(r, context, version);
  });
}

std::vector<std::uint8_t> serialize(const CkksContext& context, const GaloisKeys& keys) {
  ByteWriter w;
  header(w, Kind::galois_keys, fingerprint(context));
  w.u32(static_cast<std::uint32_t>(keys.keys.size()));
  for (const auto& [g, key] : keys.keys) {
    w.u64(g);
    put_switching_key(w, context, key);
  }
  return w.take();
}

GaloisKeys deserialize_galois_keys(const CkksContext& context,
                                   std::span<const std::uint8_t> bytes) {
  return read(context, bytes, Kind::galois_keys, [&](ByteReader& r, std::uint16_t version) {
    const std::uint32_t count = r.u32();
    if (count > context.degree()) r.fail("more Galois keys than Galois elements");
    GaloisKeys keys;
    for (std::uint32_t i = 0; i < count; ++i) {
      const std::uint64_t g = r.u64();
      if (g % 2 == 0 || g >= 2ULL * context.degree()) r.fail("invalid Galois element");
      if (keys.keys.contains(g)) r.fail("duplicate Galois element");
      keys.keys.emplace(g, get_switching_key(r, context, version));
    }
    return keys;
  });
}

std::vector<std::uint8_t> serialize_params(const CkksParams& params) {
  ByteWriter w;
  header(w, Kind::params, 0);
  w.u16(static_cast<std::uint16_t>(params.name.size()));
  w.bytes({reinterpret_cast<const std::uint8_t*>(params.name.data()), params.name.size()});
  w.u8(static_cast<std::uint8_t>(params.log_n));
  w.u8(static_cast<std::uint8_t>(params.q_bits.size()));
  for (int b : params.q_bits)
    w.u8(static_cast<std::uint8_t>(b));
  w.u8(static_cast<std::uint8_t>(params.p_bits.size()));
  for (int b : params.p_bits)
    w.u8(static_cast<std::uint8_t>(b));
  w.u32(params.dnum);
  w.u8(static_cast<std::uint8_t>(params.log_scale));
  w.u8(static_cast<std::uint8_t>(params.secret));
  w.u32(params.hamming_weight);
  put_double(w, params.sigma);
  return w.take();
}

CkksParams deserialize_params(std::span<const std::uint8_t> bytes) {
  ByteReader r(bytes, name_of(Kind::params));
  read_header(r, Kind::params, 0);
  CkksParams p;
  const std::uint16_t name_len = r.u16();
  if (name_len > 256) r.fail("parameter set name longer than 256 bytes");
  std::vector<std::uint8_t> name(name_len);
  r.bytes(name);
  p.name.assign(name.begin(), name.end());
  p.log_n = r.u8();
  const std::uint8_t q_count = r.u8();
  for (std::uint8_t i = 0; i < q_count; ++i)
    p.q_bits.push_back(r.u8());
  const std::uint8_t p_count = r.u8();
  for (std::uint8_t i = 0; i < p_count; ++i)
    p.p_bits.push_back(r.u8());
  p.dnum = r.u32();
  p.log_scale = r.u8();
  const std::uint8_t secret = r.u8();
  if (secret > 1) r.fail("unknown secret distribution");
  p.secret = static_cast<SecretDistribution>(secret);
  p.hamming_weight = r.u32();
  p.sigma = get_double(r);
  r.expect_end();
  // The set itself is checked as any other (malformed -> invalid_parameters); the insecure ones
  // are refused when a context is built from it.
  p.validate(true);
  return p;
}

}  // namespace safhire::ckks
