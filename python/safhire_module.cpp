// The `safhire` Python module (pybind11): CKKS (a context with its CPU backend, keys, encoding
// from and to NumPy arrays, encryption, decryption, the evaluator, the bootstrapper) and the lanes
// (exact integers modulo beta^n + 1 with Python ints in and out, their products and refresh, and
// comparisons, digits and bits of canonical digits). Every object keeps
// the context it was made from alive; errors are Python exceptions (safhire.Error, a
// RuntimeError, with the library's message). tests/python/ and examples/python/ use it.
#include <pybind11/complex.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cmath>
#include <complex>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "safhire/ckks/bootstrap.hpp"
#include "safhire/ckks/ckks.hpp"
#include "safhire/ckks/encoder.hpp"
#include "safhire/ckks/rns_ops.hpp"
#include "safhire/core/error.hpp"
#include "safhire/core/random.hpp"
#ifdef SAFHIRE_PYTHON_LANES
#include "safhire/lanes/lanes.hpp"
#endif

namespace py = pybind11;
using namespace safhire;

namespace {

// A CKKS context and the CPU primitives it computes with.
struct Context {
  ckks::CkksContext context;
  std::unique_ptr<ckks::RnsOps> ops;
  Context(const std::string& set, bool insecure, unsigned threads)
      : context(ckks::named_set(set), insecure), ops(ckks::make_cpu_rns_ops(context, threads)) {}
  double default_scale() const { return std::exp2(context.params().log_scale); }
};

struct KeyGen {
  std::shared_ptr<Context> ctx;
  core::OsRandom random;
  ckks::KeyGenerator generator;
  explicit KeyGen(std::shared_ptr<Context> c)
      : ctx(std::move(c)), generator(ctx->context, *ctx->ops, random) {}
};

struct Encryptor {
  std::shared_ptr<Context> ctx;
  core::OsRandom random;
  ckks::Encryptor encryptor;
  explicit Encryptor(std::shared_ptr<Context> c)
      : ctx(std::move(c)), encryptor(ctx->context, *ctx->ops, random) {}
};

// Bootstrapping with the set's default parameters, its encoder and evaluator kept with it.
struct Bootstrap {
  std::shared_ptr<Context> ctx;
  ckks::Encoder encoder;
  ckks::Evaluator evaluator;
  ckks::Bootstrapper bootstrapper;
  explicit Bootstrap(std::shared_ptr<Context> c)
      : ctx(std::move(c)),
        encoder(ctx->context, *ctx->ops),
        evaluator(ctx->context, *ctx->ops),
        bootstrapper(encoder, evaluator, ckks::default_bootstrap_params(ctx->context.params())) {}
};

std::vector<std::complex<double>> to_values(const py::array_t<std::complex<double>>& a) {
  const auto r = a.unchecked<1>();
  std::vector<std::complex<double>> v(static_cast<std::size_t>(r.shape(0)));
  for (py::ssize_t i = 0; i < r.shape(0); ++i)
    v[static_cast<std::size_t>(i)] = r(i);
  return v;
}

#ifdef SAFHIRE_PYTHON_LANES
// A lane space's context, its CPU primitives, the refresh's plan.
struct LaneSession {
  lanes::LaneContext context;
  std::unique_ptr<ckks::RnsOps> ops;
  lanes::LaneRefresher refresher;
  core::OsRandom random;
  ckks::KeyGenerator generator;
  ckks::SecretKey sk;
  lanes::LaneKeys keys;
  lanes::LaneEncryptor encryptor;
  lanes::LaneDecryptor decryptor;
  lanes::LaneEvaluator evaluator;
  // The digit operations' pieces, made on first use (their keys take a while).
  std::optional<lanes::DigitEvaluator> digits;
  std::optional<lanes::DigitEncryptor> digit_encryptor;
  std::optional<lanes::DigitDecryptor> digit_decryptor;
  ckks::GaloisKeys digit_keys;
  const lanes::DigitEvaluator& digit_evaluator() {
    if (!digits) {
      digits.emplace(context, *ops);
      digits->add_keys(generator, sk, digit_keys);
      digit_encryptor.emplace(context, *ops, random);
      digit_decryptor.emplace(context, *ops, sk);
    }
    return *digits;
  }
  LaneSession(const std::string& space, bool insecure, unsigned threads)
      : context(lanes::named_lane_space(space), insecure),
        ops(ckks::make_cpu_rns_ops(context.ckks(), threads)),
        refresher(context, *ops),
        generator(context.ckks(), *ops, random),
        sk(generator.secret_key()),
        keys(refresher.keys(generator, sk)),
        encryptor(context, *ops, random),
        decryptor(context, *ops, sk),
        evaluator(context, *ops) {
    evaluator.set_refresher(&refresher, &keys);
  }
};

std::vector<mpz_class> to_mpz(const std::vector<py::int_>& values) {
  std::vector<mpz_class> out;
  out.reserve(values.size());
  for (const auto& v : values)
    out.emplace_back(py::str(py::handle(v)).cast<std::string>());
  return out;
}

std::vector<py::int_> to_ints(const std::vector<mpz_class>& values) {
  std::vector<py::int_> out;
  for (const auto& v : values)
    out.emplace_back(py::str(v.get_str()));
  return out;
}
#endif

}  // namespace

