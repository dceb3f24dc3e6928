// hangdx/sim/job_builder.h
// Builds a schedule (a model::DeviceJob whose threads' `pending` hold the
// program, nothing issued) in C++, for tests and benchmarks:
//
//   sim::JobBuilder b(model::QueueMode::kPerDevice);
//   b.Pg("tp", {0, 1});
//   b.Record(0, "compute", "compute", "e0");
//   b.Collective(0, "comm", "comm", "tp", "all_reduce").host_blocking = true;
//   model::DeviceJob job = b.Build();
//
// Every adder appends one op to the program of (rank, thread), creating the
// rank and the thread on first use, and returns the op for further fields
// (the reference is valid until the next adder call). Header-only.
#pragma once

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "hangdx/model/device.h"

namespace hangdx::sim {

class JobBuilder {
 public:
  explicit JobBuilder(model::QueueMode mode = model::QueueMode::kOff) { job_.queue_mode = mode; }

  // Declares pg `name` with these global member ranks.
  JobBuilder& Pg(const std::string& name, std::vector<model::Rank> members) {
    std::sort(members.begin(), members.end());
    job_.pgs[name] = std::move(members);
    return *this;
  }
  // Declares a pool of `capacity` units on rank `r`.
  JobBuilder& Pool(model::Rank r, const std::string& name, int capacity) {
    model::Pool p;
    p.name = name;
    p.capacity = capacity;
    RankOf(r).pools.push_back(p);
    return *this;
  }

  model::DevOp& Compute(model::Rank r, const std::string& thread, const std::string& stream,
                        const std::string& name = "compute", const std::string& pool = "") {
    model::DevOp& op = Add(r, thread, model::DevOp::Kind::kCompute, stream);
    op.name = name;
    op.pool = pool;
    return op;
  }
  model::DevOp& Record(model::Rank r, const std::string& thread, const std::string& stream, const std::string& event) {
    model::DevOp& op = Add(r, thread, model::DevOp::Kind::kRecord, stream);
    op.event = event;
    return op;
  }
  model::DevOp& Wait(model::Rank r, const std::string& thread, const std::string& stream, const std::string& event) {
    model::DevOp& op = Add(r, thread, model::DevOp::Kind::kWait, stream);
    op.event = event;
    return op;
  }
  model::DevOp& Collective(model::Rank r, const std::string& thread, const std::string& stream, const std::string& pg,
                           const std::string& name = "all_reduce", const std::string& pool = "") {
    model::DevOp& op = Add(r, thread, model::DevOp::Kind::kCollective, stream);
    op.pg = pg;
    op.name = name;
    op.pool = pool;
    return op;
  }
  model::DevOp& Send(model::Rank r, const std::string& thread, const std::string& stream, const std::string& pg,
                     model::Rank peer) {
    return P2p(r, thread, model::DevOp::Kind::kSend, stream, pg, peer);
  }
  // peer -1: any source.
  model::DevOp& Recv(model::Rank r, const std::string& thread, const std::string& stream, const std::string& pg,
                     model::Rank peer) {
    return P2p(r, thread, model::DevOp::Kind::kRecv, stream, pg, peer);
  }
  model::DevOp& SyncEvent(model::Rank r, const std::string& thread, const std::string& event) {
    model::DevOp& op = Add(r, thread, model::DevOp::Kind::kHostSync, "");
    op.event = event;
    return op;
  }
  model::DevOp& SyncStream(model::Rank r, const std::string& thread, const std::string& stream) {
    return Add(r, thread, model::DevOp::Kind::kHostSync, stream);
  }

  // The schedule: ranks sorted, `finished` sized, origin "builder".
  model::DeviceJob Build() const {
    model::DeviceJob j = job_;
    std::sort(j.ranks.begin(), j.ranks.end(),
              [](const model::DeviceRank& a, const model::DeviceRank& b) { return a.rank < b.rank; });
    j.finished.assign(j.ops.size(), false);
    j.origin = "builder";
    return j;
  }

 private:
  model::DeviceRank& RankOf(model::Rank r) {
    for (auto& d : job_.ranks) {
      if (d.rank == r) return d;
    }
    model::DeviceRank d;
    d.rank = r;
    job_.ranks.push_back(d);
    return job_.ranks.back();
  }
  model::DevOp& P2p(model::Rank r, const std::string& thread, model::DevOp::Kind kind, const std::string& stream,
                    const std::string& pg, model::Rank peer) {
    model::DevOp& op = Add(r, thread, kind, stream);
    op.pg = pg;
    op.peer = peer;
    return op;
  }
  model::DevOp& Add(model::Rank r, const std::string& thread, model::DevOp::Kind kind, const std::string& stream) {
    model::DeviceRank& d = RankOf(r);
    model::HostThread* t = nullptr;
    for (auto& x : d.threads) {
      if (x.name == thread) t = &x;
    }
    if (!t) {
      d.threads.push_back({});
      t = &d.threads.back();
      t->name = thread;
    }
    model::DevOp op;
    op.kind = kind;
    op.rank = r;
    op.thread = thread;
    op.stream = stream;
    op.source = "builder op " + std::to_string(job_.ops.size());
    t->pending.push_back(static_cast<model::OpId>(job_.ops.size()));
    job_.ops.push_back(op);
    return job_.ops.back();
  }

  model::DeviceJob job_;
};

}  // namespace hangdx::sim
