// hangdx/ingest/messages/fields.h
// The capture vocabulary of the message catalogue: the named groups a row's
// pattern may use, and what each means in the model, normalized so that
// every producer's spelling lands in one form:
//   - ranks, seqs, sizes: integers (`opcount` also in hex, as NCCL prints it);
//   - `timeout_s` / `elapsed_s` become milliseconds (timeout_ms, elapsed_ms);
//   - `op`: lower snake case of the collective (ALLREDUCE, AllReduce,
//     allreduce, HcclAllReduce -> all_reduce; NormalizeOpName);
//   - `signal`: a number (SIGKILL and 9 -> 9);
//   - `shape`: without spaces and outer brackets ("[20, 10]" -> "20,10");
//   - an integer printed as -1 (a producer's "none") leaves the field unset;
//   - `ranks`, `ready_ranks`: lists from "0, 1", "[0,1]", "{0 1}", "0-3"
//     (ranges expanded, at most kMaxListRanks entries).
//
//   MessageFields f;
//   std::string err;
//   SetField("timeout_s", "1800", &f, &err);  // f.timeout_ms == 1800000
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace hangdx::ingest::messages {

// A list capture never expands past this many ranks ("0-4294967295" is
// hostile or a typo, not a list to allocate).
inline constexpr size_t kMaxListRanks = 1 << 16;

// The captures of one matched message; -1 / "" / empty where it printed none.
struct MessageFields {
  int64_t rank = -1, pg_rank = -1, local_rank = -1, reporter = -1;
  int64_t world_size = -1, nranks = -1;
  int64_t seq = -1, p2p_seq = -1, opcount = -1;
  int64_t numel_in = -1, numel_out = -1, count = -1, root = -1;
  int64_t peer = -1, peer_local = -1;
  int64_t timeout_ms = -1, elapsed_ms = -1;
  int64_t signal = -1, pid = -1;
  std::optional<int64_t> exit_code;  // may be negative (-9: killed by signal 9)
  int64_t enqueued = -1, started = -1, completed = -1;
  std::string pg, pg_desc, comm, op, dtype, shape, tensor, peer_addr, error, host, device;
  std::string setting, value, timestamp;
  std::vector<int64_t> ranks, ready_ranks;
};

// True when `name` is in the vocabulary.
bool IsKnownField(std::string_view name);
// The vocabulary, in documentation order.
const std::vector<std::string_view>& KnownFields();

// Sets the field a capture group names from its text. Scalars keep the
// first value set (a block's later lines do not overwrite); lists append.
// False, with *error, when the text does not parse as that field (an
// integer field holding "abc"); unknown names are refused too.
bool SetField(std::string_view name, std::string_view text, MessageFields* f, std::string* error);

// Unsets the field a capture group names (a scalar to unset, a list to
// empty), so that the next SetField of it replaces instead of keeping or
// appending. Unknown names are ignored.
void ClearField(std::string_view name, MessageFields* f);

// The fields that are set, as "name" -> normalized text (lists "0,1,5",
// timeouts in ms): what a row's `expect` line is compared with.
std::map<std::string, std::string> FieldsToMap(const MessageFields& f);

// all_reduce, broadcast, all_gather, reduce_scatter, all_to_all, send,
// recv, barrier, ... from any producer's spelling; unknown names become
// lower snake case ("FooBar" -> "foo_bar").
std::string NormalizeOpName(std::string_view op);

// Parses a rank list ("0, 1", "[0,1]", "{0 1}", "0-3", "0 1 2"); false on
// junk or past kMaxListRanks entries.
bool ParseRankList(std::string_view text, std::vector<int64_t>* out);

}  // namespace hangdx::ingest::messages