PYBIND11_MODULE(safhire, m) {
  m.doc() = "Safhire: CKKS and exact big integers in CKKS lanes (C++ library bindings)";
  static py::exception<Error> error(m, "Error", PyExc_RuntimeError);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const Error& e) {
      error(e.what());
    }
  });

  py::class_<Context, std::shared_ptr<Context>>(m, "Context",
                                                "A named CKKS set and its CPU backend.")
      .def(py::init<const std::string&, bool, unsigned>(), py::arg("set") = "n16-l24",
           py::arg("insecure") = false, py::arg("threads") = 1,
           "A context of the named set (safhire info lists them); insecure=True admits the "
           "small test sets below 128 bits.")
      .def_property_readonly("degree", [](const Context& c) { return c.context.degree(); })
      .def_property_readonly("slots", [](const Context& c) { return c.context.degree() / 2; })
      .def_property_readonly("max_level", [](const Context& c) { return c.context.max_level(); })
      .def_property_readonly("scale", &Context::default_scale);

  py::class_<ckks::SecretKey>(m, "SecretKey");
  py::class_<ckks::PublicKey>(m, "PublicKey");
  py::class_<ckks::SwitchingKey>(m, "SwitchingKey");
  py::class_<ckks::GaloisKeys>(m, "GaloisKeys");
  py::class_<ckks::Plaintext>(m, "Plaintext")
      .def_property_readonly("level", &ckks::Plaintext::level)
      .def_readonly("scale", &ckks::Plaintext::scale);
  py::class_<ckks::Ciphertext>(m, "Ciphertext")
      .def_property_readonly("level", &ckks::Ciphertext::level)
      .def_readonly("scale", &ckks::Ciphertext::scale);

  py::class_<KeyGen>(m, "KeyGenerator", "Keys from the operating system's CSPRNG.")
      .def(py::init<std::shared_ptr<Context>>())
      .def("secret_key", [](KeyGen& g) { return g.generator.secret_key(); })
      .def("public_key",
           [](KeyGen& g, const ckks::SecretKey& sk) { return g.generator.public_key(sk); })
      .def("relinearization_key",
           [](KeyGen& g, const ckks::SecretKey& sk) { return g.generator.relinearization_key(sk); })
      .def(
          "galois_keys",
          [](KeyGen& g, const ckks::SecretKey& sk, const std::vector<int>& steps,
             bool conjugation) { return g.generator.galois_keys(sk, steps, conjugation); },
          py::arg("sk"), py::arg("steps"), py::arg("conjugation") = false);

  py::class_<ckks::Encoder>(m, "Encoder", "Slot vectors (NumPy, complex) to plaintexts and back.")
      .def(py::init([](const std::shared_ptr<Context>& c) {
             return std::make_unique<ckks::Encoder>(c->context, *c->ops);
           }),
           py::keep_alive<1, 2>())
      .def(
          "encode",
          [](const ckks::Encoder& e, const py::array_t<std::complex<double>>& values, double scale,
             int level) {
            const ckks::CkksContext& c = e.context();
            return e.encode(to_values(values), scale > 0 ? scale : std::exp2(c.params().log_scale),
                            level < 0 ? c.max_level() : static_cast<std::uint32_t>(level));
          },
          py::arg("values"), py::arg("scale") = 0.0, py::arg("level") = -1,
          "At most N/2 values; scale 0: the set's, level -1: the top.")
      .def("decode", [](const ckks::Encoder& e, const ckks::Plaintext& p) {
        const auto v = e.decode(p);
        return py::array_t<std::complex<double>>(static_cast<py::ssize_t>(v.size()), v.data());
      });

  py::class_<Encryptor>(m, "Encryptor")
      .def(py::init<std::shared_ptr<Context>>())
      .def("encrypt", [](Encryptor& e, const ckks::Plaintext& p,
                         const ckks::PublicKey& pk) { return e.encryptor.encrypt(p, pk); })
      .def("encrypt", [](Encryptor& e, const ckks::Plaintext& p, const ckks::SecretKey& sk) {
        return e.encryptor.encrypt(p, sk);
      });

  m.def(
      "decrypt",
      [](const std::shared_ptr<Context>& c, const ckks::Ciphertext& ct, const ckks::SecretKey& sk) {
        return ckks::decrypt(c->context, *c->ops, ct, sk);
      },
      "The plaintext of a ciphertext (the secret key stays with its owner).");

  py::class_<ckks::Evaluator>(m, "Evaluator")
      .def(py::init([](const std::shared_ptr<Context>& c) {
             return std::make_unique<ckks::Evaluator>(c->context, *c->ops);
           }),
           py::keep_alive<1, 2>())
      .def("add", &ckks::Evaluator::add)
      .def("sub", &ckks::Evaluator::sub)
      .def("negate", &ckks::Evaluator::negate)
      .def("multiply_plain", &ckks::Evaluator::multiply_plain)
      .def("rescale", &ckks::Evaluator::rescale)
      .def("drop_to_level", &ckks::Evaluator::drop_to_level)
      .def(
          "multiply",
          [](const ckks::Evaluator& e, const ckks::Ciphertext& x, const ckks::Ciphertext& y,
             const ckks::SwitchingKey& rlk) {
            return e.relinearize_rescale(e.multiply(x, y), rlk);
          },
          "x y relinearized and rescaled: one level.")
      .def("rotate", &ckks::Evaluator::rotate);

  py::class_<ckks::BootstrapKeys>(m, "BootstrapKeys")
      .def_readonly("relinearization", &ckks::BootstrapKeys::relinearization);
  py::class_<Bootstrap>(m, "Bootstrapper",
                        "Bootstrapping with the set's default parameters (a set made for it: "
                        "n16-boot-h192, or the test ring n12-boot-test).")
      .def(py::init<std::shared_ptr<Context>>())
      .def_property_readonly("input_level",
                             [](const Bootstrap& b) { return b.bootstrapper.input_level(); })
      .def_property_readonly("output_level",
                             [](const Bootstrap& b) { return b.bootstrapper.output_level(); })
      .def_property_readonly("input_scale",
                             [](const Bootstrap& b) { return b.bootstrapper.input_scale(); })
      .def(
          "keys",
          [](const Bootstrap& b, KeyGen& g, const ckks::SecretKey& sk) {
            return b.bootstrapper.keys(g.generator, sk);
          },
          "The relinearization, rotation and encapsulation keys a bootstrap needs.")
      .def(
          "bootstrap",
          [](const Bootstrap& b, const ckks::Ciphertext& x, const ckks::BootstrapKeys& keys) {
            return b.bootstrapper.bootstrap(x, keys);
          },
          "x (any level above input_level, any scale; at input_level a scale up to twice "
          "input_scale) back at output_level with the same values.");

