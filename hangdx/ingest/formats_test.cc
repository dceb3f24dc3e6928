#include "hangdx/ingest/formats.h"

#include <gtest/gtest.h>

#include <random>
#include <set>

#include "hangdx/base/file.h"

namespace hangdx::ingest {
namespace {

// Reads `data` as the loader does; returns its dumps, *outcome and the
// diagnostics' messages.
std::vector<model::RankDump> Read(std::string_view data, int64_t rank_hint, ArtifactResult* result = nullptr,
                                  std::vector<model::Diagnostic>* diags = nullptr) {
  model::DiagnosticSink sink;
  DumpBuilder out("f", &sink);
  ArtifactResult r = ReadArtifact(Artifact{data, "f", rank_hint}, &out);
  if (result) *result = r;
  auto dumps = out.Finish().dumps;
  if (diags) *diags = sink.Take();
  return dumps;
}

const Format* Sniffed(std::string_view data) {
  ArtifactResult r;
  Read(data, 0, &r);
  return r.format;
}

TEST(Formats, NamesAreUniqueAndEveryRowIsComplete) {
  std::set<std::string_view> names;
  for (const Format& f : Formats()) {
    EXPECT_TRUE(names.insert(f.name).second) << f.name;
    EXPECT_FALSE(f.description.empty()) << f.name;
    EXPECT_NE(f.sniff, nullptr);
    EXPECT_NE(f.parse, nullptr);
    EXPECT_EQ(FindFormat(f.name), &f);
    EXPECT_NE(FormatNames().find(f.name), std::string::npos);
  }
  EXPECT_EQ(FindFormat("no-such-format"), nullptr);
  EXPECT_EQ(FindFormat(kNcclLog)->kind, Format::Kind::kText);
}

TEST(Formats, ExclusiveFormatsBySniffing) {
  EXPECT_EQ(Sniffed(std::string("\x80\x02}.", 4))->name, kFrPickle);
  EXPECT_EQ(Sniffed("{\"version\": \"2.10\", \"entries\": []}")->name, kFrJson);
  EXPECT_EQ(Sniffed("{\"version\": \"2.10\", \"entr")->name, kFrJson);  // truncated: still a dump
  EXPECT_EQ(Sniffed("{\"0\": {\"current_op\": \"send\", \"waiting_for_ranks\": [1]}}")->name, kWaitSnapshot);
  EXPECT_EQ(Sniffed("{\"hangdx_snapshot\": 1, \"ranks\": []}")->name, kDeviceJson);
  EXPECT_EQ(Sniffed("{\"kind\": \"x\"}"), nullptr);
  EXPECT_EQ(Sniffed("[rank0]: RuntimeError"), nullptr);
}

TEST(Formats, MixedTextFileOneDumpPerRank) {
  std::string text = *ReadFile(std::string(HANGDX_SOURCE_DIR) + "/hangdx/ingest/testdata/mixed_rank2.log");
  ArtifactResult r;
  auto out = Read(text, 2, &r);
  EXPECT_EQ(r.outcome, ArtifactResult::Outcome::kUsed);
  EXPECT_EQ(r.format, nullptr);  // several text formats read it
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].rank, 2);
  EXPECT_EQ(out[0].ops.size(), 3u);  // two NCCL enqueues + the watchdog timeout on PG 1
  EXPECT_EQ(out[0].ops[2].pg_name, "1");
  EXPECT_EQ(out[0].ops[2].collective_seq, 7);
  EXPECT_EQ(out[0].ops[2].record_id, 2);  // numbered after the NCCL log's records
}

TEST(Formats, UnknownJsonAndBinaryAreSkippedNamingTheFormats) {
  for (std::string_view data :
       {std::string_view("hello world\n"), std::string_view("{\"kind\": \"missing_rank\", \"notes\": \"opCount 0\"}"),
        std::string_view("\0\0\0NCCL INFO ", 14)}) {
    ArtifactResult r;
    std::vector<model::Diagnostic> diags;
    EXPECT_TRUE(Read(data, 0, &r, &diags).empty());
    EXPECT_EQ(r.outcome, ArtifactResult::Outcome::kSkipped);
    ASSERT_EQ(diags.size(), 1u);
    EXPECT_NE(diags[0].message.find("not a format hangdx reads (" + FormatNames()), std::string::npos)
        << diags[0].message;
  }
  ArtifactResult r;
  std::vector<model::Diagnostic> diags;
  Read("", 0, &r, &diags);
  EXPECT_EQ(r.outcome, ArtifactResult::Outcome::kSkipped);
  EXPECT_TRUE(r.empty);
  ASSERT_EQ(diags.size(), 1u);
  EXPECT_EQ(diags[0].message, "empty file; skipped");
  // A note: it claims nothing (torchrun --log-dir's empty stdout.log files).
  EXPECT_EQ(diags[0].severity, model::Diagnostic::Severity::kInfo);
}

