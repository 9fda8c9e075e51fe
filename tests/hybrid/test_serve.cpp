// The server under load and attack: the service's limits (idle expiry, the session caps taken
// atomically, eviction of abandoned sessions, the memory budget, allocation failures as typed
// errors), and the gRPC server on loopback (inference in plaintext and TLS, health, concurrent
// clients, silent and half-sent connections, lying length prefixes, oversized messages,
// graceful shutdown). The oracle for every inference is the plaintext evaluator.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <future>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "model_files.hpp"
#include "safhire/backend/backend.hpp"
#include "safhire/hybrid/protocol.hpp"
#include "safhire/hybrid/rpc.hpp"

namespace {

using namespace safhire::hybrid;
using namespace std::chrono_literals;
using safhire::ErrorCode;
using safhire::core::SeededRandom;
using safhire::hybrid::testing::load_reference;
using safhire::hybrid::testing::model_path;

const safhire::rlwe::ParameterSet& b8() {
  return safhire::rlwe::parameter_set("default-b8");
}

// A client's hello and the client that can go on with it (and the randomness it keeps using).
struct Opening {
  std::unique_ptr<SeededRandom> random;
  std::unique_ptr<Client> client;
  Bytes hello;
};

Opening opening(std::uint64_t seed) {
  Opening o;
  o.random = std::make_unique<SeededRandom>(SeededRandom::from_counter(seed));
  o.client = std::make_unique<Client>(b8(), InferenceOptions{}, *o.random);
  Hello hello{b8().id, {}, {}};
  for (std::uint64_t k : o.client->evaluation_keys().elements())
    hello.keys.push_back(o.client->evaluation_keys().at(k));
  o.hello = encode_hello(hello, b8());
  return o;
}

ErrorCode error_code(const Bytes& reply) {
  EXPECT_EQ(message_type(reply), MessageType::error);
  return message_type(reply) == MessageType::error ? decode_error(reply).code : ErrorCode::internal;
}

// The rest of an inference whose session is open: the logits.
std::vector<std::int64_t> finish(InferenceService& service, Client& client, const Welcome& welcome,
                                 const std::vector<std::int64_t>& pixels) {
  std::optional<Upload> up = client.start(welcome.model, pixels);
  while (up) {
    const Bytes reply = service.handle(encode_upload(welcome.session, *up, b8()));
    throw_if_error(reply);
    up = client.receive(decode_download(reply, b8()));
  }
  return client.logits();
}

struct Fixture {
  Model model = Model::load(model_path("small-b8.sfhm"));
  std::vector<safhire::hybrid::testing::ReferenceImage> refs = load_reference("small-b8.ref");
};

TEST(ServiceLimits, IdleSessionsExpire) {
  Fixture f;
  ServiceLimits limits;
  limits.idle_timeout = 300ms;
  limits.evict_after = 0ms;
  InferenceService service(f.model, safhire::rlwe::SecurityPolicy::require_128, 1, limits);
  Opening o = opening(1);
  const Welcome welcome = decode_welcome(service.handle(o.hello));
  EXPECT_EQ(service.sessions(), 1U);
  EXPECT_EQ(service.expire_idle(), 0U);
  std::this_thread::sleep_for(400ms);
  EXPECT_EQ(service.expire_idle(), 1U);
  EXPECT_EQ(service.sessions(), 0U);
  EXPECT_EQ(service.memory_charged(), 0U);
  std::optional<Upload> up = o.client->start(welcome.model, f.refs[0].pixels);
  EXPECT_EQ(error_code(service.handle(encode_upload(welcome.session, *up, b8()))),
            ErrorCode::invalid_argument);
}

// Hellos that arrive together cannot pass the cap between its check and the insertion.
TEST(ServiceLimits, TheSessionCapHoldsUnderConcurrentHellos) {
  Fixture f;
  ServiceLimits limits;
  limits.max_sessions = 3;
  limits.max_sessions_per_client = 3;
  limits.evict_after = 1h;  // nothing old enough to evict
  limits.idle_timeout = 1h;
  InferenceService service(f.model, safhire::rlwe::SecurityPolicy::require_128, 1, limits);
  const Opening o = opening(2);
  std::vector<std::future<Bytes>> replies;
  for (int i = 0; i < 8; ++i)
    replies.push_back(std::async(std::launch::async, [&, i] {
      return service.handle(o.hello, "client-" + std::to_string(i % 2));
    }));
  int welcomed = 0, refused = 0;
  for (auto& r : replies) {
    const Bytes reply = r.get();
    if (message_type(reply) == MessageType::welcome) {
      ++welcomed;
    } else {
      EXPECT_EQ(error_code(reply), ErrorCode::resource_exhausted);
      ++refused;
    }
  }
  EXPECT_EQ(welcomed, 3);
  EXPECT_EQ(refused, 5);
  EXPECT_EQ(service.sessions(), 3U);
}

// Sessions abandoned after their hello do not lock anyone out: a client at its own cap replaces
// its oldest idle session, and at the global cap the client holding the most gives one up.
// Sessions younger than evict_after are kept, and their owner is refused instead.
TEST(ServiceLimits, AbandonedSessionsMakeRoomForNewClients) {
  Fixture f;
  ServiceLimits limits;
  limits.max_sessions = 4;
  limits.max_sessions_per_client = 3;
  limits.evict_after = 0ms;
  InferenceService service(f.model, safhire::rlwe::SecurityPolicy::require_128, 1, limits);
  const Opening spam = opening(3);
  std::vector<std::uint64_t> abandoned;
  for (int i = 0; i < 10; ++i) {
    const Bytes reply = service.handle(spam.hello, "attacker");
    ASSERT_EQ(message_type(reply), MessageType::welcome) << i;
    abandoned.push_back(decode_welcome(reply).session);
    std::this_thread::sleep_for(2ms);  // distinct last-use times
  }
  EXPECT_EQ(service.sessions(), 3U);  // the attacker's cap; its oldest went first
  // A legitimate client gets in and finishes while the attacker keeps opening sessions.
  Opening a = opening(4), b = opening(5);
  const Welcome wa = decode_welcome(service.handle(a.hello, "alice"));
  const Welcome wb = decode_welcome(service.handle(b.hello, "bob"));  // at the global cap
  EXPECT_EQ(service.sessions(), 4U);
  for (int i = 0; i < 5; ++i)
    ASSERT_EQ(message_type(service.handle(spam.hello, "attacker")), MessageType::welcome);
  EXPECT_EQ(finish(service, *a.client, wa, f.refs[0].pixels), evaluate(f.model, f.refs[0].pixels));
  EXPECT_EQ(finish(service, *b.client, wb, f.refs[1].pixels), evaluate(f.model, f.refs[1].pixels));
  // The first abandoned session is gone: its upload is refused as unknown.
  std::optional<Upload> up = spam.client->start(wa.model, f.refs[0].pixels);
  EXPECT_EQ(error_code(service.handle(encode_upload(abandoned.front(), *up, b8()))),
            ErrorCode::invalid_argument);
}

TEST(ServiceLimits, YoungSessionsAreNotEvicted) {
  Fixture f;
  ServiceLimits limits;
  limits.max_sessions = 2;
  limits.max_sessions_per_client = 2;
  limits.evict_after = 1h;
  limits.idle_timeout = 1h;
  InferenceService service(f.model, safhire::rlwe::SecurityPolicy::require_128, 1, limits);
  const Opening o = opening(6);
  ASSERT_EQ(message_type(service.handle(o.hello, "a")), MessageType::welcome);
  ASSERT_EQ(message_type(service.handle(o.hello, "a")), MessageType::welcome);
  EXPECT_EQ(error_code(service.handle(o.hello, "a")), ErrorCode::resource_exhausted);
  EXPECT_EQ(error_code(service.handle(o.hello, "b")), ErrorCode::resource_exhausted);
  EXPECT_EQ(service.sessions(), 2U);
}

// Each session is charged 3 bytes per byte of its hello and 2 per byte of each upload; past the
// budget a hello is refused, and a finished session gives its charge back.
TEST(ServiceLimits, TheMemoryBudgetRefusesHellosPastIt) {
  Fixture f;
  Opening o = opening(7);
  ServiceLimits limits;
  limits.memory_budget = 3 * o.hello.size() * 3 / 2;  // room for one session and a half
  limits.evict_after = 1h;
  limits.idle_timeout = 1h;
  InferenceService service(f.model, safhire::rlwe::SecurityPolicy::require_128, 1, limits);
  const Welcome w = decode_welcome(service.handle(o.hello, "a"));
  EXPECT_EQ(service.memory_charged(), 3 * o.hello.size());
  EXPECT_EQ(error_code(service.handle(o.hello, "b")), ErrorCode::resource_exhausted);
  EXPECT_EQ(service.memory_charged(), 3 * o.hello.size());
  EXPECT_EQ(finish(service, *o.client, w, f.refs[2].pixels), evaluate(f.model, f.refs[2].pixels));
  EXPECT_EQ(service.memory_charged(), 0U);
  EXPECT_EQ(service.sessions(), 0U);
}

// An allocation that fails while a session is made is a typed refusal of that hello; the
// service's counts are restored and it serves the next client.
TEST(ServiceLimits, AllocationFailuresAreTypedErrors) {
  Fixture f;
  std::atomic<int> calls{0};
  InferenceService service(
      f.model, safhire::rlwe::SecurityPolicy::require_128,
      [&](const safhire::rlwe::ParameterSet& params, const safhire::backend::Config& config,
          const safhire::rlwe::GaloisKeys& keys) -> std::unique_ptr<safhire::backend::Backend> {
        if (calls.fetch_add(1) == 0) throw std::bad_alloc();
        return safhire::backend::make_cpu_backend(params, config, keys, 1);
      });
  Opening o = opening(8);
  EXPECT_EQ(error_code(service.handle(o.hello)), ErrorCode::resource_exhausted);
  EXPECT_EQ(service.sessions(), 0U);
  EXPECT_EQ(service.memory_charged(), 0U);
  const Welcome w = decode_welcome(service.handle(o.hello));
  EXPECT_EQ(finish(service, *o.client, w, f.refs[3].pixels), evaluate(f.model, f.refs[3].pixels));
}

TEST(ServiceLimits, BadLimitsAreRefused) {
  Fixture f;
  ServiceLimits zero;
  zero.max_sessions = 0;
  EXPECT_THROW(InferenceService(f.model, safhire::rlwe::SecurityPolicy::require_128, 1, zero),
               safhire::Error);
  ServiceLimits inverted;
  inverted.evict_after = inverted.idle_timeout + 1ms;
  EXPECT_THROW(InferenceService(f.model, safhire::rlwe::SecurityPolicy::require_128, 1, inverted),
               safhire::Error);
}

// A request longer than any a client of the model sends is refused before it is parsed, and the
// bound covers the largest legitimate hello.
TEST(ServiceLimits, RequestsPastTheModelsLargestAreRefused) {
  Fixture f;
  InferenceService service(f.model, safhire::rlwe::SecurityPolicy::require_128);
  const Opening o = opening(9);
  EXPECT_GE(service.max_request_bytes(), o.hello.size());
  Bytes huge = o.hello;
  huge.resize(service.max_request_bytes() + 1);
  EXPECT_EQ(error_code(service.handle(huge)), ErrorCode::malformed_input);
  EXPECT_EQ(service.sessions(), 0U);
}

// ---- Secrets --------------------------------------------------------------------------------

// Records every request on its way to the service.
class RecordingTransport final : public Transport {
 public:
  explicit RecordingTransport(InferenceService& service) : inner_(service) {}
  std::vector<Bytes> requests;

