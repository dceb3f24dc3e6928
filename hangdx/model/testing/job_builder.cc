#include "hangdx/model/testing/job_builder.h"

#include <algorithm>
#include <iterator>

namespace hangdx::model::testing {

std::vector<Rank> RankRange(Rank first, Rank end) {
  std::vector<Rank> out;
  for (Rank r = first; r < end; ++r) out.push_back(r);
  return out;
}

RankDump& JobBuilder::Rank(model::Rank r) {
  auto [it, fresh] = index_.try_emplace(r, job_.dumps.size());
  if (fresh) {
    RankDump d;
    d.rank = r;
    d.file = "trace_" + std::to_string(r);
    d.from_flight_recorder = true;
    job_.dumps.push_back(std::move(d));
  }
  return job_.dumps[it->second];
}

JobBuilder& JobBuilder::Coll(model::Rank r, const std::string& pg, int64_t seq, const std::string& op, bool done,
                             Shape shape, const std::string& dtype, bool retired) {
  RankDump& d = Rank(r);
  Interner& pool = *d.interner;
  OpRecord o;
  o.record_id = static_cast<int64_t>(d.ops.size());
  o.pg_name = pool.Str(pg);
  o.pg_desc = pool.Str(pg == "0" ? "default_pg" : "undefined");
  o.collective_seq = seq;
  o.profiling_name = pool.Str(backend_ + ":" + op);
  ParseProfilingName(&o);
  o.input_sizes = o.output_sizes = pool.Intern(Shapes{std::move(shape)});
  o.input_dtypes = o.output_dtypes = pool.Intern(Dtypes{dtype});
  o.completed = done;
  o.retired = done || retired;
  o.state = done && backend_ != "gloo" ? OpState::kCompleted : OpState::kScheduled;
  o.time_created_ns = 1000 + clock_++;
  o.timeout_ms = 1000;
  d.ops.push_back(std::move(o));
  return *this;
}

JobBuilder& JobBuilder::Steps(model::Rank r, const std::string& pg, int64_t from, int64_t to) {
  for (int64_t s = from; s <= to; ++s) Coll(r, pg, s, "all_reduce");
  return *this;
}

JobBuilder& JobBuilder::P2P(model::Rank r, const std::string& pg, const std::string& name, bool done) {
  RankDump& d = Rank(r);
  Interner& pool = *d.interner;
  OpRecord o;
  o.record_id = static_cast<int64_t>(d.ops.size());
  o.pg_name = pool.Str(pg);
  o.profiling_name = pool.Str(backend_ + ":" + name);
  ParseProfilingName(&o);
  o.is_p2p = true;
  o.input_sizes = o.output_sizes = pool.Intern(Shapes{{100}});
  o.completed = done;
  o.time_created_ns = 1000 + clock_++;
  d.ops.push_back(std::move(o));
  return *this;
}

JobBuilder& JobBuilder::Members(const std::string& pg, std::vector<model::Rank> ranks) {
  members_.emplace_back(pg, std::move(ranks));
  return *this;
}

JobBuilder& JobBuilder::Wait(model::Rank r, const std::string& op, std::vector<model::Rank> for_ranks, int64_t seq) {
  RankDump& d = Rank(r);
  d.from_flight_recorder = false;
  WaitSnapshot w;
  w.current_op = op;
  w.waiting_for = std::move(for_ranks);
  w.op_seq = seq;
  d.wait = std::move(w);
  return *this;
}

JobBuilder& JobBuilder::Stack(model::Rank r, std::vector<std::string> innermost_first) {
  RankDump& d = Rank(r);
  if (d.ops.empty()) d.from_flight_recorder = false;
  StackSample st;
  for (auto& f : innermost_first) st.frames.push_back({std::move(f), "", 0});
  st.file = "pyspy_rank" + std::to_string(r) + ".txt";
  st.line = 1;
  d.stacks.push_back(std::move(st));
  return *this;
}

JobBuilder& JobBuilder::Event(model::Rank r, LogEvent::Kind kind, const std::string& msg) {
  LogEvent e;
  e.kind = kind;
  e.message = msg;
  e.line = 3;
  return Event(r, std::move(e));
}

JobBuilder& JobBuilder::Event(model::Rank r, LogEvent e) {
  RankDump& d = Rank(r);
  if (e.file.empty()) e.file = "rank" + std::to_string(r) + ".log";
  if (e.line < 0) e.line = static_cast<int64_t>(d.events.size()) + 1;
  d.events.push_back(std::move(e));
  return *this;
}

JobBuilder& JobBuilder::FromLog(model::Rank r) {
  Rank(r).from_flight_recorder = false;
  return *this;
}

JobBuilder& JobBuilder::World(int64_t w) {
  job_.world_size = w;
  return *this;
}

Job JobBuilder::Build() const {
  Job job = job_;
  for (auto& d : job.dumps) {
    for (const auto& [pg, ranks] : members_) {
      PgConfig c;
      c.name = pg;
      c.desc = pg == "0" ? "default_pg" : "undefined";
      c.ranks = ranks;
      c.ranks_known = true;
      d.pg_config[pg] = c;
    }
  }
  std::sort(job.dumps.begin(), job.dumps.end(), [](const RankDump& a, const RankDump& b) { return a.rank < b.rank; });
  return job;
}

namespace {

struct Family {
  const char* desc;
  int64_t size;    // group size; 0: a stride group over the whole world
  int64_t stride;  // distance between consecutive members
  int64_t block;   // groups tile blocks of this many ranks
};

// pg 1.. of TrainingJob (pg 0 is the world).
const Family kFamilies[] = {
    {"tp", 8, 1, 8},  {"pp", 8, 8, 64}, {"cp", 2, 1, 2},    {"ep", 16, 1, 16},
    {"etp", 4, 1, 4}, {"dp", 0, 64, 0}, {"emb", 32, 1, 32},
};

struct PgName {
  std::string name, desc;
};

// Rank r's pg configs (pg 0 first, then one per family) into d, and their
// names in pg_id order.
std::vector<PgName> TrainingPgs(model::Rank r, int64_t ranks, int nfam, const std::vector<int64_t>& first_name,
                                RankDump* d) {
  std::vector<PgName> mine;
  PgConfig c0;
  c0.name = "0";
  c0.desc = "default_pg";
  c0.ranks_known = false;
  d->pg_config["0"] = c0;
  mine.push_back({"0", "default_pg"});
  for (int f = 0; f < nfam; ++f) {
    const Family& fam = kFamilies[f];
    PgConfig c;
    c.desc = fam.desc;
    int64_t gi;
    if (fam.size == 0) {  // stride group over the whole world (dp)
      gi = r % fam.stride;
      c.ranks_known = false;
    } else {
      int64_t block_start = r - r % fam.block;
      int64_t lane = (r % fam.block) % fam.stride;
      gi = (block_start / fam.block) * fam.stride + lane;
      std::vector<model::Rank> members;
      for (int64_t k = 0; k < fam.size; ++k) {
        int64_t m = block_start + lane + k * fam.stride;
        if (m < ranks) members.push_back(m);
      }
      c.ranks = std::move(members);
      c.ranks_known = true;
    }
    c.name = std::to_string(first_name[f] + gi);
    mine.push_back({c.name, c.desc});
    d->pg_config[c.name] = c;
  }
  return mine;
}

}  // namespace

Job TrainingJob(int64_t ranks, int pgs, int ops_per_pg, int64_t culprit) {
  Job job;
  job.world_size = ranks;
  job.dumps.resize(ranks);
  const int nfam = std::min<int>(pgs - 1, static_cast<int>(std::size(kFamilies)));
  // pg names: new_group() counters, the same on every rank.
  std::vector<int64_t> first_name(nfam);
  int64_t next_name = 1;
  for (int f = 0; f < nfam; ++f) {
    const Family& fam = kFamilies[f];
    first_name[f] = next_name;
    next_name += fam.size == 0 ? std::min(fam.stride, ranks) : (ranks + fam.size - 1) / fam.size;
  }
  const int64_t base_seq = 100000;
  for (int64_t r = 0; r < ranks; ++r) {
    RankDump& d = job.dumps[r];
    d.rank = r;
    d.file = "mem/nccl_trace_rank_" + std::to_string(r);
    d.from_flight_recorder = true;
    d.version = "2.10";
    d.comm_lib_version = "2.27.3";
    d.frames.push_back({"all_reduce", "torch/distributed/distributed_c10d.py", 2950});
    d.frames.push_back({"train_step", "/workspace/train.py", 512});
    const std::vector<PgName> mine = TrainingPgs(r, ranks, nfam, first_name, &d);
    int64_t record_id = 1000000;
    Interner& pool = *d.interner;
    const Ref<Shapes> shape = pool.Intern(Shapes{{4096, 1024}});
    const Ref<Dtypes> dtype = pool.Intern(Dtypes{"BFloat16"});
    const Ref<model::Stack> stack = pool.Intern(model::Stack{0, 1});
    // Interleave the pgs like a training step: every pg's i-th op, pg 0 last.
    for (int i = 0; i < ops_per_pg; ++i) {
      for (size_t p = mine.size(); p-- > 0;) {
        const bool last0 = p == 0 && i == ops_per_pg - 1;
        if (last0 && r == culprit) continue;
        OpRecord op;
        op.record_id = record_id++;
        op.pg_id = static_cast<int64_t>(p);
        op.pg_name = pool.Str(mine[p].name);
        op.pg_desc = pool.Str(mine[p].desc);
        op.collective_seq = base_seq + i;
        op.p2p_seq = 0;
        op.op_id = base_seq + i;
        op.profiling_name = "nccl:all_reduce";
        ParseProfilingName(&op);
        op.input_sizes = shape;
        op.output_sizes = shape;
        op.input_dtypes = dtype;
        op.output_dtypes = dtype;
        op.state = last0 ? OpState::kScheduled : OpState::kCompleted;
        op.retired = !last0;
        op.completed = !last0;
        op.time_created_ns = 1760000000000000000 + op.record_id * 1000000;
        op.time_completed_ns = last0 ? 0 : op.time_created_ns + 2500000;
        op.timeout_ms = 600000;
        op.frames = stack;
        op.thread_name = "pt_main_thread";
        op.thread_id = "139900000000000";
        d.ops.push_back(std::move(op));
      }
    }
    for (size_t p = 0; p < mine.size(); ++p) {
      PgStatus st;
      st.last_enqueued = base_seq + ops_per_pg - 1;
      st.last_completed = p == 0 ? st.last_enqueued - 1 : st.last_enqueued;
      if (p == 0 && r == culprit) st.last_enqueued -= 1;
      d.pg_status[static_cast<int64_t>(p)] = st;
    }
  }
  return job;
}

}  // namespace hangdx::model::testing
