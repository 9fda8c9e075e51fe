#include "safhire/rlwe/trees.hpp"

#include <algorithm>
#include <string>

#include "safhire/core/error.hpp"
#include "safhire/core/modarith.hpp"
#include "safhire/elements/embed_lwe.hpp"
#include "safhire/elements/sample_extract.hpp"
#include "safhire/ring/cyclotomic.hpp"
#include "safhire/rlwe/partial.hpp"

namespace safhire::rlwe {

namespace {

using ring::RingParams;

void add_into(Ciphertext& acc, const Ciphertext& c) {
  for (std::size_t i = 0; i < acc.a.degree(); ++i) {
    acc.a[i] += c.a[i];
    acc.b[i] += c.b[i];
  }
}

void scale(Ciphertext& c, u64 factor) {
  for (std::size_t i = 0; i < c.a.degree(); ++i) {
    c.a[i] *= factor;
    c.b[i] *= factor;
  }
}

// acc += X^e c (acc -= X^e c when subtract), without temporaries.
void add_monomial_times(const RingParams& r, Ciphertext& acc, const Ciphertext& c, std::int64_t e,
                        bool subtract = false) {
  ring::add_monomial_product(r, c.a.coeffs(), e, acc.a.coeffs(), subtract);
  ring::add_monomial_product(r, c.b.coeffs(), e, acc.b.coeffs(), subtract);
}

// X^e c, e any integer.
Ciphertext monomial_times(const RingParams& r, const Ciphertext& c, std::int64_t e) {
  Ciphertext out(r);
  add_monomial_times(r, out, c, e);
  return out;
}

// (X^p - X^q) c
Ciphertext binomial_times(const RingParams& r, const Ciphertext& c, std::int64_t p,
                          std::int64_t q) {
  Ciphertext out(r);
  add_monomial_times(r, out, c, p);
  add_monomial_times(r, out, c, q, true);
  return out;
}

std::vector<const Ciphertext*> pointers(const std::vector<Ciphertext>& cs) {
  std::vector<const Ciphertext*> out;
  for (const Ciphertext& c : cs)
    out.push_back(&c);
  return out;
}

std::uint64_t power(std::uint64_t base, std::uint32_t e) {
  std::uint64_t p = 1;
  for (std::uint32_t i = 0; i < e; ++i)
    p *= base;
  return p;
}

}  // namespace

// ---- Keys -------------------------------------------------------------------------------------

void GaloisKeys::add(KeySwitchKey key) {
  const std::uint64_t k = key.galois_element();
  keys_.insert_or_assign(k, std::move(key));
}

const KeySwitchKey& GaloisKeys::at(std::uint64_t k) const {
  const auto it = keys_.find(k);
  if (it == keys_.end())
    throw Error(ErrorCode::invalid_argument,
                "no key-switching key for the automorphism sigma_" + std::to_string(k));
  return it->second;
}

std::vector<std::uint64_t> GaloisKeys::elements() const {
  std::vector<std::uint64_t> out;
  for (const auto& [k, key] : keys_)
    out.push_back(k);
  return out;
}

std::vector<std::uint64_t> tree_galois_elements(const RingParams& r) {
  std::vector<std::uint64_t> out;
  for (std::uint32_t c = 1; c < r.a(); ++c) {
    for (std::uint64_t j = 1; j < r.t(); ++j)
      out.push_back(1 + j * power(r.t(), c));
  }
  for (std::uint64_t k = 2; k < r.t(); ++k)
    out.push_back(k);
  out.push_back(r.M() - 1);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::vector<std::uint64_t> packing_elements(const RingParams& r, std::uint32_t gamma,
                                            TreeMode mode) {
  require(gamma < r.a(), ErrorCode::invalid_argument, "gamma must be below a");
  std::vector<std::uint64_t> out;
  if (gamma == 0 && mode == TreeMode::fast) {
    for (std::uint64_t k = 2; k < r.t(); ++k)
      out.push_back(k);
  } else if (gamma == 0) {
    out.push_back(r.M() - 1);
    if (r.t() == 5 || r.t() == 7) out.push_back(2);
  }
  for (std::uint32_t b = std::max(gamma, 1U); b < r.a(); ++b) {
    for (std::uint64_t j = 1; j < r.t(); ++j)
      out.push_back(1 + j * power(r.t(), b));
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::uint64_t> galois_elements(const RingParams& r, std::uint32_t gamma,
                                           TreeMode mode) {
  std::vector<std::uint64_t> out = packing_elements(r, gamma, mode);
  for (std::uint64_t k : power_elements(r, gamma))
    if (k != 1) out.push_back(k);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

GaloisKeys make_galois_keys(const SecretKey& key, const Gadget& gadget, core::RandomSource& noise,
                            std::span<const std::uint64_t> elements) {
  const std::vector<std::uint64_t> all = tree_galois_elements(key.params().ring);
  if (elements.empty()) elements = all;
  GaloisKeys keys;
  for (std::uint64_t k : elements)
    keys.add(make_automorphism_key(key, k, gadget, noise));
  return keys;
}

// ---- LWE <-> RLWE -----------------------------------------------------------------------------

u64 sample_extract_into(const RingParams& r, const Ciphertext& ct, std::uint32_t j,
                        std::span<u64> a) {
  require_ring(ct, r, "sample_extract");
  ring::require_degree(r, a.size(), "sample_extract output");
  if (j >= r.N())
    throw Error(ErrorCode::invalid_argument, "sample_extract: coefficient " + std::to_string(j) +
                                                 " of a ring of degree " + std::to_string(r.N()));
  const std::uint32_t N = r.N(), M = r.M(), m = r.m();
  elements::extract_mask(ct.a.coeffs().data(), j, a.data(), N, M, m);
  return ct.b[j];
}

LweCiphertext sample_extract(const RingParams& r, const Ciphertext& ct, std::uint32_t j) {
  LweCiphertext lwe;
  lwe.a.assign(r.N(), 0);
  lwe.b = sample_extract_into(r, ct, j, lwe.a);
  return lwe;
}

Ciphertext embed_lwe(const RingParams& r, const LweCiphertext& lwe) {
  ring::require_degree(r, lwe.a.size(), "embed_lwe mask");
  const std::uint32_t N = r.N(), m = r.m();
  Ciphertext ct(r);
  elements::embed_mask(lwe.a.data(), ct.a.coeffs().data(), N, m);
  ct.b[0] = lwe.b;
  return ct;
}

// ---- Trees ------------------------------------------------------------------------------------

TraceTrees::TraceTrees(const ParameterSet& params, const Gadget& gadget, const GaloisKeys& keys)
    : params_(params), keys_(&keys), switcher_(params, gadget) {
  require(params.ring.a() >= 2, ErrorCode::unsupported, "trace trees need a >= 2");
}

std::vector<Ciphertext> TraceTrees::derive_powers(const Ciphertext& first, std::uint32_t gamma) {
  require(gamma >= 1 && gamma < params_.ring.a(), ErrorCode::invalid_argument,
          "derive_powers needs 1 <= gamma < a");
  require_ring(first, params_.ring, "derive_powers");
  std::vector<Ciphertext> out;
  for (std::uint64_t k : power_elements(params_.ring, gamma))
    out.push_back(k == 1 ? first : ks(first, k));
  return out;
}

Ciphertext TraceTrees::ks(const Ciphertext& ct, std::uint64_t k) {
  Ciphertext out(params_.ring);
  switcher_.automorphism(keys_->at(k), ct, out);
  return out;
}

// Node at level b >= 2 over K_b: c_s = Tr_(K_b/K_(b-1))(zeta^(-s delta) c), delta = t^(a-b),
// s < t. DFT trick (a length-t DFT over the t conjugates): with d_j = sigma_(1 + j t^(b-1))(c),
// c_s = zeta^(-s delta) sum_j zeta_t^(-s j) d_j, zeta_t = X^m: t - 1 key switches for all t.
std::vector<Ciphertext> TraceTrees::split_node(const Ciphertext& c, std::uint32_t b,
                                               TreeMode mode) {
  const RingParams& r = params_.ring;
  const std::uint32_t t = r.t();
  const std::int64_t delta = static_cast<std::int64_t>(power(t, r.a() - b)), m = r.m();
  const std::uint64_t step = power(t, b - 1);
  std::vector<Ciphertext> out;
  if (mode == TreeMode::paper) {
    for (std::uint32_t s = 0; s < t; ++s) {
      const Ciphertext x = monomial_times(r, c, -static_cast<std::int64_t>(s) * delta);
      Ciphertext acc = x;
      for (std::uint64_t j = 1; j < t; ++j)
        add_into(acc, ks(x, 1 + j * step));
      out.push_back(std::move(acc));
    }
    return out;
  }
  std::vector<Ciphertext> d;
  d.push_back(c);
  for (std::uint64_t j = 1; j < t; ++j)
    d.push_back(ks(c, 1 + j * step));
  for (std::uint32_t s = 0; s < t; ++s) {
    Ciphertext acc(r);
    for (std::uint32_t j = 0; j < t; ++j) {
      const auto sj = static_cast<std::int64_t>(s * j);
      add_monomial_times(r, acc, d[j], -static_cast<std::int64_t>(s) * delta - sj * m);
    }
    out.push_back(std::move(acc));
  }
  return out;
}

// Tr_(K_1/Q) = sum over (Z/t)^* through its subgroup tower: t = 3: 1 + sigma_-1;
// t = 5: (1 + sigma_-1)(1 + sigma_2); t = 7: (1 + sigma_-1)(1 + sigma_2 + sigma_4), the last by
// Horner: (t - 1)/2 key switches.
Ciphertext TraceTrees::trace_k1(const Ciphertext& c) {
  const RingParams& r = params_.ring;
  Ciphertext y = c;
  add_into(y, ks(c, r.M() - 1));
  if (r.t() == 5) {
    add_into(y, ks(y, 2));
  } else if (r.t() == 7) {
    Ciphertext inner = y;
    add_into(inner, ks(y, 2));  // y + sigma_2 y
    Ciphertext outer = y;
    add_into(outer, ks(inner, 2));  // y + sigma_2 (y + sigma_2 y)
    y = std::move(outer);
  } else if (r.t() != 3) {
    throw Error(ErrorCode::unsupported, "trace trees are implemented for t = 3, 5, 7");
  }
  return y;
}

// Bottom node over K_1: t y_v for v < t-1, y = sum_v y_v zeta_t^v, through
// y_v = (1/t) Tr_(K_1/Q)((zeta_t^(-v) - zeta_t) y) (coefficient v of y in K_1 = Q(zeta_t)). Fast:
// with d_k = sigma_k(c), k = 1..t-1, out_v = sum_k (zeta_t^(-v k) - zeta_t^k) d_k: t - 2 switches.
std::vector<Ciphertext> TraceTrees::bottom_node(const Ciphertext& c, TreeMode mode) {
  const RingParams& r = params_.ring;
  const std::uint32_t t = r.t();
  const std::int64_t m = r.m();
  std::vector<Ciphertext> out;
  if (mode == TreeMode::paper) {
    for (std::uint32_t v = 0; v + 1 < t; ++v) {
      out.push_back(trace_k1(binomial_times(r, c, -static_cast<std::int64_t>(v) * m, m)));
    }
    return out;
  }
  std::vector<Ciphertext> d;
  d.push_back(c);  // d[k - 1] = sigma_k(c)
  for (std::uint64_t k = 2; k < t; ++k)
    d.push_back(ks(c, k));
  for (std::uint32_t v = 0; v + 1 < t; ++v) {
    Ciphertext acc(r);
    for (std::uint32_t k = 1; k < t; ++k) {
      const std::int64_t kk = k;
      add_monomial_times(r, acc, d[k - 1], -static_cast<std::int64_t>(v) * kk * m);
      add_monomial_times(r, acc, d[k - 1], kk * m, true);
    }
    out.push_back(std::move(acc));
  }
  return out;
}

std::vector<Ciphertext> TraceTrees::split(const Ciphertext& ct, std::uint32_t gamma,
                                          TreeMode mode) {
  const RingParams& r = params_.ring;
  require_ring(ct, r, "TraceTrees::split");
  require(gamma < r.a(), ErrorCode::invalid_argument,
          "extraction level gamma = " + std::to_string(gamma) +
              " must be below a = " + std::to_string(r.a()));
  // Pre-scale by F^-1 mod 2^64, F = M (gamma = 0) or t^(a-gamma): the traces multiply by F,
  // which is odd, hence invertible on the torus.
  const std::uint64_t factor = gamma == 0 ? r.M() : power(r.t(), r.a() - gamma);
  Ciphertext scaled = ct;
  scale(scaled, core::inverse_mod_word(factor));
  // Level b splits block u into u + s t^(a-b); the tower stops at K_max(gamma, 1).
  std::vector<Ciphertext> cur;
  cur.push_back(std::move(scaled));
  std::vector<std::uint32_t> index = {0};
  for (std::uint32_t b = r.a(); b > std::max(gamma, 1U); --b) {
    const std::uint32_t step = static_cast<std::uint32_t>(power(r.t(), r.a() - b));
    std::vector<Ciphertext> next;
    std::vector<std::uint32_t> next_index;
    for (std::size_t i = 0; i < cur.size(); ++i) {
      std::vector<Ciphertext> parts = split_node(cur[i], b, mode);
      for (std::uint32_t s = 0; s < parts.size(); ++s) {
        next.push_back(std::move(parts[s]));
        next_index.push_back(index[i] + s * step);
      }
    }
    cur = std::move(next);
    index = std::move(next_index);
  }
  const std::size_t outputs = gamma == 0 ? r.N() : power(r.t(), r.a() - gamma);
  std::vector<Ciphertext> out(outputs, Ciphertext(r));
  if (gamma >= 1) {
    for (std::size_t i = 0; i < cur.size(); ++i)
      out[index[i]] = std::move(cur[i]);
    return out;
  }
  for (std::size_t i = 0; i < cur.size(); ++i) {  // u = index[i] < m; coefficient u + v m
    std::vector<Ciphertext> parts = bottom_node(cur[i], mode);
    for (std::uint32_t v = 0; v < parts.size(); ++v)
      out[index[i] + v * r.m()] = std::move(parts[v]);
  }
  return out;
}

// Merge at level b: inputs c_s (t of them; t-1 at b = 0) over
// K_b, beta = X^(t^(a-b-1)): sum_s beta^s T_b(c_s), T_b = sum over the representatives rho of
// H_b / H_(b+1) (b >= 1: 1 + j t^b; b = 0: 1..t-1). Fast: sum_rho sigma_rho(sum_s
// sigma_rho^-1(beta^s) c_s), one switch per rho != 1. Paper: each T_b(c_s) separately.
Ciphertext TraceTrees::merge(std::span<const Ciphertext* const> cs, std::uint32_t b,
                             TreeMode mode) {
  const RingParams& r = params_.ring;
  const std::uint32_t t = r.t();
  const std::int64_t e = static_cast<std::int64_t>(power(t, r.a() - b - 1));
  std::vector<std::uint64_t> reps;
  for (std::uint64_t j = 0; j < (b == 0 ? t - 1 : t); ++j) {
    reps.push_back(b == 0 ? j + 1 : 1 + j * power(t, b));
  }
  Ciphertext out(r);
  if (mode == TreeMode::paper) {
    std::vector<const KeySwitchKey*> keys;  // b = 0 traces through trace_k1 instead
    for (std::size_t i = 1; b != 0 && i < reps.size(); ++i)
      keys.push_back(&keys_->at(reps[i]));
    for (std::size_t s = 0; s < cs.size(); ++s) {
      Ciphertext traced = b == 0 ? trace_k1(*cs[s]) : *cs[s];
      if (b != 0) {  // the t - 1 switches of one input, summed before their inverse transforms
        const std::vector<const Ciphertext*> same(keys.size(), cs[s]);
        switcher_.automorphism_sum(keys, same, traced);
      }
      add_monomial_times(r, out, traced, e * static_cast<std::int64_t>(s));
    }
    return out;
  }
  // The switched terms summed by the switcher, sharing their inverse transforms.
  std::vector<Ciphertext> ws;
  std::vector<const KeySwitchKey*> keys;
  ws.reserve(reps.size());
  for (std::uint64_t rho : reps) {
    const auto rho_inv = static_cast<std::int64_t>(core::pow_mod<u64>(rho, r.N() - 1, r.M()));
    Ciphertext w(r);
    for (std::size_t s = 0; s < cs.size(); ++s) {
      add_monomial_times(r, w, *cs[s], e * static_cast<std::int64_t>(s) * rho_inv % r.M());
    }
    if (rho == 1) {
      add_into(out, w);
    } else {
      ws.push_back(std::move(w));
      keys.push_back(&keys_->at(rho));
    }
  }
  switcher_.automorphism_sum(keys, pointers(ws), out);
  return out;
}

// The merge tree from level `bottom` to level `top`: item I lands at
// X^(I t^(a-1-top)) (LWE packing, bottom = 0) or X^I (blocks, bottom = gamma, top = a-1), the
// children of a node being stride-t subsequences. Items travel as pointers, so the recursion
// copies no ciphertext.
Ciphertext TraceTrees::merge_tree(std::span<const Ciphertext* const> items, std::uint32_t top,
                                  std::uint32_t bottom, TreeMode mode) {
  if (top == bottom) return merge(items, bottom, mode);
  const std::uint32_t t = params_.ring.t();
  std::vector<Ciphertext> subs;
  std::vector<const Ciphertext*> part;
  for (std::uint32_t s = 0; s < t; ++s) {
    part.clear();
    for (std::size_t i = s; i < items.size(); i += t)
      part.push_back(items[i]);
    subs.push_back(merge_tree(part, top - 1, bottom, mode));
  }
  return merge(pointers(subs), top, mode);
}

// Tr_(K_a/K_from): levels from..a-1, each sum_j sigma_(1+t^b)^j by Horner with one key:
// c + sigma(c + sigma(c + ...)), t - 1 switches per level.
Ciphertext TraceTrees::trace_tower(Ciphertext c, std::uint32_t from_level) {
  const RingParams& r = params_.ring;
  for (std::uint32_t b = from_level; b < r.a(); ++b) {
    const std::uint64_t g = 1 + power(r.t(), b);
    Ciphertext acc = c;
    for (std::uint32_t i = 0; i + 1 < r.t(); ++i) {
      Ciphertext next = c;
      add_into(next, ks(acc, g));
      acc = std::move(next);
    }
    c = std::move(acc);
  }
  return c;
}

Ciphertext TraceTrees::pack_lwes(std::span<const LweCiphertext> lwes, std::uint32_t k,
                                 TreeMode mode) {
  const RingParams& r = params_.ring;
  require(k < r.a(), ErrorCode::invalid_argument, "pack_lwes: k must be below a");
  const std::size_t n = (r.t() - 1) * power(r.t(), k);
  require(
      lwes.size() == n, ErrorCode::size_mismatch,
      "pack_lwes: " + std::to_string(n) + " samples expected, got " + std::to_string(lwes.size()));
  // Each item: embedded, times (1 - zeta_t), pre-scaled by M^-1 (the factor of the full trace),
  // in one pass per sample (elements/embed_lwe.hpp). b = (B, 0, ...) becomes B (1 - X^m).
  const u64 m_inv = core::inverse_mod_word<u64>(r.M());
  const std::uint32_t N = r.N(), m = r.m();
  std::vector<u64> embedded(N);
  std::vector<Ciphertext> items;
  items.reserve(lwes.size());
  for (const LweCiphertext& lwe : lwes) {
    ring::require_degree(r, lwe.a.size(), "pack_lwes mask");
    elements::embed_mask(lwe.a.data(), embedded.data(), N, m);
    Ciphertext& item = items.emplace_back(r);
    u64* a = item.a.coeffs().data();
    for (std::uint32_t block = 0; block * m < N; ++block)
      for (std::uint32_t j = 0; j < m; ++j)
        a[block * m + j] =
            m_inv * elements::unit_minus_zeta_coefficient(embedded.data(), block, j, N, m);
    item.b[0] = m_inv * lwe.b;
    item.b[m] = u64{0} - m_inv * lwe.b;
  }
  return trace_tower(merge_tree(pointers(items), k, 0, mode), k + 1);
}

Ciphertext TraceTrees::pack_blocks(std::span<const Ciphertext> blocks, std::uint32_t gamma,
                                   TreeMode mode) {
  const RingParams& r = params_.ring;
  require(gamma >= 1 && gamma < r.a(), ErrorCode::invalid_argument,
          "pack_blocks: gamma must be in [1, a)");
  const std::uint64_t count = power(r.t(), r.a() - gamma);
  require(blocks.size() == count, ErrorCode::size_mismatch,
          "pack_blocks: " + std::to_string(count) + " blocks expected, got " +
              std::to_string(blocks.size()));
  const u64 f_inv = core::inverse_mod_word<u64>(count);
  std::vector<Ciphertext> items(blocks.begin(), blocks.end());
  for (Ciphertext& c : items) {
    require_ring(c, r, "pack_blocks");
    scale(c, f_inv);
  }
  return merge_tree(pointers(items), r.a() - 1, gamma, mode);
}

}  // namespace safhire::rlwe