 protected:
  Bytes round_trip(std::span<const std::uint8_t> request) override {
    requests.emplace_back(request.begin(), request.end());
    return inner_.exchange(request);
  }

 private:
  InProcessTransport inner_;
};

bool contains(const std::vector<Bytes>& hay, std::span<const std::uint8_t> needle) {
  for (const Bytes& h : hay)
    if (std::search(h.begin(), h.end(), needle.begin(), needle.end()) != h.end()) return true;
  return false;
}

// A server's session is made of what its client sends (the hello's evaluation keys, the uploads'
// ciphertexts) and the server's own randomness; none of those bytes carries the secret key,
// neither as its words nor packed one bit per coefficient. The key is rebuilt from the client's
// seed (a client draws its key first) and proved to be the client's by decrypting the first
// upload to the image.
TEST(Secrets, NothingTheServerReceivesCarriesTheSecretKey) {
  Fixture f;
  InferenceService service(f.model, safhire::rlwe::SecurityPolicy::require_128);
  RecordingTransport transport(service);
  SeededRandom random = SeededRandom::from_counter(21), twin = SeededRandom::from_counter(21);
  RemoteClient client(transport, b8(), {}, random);
  const auto& image = f.refs[6].pixels;
  EXPECT_EQ(client.infer(image).logits, evaluate(f.model, image));
  const safhire::rlwe::SecretKey key(b8(), twin);

  ASSERT_GE(transport.requests.size(), 2U);
  const Upload first = decode_upload(transport.requests[1], b8());
  SeededRandom noise = SeededRandom::from_counter(22);
  safhire::rlwe::Encryptor decryptor(key, noise);
  const safhire::ring::TorusPoly phase = decryptor.phase(first.ciphertexts.at(0).expand());
  const std::uint32_t bits = client.model().encoding_bits.at(0);
  const std::size_t n = std::min<std::size_t>(image.size(), b8().ring.N());
  for (std::size_t j = 0; j < n; ++j)
    ASSERT_EQ(safhire::rlwe::decode_message(phase[j], bits), image[j]) << j;

  const std::span<const std::uint64_t> s = key.coeffs();
  std::vector<std::uint8_t> packed((s.size() + 7) / 8, 0);
  for (std::size_t i = 0; i < s.size(); ++i)
    packed[i / 8] |= static_cast<std::uint8_t>((s[i] & 1) << (i % 8));
  const auto words = std::as_bytes(s);
  const std::span<const std::uint8_t> word_bytes(
      reinterpret_cast<const std::uint8_t*>(words.data()), words.size());
  // Every 512-byte window of the words (64 coefficients) and every 16-byte window of the bits.
  for (std::size_t at = 0; at + 512 <= word_bytes.size(); at += 8)
    ASSERT_FALSE(contains(transport.requests, word_bytes.subspan(at, 512))) << at;
  for (std::size_t at = 0; at + 16 <= packed.size(); ++at)
    ASSERT_FALSE(
        contains(transport.requests, std::span<const std::uint8_t>(packed).subspan(at, 16)))
        << at;
}

// ---- gRPC on loopback -------------------------------------------------------------------------

std::string target(const RpcServer& server) {
  return "127.0.0.1:" + std::to_string(server.port());
}

RpcServerOptions loopback() {
  RpcServerOptions o;
  o.address = "127.0.0.1:0";
  return o;
}

// VmRSS of a process's status file (this process's by default).
std::uint64_t rss_bytes(const std::string& status_file = "/proc/self/status") {
  std::ifstream status(status_file);
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::stoull(line.substr(6)) * 1024;
  return 0;
}

TEST(Rpc, InferenceHealthAndBytes) {
  Fixture f;
  InferenceService service(f.model, safhire::rlwe::SecurityPolicy::require_128);
  RpcServer server(service, loopback());
  GrpcTransport transport(target(server));
  EXPECT_TRUE(transport.healthy());
  SeededRandom random = SeededRandom::from_counter(10);
  RemoteClient client(transport, b8(), {}, random);
  const InferenceReport report = client.infer(f.refs[3].pixels);
  EXPECT_EQ(report.logits, evaluate(f.model, f.refs[3].pixels));
  EXPECT_EQ(report.bytes_up + report.key_bytes, transport.bytes_up());
  EXPECT_EQ(service.sessions(), 0U);
}

TEST(Rpc, TlsWithTheServersCertificate) {
  Fixture f;
  // A self-signed pair made for these tests only: openssl req -x509 -newkey ec (P-256), CN and
  // subjectAltName localhost and 127.0.0.1.
  const std::string data = std::string(SAFHIRE_TEST_DATA) + "/";
  RpcServerOptions o = loopback();
  o.tls_cert = data + "tls-test.crt";
  o.tls_key = data + "tls-test.key";
  InferenceService service(f.model, safhire::rlwe::SecurityPolicy::require_128);
  RpcServer server(service, o);
  RpcClientOptions tls;
  tls.tls_ca = o.tls_cert;
  GrpcTransport transport(target(server), tls);
  EXPECT_TRUE(transport.healthy());
  SeededRandom random = SeededRandom::from_counter(11);
  RemoteClient client(transport, b8(), {}, random);
  EXPECT_EQ(client.infer(f.refs[4].pixels).logits, evaluate(f.model, f.refs[4].pixels));
  // A plaintext client cannot talk to it.
  RpcClientOptions plain;
  plain.deadline = 3s;
  GrpcTransport wrong(target(server), plain);
  RemoteClient lost(wrong, b8(), {}, random);
  EXPECT_THROW(lost.infer(f.refs[4].pixels), safhire::Error);
  // Neither a missing nor a non-PEM file starts a server.
  RpcServerOptions bad = o;
  bad.tls_key = data + "missing.key";
  EXPECT_THROW(RpcServer(service, bad), safhire::Error);
  bad.tls_key = model_path("small-b8.sfhm");
  EXPECT_THROW(RpcServer(service, bad), safhire::Error);
}

// 32 connections, 8 inferences at once on the small model: every one gives the plaintext logits.
TEST(Rpc, ConcurrentClientsAllSucceed) {
  Fixture f;
  InferenceService service(f.model, safhire::rlwe::SecurityPolicy::require_128);
  RpcServerOptions o = loopback();
  o.workers = 2;
  RpcServer server(service, o);
  std::vector<std::unique_ptr<GrpcTransport>> connections;
  for (int i = 0; i < 32; ++i) {
    connections.push_back(std::make_unique<GrpcTransport>(target(server)));
    ASSERT_TRUE(connections.back()->healthy());  // each has connected
  }
  std::vector<std::future<bool>> runs;
  for (int i = 0; i < 8; ++i) {
    runs.push_back(std::async(std::launch::async, [&, i] {
      SeededRandom random = SeededRandom::from_counter(100 + static_cast<std::uint64_t>(i));
      RemoteClient client(*connections[static_cast<std::size_t>(i) * 4], b8(), {}, random);
      const auto& ref = f.refs[static_cast<std::size_t>(i) % f.refs.size()];
      return client.infer(ref.pixels).logits == evaluate(f.model, ref.pixels);
    }));
  }
  for (auto& r : runs)
    EXPECT_TRUE(r.get());
  EXPECT_EQ(server.refused(), 0U);
  EXPECT_EQ(service.sessions(), 0U);
}

// A raw TCP connection to the server (for what no gRPC client would send).
struct RawConnection {
  int fd = -1;
  explicit RawConnection(std::uint16_t port) {
    fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
      ::close(fd);
      fd = -1;
    }
  }
  ~RawConnection() {
    if (fd >= 0) ::close(fd);
  }
  RawConnection(const RawConnection&) = delete;
  RawConnection& operator=(const RawConnection&) = delete;
  void send(const Bytes& b) const { (void)!::send(fd, b.data(), b.size(), MSG_NOSIGNAL); }
};

