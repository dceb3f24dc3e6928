#include "hangdx/model/diagnostic_sink.h"

#include <gtest/gtest.h>

namespace hangdx::model {
namespace {

using Sev = Diagnostic::Severity;

TEST(DiagnosticSink, SameMessageAboutSameFileIsKeptOnceWithItsCount) {
  DiagnosticSink sink;
  sink.Add(Sev::kWarning, "a.log", "bad line");
  sink.Add(Sev::kWarning, "b.log", "bad line");  // another file: its own entry
  sink.Add(Sev::kError, "a.log", "bad line");    // a repeat raises the severity
  sink.Add(Sev::kWarning, "a.log", "bad line");
  std::vector<Diagnostic> out = sink.Take();
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].file, "a.log");
  EXPECT_EQ(out[0].message, "bad line (3 times)");
  EXPECT_EQ(out[0].severity, Sev::kError);
  EXPECT_EQ(out[1].file, "b.log");
  EXPECT_EQ(out[1].message, "bad line");
  EXPECT_TRUE(sink.empty());
}

TEST(DiagnosticSink, CapsEachFileAndSaysHowManyItDropped) {
  DiagnosticSink sink(3);
  for (int i = 0; i < 10; ++i) sink.Add(Sev::kInfo, "big.log", "problem " + std::to_string(i));
  sink.Add(Sev::kError, "big.log", "worst");  // dropped too, but it sets the summary's severity
  sink.Add(Sev::kInfo, "small.log", "one");
  EXPECT_EQ(sink.Dropped("big.log"), 8);
  std::vector<Diagnostic> out = sink.Take();
  ASSERT_EQ(out.size(), 5u);  // 3 kept of big.log, 1 of small.log, 1 summary
  EXPECT_EQ(out[2].message, "problem 2");
  EXPECT_EQ(out[3].file, "small.log");
  EXPECT_EQ(out[4].file, "big.log");
  EXPECT_EQ(out[4].message, "8 more problems in this file not shown");
  EXPECT_EQ(out[4].severity, Sev::kError);
}

TEST(DiagnosticSink, MergeKeepsOrderCountsAndDrops) {
  DiagnosticSink a(2), b(2);
  a.Add(Sev::kWarning, "x", "m1");
  b.Add(Sev::kWarning, "x", "m1");
  b.Add(Sev::kWarning, "x", "m2");
  b.Add(Sev::kWarning, "x", "m3");  // dropped in b
  a.Merge(std::move(b));
  std::vector<Diagnostic> out = a.Take();
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].message, "m1 (2 times)");
  EXPECT_EQ(out[1].message, "m2");
  EXPECT_EQ(out[2].message, "1 more problems in this file not shown");
}

}  // namespace
}  // namespace hangdx::model
