#include "hangdx/pipeline/pipeline.h"

#include <gtest/gtest.h>

#include <filesystem>

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
