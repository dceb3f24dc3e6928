#include "hangdx/pipeline/pipeline.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "hangdx/analyze/records_needed.h"
#include "hangdx/ingest/compact.h"
#include "hangdx/ingest/cross_rank.h"
#include "hangdx/report/report.h"

namespace hangdx::pipeline {
namespace {

namespace fs = std::filesystem;

// The JSON report of `dir` with every record kept (no cut at all).
std::string WholeReport(const std::string& dir) {
  ingest::LoadOptions opt;
  opt.threads = 1;
  auto job = ingest::LoadJob({dir}, opt);
  EXPECT_TRUE(job.ok());
  ingest::InferAcrossRanks(&*job);
  return report::RenderJson(analyze::Analyze(*job));
}

// The same with each Flight Recorder dump cut, as its file is read, as hard
// as a cut goes (only what CompactDump must keep), then the records the
// analysis needs read back from the files.
std::string CutReport(const std::string& dir) {
  ingest::LoadOptions opt;
  opt.threads = 2;
  opt.compact = true;
  opt.compact_tail = 0;
  auto job = ingest::LoadJob({dir}, opt);
  EXPECT_TRUE(job.ok());
  ingest::InferAcrossRanks(&*job);
  ingest::ReadBack(&*job, analyze::RecordsNeeded(*job), 2);
  return report::RenderJson(analyze::Analyze(*job));
}

// Every real-dump case of testdata/: a cut and read back job reports
// byte for byte what the whole job does, and so does Diagnose.
TEST(Compact, CutDumpsReportWhatWholeDumpsDo) {
  int cases = 0;
  for (const char* sub : {"testdata/torch", "testdata/latent", "testdata/cases"}) {
    fs::path root = fs::path(HANGDX_SOURCE_DIR) / sub;
    for (const auto& e : fs::directory_iterator(root)) {
      if (!e.is_directory()) continue;
      std::string dir = e.path().string();
      std::string whole = WholeReport(dir);
      EXPECT_EQ(CutReport(dir), whole) << dir;
      PipelineOptions opt;
      opt.load.threads = 2;
      auto d = Diagnose({dir}, opt);
      ASSERT_TRUE(d.ok());
      EXPECT_EQ(report::RenderJson(*d), whole) << dir;
      ++cases;
    }
  }
  EXPECT_GT(cases, 20);
}

// The JSON report of `dir` with each NCCL log's records cut as hard as a
// cut goes as they are read (no pg's first or last collective held), then
// the records the analysis needs read back from the files.
std::string HardLogCutReport(const std::string& dir) {
  ingest::LoadOptions opt;
  opt.threads = 2;
  opt.compact = true;
  opt.compact_tail = 0;
  opt.log_head = 0;
  opt.log_tail = 0;
  auto job = ingest::LoadJob({dir}, opt);
  EXPECT_TRUE(job.ok());
  for (const auto& d : job->dumps) EXPECT_TRUE(d.history) << dir << " rank " << d.rank << " was not cut";
  ingest::InferAcrossRanks(&*job);
  ingest::ReadBack(&*job, analyze::RecordsNeeded(*job), 2);
  return report::RenderJson(analyze::Analyze(*job));
}

// One NCCL INFO log of global rank `rank` in an `nranks`-rank job: Init
// lines of the world communicator (and, with `sub`, of a communicator of
// ranks {0, 1}), then `ops` training steps (an AllReduce on the world, an
// AllGather on the sub-communicator); step `odd` (-1: none) enqueues a
// different count on the world.
std::string NcclLog(int rank, int nranks, int ops, bool sub, int odd) {
  std::string pre = "node01:" + std::to_string(4711 + rank) + ":" + std::to_string(4711 + rank) + " [" +
                    std::to_string(rank) + "] NCCL INFO ";
  std::string world = "0x55e4c9a3b0" + std::to_string(10 + rank), pair = "0x55e4c9a3c0" + std::to_string(10 + rank);
  std::string out = "NCCL version 2.21.5+cuda12.4\n";
  out += pre + "comm " + world + " rank " + std::to_string(rank) + " nranks " + std::to_string(nranks) +
         " cudaDev 0 nvmlDev 0 busId 1a000 commId 0x8d3fa5bc24e1f9c7 - Init COMPLETE\n";
  if (sub)
    out += pre + "comm " + pair + " rank " + std::to_string(rank) +
           " nranks 2 cudaDev 0 nvmlDev 0 busId 1a000 commId 0x11aa22bb33cc44dd - Init COMPLETE\n";
  char hex[32];
  for (int i = 0; i < ops; ++i) {
    snprintf(hex, sizeof hex, "%x", i);
    out += pre + "AllReduce: opCount " + hex + " sendbuff 0x7f1 recvbuff 0x7f2 count " + (i == odd ? "7" : "1024") +
           " datatype 7 op 0 root 0 comm " + world + " [nranks=" + std::to_string(nranks) + "] stream 0x559\n";
    if (i % 50 == 7) out += pre + "NET/IB : Got async event : port active\n";
    if (sub)
      out += pre + "AllGather: opCount " + hex +
             " sendbuff 0x7f1 recvbuff 0x7f2 count 64 datatype 9 op 0 root 0 comm " + pair +
             " [nranks=2] stream 0x559\n";
  }
  return out;
}

// NCCL INFO logs cut as they are read report byte for byte what the whole
// logs do: every member's log (one rank behind), one rank's alone (a
// partial view, every op pending), a mismatch in the middle of a full and
// of a partial view, and two communicators per rank.
TEST(Compact, CutLogsReportWhatWholeLogsDo) {
  struct Case {
    const char* name;
    int nranks;
    std::vector<int> ranks, ops, odd;
    bool sub;
    const char* verdict;  // what the whole logs' report says
  };
  const Case cases[] = {
      {"behind", 2, {0, 1}, {300, 200}, {-1, -1}, false, "No hang found"},
      {"alone", 8, {3}, {300}, {-1}, false, "WARNING: rank 3's NCCL log ends in all_reduce"},
      {"full_mismatch", 2, {0, 1}, {300, 300}, {-1, 150}, false, "disagree on sizes at seq 150"},
      {"partial_mismatch", 4, {0, 1}, {300, 290}, {-1, 150}, false, "disagree on sizes at seq 150"},
      {"two_comms", 2, {0, 1}, {300, 260}, {-1, -1}, true, "No hang found"},
      {"two_comms_partial", 4, {0, 1}, {300, 300}, {-1, -1}, true, "nothing shows a hang"},
  };
  fs::path root = fs::temp_directory_path() / "hangdx_log_cut_test";
  for (const Case& c : cases) {
    fs::path dir = root / c.name;
    fs::remove_all(dir);
    fs::create_directories(dir);
    for (size_t i = 0; i < c.ranks.size(); ++i) {
      std::ofstream f(dir / ("rank" + std::to_string(c.ranks[i]) + ".log"));
      f << NcclLog(c.ranks[i], c.nranks, c.ops[i], c.sub, c.odd[i]);
    }
    std::string whole = WholeReport(dir.string());
    EXPECT_NE(whole.find(c.verdict), std::string::npos) << c.name << ": " << whole.substr(0, 400);
    EXPECT_EQ(HardLogCutReport(dir.string()), whole) << c.name;
    PipelineOptions opt;
    opt.load.threads = 2;
    auto d = Diagnose({dir.string()}, opt);
    ASSERT_TRUE(d.ok());
    EXPECT_EQ(report::RenderJson(*d), whole) << c.name;
  }
  fs::remove_all(root);
}

// A file that changed since it was read is not trusted for the records
// it gave: the dump is left as cut, with an error naming the rank.
TEST(Compact, ReadBackRefusesAChangedFile) {
  fs::path src = fs::path(HANGDX_SOURCE_DIR) / "testdata/torch/a";
  fs::path tmp = fs::temp_directory_path() / "hangdx_compact_test";
  fs::remove_all(tmp);
  fs::copy(src, tmp, fs::copy_options::recursive);
  ingest::LoadOptions opt;
  auto job = ingest::LoadJob({tmp.string()}, opt);
  ASSERT_TRUE(job.ok());
  model::RankDump* cut = nullptr;
  for (auto& d : job->dumps)
    if (d.from_flight_recorder && !cut && d.ops.size() > 1) {
      ingest::CompactDump(&d, ingest::CompactOptions{.tail = 0});
      cut = &d;
    }
  ASSERT_NE(cut, nullptr);
  ASSERT_TRUE(cut->history);
  size_t kept = cut->ops.size();
  fs::resize_file(cut->file, fs::file_size(cut->file) / 2);
  std::vector<std::vector<uint32_t>> needed(job->dumps.size());
  needed[cut - job->dumps.data()] = {0};
  size_t diags = job->diagnostics.size();
  ingest::ReadBack(&*job, needed, 1);
  EXPECT_EQ(cut->ops.size(), kept);
  ASSERT_EQ(job->diagnostics.size(), diags + 1);
  EXPECT_NE(job->diagnostics.back().message.find("cannot read records back"), std::string::npos);
  fs::remove_all(tmp);
}

}  // namespace
}  // namespace hangdx::pipeline
