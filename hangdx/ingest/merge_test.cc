#include "hangdx/ingest/merge.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "hangdx/ingest/load.h"

namespace hangdx::ingest {
namespace {

using model::OpRecord;
using model::RankDump;

// An op of `d` at (pg, seq) as a parser would make it.
OpRecord Op(RankDump* d, std::string_view pg, int64_t seq, std::string_view prof, model::Shape shape, std::string dtype,
            bool p2p = false) {
  model::Interner& pool = *d->interner;
  OpRecord r;
  r.record_id = static_cast<int64_t>(d->ops.size());
  r.pg_name = pool.Str(pg);
  r.profiling_name = pool.Str(prof);
  model::ParseProfilingName(&r);
  r.is_p2p = p2p;
  (p2p ? r.p2p_seq : r.collective_seq) = seq;
  if (!shape.empty()) r.input_sizes = r.output_sizes = pool.Intern(model::Shapes{shape});
  if (!dtype.empty()) r.input_dtypes = r.output_dtypes = pool.Intern(model::Dtypes{dtype});
  return r;
}

RankDump Fr(std::vector<int64_t> seqs) {
  RankDump d;
  d.rank = 1;
  d.file = "fr_trace_rank_1";
  d.from_flight_recorder = true;
  d.frames.push_back({"train_step", "train.py", 42});
  for (int64_t s : seqs) {
    OpRecord r = Op(&d, "0", s, "gloo:all_reduce", {2, 4}, "Float");
    r.state = model::OpState::kScheduled;
    r.retired = r.completed = true;
    r.frames = d.interner->Intern(model::Stack{0});
    d.ops.push_back(r);
  }
  return d;
}

std::vector<int64_t> Seqs(const RankDump& d) {
  std::vector<int64_t> v;
  for (const auto& op : d.ops) v.push_back(op.is_p2p ? op.p2p_seq : op.collective_seq);
  return v;
}

TEST(MergeRankOps, SameSeqIsOneOpFilledFromTheLog) {
  RankDump fr = Fr({1, 2, 3});
  model::DiagnosticSink sink;
  {
    RankDump log;
    log.rank = 1;
    log.file = "rank_1.log";
    // The watchdog line: flat element count 2*4 = 8, a timeout, no dtype.
    OpRecord t = Op(&log, "0", 3, "gloo:all_reduce", {8}, "");
    t.timeout_ms = 4000;
    t.duration_ms = 4012;
    t.state = model::OpState::kStarted;
    t.retired = true;
    log.ops.push_back(t);
    // The next op, which only the log shows (the dump was taken before it).
    OpRecord n = Op(&log, "0", 4, "gloo:broadcast", {8}, "Float");
    n.state = model::OpState::kScheduled;
    log.ops.push_back(n);
    MergeRankOps(&fr, log, &sink);
  }  // `log` and its interner are gone: the merged records must not point into them.
  EXPECT_TRUE(sink.empty());
  ASSERT_EQ(Seqs(fr), (std::vector<int64_t>{1, 2, 3, 4}));
  const OpRecord& three = fr.ops[2];
  EXPECT_EQ(three.source, -1);                             // still the dump's record
  EXPECT_EQ(*three.input_sizes, (model::Shapes{{2, 4}}));  // the dump's shape wins
  EXPECT_EQ(three.state, model::OpState::kScheduled);      // the dump's state wins
  EXPECT_TRUE(three.completed);
  EXPECT_EQ(three.timeout_ms, 4000);  // filled from the log
  EXPECT_EQ(three.duration_ms, 4012);
  const OpRecord& four = fr.ops[3];
  EXPECT_EQ(four.op, "broadcast");
  EXPECT_EQ(four.pg_name, "0");
  EXPECT_FALSE(four.completed);
  ASSERT_EQ(fr.extra_files, (std::vector<std::string>{"rank_1.log"}));
  EXPECT_EQ(four.source, 0);
  EXPECT_EQ(four.record_id, 1);  // its record in the log
}

TEST(MergeRankOps, ConflictingClaimsGiveADiagnosticAndKeepTheDump) {
  RankDump fr = Fr({1, 2});
  RankDump log;
  log.rank = 1;
  log.file = "rank_1.log";
  log.ops.push_back(Op(&log, "0", 2, "gloo:broadcast", {16}, "Double"));
  model::DiagnosticSink sink;
  MergeRankOps(&fr, log, &sink);
  std::vector<model::Diagnostic> diags = sink.Take();
  ASSERT_EQ(fr.ops.size(), 2u);
  EXPECT_EQ(fr.ops[1].op, "all_reduce");
  ASSERT_EQ(diags.size(), 1u);
  EXPECT_EQ(diags[0].severity, model::Diagnostic::Severity::kWarning);
  EXPECT_EQ(diags[0].file, "rank_1.log");
  EXPECT_EQ(diags[0].rank, 1);
  const std::string& m = diags[0].message;
  EXPECT_NE(m.find("pg 0 seq 2"), std::string::npos) << m;
  EXPECT_NE(m.find("op type, element count, dtype differ"), std::string::npos) << m;
  EXPECT_NE(m.find("broadcast of 16 elements Double"), std::string::npos) << m;
  EXPECT_NE(m.find("all_reduce of 8 elements Float"), std::string::npos) << m;
}

TEST(MergeRankOps, LogOnlyOpsArePlacedBySeqAndKeyedPerPgAndKind) {
  RankDump fr = Fr({5, 6});
  RankDump log;
  log.rank = 1;
  log.file = "nccl.log";
  log.frames.push_back({"unused", "x.py", 1});
  log.frames.push_back({"fwd", "model.py", 7});
  log.ops.push_back(Op(&log, "0", 4, "nccl:all_reduce", {8}, "Float"));  // evicted from the ring buffer
  log.ops.push_back(Op(&log, "0", 7, "nccl:all_reduce", {8}, "Float"));  // after the dump
  log.ops.back().frames = log.interner->Intern(model::Stack{1});
  log.ops.push_back(Op(&log, "0", 5, "nccl:send 1->0", {8}, "Float", true));  // P2P seq 5 is not coll seq 5
  log.ops.push_back(Op(&log, "0x77", 1, "nccl:all_gather", {4}, "Half"));     // a pg the dump lacks
  log.ops.push_back(Op(&log, "0", -1, "nccl:all_reduce", {}, ""));            // no seq: no key
  model::PgConfig cfg;
  cfg.name = "0x77";
  log.pg_config["0x77"] = cfg;
  model::DiagnosticSink sink;
  MergeRankOps(&fr, log, &sink);
  std::vector<model::Diagnostic> diags = sink.Take();
  EXPECT_TRUE(diags.empty());
  ASSERT_EQ(fr.ops.size(), 7u);
  EXPECT_EQ(Seqs(fr), (std::vector<int64_t>{4, 5, 6, 7, 5, 1, -1}));
  EXPECT_TRUE(fr.ops[4].is_p2p);
  EXPECT_EQ(fr.ops[5].pg_name, "0x77");
  EXPECT_TRUE(fr.pg_config.count("0x77"));
  // Frames were copied into the dump's table.
  ASSERT_EQ(fr.ops[3].frames->size(), 1u);
  EXPECT_EQ(fr.frames[fr.ops[3].frames->front()].name, "fwd");
  EXPECT_EQ(fr.frames[fr.ops[1].frames->front()].name, "train_step");
}

TEST(SameOpKind, SpellingsOfOneCollective) {
  EXPECT_TRUE(SameOpKind("_allgather_base", "all_gather"));
  EXPECT_TRUE(SameOpKind("all_gather_into_tensor", "all_gather"));
  EXPECT_TRUE(SameOpKind("barrier", "all_reduce"));
  EXPECT_TRUE(SameOpKind("all_to_all_single", "all_to_all"));
  EXPECT_TRUE(SameOpKind("", "broadcast"));
  EXPECT_FALSE(SameOpKind("broadcast", "all_reduce"));
  EXPECT_FALSE(SameOpKind("reduce", "all_reduce"));
}

// A Flight Recorder JSON dump of rank 0 holding completed all_reduces at `seqs`.
std::string FrJson(std::vector<int64_t> seqs) {
  std::string entries;
  for (int64_t s : seqs)
    entries += std::string(entries.empty() ? "" : ", ") + R"({"record_id": )" + std::to_string(s) +
               R"(, "pg_id": 0, "process_group": ["0", "default_pg"], "collective_seq_id": )" + std::to_string(s) +
               R"(, "p2p_seq_id": 0, "op_id": )" + std::to_string(s) +
               R"(, "profiling_name": "nccl:all_reduce", "input_sizes": [[4]], "output_sizes": [[4]],)"
               R"( "input_dtypes": ["Float"], "output_dtypes": ["Float"], "state": "completed"})";
  return R"({"version": "2.4", "pg_config": {"0": {"name": "0", "desc": "default_pg", "ranks": "[0, 1]"}},)"
         R"( "entries": [)" +
         entries + "]}";
}

// rank 0's watchdog timeout at `seq`, as ProcessGroupNCCL prints it.
std::string WatchdogLine(int64_t seq) {
  return "[rank0]:[E1218 10:00:00.000000000 ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught collective "
         "operation timeout: WorkNCCL(SeqNum=" +
         std::to_string(seq) +
         ", OpType=ALLREDUCE, NumelIn=4, NumelOut=4, Timeout(ms)=600000) ran for 600010 milliseconds before "
         "timing out.\n";
}

// Loads the files {name: content} from a fresh folder.
StatusOr<model::Job> LoadFiles(const std::vector<std::pair<std::string, std::string>>& files) {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("hangdx_merge_test_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  for (const auto& [name, text] : files) std::ofstream(dir / name) << text;
  auto job = LoadJob({dir.string()}, {});
  fs::remove_all(dir);
  return job;
}

// End to end: a rank's Flight Recorder JSON dump and its stderr in one
// folder; the watchdog's later timeout (seq 3), which the dump does not hold,
// survives the merge, and the dump's seqs 1-2 stay.
TEST(LoadJob, DumpAndLogOfOneRankMerge) {
  auto job = LoadFiles({{"fr_trace_rank_0.json", FrJson({1, 2})}, {"rank_0.log", WatchdogLine(3)}});
  ASSERT_TRUE(job.ok());
  ASSERT_EQ(job->dumps.size(), 1u);
  const RankDump& d = job->dumps[0];
  EXPECT_TRUE(d.from_flight_recorder);
  ASSERT_EQ(Seqs(d), (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(d.ops[2].timeout_ms, 600000);
  EXPECT_FALSE(d.ops[2].completed);
  ASSERT_GE(d.ops[2].source, 0);
  EXPECT_EQ(std::filesystem::path(d.extra_files[d.ops[2].source]).filename(), "rank_0.log");
  for (const auto& diag : job->diagnostics) EXPECT_EQ(diag.message.find("differ"), std::string::npos) << diag.message;
}

// Files are merged in name order: the log joins the first dump, then a
// second dump of the rank with more entries replaces it. The log's record
// must survive the swap; the first dump's own entries do not.
TEST(LoadJob, LogRecordsSurviveASecondDumpOfTheRank) {
  auto job =
      LoadFiles({{"a_fr_0.json", FrJson({1, 2})}, {"b_0.log", WatchdogLine(5)}, {"c_fr_0.json", FrJson({2, 3, 4})}});
  ASSERT_TRUE(job.ok());
  ASSERT_EQ(job->dumps.size(), 1u);
  const RankDump& d = job->dumps[0];
  EXPECT_EQ(std::filesystem::path(d.file).filename(), "c_fr_0.json");
  EXPECT_EQ(Seqs(d), (std::vector<int64_t>{2, 3, 4, 5}));
  EXPECT_EQ(d.ops[3].timeout_ms, 600000);
  EXPECT_EQ(std::filesystem::path(d.extra_files[d.ops[3].source]).filename(), "b_0.log");
  EXPECT_EQ(job->inputs.duplicates, 1u);
}

// --- Ops a rank's log says ended (OpsEndedByLogs, EndOpsEndedByLogs) ---

// Rank 1's gloo dump: all_reduces at `done` retired, then one pending
// all_reduce per (pg, seq) of `pending`, created at t = 1000 ns.
RankDump GlooFr(std::vector<int64_t> done, std::vector<std::pair<std::string, int64_t>> pending) {
  RankDump d;
  d.rank = 1;
  d.file = "fr_trace_rank_1";
  d.from_flight_recorder = true;
  for (int64_t s : done) {
    OpRecord r = Op(&d, "0", s, "gloo:all_reduce", {36}, "Float");
    r.state = model::OpState::kScheduled;
    r.retired = r.completed = true;
    d.ops.push_back(r);
  }
  for (const auto& [pg, s] : pending) {
    OpRecord r = Op(&d, pg, s, "gloo:all_reduce", {1}, "Float");
    r.state = model::OpState::kScheduled;
    r.time_created_ns = 1000;
    d.ops.push_back(r);
  }
  return d;
}

// gloo's transport timeout as the messages format reads it: no pg, no seq.
model::LogEvent GlooTimeout() {
  model::LogEvent e;
  e.kind = model::LogEvent::Kind::kTimeout;
  e.message = "Timed out waiting 4000ms for recv operation to complete";
  e.file = "rank_1.log";
  e.line = 19;
  e.op = "recv";
  e.timeout_ms = 4000;
  e.ends_op = true;
  return e;
}

TEST(OpsEndedByLogs, TheOnePendingCollectiveIsTheOneTheErrorEnded) {
  RankDump d = GlooFr({1, 2, 3}, {{"0", 4}});
  d.events.push_back(GlooTimeout());
  EXPECT_EQ(OpsEndedByLogs(d), (std::vector<size_t>{3}));
  model::DiagnosticSink sink;
  EXPECT_EQ(EndOpsEndedByLogs(&d, &sink), 1u);
  // Failed: retired, not completed (the rank waited in it until it failed).
  EXPECT_TRUE(d.ops[3].retired);
  EXPECT_FALSE(d.ops[3].completed);
  EXPECT_EQ(d.ops[3].timeout_ms, 4000);
  auto diags = sink.Take();
  ASSERT_EQ(diags.size(), 1u);
  EXPECT_EQ(diags[0].severity, model::Diagnostic::Severity::kInfo);
  EXPECT_EQ(diags[0].file, "rank_1.log");
  EXPECT_EQ(diags[0].message,
            "rank 1: line 19 is the error that ended pg 0 seq 4 all_reduce, which fr_trace_rank_1 shows pending "
            "(dumped before it failed): taken as failed");
  // Nothing is pending any more: a second call ends nothing.
  EXPECT_TRUE(OpsEndedByLogs(d).empty());
  EXPECT_EQ(EndOpsEndedByLogs(&d, &sink), 0u);
}

TEST(OpsEndedByLogs, TwoPendingCollectivesAndNoSeqEndNone) {
  // pg 0 seq 4 and pg 1 seq 2 pending (async ops): which one raised is not known.
  RankDump d = GlooFr({1, 2, 3}, {{"0", 4}, {"1", 2}});
  d.events.push_back(GlooTimeout());
  EXPECT_TRUE(OpsEndedByLogs(d).empty());
  // An error that names its pg and seq picks its op among them.
  d.events.back().pg = "1";
  d.events.back().seq = 2;
  EXPECT_EQ(OpsEndedByLogs(d), (std::vector<size_t>{4}));
}

TEST(OpsEndedByLogs, OnlyAnOpsOwnErrorOfTheSameTimeEndsIt) {
  RankDump d = GlooFr({1, 2, 3}, {{"0", 4}});
  model::LogEvent e = GlooTimeout();
  e.ends_op = false;  // a timeout the row does not say is the pending op's error (a store's)
  d.events.push_back(e);
  EXPECT_TRUE(OpsEndedByLogs(d).empty());
  d.events.back().ends_op = true;
  d.events.back().time_ns = 999;  // printed before the op was created (t = 1000): an earlier op's
  EXPECT_TRUE(OpsEndedByLogs(d).empty());
  d.events.back().seq = 3;  // names a seq that is not pending
  d.events.back().time_ns = 0;
  EXPECT_TRUE(OpsEndedByLogs(d).empty());
  d.from_flight_recorder = false;  // ops from logs: not a dump taken before the error
  d.events.back().seq = -1;
  EXPECT_TRUE(OpsEndedByLogs(d).empty());
}

// A gloo dump of rank 0 (entries of one pg at `seqs`, the last pending),
// as torch 2.13 writes it (testdata/torch/a_early).
std::string GlooFrJson(std::vector<int64_t> seqs) {
  std::string entries;
  for (size_t i = 0; i < seqs.size(); ++i)
    entries += std::string(entries.empty() ? "" : ", ") + R"({"record_id": )" + std::to_string(i) +
               R"(, "pg_id": 0, "process_group": ["0", "default_pg"], "collective_seq_id": )" +
               std::to_string(seqs[i]) + R"(, "p2p_seq_id": 0, "op_id": )" + std::to_string(seqs[i]) +
               R"(, "profiling_name": "gloo:all_reduce", "input_sizes": [[1]], "output_sizes": [[1]],)"
               R"( "input_dtypes": ["Float"], "output_dtypes": ["Float"], "state": "scheduled", "retired": )" +
               (i + 1 < seqs.size() ? "true" : "false") + "}";
  return R"({"version": "2.10", "pg_config": {"": {"name": "", "desc": "", "ranks": "[0, 1, 2]"}},)"
         R"( "entries": [)" +
         entries + "]}";
}

TEST(LoadJob, TheLogsTimeoutEndsTheOpTheDumpShowsPending) {
  // Rank 0 dumped while blocked in seq 4, then its 4 s timeout fired and its
  // stderr shows gloo's error (the line from testdata/torch/a_early).
  const std::string line =
      "RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:78] Timed out "
      "waiting 4000ms for recv operation to complete\n";
  for (bool log_first : {false, true}) {
    std::vector<std::pair<std::string, std::string>> files = {{"fr_trace_rank_0.json", GlooFrJson({1, 2, 3, 4})},
                                                              {"rank_0.log", line}};
    if (log_first) files[1].first = "a_rank_0.log";
    auto job = LoadFiles(files);
    ASSERT_TRUE(job.ok());
    ASSERT_EQ(job->dumps.size(), 1u);
    const RankDump& d = job->dumps[0];
    ASSERT_EQ(Seqs(d), (std::vector<int64_t>{1, 2, 3, 4}));
    EXPECT_TRUE(d.ops[3].retired) << log_first;
    EXPECT_FALSE(d.ops[3].completed) << log_first;
    EXPECT_EQ(d.history, nullptr);  // made whole: a history would still show seq 4 pending
  }
}

}  // namespace
}  // namespace hangdx::ingest
