#include "hangdx/analyze/analyze.h"

#include <algorithm>
#include <map>
#include <set>
#include <span>
#include <unordered_map>

#include "hangdx/analyze/checks/check.h"
#include "hangdx/analyze/checks/crashed_rank.h"
#include "hangdx/analyze/checks/finding_util.h"
#include "hangdx/analyze/device_graph.h"
#include "hangdx/analyze/match.h"
#include "hangdx/analyze/rank_analysis.h"
#include "hangdx/base/rank_set.h"

namespace hangdx::analyze {

const char* KindName(Kind kind) {
  switch (kind) {
    case Kind::kCollectiveMismatch:
      return "collective_mismatch";
    case Kind::kSizeMismatch:
      return "size_mismatch";
    case Kind::kMissingRank:
      return "missing_rank";
    case Kind::kCrashedRank:
      return "crashed_rank";
    case Kind::kStraggler:
      return "straggler";
    case Kind::kP2pCycle:
      return "p2p_cycle";
    case Kind::kWaitCycle:
      return "wait_cycle";
    case Kind::kStreamCycle:
      return "stream_cycle";
    case Kind::kOrderInversion:
      return "order_inversion";
    case Kind::kResourceDeadlock:
      return "resource_deadlock";
    case Kind::kTaskQueueDeadlock:
      return "task_queue_deadlock";
    case Kind::kUndecided:
      return "undecided";
  }
  return "undecided";
}

const char* SeverityName(Severity s) {
  switch (s) {
    case Severity::kInfo:
      return "info";
    case Severity::kWarning:
      return "warning";
    case Severity::kError:
      return "error";
  }
  return "error";
}

namespace {

using model::OpRecord;
using model::RankDump;

class Analyzer {
 public:
  explicit Analyzer(const RankAnalysis& a) : a_(a), job_(a.job), opt_(a.options), dump_based_(a.dump_based) {}

  Diagnosis Run() {
    out_.files = job_.files;
    out_.diagnostics = job_.diagnostics;
    out_.diagnostics.insert(out_.diagnostics.end(), a_.diagnostics.begin(), a_.diagnostics.end());
    out_.inputs = job_.inputs;
    out_.unreadable = job_.unreadable;
    out_.world_size = a_.world.reported_size;
    out_.world_size_inferred = a_.world.inferred;
    out_.ranks_without_dump = a_.world.without_dump;
    Findings();
    Summaries();
    Verdict();
    return std::move(out_);
  }

 private:
  // ------------------------------------------------------------- findings
  void Findings() {
    FindingSink sink;
    RunChecks(a_, &sink);
    for (auto& e : sink.entries()) {
      if (e.scope != Scope::kWaitState) continue;
      if (e.component >= 0) cycle_nodes_.push_back({a_.graph.components()[e.component], out_.findings.size()});
      out_.findings.push_back(std::move(e.finding));
    }
    // A crash nobody was seen waiting for is still the first thing to look at.
    std::set<Rank> named;
    for (const auto& f : out_.findings) named.insert(f.culprit_ranks.begin(), f.culprit_ranks.end());
    std::vector<Rank> unexplained;
    for (const auto& d : job_.dumps)
      if (a_.Crashed(d.rank) && !named.count(d.rank)) unexplained.push_back(d.rank);
    if (!unexplained.empty()) out_.findings.push_back(CrashedRankFinding(a_, unexplained, nullptr));
    UnexplainedTimeoutFinding();
    AttachCascades();
    for (auto& e : sink.entries())
      if (e.scope == Scope::kHistory) out_.findings.push_back(std::move(e.finding));
    for (const auto& device : job_.device) {  // device-level snapshots: analyze/device_graph.h
      DeviceAnalysis d = AnalyzeDevice(device);
      // A device-level chain to a cause (HCCL plogs) says what the
      // rank-level finding about the same culprits says, and more: it
      // replaces it, in its place.
      for (auto& f : d.findings) {
        auto same = std::find_if(out_.findings.begin(), out_.findings.end(), [&](const Finding& g) {
          return f.hang && g.hang && !f.culprit_ranks.empty() && g.culprit_ranks == f.culprit_ranks &&
                 !g.ranks_are_pg_local &&
                 (g.kind == Kind::kMissingRank || g.kind == Kind::kCrashedRank || g.kind == Kind::kUndecided) &&
                 (f.kind == Kind::kMissingRank || f.kind == Kind::kCrashedRank);
        });
        if (same != out_.findings.end())
          *same = std::move(f);
        else
          out_.findings.push_back(std::move(f));
      }
      for (auto& e : d.edges) out_.edges.push_back(std::move(e));
      for (auto& r : d.ranks)
        if (!job_.Find(r.rank)) out_.ranks.push_back(std::move(r));
    }
    std::stable_sort(out_.findings.begin(), out_.findings.end(), [](const Finding& a, const Finding& b) {
      if (a.severity != b.severity) return a.severity > b.severity;
      size_t wa = a.blocked_behind.size() + Count(a, "arrived") + a.cycle.size();
      size_t wb = b.blocked_behind.size() + Count(b, "arrived") + b.cycle.size();
      if (wa != wb) return wa > wb;
      return false;
    });
  }

