#include "hangdx/analyze/checks/finding_util.h"

#include <set>
#include <string_view>

#include "hangdx/analyze/stack_threads.h"
#include "hangdx/base/rank_set.h"

namespace hangdx::analyze {

void AddOpEvidence(const RankAnalysis& a, Finding* f, model::Rank r, const model::OpRecord& op,
                   const std::string& note) {
  const model::RankDump* d = a.job.Find(r);
  // A record merged from another artifact of the rank names that file.
  bool merged = d && op.source >= 0 && static_cast<size_t>(op.source) < d->extra_files.size();
  f->evidence.push_back({!d ? "" : merged ? d->extra_files[op.source] : d->file, r, op.record_id, note});
}

std::string WhereInstead(const RankAnalysis& a, model::Rank r) {
  const model::RankDump* d = a.job.Find(r);
  if (!d) return "rank " + std::to_string(r) + ": no dump (process gone, or its file was not collected)";
  if (d->ops.empty() && d->wait)
    return "rank " + std::to_string(r) + ": live state " + d->wait->current_op +
           (d->wait->waiting_for.empty() ? ", waiting for nobody"
                                         : ", waiting for ranks " + FormatRanks(d->wait->waiting_for));
  std::string ended;
  if (const model::LogEvent* e = EndedByItself(*d))
    ended = "; its log shows its process ending (" + (e->message_id.empty() ? e->message : e->message_id) + ")";
  if (d->ops.empty() && !d->from_flight_recorder)  // a stack dump or a log only
    return "rank " + std::to_string(r) + ": no Flight Recorder dump; its " + (d->stacks.empty() ? "log" : "stack") +
           " records no operation" + ended;
  if (d->ops.empty()) return "rank " + std::to_string(r) + ": its dump records no operations" + ended;
  const model::OpRecord& last = d->ops.back();
  // gloo marks a failed op retired like a finished one.
  const char* done = last.backend == "gloo" ? " (ended: finished or failed)" : " (completed)";
  std::string s =
      "rank " + std::to_string(r) + ": last op " + a.LabelOf(r, last) + (last.completed ? done : " (not completed)");
  if (a.BlockingType(r) == RankNodeType::kIdle) s += "; not blocked in any recorded collective since";
  if (!last.frames->empty()) s += "; called from " + FrameText(*d, last);
  return s + ended;
}

const model::LogEvent* EndedByItself(const model::RankDump& d) {
  const model::LogEvent* ended = nullptr;
  for (const auto& e : d.events) {
    using K = model::LogEvent::Kind;
    if (e.kind == K::kCrash || e.kind == K::kTimeout || e.kind == K::kAbort) return nullptr;
    // Only the rows that say the process shut down in order: most exit
    // rows (a launcher's "failed (exitcode: 1)", an exception's last line)
    // carry no exit code to tell a clean end from a failure.
    static const std::set<std::string_view> kCleanEnd = {"torch.c10d.pg_not_destroyed", "nccl.destroy_complete"};
    // A launcher that says the process exited 0 (torchrun's failure summary
    // leaves it out) says so too.
    if (e.kind == K::kExit && !ended &&
        (kCleanEnd.count(e.message_id) || e.exit_role == model::LogEvent::ExitRole::kEndedInOrder))
      ended = &e;
  }
  return ended;
}

std::string FrameText(const model::RankDump& d, const model::OpRecord& op) {
  for (uint32_t id : *op.frames) {
    const model::Frame& f = d.frames[id];
    if (f.filename.find("torch/distributed") != std::string::npos) continue;
    return f.name + " at " + f.filename + ":" + std::to_string(f.line);
  }
  const model::Frame& f = d.frames[op.frames->front()];
  return f.name + " at " + f.filename + ":" + std::to_string(f.line);
}

bool IsTimeoutEvent(const model::LogEvent& e) {
  return e.kind == model::LogEvent::Kind::kTimeout ||
         (e.kind == model::LogEvent::Kind::kExit &&
          (e.message.find("Timed out") != std::string::npos || e.message.find("timed out") != std::string::npos));
}

bool IsStoreConnectFailure(const model::LogEvent& e) {
  return e.kind == model::LogEvent::Kind::kPeerLost && e.message_id.rfind("torch.socket.client_", 0) == 0;
}

bool AnyTimeoutEvent(const model::Job& job, const std::vector<model::Rank>& ranks) {
  for (model::Rank r : ranks)
    if (const model::RankDump* d = job.Find(r))
      for (const auto& e : d->events)
        if (e.kind == model::LogEvent::Kind::kTimeout || e.kind == model::LogEvent::Kind::kCrash) return true;
  return false;
}

bool EnqueuedOnly(const RankAnalysis& a, const Instance& in) {
  return a.groups[in.group].desc.rfind("NCCL communicator of", 0) == 0 && !AnyTimeoutEvent(a.job, in.arrived);
}

std::string StackWhere(model::Rank r, const model::StackSample& st) {
  std::string frames;
  for (size_t i = 0; i < st.frames.size() && i < 4; ++i) frames += (i ? " < " : "") + st.frames[i].name;
  return "rank " + std::to_string(r) + "'s stack (" + st.file + " line " + std::to_string(st.line) +
         "): " + (frames.empty() ? std::string("no frames") : frames);
}

const model::LogEvent* ThreadError(const model::RankDump& d) {
  for (const auto& e : d.events)
    if (e.kind == model::LogEvent::Kind::kThreadError) return &e;
  return nullptr;
}

std::string ThreadErrorWords(model::Rank r, const model::RankDump& d) {
  const model::LogEvent* e = ThreadError(d);
  if (!e) return "";
  std::string what = e->message.size() > 120 ? e->message.substr(0, 117) + "..." : e->message;
  std::string s = "rank " + std::to_string(r) + "'s thread " + e->thread + " raised " + what +
                  " (its process stayed alive";
  // Where the main thread is, when a stack dump shows it (the dead
  // thread's traceback is no stack of the main thread).
  const model::StackSample* st = SpeakingThread(d);
  if (st && IsMainThread(*st) && st->thread != e->thread) {
    std::string frames;
    for (size_t i = 0; i < st->frames.size() && i < 3; ++i) frames += (i ? " < " : "") + st->frames[i].name;
    if (!frames.empty()) s += "; its main thread is in " + frames;
  }
  return s + ")";
}

void FillPg(const RankAnalysis& a, const Instance& in, Finding* f) {
  const Group& g = a.groups[in.group];
  f->pg_name = g.name;
  f->pg_desc = g.desc;
  f->seq = in.seq;
}

}  // namespace hangdx::analyze
