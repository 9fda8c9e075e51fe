#include "safhire/ckks/polynomial.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <map>
#include <memory>
#include <numbers>
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
                                      double a, double b) {
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
  }
  return p;
}

namespace {

// The baby-step count B for a degree: a power of two near sqrt(degree + 1), at least 2.
std::uint32_t baby_count(std::uint32_t degree) {
  const auto bits = static_cast<std::uint32_t>(std::bit_width(degree));  // 2^bits > degree
  return std::max(2U, 1U << ((bits + 1) / 2));
}

// The division tree of a series: a leaf (degree below B) or p = q T_g + r.
struct Node {
  std::vector<double> c;  // a leaf's coefficients
  std::uint32_t g = 0;    // the giant step of a division node
  std::unique_ptr<Node> q, r;

  bool leaf() const { return g == 0; }
  bool constant() const { return leaf() && c.size() == 1; }
};

std::unique_ptr<Node> divide(std::vector<double> c, std::uint32_t babies) {
  auto node = std::make_unique<Node>();
  const auto d = static_cast<std::uint32_t>(c.size()) - 1;
  if (d < babies) {
    node->c = std::move(c);
    return node;
  }
  const std::uint32_t g = std::bit_floor(d);  // g <= d < 2g
  std::vector<double> q(d - g + 1), r(c.begin(), c.begin() + g);
  q[0] = c[g];
  for (std::uint32_t j = 1; j <= d - g; ++j) {
    q[j] = 2 * c[g + j];
    r[g - j] -= c[g + j];  // T_(g+j) = 2 T_g T_j - T_(g-j)
  }
  node->g = g;
  node->q = divide(std::move(q), babies);
  node->r = divide(std::move(r), babies);
  return node;
}

// The powers T_i by index, as levels (for planning) or ciphertexts.
using Levels = std::map<std::uint32_t, std::uint32_t>;

// The level at which a node's sum is formed before its rescale, and its output level after.
std::uint32_t pre_level(const Node& n, const Levels& t);
std::uint32_t post_level(const Node& n, const Levels& t) {
  return pre_level(n, t) - 1;
}
std::uint32_t pre_level(const Node& n, const Levels& t) {
  if (n.leaf()) {
    std::uint32_t level = t.at(1);
    for (std::uint32_t i = 1; i < n.c.size(); ++i) {
      if (n.c[i] != 0) level = std::min(level, t.at(i));
    }
    return level;
  }
  const std::uint32_t giant = t.at(n.g);
  return n.q->constant() ? giant : std::min(post_level(*n.q, t), giant);
}

// The indices of the powers a degree needs: 1 .. B - 1 and B, 2B, 4B, ... up to the degree.
std::vector<std::uint32_t> powers_needed(std::uint32_t degree) {
  const std::uint32_t babies = baby_count(degree);
  std::vector<std::uint32_t> out;
  for (std::uint32_t i = 1; i < babies && i <= degree; ++i)
    out.push_back(i);
  for (std::uint32_t g = babies; g <= degree; g *= 2)
    out.push_back(g);
  return out;
}

// Levels of the powers when T_1 is at `top`: T_2k one below T_k, T_2k+1 one below the lower of
// T_k and T_k+1 (T_1 joins at that level before the rescale).
Levels power_levels(std::uint32_t degree, std::uint32_t top) {
  Levels t{{1, top}};
  auto level = [&](auto& self, std::uint32_t i) -> std::uint32_t {
    if (auto it = t.find(i); it != t.end()) return it->second;
    const std::uint32_t k = i / 2;
    const std::uint32_t l =
        i % 2 == 0 ? self(self, k) - 1 : std::min(self(self, k), self(self, k + 1)) - 1;
    t[i] = l;
    return l;
  };
  for (std::uint32_t i : powers_needed(degree))
    level(level, i);
  return t;
}

class Run {
 public:
  Run(const Evaluator& ev, const SwitchingKey& rlk) : ev_(ev), rlk_(rlk) {}

  std::map<std::uint32_t, Ciphertext> t;  // the powers
  Levels levels;

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
      require(t.at(k).level() >= l && t.at(k + 1).level() >= l, ErrorCode::invalid_argument,
              "polynomial evaluation: a power below the level it is needed at");
      pre = ev_.multiply_constant(ev_.multiply_at(t.at(k), t.at(k + 1), l), 2.0, 1.0);
      pre = ev_.sub(pre, ev_.multiply_constant_at(t.at(1), 1.0, pre.scale / t.at(1).scale, l));
    }
    t[i] = ev_.relinearize_rescale(pre, rlk_);
    levels[i] = t[i].level();
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
  const Levels t = power_levels(degree, unit_interval ? top : top - 1);
  const auto root = divide(std::vector<double>(degree + 1, 1.0), baby_count(degree));
  return top - post_level(*root, t);
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
  Run run(ev, rlk);
  if (p.a == -1 && p.b == 1) {
    run.t[1] = x;
  } else {
    // y = (2x - a - b) / (b - a), at x's scale after one rescale.
    const double q_top = static_cast<double>(ev.context().prime(x.level()));
    Ciphertext y = ev.multiply_constant(x, 2 / (p.b - p.a), q_top);
    run.t[1] = ev.rescale(ev.add_constant(y, -(p.a + p.b) / (p.b - p.a)));
  }
  run.levels[1] = run.t[1].level();
  for (std::uint32_t i : powers_needed(degree))
    run.power(i);
  const auto root = divide(p.coeffs, baby_count(degree));
  return run.post(*root, scale);
}

}  // namespace safhire::ckks