  static size_t Count(const Finding& f, const char* role) {
    for (const auto& r : f.roles)
      if (r.role == role) return r.ranks.size();
    return 0;
  }

  // The torch.distributed collective a rank's traceback is in (the
  // innermost distributed_c10d.py frame), "" if none.
  static std::string CollectiveInTraceback(const RankDump& d) {
    for (const auto& s : d.stacks)
      for (const auto& fr : s.frames)
        if (fr.filename.find("distributed_c10d.py") != std::string::npos && fr.name != "wrapper") return fr.name;
    return "";
  }

  // Ranks whose logs report a collective timeout while no error finding
  // explains it: the data given cannot say who is missing, but it is a hang
  // (or a failure), not a healthy job.
  void UnexplainedTimeoutFinding() {
    for (const auto& f : out_.findings)
      if (f.severity == Severity::kError) return;
    std::vector<Rank> timed_out;
    std::vector<Evidence> lines;
    std::string op;
    for (const auto& d : job_.dumps)
      for (const auto& e : d.events) {
        // A watchdog timeout, or an exception that says a wait timed out
        // (gloo: "Timed out waiting 4000ms for send operation").
        bool timeout = e.kind == model::LogEvent::Kind::kTimeout ||
                       (e.kind == model::LogEvent::Kind::kExit && (e.message.find("Timed out") != std::string::npos ||
                                                                   e.message.find("timed out") != std::string::npos));
        if (!timeout) continue;
        if (timed_out.empty() || timed_out.back() != d.rank) {
          timed_out.push_back(d.rank);
          if (lines.size() < kEvidencePerSide)
            lines.push_back({e.file, d.rank, -1, "line " + std::to_string(e.line) + ": " + e.message.substr(0, 300)});
        }
        if (op.empty()) op = e.op.empty() ? CollectiveInTraceback(d) : e.op;
      }
    if (timed_out.empty()) return;
    Finding f;
    f.kind = Kind::kUndecided;
    f.severity = Severity::kError;
    f.hang = true;
    f.op = op;
    const std::vector<Rank>& missing = out_.ranks_without_dump;
    f.culprit_ranks = missing;
    f.roles.push_back({"timed out", timed_out});
    if (!missing.empty()) f.roles.push_back({"no log", missing});
    f.summary = RankWords(timed_out) + " " + Verb(timed_out, "reports", "report") + " a timed-out " +
                (op.empty() ? std::string("collective") : op) + ", but the data given does not show whom " +
                Verb(timed_out, "it waits", "they wait") + " for: " +
                (!missing.empty() ? "no log from " + RankWords(missing)
                                  : std::string("the timeouts name no peer and no rank is missing among those seen "
                                                "(world size unknown: pass --world-size)"));
    f.evidence = std::move(lines);
    f.details.push_back("a collective times out when some member does not join it; the members that did are these");
    f.fix_hint = missing.empty() ? "collect the logs (or Flight Recorder dumps) of every rank of the job"
                                 : "collect the log (or Flight Recorder dump) of the missing ranks: one of them "
                                   "never joined the collective";
    out_.findings.push_back(std::move(f));
  }

