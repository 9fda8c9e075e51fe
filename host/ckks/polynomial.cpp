#include "safhire/ckks/polynomial.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <map>
#include <memory>
#include <numbers>
#include <set>
#include <string>

#include "safhire/core/error.hpp"

namespace safhire::ckks {

double ChebyshevSeries::operator()(double x) const {
  const long double y = (2.0L * x - a - b) / (static_cast<long double>(b) - a);
  long double b1 = 0, b2 = 0;  // Clenshaw
  for (std::size_t i = coeffs.size(); i-- > 1;) {
    const long double t = 2 * y * b1 - b2 + coeffs[i];
    b2 = b1;
    b1 = t;
  }
  return static_cast<double>(y * b1 - b2 + (coeffs.empty() ? 0 : coeffs[0]));
}

ChebyshevSeries chebyshev_interpolate(const std::function<double(double)>& f, std::uint32_t degree,
                                      double a, double b, Parity parity) {
  require(b > a && std::isfinite(a) && std::isfinite(b), ErrorCode::invalid_argument,
          "Chebyshev interpolation needs an interval a < b");
  const std::uint32_t n = degree + 1;
  std::vector<long double> values(n), nodes(n);
  for (std::uint32_t k = 0; k < n; ++k) {
    nodes[k] = std::cos(std::numbers::pi_v<long double> * (k + 0.5L) / n);
    values[k] = f(static_cast<double>((nodes[k] * (static_cast<long double>(b) - a) + a + b) / 2));
  }
  ChebyshevSeries p;
  p.a = a;
  p.b = b;
  p.coeffs.resize(n);
  for (std::uint32_t i = 0; i < n; ++i) {
    long double sum = 0;
    for (std::uint32_t k = 0; k < n; ++k)
      sum += values[k] * std::cos(std::numbers::pi_v<long double> * i * (k + 0.5L) / n);
    p.coeffs[i] = static_cast<double>(sum * (i == 0 ? 1.0L : 2.0L) / n);
    // The other parity's coefficients vanish in exact arithmetic; made exact zeros here.
    if ((parity == Parity::odd && i % 2 == 0) || (parity == Parity::even && i % 2 == 1))
      p.coeffs[i] = 0;
  }
  return p;
}

namespace {

// The baby-step count B for a degree: a power of two near sqrt(degree + 1), at least 2.
std::uint32_t baby_count(std::uint32_t degree) {
  const auto bits = static_cast<std::uint32_t>(std::bit_width(degree));  // 2^bits > degree
  return std::max(2U, 1U << ((bits + 1) / 2));
}

// ceil(log2(d + 1)): the fewest levels a polynomial of degree d can take.
std::uint32_t optimal_depth(std::uint32_t degree) {
  return static_cast<std::uint32_t>(std::bit_width(degree));
}

// The levels of the powers when T_1 is at `top`: T_2k one below T_k, T_2k+1 one below the lower
// of T_k and T_k+1 (T_1 joins at that level before the rescale); top - ceil(log2 i) for T_i.
class PowerLevels {
 public:
  explicit PowerLevels(std::uint32_t top) { levels_[1] = top; }

  std::uint32_t operator()(std::uint32_t i) {
    if (auto it = levels_.find(i); it != levels_.end()) return it->second;
    const std::uint32_t k = i / 2;
    const std::uint32_t below = i % 2 == 0 ? (*this)(k) : std::min((*this)(k), (*this)(k + 1));
    require(below >= 1, ErrorCode::invalid_argument,
            "polynomial evaluation: T_" + std::to_string(i) + " needs more levels");
    return levels_[i] = below - 1;
  }

 private:
  std::map<std::uint32_t, std::uint32_t> levels_;
};

// The division tree of a series: a leaf (sum_i c_i T_i) or p = q T_g + r.
struct Node {
  std::vector<double> c;  // a leaf's coefficients
  std::uint32_t g = 0;    // the giant step of a division node
  std::unique_ptr<Node> q, r;