void frame(Bytes& out, std::uint8_t type, std::uint8_t flags, std::uint32_t stream,
           const Bytes& payload) {
  const auto n = static_cast<std::uint32_t>(payload.size());
  out.insert(out.end(),
             {static_cast<std::uint8_t>(n >> 16), static_cast<std::uint8_t>(n >> 8),
              static_cast<std::uint8_t>(n), type, flags, static_cast<std::uint8_t>(stream >> 24),
              static_cast<std::uint8_t>(stream >> 16), static_cast<std::uint8_t>(stream >> 8),
              static_cast<std::uint8_t>(stream)});
  out.insert(out.end(), payload.begin(), payload.end());
}

void literal(Bytes& block, const std::string& name, const std::string& value) {
  // HPACK literal without indexing, new name, no Huffman coding (names and values < 127 bytes).
  block.push_back(0);
  block.push_back(static_cast<std::uint8_t>(name.size()));
  block.insert(block.end(), name.begin(), name.end());
  block.push_back(static_cast<std::uint8_t>(value.size()));
  block.insert(block.end(), value.begin(), value.end());
}

// An HTTP/2 connection preface and a gRPC call whose message prefix declares `declared` bytes,
// followed by only `sent` of them.
Bytes lying_call(std::uint32_t declared, std::size_t sent) {
  const std::string preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
  Bytes out(preface.begin(), preface.end());
  frame(out, 4, 0, 0, {});  // SETTINGS
  Bytes headers;
  headers.push_back(0x83);  // :method POST
  headers.push_back(0x86);  // :scheme http
  literal(headers, ":path", "/safhire.v1.Inference/Exchange");
  literal(headers, ":authority", "localhost");
  literal(headers, "content-type", "application/grpc");
  literal(headers, "te", "trailers");
  frame(out, 1, 0x4, 1, headers);  // HEADERS, END_HEADERS
  Bytes data(5 + sent, 0x5A);      // the uncompressed flag, the length, then the message so far
  data[0] = 0;
  for (int i = 0; i < 4; ++i)
    data[1 + static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(declared >> (24 - 8 * i));
  frame(out, 0, 0, 1, data);  // DATA, the stream left open
  return out;
}

// The hostile tests of the issue at once: 200 silent connections, 64 abandoned sessions, calls
// that declare the largest message and stop sending, calls past the size bound, and clients that
// leave mid-message. The server's memory stays bounded, and a legitimate client succeeds while
// it goes on and after.
TEST(Rpc, HostileClientsDoNotLockOutALegitimateOne) {
  Fixture f;
  ServiceLimits limits;
  limits.evict_after = 0ms;
  InferenceService service(f.model, safhire::rlwe::SecurityPolicy::require_128, 1, limits);
  RpcServer server(service, loopback());
  const std::uint16_t port = server.port();
  // Warm up, so that what follows measures the hostile input only.
  GrpcTransport warm(target(server));
  SeededRandom random = SeededRandom::from_counter(12);
  {
    RemoteClient client(warm, b8(), {}, random);
    ASSERT_EQ(client.infer(f.refs[0].pixels).logits, evaluate(f.model, f.refs[0].pixels));
  }
  const std::uint64_t rss0 = rss_bytes();
  std::vector<std::unique_ptr<RawConnection>> silent;
  for (int i = 0; i < 200; ++i) {
    silent.push_back(std::make_unique<RawConnection>(port));
    ASSERT_GE(silent.back()->fd, 0) << i;
  }
  // Each declares the largest message the server takes and sends 1 KiB of it.
  const auto largest = static_cast<std::uint32_t>(service.max_request_bytes());
  std::vector<std::unique_ptr<RawConnection>> lying;
  for (int i = 0; i < 16; ++i) {
    lying.push_back(std::make_unique<RawConnection>(port));
    lying.back()->send(lying_call(largest, 1024));
  }
  std::this_thread::sleep_for(300ms);
  const std::uint64_t rss_hostile = rss_bytes();
  // 16 declared messages of `largest` bytes would be 16 x 70 MB; they cost a few MB.
  EXPECT_LT(rss_hostile, rss0 + (std::uint64_t{64} << 20));
  std::printf("RSS %llu MiB before, %llu MiB with 200 silent and 16 lying connections\n",
              static_cast<unsigned long long>(rss0 >> 20),
              static_cast<unsigned long long>(rss_hostile >> 20));
  // Past the bound: refused by gRPC before the message is read.
  {
    RawConnection big(port);
    big.send(lying_call(largest + 1024, 16));
  }
  {
    RpcClientOptions o;
    o.deadline = 10s;
    GrpcTransport t(target(server), o);
    Bytes oversized(largest + 1024, 0);
    try {
      t.exchange(oversized);
      ADD_FAILURE() << "an oversized message was taken";
    } catch (const safhire::Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::resource_exhausted) << e.what();
    }
  }
  // Mid-message departures.
  for (int i = 0; i < 8; ++i) {
    RawConnection gone(port);
    gone.send(lying_call(largest, 4096));
  }
  // 64 abandoned sessions from one address.
  GrpcTransport spam(target(server));
  const Opening o = opening(13);
  for (int i = 0; i < 64; ++i)
    ASSERT_EQ(message_type(spam.exchange(o.hello)), MessageType::welcome) << i;
  EXPECT_LE(service.sessions(), limits.max_sessions_per_client);
  // The legitimate client, from the same loopback address as the attacker.
  GrpcTransport legit(target(server));
  RemoteClient client(legit, b8(), {}, random);
  EXPECT_EQ(client.infer(f.refs[5].pixels).logits, evaluate(f.model, f.refs[5].pixels));
}