  // Ranks blocked at nodes that (transitively) wait on a finding's nodes are
  // "blocked behind" it; they are not reported as findings of their own.
  void AttachCascades() {
    // Map root nodes to findings.
    std::map<int, std::vector<size_t>> root_of_node;
    for (const auto& [comp, fi] : cycle_nodes_)
      for (int v : comp) root_of_node[v].push_back(fi);
    for (size_t fi = 0; fi < out_.findings.size(); ++fi) {
      const Finding& f = out_.findings[fi];
      if (f.seq < 0 || f.pg_name.empty()) continue;
      for (size_t i = 0; i < a_.instances.list.size(); ++i) {
        const Instance& in = a_.instances.list[i];
        int node = a_.graph.InstanceNode(static_cast<int>(i));
        if (node >= 0 && in.seq == f.seq && a_.groups[in.group].name == f.pg_name &&
            a_.groups[in.group].desc == f.pg_desc)
          root_of_node[node].push_back(fi);
      }
    }
    // Reverse BFS from each root over predecessors.
    std::vector<std::vector<int>> pred(a_.graph.graph().size());
    for (int v = 0; v < a_.graph.graph().size(); ++v)
      for (int w : a_.graph.graph().successors(v)) pred[w].push_back(v);
    for (auto& [root, fis] : root_of_node) {
      std::vector<bool> seen(a_.graph.graph().size(), false);
      std::vector<int> stack{root};
      seen[root] = true;
      std::set<Rank> behind;
      while (!stack.empty()) {
        int v = stack.back();
        stack.pop_back();
        for (int p : pred[v]) {
          if (seen[p]) continue;
          seen[p] = true;
          stack.push_back(p);
          for (Rank r : a_.Waiters(p)) behind.insert(r);
        }
      }
      for (size_t fi : fis) {
        Finding& f = out_.findings[fi];
        std::set<Rank> own(f.culprit_ranks.begin(), f.culprit_ranks.end());
        for (const auto& role : f.roles) own.insert(role.ranks.begin(), role.ranks.end());
        for (Rank r : behind)
          if (!own.count(r)) f.blocked_behind.push_back(r);
        std::sort(f.blocked_behind.begin(), f.blocked_behind.end());
        f.blocked_behind.erase(std::unique(f.blocked_behind.begin(), f.blocked_behind.end()), f.blocked_behind.end());
      }
    }
  }

  // ------------------------------------------------------------ summaries
  void Summaries() {
    for (const auto& g : a_.groups.all()) {
      PgSummary s;
      s.name = g.name;
      s.desc = g.desc;
      s.ranks = g.members;
      s.ranks_inferred = g.inferred;
      out_.pgs.push_back(std::move(s));
    }
    for (int gi = 0; gi < a_.groups.size(); ++gi) {
      out_.pgs[gi].max_seq = a_.instances.max_seq[gi];
      out_.pgs[gi].mismatched_seqs = a_.instances.mismatched_seqs[gi];
    }
    for (const auto& in : a_.instances.list) {
      PgSummary& s = out_.pgs[in.group];
      if ((in.problem() || in.any_pending) && s.stuck_seq < 0) {
        s.stuck_seq = in.seq;
        s.stuck_op = a_.OpAt(in, 0).op;
      }
    }
    std::set<Rank> ranks;
    for (const auto& d : job_.dumps) ranks.insert(d.rank);
    for (Rank r : out_.ranks_without_dump) ranks.insert(r);
    for (Rank r : ranks) {
      RankSummary s;
      s.rank = r;
      const RankDump* d = job_.Find(r);
      if (!d) {
        s.state = "no dump";
        out_.ranks.push_back(std::move(s));
        continue;
      }
      s.file = d->file;
      for (auto it = d->ops.rbegin(); it != d->ops.rend(); ++it)
        if (it->completed) {
          s.last_completed = a_.LabelOf(r, *it);
          break;
        }
      for (const auto& op : d->ops) {
        s.last_activity_ns = std::max({s.last_activity_ns, op.time_created_ns, op.time_completed_ns});
      }
      int b = a_.graph.Blocking(r);
      if (a_.graph.node(b).type == RankNodeType::kNoDump) {
        s.state = "crashed";
        s.current = "its log reports a crash";
      } else if (a_.graph.node(b).type == RankNodeType::kIdle) {
        s.state = d->ops.empty() && !d->wait ? "no ops" : "idle";
        s.current = d->ops.empty() ? (d->wait ? d->wait->current_op : "") : "after " + a_.LabelOf(r, d->ops.back());
      } else {
        s.state = a_.graph.dead(b) ? "deadlocked" : "blocked";
        s.current = a_.NodeLabel(b);
      }
      out_.ranks.push_back(std::move(s));
    }
    // Rank-level wait-for edges.
    std::set<std::pair<int, int>> cyc_edges;
    for (const auto& [comp, fi] : cycle_nodes_)
      for (int v : comp)
        for (int w : a_.graph.graph().successors(v))
          if (std::binary_search(comp.begin(), comp.end(), w)) cyc_edges.insert({v, w});
    std::set<std::tuple<Rank, Rank>> seen;
    for (const auto& e : a_.graph.edges()) {
      if (e.via < 0) continue;
      for (Rank w : a_.Waiters(e.from)) {
        if (w == e.via || !seen.insert({w, e.via}).second) continue;
        out_.edges.push_back({w, e.via, a_.NodeLabel(e.from), cyc_edges.count({e.from, e.to}) > 0});
      }
    }
  }

