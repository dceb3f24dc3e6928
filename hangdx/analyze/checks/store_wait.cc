#include "hangdx/analyze/checks/store_wait.h"

#include <algorithm>
#include <map>
#include <set>
#include <string_view>

#include "hangdx/analyze/checks/finding_util.h"
#include "hangdx/base/rank_set.h"

namespace hangdx::analyze {

using model::LogEvent;
using model::Rank;

namespace {

// The rows whose `peer` is the rank whose store key was never set. Only
// these: a store wait elsewhere (a barrier key, an NCCL unique id) names no
// rank, or has rows and checks of its own.
bool IsConnectWait(const LogEvent& e) {
  return e.kind == LogEvent::Kind::kTimeout && e.peer >= 0 && e.message_id == "torch.gloo.connect_wait_timeout";
}

// The store host's "Timed out after 6 seconds waiting for clients. 2/3
// clients joined.": the host is itself a waiter (for the clients that never
// connected), never the rank its key's waiters should be told to look at.
bool IsHostWait(const LogEvent& e) {
  return e.kind == LogEvent::Kind::kTimeout && e.message_id == "torch.store.waiting_for_clients";
}

// What the store hosts said: who they are, the world they waited for (the
// largest named) and how many clients joined (the fewest named).
struct HostWait {
  std::set<Rank> hosts;
  int64_t world = -1;
  int64_t joined = -1;
  std::vector<Evidence> lines;
};

struct PgWait {
  std::vector<Rank> waiters;  // global ranks that logged the wait, in dump order
  std::set<Rank> awaited;     // the keys' ranks
  bool pg_local = false;      // awaited counts inside the pg
  std::vector<Evidence> lines;
};

std::string PgWords(const std::string& pg) {
  return pg == "0" ? "the default pg (init_process_group)" : "pg " + pg + " (new_group)";
}

Finding Describe(const std::string& pg, const PgWait& w, const std::vector<Rank>& culprits) {
  Finding f;
  f.kind = Kind::kMissingRank;
  f.severity = Severity::kError;
  f.hang = true;
  f.pg_name = pg;
  f.op = pg == "0" ? "init_process_group" : "new_group";
  f.culprit_ranks = culprits;
  f.ranks_are_pg_local = w.pg_local;
  std::string who = RankWords(culprits) + (w.pg_local ? " of pg " + pg + " (ranks inside the pg; which global " +
                                                            Verb(culprits, "rank it is", "ranks they are") +
                                                            " no file says)"
                                                      : "");
  f.roles.push_back({"waited for its address", w.waiters});
  f.roles.push_back({"never reached the pg's creation", culprits});
  f.summary = RankWords(w.waiters) + " timed out creating " + PgWords(pg) + ": " +
              Verb(w.waiters, "it", "they") + " waited in the store for the gloo address of " + who +
              ", which was never set: " + Verb(culprits, "it", "they") + " never reached " + f.op +
              " (started late, hung or died before it)";
  f.details.push_back(
      "gloo connects a pg's members through the store: each sets the key of its own rank and waits for the "
      "others'; the key a waiter timed out on names the member that never arrived");
  f.evidence = w.lines;
  std::string whom = RankWords(culprits) + (w.pg_local ? " of pg " + pg : "");
  f.fix_hint = "look at what " + whom + " did before " + f.op +
               ": a crash, a slow start (data loading, a download), or a rank-dependent branch that skips it; the "
               "waiters' timeouts are its consequence";
  return f;
}

// "... waiting for clients. 2/3 clients joined." -> joined 2, world 3. The
// row's pattern matched the line, so the shape is known; LogEvent carries
// no counts, so they are read back from its text here.
bool ReadJoined(const std::string& text, int64_t* joined, int64_t* world) {
  static constexpr std::string_view kTail = " clients joined.";
  size_t end = text.rfind(kTail);
  if (end == std::string::npos) return false;
  size_t slash = text.rfind('/', end);
  size_t start = text.rfind(' ', slash);
  if (slash == std::string::npos || start == std::string::npos) return false;
  auto num = [](std::string_view v, int64_t* out) {
    if (v.empty() || v.size() > 9) return false;
    int64_t n = 0;
    for (char c : v) {
      if (c < '0' || c > '9') return false;
      n = n * 10 + (c - '0');
    }
    *out = n;
    return true;
  };
  std::string_view t(text);
  return num(t.substr(start + 1, slash - start - 1), joined) && num(t.substr(slash + 1, end - slash - 1), world);
}

HostWait CollectHosts(const RankAnalysis& a) {
  HostWait h;
  for (const auto& d : a.job.dumps) {
    if (d.rank < 0) continue;
    for (const auto& e : d.events) {
      if (!IsHostWait(e)) continue;
      h.hosts.insert(d.rank);
      int64_t joined = -1, world = -1;
      if (ReadJoined(e.message, &joined, &world)) {
        h.world = std::max(h.world, world);
        h.joined = h.joined < 0 ? joined : std::min(h.joined, joined);
      }
      if (h.lines.size() < kEvidencePerSide)
        h.lines.push_back({e.file, d.rank, -1, "line " + std::to_string(e.line) + ": " + e.message.substr(0, 300)});
    }
  }
  return h;
}

// The store host timed out waiting for clients and (maybe) other ranks
// timed out waiting for the host's address. The missing clients are the
// ranks of the world that show no sign of having joined: neither the host
// nor a rank that waited in the store. When there are more of them than
// the host's count says are missing, which ones the logs cannot tell: the
// finding names them all as candidates and says so.
Finding DescribeMissingClients(const PgWait& w, const HostWait& h, const std::set<Rank>& waiters) {
  int64_t world = h.world;
  std::vector<Rank> candidates;
  for (Rank r = 0; r < world && r <= model::kMaxRank; ++r)
    if (!h.hosts.count(r) && !waiters.count(r)) candidates.push_back(r);
  int64_t missing = h.joined >= 0 && world > h.joined ? world - h.joined : -1;
  bool exact = missing >= 0 && static_cast<int64_t>(candidates.size()) == missing;
  std::vector<Rank> hosts(h.hosts.begin(), h.hosts.end());
  std::vector<Rank> others;
  for (Rank r : w.waiters)
    if (!h.hosts.count(r)) others.push_back(r);
  Finding f;
  f.kind = Kind::kMissingRank;
  f.severity = Severity::kError;
  f.hang = true;
  f.pg_name = "0";
  f.op = "init_process_group";
  // Named as culprits only when the count proves them; else a tie between
  // candidates, as the host's message names nobody.
  if (exact) {
    f.culprit_ranks = candidates;
  } else {
    f.kind = Kind::kUndecided;
    f.candidates = candidates;
    f.would_decide = "each candidate's own log or the launcher's record of it: a rank that started and printed "
                     "nothing past its start, or was never started, is a missing client";
  }
  f.roles.push_back({"hosts the store, waited for clients", hosts});
  if (!others.empty()) f.roles.push_back({"waited for the store host's address", others});
  f.roles.push_back({exact ? "never joined the store" : "may not have joined the store (candidates)", candidates});
  std::string joined = h.joined >= 0 && world > 0 ? std::to_string(h.joined) + " of " + std::to_string(world)
                                                  : "not all";
  f.summary = RankWords(hosts) + ", the TCPStore host, timed out in init_process_group waiting for clients: only " +
              joined + " ranks joined";
  if (!others.empty())
    f.summary += "; " + RankWords(others) + " waited for " + Verb(hosts, "its", "their") +
                 " gloo address, which it never set because it was still waiting";
  if (candidates.empty())
    f.summary += "; which ranks never joined no file says (every rank with a file joined, and the world size is "
                 "unknown)";
  else if (exact)
    f.summary += ": " + RankWords(candidates) + " never joined (started late, hung or died before init_process_group)";
  else
    f.summary += ": which " + (missing >= 0 ? std::to_string(missing) + " of them" : std::string("ranks")) +
                 " never joined the logs cannot tell; the candidates are the ranks that left no sign of joining: " +
                 RankWords(candidates);
  f.details.push_back(
      "with world_size given, the store host (rank 0 under env:// init) waits for every rank to connect before "
      "init_process_group goes on; the ranks that wait for its address (key .../0) wait for it, and it waits for the "
      "clients that never connected: those are the ranks to look at, not the host");
  f.evidence = h.lines;
  for (const auto& e : w.lines)
    if (f.evidence.size() < 2 * kEvidencePerSide) f.evidence.push_back(e);
  f.fix_hint = "look at what " + (candidates.empty() ? std::string("the ranks missing from the logs") : RankWords(candidates)) +
               " did before init_process_group: a crash, a slow start, a wrong MASTER_ADDR/MASTER_PORT, or a launcher "
               "that never started " + Verb(candidates, "it", "them") + "; the host's and the waiters' timeouts are the consequence";
  return f;
}

// The ranks whose TCPStore client could not reach the server at all, and
// the address they tried.
struct ConnectFailures {
  std::vector<Rank> clients;
  std::string addr;
  std::vector<Evidence> lines;
};

// True when `d`'s client gave up on the store: its last connect failure is
// not one attempt that is retried (torch's "- retrying (try=0 ..." and
// "failed to connect to ... (errno: 111" lines precede a connect that may
// then succeed), and it recorded no op (a rank that went on connected).
bool GaveUpOnTheStore(const model::RankDump& d) {
  if (!d.ops.empty()) return false;
  const LogEvent* last = nullptr;
  for (const auto& e : d.events)
    if (IsStoreConnectFailure(e)) last = &e;
  return last && last->message_id != "torch.socket.client_connect_retrying" &&
         last->message_id != "torch.socket.client_failed_to_connect";
}

ConnectFailures CollectConnectFailures(const RankAnalysis& a) {
  ConnectFailures c;
  for (const auto& d : a.job.dumps) {
    if (d.rank < 0 || !GaveUpOnTheStore(d)) continue;
    for (const auto& e : d.events) {
      if (!IsStoreConnectFailure(e)) continue;
      if (c.addr.empty()) c.addr = e.peer_addr;
      if (!c.clients.empty() && c.clients.back() == d.rank) continue;  // each client's first line only
      c.clients.push_back(d.rank);
      if (c.lines.size() < kEvidencePerSide)
        c.lines.push_back({e.file, d.rank, -1, "line " + std::to_string(e.line) + ": " + e.message.substr(0, 300)});
    }
  }
  return c;
}

// Store clients that never reached the server, and no server that says it
// waits for clients (testdata/torch/store_host_waits_late_host: the host,
// rank 0, sleeps before init_process_group). Under env:// init without
// torchrun, rank 0 creates the server (torch/distributed/rendezvous.py,
// _create_c10d_store: start_daemon = rank == 0; under torchrun's agent
// store, is_master=False on every rank):
// when rank 0 is not among the clients that failed and has not gone past
// init (no recorded op), it is the rank that never came, a missing_rank.
// When rank 0 failed to connect as well, the server is not a rank's
// (torchrun's agent, a store of its own): undecided, naming no rank.
Finding DescribeUnreachedStore(const RankAnalysis& a, const ConnectFailures& c) {
  Finding f;
  f.severity = Severity::kError;
  f.hang = true;
  f.pg_name = "0";
  f.op = "init_process_group";
  f.evidence = c.lines;
  f.roles.push_back({"could not connect to the store", c.clients});
  const std::string at = c.addr.empty() ? "" : " at " + c.addr;
  f.summary = RankWords(c.clients) + " could not connect to the TCPStore server" + at +
              " in init_process_group: the server never answered";
  const model::RankDump* zero = a.job.Find(0);
  bool zero_failed = std::binary_search(c.clients.begin(), c.clients.end(), Rank{0});
  if (!zero_failed && !(zero && !zero->ops.empty())) {
    f.kind = Kind::kMissingRank;
    f.culprit_ranks = {0};
    f.roles.push_back({"hosts the store (env:// init), never started it", {0}});
    f.summary += "; rank 0, which creates the server under env:// init, had not started it (it started late, "
                 "hung or died before init_process_group)";
    f.details.push_back(
        "under torchrun the server is the agent's on the first node, not rank 0's: if the job ran under "
        "torchrun, look at that node's agent instead");
    f.fix_hint = "look at what rank 0 did before init_process_group (a slow start, a crash, a download), and that "
                 "MASTER_ADDR/MASTER_PORT name its host; the clients' timeouts are the consequence";
    return f;
  }
  f.kind = Kind::kUndecided;
  f.would_decide = "the log of the process that should host the store (rank 0 under env:// init, torchrun's agent on "
                   "the first node): whether it started, and on which address";
  f.summary += zero_failed ? "; rank 0 failed too, so the server is not a rank's (torchrun's agent, or a store of its own)"
                           : "; rank 0 went past init_process_group, so the clients tried another address";
  f.fix_hint = "check that the store's host is up and that MASTER_ADDR/MASTER_PORT (or the rendezvous endpoint) "
               "name it and are reachable from every node (firewall, DNS)";
  return f;
}

}  // namespace

void StoreWaitCheck(const RankAnalysis& a, FindingSink* sink) {
  std::map<std::string, PgWait> by_pg;
  for (const auto& d : a.job.dumps) {
    if (d.rank < 0) continue;
    for (const auto& e : d.events) {
      if (!IsConnectWait(e)) continue;
      PgWait& w = by_pg[e.pg];
      if (w.waiters.empty() || w.waiters.back() != d.rank) w.waiters.push_back(d.rank);
      w.awaited.insert(e.peer);
      w.pg_local = w.pg_local || e.ranks_pg_local;
      if (w.lines.size() < kEvidencePerSide)
        w.lines.push_back({e.file, d.rank, -1, "line " + std::to_string(e.line) + ": " + e.message.substr(0, 300)});
    }
  }
  HostWait host = CollectHosts(a);
  if (host.world < 0) host.world = a.world.size;
  // A world too large to list rank by rank (a misread line) lists none.
  if (host.world > (int64_t{1} << 16)) host.world = -1;
  // The host alone said something (no client's file, or no client reached
  // the pg's creation): its missing clients are still the finding.
  if (!host.hosts.empty() && !by_pg.count("0")) by_pg["0"].waiters.assign(host.hosts.begin(), host.hosts.end());
  // Clients that never reached the store and no host that waits: the
  // server was never up.
  if (host.hosts.empty()) {
    ConnectFailures c = CollectConnectFailures(a);
    if (!c.clients.empty() && !by_pg.count("0")) sink->Add(DescribeUnreachedStore(a, c));
  }
  for (auto& [pg, w] : by_pg) {
    std::vector<Rank> culprits;
    std::set<Rank> waiters(w.waiters.begin(), w.waiters.end());
    // A waiter is alive and in the pg's creation; in pg-local numbering the
    // waiters' own numbers are unknown, so nothing is taken out. A store
    // host that says it waits for clients is a waiter too: the default pg's
    // waiters for its address wait for what it waits for.
    bool host_awaited = false;
    for (Rank r : w.awaited) {
      if (!w.pg_local && host.hosts.count(r)) {
        host_awaited = true;
        continue;
      }
      if (w.pg_local || !waiters.count(r)) culprits.push_back(r);
    }
    if (pg == "0" && !host.hosts.empty() && (host_awaited || w.awaited.empty())) {
      sink->Add(DescribeMissingClients(w, host, waiters));
      continue;
    }
    if (culprits.empty()) continue;
    sink->Add(Describe(pg, w, culprits));
  }
}

}  // namespace hangdx::analyze
