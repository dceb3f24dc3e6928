#include "bench_job.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>

namespace hangdx::bench {

namespace {

struct Family {
  const char* desc;
  int64_t size;    // group size
  int64_t stride;  // distance between consecutive members
  int64_t block;   // groups tile blocks of this many ranks
};

// pg 1.. of MakeJob (pg 0 is the world).
const Family kFamilies[] = {
    {"tp", 8, 1, 8},  {"pp", 8, 8, 64}, {"cp", 2, 1, 2},    {"ep", 16, 1, 16},
    {"etp", 4, 1, 4}, {"dp", 0, 64, 0}, {"emb", 32, 1, 32},
};

}  // namespace

model::Job MakeJob(int64_t ranks, int pgs, int ops_per_pg, int64_t culprit) {
  model::Job job;
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
    model::RankDump& d = job.dumps[r];
    d.rank = r;
    d.file = "mem/nccl_trace_rank_" + std::to_string(r);
    d.format = "fr-pickle";
    d.version = "2.10";
    d.comm_lib_version = "2.27.3";
    d.frames.push_back({"all_reduce", "torch/distributed/distributed_c10d.py", 2950});
    d.frames.push_back({"train_step", "/workspace/train.py", 512});
    struct Pg {
      std::string name, desc;
    };
    std::vector<Pg> mine;
    model::PgConfig c0;
    c0.name = "0";
    c0.desc = "default_pg";
    c0.ranks_known = false;
    d.pg_config["0"] = c0;
    mine.push_back({"0", "default_pg"});
    for (int f = 0; f < nfam; ++f) {
      const Family& fam = kFamilies[f];
      model::PgConfig c;
      c.desc = fam.desc;
      int64_t gi;
      if (fam.size == 0) {  // stride group over the whole world (dp)
        gi = r % fam.stride;
        c.ranks_known = false;
      } else {
        int64_t block_start = r - r % fam.block;
        int64_t off = r % fam.block;
        int64_t lane = off % fam.stride;
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
      d.pg_config[c.name] = c;
    }
    int64_t record_id = 1000000;
    model::Interner& pool = *d.interner;
    const model::Ref<model::Shapes> shape = pool.Intern(model::Shapes{{4096, 1024}});
    const model::Ref<model::Dtypes> dtype = pool.Intern(model::Dtypes{"BFloat16"});
    const model::Ref<model::Stack> stack = pool.Intern(model::Stack{0, 1});
    // Interleave the pgs like a training step: every pg's i-th op, pg 0 last.
    for (int i = 0; i < ops_per_pg; ++i) {
      for (size_t p = mine.size(); p-- > 0;) {
        const bool last0 = p == 0 && i == ops_per_pg - 1;
        if (last0 && r == culprit) continue;
        model::OpRecord op;
        op.record_id = record_id++;
        op.pg_id = static_cast<int64_t>(p);
        op.pg_name = pool.Str(mine[p].name);
        op.pg_desc = pool.Str(mine[p].desc);
        op.collective_seq = base_seq + i;
        op.p2p_seq = 0;
        op.op_id = base_seq + i;
        op.profiling_name = "nccl:all_reduce";
        model::ParseProfilingName(&op);
        op.input_sizes = shape;
        op.output_sizes = shape;
        op.input_dtypes = dtype;
        op.output_dtypes = dtype;
        op.state = last0 ? model::OpState::kScheduled : model::OpState::kCompleted;
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
      model::PgStatus st;
      st.last_enqueued = base_seq + ops_per_pg - 1;
      st.last_completed = p == 0 ? st.last_enqueued - 1 : st.last_enqueued;
      if (p == 0 && r == culprit) st.last_enqueued -= 1;
      d.pg_status[static_cast<int64_t>(p)] = st;
    }
  }
  return job;
}

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string GeneratedDump(int entries, bool json) {
  const char* env = std::getenv("HANGDX_BENCH_DIR");
  std::string root = env && *env ? env : "/tmp/hangdx-bench";
  std::string dir = root + "/gbench_r1024_e" + std::to_string(entries);
  std::string file = dir + "/nccl_trace_rank_0" + (json ? ".json" : "");
  if (!std::filesystem::exists(file)) {
    std::string cmd = "python3 '" HANGDX_SOURCE_DIR "/scripts/synth/gen_dumps.py' --ranks 1024 --entries " +
                      std::to_string(entries) + " --pgs 3 --fault none --format both --only 0 -q --out '" + dir + "'";
    if (std::system(cmd.c_str()) != 0) return "";
  }
  return std::filesystem::exists(file) ? file : "";
}

}  // namespace hangdx::bench
