#include "safhire/lanes/encryptor.hpp"

#include <algorithm>
#include <cmath>

#include "safhire/core/error.hpp"
#include "safhire/lanes/noise.hpp"

namespace safhire::lanes {

LaneEncryptor::LaneEncryptor(const LaneContext& context, const ckks::RnsOps& ops,
                             core::RandomSource& random)
    : context_(&context), encoder_(context, ops), encryptor_(context.ckks(), ops, random) {}

LaneCiphertext LaneEncryptor::wrap(ckks::Ciphertext ct, const LaneDigits& digits) const {
  LaneCiphertext out;
  out.ct = std::move(ct);
  for (const auto& lane : digits) {
    for (std::int64_t d : lane)
      out.digit_bound = std::max(out.digit_bound, std::fabs(static_cast<double>(d)));
  }
  out.noise = NoiseModel(*context_).fresh();
  out.space = context_->fingerprint();
  return out;
}

LaneCiphertext LaneEncryptor::encrypt(std::span<const mpz_class> integers,
                                      const ckks::PublicKey& pk) const {
  return encrypt_digits(encoder_.digits(integers), pk);
}

LaneCiphertext LaneEncryptor::encrypt_digits(const LaneDigits& digits,
                                             const ckks::PublicKey& pk) const {
  const auto plain =
      encoder_.encode_digits(digits, context_->rest_scale(), context_->space().rest_level());
  return wrap(encryptor_.encrypt(plain, pk), digits);
}

LaneCiphertext LaneEncryptor::encrypt(std::span<const mpz_class> integers,
                                      const ckks::SecretKey& sk) const {
  return encrypt_digits(encoder_.digits(integers), sk);
}

LaneCiphertext LaneEncryptor::encrypt_digits(const LaneDigits& digits,
                                             const ckks::SecretKey& sk) const {
  const auto plain =
      encoder_.encode_digits(digits, context_->rest_scale(), context_->space().rest_level());
  return wrap(encryptor_.encrypt(plain, sk), digits);
}

LaneDecryptor::LaneDecryptor(const LaneContext& context, const ckks::RnsOps& ops,
                             const ckks::SecretKey& sk)
    : context_(&context), ops_(&ops), sk_(&sk), encoder_(context, ops) {}

LaneDecoding LaneDecryptor::decrypt(const LaneCiphertext& x) const {
  require(x.space == context_->fingerprint(), ErrorCode::size_mismatch,
          "a lane ciphertext of another lane space");
  return encoder_.decode(ckks::decrypt(context_->ckks(), *ops_, x.ct, *sk_));
}

}  // namespace safhire::lanes
