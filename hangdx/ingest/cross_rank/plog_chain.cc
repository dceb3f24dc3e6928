#include "hangdx/ingest/cross_rank/plog_chain.h"

#include <algorithm>
#include <map>
#include <string>

#include "hangdx/ingest/cross_rank/pg_ranks.h"

namespace hangdx::ingest {
namespace {

using model::DeviceTaskReport;
using model::DevOp;

// "0x0000000000000213" -> "0x213".
std::string ShortId(const std::string& id) {
  if (id.size() < 3 || id[0] != '0' || (id[1] != 'x' && id[1] != 'X')) return id;
  size_t i = 2;
  while (i + 1 < id.size() && id[i] == '0') ++i;
  return "0x" + id.substr(i);
}

std::string Where(const DeviceTaskReport& t) { return t.line > 0 ? t.file + ":" + std::to_string(t.line) : t.file; }

class Builder {
 public:
  explicit Builder(const model::Job& job) : job_(job), map_(PgLocalRankMap(job, nullptr)) {}

  model::DeviceJob Build() {
    out_.origin = "";  // every op names its plog line
    out_.queue_mode = model::QueueMode::kOff;
    // 1. Every reported task is the started head of its stream.
    for (const auto& d : job_.dumps) {
      if (d.device_tasks.empty() || d.rank < 0) continue;
      model::DeviceRank dr;
      dr.rank = d.rank;
      out_.ranks.push_back(std::move(dr));
    }
    for (const auto& d : job_.dumps) {
      if (d.device_tasks.empty() || d.rank < 0) continue;
      for (const auto& t : d.device_tasks) AddTask(d.rank, t);
    }
    // 2. The record of each awaited notify, on the remote rank.
    for (const auto& [op, t] : waits_) AddRecord(op, *t);
    out_.finished.assign(out_.ops.size(), false);
    return std::move(out_);
  }

 private:
  model::DeviceRank& RankOf(model::Rank r) { return *out_.FindRank(r); }

  model::Stream& StreamOf(model::Rank r, const std::string& name) {
    auto& streams = RankOf(r).streams;
    for (auto& s : streams)
      if (s.name == name) return s;
    streams.push_back({name, {}, true});
    return streams.back();
  }

  void AddTask(model::Rank r, const DeviceTaskReport& t) {
    std::string stream = t.stream.empty() ? std::string("?") : t.stream;
    model::Stream& s = StreamOf(r, stream);
    // The same task reported twice (two lines, two plogs): once.
    for (model::OpId id : s.tasks)
      if (tasks_[id] && tasks_[id]->task == t.task && tasks_[id]->task_type == t.task_type) return;
    DevOp op;
    op.rank = r;
    op.stream = stream;
    op.pg = t.group;
    op.source = Where(t);
    std::string id = t.task.empty() ? "" : " task " + t.task;
    if (t.failed) {
      op.kind = DevOp::Kind::kCompute;
      op.failed = true;
      op.name =
          (t.task_type.empty() ? std::string("task") : t.task_type) + id + (t.what.empty() ? "" : " (" + t.what + ")");
    } else if (t.remote_local >= 0) {
      op.kind = DevOp::Kind::kWait;
      op.event = "notify " + (t.notify.empty() ? std::string("?") : ShortId(t.notify)) + " from rank " +
                 std::to_string(t.remote_local) + " of " + (t.group.empty() ? "?" : t.group) + " to rank " +
                 std::to_string(r);
      op.name = (t.op.empty() ? std::string() : t.op + " ") + "Notify Wait" + id + " for " + op.event;
    } else {
      // Stuck, but on nothing the logs name: a task that does not finish.
      op.kind = DevOp::Kind::kCompute;
      op.failed = true;
      op.name = (t.op.empty() ? std::string() : t.op + " ") + (t.task_type.empty() ? "task" : t.task_type) + id +
                " (stuck; the log names nothing it waits for)";
    }
    model::OpId oid = static_cast<model::OpId>(out_.ops.size());
    out_.ops.push_back(std::move(op));
    tasks_.push_back(&t);
    s.tasks.push_back(oid);
    if (!t.failed && t.remote_local >= 0) waits_.emplace_back(oid, &t);
  }

  void AddRecord(model::OpId wait, const DeviceTaskReport& t) {
    const DevOp& w = out_.ops[wait];
    model::Rank remote = -1;
    if (IsHcclWorldGroup(t.group)) {
      remote = t.remote_local;
    } else if (auto g = map_.find(t.group); g != map_.end()) {
      if (auto it = g->second.find(t.remote_local); it != g->second.end()) remote = it->second;
    }
    if (remote < 0) {
      out_.event_producer[w.event] = "rank " + std::to_string(t.remote_local) + " of group " + t.group +
                                     " (its global rank is not in these files)";
      return;
    }
    const model::DeviceRank* dr = out_.FindRank(remote);
    if (!dr || dr->streams.empty()) {
      const model::RankDump* d = job_.Find(remote);
      out_.event_producer[w.event] =
          "rank " + std::to_string(remote) +
          (d ? " (its log reports no stuck or failed task: it has not entered this collective)"
             : " (no log from it in these files)");
      out_.event_producer_rank[w.event] = remote;
      return;
    }
    // Behind the remote's stuck task in the same group, else its failed
    // task, else its first stuck task: it has not run yet.
    const model::Stream* where = nullptr;
    for (int pass = 0; pass < 3 && !where; ++pass)
      for (const auto& s : dr->streams) {
        const DevOp& head = out_.ops[s.tasks.front()];
        bool ok = pass == 0 ? (!head.failed && !t.group.empty() && head.pg == t.group) : pass == 1 ? head.failed : true;
        if (ok) {
          where = &s;
          break;
        }
      }
    DevOp rec;
    rec.kind = DevOp::Kind::kRecord;
    rec.rank = remote;
    rec.stream = where->name;
    rec.event = w.event;
    rec.pg = t.group;
    rec.name = "Notify Record of " + w.event;
    rec.source = w.source;  // known from the waiter's line
    model::OpId rid = static_cast<model::OpId>(out_.ops.size());
    out_.ops.push_back(std::move(rec));
    StreamOf(remote, where->name).tasks.push_back(rid);
  }

  const model::Job& job_;
  std::map<std::string, std::map<int64_t, model::Rank>> map_;
  model::DeviceJob out_;
  std::vector<const DeviceTaskReport*> tasks_;  // per op added by AddTask
  std::vector<std::pair<model::OpId, const DeviceTaskReport*>> waits_;
};

}  // namespace

void BuildPlogDeviceJob(model::Job* job) {
  bool any = false;
  for (const auto& d : job->dumps)
    for (const auto& t : d.device_tasks) any = any || t.failed || t.remote_local >= 0;
  if (!any) return;
  model::DeviceJob d = Builder(*job).Build();
  // Only waits on remotes that no file places: the rank-level finding says
  // all there is ("rank 24 of group g"); a chain needs a link or a cause.
  bool linked = !d.event_producer_rank.empty();
  for (const auto& op : d.ops) linked = linked || op.failed || op.kind == model::DevOp::Kind::kRecord;
  if (linked) job->device.push_back(std::move(d));
}

}  // namespace hangdx::ingest