  void Verdict() {
    out_.hang = false;
    for (const auto& f : out_.findings)
      if (f.severity == Severity::kError) out_.hang = true;
    if (out_.findings.empty()) {
      if (job_.dumps.empty() && !job_.device.empty()) {
        out_.verdict =
            "No hang found: no op of the device-level snapshot is deadlocked or waits for an op that "
            "nobody issues.";
        // A snapshot read only in part may have lost the very ops that
        // deadlock: say so in the verdict, not only at the end.
        size_t skipped = 0;
        for (const auto& g : job_.diagnostics)
          for (const auto& dev : job_.device)
            if (g.severity != model::Diagnostic::Severity::kInfo && g.file == dev.origin) ++skipped;
        if (skipped)
          out_.verdict = "No hang found in what could be read, but " + std::to_string(skipped) + " part" +
                         (skipped == 1 ? "" : "s") + " of the device snapshot had to be skipped (see the end): fix " +
                         (skipped == 1 ? "it" : "them") + " and rerun before trusting this.";
      } else if (job_.dumps.empty()) {
        out_.verdict = "No usable input: no dump, log, stack dump or snapshot that names a rank could be read.";
      } else {
        out_.verdict = "No hang found: every process group's recorded collectives match on all " +
                       std::to_string(job_.dumps.size()) + " ranks seen.";
        bool gloo = false;
        for (const auto& d : job_.dumps)
          for (const auto& op : d.ops) gloo = gloo || op.backend == "gloo";
        if (gloo)
          out_.verdict +=
              " (gloo records no P2P op in the Flight Recorder: a send/recv deadlock does not show "
              "here; read the ranks' stderr.)";
        bool pending = false;
        for (const auto& p : out_.pgs) pending = pending || p.stuck_seq >= 0;
        if (pending) out_.verdict += " Some are still in progress.";
        if (!out_.ranks_without_dump.empty())
          out_.verdict += " No dump from " + RankWords(out_.ranks_without_dump) + ".";
      }
      return;
    }
    const Finding& f = out_.findings.front();
    std::string head = f.severity == Severity::kError ? "HANG: " : "WARNING: ";
    if (f.kind == Kind::kCollectiveMismatch || f.kind == Kind::kSizeMismatch)
      head = f.hang ? "HANG (mismatch): " : "ERROR (mismatch, raised; no hang): ";
    out_.verdict = head + f.summary + ".";
    if (!f.culprit_ranks.empty())
      out_.verdict += " Look first at " + RankWords(f.culprit_ranks) +
                      (f.ranks_are_pg_local ? " of pg " + f.pg_name : std::string()) + ".";
    if (!job_.unreadable.empty()) {
      std::vector<Rank> bad;
      for (const auto& [r, file] : job_.unreadable) bad.push_back(r);
      if (std::find(f.culprit_ranks.begin(), f.culprit_ranks.end(), bad.front()) == f.culprit_ranks.end())
        out_.verdict += " (The dumps of " + RankWords(bad) + " could not be read.)";
    }
  }

  const RankAnalysis& a_;
  const model::Job& job_;
  const AnalyzeOptions& opt_;
  const bool dump_based_;
  Diagnosis out_;
  std::vector<std::pair<std::vector<int>, size_t>> cycle_nodes_;
};

}  // namespace

Diagnosis Analyze(const model::Job& job, const AnalyzeOptions& options) {
  RankAnalysis a = BuildRankAnalysis(job, options);
  return Analyzer(a).Run();
}

}  // namespace hangdx::analyze
