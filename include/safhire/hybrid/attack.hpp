// The query attack on the server's per-round shuffle (Kim and Lee, "Shuffling is Not Enough",
// ESORICS 2026), run as a client against a live service, and the check of what it recovers
// against the true weights; noise flooding, the mitigation the server can turn on, and its
// accuracy cost in plaintext.
//
// A round's result is y = W x + b (plus the shortcuts of earlier rounds' activations), decrypted
// exactly and permuted by a fresh secret permutation. A client that uploads x = 0 in the round
// learns the multiset of b; uploading the basis vector e_k (1 in slot k, 0 elsewhere) it learns
// the multiset of W[:, j] + b for the input j behind slot k. d + 1 queries give every column of a
// d-input round, each as its sorted values: the shuffle hides which output is which, never the
// values. A probing session uploads zeros in the rounds it does not probe, so that shortcuts add
// nothing; rounds whose layer reads only its own input can be probed together, one query each
// per session (`together`), the others need a session per query.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "safhire/hybrid/transport.hpp"

namespace safhire::hybrid {

struct ShuffleAttackOptions {
  std::vector<std::uint32_t> rounds;  // the rounds probed, ascending (empty: every round)
  // Sessions per query. Round 0's responses (and every round's zero query) are averaged over
  // them; beyond round 0 each response is its own sample (a fresh permutation per session puts
  // a basis vector on an input picked at random, so there is nothing to average).
  std::uint32_t repeats = 1;
  bool together = true;  // every probed round in each session
  // Coupon collecting beyond round 0: after the pass, more sessions probe the rounds after the
  // first (a basis vector each) until `patience` sessions in a row find no new distinct sorted
  // column in any of them, or `max_sessions` is reached. 0: the pass only. Needs repeats == 1.
  std::uint64_t patience = 0;
  std::uint64_t max_sessions = 1'000'000;
};

// What the attack learned of one round: the sorted response to the zero query (the bias
// multiset) and its columns, each as its sorted values.
struct RoundRecovery {
  std::uint32_t round = 0;
  std::uint64_t queries = 0;  // (inputs + 1) * repeats, plus the collecting sessions' ones
  std::vector<std::int64_t> bias;
  // Round 0: one per input, in input order. Later rounds (`distinct_only`): each distinct column
  // seen once, with `hits[i]` the basis-vector queries that returned `columns[i]`; which input a
  // column belongs to stays unknown.
  std::vector<std::vector<std::int64_t>> columns;
  std::vector<std::uint64_t> hits;
  bool distinct_only = false;
  std::uint64_t last_new_session = 0;  // the session that found the last new distinct column
};

struct ShuffleAttackReport {
  std::vector<RoundRecovery> rounds;
  std::uint64_t sessions = 0;  // hellos that opened a session
  std::uint64_t retries = 0;   // hellos refused (a limit of the server) and sent again
};

// Runs the attack through `transport` with one key set for every session (the server cannot tell
// sessions of one client apart). A hello refused with resource_exhausted is retried after a
// pause. `progress` (optional) is called with the sessions done and the sessions needed.
ShuffleAttackReport attack_shuffle(
    Transport& transport, const rlwe::ParameterSet& params, InferenceOptions options,
    core::RandomSource& random, const ShuffleAttackOptions& attack,
    const std::function<void(std::uint64_t, std::uint64_t)>& progress = {});

// The check against the model (the plaintext evaluator's accumulators, round_accumulators, for
// the zero activation and each basis vector): how many recovered columns equal a true one
// (multisets compared, each true column matched at most once), how many are no true column at
// all, how many of the distinct true columns were seen, and whether the bias multiset is exact.
// Round 0 reads the image in the client's order, so its d + 1 queries give the exact multiset.
// Beyond it, slot k of an upload carries the input the previous round's permutation put there,
// fresh per session: each basis-vector query lands on a uniformly random input, so the attack
// sees true columns drawn with replacement (coupon collecting), not each column once. Telling
// which input a slot carries needs the session's earlier frames (the journal version's frame
// tracking), which this harness does not attempt: `patience` collects them instead.
struct RecoveryCheck {
  std::size_t columns = 0, exact_columns = 0, wrong_columns = 0;
  std::size_t distinct_columns = 0, distinct_found = 0;
  bool exact_bias = false;
  // Every column in its place (the pass over round 0), or every distinct one found and nothing
  // else (collected rounds).
  bool exact() const { return exact_bias && exact_columns == columns; }
  bool complete() const {
    return exact_bias && wrong_columns == 0 && distinct_found == distinct_columns;
  }
};
RecoveryCheck check_recovery(const Model& model, const RoundRecovery& recovered);

// The plaintext evaluator with noise flooding as the server applies it: every accumulator gains
// an integer uniform in [-bound, bound] and wraps to its round's b bits, as the decrypted value
// does. `count_correct_flooded`: of `images`, how many get their label, over `threads` workers,
// image i's noise from derive_seed(seed, i).
std::vector<std::int64_t> evaluate_flooded(const Model& model, std::span<const std::int64_t> input,
                                           std::uint32_t bound, core::RandomSource& random);
std::size_t count_correct_flooded(const Model& model,
                                  const std::vector<std::vector<std::int64_t>>& images,
                                  std::span<const std::int64_t> labels, std::uint32_t bound,
                                  const core::Seed& seed, unsigned threads);

}  // namespace safhire::hybrid