// A server in a child process, so that its RSS is its own: the clients' keys stay in the parent.
// The child is this test binary run afresh (fork, then exec with --child-server, see main):
// forking alone would copy a gRPC already started by an earlier test in this process, threads
// and all, into a child that then cannot serve. Killed when destroyed.
class ChildServer {
 public:
  explicit ChildServer(const ServiceLimits& limits) {
    int fds[2];
    if (::pipe(fds) != 0) return;
    const std::string fd = std::to_string(fds[1]);
    const std::string evict = std::to_string(limits.evict_after.count());
    pid_ = ::fork();
    if (pid_ == 0) {
      ::close(fds[0]);
      const char* argv[] = {"test_serve", "--child-server", fd.c_str(), evict.c_str(), nullptr};
      ::execv("/proc/self/exe", const_cast<char* const*>(argv));
      ::_exit(127);
    }
    ::close(fds[1]);
    if (pid_ > 0 && ::read(fds[0], &port_, sizeof port_) != sizeof port_) port_ = 0;
    ::close(fds[0]);
  }
  ~ChildServer() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  ChildServer(const ChildServer&) = delete;
  ChildServer& operator=(const ChildServer&) = delete;

  std::uint16_t port() const { return port_; }
  std::string target() const { return "127.0.0.1:" + std::to_string(port_); }
  std::uint64_t rss() const { return rss_bytes("/proc/" + std::to_string(pid_) + "/status"); }