  bool leaf() const { return g == 0; }
  bool constant() const { return leaf() && c.size() == 1; }
};

// The level at which a node's sum is formed before its rescale, and its output level after. A
// leaf forms its sum at the lowest level of its terms; a division node at the lower of q's output
// and T_g (r joins there, before the rescale).
std::uint32_t pre_level(const Node& n, PowerLevels& t);
std::uint32_t post_level(const Node& n, PowerLevels& t) {
  return pre_level(n, t) - 1;
}
std::uint32_t pre_level(const Node& n, PowerLevels& t) {
  if (n.leaf()) {
    std::uint32_t level = t(1);
    for (std::uint32_t i = 1; i < n.c.size(); ++i) {
      if (n.c[i] != 0) level = std::min(level, t(i));
    }
    return level;
  }
  const std::uint32_t giant = t(n.g);
  return n.q->constant() ? giant : std::min(post_level(*n.q, t), giant);
}

// The plan: c divided by giant steps T_g, g = 2^floor(log2 deg), down to leaves of degree below
// B (baby-step giant-step), such that the node forms its sum at level `floor` or above. A leaf
// that would sit lower is divided further by the baby steps' powers of two (Lattigo's
// re-split of the leading leaf): a leaf of degree 2^k - 1 takes k + 1 levels (its terms' k, then
// its constants' rescale) where k is the optimum, and on the chain of quotients below the root
// that one level would add to the whole. Splitting to the end takes ceil(log2(d + 1)) levels
// (q of degree below g, and T_g, take log2 g), so any floor that allows the optimum is met.
std::unique_ptr<Node> divide(std::vector<double> c, std::uint32_t babies, PowerLevels& t,
                             std::uint32_t floor) {
  auto node = std::make_unique<Node>();
  const auto d = static_cast<std::uint32_t>(c.size()) - 1;
  node->c = std::move(c);
  if (d == 0 || (d < babies && pre_level(*node, t) >= floor)) return node;
  const std::uint32_t g = std::bit_floor(d);  // g <= d < 2g
  std::vector<double> q(d - g + 1), r(node->c.begin(), node->c.begin() + g);
  q[0] = node->c[g];
  for (std::uint32_t j = 1; j <= d - g; ++j) {
    q[j] = 2 * node->c[g + j];
    r[g - j] -= node->c[g + j];  // T_(g+j) = 2 T_g T_j - T_(g-j)
  }
  node->c.clear();
  node->g = g;
  node->q = divide(std::move(q), babies, t, floor + 1);  // q's output at floor or above
  // r joins the product at its level, unrescaled.
  node->r = divide(std::move(r), babies, t, pre_level(*node, t));
  return node;
}

// The plan of a series whose T_1 is at `top`, at the fewest levels its degree allows.
std::unique_ptr<Node> plan(std::vector<double> c, PowerLevels& t, std::uint32_t top) {
  const auto degree = static_cast<std::uint32_t>(c.size()) - 1;
  return divide(std::move(c), baby_count(degree), t, top + 1 - optimal_depth(degree));
}

// The powers a plan reads: its leaves' terms and its giant steps.
std::set<std::uint32_t> powers_read(const Node& root) {
  std::set<std::uint32_t> out;
  auto visit = [&](auto& self, const Node& n) -> void {
    if (!n.leaf()) {
      out.insert(n.g);
      self(self, *n.q);
      self(self, *n.r);
      return;
    }
    out.insert(1);  // an empty leaf is T_1 times 0
    for (std::uint32_t i = 1; i < n.c.size(); ++i) {
      if (n.c[i] != 0) out.insert(i);
    }
  };
  visit(visit, root);
  return out;
}

// The powers computed for those read (T_2k from T_k, T_2k+1 from T_k and T_k+1), T_1 included.
std::set<std::uint32_t> powers_computed(const std::set<std::uint32_t>& read) {
  std::set<std::uint32_t> out;
  auto add = [&](auto& self, std::uint32_t i) -> void {
    if (!out.insert(i).second || i == 1) return;
    self(self, i / 2);
    if (i % 2 == 1) self(self, i / 2 + 1);
  };
  for (std::uint32_t i : read)
    add(add, i);
  return out;
}

// The products of two ciphertexts a plan takes: its quotients by a giant step.
std::uint32_t quotient_products(const Node& n) {
  if (n.leaf()) return 0;
  return (n.q->constant() ? 0 : 1) + quotient_products(*n.q) + quotient_products(*n.r);
}

class Run {
 public:
  Run(const Evaluator& ev, const SwitchingKey& rlk, std::uint32_t top)
      : levels(top), ev_(ev), rlk_(rlk) {}

  std::map<std::uint32_t, Ciphertext> t;  // the powers
  PowerLevels levels;                     // theirs, planned (power() checks them)

