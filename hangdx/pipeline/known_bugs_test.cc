// Every known-bug signature (analyze/checks/known_bugs/known_bugs.sigs) on
// the real stack it was taken from: the posted stack is read through the
// stack-dump format as a user's file would be, and the analysis must name
// that bug as the hang, with no culprit rank. Here because it needs both
// ingest (the parser) and analyze (the check).
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "hangdx/analyze/analyze.h"
#include "hangdx/analyze/checks/known_bugs/signatures.h"
#include "hangdx/ingest/load.h"

namespace hangdx {
namespace {

using analyze::known_bugs::BuiltinSignatures;
using analyze::known_bugs::Signature;

const std::string kStacks = std::string(HANGDX_SOURCE_DIR) + "/hangdx/analyze/checks/known_bugs/testdata/";

// The posted stack of `s` as rank 0's stack dump, with the library version
// its report ran where the row gives one.
model::Job LoadStack(const Signature& s) {
  ingest::LoadOptions opt;
  opt.threads = 1;
  opt.rank_of[kStacks + s.stack_file] = 0;  // the bug number at the end of the name is no rank
  StatusOr<model::Job> job = ingest::LoadJob({kStacks + s.stack_file}, opt);
  EXPECT_TRUE(job.ok()) << s.id;
  if (!job.ok()) return {};
  for (auto& d : job->dumps) d.comm_lib_version = s.stack_version;
  return std::move(job).value();
}

// Signatures whose posted stack is cut before the frames that tell the bug
// apart: the report shows the symptom, not the bug, and naming it would be
// a guess.
bool CutBeforeItsFrames(const Signature& s) { return s.id == "nccl-549-abort-cudafree"; }

TEST(KnownBugs, EverySignatureNamesItsBugOnItsRealStack) {
  int named = 0;
  for (const Signature& s : BuiltinSignatures()) {
    SCOPED_TRACE(s.id + " on " + s.stack_file);
    model::Job job = LoadStack(s);
    ASSERT_EQ(job.dumps.size(), 1u);
    ASSERT_FALSE(job.dumps[0].stacks.empty()) << "the stack-dump format read no stack";
    analyze::Diagnosis d = analyze::Analyze(job);
    if (CutBeforeItsFrames(s)) {
      for (const auto& f : d.findings) EXPECT_NE(f.known_bug.id, s.id);
      continue;
    }
    ASSERT_FALSE(d.findings.empty());
    const analyze::Finding& f = d.findings[0];
    EXPECT_EQ(f.kind, analyze::Kind::kResourceDeadlock);
    EXPECT_EQ(f.known_bug.id, s.id);
    EXPECT_TRUE(f.culprit_ranks.empty());
    EXPECT_NE(f.fix_hint.find(s.url), std::string::npos) << f.fix_hint;
    EXPECT_TRUE(d.hang);
    named += f.known_bug.id == s.id;
  }
  EXPECT_GE(named, 8);
}

TEST(KnownBugs, AVersionRequiredSignatureStaysSilentWithoutTheVersion) {
  for (const Signature& s : BuiltinSignatures()) {
    if (!s.version_required) continue;
    SCOPED_TRACE(s.id);
    model::Job job = LoadStack(s);
    for (auto& d : job.dumps) d.comm_lib_version.clear();
    for (const auto& f : analyze::Analyze(job).findings) EXPECT_NE(f.known_bug.id, s.id);
  }
}

}  // namespace
}  // namespace hangdx
