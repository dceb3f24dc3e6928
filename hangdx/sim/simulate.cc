#include "hangdx/sim/simulate.h"

#include <cstdio>
#include <nlohmann/json.hpp>

#include "hangdx/analyze/device_graph.h"
#include "hangdx/base/file.h"
#include "hangdx/ingest/formats/device_json/device_json.h"
#include "hangdx/report/json_writer.h"
#include "hangdx/report/report.h"

namespace hangdx::sim {
namespace {

using Json = nlohmann::ordered_json;

const char* StepKindName(Step::Kind k) {
  switch (k) {
    case Step::Kind::kIssue:
      return "issue";
    case Step::Kind::kDispatch:
      return "dispatch";
    case Step::Kind::kStart:
      return "start";
    case Step::Kind::kFinish:
      return "finish";
    case Step::Kind::kSyncDone:
      return "sync_done";
  }
  return "unknown";
}

std::string Seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f s", s);
  return buf;
}

std::string Bound(double s) {  // 300 -> "300"
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", s);
  return buf;
}

std::string Count(int64_t n) {  // 1234567 -> "1,234,567"
  std::string d = std::to_string(n), out;
  for (size_t i = 0; i < d.size(); ++i) {
    if (i > 0 && (d.size() - i) % 3 == 0 && d[i - 1] != '-') out += ',';
    out += d[i];
  }
  return out;
}

std::string Explored(const ExploreResult& r, bool por) {
  return "explored " + Count(r.states) + " states in " + Seconds(r.seconds) +
         (por ? "" : " (partial-order reduction off)");
}

std::string Origin(const model::DeviceJob& job) { return job.origin.empty() ? "the schedule" : job.origin; }

}  // namespace

StatusOr<model::DeviceJob> LoadSchedule(const std::string& path, model::DiagnosticSink* notes) {
  auto data = ReadFile(path, uint64_t{256} << 20);
  if (!data.ok()) return data.status();
  model::DeviceJob job;
  model::DiagnosticSink read;
  bool usable = ingest::ReadDeviceJob(*data, path, &job, &read);
  // The reader's problems, each once with its count, at most 20 (and a line
  // saying how many more): a schedule with thousands of bad ops gets a
  // message one can read.
  model::DiagnosticSink problems(20);
  for (auto& d : read.Take()) {
    // A pg member without a program is part of the model (its peers wait for
    // it for ever), not a change of the program: a note, not a refusal.
    if (d.message.find("is a member but not in \"ranks\"") != std::string::npos) {
      if (notes) notes->Add(std::move(d));
    } else {
      problems.Add(std::move(d));
    }
  }
  std::vector<model::Diagnostic> listed = problems.Take();
  if (!usable || !listed.empty()) {
    std::string msg = usable ? path + ": the schedule has problems; fix them first (nothing simulated):"
                             : path + ": not a usable hangdx schedule";
    for (const auto& d : listed) msg += "\n  " + d.message;
    return InvalidArgument(msg);
  }
  return job;
}

StatusOr<SimulateReport> Simulate(const model::DeviceJob& job, const SimulateOptions& options) {
  SimulateReport rep;
  auto r = Explore(job, options.explore);
  if (!r.ok()) return r.status();
  rep.job = job;
  rep.reduction = options.explore.partial_order_reduction;
  rep.max_seconds = options.explore.max_seconds;
  rep.result = std::move(*r);
  if (rep.result.deadlock) {
    rep.findings = analyze::AnalyzeDevice(rep.result.stuck).findings;
    if (options.search_fixes) {
      rep.fixes = SearchFixes(job, rep.result, options.explore, &rep.fixes_untried);
      rep.fixes_searched = true;
    }
  }
  return rep;
}

int ExitCode(const SimulateReport& report) { return report.result.deadlock ? 1 : 0; }