 private:
  pid_t pid_ = -1;
  std::uint16_t port_ = 0;
};

// The target: the server's RSS under hostile input within 2x of its RSS serving as many
// legitimate sessions. Two servers, each warmed by one inference: one holds 16 sessions in the
// middle of an inference (hello and first upload done), the other meets 16 clients of each
// hostile kind (silent connections, calls that declare the largest message and stop, calls left
// mid-message, hellos never followed up), then serves a legitimate client.
TEST(Rpc, HostileInputCostsNoMoreThanAsManyLegitimateSessions) {
  Fixture f;
  ServiceLimits limits;
  limits.evict_after = 0ms;
  ChildServer legit_server(limits), hostile_server(limits);
  ASSERT_NE(legit_server.port(), 0) << "the first server did not start";
  ASSERT_NE(hostile_server.port(), 0) << "the second server did not start";
  constexpr int kClients = 16;  // the per-address session cap: all of them come from loopback
  SeededRandom random = SeededRandom::from_counter(15);
  const auto warm = [&](const ChildServer& server) {
    GrpcTransport transport(server.target());
    RemoteClient client(transport, b8(), {}, random);
    EXPECT_EQ(client.infer(f.refs[0].pixels).logits, evaluate(f.model, f.refs[0].pixels));
    return server.rss();
  };
  const std::uint64_t legit0 = warm(legit_server), hostile0 = warm(hostile_server);
  // 16 legitimate sessions, each through its first round.
  GrpcTransport transport(legit_server.target());
  std::vector<Opening> open;
  for (int i = 0; i < kClients; ++i) {
    open.push_back(opening(200 + static_cast<std::uint64_t>(i)));
    Opening& o = open.back();
    const Welcome welcome = decode_welcome(transport.exchange(o.hello));
    const std::optional<Upload> up =
        o.client->start(welcome.model, f.refs[static_cast<std::size_t>(1 + i)].pixels);
    const Bytes reply = transport.exchange(encode_upload(welcome.session, *up, b8()));
    throw_if_error(reply);
    ASSERT_TRUE(o.client->receive(decode_download(reply, b8())).has_value()) << i;
  }
  std::this_thread::sleep_for(300ms);
  const std::uint64_t legit = legit_server.rss();
  // 16 of each hostile kind.
  const auto largest = static_cast<std::uint32_t>(
      max_request_bytes(f.model, safhire::rlwe::SecurityPolicy::require_128));
  std::vector<std::unique_ptr<RawConnection>> held;
  for (int i = 0; i < kClients; ++i) {
    held.push_back(std::make_unique<RawConnection>(hostile_server.port()));
    held.push_back(std::make_unique<RawConnection>(hostile_server.port()));
    held.back()->send(lying_call(largest, 1024));
    RawConnection gone(hostile_server.port());
    gone.send(lying_call(largest, 4096));
  }
  GrpcTransport spam(hostile_server.target());
  const Opening o = opening(16);
  for (int i = 0; i < kClients; ++i)
    ASSERT_EQ(message_type(spam.exchange(o.hello)), MessageType::welcome) << i;
  std::this_thread::sleep_for(300ms);
  const std::uint64_t hostile = hostile_server.rss();
  std::printf(
      "server RSS: %llu MiB warm, %llu MiB with %d legitimate sessions; %llu MiB warm, %llu MiB "
      "with %d clients of each hostile kind\n",
      static_cast<unsigned long long>(legit0 >> 20), static_cast<unsigned long long>(legit >> 20),
      kClients, static_cast<unsigned long long>(hostile0 >> 20),
      static_cast<unsigned long long>(hostile >> 20), kClients);
  EXPECT_LE(hostile, 2 * legit);
  // What the hostile clients added against what the sessions added (each server's own growth).
  EXPECT_LE(hostile - std::min(hostile, hostile0), 2 * (legit - std::min(legit, legit0)));
  GrpcTransport after(hostile_server.target());
  RemoteClient client(after, b8(), {}, random);
  EXPECT_EQ(client.infer(f.refs[20].pixels).logits, evaluate(f.model, f.refs[20].pixels));
}

