#include "safhire/hybrid/inference.hpp"

#include <algorithm>
#include <string>
#include <unordered_map>

#include "safhire/core/error.hpp"
#include "safhire/rlwe/rlwe.hpp"

namespace safhire::hybrid {

namespace {

using rlwe::u64;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

std::size_t chunks_for(std::size_t values, std::size_t n) {
  return (values + n - 1) / n;
}

std::vector<std::uint32_t> identity(std::size_t n) {
  std::vector<std::uint32_t> p(n);
  for (std::size_t i = 0; i < n; ++i)
    p[i] = static_cast<std::uint32_t>(i);
  return p;
}

std::vector<std::uint32_t> inverse(const std::vector<std::uint32_t>& p) {
  std::vector<std::uint32_t> q(p.size());
  for (std::size_t s = 0; s < p.size(); ++s)
    q[p[s]] = static_cast<std::uint32_t>(s);
  return q;
}

// A signed integer on the torus at scale 2^(64-b) (two's complement wraps exactly).
u64 scaled(std::int64_t v, std::uint32_t bits) {
  return static_cast<u64>(v) << (64 - bits);
}

}  // namespace

ModelInfo ModelInfo::of(const Model& model) {
  ModelInfo info;
  info.accumulator_bits = model.accumulator_bits();
  info.activation_max = model.activation_max();
  info.input_size = model.activation(0).size();
  for (const Round& r : model.rounds()) {
    info.outputs.push_back(r.output.size());
    info.requant.push_back(r.requant);
  }
  return info;
}

// ---- Client -----------------------------------------------------------------------------------

Client::Client(ModelInfo model, const rlwe::ParameterSet& params, InferenceOptions options,
               core::RandomSource& random)
    : model_(std::move(model)),
      params_(params),
      options_(options),
      random_(&random),
      key_(params_, random),
      encryptor_(key_, random),
      keys_(rlwe::make_galois_keys(key_, params_.gadget(options.gamma), random)) {
  require(model_.accumulator_bits <= params_.message_bits, ErrorCode::invalid_parameters,
          "a model with " + std::to_string(model_.accumulator_bits) +
              "-bit accumulators needs a parameter set of at least that precision, got " +
              params_.name);
  require(options.gamma < params_.ring.a(), ErrorCode::invalid_argument, "gamma must be below a");
}

Upload Client::encrypt(std::uint32_t round, std::span<const std::int64_t> values) {
  Upload up;
  up.round = round;
  up.values = static_cast<std::uint32_t>(values.size());
  for (const ring::TorusPoly& chunk :
       rlwe::encode_chunks(params_.ring, values, params_.message_bits)) {
    if (options_.gamma == 0) {
      up.ciphertexts.push_back(encryptor_.encrypt_seeded(chunk.coeffs()));
    } else {
      for (auto& c : rlwe::encrypt_powers(encryptor_, chunk.coeffs(), options_.gamma))
        up.ciphertexts.push_back(std::move(c));
    }
  }
  return up;
}

Upload Client::start(std::span<const std::int64_t> input) {
  require(input.size() == model_.input_size, ErrorCode::invalid_argument,
          "client input: " + std::to_string(model_.input_size) + " values expected");
  for (std::int64_t v : input) {
    require(v >= 0 && v <= model_.activation_max, ErrorCode::invalid_argument,
            "client input value " + std::to_string(v) + " out of range");
  }
  next_round_ = 0;
  seen_.clear();
  logits_.clear();
  return encrypt(0, input);
}

std::optional<Upload> Client::receive(const Download& d) {
  require(d.round == next_round_ && d.round < model_.outputs.size(), ErrorCode::malformed_input,
          "download for round " + std::to_string(d.round) + ", expected round " +
              std::to_string(next_round_));
  const std::size_t n = model_.outputs[d.round], N = params_.ring.N();
  require(d.values == n && d.packed.size() == chunks_for(n, N), ErrorCode::malformed_input,
          "download of round " + std::to_string(d.round) + ": wrong value or ciphertext count");
  std::vector<std::int64_t> acc;
  acc.reserve(n);
  for (const rlwe::Ciphertext& ct : d.packed) {
    rlwe::require_ring(ct, params_.ring, "download");
    const std::vector<std::int64_t> m = encryptor_.decrypt(ct);
    for (std::size_t j = 0; j < N && acc.size() < n; ++j)
      acc.push_back(m[j]);
  }
  seen_.push_back(acc);
  ++next_round_;
  const auto& rq = model_.requant[d.round];
  if (!rq) {
    logits_ = std::move(acc);
    return std::nullopt;
  }
  for (std::int64_t& v : acc)
    v = requantize(v, *rq, model_.activation_max);
  return encrypt(next_round_, acc);
}

// ---- Server -----------------------------------------------------------------------------------

// A received activation, in activation-index order: LWE rows [index][N + 1] (b last) at
// gamma = 0; at gamma >= 1 the conjugate samples of each chunk and each index's location.
struct Server::Activation {
  std::vector<u64> lwe;
  std::vector<std::vector<rlwe::ModuleLwe>> conj;  // [chunk][block * lanes + k]
  std::vector<std::uint32_t> slot;                 // index -> slot
};

Server::Server(const Model& model, const rlwe::ParameterSet& params, InferenceOptions options,
               const rlwe::GaloisKeys& keys, const core::Seed& session_seed)
    : model_(&model),
      params_(params),
      options_(options),
      seed_(session_seed),
      trees_(params_, params_.gadget(options.gamma), keys) {
  require(model.accumulator_bits() <= params_.message_bits, ErrorCode::invalid_parameters,
          "model precision above the parameter set's");
  if (options.gamma >= 1) partial_.emplace(params_.ring, options.gamma);
  activations_.resize(model.rounds().size());
}

Server::~Server() = default;

std::uint64_t Server::key_switches() const {
  return trees_.key_switches();
}

std::vector<std::uint32_t> Server::permutation(std::uint32_t round) const {
  const std::size_t n = model_->rounds().at(round).output.size();
  if (!options_.shuffle || round + 1 == model_->rounds().size()) return identity(n);
  core::SeededRandom stream(core::derive_seed(seed_, round, "SFHshufl"));
  return core::random_permutation(stream, static_cast<std::uint32_t>(n));
}

void Server::extract(const Upload& up) {
  const std::uint32_t r = up.round;
  const std::size_t n = model_->activation(r).size(), N = params_.ring.N();
  const std::size_t per_chunk = partial_ ? partial_->elements().size() : 1;
  require(up.values == n && up.ciphertexts.size() == chunks_for(n, N) * per_chunk,
          ErrorCode::malformed_input,
          "upload of round " + std::to_string(r) + ": " + std::to_string(n) + " values in " +
              std::to_string(chunks_for(n, N) * per_chunk) + " ciphertexts expected");
  for (const auto& c : up.ciphertexts)
    require(c.b.ring() == params_.ring, ErrorCode::size_mismatch, "upload: wrong ring");
  auto act = std::make_unique<Activation>();
  // Slot s carries activation index previous_permutation_[s].
  act->slot = inverse(previous_permutation_);
  if (!partial_) {
    act->lwe.assign(n * (N + 1), 0);
    for (std::size_t c = 0; c * N < n; ++c) {
      const rlwe::Ciphertext ct = up.ciphertexts[c].expand();
      for (std::size_t j = 0; j < N && c * N + j < n; ++j) {
        const rlwe::LweCiphertext lwe =
            rlwe::sample_extract(params_.ring, ct, static_cast<std::uint32_t>(j));
        u64* row = act->lwe.data() + previous_permutation_[c * N + j] * (N + 1);
        std::copy(lwe.a.begin(), lwe.a.end(), row);
        row[N] = lwe.b;
      }
    }
  } else {
    for (std::size_t c = 0; c * N < n; ++c) {
      std::vector<rlwe::Ciphertext> powers;
      for (std::size_t k = 0; k < per_chunk; ++k)
        powers.push_back(up.ciphertexts[c * per_chunk + k].expand());
      act->conj.push_back(partial_->conjugates(powers));
    }
  }
  activations_[r] = std::move(act);
}

Download Server::linear_and_pack(std::uint32_t r) {
  const Round& round = model_->rounds()[r];
  const std::size_t n = round.output.size(), N = params_.ring.N(),
                    hw = std::size_t{round.output.h} * round.output.w;
  const std::uint32_t bits = params_.message_bits;
  const std::vector<std::uint32_t> perm = permutation(r);
  Download d;
  d.round = r;
  d.values = static_cast<std::uint32_t>(n);
  std::vector<Tap> tap_list;
  for (std::size_t g = 0; g * N < n; ++g) {
    auto start = Clock::now();
    if (!partial_) {
      // One LWE sample per slot: bias, then w times each tap's row.
      std::vector<rlwe::LweCiphertext> lwes(N);
      for (std::size_t j = 0; j < N; ++j) {
        rlwe::LweCiphertext& out = lwes[j];
        out.a.assign(N, 0);
        const std::size_t s = g * N + j;
        if (s >= n) continue;
        const std::uint32_t o = perm[s];
        std::vector<u64> acc(N + 1, 0);
        acc[N] = scaled(round.bias[o / hw], bits);
        taps(*model_, r, o, tap_list);
        for (const Tap& tp : tap_list) {
          const Activation& src = *activations_[tp.source];
          const u64* row = src.lwe.data() + std::size_t{tp.index} * (N + 1);
          const u64 w = static_cast<u64>(static_cast<std::int64_t>(tp.weight));
          for (std::size_t k = 0; k <= N; ++k)
            acc[k] += w * row[k];
        }
        std::copy(acc.begin(), acc.begin() + static_cast<std::ptrdiff_t>(N), out.a.begin());
        out.b = acc[N];
      }
      times_.linear += seconds_since(start);
      start = Clock::now();
      d.packed.push_back(trees_.pack_lwes(lwes, params_.ring.a() - 1, options_.mode));
      times_.pack += seconds_since(start);
      continue;
    }
    // gamma >= 1: output block beta holds slots g N + beta + T z (lane z). For every input
    // block it reads, the lanes x lanes weights W[z][j], then sum_k P_k conj(i, k).
    const rlwe::PartialExtraction& px = *partial_;
    const std::uint32_t T = px.blocks(), L = px.lanes();
    const std::size_t K = px.elements().size();
    std::vector<rlwe::Ciphertext> blocks;
    std::unordered_map<u64, std::size_t> pair_of;
    std::vector<std::vector<std::int64_t>> weights;
    std::vector<const rlwe::ModuleLwe*> inputs;
    for (std::uint32_t beta = 0; beta < T; ++beta) {
      rlwe::ModuleLwe acc = px.zero();
      pair_of.clear();
      std::size_t used = 0;
      for (std::uint32_t z = 0; z < L; ++z) {
        const std::size_t s = g * N + beta + std::size_t{T} * z;
        if (s >= n) continue;
        const std::uint32_t o = perm[s];
        acc.b[z] += scaled(round.bias[o / hw], bits);
        taps(*model_, r, o, tap_list);
        for (const Tap& tp : tap_list) {
          const Activation& src = *activations_[tp.source];
          const std::uint32_t slot = src.slot[tp.index];
          const std::uint32_t c = slot / static_cast<std::uint32_t>(N),
                              p = slot % static_cast<std::uint32_t>(N);
          const std::uint32_t i = p % T, j = p / T;
          const u64 key = (u64{tp.source} << 48) | (u64{c} << 24) | i;
          auto [it, fresh] = pair_of.try_emplace(key, used);
          if (fresh) {
            if (weights.size() <= used) weights.emplace_back();
            weights[used].assign(std::size_t{L} * L, 0);
            if (inputs.size() <= used) inputs.push_back(nullptr);
            inputs[used] = src.conj[c].data() + std::size_t{i} * L;
            ++used;
          }
          weights[it->second][std::size_t{z} * L + j] += tp.weight;
        }
      }
      for (std::size_t q = 0; q < used; ++q) {
        const std::vector<u64> plains = px.lane_plaintexts(weights[q]);
        for (std::size_t k = 0; k < K; ++k) {
          for (std::uint32_t e = 0; e < L; ++e) {
            const u64 coef = plains[k * L + e];
            if (coef != 0) px.monomial_accumulate(acc, inputs[q][k], e, coef);
          }
        }
      }
      blocks.push_back(px.embed(acc));
    }
    times_.linear += seconds_since(start);
    start = Clock::now();
    d.packed.push_back(trees_.pack_blocks(blocks, options_.gamma, options_.mode));
    times_.pack += seconds_since(start);
  }
  previous_permutation_ = perm;
  return d;
}

Download Server::process(const Upload& up) {
  require(up.round == next_round_ && up.round < model_->rounds().size(), ErrorCode::malformed_input,
          "upload for round " + std::to_string(up.round) + ", expected round " +
              std::to_string(next_round_));
  if (up.round == 0) previous_permutation_ = identity(model_->activation(0).size());
  auto start = Clock::now();
  extract(up);
  times_.extract += seconds_since(start);
  Download d = linear_and_pack(up.round);
  start = Clock::now();
  // Activations no later round reads are dropped.
  for (std::size_t s = 0; s <= up.round; ++s) {
    if (activations_[s] && model_->last_use(s) <= up.round) activations_[s].reset();
  }
  times_.other += seconds_since(start);
  ++next_round_;
  return d;
}

}  // namespace safhire::hybrid