#ifdef SAFHIRE_PYTHON_LANES
  py::class_<LaneSession>(m, "Lanes",
                          "Exact integers modulo beta^n + 1 in CKKS lanes: a named lane space "
                          "with its keys (made here, kept here) and refresh.")
      .def(py::init<const std::string&, bool, unsigned>(), py::arg("space") = "lanes-n16-4096-b2",
           py::arg("insecure") = false, py::arg("threads") = 1)
      .def_property_readonly(
          "modulus",
          [](const LaneSession& s) { return py::int_(py::str(s.context.modulus().get_str())); })
      .def_property_readonly("lanes",
                             [](const LaneSession& s) { return s.context.space().lanes(); })
      .def("encrypt",
           [](LaneSession& s, const std::vector<py::int_>& values) {
             const auto v = to_mpz(values);
             return s.encryptor.encrypt(v, s.sk);
           })
      .def("decrypt",
           [](const LaneSession& s, const lanes::LaneCiphertext& x) {
             return to_ints(s.decryptor.decrypt(x).integers);
           })
      .def("add", [](const LaneSession& s, const lanes::LaneCiphertext& x,
                     const lanes::LaneCiphertext& y) { return s.evaluator.add(x, y); })
      .def(
          "multiply",
          [](const LaneSession& s, const lanes::LaneCiphertext& x, const lanes::LaneCiphertext& y) {
            return s.evaluator.multiply(x, y, s.keys.relinearization);
          },
          "Lane by lane modulo p, refreshing an operand first where the product needs it.")
      .def("refresh", [](const LaneSession& s,
                         const lanes::LaneCiphertext& x) { return s.refresher.refresh(x, s.keys); })
      .def(
          "encrypt_digits",
          [](LaneSession& s, const std::vector<py::int_>& values) {
            s.digit_evaluator();
            return s.digit_encryptor->encrypt(to_mpz(values), s.sk);
          },
          "The integers' canonical digits in form A (at the chain's top), for the digit "
          "operations.")
      .def(
          "less_than",
          [](LaneSession& s, const lanes::DigitSlots& x, const lanes::DigitSlots& y) {
            return s.digit_evaluator().less_than(x, y, s.keys.relinearization, s.digit_keys);
          },
          "[a < b] lane by lane, encrypted.")
      .def(
          "equal",
          [](LaneSession& s, const lanes::DigitSlots& x, const lanes::DigitSlots& y) {
            return s.digit_evaluator().equal(x, y, s.keys.relinearization, s.digit_keys);
          },
          "[a == b] lane by lane, encrypted.")
      .def(
          "digit",
          [](LaneSession& s, const lanes::DigitSlots& x, std::uint32_t t) {
            return s.digit_evaluator().digit(x, t, s.keys.relinearization, s.digit_keys);
          },
          "Digit t of each integer, encrypted.")
      .def(
          "bit",
          [](LaneSession& s, const lanes::DigitSlots& x, std::uint64_t j) {
            return s.digit_evaluator().bit(x, j, s.keys.relinearization, s.digit_keys);
          },
          "Bit j of each integer (beta a power of two), encrypted.")
      .def("decrypt_values",
           [](LaneSession& s, const lanes::LaneValues& v) {
             s.digit_evaluator();
             return s.digit_decryptor->decrypt(v).values;
           })
      .def("decrypt_digits", [](LaneSession& s, const lanes::DigitSlots& x) {
        s.digit_evaluator();
        return to_ints(s.digit_decryptor->decrypt(x).integers);
      });
  py::class_<lanes::LaneCiphertext>(m, "LaneCiphertext")
      .def_property_readonly("level", &lanes::LaneCiphertext::level)
      .def_readonly("digit_bound", &lanes::LaneCiphertext::digit_bound);
  py::class_<lanes::DigitSlots>(m, "DigitSlots")
      .def_property_readonly("level", [](const lanes::DigitSlots& x) { return x.low.level(); })
      .def_readonly("canonical", &lanes::DigitSlots::canonical);
  py::class_<lanes::LaneValues>(m, "LaneValues")
      .def_property_readonly("level", [](const lanes::LaneValues& v) { return v.ct.level(); });
#endif
}