  void power(std::uint32_t i) {
    if (t.count(i) != 0) return;
    const std::uint32_t k = i / 2;
    power(k);
    if (i % 2 == 1) power(k + 1);
    Ciphertext pre;
    if (i % 2 == 0) {  // 2 T_k^2 - 1
      pre = ev_.multiply_constant(ev_.multiply(t.at(k), t.at(k)), 2.0, 1.0);
      pre = ev_.add_constant(pre, -1.0);
    } else {  // 2 T_k T_k+1 - T_1
      const std::uint32_t l = std::min(t.at(k).level(), t.at(k + 1).level());
      pre = ev_.multiply_constant(ev_.multiply_at(t.at(k), t.at(k + 1), l), 2.0, 1.0);
      pre = ev_.sub(pre, ev_.multiply_constant_at(t.at(1), 1.0, pre.scale / t.at(1).scale, l));
    }
    t[i] = ev_.relinearize_rescale(pre, rlk_);
    require(t[i].level() == levels(i), ErrorCode::invalid_argument,
            "polynomial evaluation: T_" + std::to_string(i) + " off its planned level");
  }

  // n at exactly `scale` after its rescale.
  Ciphertext post(const Node& n, double scale) {
    const std::uint32_t l = pre_level(n, levels);
    return ev_.relinearize_rescale(pre(n, scale * q(l), l), rlk_);
  }

 private:
  double q(std::uint32_t level) const { return static_cast<double>(ev_.context().prime(level)); }

  // n at `scale` and level l, before any rescale.
  Ciphertext pre(const Node& n, double scale, std::uint32_t l) {
    if (n.leaf()) {
      // sum_i c_i T_i, each T_i brought to `scale` by its coefficient's encoding scale, in one
      // pass (the terms read T_i's limbs of level l in place).
      std::vector<const Ciphertext*> terms;
      std::vector<double> coeffs, scales;
      for (std::uint32_t i = 1; i < n.c.size(); ++i) {
        if (n.c[i] == 0) continue;
        require(t.at(i).level() >= l, ErrorCode::invalid_argument,
                "polynomial evaluation: T_" + std::to_string(i) + " below its leaf's level");
        terms.push_back(&t.at(i));
        coeffs.push_back(n.c[i]);
        scales.push_back(scale / t.at(i).scale);
      }
      const Ciphertext acc = terms.empty()
                                 ? ev_.multiply_constant_at(t.at(1), 0.0, scale / t.at(1).scale, l)
                                 : ev_.linear_combination_at(terms, coeffs, scales, l);
      return ev_.add_constant(acc, n.c[0]);
    }
    // q T_g + r, the product at `scale`.
    const Ciphertext& giant = t.at(n.g);
    Ciphertext product;
    if (n.q->constant()) {
      product = ev_.multiply_constant_at(giant, n.q->c[0], scale / giant.scale, l);
    } else {
      const Ciphertext qv = post(*n.q, scale / giant.scale);
      require(
          giant.level() >= l, ErrorCode::invalid_argument,
          "polynomial evaluation: T_" + std::to_string(n.g) + " below the level it is needed at");
      product = ev_.multiply_at(qv, giant, l);
    }
    return ev_.add(product, pre(*n.r, product.scale, l));
  }