// torch writes a pickle even with the recorder off: a 0-byte file named as
// a Flight Recorder dump is one whose writing was cut short, unreadable (the
// fresh-user tester's empty fr_trace_rank_2 had made a hang exit 0).
TEST(Formats, AnEmptyFlightRecorderDumpIsUnreadableAnEmptyLogIsSkipped) {
  for (const char* name : {"dumps/fr_trace_rank_2", "/tmp/nccl_trace_rank_12", "fr_trace_rank_3.json"}) {
    model::DiagnosticSink sink;
    DumpBuilder out(name, &sink);
    ArtifactResult r = ReadArtifact(Artifact{"", name, 2}, &out);
    EXPECT_EQ(r.outcome, ArtifactResult::Outcome::kUnreadable) << name;
    std::vector<model::Diagnostic> diags = sink.Take();
    ASSERT_EQ(diags.size(), 1u) << name;
    EXPECT_EQ(diags[0].severity, model::Diagnostic::Severity::kWarning);
    EXPECT_NE(diags[0].message.find("empty Flight Recorder dump (0 bytes)"), std::string::npos);
  }
  for (const char* name : {"attempt_0/1/stdout.log", "trace_rank_.log", "my_trace_rank_x", "trace_rank_7/stdout.log"}) {
    model::DiagnosticSink sink;
    DumpBuilder out(name, &sink);
    EXPECT_EQ(ReadArtifact(Artifact{"", name, -1}, &out).outcome, ArtifactResult::Outcome::kSkipped) << name;
  }
  EXPECT_TRUE(IsFlightRecorderDumpName("a/b/nccl_trace_rank_container-node02_5"));
  EXPECT_FALSE(IsFlightRecorderDumpName("a/trace_rank_1/stdout.log"));
  EXPECT_TRUE(IsFlightRecorderDumpName("a/b/nccl_trace_rank_5"));
}

TEST(Formats, UnusableExclusiveFileIsUnreadable) {
  ArtifactResult r;
  std::vector<model::Diagnostic> diags;
  Read(std::string("\x80\x02}q\x00", 5), 4, &r, &diags);  // a pickle cut short
  EXPECT_EQ(r.outcome, ArtifactResult::Outcome::kUnreadable);
  EXPECT_EQ(r.format->name, kFrPickle);
  ASSERT_FALSE(diags.empty());
  EXPECT_EQ(diags[0].severity, model::Diagnostic::Severity::kError);
}

TEST(Formats, RandomJunkAroundAnchorsNeverCrashes) {
  std::mt19937 rng(7);
  const char* anchors[] = {" NCCL INFO AllReduce: opCount ",
                           "Watchdog caught collective operation timeout: WorkNCCL(",
                           "Thread 1 (idle)\n    ",
                           "] HCCL(",
                           "#0-0 (0123456789abcdef) ",
                           "Communicators",
                           "CollectiveFingerPrint(SequenceNumber=",
                           "File \"",
                           "remote rank:[",
                           "\r",
                           "\x1b["};
  for (int i = 0; i < 300; ++i) {
    std::string s;
    for (int k = 0; k < 40; ++k) {
      if (rng() % 3 == 0)
        s += anchors[rng() % std::size(anchors)];
      else
        s += static_cast<char>(rng() % 256);
      if (rng() % 5 == 0) s += '\n';
    }
    Read(s, static_cast<int64_t>(i % 3) - 1);
    // Every format on its own, past the sniffing.
    for (const Format& f : Formats()) {
      model::DiagnosticSink sink;
      DumpBuilder out("junk", &sink);
      f.parse(Artifact{s, "junk", 3}, &out);
      out.Finish();
    }
  }
}

}  // namespace
}  // namespace hangdx::ingest
