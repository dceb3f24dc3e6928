#include "hangdx/analyze/world.h"

#include <algorithm>
#include <set>
#include <string>

#include "hangdx/base/rank_set.h"
#include "hangdx/model/history.h"

namespace hangdx::analyze {

namespace {

// The world size the dumps record: a default pg config's member list. gloo
// keys its one pg_config entry '' and lists the world there while only the
// default pg exists (torch 2.13, testdata/torch/README.md). -1 when none.
int64_t RecordedWorldSize(const model::Job& job) {
  int64_t w = -1;
  for (const auto& d : job.dumps)
    for (const auto& [name, cfg] : d.pg_config)
      if ((name == "0" || name.empty() || cfg.desc == "default_pg") && cfg.ranks_known)
        w = std::max<int64_t>(w, cfg.ranks.back() + 1);
  return w;
}

// One more than the highest global rank message `e` names, 0 when none.
int64_t HighestNamed(const model::LogEvent& e) {
  int64_t n = 0;
  if (e.ranks_pg_local) return n;
  for (const auto* list : {&e.ranks, &e.ready_ranks})
    for (model::Rank r : *list) n = std::max(n, r + 1);
  return n;
}

// One more than the highest rank any input names (a dump, an unreadable
// file, a wait, a pg config, a message naming global ranks).
int64_t HighestRankSeen(const model::Job& job) {
  int64_t seen = 0;
  for (const auto& [r, file] : job.unreadable) seen = std::max(seen, r + 1);
  for (const auto& e : job.job_events) seen = std::max(seen, HighestNamed(e));
  for (const auto& d : job.dumps) {
    seen = std::max(seen, d.rank + 1);
    if (d.wait)
      for (model::Rank r : d.wait->waiting_for) seen = std::max(seen, r + 1);
    // Global ranks a message names (a stall report's missing and ready
    // ranks) are ranks of the job.
    for (const auto& e : d.events) seen = std::max(seen, HighestNamed(e));
    // A pg of N members (a size without its members) needs a world of N.
    for (const auto& [name, cfg] : d.pg_config)
      seen = std::max({seen, cfg.ranks.empty() ? 0 : cfg.ranks.back() + 1, cfg.size});
  }
  return seen;
}

}  // namespace

World ResolveWorld(const model::Job& job, model::DiagnosticSink* diags) {
  World world;
  int64_t w = job.world_size;
  world.inferred = w < 0;
  const char* source = w >= 0 ? "--world-size" : "the default pg config";
  if (w < 0) {
    w = RecordedWorldSize(job);
    if (w >= 0) world.inferred = false;
  } else if (int64_t recorded = RecordedWorldSize(job); recorded > 0 && recorded < w) {
    // The user's word is kept, but a size past the one the dumps record
    // makes every rank above it a rank without data, named as a culprit
    // (the fresh-user tester's --world-size 5 on a 3-rank job's dumps).
    diags->Add(model::Diagnostic::Severity::kWarning, "",
               "--world-size " + std::to_string(w) + " but the dumps' default pg lists " +
                   std::to_string(recorded) + " ranks (0-" + std::to_string(recorded - 1) + "): ranks " +
                   std::to_string(recorded) + (w - recorded > 1 ? "-" + std::to_string(w - 1) : "") +
                   " are taken as ranks without data; drop --world-size if the job had " + std::to_string(recorded) +
                   " ranks");
  }
  int64_t seen = HighestRankSeen(job);
  // A given or recorded size that the ranks seen exceed is wrong (a typo,
  // the size of another job's run, a pg's size taken for the world's): the
  // ranks are believed, and the user is told, not overruled in silence.
  if (seen > w && w >= 0)
    diags->Add(model::Diagnostic::Severity::kWarning, "",
               std::string("the world size ") + std::to_string(w) + " (from " + source + ") is less than the ranks " +
                   "seen (rank " + std::to_string(seen - 1) + "): the world is taken as " + std::to_string(seen) +
                   " ranks");
  if (seen > w) source = "the rank numbers";
  w = std::max(w, seen);
  // Rank numbers far above the number of ranks with data (a typo, a
  // hostile file) must not make a million-member default pg. A given or
  // recorded size is believed further, up to kMaxListedWorld: each rank
  // without data costs a summary (about 1 KB), so 2^24 of them from a 2 KB
  // dump would take gigabytes.
  int64_t with_data = static_cast<int64_t>(job.dumps.size() + job.unreadable.size());
  int64_t believable = 4 * with_data + 64;
  if (world.inferred && w > believable) {
    diags->Add(model::Diagnostic::Severity::kWarning, "",
               "rank numbers go up to " + std::to_string(w - 1) + " but only " +
                   Count(with_data, "rank has", "ranks have") +
                   " data; not guessing the world size (pass --world-size)");
    w = -1;
  } else if (w > std::max(believable, kMaxListedWorld)) {
    // The world is made of the ranks with data instead (the highest of them
    // + 1, when that is believable), so that world_size and
    // ranks_without_dump still agree with every rank the report lists.
    int64_t highest = job.dumps.empty() ? 0 : job.dumps.back().rank + 1;
    diags->Add(model::Diagnostic::Severity::kWarning, "",
               "a world of " + std::to_string(w) + " ranks (from " + source + ") but only " +
                   Count(with_data, "rank has", "ranks have") +
                   " data: the ranks without data are not listed one by one " + "(at most " +
                   std::to_string(kMaxListedWorld) + " are); the world is taken as the ranks with data");
    world.inferred = true;
    w = highest > 0 && highest <= believable ? highest : -1;
  }
  if (w < 0) {
    world.size = -1;
    world.reported_size = static_cast<int64_t>(job.dumps.size());
    return world;
  }
  world.size = w;
  world.reported_size = w;
  // A rank whose only data is a device snapshot or schedule has data too:
  // the report lists it among the ranks with data, so it must not also be
  // "without" (a schedule of ranks 0-1 next to a dump of rank 3 said both).
  std::set<model::Rank> device_ranks;
  for (const auto& dj : job.device)
    for (const auto& dr : dj.ranks) device_ranks.insert(dr.rank);
  size_t k = 0;
  for (model::Rank r = 0; r < w; ++r) {
    while (k < job.dumps.size() && job.dumps[k].rank < r) ++k;
    bool dumped = k < job.dumps.size() && job.dumps[k].rank == r;
    if (!dumped && !device_ranks.count(r)) world.without_dump.push_back(r);
  }
  return world;
}

int64_t FaultSignal(const model::LogEvent& e) {
  if (e.kind != model::LogEvent::Kind::kExit && e.kind != model::LogEvent::Kind::kCrash) return -1;
  auto fault = [](int64_t s) { return s == 4 || s == 7 || s == 8 || s == 9 || s == 11; };
  if (fault(e.signal)) return e.signal;
  if (e.exit_code < 0 && fault(-e.exit_code)) return -e.exit_code;
  // Exits read before the exit code was kept: torchelastic's line, Python's
  // str() of a signal.Signals.
  if (e.message.find("exitcode: -9)") != std::string::npos || e.message.find("Signals.SIGKILL") != std::string::npos)
    return 9;
  return -1;
}

bool DiedUnexpectedly(const model::LogEvent& e) {
  using Role = model::LogEvent::ExitRole;
  if (e.kind != model::LogEvent::Kind::kExit || e.exit_role == Role::kStopped) return false;
  // The first failure by the launcher's account, with an exit code or
  // SIGABRT (-6: a C++ terminate at shutdown, testdata/torch/torchrun_log_dir;
  // a watchdog's abort is a consequence, which Crashed() tells by the rank's
  // own timeout before it).
  return KilledByFaultSignal(e) || e.error == "SYSTEM_ERROR" ||
         (e.exit_role == Role::kFirstFailure && (e.exit_code > 0 || e.exit_code == -6));
}

bool RecordsNothing(const model::RankDump& d) {
  if (!d.from_flight_recorder || !d.ops.empty() || !d.pg_config.empty() || !d.pg_status.empty() || d.wait)
    return false;
  return !d.history || d.history->entries() == 0;
}

bool RecordsNoCollective(const model::RankDump& d) {
  if (d.from_flight_recorder) return RecordsNothing(d);
  return d.ops.empty() && d.pg_config.empty() && d.pg_status.empty() && !d.wait &&
         (!d.history || d.history->entries() == 0);
}

bool Crashed(const model::Job& job, model::Rank r) {
  const model::RankDump* d = job.Find(r);
  if (!d) return false;
  using K = model::LogEvent::Kind;
  bool killed = false, brought_on = false;
  for (const auto& e : d->events) {
    if (e.kind == K::kCrash) return true;
    killed = killed || DiedUnexpectedly(e);
    // Its own timeout, a lost peer, or its launcher's closing signal came
    // first: the exit is their consequence.
    brought_on = brought_on || e.kind == K::kTimeout || e.kind == K::kAbort || e.kind == K::kPeerLost ||
                 (e.kind == K::kExit && e.exit_role == model::LogEvent::ExitRole::kStopped);
  }
  return killed && !brought_on;
}

std::string SignalName(int64_t signal) {
  switch (signal) {
    case 2:
      return "SIGINT";
    case 4:
      return "SIGILL";
    case 6:
      return "SIGABRT";
    case 7:
      return "SIGBUS";
    case 8:
      return "SIGFPE";
    case 9:
      return "SIGKILL";
    case 11:
      return "SIGSEGV";
    case 15:
      return "SIGTERM";
    default:
      return "signal " + std::to_string(signal);
  }
}

}  // namespace hangdx::analyze
