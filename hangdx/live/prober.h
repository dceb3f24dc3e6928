// hangdx/live/prober.h
// Prober: asks every worker of a job for its progress, and the ranks of a
// stall for their details, through one HttpFanout (fanout.h).
//
//   Prober p({});
//   p.SetWorker(3, *ParseUrl("http://node03:41873"));
//   for (const ProbeReply& r : p.Probe(5s)) ... r.body is Flight Recorder JSON ...
//   Details d = p.Fetch({0, 1, 2, 3}, 5s);   // full Flight Recorder + stacks
//
// Which handler: torch's worker server lists its handlers at GET
// /handler/. When it has dump_nccl_trace_json (a CUDA build), the probe is
// dump_nccl_trace_json?includecollectives=false (pg_status and pg_config,
// no entries) and the details dump_nccl_trace_json?includecollectives=true;
// otherwise (gloo, a CPU build) both are fr_trace_json, which has no such
// switch, so a gloo probe carries the whole (bounded) ring. The first
// probe of a worker asks for the list too, and uses fr_trace_json.
// Not thread-safe.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "hangdx/live/fanout.h"
#include "hangdx/live/url.h"
#include "hangdx/model/job.h"

namespace hangdx::live {

using model::Rank;

struct ProbeReply {
  Rank rank = -1;
  bool ok = false;    // a 200 answer
  int status = 0;     // HTTP status, 0 for none
  std::string body;   // the Flight Recorder JSON
  std::string error;  // why not ok
  double seconds = 0;
};

struct Details {
  std::map<Rank, std::string> fr, stacks;
  std::map<Rank, std::string> unanswered;  // rank -> why it gave no Flight Recorder
};

class Prober {
 public:
  explicit Prober(FanoutOptions options = {}) : fan_(options) {}

  // Adds rank `rank`'s worker, or moves it to a new address.
  void SetWorker(Rank rank, const Endpoint& endpoint);
  bool Has(Rank rank) const { return workers_.count(rank) > 0; }
  // True when `rank`'s worker is probed through NCCL's dump
  // (dump_nccl_trace_json): its pg_status counts collective seqs, which
  // Flight Recorder entries carry too. gloo's counts op ids, P2P ops
  // included; unknown before the worker's first answer.
  bool CountsCollectives(Rank rank) const {
    auto it = workers_.find(rank);
    return it != workers_.end() && it->second.kind == Kind::kNccl;
  }
  // Takes an agent's word (its rank record, state_store.h) that `rank`'s
  // worker serves NCCL's dump: a coordinator, which never probes, then
  // fetches its details there and may take a first look from its counters.
  // Nothing for a rank without a worker, or whose kind its own answers told.
  void MarkNccl(Rank rank);
  std::vector<Rank> Ranks() const;
  bool empty() const { return workers_.empty(); }
  std::string Url(Rank rank) const;

  // Gets a 200 probe answer's body the moment it arrives, with its rank;
  // it may take the body (the ProbeReply then has what it left).
  using Digest = std::function<void(Rank rank, std::string* body)>;

  // One probe of every worker, in rank order; each answer goes through
  // `digest` first when one is given. `give_up` ends the round early
  // (HttpFanout::Run): the workers not answered by then fail.
  std::vector<ProbeReply> Probe(std::chrono::milliseconds timeout, const Digest& digest = nullptr,
                                const HttpFanout::GiveUp& give_up = nullptr);
  // Full Flight Recorder and dump_traceback of `ranks` (those with a worker).
  Details Fetch(const std::vector<Rank>& ranks, std::chrono::milliseconds timeout);

 private:
  enum class Kind { kUnknown, kGeneric, kNccl };
  struct Worker {
    size_t endpoint = 0;
    Endpoint address;
    Kind kind = Kind::kUnknown;
  };
  std::string ProbePath(const Worker& w) const;
  std::string DetailPath(const Worker& w) const;

  HttpFanout fan_;
  std::map<Rank, Worker> workers_;
};

}  // namespace hangdx::live
