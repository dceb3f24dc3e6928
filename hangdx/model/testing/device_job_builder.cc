#include "hangdx/model/testing/device_job_builder.h"

#include <algorithm>

namespace hangdx::model::testing {

using Kind = DevOp::Kind;

DeviceJobBuilder& DeviceJobBuilder::Pg(const std::string& name, std::vector<Rank> members) {
  std::sort(members.begin(), members.end());
  job_.pgs[name] = std::move(members);
  return *this;
}

DeviceJobBuilder& DeviceJobBuilder::Pool(Rank r, const std::string& name, int capacity, std::vector<OpId> holders) {
  RankOf(r).pools.push_back({name, capacity, std::move(holders)});
  return *this;
}

DeviceJobBuilder& DeviceJobBuilder::Origin(std::string origin) {
  job_.origin = std::move(origin);
  return *this;
}

DevOp& DeviceJobBuilder::Compute(Rank r, const std::string& thread, const std::string& stream, const std::string& name,
                                 const std::string& pool) {
  DevOp& op = Add(r, thread, Kind::kCompute, stream);
  op.name = name;
  op.pool = pool;
  return op;
}

DevOp& DeviceJobBuilder::Record(Rank r, const std::string& thread, const std::string& stream,
                                const std::string& event) {
  DevOp& op = Add(r, thread, Kind::kRecord, stream);
  op.event = event;
  return op;
}

DevOp& DeviceJobBuilder::Wait(Rank r, const std::string& thread, const std::string& stream, const std::string& event) {
  DevOp& op = Add(r, thread, Kind::kWait, stream);
  op.event = event;
  return op;
}

DevOp& DeviceJobBuilder::Collective(Rank r, const std::string& thread, const std::string& stream, const std::string& pg,
                                    const std::string& name, const std::string& pool) {
  DevOp& op = Add(r, thread, Kind::kCollective, stream);
  op.pg = pg;
  op.name = name;
  op.pool = pool;
  return op;
}

DevOp& DeviceJobBuilder::Send(Rank r, const std::string& thread, const std::string& stream, const std::string& pg,
                              Rank peer) {
  return P2p(r, thread, Kind::kSend, stream, pg, peer);
}

DevOp& DeviceJobBuilder::Recv(Rank r, const std::string& thread, const std::string& stream, const std::string& pg,
                              Rank peer) {
  return P2p(r, thread, Kind::kRecv, stream, pg, peer);
}

DevOp& DeviceJobBuilder::SyncEvent(Rank r, const std::string& thread, const std::string& event) {
  DevOp& op = Add(r, thread, Kind::kHostSync, "");
  op.event = event;
  return op;
}

DevOp& DeviceJobBuilder::SyncStream(Rank r, const std::string& thread, const std::string& stream) {
  return Add(r, thread, Kind::kHostSync, stream);
}

OpId DeviceJobBuilder::Op(Rank r, Kind kind, const std::string& stream, const std::string& arg, Rank peer,
                          const std::string& pool, bool blocking) {
  // A host_sync names an event or a stream, never both.
  const bool on_stream = kind != Kind::kHostSync || arg.empty();
  DevOp& op = NewOp(r, kind, "main", on_stream ? stream : "");
  if (kind == Kind::kRecord || kind == Kind::kWait || kind == Kind::kHostSync) op.event = arg;
  if (kind == Kind::kCollective || kind == Kind::kSend || kind == Kind::kRecv) op.pg = arg;
  if (kind == Kind::kCollective) op.name = "all_reduce";
  if (kind == Kind::kCompute) op.name = arg.empty() ? "compute" : arg;
  if (kind == Kind::kSend) op.name = "send";
  if (kind == Kind::kRecv) op.name = "recv";
  op.peer = peer;
  op.pool = pool;
  op.host_blocking = blocking;
  RankOf(r);
  return static_cast<OpId>(job_.ops.size()) - 1;
}

DeviceJobBuilder& DeviceJobBuilder::Stream(Rank r, const std::string& name, std::vector<OpId> tasks,
                                           bool head_started) {
  RankOf(r).streams.push_back({name, std::move(tasks), head_started});
  return *this;
}

DeviceJobBuilder& DeviceJobBuilder::Queue(Rank r, const std::string& name, std::vector<OpId> entries,
                                          OpId dispatching) {
  RankOf(r).queues.push_back({name, std::move(entries), dispatching});
  return *this;
}

DeviceJobBuilder& DeviceJobBuilder::Thread(Rank r, const std::string& name, std::vector<OpId> pending,
                                           OpId blocked_on) {
  for (OpId id : pending) {
    if (id >= 0 && static_cast<size_t>(id) < job_.ops.size()) job_.ops[id].thread = name;
  }
  HostThread& t = ThreadOf(r, name);
  t.pending.insert(t.pending.end(), pending.begin(), pending.end());
  t.blocked_on = blocked_on;
  return *this;
}

DeviceJobBuilder& DeviceJobBuilder::Done(OpId id) {
  done_.push_back(id);
  return *this;
}

DeviceJob DeviceJobBuilder::Build() const {
  DeviceJob j = job_;
  j.finished.assign(j.ops.size(), false);
  for (OpId id : done_) {
    if (id >= 0 && static_cast<size_t>(id) < j.ops.size()) j.finished[id] = true;
  }
  std::sort(j.ranks.begin(), j.ranks.end(), [](const DeviceRank& a, const DeviceRank& b) { return a.rank < b.rank; });
  if (j.origin.empty()) j.origin = "test.json";
  j.Number();
  return j;
}

DeviceRank& DeviceJobBuilder::RankOf(Rank r) {
  auto [it, fresh] = index_.try_emplace(r, job_.ranks.size());
  if (fresh) {
    job_.ranks.push_back({});
    job_.ranks.back().rank = r;
  }
  return job_.ranks[it->second];
}

HostThread& DeviceJobBuilder::ThreadOf(Rank r, const std::string& name) {
  DeviceRank& d = RankOf(r);
  for (auto& t : d.threads) {
    if (t.name == name) return t;
  }
  d.threads.push_back({});
  d.threads.back().name = name;
  return d.threads.back();
}

DevOp& DeviceJobBuilder::P2p(Rank r, const std::string& thread, Kind kind, const std::string& stream,
                             const std::string& pg, Rank peer) {
  DevOp& op = Add(r, thread, kind, stream);
  op.pg = pg;
  op.peer = peer;
  return op;
}

DevOp& DeviceJobBuilder::Add(Rank r, const std::string& thread, Kind kind, const std::string& stream) {
  ThreadOf(r, thread).pending.push_back(static_cast<OpId>(job_.ops.size()));
  return NewOp(r, kind, thread, stream);
}

DevOp& DeviceJobBuilder::NewOp(Rank r, Kind kind, const std::string& thread, const std::string& stream) {
  DevOp op;
  op.kind = kind;
  op.rank = r;
  op.thread = thread;
  op.stream = stream;
  op.source = "op " + std::to_string(job_.ops.size());
  job_.ops.push_back(std::move(op));
  return job_.ops.back();
}

}  // namespace hangdx::model::testing
