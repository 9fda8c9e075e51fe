#include "safhire/hybrid/attack.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iterator>
#include <map>
#include <set>
#include <string>
#include <thread>

#include "safhire/core/parallel.hpp"
#include "safhire/core/random.hpp"

namespace safhire::hybrid {

namespace {

// A b-bit accumulator as the client decrypts it: centered in [-2^(b-1), 2^(b-1)).
std::int64_t wrap(std::int64_t v, std::uint32_t bits) {
  const auto modulus = std::uint64_t{1} << bits;
  const std::uint64_t y = static_cast<std::uint64_t>(v) & (modulus - 1);
  return (y >> (bits - 1)) != 0 ? static_cast<std::int64_t>(y - modulus)
                                : static_cast<std::int64_t>(y);
}

std::size_t inputs_of(const ModelInfo& info, std::uint32_t r) {
  return r == 0 ? info.input_size : info.outputs.at(r - 1);
}

// The hello, sent again after a pause while the server refuses it for a limit.
Welcome open_session(Transport& transport, const Bytes& hello, std::uint64_t& retries) {
  auto pause = std::chrono::milliseconds(100);
  while (true) {
    const Bytes reply = transport.exchange(hello);
    if (message_type(reply) == MessageType::error &&
        decode_error(reply).code == ErrorCode::resource_exhausted) {
      ++retries;
      std::this_thread::sleep_for(pause);
      pause = std::min(pause * 2, std::chrono::milliseconds(2000));
      continue;
    }
    throw_if_error(reply);
    return decode_welcome(reply);
  }
}

}  // namespace

ShuffleAttackReport attack_shuffle(
    Transport& transport, const rlwe::ParameterSet& params, InferenceOptions options,
    core::RandomSource& random, const ShuffleAttackOptions& attack,
    const std::function<void(std::uint64_t, std::uint64_t)>& progress) {
  require(attack.repeats >= 1, ErrorCode::invalid_argument, "attack: at least one repeat");
  require(attack.patience == 0 || attack.repeats == 1, ErrorCode::invalid_argument,
          "attack: collecting columns (patience) needs one repeat");
  Client client(params, options, random);
  Hello hello{params.id, options, {}};
  for (std::uint64_t k : client.evaluation_keys().elements())
    hello.keys.push_back(client.evaluation_keys().at(k));
  const Bytes hello_bytes = encode_hello(hello, params);

  ShuffleAttackReport report;
  // The first session also tells the model's shape (its welcome).
  Welcome welcome = open_session(transport, hello_bytes, report.retries);
  const ModelInfo info = welcome.model;
  std::vector<std::uint32_t> rounds = attack.rounds;
  if (rounds.empty())
    for (std::uint32_t r = 0; r < info.outputs.size(); ++r)
      rounds.push_back(r);
  require(std::is_sorted(rounds.begin(), rounds.end()) &&
              std::adjacent_find(rounds.begin(), rounds.end()) == rounds.end() &&
              rounds.back() < info.outputs.size(),
          ErrorCode::invalid_argument, "attack: rounds ascending, distinct, of the model");

  // Each pass is a set of rounds probed together; query q of a pass: 0 the zero activation,
  // q >= 1 the basis vector e_(q-1) where the round has that many inputs (zeros past them).
  std::vector<std::vector<std::uint32_t>> passes;
  if (attack.together) {
    passes.push_back(rounds);
  } else {
    for (std::uint32_t r : rounds)
      passes.push_back({r});
  }
  std::uint64_t needed = 0;
  for (const auto& pass : passes) {
    std::size_t most = 0;
    for (std::uint32_t r : pass)
      most = std::max(most, inputs_of(info, r) + 1);
    needed += most * attack.repeats;
  }

  // Sums of sorted responses over the repeats: round 0's per query, later rounds' of the zero
  // query only. Beyond round 0 every basis-vector response is a column of an input picked at
  // random: each distinct one is counted, with the session that found a round's last new one.
  std::map<std::uint32_t, std::vector<std::vector<std::int64_t>>> sums;
  for (std::uint32_t r : rounds)
    sums[r].assign(r == 0 ? inputs_of(info, r) + 1 : 1,
                   std::vector<std::int64_t>(info.outputs[r], 0));
  std::vector<std::uint32_t> later;
  std::copy_if(rounds.begin(), rounds.end(), std::back_inserter(later),
               [](std::uint32_t r) { return r > 0; });
  std::map<std::uint32_t, std::map<std::vector<std::int64_t>, std::uint64_t>> distinct;
  std::map<std::uint32_t, std::uint64_t> last_new, extra_queries;
  const auto collect = [&](std::uint32_t r, const std::vector<std::int64_t>& sorted) {
    if (++distinct[r][sorted] > 1) return false;
    last_new[r] = report.sessions;
    return true;
  };
  // One session through every round up to the last probed one: `query(r, values)` fills a
  // probed round's upload (zeros elsewhere) and says whether to keep its response, which
  // `seen(r, sorted)` then receives sorted.
  bool fresh = true;  // the welcome above is still unused
  const auto run_session = [&](const std::vector<std::uint32_t>& probe, const auto& query,
                               const auto& seen) {
    if (!fresh) welcome = open_session(transport, hello_bytes, report.retries);
    fresh = false;
    ++report.sessions;
    for (std::uint32_t r = 0; r <= probe.back(); ++r) {
      std::vector<std::int64_t> values(inputs_of(info, r), 0);
      const bool probed = std::find(probe.begin(), probe.end(), r) != probe.end();
      const bool keep = probed && query(r, values);
      const Upload up = r == 0 ? client.start(info, values) : client.upload(r, values);
      const Bytes reply = transport.exchange(encode_upload(welcome.session, up, params));
      throw_if_error(reply);
      (void)client.receive(decode_download(reply, params));
      if (!keep) continue;
      std::vector<std::int64_t> response = client.seen().at(r);
      std::sort(response.begin(), response.end());
      seen(r, response);
    }
  };

  for (const auto& pass : passes) {
    std::size_t queries = 0;
    for (std::uint32_t r : pass)
      queries = std::max(queries, inputs_of(info, r) + 1);
    for (std::size_t q = 0; q < queries; ++q) {
      for (std::uint32_t rep = 0; rep < attack.repeats; ++rep) {
        run_session(
            pass,
            [&](std::uint32_t, std::vector<std::int64_t>& values) {
              if (q >= 1 && q - 1 < values.size()) values[q - 1] = 1;
              return q <= values.size();
            },
            [&](std::uint32_t r, const std::vector<std::int64_t>& response) {
              if (r > 0 && q > 0) {
                collect(r, response);
                return;
              }
              std::vector<std::int64_t>& sum = sums[r][q];
              for (std::size_t i = 0; i < sum.size(); ++i)
                sum[i] += response[i];
            });
        if (progress) progress(report.sessions, needed);
      }
    }
  }

  // Collecting: each session probes every later round (or, not together, one in turn) with a
  // basis vector, zeros elsewhere, until `patience` sessions in a row add nothing new.
  std::uint64_t quiet = 0;
  for (std::uint64_t extra = 0; !later.empty() && attack.patience > 0 && quiet < attack.patience &&
                                report.sessions < attack.max_sessions;
       ++extra) {
    const std::vector<std::uint32_t> probe =
        attack.together ? later : std::vector<std::uint32_t>{later[extra % later.size()]};
    bool found = false;
    run_session(
        probe,
        [&](std::uint32_t, std::vector<std::int64_t>& values) {
          values[extra % values.size()] = 1;
          return true;
        },
        [&](std::uint32_t r, const std::vector<std::int64_t>& response) {
          ++extra_queries[r];
          found = collect(r, response) || found;
        });
    quiet = found ? 0 : quiet + 1;
    if (progress) progress(report.sessions, report.sessions + attack.patience - quiet);
  }
  for (std::uint32_t r : rounds) {
    RoundRecovery got;
    got.round = r;
    got.queries = (inputs_of(info, r) + 1) * std::uint64_t{attack.repeats};
    for (std::size_t q = 0; q < sums[r].size(); ++q) {
      std::vector<std::int64_t> mean(sums[r][q].size());
      for (std::size_t i = 0; i < mean.size(); ++i)
        mean[i] = std::llround(static_cast<double>(sums[r][q][i]) / attack.repeats);
      if (q == 0) {
        got.bias = std::move(mean);
      } else {
        got.columns.push_back(std::move(mean));
      }
    }
    if (r > 0) {
      got.distinct_only = true;
      for (const auto& [column, hits] : distinct[r]) {
        got.columns.push_back(column);
        got.hits.push_back(hits);
      }
      got.queries += extra_queries[r];
      got.last_new_session = last_new[r];
    }
    report.rounds.push_back(std::move(got));
  }
  return report;
}

RecoveryCheck check_recovery(const Model& model, const RoundRecovery& recovered) {
  const std::uint32_t r = recovered.round;
  require(r < model.rounds().size(), ErrorCode::invalid_argument, "check: no such round");
  const std::uint32_t bits = model.rounds()[r].bits;
  std::vector<std::vector<std::int64_t>> acts;
  for (std::uint32_t s = 0; s <= r; ++s)
    acts.emplace_back(model.activation(s).size(), 0);
  const auto truth = [&] {
    std::vector<std::int64_t> acc = round_accumulators(model, r, acts);
    for (std::int64_t& v : acc)
      v = wrap(v, bits);
    std::sort(acc.begin(), acc.end());
    return acc;
  };
  RecoveryCheck check;
  check.exact_bias = truth() == recovered.bias;
  std::map<std::vector<std::int64_t>, std::size_t> columns;
  for (std::size_t j = 0; j < acts[r].size(); ++j) {
    acts[r][j] = 1;
    ++columns[truth()];
    acts[r][j] = 0;
  }
  check.columns = acts[r].size();
  check.distinct_columns = columns.size();
  std::set<std::vector<std::int64_t>> found;
  for (const auto& column : recovered.columns) {
    const auto it = columns.find(column);
    if (it == columns.end()) {
      ++check.wrong_columns;
      continue;
    }
    found.insert(column);
    if (it->second == 0) continue;
    --it->second;
    ++check.exact_columns;
  }
  check.distinct_found = found.size();
  if (recovered.distinct_only || recovered.columns.size() != check.columns) check.exact_columns = 0;
  return check;
}

std::vector<std::int64_t> evaluate_flooded(const Model& model, std::span<const std::int64_t> input,
                                           std::uint32_t bound, core::RandomSource& random) {
  require_input(model, input);
  std::vector<std::vector<std::int64_t>> acts;
  acts.emplace_back(input.begin(), input.end());
  for (std::size_t r = 0; r < model.rounds().size(); ++r) {
    const Round& round = model.rounds()[r];
    std::vector<std::int64_t> acc = round_accumulators(model, r, acts);
    for (std::int64_t& v : acc)
      v = wrap(v + (bound == 0 ? 0 : core::uniform_in(random, -std::int64_t{bound}, bound)),
               round.bits);
    if (!round.requant) return acc;
    for (std::int64_t& v : acc)
      v = requantize(v, *round.requant, model.activation_max());
    acts.push_back(std::move(acc));
  }
  throw Error(ErrorCode::internal, "model without a last round");
}

std::size_t count_correct_flooded(const Model& model,
                                  const std::vector<std::vector<std::int64_t>>& images,
                                  std::span<const std::int64_t> labels, std::uint32_t bound,
                                  const core::Seed& seed, unsigned threads) {
  require(images.size() == labels.size(), ErrorCode::invalid_argument,
          "count_correct_flooded: as many labels as images");
  std::vector<unsigned char> right(images.size());
  core::parallel_for(images.size(), threads, [&](std::size_t i, unsigned) {
    core::SeededRandom noise(core::derive_seed(seed, i, "SFHfloda"));
    const std::size_t c = predicted_class(evaluate_flooded(model, images[i], bound, noise));
    right[i] = labels[i] >= 0 && c == static_cast<std::size_t>(labels[i]);
  });
  return static_cast<std::size_t>(std::count(right.begin(), right.end(), 1));
}

}  // namespace safhire::hybrid
