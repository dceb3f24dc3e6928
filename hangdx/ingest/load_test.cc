#include "hangdx/ingest/load.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "hangdx/ingest/compact.h"
#include "hangdx/ingest/record_sink.h"
#include "hangdx/model/history.h"

namespace hangdx::ingest {
namespace {

namespace fs = std::filesystem;

TEST(RankFromFileName, Prefixes) {
  EXPECT_EQ(RankFromFileName("/tmp/trace_0"), 0);
  EXPECT_EQ(RankFromFileName("nccl_trace_rank_container-node02_5"), 5);  // pytorch#140879
  EXPECT_EQ(RankFromFileName("dir/fr_trace_rank_12.json"), 12);
  EXPECT_EQ(RankFromFileName("comm_lib_trace_rank_1023"), 1023);
  EXPECT_EQ(RankFromFileName("host7.pickle"), 7);
  EXPECT_EQ(RankFromFileName("README"), -1);
}

// Dates and times in a name are not ranks (the fresh-user tester's
// train-2026-12-04.log was rank 4); numbers beside them still are.
TEST(RankFromFileName, DatesAreNotRanks) {
  EXPECT_EQ(RankFromFileName("d/train-2026-12-04.log"), -1);
  EXPECT_EQ(RankFromFileName("d/job_20261204-101500.log"), -1);
  EXPECT_EQ(RankFromFileName("d/job_2026-12-04T10:15:00.log"), -1);
  EXPECT_EQ(RankFromFileName("d/worker_2026-12-04_7.log"), 7);
  EXPECT_EQ(RankFromFileName("d/rank3_2026-12-04.log"), 3);
  EXPECT_EQ(RankFromFileName("d/rank2.20250101T120020"), 2);
  // Not dates: month 13, a digit run longer than a date, a bare 4-digit number.
  EXPECT_EQ(RankFromFileName("d/trace-2026-13-04.log"), 4);
  EXPECT_EQ(RankFromFileName("d/trace_202612045.log"), 202612045);
  EXPECT_EQ(RankFromFileName("d/worker-2026.log"), 2026);
}

TEST(InferRanks, FolderWideNumberPosition) {
  EXPECT_EQ(InferRanks({"d/fr_rank_0_attempt_1", "d/fr_rank_1_attempt_1", "d/fr_rank_2_attempt_1"}),
            (std::vector<int64_t>{0, 1, 2}));
  // Hostnames with numbers before the rank: the last number already differs.
  EXPECT_EQ(InferRanks({"d/node02_trace_0", "d/node02_trace_1"}), (std::vector<int64_t>{0, 1}));
  // Different folders are separate; a lone file keeps its last number.
  EXPECT_EQ(InferRanks({"a/x_3_attempt_1", "b/x_4_attempt_1"}), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(InferRanks({"README"}), (std::vector<int64_t>{-1}));
}

TEST(InferRanks, ANumberLabelledRankBeatsPosition) {
  // A collector's timestamp suffix is the last, distinct number: not the rank.
  EXPECT_EQ(InferRanks({"d/rank0.20250101T120000", "d/rank1.20250101T120010", "d/rank2.20250101T120020"}),
            (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ(InferRanks({"d/node3_rank-5.log", "d/node3_RANK=6.log"}), (std::vector<int64_t>{5, 6}));
  // "rank" followed by no number is no label: the last number still counts.
  EXPECT_EQ(InferRanks({"d/ranked_7"}), (std::vector<int64_t>{7}));
}

// A streamed rank's ops (RecordSink::StreamOps) are cut as they come:
// every op lives on in the history, and the records held are the ones that
// are not collectives, each pg's first `head` and last `tail` collectives,
// and the positions asked for; a rank not streamed keeps all.
TEST(DumpBuilder, StreamCutHoldsHeadsTailsAndWhatIsAsked) {
  model::DiagnosticSink diags;
  DumpBuilder::StreamCut cut;
  cut.on = true;
  cut.head = 2;
  cut.tail = 3;
  cut.keep_rank = 0;
  cut.keep = {500, 501, 900};
  DumpBuilder out("x.log", &diags, cut);
  out.StreamOps(0);
  for (int i = 0; i < 1000; ++i) {
    for (model::Rank r : {0, 1}) {
      model::OpRecord op;
      op.record_id = static_cast<int64_t>(out.OpCount(r));
      op.pg_name = out.Strings(r).Str(i % 2 ? "a" : "b");
      op.profiling_name = out.Strings(r).Str(i == 700 ? "nccl:send 0->1" : "nccl:all_reduce");
      model::ParseProfilingName(&op);
      op.is_p2p = i == 700;
      (op.is_p2p ? op.p2p_seq : op.collective_seq) = i / 2;
      out.AddOp(r, op);
    }
  }
  EXPECT_EQ(out.OpCount(0), 1000u);
  DumpBuilder::Result got = out.Finish();
  ASSERT_EQ(got.dumps.size(), 2u);
  const model::RankDump& d = got.dumps[0];
  ASSERT_TRUE(d.history);
  EXPECT_EQ(d.history->entries(), 1000u);
  EXPECT_EQ(d.history->collectives(), 999u);
  std::vector<uint32_t> want = {0, 1, 2, 3, 500, 501, 700, 900, 994, 995, 996, 997, 998, 999};
  EXPECT_EQ(d.op_pos, want);
  ASSERT_EQ(d.ops.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(d.ops[i].record_id, want[i]);
  EXPECT_FALSE(got.dumps[1].history);
  EXPECT_EQ(got.dumps[1].ops.size(), 1000u);
}

// A Flight Recorder rank's ops (RecordSink::StreamFlightRecorderOps) are
// cut as they come into what DeriveCompletion and CompactDump make of the
// whole dump: the same records, positions, completion and history, on
// random dumps (pending ops early and late, gloo, P2P, repeated and
// skipped seqs, pg_status given after the entries, as torch writes it).
TEST(DumpBuilder, FlightRecorderOpsCutAsTheyComeAsCompactDumpCutsThem) {
  uint64_t rng = 88172645463325252ull;
  auto next = [&](uint64_t n) {
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return rng % n;
  };
  for (int round = 0; round < 300; ++round) {
    model::DiagnosticSink diags;
    DumpBuilder::StreamCut cut;
    cut.on = true;
    cut.fr_tail = static_cast<int>(next(6));
    DumpBuilder whole("w", &diags), streamed("s", &diags, cut);
    streamed.StreamFlightRecorderOps(3);
    const size_t n = next(4) == 0 ? next(5) : next(400);
    int64_t seq[3] = {0, 0, 0};
    for (size_t i = 0; i < n; ++i) {
      const int pg = static_cast<int>(next(3));
      const bool p2p = next(10) == 0;
      const uint64_t st = next(20);
      const auto state = st < 14   ? model::OpState::kCompleted
                         : st < 17 ? model::OpState::kScheduled
                         : st < 19 ? model::OpState::kStarted
                                   : model::OpState::kUnknown;
      const bool retired = next(2);
      if (!p2p) seq[pg] += next(8) == 0 ? 0 : next(8) == 0 ? 3 : 1;
      const int64_t op_seq = next(30) == 0 ? -1 : seq[pg];
      for (DumpBuilder* out : {&whole, &streamed}) {
        model::OpRecord op;
        op.record_id = static_cast<int64_t>(i) + 10;
        op.pg_id = pg;
        op.pg_name = out->Strings(3).Str(std::string(1, static_cast<char>('a' + pg)));
        op.profiling_name = out->Strings(3).Str(pg == 2 ? "gloo:all_reduce"
                                                : p2p   ? "nccl:send 0->1"
                                                        : "nccl:all_reduce");
        model::ParseProfilingName(&op);
        op.is_p2p = p2p;
        (p2p ? op.p2p_seq : op.collective_seq) = op_seq;
        op.state = state;
        op.retired = retired;
        out->AddOp(3, op);
      }
    }
    int64_t done[3];
    for (int pg = 0; pg < 3; ++pg) done[pg] = seq[pg] - static_cast<int64_t>(next(3));
    for (DumpBuilder* out : {&whole, &streamed}) {
      out->SetFromFlightRecorder(3);
      for (int pg = 0; pg < 3; ++pg) out->PgStatus(3, pg).last_completed = done[pg];
    }
    model::RankDump w = std::move(whole.Finish().dumps.at(0));
    model::RankDump s = std::move(streamed.Finish().dumps.at(0));
    CompactDump(&w, CompactOptions{.tail = cut.fr_tail});
    ASSERT_EQ(s.op_pos, w.op_pos) << round;
    ASSERT_EQ(s.ops.size(), w.ops.size()) << round;
    for (size_t i = 0; i < w.ops.size(); ++i) {
      ASSERT_EQ(s.ops[i].record_id, w.ops[i].record_id) << round;
      ASSERT_EQ(s.ops[i].completed, w.ops[i].completed) << round << " " << i;
    }
    ASSERT_EQ(!s.history, !w.history) << round;
    if (!w.history) continue;
    ASSERT_EQ(s.history->entries(), w.history->entries());
    std::vector<std::tuple<int64_t, uint32_t, bool, bool>> a, b;
    w.history->ForEach([&](const model::HistoryItem& c) { a.emplace_back(c.seq, c.pos, c.completed, c.retired); });
    s.history->ForEach([&](const model::HistoryItem& c) { b.emplace_back(c.seq, c.pos, c.completed, c.retired); });
    ASSERT_EQ(a, b) << round;
  }
}

TEST(LoadJob, RanksOutOfRangeAreDroppedWithAWarning) {
  // The tester's hugerank.log: c10d watchdog timeouts of [Rank 0] and of
  // [Rank 99999999999] (past model::kMaxRank): only rank 0 is kept.
  std::string dir = ::testing::TempDir() + "/hangdx_rank_range";
  std::filesystem::create_directories(dir);
  std::string path = dir + "/job.log";
  std::string line =
      "] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE, NumelIn=304640, "
      "NumelOut=304640, Timeout(ms)=1800000) ran for 1800035 milliseconds before timing out.\n";
  FILE* f = fopen(path.c_str(), "w");
  ASSERT_NE(f, nullptr);
  fputs(
      ("[E ProcessGroupNCCL.cpp:457] [Rank 0" + line + "[E ProcessGroupNCCL.cpp:457] [Rank 99999999999" + line).c_str(),
      f);
  fclose(f);
  auto job = LoadJob({path}, LoadOptions{});
  ASSERT_TRUE(job.ok());
  ASSERT_EQ(job->dumps.size(), 1u);
  EXPECT_EQ(job->dumps[0].rank, 0);
  int warned = 0;
  for (const auto& d : job->diagnostics)
    if (d.message.find("rank 99999999999 is out of range (0 to 16777215)") != std::string::npos) ++warned;
  EXPECT_EQ(warned, 1);
}

TEST(LoadJob, RealDumpsAndJunkInOneFolder) {
  std::string dir = std::string(HANGDX_SOURCE_DIR) + "/hangdx/ingest/formats/flight_recorder/testdata";
  LoadOptions opt;
  opt.threads = 2;
  auto job = LoadJob({dir}, opt);
  ASSERT_TRUE(job.ok());
  // gloo_rank0/1 as pickle and JSON: one dump per rank survives; the
  // data_p*/evil_* pickles are files with rank-less names or refused.
  ASSERT_EQ(job->dumps.size(), 2u);
  EXPECT_EQ(job->dumps[0].rank, 0);
  EXPECT_TRUE(job->dumps[0].from_flight_recorder);
  EXPECT_EQ(job->dumps[1].rank, 1);
  bool evil_refused = false;
  for (const auto& d : job->diagnostics)
    if (d.file.find("evil_proto2_data.pickle") != std::string::npos &&
        d.message.find("refused opcode") != std::string::npos)
      evil_refused = true;
  EXPECT_TRUE(evil_refused);
}

TEST(LoadJob, MissingPathIsAnError) {
  auto job = LoadJob({"/nonexistent/hangdx"}, {});
  EXPECT_FALSE(job.ok());
  EXPECT_EQ(job.status().code(), Status::Code::kNotFound);
}

TEST(LoadJob, RankOverride) {
  std::string file = std::string(HANGDX_SOURCE_DIR) + "/hangdx/ingest/formats/flight_recorder/testdata/gloo_rank1.json";
  LoadOptions opt;
  opt.rank_of[file] = 7;
  auto job = LoadJob({file}, opt);
  ASSERT_TRUE(job.ok());
  ASSERT_EQ(job->dumps.size(), 1u);
  EXPECT_EQ(job->dumps[0].rank, 7);
}

// --rank names the file however it is spelt: the fresh-user tester's
// "--rank $PWD/d/f=0" with the folder given as "d" (and "./d" with "d/f")
// was "not among the inputs".
TEST(LoadJob, RankOverrideMatchesTheFileNotItsSpelling) {
  std::string dir = std::string(HANGDX_SOURCE_DIR) + "/hangdx/ingest/formats/flight_recorder/testdata";
  LoadOptions opt;
  opt.rank_of[dir + "/./../testdata/gloo_rank1.json"] = 7;
  auto job = LoadJob({dir + "/gloo_rank1.json"}, opt);
  ASSERT_TRUE(job.ok());
  ASSERT_EQ(job->dumps.size(), 1u);
  EXPECT_EQ(job->dumps[0].rank, 7);
  for (const auto& d : job->diagnostics) EXPECT_EQ(d.message.find("--rank names a file"), std::string::npos) << d.message;
}

// Two Flight Recorder dumps for rank 0: gloo_rank0.json (5 entries) by its
// name and gloo_rank1.json (4 entries) by --rank. The user's word wins in
// either order, though the named one has more entries.
TEST(LoadJob, RankOverrideWinsOverAFileNamedForTheSameRank) {
  std::string dir = std::string(HANGDX_SOURCE_DIR) + "/hangdx/ingest/formats/flight_recorder/testdata";
  std::string named = dir + "/gloo_rank0.json", given = dir + "/gloo_rank1.json";
  for (bool given_first : {false, true}) {
    LoadOptions opt;
    opt.rank_of[given] = 0;
    auto job = LoadJob(given_first ? std::vector<std::string>{given, named} : std::vector<std::string>{named, given},
                       opt);
    ASSERT_TRUE(job.ok());
    ASSERT_EQ(job->dumps.size(), 1u);
    EXPECT_EQ(job->dumps[0].rank, 0);
    EXPECT_EQ(job->dumps[0].file, given);
    EXPECT_EQ(job->dumps[0].ops.size(), 4u);
    bool said = false;
    for (const auto& d : job->diagnostics)
      said = said || (d.file == named && d.message == "rank 0 has two Flight Recorder dumps; using " + given +
                                                           " (its rank given by --rank) and ignoring this one");
    EXPECT_TRUE(said) << "given first: " << given_first;
  }
}

// Folders A/ and B/ of two runs, each with dumps of ranks 0 and 1: rank 0's
// richer dump is A's, rank 1's B's. The dumps are not mixed rank by rank:
// A's, chosen at rank 0, are kept for rank 1 too (the fresh-user tester's
// mixed2 made a mismatch of two jobs).
TEST(LoadJob, TwoFoldersDumpsAreNotMixedRankByRank) {
  std::string src = std::string(HANGDX_SOURCE_DIR) + "/hangdx/ingest/formats/flight_recorder/testdata/";
  fs::path dir = fs::temp_directory_path() / ("hangdx_two_runs_" + std::to_string(getpid()));
  fs::create_directories(dir / "A");
  fs::create_directories(dir / "B");
  auto copy = [&](const char* from, fs::path to) {
    fs::copy_file(src + from, dir / to, fs::copy_options::overwrite_existing);
  };
  copy("gloo_rank0.json", "A/fr_trace_rank_0.json");  // 5 entries
  copy("gloo_rank1.json", "A/fr_trace_rank_1.json");  // 4
  copy("gloo_rank1.json", "B/fr_trace_rank_0.json");  // 4
  copy("gloo_rank0.json", "B/fr_trace_rank_1.json");  // 5
  auto job = LoadJob({dir.string()}, {});
  fs::remove_all(dir);
  ASSERT_TRUE(job.ok());
  ASSERT_EQ(job->dumps.size(), 2u);
  for (const auto& d : job->dumps) EXPECT_EQ(fs::path(d.file).parent_path().filename(), "A") << d.file;
  size_t said = 0;
  for (const auto& d : job->diagnostics)
    said += d.message.find("both hold dumps: two runs or two jobs? Their dumps are not mixed") != std::string::npos;
  EXPECT_EQ(said, 2u);
}

TEST(LoadJob, AFileWithNothingPlacedIsNotUsed) {
  // Tester REPORT.md 19.2: a dump whose rank nothing tells counted as used.
  // Two copies of gloo_rank1.json: one named for rank 1, one named "dump.json".
  std::string src = std::string(HANGDX_SOURCE_DIR) + "/hangdx/ingest/formats/flight_recorder/testdata/gloo_rank1.json";
  std::filesystem::path dir = std::filesystem::temp_directory_path() / ("hangdx_unplaced_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  std::filesystem::copy_file(src, dir / "fr_trace_rank_1.json", std::filesystem::copy_options::overwrite_existing);
  std::filesystem::copy_file(src, dir / "dump.json", std::filesystem::copy_options::overwrite_existing);
  auto job = LoadJob({dir.string()}, {});
  std::filesystem::remove_all(dir);
  ASSERT_TRUE(job.ok());
  EXPECT_EQ(job->inputs.files, 2u);
  EXPECT_EQ(job->inputs.used, 1u);
  EXPECT_EQ(job->inputs.unplaced, 1u);
  ASSERT_EQ(job->dumps.size(), 1u);
  EXPECT_EQ(job->dumps[0].rank, 1);
}

}  // namespace
}  // namespace hangdx::ingest