// Every text that holds names from the schedule (op, thread, stream, event
// and pg names, the file name) goes through P: no control character or line
// break in a name reaches the terminal.
std::string RenderText(const SimulateReport& rep) {
  auto P = [](const std::string& s) { return report::Printable(s); };
  const ExploreResult& r = rep.result;
  const bool por = rep.reduction;
  std::string mode = std::string("task queue mode ") + model::QueueModeName(rep.job.queue_mode);
  std::string out;
  if (r.deadlock) {
    out +=
        "DEADLOCK (" + mode + "): an interleaving of " + P(Origin(rep.job)) + " deadlocks; " + Explored(r, por) + ".\n";
    out += "Witness order (" + std::to_string(r.witness.size()) + " transitions from the start):\n";
    const size_t kMax = 400;
    for (size_t i = 0; i < r.witness.size() && i < kMax; ++i) {
      char num[16];
      std::snprintf(num, sizeof num, "%4zu. ", i + 1);
      out += num + P(r.witness[i].text) + "\n";
    }
    if (r.witness.size() > kMax)
      out += "  ... " + std::to_string(r.witness.size() - kMax) + " more (--format json lists them all)\n";
    out += "Stuck state:\n";
    for (const auto& b : r.blocked) out += "  " + P(b) + "\n";
    bool any = false;
    for (const auto& f : rep.findings) {
      if (f.severity == analyze::Severity::kInfo) continue;
      if (!any) out += "Why (device wait-for graph of the stuck state):\n";
      any = true;
      out += "  " + std::string(analyze::KindName(f.kind)) + ": " + P(f.summary) + "\n";
      for (const auto& d : f.details) out += "    " + P(d) + "\n";
      if (!f.fix_hint.empty()) out += "    hint: " + P(f.fix_hint) + "\n";
    }
    if (rep.fixes_searched) {
      out += "Fix search (each change simulated over every interleaving):\n";
      bool found = false;
      for (const auto& t : rep.fixes) {
        if (!t.passes) continue;
        found = true;
        out += "fix: " + P(t.change) + ": no deadlock, " + Count(t.states) + " states" +
               (t.bound_reached ? " (bound reached: no deadlock found within the bound)" : "") + "\n";
      }
      for (const auto& t : rep.fixes) {
        if (!t.passes) out += "  tried: " + P(t.change) + ": still deadlocks\n";
      }
      if (rep.fixes_untried > 0) {
        out += "  not tried: " + std::to_string(rep.fixes_untried) + " candidate" + (rep.fixes_untried > 1 ? "s" : "") +
               " (the fix search's time bound, max seconds " + Bound(rep.max_seconds) + ", ran out)\n";
      }
      if (rep.fixes.empty() && rep.fixes_untried == 0) {
        out +=
            "  nothing tried: no candidate change applies (queue modes need a schedule with nothing issued yet; "
            "capacity and no_hold a full pool; order ops of several pgs not yet issued; parity a send and recv "
            "pair not yet issued); see the stuck state above\n";
      } else if (!found && !rep.fixes.empty()) {
        out += "  no fix found among the candidates; see the stuck state above\n";
      }
    }
  } else if (r.bound_reached) {
    out += "NO DEADLOCK FOUND WITHIN THE BOUND (" + mode + "): " + Explored(r, por) + ", bound reached (" + r.bound +
           "): no deadlock found within the bound; interleavings beyond it were not explored.\n";
  } else {
    out += "NO DEADLOCK (" + mode + "): every interleaving of " + P(Origin(rep.job)) + " runs to the end; " +
           Explored(r, por) + ".\n";
  }
  return out;
}

std::string RenderJson(const SimulateReport& rep) {
  const ExploreResult& r = rep.result;
  Json j;
  j["hangdx_simulate"] = 1;
  j["schedule"] = rep.job.origin;
  j["queue_mode"] = model::QueueModeName(rep.job.queue_mode);
  j["deadlock"] = r.deadlock;
  j["bound_reached"] = r.bound_reached;
  j["bound"] = r.bound;
  j["states"] = r.states;
  j["transitions"] = r.transitions;
  j["seconds"] = r.seconds;
  j["partial_order_reduction"] = rep.reduction;
  Json witness = Json::array();
  for (const auto& s : r.witness) {
    witness.push_back({{"kind", StepKindName(s.kind)}, {"rank", s.rank}, {"op", s.op}, {"text", s.text}});
  }
  j["witness"] = witness;
  j["blocked"] = r.blocked;
  Json stuck = nullptr;
  if (r.deadlock) {
    const model::DeviceJob& sj = r.stuck;
    auto op = [&](model::OpId id) {
      return Json{{"id", id}, {"op", id >= 0 && static_cast<size_t>(id) < sj.ops.size() ? OpLabel(sj.ops[id]) : ""}};
    };
    auto ops = [&](const std::vector<model::OpId>& ids) {
      Json a = Json::array();
      for (auto id : ids) a.push_back(op(id));
      return a;
    };
    stuck = Json::object();
    Json ranks = Json::array();
    for (const auto& d : sj.ranks) {
      Json jr;
      jr["rank"] = d.rank;
      Json threads = Json::array();
      for (const auto& t : d.threads) {
        threads.push_back({{"name", t.name},
                           {"blocked_on", t.blocked_on >= 0 ? op(t.blocked_on) : Json(nullptr)},
                           {"pending", ops(t.pending)}});
      }
      jr["threads"] = threads;
      Json queues = Json::array();
      for (const auto& q : d.queues) {
        queues.push_back({{"name", q.name},
                          {"dispatching", q.dispatching >= 0 ? op(q.dispatching) : Json(nullptr)},
                          {"entries", ops(q.entries)}});
      }
      jr["queues"] = queues;
      Json streams = Json::array();
      for (const auto& s : d.streams) {
        streams.push_back({{"name", s.name}, {"head_started", s.head_started}, {"tasks", ops(s.tasks)}});
      }
      jr["streams"] = streams;
      Json pools = Json::array();
      for (const auto& p : d.pools) {
        pools.push_back({{"name", p.name}, {"capacity", p.capacity}, {"holders", ops(p.holders)}});
      }
      jr["pools"] = pools;
      ranks.push_back(jr);
    }
    stuck["ranks"] = ranks;
    stuck["recorded_events"] = sj.recorded_events;
  }
  j["stuck"] = stuck;
  Json findings = Json::array();
  for (const auto& f : rep.findings) findings.push_back(report::FindingToJson(f));
  j["findings"] = findings;
  j["fixes_searched"] = rep.fixes_searched;
  j["fixes_untried"] = rep.fixes_untried;
  Json fixes = Json::array();
  for (const auto& t : rep.fixes) {
    fixes.push_back({{"kind", t.kind},
                     {"change", t.change},
                     {"passes", t.passes},
                     {"bound_reached", t.bound_reached},
                     {"states", t.states},
                     {"seconds", t.seconds}});
  }
  j["fixes"] = fixes;
  return report::WriteJson(j);
}

}  // namespace hangdx::sim
