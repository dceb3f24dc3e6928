#include "hangdx/ingest/formats/messages/messages.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <iostream>
#include <map>
#include <set>

#include "hangdx/ingest/formats.h"
#include "hangdx/ingest/messages/catalogue.h"
#include "hangdx/ingest/parse_for_test.h"

namespace hangdx::ingest {
namespace {

using messages::Catalogue;
using messages::Row;

std::string Joined(const messages::RowTest& t) {
  std::string s;
  for (const auto& l : t.lines) s += l + "\n";
  return s;
}

// What a parse recorded that the analysis counts: ops, events, pg status.
bool Records(const DumpBuilder::Result& r) {
  for (const auto& d : r.dumps)
    if (!d.ops.empty() || !d.events.empty() || !d.pg_status.empty()) return true;
  return false;
}

// One reader per message: a row's `reader` reads its examples, and no
// other text format of the table makes records of them (the messages
// format leaves a row to its reader when the reader reads the file).
TEST(MessagesFormat, EveryRowHasOneReader) {
  std::vector<std::string> failures;
  for (const Row& row : Catalogue::Builtin().rows()) {
    std::set<std::string> readers;
    for (const auto& t : row.tests)
      for (const Format& f : Formats()) {
        if (f.kind != Format::Kind::kText || f.name == kMessages || f.name == kStackDump) continue;
        if (Records(ParseForTest(f.parse, Joined(t), 0))) readers.insert(std::string(f.name));
      }
    std::string got;
    for (const auto& r : readers) got += (got.empty() ? "" : ",") + r;
    // Two hand parsers read these (nccl-log's WARN lines and torch-log's
    // crash words): a double that predates the catalogue; the row names the
    // first.
    static const std::set<std::string> kKnownDoubles = {"nccl.cuda_failure", "nccl.nvls_bind_failed"};
    // A reader that needs its context (the RAS report's headings) does not
    // read a line alone: its sniff says so, and then no other may read it.
    const Format* owner = row.reader.empty() ? nullptr : FindFormat(row.reader);
    bool alone = owner != nullptr;
    for (const auto& t : row.tests) alone = alone && owner->sniff(Joined(t)) <= 0;
    bool ok = row.reader.empty() ? readers.empty()
                                 : (readers.empty() && alone) || (readers.count(row.reader) &&
                                                                  (readers.size() == 1 || kKnownDoubles.count(row.id)));
    if (!ok) failures.push_back(row.id + ": reader '" + row.reader + "', read by '" + got + "'");
  }
  for (const auto& f : failures) std::cout << f << "\n";
  EXPECT_THAT(failures, ::testing::IsEmpty());
}

// When a row's reader reads the file, the messages format recognizes the
// message and records nothing of it.
TEST(MessagesFormat, LeavesARowToItsReader) {
  for (const Row& row : Catalogue::Builtin().rows()) {
    if (row.reader.empty()) continue;
    const Format* owner = FindFormat(row.reader);
    ASSERT_NE(owner, nullptr) << row.id << ": reader " << row.reader << " is not a format";
    for (const auto& t : row.tests) {
      std::string text = Joined(t);
      if (owner->sniff(text) <= 0) continue;
      bool ok = false;
      DumpBuilder::Result r = ParseForTest(ParseMessages, text, 0, nullptr, "f", &ok);
      EXPECT_TRUE(ok) << row.id;
      EXPECT_FALSE(Records(r)) << row.id << ": recorded by messages although " << row.reader << " reads it";
    }
  }
}

// The rank a row's message is about, when its `rank` capture is global;
// else -1 (the printer's rank, from the file name in these tests).
int64_t SubjectRank(const Row& row, const messages::RowTest& t) {
  for (const auto& [k, v] : t.expect)
    if (k == "rank" && row.rank_scope == messages::RankScope::kGlobal) return std::stoll(v);
  return -1;
}

// Every row's examples, read as a one-line log of rank 3 by the messages
// format (its reader does not read such a file, or the row has none),
// become what the handler of the row's event kind makes of them.
TEST(MessagesFormat, EveryRowsExamplesBecomeEvidence) {
  std::vector<std::string> failures;
  int checked = 0;
  for (const Row& row : Catalogue::Builtin().rows()) {
    const Format* owner = row.reader.empty() ? nullptr : FindFormat(row.reader);
    for (const auto& t : row.tests) {
      std::string text = Joined(t);
      if (owner && owner->sniff(text) > 0) continue;  // the owner's own tests cover it
      ++checked;
      bool ok = false;
      DumpBuilder::Result r = ParseForTest(ParseMessages, text, 3, nullptr, "rank3.log", &ok);
      std::string what =
          row.id + " (" + messages::EventKindName(row.event) + ", line '" + t.lines[0].substr(0, 60) + "')";
      if (!ok) {
        failures.push_back(what + ": not recognized");
        continue;
      }
      bool listed = false;
      for (const auto& m : r.read.messages) listed = listed || m.message_id == row.id;
      if (!listed) failures.push_back(what + ": not in the file's FileRead");
      // Messages whose rank the attribution could not tell (counted, not recorded).
      int64_t unranked = 0;
      for (const Recognized& x : ScanMessages(Artifact{text, "rank3.log", 3}))
        if (x.match.row == &row && x.who.rank < 0) ++unranked;
      bool event = false, status = false, any = !r.dumps.empty();
      for (const auto& d : r.dumps) {
        for (const auto& e : d.events) event = event || e.message_id == row.id;
        status = status || !d.pg_status.empty();
      }
      int64_t subject = SubjectRank(row, t);
      using messages::EventKind;
      switch (row.event) {
        case EventKind::kInfo:
          break;
        case EventKind::kOp:
        case EventKind::kInit:
          if (!any && unranked == 0) failures.push_back(what + ": no rank noted");
          break;
        case EventKind::kStatus:
          if (!status && !event && unranked == 0) failures.push_back(what + ": no pg status and no event");
          break;
        default:
          if (!event && unranked == 0) failures.push_back(what + ": no event and not counted as unranked");
      }
      if (subject >= 0 && event) {
        bool at_subject = false;
        for (const auto& d : r.dumps)
          for (const auto& e : d.events) at_subject = at_subject || (e.message_id == row.id && d.rank == subject);
        if (!at_subject) failures.push_back(what + ": not recorded for rank " + std::to_string(subject));
      }
    }
  }
  for (const auto& f : failures) std::cout << f << "\n";
  EXPECT_GT(checked, 300);
  EXPECT_THAT(failures, ::testing::IsEmpty());
}

// A file no format recognizes names the producer it resembles and what was
// not understood; a file recognized lists its formats and rows.
TEST(MessagesFormat, SaysWhatAFileResemblesAndWhatItRecognized) {
  // A watchdog line in a wording no row has (a release the catalogue lacks).
  std::string odd = "Watchdog caught collective operation timeout in a wording from the future\n";
  EXPECT_THAT(NearMiss(odd), ::testing::HasSubstr("looks like PyTorch c10d output: line 1"));
  EXPECT_THAT(NearMiss(odd), ::testing::HasSubstr("not in a wording hangdx knows"));
  EXPECT_THAT(NearMiss("2024 vllm server started\nvllm ready\n"),
              ::testing::HasSubstr("looks like vLLM output (2 line(s) name it"));
  EXPECT_EQ(NearMiss("hello\nworld\n"), "");
  EXPECT_EQ(NearMiss("{\"notes\": \"Watchdog caught collective operation timeout\"}"), "");  // JSON is no log

  model::DiagnosticSink diags;
  DumpBuilder out("odd.log", &diags);
  std::string timeout =
      "[rank1]:[E ProcessGroupNCCL.cpp:1] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=5, "
      "OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=1000) ran for 1001 milliseconds before timing out.\n";
  ArtifactResult res = ReadArtifact(Artifact{timeout, "a.log", -1}, &out);
  EXPECT_EQ(res.outcome, ArtifactResult::Outcome::kUsed);
  DumpBuilder::Result got = out.Finish();
  // torch-log records the timeout; the catalogue recognizes it (its row's reader is torch-log).
  EXPECT_EQ(got.read.format, "torch-log, messages");
  ASSERT_EQ(got.read.messages.size(), 1u);
  EXPECT_EQ(got.read.messages[0].message_id, "torch.nccl.watchdog_timeout_numel");
  ASSERT_EQ(got.dumps.size(), 1u);
  EXPECT_EQ(got.dumps[0].events.size(), 1u);  // one event, not two

  // torch-log's sniff takes the odd line, but nothing is recorded: skipped, and said why.

  DumpBuilder out2("odd.log", &diags);
  res = ReadArtifact(Artifact{odd, "odd.log", 1}, &out2);
  EXPECT_EQ(res.outcome, ArtifactResult::Outcome::kSkipped);
  got = out2.Finish();
  EXPECT_THAT(got.read.looks_like, ::testing::HasSubstr("PyTorch c10d"));
  bool said = false;
  for (const auto& d : diags.Take()) said = said || d.message.find("it looks like PyTorch c10d") != std::string::npos;
  EXPECT_TRUE(said);

  DumpBuilder out3("rank2.log", &diags);
  ReadArtifact(Artifact{"Process 3 exit with status code 137.\nProcess 3 exit with status code 137.\n", "rank2.log", 2},
               &out3);
  got = out3.Finish();
  EXPECT_EQ(got.read.format, "messages");
  ASSERT_EQ(got.read.messages.size(), 1u);
  EXPECT_EQ(got.read.messages[0].message_id, "horovod.runner.process_exit");
  EXPECT_EQ(got.read.messages[0].event, "exit");
  EXPECT_FALSE(got.read.messages[0].proves.empty());
  EXPECT_EQ(got.read.messages[0].count, 2);
}

}  // namespace
}  // namespace hangdx::ingest
