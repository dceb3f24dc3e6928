#include "hangdx/ingest/messages/catalogue.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <iostream>

#include "hangdx/ingest/messages/matcher.h"

namespace hangdx::ingest::messages {
namespace {

using ::testing::HasSubstr;

constexpr const char* kRow = R"(# a comment
message t.timeout
producer PyTorch c10d
versions 2.0-
source torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp@v2.1.0
format Watchdog caught collective operation timeout: {} ran for {} milliseconds
layout line
anchor Watchdog caught
pattern Watchdog caught collective operation timeout: WorkNCCL\(SeqNum=(?P<seq>\d+), OpType=(?P<op>[\w ]+)
event timeout
proves this rank timed out
example Watchdog caught collective operation timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE, Timeout(ms)=1)
expect seq=5 op=all_reduce
real https://example.org/issue/1
instance [Rank 2] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=7, OpType=BROADCAST)
expect seq=7 op=broadcast
example Watchdog caught collective operation timeout: WorkNCCL(SeqNum=8, OpType=All Reduce)
expect seq=8 op="all reduce"
)";

TEST(Catalogue, ParsesARowWithItsTests) {
  StatusOr<Catalogue> c = Catalogue::Parse(kRow, "t.msgs");
  ASSERT_TRUE(c.ok()) << c.status().message();
  ASSERT_EQ(c->rows().size(), 1u);
  const Row& r = c->rows()[0];
  EXPECT_EQ(r.id, "t.timeout");
  EXPECT_EQ(r.event, EventKind::kTimeout);
  EXPECT_EQ(r.line, 2);
  ASSERT_EQ(r.tests.size(), 3u);
  EXPECT_EQ(r.tests[2].expect[1], (std::pair<std::string, std::string>("op", "all reduce")));
  EXPECT_FALSE(r.tests[0].real);
  EXPECT_TRUE(r.tests[1].real);
  EXPECT_EQ(r.tests[1].url, "https://example.org/issue/1");
  EXPECT_EQ(r.tests[1].expect[0], (std::pair<std::string, std::string>("seq", "7")));
  CompiledCatalogue compiled(*c);
  EXPECT_TRUE(compiled.errors().empty());
  EXPECT_TRUE(CheckRow(compiled, r).empty());
}

TEST(Catalogue, NamesTheFileAndLineOfEachError) {
  auto error_of = [](const std::string& text) {
    StatusOr<Catalogue> c = Catalogue::Parse(text, "bad.msgs");
    return c.ok() ? std::string("parsed") : c.status().message();
  };
  std::string row = kRow;
  EXPECT_THAT(error_of(row + "\n" + row), HasSubstr("bad.msgs:21: duplicate message id t.timeout"));
  EXPECT_THAT(error_of("producer x\n"), HasSubstr("bad.msgs:1: a row starts with 'message ID'"));
  std::string unknown_capture = row;
  unknown_capture.replace(unknown_capture.find("(?P<op>"), 7, "(?P<opname>");
  EXPECT_THAT(error_of(unknown_capture), HasSubstr("bad.msgs:9: capture 'opname' is not in the vocabulary"));
  std::string bad_event = row;
  bad_event.replace(bad_event.find("event timeout"), 13, "event sleepy");
  EXPECT_THAT(error_of(bad_event), HasSubstr("bad.msgs:10: unknown event 'sleepy'"));
  std::string no_expect = row.substr(0, row.find("expect seq=5"));
  EXPECT_THAT(error_of(no_expect), HasSubstr("bad.msgs:12: example/instance lines without an expect line"));
  std::string bad_re = row;
  bad_re.replace(bad_re.find("pattern Watchdog"), 16, "pattern Watch(dog");
  EXPECT_THAT(error_of(bad_re), HasSubstr("bad.msgs:9: pattern does not compile"));
  std::string no_scope = row;
  no_scope.replace(no_scope.find("(?P<op>"), 7, "(?P<rank>\\d+)(?P<op>");
  EXPECT_THAT(error_of(no_scope), HasSubstr("bad.msgs:2: row t.timeout captures ranks: say what they count in"));
  std::string bad_scope = row;
  bad_scope.replace(bad_scope.find("event timeout"), 13, "event timeout\nrank_scope world");
  EXPECT_THAT(error_of(bad_scope), HasSubstr("bad.msgs:11: rank_scope must be global, pg, group or node"));
  std::string no_url = row;
  no_url.erase(no_url.find("real https"), std::string("real https://example.org/issue/1\n").size());
  EXPECT_THAT(error_of(no_url), HasSubstr("instance lines need a `real URL` before them"));
}

// Every row of the built-in catalogue parses, compiles, and passes its own
// tests: a row is added with its test, and this is that test.
TEST(Catalogue, EveryBuiltinRowPassesItsTests) {
  EXPECT_THAT(Catalogue::BuiltinErrors(), ::testing::IsEmpty());
  const CompiledCatalogue& compiled = CompiledCatalogue::Builtin();
  EXPECT_THAT(compiled.errors(), ::testing::IsEmpty());
  std::vector<std::string> failures;
  for (const Row& row : Catalogue::Builtin().rows())
    for (auto& f : CheckRow(compiled, row)) failures.push_back(f);
  EXPECT_THAT(failures, ::testing::IsEmpty());
}

// For writers of new rows: HANGDX_MESSAGES_FILES=a.msgs:b.msgs checks those
// files with the real interpreter before they join data/.
TEST(Catalogue, FilesNamedByTheEnvironmentPassTheirTests) {
  const char* env = std::getenv("HANGDX_MESSAGES_FILES");
  if (env == nullptr || *env == 0) GTEST_SKIP() << "HANGDX_MESSAGES_FILES not set";
  std::vector<std::pair<std::string, std::string>> files;
  std::string list = env;
  for (size_t i = 0; i <= list.size();) {
    size_t c = list.find(':', i);
    std::string path = list.substr(i, c == std::string::npos ? std::string::npos : c - i);
    i = c == std::string::npos ? list.size() + 1 : c + 1;
    if (path.empty()) continue;
    std::ifstream in(path, std::ios::binary);
    ASSERT_TRUE(in) << "cannot read " << path;
    files.emplace_back(path, std::string(std::istreambuf_iterator<char>(in), {}));
  }
  StatusOr<Catalogue> c = Catalogue::ParseAll(files);
  ASSERT_TRUE(c.ok()) << c.status().message();
  CompiledCatalogue compiled(*c);
  EXPECT_THAT(compiled.errors(), ::testing::IsEmpty());
  std::vector<std::string> failures;
  for (const Row& row : c->rows())
    for (auto& f : CheckRow(compiled, row)) failures.push_back(f);
  for (const auto& f : failures) std::cout << f << "\n";
  EXPECT_TRUE(failures.empty()) << failures.size() << " failures in " << c->rows().size() << " rows";
}

}  // namespace
}  // namespace hangdx::ingest::messages