// SIGTERM's path: shutdown lets the request in flight finish and answers it; later calls fail.
TEST(Rpc, ShutdownFinishesTheRequestInFlight) {
  Fixture f;
  // The hello is held in flight, inside the making of its backend, until the shutdown has begun
  // (polling for it raced with a fast hello on a loaded machine).
  std::promise<void> entered, gate;
  std::shared_future<void> open_gate = gate.get_future().share();
  std::atomic<bool> first{true};
  InferenceService service(
      f.model, safhire::rlwe::SecurityPolicy::require_128,
      [&](const safhire::rlwe::ParameterSet& params, const safhire::backend::Config& config,
          const safhire::rlwe::GaloisKeys& keys) {
        if (first.exchange(false)) {
          entered.set_value();
          open_gate.wait();
        }
        return safhire::backend::make_cpu_backend(params, config, keys, 1);
      });
  RpcServer server(service, loopback());
  GrpcTransport transport(target(server));
  const Opening o = opening(14);
  auto reply = std::async(std::launch::async, [&] { return transport.exchange(o.hello); });
  entered.get_future().wait();
  EXPECT_EQ(service.sessions(), 0U);  // not welcomed yet: the shutdown finds it in flight
  auto shutdown = std::async(std::launch::async, [&] { server.shutdown(30s); });
  std::this_thread::sleep_for(100ms);  // the shutdown waits for the request
  EXPECT_EQ(shutdown.wait_for(0s), std::future_status::timeout);
  gate.set_value();
  shutdown.get();
  EXPECT_EQ(message_type(reply.get()), MessageType::welcome);
  RpcClientOptions quick;
  quick.deadline = 2s;
  GrpcTransport late(target(server), quick);
  EXPECT_THROW(late.exchange(o.hello), safhire::Error);
}

// The child of ChildServer: `test_serve --child-server FD EVICT_MS` serves small-b8 on loopback
// with that eviction age, writes its port to FD and waits to be killed.
int serve_child(const char* fd_text, const char* evict_ms) {
  try {
    ServiceLimits limits;
    limits.evict_after = std::chrono::milliseconds(std::stoll(evict_ms));
    const int fd = std::stoi(fd_text);
    const Model model = Model::load(model_path("small-b8.sfhm"));  // the service refers to it
    InferenceService service(model, safhire::rlwe::SecurityPolicy::require_128, 1, limits);
    RpcServer server(service, loopback());
    const std::uint16_t port = server.port();
    if (::write(fd, &port, sizeof port) != sizeof port) return 1;
    ::close(fd);
    for (;;)
      ::pause();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "child server: %s\n", e.what());
  }
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 4 && std::string_view(argv[1]) == "--child-server")
    return serve_child(argv[2], argv[3]);
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