  const Evaluator& ev_;
  const SwitchingKey& rlk_;
};

}  // namespace

std::uint32_t PolynomialEvaluator::depth(std::uint32_t degree, bool unit_interval) {
  require(degree >= 1, ErrorCode::invalid_argument, "polynomial of degree 0");
  // Relative levels: x at `top`, T_1 at top or one below (the affine map).
  constexpr std::uint32_t top = 1000;
  const std::uint32_t first = unit_interval ? top : top - 1;
  PowerLevels t(first);
  const auto root = plan(std::vector<double>(degree + 1, 1.0), t, first);
  return top - post_level(*root, t);
}

std::uint32_t PolynomialEvaluator::products(const ChebyshevSeries& p) {
  require(p.coeffs.size() >= 2, ErrorCode::invalid_argument,
          "polynomial evaluation needs a degree of at least 1");
  constexpr std::uint32_t top = 1000;
  PowerLevels t(top);
  const auto root = plan(p.coeffs, t, top);
  return static_cast<std::uint32_t>(powers_computed(powers_read(*root)).size()) - 1 +
         quotient_products(*root);
}

Ciphertext PolynomialEvaluator::evaluate(const Ciphertext& x, const ChebyshevSeries& p,
                                         const SwitchingKey& rlk, double scale) const {
  require(p.coeffs.size() >= 2, ErrorCode::invalid_argument,
          "polynomial evaluation needs a degree of at least 1");
  require(p.b > p.a && std::isfinite(p.a) && std::isfinite(p.b), ErrorCode::invalid_argument,
          "polynomial evaluation needs an interval a < b");
  const std::uint32_t degree = p.degree();
  require(x.level() >= depth(p), ErrorCode::invalid_argument,
          "polynomial of degree " + std::to_string(degree) + " needs " + std::to_string(depth(p)) +
              " levels, the ciphertext has " + std::to_string(x.level()));
  if (scale == 0) scale = x.scale;
  const Evaluator& ev = *ev_;
  const bool unit = p.a == -1 && p.b == 1;
  Run run(ev, rlk, unit ? x.level() : x.level() - 1);
  if (unit) {
    run.t[1] = x;
  } else {
    // y = (2x - a - b) / (b - a), at x's scale after one rescale.
    const double q_top = static_cast<double>(ev.context().prime(x.level()));
    Ciphertext y = ev.multiply_constant(x, 2 / (p.b - p.a), q_top);
    run.t[1] = ev.rescale(ev.add_constant(y, -(p.a + p.b) / (p.b - p.a)));
  }
  // Only the powers the plan reads (and those they are made from): an odd or even series, or
  // any with zero coefficients, skips the others.
  const auto root = plan(p.coeffs, run.levels, run.t[1].level());
  for (std::uint32_t i : powers_read(*root))
    run.power(i);
  return run.post(*root, scale);
}

Parity ChebyshevSeries::parity() const {
  bool odd_zero = true, even_zero = true;
  for (std::size_t i = 0; i < coeffs.size(); ++i)
    (i % 2 == 0 ? even_zero : odd_zero) &= coeffs[i] == 0;
  return odd_zero ? Parity::even : even_zero ? Parity::odd : Parity::none;
}

DoubleAngleSine::DoubleAngleSine(double k, std::uint32_t degree, std::uint32_t double_angles)
    : k_(k), double_angles_(double_angles) {
  require(k >= 0.5 && std::isfinite(k) && degree >= 2 && double_angles <= 30,
          ErrorCode::invalid_argument,
          "double-angle sine: K must be at least 1/2, the degree at least 2 and r at most 30");
  const double r = std::exp2(static_cast<double>(double_angles));
  cosine_ = chebyshev_interpolate(
      [r, k](double y) { return std::cos(2 * std::numbers::pi * (k * y - 0.25) / r); }, degree, -1,
      1);
}

double DoubleAngleSine::interpolation_error() const {
  // On a grid fine against the interpolant's oscillation (its degree) and the cosine's.
  const double r = std::exp2(static_cast<double>(double_angles_));
  const std::uint32_t points = 64 * (cosine_.degree() + 1);
  double worst = 0;
  for (std::uint32_t i = 0; i <= points; ++i) {
    const double y = -1 + 2.0 * i / points;
    const double exact = std::cos(2 * std::numbers::pi * (k_ * y - 0.25) / r);
    worst = std::max(worst, std::fabs(cosine_(y) - exact));
  }
  return worst * std::exp2(2.0 * double_angles_);
}

Ciphertext DoubleAngleSine::evaluate(const Evaluator& evaluator, const Ciphertext& v,
                                     const SwitchingKey& rlk, double output_scale) const {
  double scale = 0;  // the interpolant's: v's
  if (output_scale != 0) {
    require(output_scale > 0 && std::isfinite(output_scale), ErrorCode::invalid_argument,
            "double-angle sine: the output scale must be positive");
    const std::uint32_t depth = PolynomialEvaluator::depth(cosine_.degree(), true);
    require(v.level() >= this->depth(), ErrorCode::invalid_argument,
            "double-angle sine: the input has fewer levels than it takes");
    // Double angle j squares at level first - j and divides by that level's prime.
    const std::uint32_t first = v.level() - depth;
    scale = output_scale;
    for (std::uint32_t j = double_angles_; j-- > 0;)
      scale = std::sqrt(scale * static_cast<double>(evaluator.context().prime(first - j)));
  }
  Ciphertext c = PolynomialEvaluator(evaluator).evaluate(v, cosine_, rlk, scale);
  for (std::uint32_t i = 0; i < double_angles_; ++i) {
    Ciphertext sq = evaluator.multiply_constant(evaluator.multiply(c, c), 2.0, 1.0);
    c = evaluator.relinearize_rescale(evaluator.add_constant(sq, -1.0), rlk);
  }
  return c;
}

}  // namespace safhire::ckks
