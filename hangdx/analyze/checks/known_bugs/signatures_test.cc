#include "hangdx/analyze/checks/known_bugs/signatures.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>

namespace hangdx::analyze::known_bugs {
namespace {

using ::testing::HasSubstr;

model::StackSample StackOf(std::vector<std::string> innermost_first) {
  model::StackSample s;
  for (auto& n : innermost_first) s.frames.push_back({n, "", 0});
  return s;
}

TEST(Signatures, TheBuiltinFileParsesIntoTenSignaturesWithTheirStacks) {
  EXPECT_TRUE(BuiltinSignatureErrors().empty()) << BuiltinSignatureErrors().front();
  const auto& sigs = BuiltinSignatures();
  ASSERT_GE(sigs.size(), 10u);
  std::set<std::string> ids;
  for (const Signature& s : sigs) {
    ids.insert(s.id);
    EXPECT_FALSE(s.frames.empty()) << s.id;
    EXPECT_EQ(s.url.rfind("https://github.com/", 0), 0u) << s.id;
    EXPECT_FALSE(s.stack_file.empty()) << s.id << ": every signature is taken from a real stack";
    EXPECT_FALSE(s.workaround.empty()) << s.id;
  }
  EXPECT_EQ(ids.size(), sigs.size());
  EXPECT_TRUE(ids.count("nccl-750-cuda-launch-blocking-proxy"));
}

TEST(Signatures, VersionsAreReadFromWhatTheFieldPrints) {
  EXPECT_EQ(ParseVersion("2.21.5+cuda12.4"), (Version{2, 21, 5}));
  EXPECT_EQ(ParseVersion("NCCL version 2.18.1+cuda12.1"), (Version{2, 18, 1}));
  EXPECT_EQ(ParseVersion("(2, 21, 5)"), (Version{2, 21, 5}));
  EXPECT_EQ(ParseVersion("2.8.3-1"), (Version{2, 8, 3}));
  EXPECT_EQ(ParseVersion("2.25"), (Version{2, 25}));
  EXPECT_TRUE(ParseVersion("").empty());
  EXPECT_TRUE(ParseVersion("unknown").empty());
}

TEST(Signatures, AffectedRangesCoverTheirEndsAndEveryPatchOfAnOpenComponent) {
  auto parse = [](const std::string& affected) {
    StatusOr<std::vector<Signature>> s = ParseSignatures(
        "bug x\nlibrary nccl\naffected " + affected + "\nfixed none\nframe f\nsummary s\nworkaround w\nurl u\n",
        "t.sigs");
    EXPECT_TRUE(s.ok()) << s.status().message();
    return std::move(s->front());
  };
  Signature closed = parse("2.13-2.16.5");
  EXPECT_EQ(closed.AffectsVersion({2, 13, 0}), Affects::kYes);
  EXPECT_EQ(closed.AffectsVersion({2, 16, 5}), Affects::kYes);
  EXPECT_EQ(closed.AffectsVersion({2, 17, 1}), Affects::kNo);
  EXPECT_EQ(closed.AffectsVersion({2, 12, 12}), Affects::kNo);
  EXPECT_EQ(closed.AffectsVersion({}), Affects::kUnknown);
  Signature from = parse("2.16.2-");
  EXPECT_EQ(from.AffectsVersion({2, 16, 1}), Affects::kNo);
  EXPECT_EQ(from.AffectsVersion({2, 30, 7}), Affects::kYes);
  Signature upto = parse("-2.2");
  EXPECT_EQ(upto.AffectsVersion({2, 2, 9}), Affects::kYes);  // an upper bound "2.2" covers 2.2.x
  EXPECT_EQ(upto.AffectsVersion({2, 3}), Affects::kNo);
  Signature one = parse("2.25");
  EXPECT_EQ(one.AffectsVersion({2, 25, 1}), Affects::kYes);
  EXPECT_EQ(one.AffectsVersion({2, 26, 2}), Affects::kNo);
  EXPECT_EQ(one.AffectsVersion({2, 24, 3}), Affects::kNo);
}

TEST(Signatures, AStackMatchesWhenEveryFrameRegexFindsAFrameInAnyOrder) {
  StatusOr<std::vector<Signature>> s = ParseSignatures(
      "bug b\nlibrary nccl\naffected 2.14-\nfixed none\nframe ^cudaStreamSynchronize\nframe ncclCommAbort\n"
      "summary s\nworkaround w\nurl u\n",
      "t.sigs");
  ASSERT_TRUE(s.ok()) << s.status().message();
  const Signature& sig = s->front();
  EXPECT_TRUE(sig.MatchesStack(StackOf({"cudaStreamSynchronize", "commReclaim", "ncclCommAbort"})));
  EXPECT_TRUE(sig.MatchesStack(StackOf({"ncclCommAbort(ncclComm*)", "cudaStreamSynchronize"})));
  EXPECT_FALSE(sig.MatchesStack(StackOf({"cudaStreamSynchronize", "commReclaim"})));
  EXPECT_FALSE(sig.MatchesStack(StackOf({"x_cudaStreamSynchronize", "ncclCommAbort"})));  // ^ anchors the name
  EXPECT_TRUE(sig.NamesFrame({"ncclCommAbort", "", 0}));
  EXPECT_FALSE(sig.NamesFrame({"commReclaim", "", 0}));
}

TEST(Signatures, SettingsAndTheVersionRequirementAreRead) {
  StatusOr<std::vector<Signature>> s = ParseSignatures(
      "# comment\nbug b\nlibrary nccl\naffected 2.8.3\nfixed 2.8.4\nframe WaitForEvents\n"
      "setting CUDA_LAUNCH_BLOCKING=1\nversion_required\nsummary s\nworkaround w\nurl u\n"
      "stack_file b.txt\nstack_version 2.8.3\n",
      "t.sigs");
  ASSERT_TRUE(s.ok()) << s.status().message();
  const Signature& sig = s->front();
  EXPECT_TRUE(sig.version_required);
  ASSERT_EQ(sig.settings.size(), 1u);
  EXPECT_EQ(sig.settings[0].first, "CUDA_LAUNCH_BLOCKING");
  EXPECT_EQ(sig.settings[0].second, "1");
  EXPECT_EQ(sig.stack_file, "b.txt");
  EXPECT_EQ(sig.stack_version, "2.8.3");
  EXPECT_EQ(sig.line, 2);
}

TEST(Signatures, BadRowsAreRefusedWithFileAndLine) {
  const std::string ok = "library nccl\naffected 2.14-\nfixed none\nframe f\nsummary s\nworkaround w\nurl u\n";
  auto error = [](const std::string& text) {
    StatusOr<std::vector<Signature>> s = ParseSignatures(text, "t.sigs");
    return s.ok() ? std::string("ok") : s.status().message();
  };
  EXPECT_THAT(error("library nccl\n"), HasSubstr("t.sigs:1: a row starts with 'bug ID'"));
  EXPECT_THAT(error("bug a\n" + ok + "\nbug a\n" + ok), HasSubstr("duplicate bug id a"));
  EXPECT_THAT(error("bug a\nlibrary nccl\n"), HasSubstr("has no 'affected'"));
  EXPECT_THAT(error("bug a\n" + ok + "colour red\n"), HasSubstr("t.sigs:9: unknown key 'colour'"));
  EXPECT_THAT(error("bug a\n" + ok + "summary again\n"), HasSubstr("given twice"));
  EXPECT_THAT(error("bug a\nlibrary mpi\n"), HasSubstr("library must be"));
  EXPECT_THAT(error("bug a\n" + ok + "setting NOVALUE\n"), HasSubstr("NAME=VALUE"));
  EXPECT_THAT(error("bug a\nframe (\n" + ok.substr(0, ok.find("frame")) + "summary s\nworkaround w\nurl u\n"),
              HasSubstr("frame '('"));
  EXPECT_THAT(error("bug a\nlibrary nccl\naffected later\nfixed none\nframe f\nsummary s\nworkaround w\nurl u\n"),
              HasSubstr("names no version"));
}

}  // namespace
}  // namespace hangdx::analyze::known_bugs
